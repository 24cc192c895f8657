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


@pytest.mark.parametrize("block_size", [512, 5])
def test_search_with_far_points_equals_brute_force(block_size):
    """A nearly constant feature under a metric of eigenvalue 10⁸ (digits' constant pixels
    in original coordinates): ‖z‖² reaches 10¹⁰ where the radii are about 1, and the
    screen's rounding bound must still keep every candidate (one block per cluster by
    default: 80 rows)."""
    rng = np.random.default_rng(7)
    n, d, c = 80, 4, 3
    X = rng.normal(size=(n, d))
    X[:, 3] = 0.0
    X[rng.choice(n, 6, replace=False), 3] = rng.uniform(0.5, 1.0, 6)  # a few far points
    y = rng.integers(0, 3, n)
    T = target_neighbors(X, y, 2)
    Ms = []
    for _ in range(c):
        Lg = rng.normal(size=(d, d)) * 0.8
        Lg[:, 3] = 0.0
        M = Lg.T @ Lg
        M[3, 3] = 1e8
        Ms.append(M)
    for margin in (0.0, 0.3):
        I, J, L, H = PM.hinge_terms(Ms, X, T, y, y, margin=margin, block_size=block_size)
        found = {(i, j, l): h for i, j, l, h in zip(I, J, L, H)}
        want = brute(Ms, X, T, y, y, margin)
        assert len(found) == len(I) and found.keys() == want.keys()
        assert np.allclose([found[t] for t in want], list(want.values()), rtol=1e-9, atol=1e-6)


def test_one_search_per_point(monkeypatch):
    """The oracle searches a point once: the subgradient start's check, then its objective
    (metrics); the stage's objective, then the recentring's check (factors)."""
    from convexmetric.lmnn.multi.oracle import MultiMetricOracle

    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4))
    y = rng.integers(0, 3, 50)
    T = target_neighbors(X, y, 2)
    oracle = MultiMetricOracle(X, y, T, 0.5, y, 3)
    Ms = [np.eye(4) * s for s in (1.0, 2.0, 0.5)]
    want = PM.objective(Ms, X, T, y, y, 0.5)
    calls = []
    search = PM.hinge_terms
    monkeypatch.setattr(PM, "hinge_terms", lambda *a, **k: calls.append(1) or search(*a, **k))
    oracle(Ms)  # the first call checks (metrics)
    f = oracle.objective(Ms)
    assert len(calls) == 1
    assert f == pytest.approx(want, rel=1e-12)
    Ls = [np.linalg.cholesky(M).T for M in Ms]
    oracle.objective(Ms, components=Ls)  # factors: a search of their own
    oracle.schedule.period(1, oracle.calls)  # an exact stage: every call checks
    oracle.recenter(Ms, 0.1, components=[L.copy() for L in Ls])
    assert len(calls) == 2
    oracle.recenter(Ms, 0.1)  # no factors: the metrics' search
    assert len(calls) == 3


def test_screen_keeps_pairs_within_rounding_of_the_radius():
    """Points 10⁵ from the mean (‖z‖² ≈ 10¹⁰: the screen's product rounds by about 10⁻⁵)
    and impostors placed 10⁻⁸ inside their query's radius: every one is found. Without
    the rounding term of the screen's threshold about half of them are lost."""
    rng = np.random.default_rng(11)
    n, d = 72, 3
    X = rng.normal(size=(n, d))
    X[n // 2 :, 0] += 1e5  # a second group, far from the first (and from the mean)
    y = np.tile(np.arange(3), n // 3)
    T = target_neighbors(X, y, 2)
    Ms = [(np.eye(d) + 0.3 * rng.normal(size=(d, d))) for _ in range(3)]
    Ms = [L.T @ L for L in Ms]

    def dist(a, b):  # the metric of b's cluster, from the differences of X
        u = X[a] - X[b]
        return float(u @ Ms[y[b]] @ u)

    found = 0
    for i in range(n // 2, n // 2 + 12):
        far = [dist(i, j) for j in T[i]]
        j = T[i][int(np.argmax(far))]
        out = [l for l in range(n // 2, n) if y[l] != y[i] and dist(i, l) > 1 + max(far)]
        l = out[0]
        h = 1 + max(far) - dist(i, l)  # < 0: an impostor only from a margin of −h on
        margin = -h + 1e-8
        I, J, L, _ = PM.hinge_terms(Ms, X, T, y, y, margin=margin)
        found += bool(np.any((I == i) & (J == j) & (L == l)))
    assert found == 12
