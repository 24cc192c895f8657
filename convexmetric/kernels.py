"""Kernel functions and kernel-matrix helpers (numpy only)."""

from __future__ import annotations

import numpy as np

__all__ = ["linear_kernel"]


def linear_kernel(X, Y=None):
    """``X Yᵀ`` (``Y = X`` by default)."""
    X = np.asarray(X, dtype=float)
    Y = X if Y is None else np.asarray(Y, dtype=float)
    return X @ Y.T


# --- Maurer (JMLR 2008) §6.1: the normalised Gaussian kernel, and the empirical kernel map --


def maurer_kernel(X, Y=None, *, scale=4.0, amplitude=0.5):
    """``κ(x, y) = ½ exp(−4 ‖x/|x| − y/|y|‖²)`` of Maurer (2008), §6.1.

    Inputs are normalised to unit length first (rows of zeros stay zero), so every
    embedded point has ``κ(x, x) = ½`` and the embedded set has diameter ≤ 1, as
    Assumption 2 requires.

    >>> float(maurer_kernel(np.array([[3.0, 4.0]]))[0, 0])
    0.5
    """
    X = np.asarray(X, dtype=float)
    Y = X if Y is None else np.asarray(Y, dtype=float)

    def unit(Z):
        nrm = np.linalg.norm(Z, axis=1, keepdims=True)
        return Z / np.where(nrm > 0, nrm, 1.0)

    Xn, Yn = unit(X), unit(Y)
    sq = (Xn**2).sum(1)[:, None] + (Yn**2).sum(1)[None, :] - 2.0 * Xn @ Yn.T
    return amplitude * np.exp(-scale * np.maximum(sq, 0.0))


class EmpiricalKernelMap:
    """Coordinates of ``φ(x)`` in an orthonormal basis of ``span φ(X)`` (``K = QΛQᵀ``).

    ``φ̃(z) = Λ^{-1/2} Qᵀ k_X(z)``; on the training rows ``φ̃(X) φ̃(X)ᵀ = K`` (up to the
    dropped eigenvalues below ``rtol·λ_max``). A kernel method whose solution lies in
    ``span φ(X)`` (a representer theorem) can then be run as a linear one.

    >>> X = np.eye(3); F = EmpiricalKernelMap(linear_kernel).fit(X)
    >>> bool(np.allclose(F.transform(X) @ F.transform(X).T, X @ X.T))
    True
    """

    def __init__(self, kernel, rtol=1e-10):
        self.kernel, self.rtol = kernel, rtol

    def fit(self, X, K=None):
        self.X_ = np.asarray(X, dtype=float)
        K = self.kernel(self.X_) if K is None else K
        w, Q = np.linalg.eigh(0.5 * (K + K.T))
        keep = w > self.rtol * max(float(w[-1]), 1e-300)
        self.basis_ = Q[:, keep] / np.sqrt(w[keep])  # Q Λ^{-1/2}
        return self

    def transform(self, Z):
        return self.kernel(np.asarray(Z, dtype=float), self.X_) @ self.basis_


__all__ += ["EmpiricalKernelMap", "maurer_kernel"]


# --- partial order embedding (McFee & Lanckriet 2011): kernels and their checks ----------
__all__ += [
    "check_kernel",
    "noise_kernels",
    "normalize_kernel",
    "project_psd",
    "rbf_kernel",
    "sphere_points",
]


def rbf_kernel(X, Y=None, gamma=None):
    """Gaussian kernel ``exp(−γ‖x − y‖²)``; ``γ = 1/(d·var(X))`` by default (scikit-learn's
    "scale").

    >>> import numpy as np
    >>> rbf_kernel(np.zeros((2, 3)))
    array([[1., 1.],
           [1., 1.]])
    """
    X = np.asarray(X, dtype=float)
    Y = X if Y is None else np.asarray(Y, dtype=float)
    if gamma is None:
        var = float(X.var())
        gamma = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    sq = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - 2.0 * X @ Y.T
    return np.exp(-gamma * np.maximum(sq, 0.0))


def sphere_points(n, dim=3, *, random_state=None):
    """``n`` points drawn uniformly from the unit sphere in ``R^dim``."""
    rng = np.random.default_rng(random_state)
    Z = rng.normal(size=(n, dim))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def noise_kernels(n, count=5, dim=3, *, random_state=None):
    """The noise kernels of McFee & Lanckriet §5.1: linear kernels of random points on
    the unit sphere in ``R³`` (rank ≤ 3, unit diagonal), one per draw."""
    rng = np.random.default_rng(random_state)
    return [linear_kernel(sphere_points(n, dim, random_state=rng)) for _ in range(count)]


def normalize_kernel(K):
    """Scale ``K`` to unit mean diagonal (``tr K = n``), so that kernels are comparable."""
    K = np.asarray(K, dtype=float)
    scale = float(np.trace(K)) / K.shape[0]
    return K / scale if scale > 0 else K


def project_psd(K):
    """The nearest (Frobenius) symmetric PSD matrix: eigenvalues clipped at 0."""
    K = np.asarray(K, dtype=float)
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    return (V * np.maximum(w, 0.0)) @ V.T


def empirical_features(K, rtol=1e-10):
    """The empirical kernel map: ``Φ = V_r Λ_r^{1/2}`` with ``K ≈ ΦΦᵀ``, and ``T = V_r Λ_r^{-1/2}``.

    Eigenvalues below ``rtol·λ_max`` are dropped (``r`` is the numerical rank). Since
    ``K T = Φ`` and ``ΦᵀT = I``, a quadratic form ``B`` on kernel columns and a form ``B̂``
    on the rows of ``Φ`` correspond through ``B = T B̂ Tᵀ``, ``B̂ = ΦᵀBΦ``:
    ``(K_i − K_j)ᵀ B (K_i − K_j) = (Φ_i − Φ_j)ᵀ B̂ (Φ_i − Φ_j)``, ``tr(BK) = tr B̂`` and
    ``B̂ ⪰ 0`` iff ``B ⪰ 0`` on the range of ``K``. Kernel problems over ``n × n`` matrices
    thus become linear problems over ``r × r`` ones (KPOE → LPOE, kernel LMNN → LMNN),
    with condition number ``κ(K)`` instead of ``κ(K)²``.

    >>> Phi, T = empirical_features(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> np.allclose(Phi @ Phi.T, [[2, 1], [1, 2]]), np.allclose(Phi.T @ T, np.eye(2))
    (True, True)
    """
    lam, V = np.linalg.eigh(0.5 * (K + K.T))
    keep = lam > rtol * max(lam[-1], 1e-300)
    lam, V = lam[keep], V[:, keep]
    return V * np.sqrt(lam), V / np.sqrt(lam)


def check_kernel(K, n=None, name="K", *, tol=1e-8):
    """Return ``K`` as a finite, square, symmetric, positive semidefinite float array.

    Eigenvalues down to ``−tol·max(1, max|K|)`` are accepted (rounding); a clearly
    indefinite kernel is an error that names the argument and suggests
    :func:`project_psd`.
    """
    from ._input_checks import check_square_kernel

    K = check_square_kernel(K, n, name)
    S = 0.5 * (K + K.T)
    shift = tol * max(1.0, float(np.abs(K).max()))
    try:  # λ_min(S) > −shift iff S + shift·I has a Cholesky factor (no eigensolve)
        np.linalg.cholesky(S + shift * np.eye(len(S)))
        return S
    except np.linalg.LinAlgError:
        lam = float(np.linalg.eigvalsh(S)[0])
    if lam < -shift:
        raise ValueError(
            f"'{name}' must be positive semidefinite; its smallest eigenvalue is {lam:.3g}. "
            "Use convexmetric.kernels.project_psd(K) for the nearest PSD kernel."
        )
    return S
