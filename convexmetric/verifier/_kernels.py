r"""Kernel matrices and the kernel problems' feature space, as the verifier defines them.

A kernel matrix computed in float64 is only nearly positive semidefinite: an rbf or
Maurer kernel, or ``XXᵀ`` of rank ``D < n``, has eigenvalues of order ``±u·λ_max`` in
place of its exact zeros, and a kernel problem over ``W ⪰ 0`` with a negative
eigenvalue in ``K`` can be unbounded below (``W = t·vvᵀ`` lowers ``tr(WK)`` without
limit). No bound can be proved for that problem, so **the full kernel problems (KPOE,
MKPOE, kernel Maurer) are defined on the verifier's empirical features**: with
``K_s = fl((K + Kᵀ)/2) = VΛVᵀ`` as computed by ``numpy.linalg.eigh``,

.. math::

    Φ = V_+ Λ_+^{1/2}, \qquad + = \{t : λ_t > \mathrm{RANK\_RTOL}\cdot λ_{max}\},

so that ``ΦΦᵀ`` is the kernel's numerically positive part, an exactly positive
semidefinite Gram matrix. The problem over ``W ⪰ 0`` with kernel ``ΦΦᵀ`` is exactly the
linear problem over ``B = ΦᵀWΦ ⪰ 0`` with the rows of ``Φ`` as points and regulariser
``tr B`` (POE) or ``‖B‖`` (Maurer): the problems of :mod:`.poe` and :mod:`.maurer` are
posed there, ``Φ`` (a float matrix, computed here and never read from the fit) being
their data. A kernel with an eigenvalue below ``−NEGATIVE_TOL·max(1, max|K|)`` (the
estimators' rule for a precomputed kernel) is not numerically PSD at all, and is refused
rather than truncated. Directions dropped by the truncation
are not part of the problem; a model that uses them is caught because its *applied*
map, evaluated on the kernel rows themselves, no longer has the objective of its point
in ``Φ`` (both are computed and must agree within the objective's resolution). The
kernels themselves are the float64 values of their formulas below (the problem's data).
"""

from __future__ import annotations

import numpy as np

from ._report import VerificationError

#: eigenvalues of the kernel at most this share of the largest are not part of the
#: kernel problems (module docstring); below the solvers' own cut (1e-10)
RANK_RTOL = 1e-12
#: a kernel with an eigenvalue below ``−NEGATIVE_TOL·max(1, max|K|)`` is no kernel, and
#: refused: the estimators' documented acceptance rule for a precomputed kernel, restated
#: here so that every kernel they fit on is one the verifier poses a problem for
#: (rounding gives ``~1e-16·λ_max``)
NEGATIVE_TOL = 1e-8


def symmetric(K):
    """``fl((K + Kᵀ)/2)``: the kernel matrix the problems use (exactly symmetric)."""
    K = np.asarray(K, dtype=float)
    return 0.5 * (K + K.T)


def rbf(X, gamma):
    """``exp(−γ·max(0, ‖x‖² + ‖x'‖² − 2xᵀx'))`` (POE's ``"rbf"``)."""
    sq = np.sum(X * X, 1)
    return symmetric(np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)))


def rbf_width(X, gamma=None):
    """POE's rbf width: ``gamma``, or ``1/(D·var X)`` (``1`` for constant ``X``)."""
    if gamma is not None:
        return float(gamma)
    var = float(X.var())
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def maurer(X):
    """Maurer's §6.1 kernel ``½ exp(−4‖x/|x| − x'/|x'|‖²)`` (zero rows stay zero)."""
    nrm = np.linalg.norm(X, axis=1, keepdims=True)
    Z = X / np.where(nrm > 0, nrm, 1.0)
    sq = np.sum(Z * Z, 1)
    return symmetric(
        0.5 * np.exp(-4.0 * np.maximum(sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T, 0.0))
    )


def features(K):
    """``Φ`` of the module docstring (``n × r``; ``r = 0`` for a kernel with no positive
    eigenvalue); :class:`VerificationError` for a kernel that is not even numerically
    positive semidefinite (``λ_min < −`` :data:`NEGATIVE_TOL` ``·max(1, max|K|)``): its
    problem is not the positive part's, and may be unbounded below."""
    w, V = np.linalg.eigh(K)
    top = float(w[-1]) if len(w) else 0.0
    if len(w) and w[0] < -NEGATIVE_TOL * max(1.0, float(np.abs(K).max())):
        raise VerificationError(
            f"the kernel is not positive semidefinite (λ_min = {w[0]:.3g}, λ_max = {top:.3g}): "
            "the kernel problem over W ⪰ 0 may be unbounded below; nothing to verify."
        )
    if not top > 0:
        return np.zeros((K.shape[0], 0))
    keep = w > RANK_RTOL * top
    return V[:, keep] * np.sqrt(w[keep])
