"""The sort-based set operations of :mod:`convexmetric.lmnn._sets` return numpy's arrays."""

import numpy as np
import pytest

from convexmetric.lmnn import _sets


@pytest.mark.parametrize("seed", range(5))
def test_sets_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    size = [0, 1, 7, 500, 20_000][seed]
    a = rng.integers(0, max(size // 3, 1) if seed % 2 else 10**12, size)  # repeats, or not
    b = np.unique(rng.integers(0, max(size // 2, 1), size // 2 + 1))
    assert np.array_equal(_sets.unique(a), np.unique(a))
    for got, want in zip(_sets.unique_inverse(a), np.unique(a, return_inverse=True)):
        assert np.array_equal(got, want)
    assert np.array_equal(_sets.union(a, b), np.union1d(a, b))
    assert np.array_equal(_sets.member(a, b), np.isin(a, b))
    assert _sets.member(a, b[:0]).shape == a.shape and not _sets.member(a, b[:0]).any()
