"""Set operations on integer keys (triplet and pair keys of the active lists), by sorting.

numpy 2's ``np.unique`` without ``return_inverse`` (and so ``np.union1d``) hashes the
values before sorting the result, many times slower than one sort on the lists' tens of
thousands of ``int64`` keys (``benchmarks/TUNING.md``), and ``np.isin`` sorts both
arrays. The active lists call these at every full check. These functions give the same
arrays as their numpy counterparts, by one sort (or a binary search into sorted keys).
"""

from __future__ import annotations

import numpy as np


def _first(s):
    """Mask of the first element of every run of equal values in the sorted ``s``."""
    m = np.empty(len(s), bool)
    m[:1] = True
    np.not_equal(s[1:], s[:-1], out=m[1:])
    return m


def unique(a):
    """``np.unique(a)`` (sorted distinct values)."""
    s = np.sort(np.asarray(a).ravel())
    return s[_first(s)]


def unique_inverse(a, dtype=np.intp):
    """``np.unique(a, return_inverse=True)`` for a 1-d ``a``: ``(values, inverse)``;
    ``dtype``: the inverse's integer type (a narrower one for long lists)."""
    a = np.asarray(a)
    order = np.argsort(a)
    s = a[order]
    first = _first(s)
    del a
    inverse = np.empty(len(s), dtype)
    inverse[order] = np.cumsum(first, dtype=dtype) - 1
    return s[first], inverse


def union(a, b):
    """``np.union1d(a, b)``."""
    return unique(np.concatenate([np.ravel(a), np.ravel(b)]))


def member(keys, sorted_keys):
    """``np.isin(keys, sorted_keys)`` for a sorted 1-d ``sorted_keys`` (``keys`` unsorted:
    one binary search each)."""
    keys = np.asarray(keys)
    if len(sorted_keys) == 0:
        return np.zeros(keys.shape, bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[pos] == keys
