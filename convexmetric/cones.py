"""Convex sets that own their projection.

Every projected-subgradient solver takes one of these objects, so no solver hard-codes
its geometry (the pattern of pymde's ``Constraint``). All projections are Euclidean
(Frobenius) projections.

>>> import numpy as np
>>> PSDCone().project(np.diag([1.0, -2.0]))
array([[1., 0.],
       [0., 0.]])
"""

from __future__ import annotations

import abc

import numpy as np


class Cone(abc.ABC):
    """A closed convex set with a Euclidean projection."""

    name = "cone"

    @abc.abstractmethod
    def project(self, X: np.ndarray) -> np.ndarray:
        """Return the nearest point of the set to ``X`` (a new array)."""

    def contains(self, X: np.ndarray, tol: float = 1e-8) -> bool:
        """Whether ``X`` lies in the set up to ``tol`` (relative to its scale)."""
        P = self.project(X)
        scale = max(1.0, float(np.linalg.norm(X)))
        return bool(np.linalg.norm(P - X) <= tol * scale)


class PSDCone(Cone):
    """Symmetric positive semidefinite matrices; projection clips eigenvalues at 0.

    This is LMNN's eq. (20): ``P(M) = V max(Δ, 0) Vᵀ`` for ``M = V Δ Vᵀ``.
    The input is symmetrised first.
    """

    name = "psd"

    def project(self, X):
        S = 0.5 * (X + X.T)
        w, V = np.linalg.eigh(S)
        if w[0] >= 0:
            return S
        keep = w > 0
        Vk = V[:, keep]
        return (Vk * w[keep]) @ Vk.T


class NonnegativeDiagonal(Cone):
    """Diagonal matrices with nonnegative entries (the diagonal variants of POE, §4.4).

    Accepts either a square matrix (off-diagonal entries are dropped) or the vector of
    its diagonal, and returns the same kind.
    """

    name = "nonnegative_diagonal"

    def project(self, X):
        X = np.asarray(X)
        if X.ndim == 1:
            return np.maximum(X, 0.0)
        return np.diag(np.maximum(np.diag(X), 0.0))


class NonnegativeOrthant(Cone):
    """Entrywise nonnegative arrays."""

    name = "nonnegative"

    def project(self, X):
        return np.maximum(X, 0.0)


class FullSpace(Cone):
    """No constraint (for unconstrained problems run through the same driver)."""

    name = "full"

    def project(self, X):
        return np.array(X, copy=True)


class ProductCone(Cone):
    """A tuple of sets acting on a list of blocks (e.g. one PSD matrix per kernel)."""

    name = "product"

    def __init__(self, cones):
        self.cones = list(cones)

    def project(self, X):
        if len(X) != len(self.cones):
            raise ValueError(f"expected {len(self.cones)} blocks, got {len(X)}")
        return [c.project(x) for c, x in zip(self.cones, X)]

    def contains(self, X, tol=1e-8):
        return all(c.contains(x, tol) for c, x in zip(self.cones, X))


def is_psd(M: np.ndarray, tol: float = 1e-8) -> bool:
    """Whether ``M`` is symmetric with eigenvalues ≥ ``-tol·max(1, ‖M‖₂)``."""
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        return False
    scale = max(1.0, float(np.abs(M).max(initial=0.0)))
    if not np.allclose(M, M.T, atol=tol * scale):
        return False
    return bool(np.linalg.eigvalsh(0.5 * (M + M.T))[0] >= -tol * scale)
