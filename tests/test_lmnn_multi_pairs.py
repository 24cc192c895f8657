"""The pair graph of the multi-metric oracle against explicit sums over the pairs."""

import numpy as np
import pytest

from convexmetric.lmnn.multi.pairs import PairGraph


def _graph(seed):
    rng = np.random.default_rng(seed)
    n, d, c = 30, 5, 3
    X = rng.normal(size=(n, d)) * [1, 10, 0.1, 1, 1e3] + 50.0  # uneven, far from 0
    clusters = rng.integers(0, c - 1, size=n)  # the last block has no pair
    pa, pb = rng.integers(0, n, 80), rng.integers(0, n, 80)
    keep = pa != pb
    pa, pb = pa[keep], pb[keep]
    both = np.unique(np.r_[pa * n + pb, pb * n + pa])  # (i, j) and (j, i): shared entries
    pa, pb = both // n, both % n
    return X, pa, pb, clusters[pb], c, rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scatters_and_distances_equal_the_explicit_sums(seed):
    X, pa, pb, blk, c, rng = _graph(seed)
    G = PairGraph(X, pa, pb, blk, c)
    edge_pair = G.perm  # edge s is pair perm[s]
    w = rng.normal(size=len(pa))  # per edge
    Ls = [rng.normal(size=(r, X.shape[1])) for r in (2, 4, 1)]
    Ms = [L.T @ L for L in Ls]
    delta = X[pa] - X[pb]
    scat = G.scatter(w)
    fac = G.factor_scatter(w, G.project(Ls), [len(L) for L in Ls])
    for g in range(c):
        s = edge_pair[G.pair_off[g] : G.pair_off[g + 1]]
        assert np.all(blk[s] == g)
        ws = w[G.pair_off[g] : G.pair_off[g + 1]]
        S = (delta[s] * ws[:, None]).T @ delta[s]
        np.testing.assert_allclose(scat[g], S, rtol=1e-9, atol=1e-9 * np.abs(S).max(initial=1))
        np.testing.assert_allclose(fac[g], Ls[g] @ S, rtol=1e-9,
                                   atol=1e-9 * np.abs(Ls[g] @ S).max(initial=1))  # fmt: skip
    exact = np.array([delta[p] @ Ms[blk[p]] @ delta[p] for p in edge_pair])
    np.testing.assert_allclose(G.metric_distances(Ms), exact, rtol=1e-9)
    np.testing.assert_allclose(G.factor_distances(G.project(Ls)), exact, rtol=1e-9)
    assert sorted(edge_pair) == list(range(len(pa)))


@pytest.mark.parametrize("name", ["wine", "iris"])
def test_the_whitened_evaluation_equals_the_original_one(name):
    """:meth:`MultiMetricOracle.smooth_factor` on whitened factors (points mapped once per
    list, the pull term on ``diag(SᵀPS)``) gives the value and ``L'∇'`` that the original
    coordinates give, mapped (``(L∇)S`` at ``L = L'Sᵀ``), with a dual centre inside the box."""
    from convexmetric import datasets
    from convexmetric.lmnn.multi.oracle import MultiMetricOracle
    from convexmetric.lmnn.multi.whitened import WhitenedOracle
    from convexmetric.neighbors import target_neighbors

    X, _, y, _ = datasets.load_split(name)
    y = np.unique(y, return_inverse=True)[1]
    base = MultiMetricOracle(X, y, target_neighbors(X, y, 3), 0.5, y, 3)
    white = WhitenedOracle(base)
    rng = np.random.default_rng(0)
    Lw = [0.3 * rng.normal(size=(r, X.shape[1])) for r in (2, 5, 3)]
    base.full_check(white._metrics(None, Lw))
    base.lam_bar = 0.5 * rng.random(len(base.keys))
    f, G = white.smooth_factor(None, 0.03, Lw)
    f0, LG = base.smooth_factor(None, 0.03, white._factors(Lw))
    assert f == pytest.approx(f0, rel=1e-12)
    for g, (Gg, LGg, S) in enumerate(zip(G, LG, white.S)):
        ref = LGg @ S
        np.testing.assert_allclose(Gg, ref, rtol=0, atol=1e-10 * np.abs(ref).max(), err_msg=g)
