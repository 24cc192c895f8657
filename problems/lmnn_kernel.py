r"""Kernel LMNN, §5.3 of Weinberger & Saul (JMLR 2009), after Torresani & Lee (2007).

The metric lives in feature space, :math:`M = \sum_{l,m} A_{lm}\,\Phi(x_l)\Phi(x_m)^\top`
with :math:`A \succeq 0` (n×n). With :math:`k_i = K_{:,i}` (``K_{lm} = Φ(x_l)ᵀΦ(x_m)``):

.. math::

    D_M(x_i, x_j) = (\Phi_i - \Phi_j)^\top M (\Phi_i - \Phi_j) = (k_i - k_j)^\top A\,(k_i - k_j),

so eq. (14) in ``A`` is eq. (14) of linear LMNN on the *rows of the kernel matrix*
(features ``k_i``), an SDP over the n×n cone. Everything goes through ``K``; a new
point ``x`` enters through its kernel column ``k(x) = [K(x_l, x)]_l`` (out of sample).
Target neighbours are the ``k`` nearest same-class points in feature space,
``‖Φ_i − Φ_j‖² = K_ii + K_jj − 2K_ij``.
"""

from __future__ import annotations

import numpy as np

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


def solve(K, y, targets, mu, *, solver="CLARABEL", **solver_opts):
    """Solve kernel LMNN exactly over all hinge terms: ``(A, value, status, seconds)``.

    >>> X = np.array([[0.], [1.], [3.], [4.]]); y = np.array([0, 0, 1, 1])
    >>> K = X @ X.T  # linear kernel: A acts on kernel columns
    >>> A, value, status, _ = solve(K, y, kernel_targets(K, y, 1), 0.5)
    >>> status
    'optimal'
    """
    return P.solve(K, y, targets, mu, solver=solver, **solver_opts)


def distances(A, K_train, K_cross):
    """``D(x, x_i)`` between new points (kernel rows ``K_cross``, m×n) and training points."""
    Lc = P.components_from_metric(A)
    Zt, Zq = K_train @ Lc.T, K_cross @ Lc.T
    sq_t = np.einsum("ij,ij->i", Zt, Zt)
    sq_q = np.einsum("ij,ij->i", Zq, Zq)
    return np.maximum(sq_q[:, None] + sq_t[None, :] - 2 * Zq @ Zt.T, 0.0)
