"""The multi-metric full check (:func:`convexmetric.problems.lmnn_multi.hinge_terms`) finds
exactly the triplets of brute force: clusters of one label and mixed clusters, any rank,
margins, ties."""

import numpy as np
import pytest

from convexmetric.neighbors import target_neighbors
from convexmetric.problems import lmnn_multi as PM
from convexmetric.problems.lmnn import all_triplets


def brute(Ms, X, T, y, g, margin):
    I, J, L = all_triplets(y, T)
    Ms = np.stack(Ms)

    def dist(a, b):  # the metric of b's cluster
        return np.einsum("ij,ijk,ik->i", X[a] - X[b], Ms[g[b]], X[a] - X[b])

    H = 1.0 + dist(I, J) - dist(I, L)
    keep = H > -margin
    return {(i, j, l): h for i, j, l, h in zip(I[keep], J[keep], L[keep], H[keep])}


@pytest.mark.parametrize("seed", range(6))
def test_search_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, d, c = 60, 5, 3
    X = rng.normal(size=(n, d))
    if seed % 2:
        X = np.round(X, 1)  # ties
    y = rng.integers(0, 3, n)
    g = y.copy() if seed < 3 else rng.integers(0, c, n)  # one label per cluster, or mixed
    T = target_neighbors(X, y, 2)
    Ms = []
    for _ in range(c):
        Lg = rng.normal(size=(int(rng.integers(1, d + 1)), d)) * rng.uniform(0.3, 3.0)
        Ms.append(Lg.T @ Lg)
    for margin in (0.0, 0.5):
        I, J, L, H = PM.hinge_terms(Ms, X, T, y, g, margin=margin, block_size=7)
        found = {(i, j, l): h for i, j, l, h in zip(I, J, L, H)}
        want = brute(Ms, X, T, y, g, margin)
        assert len(found) == len(I)  # no repeats
        assert found.keys() == want.keys()
        assert np.allclose([found[t] for t in want], list(want.values()), rtol=1e-10, atol=1e-10)
