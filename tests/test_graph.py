"""Comparisons and their graph processing (McFee & Lanckriet §2, App. A)."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convexmetric.comparisons import Comparisons, check_comparisons, split_comparisons
from convexmetric.poe.graph import (
    acyclic_subgraph,
    comparison_graph,
    filter_comparisons,
    total_order_embedding,
    transitive_reduction,
)


def random_comparisons(n, m, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, (4 * m, 4))
    ok = (a[:, 0] != a[:, 1]) & (a[:, 2] != a[:, 3])
    a = a[ok]
    lo = np.minimum(a[:, 0], a[:, 1]) * n + np.maximum(a[:, 0], a[:, 1])
    hi = np.minimum(a[:, 2], a[:, 3]) * n + np.maximum(a[:, 2], a[:, 3])
    return Comparisons.from_array(a[lo != hi][:m], n_items=n)


def random_dag(n, m, seed):
    """Comparisons oriented by a random total order of the pairs: always acyclic."""
    C = random_comparisons(n, m, seed)
    rank = np.random.default_rng(seed + 1).permutation(n * n)
    left, right = C.pair_keys()
    flip = rank[left] > rank[right]
    a = C.to_array()
    a[flip] = a[flip][:, [2, 3, 0, 1]]
    return Comparisons.from_array(a, n_items=n)


# -- the supervision type ----------------------------------------------------------------
def test_comparisons_validation_messages():
    with pytest.raises(
        ValueError, match=r"'comparisons'.*item index 5, outside the range \[0, 4\)"
    ):
        Comparisons([0], [1], [0], [5], n_items=4)
    with pytest.raises(ValueError, match="same pair"):
        Comparisons([0], [1], [1], [0])
    with pytest.raises(ValueError, match="pairs an item with itself"):
        Comparisons([0], [0], [1], [2])
    with pytest.raises(ValueError, match="integer item indices"):
        Comparisons([0.5], [1], [0], [2])
    with pytest.raises(ValueError, match="different lengths"):
        Comparisons([0, 1], [1], [0], [2])
    with pytest.raises(ValueError, match="'comparisons' of POE is empty"):
        check_comparisons(np.zeros((0, 4), int), 3, owner="POE")
    with pytest.raises(ValueError, match="refers to item 7, but 'X' has only 5 items"):
        check_comparisons([[0, 1, 0, 7]], 5)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-5, 12), min_size=4, max_size=4))
def test_bad_indices_raise_value_error_naming_the_argument(row):
    i, j, k, l = row
    bad = min(row) < 0 or max(row) >= 8 or i == j or k == l or {i, j} == {k, l}
    if bad:
        with pytest.raises(ValueError, match="'comparisons'"):
            Comparisons([i], [j], [k], [l], n_items=8)
    else:
        assert len(Comparisons([i], [j], [k], [l], n_items=8)) == 1


def test_csv_round_trip_and_bad_header(tmp_path):
    C = random_comparisons(10, 30, 0)
    C.to_csv(tmp_path / "c.csv")
    D = Comparisons.read_csv(tmp_path / "c.csv")
    assert np.array_equal(C.to_array(), D.to_array())
    (tmp_path / "bad.csv").write_text("a,b,c,d\n0,1,0,2\n")
    with pytest.raises(ValueError, match="header row i,j,k,l"):
        Comparisons.read_csv(tmp_path / "bad.csv")
    (tmp_path / "bad2.csv").write_text("i,j,k,l\n0,1,x,2\n")
    with pytest.raises(ValueError, match="line 2"):
        Comparisons.read_csv(tmp_path / "bad2.csv")


def test_split_comparisons_protocol():
    C = Comparisons.triadic([0, 3, 3, 1], [1, 0, 4, 2], [2, 1, 0, 3], n_items=5)
    train_C, test_C = split_comparisons(C, [0, 1, 2])
    assert train_C.to_array().tolist() == [[0, 1, 0, 2]]
    assert test_C.to_array().tolist() == [[3, 0, 3, 1]]  # (3, 4, 3, 0): 4 is not training


# -- the stages ------------------------------------------------------------------------------
def test_figure2_redundant_edge_is_removed():
    j, k, l, i = 0, 1, 2, 3  # (j,k,j,l), (j,l,i,k) imply (j,k,i,k)
    C = Comparisons.from_array([[j, k, j, l], [j, l, i, k], [j, k, i, k]])
    assert transitive_reduction(C).tolist() == [0, 1]


def test_stage_reports_partition_the_input():
    C = random_comparisons(12, 400, 1)
    rep = filter_comparisons(C, random_state=3)
    removed = np.concatenate([s.removed for s in rep.stages])
    assert len(np.intersect1d(removed, rep.kept)) == 0
    assert np.array_equal(np.sort(np.concatenate([removed, rep.kept])), np.arange(len(C)))
    assert rep.summary()["output"] == len(rep.comparisons) == len(rep.kept)
    # the kept comparisons are the input rows they claim to be
    assert np.array_equal(rep.comparisons.to_array(), C.to_array()[rep.kept])
    # length-2 cycles: every removed edge had its reverse in the (deduplicated) input
    left, right = C.pair_keys()
    fwd = set(zip(left.tolist(), right.tolist()))
    assert all((right[t], left[t]) in fwd for t in rep.removed("length2_cycles"))


def test_acyclic_subgraph_is_acyclic_maximal_and_seeded():
    C = random_comparisons(8, 300, 2)
    keep = acyclic_subgraph(C, random_state=0)
    G = comparison_graph(C[keep])
    assert nx.is_directed_acyclic_graph(G)
    for t in np.setdiff1d(np.arange(len(C)), keep)[:40]:  # adding any dropped edge closes a cycle
        u, v = tuple(sorted(C.row(t)[:2])), tuple(sorted(C.row(t)[2:]))
        assert nx.has_path(G, v, u)
    assert np.array_equal(keep, acyclic_subgraph(C, random_state=0))
    assert not np.array_equal(keep, acyclic_subgraph(C, random_state=1))
    dag = random_dag(15, 300, 4)
    assert len(acyclic_subgraph(dag, random_state=0)) == len(dag)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_transitive_reduction_matches_networkx(seed):
    C = random_dag(9, 250, seed)
    G = comparison_graph(C)
    expected = {tuple(e) for e in nx.transitive_reduction(G).edges}
    keep = transitive_reduction(C)
    got = {(tuple(sorted(C.row(t)[:2])), tuple(sorted(C.row(t)[2:]))) for t in keep.tolist()}
    assert got == expected


def test_transitive_reduction_requires_acyclic():
    with pytest.raises(ValueError, match="Acyclic comparisons required"):
        transitive_reduction(Comparisons.from_array([[0, 1, 0, 2], [0, 2, 0, 1]]))


# -- App. A ----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_total_order_embedding_satisfies_every_comparison(seed):
    C = random_dag(10 + 3 * seed, 150 * (seed + 1), seed)
    Z = total_order_embedding(C)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    assert Z.shape[1] <= C.n_items - 1
    assert np.all(C.margins(D) >= 1 - 1e-8)


def test_total_order_embedding_rejects_cycles():
    with pytest.raises(ValueError, match="Acyclic comparisons required"):
        total_order_embedding(Comparisons.from_array([[0, 1, 0, 2], [0, 2, 1, 2], [1, 2, 0, 1]]))


def test_filtered_random_set_is_embeddable():
    C = random_comparisons(12, 500, 5)
    rep = filter_comparisons(C, random_state=0)
    Z = total_order_embedding(rep.comparisons)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    assert np.all(rep.comparisons.margins(D) >= 1 - 1e-8)
