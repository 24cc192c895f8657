"""SSNE's supervision: target similarities of pairs, from labels or given.

>>> I, J, s = label_pairs(np.array([0, 0, 1]))
>>> I.tolist(), J.tolist(), s.tolist()
([0, 0, 1], [1, 2, 2], [1.0, 0.0, 0.0])
"""

from __future__ import annotations

import numpy as np

from .._input_checks import check_matrix

__all__ = ["check_similarity", "label_pairs"]


def label_pairs(y, *, dissimilar=0.0, max_pairs=50_000, random_state=None):
    """Pairs and target similarities from labels: ``+1`` same class, ``dissimilar`` else.

    All ``n(n−1)/2`` pairs when there are at most ``max_pairs`` of them, otherwise
    ``max_pairs`` distinct pairs drawn uniformly (seeded).

    >>> I, J, s = label_pairs(np.array([0, 0, 1]))
    >>> I.tolist(), J.tolist(), s.tolist()
    ([0, 0, 1], [1, 2, 2], [1.0, 0.0, 0.0])
    """
    y = np.asarray(y)
    n = len(y)
    total = n * (n - 1) // 2
    if total <= max_pairs:
        I, J = np.triu_indices(n, 1)
    else:
        rng = np.random.default_rng(random_state)
        flat = np.sort(rng.choice(total, size=max_pairs, replace=False))
        # invert the row-major enumeration of the strict upper triangle
        row_start = np.arange(n) * (2 * n - np.arange(n) - 1) // 2
        I = np.searchsorted(row_start, flat, side="right") - 1
        J = flat - row_start[I] + I + 1
    return I, J, np.where(y[I] == y[J], 1.0, float(dissimilar))


def check_similarity(s, m, name="s"):
    """Return target similarities as a float array of length ``m`` within [−1, 1]."""
    arr = check_matrix(s, name, ndim=1)
    if arr.shape[0] != m:
        raise ValueError(f"'{name}' has {arr.shape[0]} entries but there are {m} pairs.")
    if np.any(np.abs(arr) > 1.0):
        bad = arr[np.abs(arr) > 1.0][0]
        raise ValueError(f"'{name}' must lie in [-1, 1] (targets of H(x)ᵀH(z)); got {bad!r}.")
    return arr


def _ndim(X):
    """``X``'s number of dimensions (any array-like), or -1 for a ragged nested list
    (``check_matrix`` then names it)."""
    ndim = getattr(X, "ndim", None)
    if isinstance(ndim, int):
        return ndim
    try:
        return np.asarray(X).ndim
    except ValueError:
        return -1
