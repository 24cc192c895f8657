"""Comparisons bundled with their items, and the embedding of a learned ``W``."""

from __future__ import annotations

import numpy as np

from ..comparisons import check_comparisons


class ItemComparisons(np.ndarray):
    """Comparisons as an ``(m, 4)`` int array that carries the items they refer to.

    Row ``t`` is the comparison ``(i, j, k, l)``; ``.items`` is the feature matrix (POE)
    or the list of kernels (MKPOE) the indices point into. Indexing rows keeps
    ``.items``, so scikit-learn's cross-validation splits the comparisons while every
    fold sees all items: ``GridSearchCV(POE(), grid).fit(ItemComparisons(C, X))``.
    """

    def __new__(cls, comparisons, items):
        obj = check_comparisons(comparisons).to_array().view(cls)
        obj.items = items
        return obj

    def __array_finalize__(self, obj):
        self.items = getattr(obj, "items", None)

    def __reduce__(self):  # keep ``items`` through pickling (joblib's parallel folds)
        return (ItemComparisons, (np.asarray(self), self.items))


def unbundle(comparisons, items, owner, what):
    """Split an :class:`ItemComparisons` into plain comparisons and its items."""
    if isinstance(comparisons, ItemComparisons):
        if items is None:
            items = comparisons.items
        comparisons = np.asarray(comparisons)
    if items is None and what is not None:
        raise ValueError(
            f"{owner}.fit needs '{what}' (the items the comparisons index), or comparisons "
            f"bundled with their items: ItemComparisons(comparisons, {what})."
        )
    return comparisons, items


def components_from_W(W):
    """``N = Λ^{1/2}Vᵀ`` (positive eigenvalues only) with ``W = NᵀN``; W may be a diagonal
    vector."""
    if np.ndim(W) == 1:
        keep = np.flatnonzero(W > 0)
        N = np.zeros((len(keep), len(W)))
        N[np.arange(len(keep)), keep] = np.sqrt(W[keep])
        return N
    lam, V = np.linalg.eigh(0.5 * (W + W.T))
    lam, V = lam[::-1], V[:, ::-1]
    keep = lam > 1e-10 * max(lam[0], 1e-300)
    return (V[:, keep] * np.sqrt(lam[keep])).T
