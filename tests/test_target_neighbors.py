"""Target neighbours: exact (double precision, from the differences), ties by index,
whatever the float32 screen lets through."""

import numpy as np
import pytest

from convexmetric.neighbors import padding, target_neighbors


def brute(X, y, k):
    """The definition: per class, a stable sort of the exact squared distances."""
    out = np.empty((len(X), k), dtype=np.int64)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        kc = min(k, len(idx) - 1)
        for i in idx:
            diff = X[idx] - X[i]
            D = np.einsum("ij,ij->i", diff, diff)
            D[idx == i] = np.inf
            out[i, :kc] = idx[np.argsort(D, kind="stable")[:kc]]
            out[i, kc:] = i
    return out


def instances():
    rng = np.random.default_rng(0)
    for trial in range(12):
        n, d = int(rng.integers(20, 300)), int(rng.integers(1, 40))
        y = rng.integers(0, 3, n)
        X = rng.standard_normal((n, d))
        if trial % 3 == 1:  # exact duplicates: ties by index
            X[rng.integers(0, n, n // 3)] = X[rng.integers(0, n, n // 3)]
        if trial % 3 == 2:  # far from the origin, spread below float32's resolution there
            X = 1e4 + 1e-3 * rng.integers(0, 4, (n, d)) + 1e-9 * rng.standard_normal((n, d))
        yield trial, X, y


@pytest.mark.parametrize("k", [1, 3, 7])
def test_target_neighbours_equal_the_brute_force_definition(k):
    for trial, X, y in instances():
        for block in (7, 512):
            T = target_neighbors(X, y, k, block_size=block)
            assert np.array_equal(T, brute(X, y, k)), (trial, block)


def test_duplicates_tie_by_index():
    # three copies of one point and one farther: each copy's targets are the other
    # copies in index order, whatever the rounding of a Gram product
    X = np.array([[0.1, 0.7], [5.0, 5.0], [0.1, 0.7], [0.3, 0.9], [0.1, 0.7], [5.0, 5.1]])
    y = np.array([0, 1, 0, 0, 0, 1])
    T = target_neighbors(X, y, 2)
    assert T[[0, 2, 4]].tolist() == [[2, 4], [0, 4], [0, 2]]
    assert T[1].tolist() == [5, 1] and padding(T)[1].tolist() == [False, True]
