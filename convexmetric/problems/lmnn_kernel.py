r"""Kernel LMNN, §5.3 of Weinberger & Saul (JMLR 2009), after Torresani & Lee (2007).

The metric lives in feature space, :math:`M = \sum_{l,m} A_{lm}\,\Phi(x_l)\Phi(x_m)^\top`
with :math:`A \succeq 0` (n×n). With :math:`k_i = K_{:,i}` (``K_{lm} = Φ(x_l)ᵀΦ(x_m)``):

.. math::

    D_M(x_i, x_j) = (\Phi_i - \Phi_j)^\top M (\Phi_i - \Phi_j) = (k_i - k_j)^\top A\,(k_i - k_j),

so eq. (14) in ``A`` is eq. (14) of linear LMNN on the *rows of the kernel matrix*
(features ``k_i``), an SDP over the n×n cone. Everything goes through ``K``; a new
point ``x`` enters through its kernel column ``k(x) = [K(x_l, x)]_l`` (out of sample).

**Reduced form.** With the empirical kernel map ``K = ΦΦᵀ`` (``Φ`` n×r, ``r = rank K``;
:func:`convexmetric.kernels.empirical_features`), ``k_i − k_j = Φ(φ_i − φ_j)`` and the
distance is ``(φ_i − φ_j)ᵀ M̂ (φ_i − φ_j)`` with ``M̂ = ΦᵀAΦ ⪰ 0`` (r×r); every PSD ``M̂``
is reached by ``A = T M̂ Tᵀ``. So kernel LMNN *is* linear LMNN on the rows of ``Φ``:
:func:`solve` solves that r×r SDP and maps back. Two consequences, both worth knowing.
(i) For a low-rank kernel (linear, polynomial) the n×n SDP has an unbounded optimal
set (``A`` is free on the null space of ``K``), which is why interior-point solvers
report "optimal_inaccurate" on it; the r×r problem is well posed. (ii) For a
full-rank kernel (RBF on distinct points) ``r = n``: the feature rows are in general
position and, as stated, the problem can separate the training classes perfectly
(optimum near 0) — the reason Torresani & Lee restrict ``A``'s rank. :func:`build`
keeps the literal n×n form for reference.
Target neighbours are the ``k`` nearest same-class points in feature space,
``‖Φ_i − Φ_j‖² = K_ii + K_jj − 2K_ij``.
"""

from __future__ import annotations

import numpy as np

from ..kernels import empirical_features
from ..neighbors import target_neighbors
from . import lmnn as P


def feature_embedding(K):
    """Rows ``E`` with ``E Eᵀ = K`` (clipped eigen-decomposition): same feature distances."""
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    return V * np.sqrt(np.maximum(w, 0.0))


def kernel_targets(K, y, k):
    """The ``k`` nearest same-class points of each point in feature space."""
    return target_neighbors(feature_embedding(K), y, k)


def objective(A, K, targets, y, mu):
    """Eq. (14) in ``A`` through the kernel matrix (numpy, blocked)."""
    return P.objective(A, K, targets, y, mu)


def build(K, targets, mu, triplets):
    """Eq. (14) in ``A ⪰ 0`` (n×n) as a CVXPY problem: ``(problem, A, slack)``."""
    return P.build(K, targets, mu, triplets)


def solve(K, y, targets, mu, *, solver="CLARABEL", rtol=1e-10, **solver_opts):
    """Solve kernel LMNN exactly over all hinge terms: ``(A, value, status, seconds)``.

    The SDP is the reduced r×r one (see the module docstring; eigenvalues of ``K`` below
    ``rtol·λ_max`` are dropped); ``A = T M̂ Tᵀ``, and :func:`objective` in ``A`` through
    ``K`` reproduces the value.

    >>> X = np.array([[0.], [1.], [3.], [4.]]); y = np.array([0, 0, 1, 1])
    >>> K = X @ X.T  # linear kernel: A acts on kernel columns
    >>> A, value, status, _ = solve(K, y, kernel_targets(K, y, 1), 0.5)
    >>> status
    'optimal'
    """
    Phi, T = empirical_features(K, rtol)
    M, value, status, seconds = P.solve(Phi, y, targets, mu, solver=solver, **solver_opts)
    return T @ M @ T.T, value, status, seconds


def distances(A, K_train, K_cross):
    """``D(x, x_i)`` between new points (kernel rows ``K_cross``, m×n) and training points."""
    Lc = P.components_from_metric(A)
    Zt, Zq = K_train @ Lc.T, K_cross @ Lc.T
    sq_t = np.einsum("ij,ij->i", Zt, Zt)
    sq_q = np.einsum("ij,ij->i", Zq, Zq)
    return np.maximum(sq_q[:, None] + sq_t[None, :] - 2 * Zq @ Zt.T, 0.0)
