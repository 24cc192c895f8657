"""The pruned impostor search finds exactly the triplets of the brute-force full check."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convexmetric.lmnn.blocks.stream import StreamingEvaluator
from convexmetric.lmnn.search import PrunedSearch, leading_axes, pruned_terms
from convexmetric.neighbors import target_neighbors
from convexmetric.problems.lmnn import TooManyTerms, hinge_terms, pull_matrix


def instance(seed, n, d, n_classes, k, rank, rounded):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % n_classes)
    X = (
        rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, d)
        + 2.0 * rng.normal(size=(n_classes, d))[y]
    )
    if rounded:  # ties: repeated distances and points
        X = np.round(X)
    L = rng.normal(size=(rank, d)) * rng.choice([0.05, 0.3, 1.0])
    return X, y, target_neighbors(X, y, k), L


def brute(X, y, T, L, **kw):
    return StreamingEvaluator(X, y, T, 0.5, pull_matrix(X, T), **kw).terms(L)


def ordered(terms):
    """The triplets sorted by ``(i, j, l)`` (the two searches visit pairs differently)."""
    order = np.lexsort(terms[::-1])
    return [t[order] for t in terms]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(12, 90),
    d=st.integers(1, 7),
    n_classes=st.integers(2, 4),
    k=st.integers(1, 3),
    rank=st.integers(1, 7),
    rounded=st.booleans(),
    axes=st.one_of(st.none(), st.integers(1, 7)),
    block_rows=st.integers(1, 40),
)
def test_pruned_equals_brute_force(seed, n, d, n_classes, k, rank, rounded, axes, block_rows):
    X, y, T, L = instance(seed, n, d, n_classes, k, rank, rounded)
    axes = None if axes is None else min(axes, rank)
    expected = brute(X, y, T, L)
    got = pruned_terms(X @ L.T, y, T, axes=axes, block_rows=block_rows)
    for a, b in zip(ordered(expected), ordered(got)):  # the same triplets, no repeats
        assert a.dtype == b.dtype == np.int64
        np.testing.assert_array_equal(a, b)
    # through hinge_terms' candidate-pair protocol: the same terms and values
    ref = hinge_terms(L.T @ L, X, T, y, components=L)
    via = hinge_terms(L.T @ L, X, T, y, components=L, search=PrunedSearch(axes=axes))
    assert set(zip(*ref[:3])) == set(zip(*via[:3]))
    # the brute force (each pair once, tested both ways) finds hinge_terms' triplets once
    assert len(set(zip(*expected))) == len(expected[0])
    assert set(zip(*expected)) == set(zip(*ref[:3]))


def test_collapsed_metric_every_pair():
    X, y, T, _ = instance(0, 40, 3, 3, 2, 3, False)
    L = np.zeros((3, 3))  # every differently labelled pair is an impostor
    expected = brute(X, y, T, L)
    assert len(expected[0]) == sum(2 * int(np.sum(y != y[i])) for i in range(40))
    for a, b in zip(ordered(expected), ordered(pruned_terms(X @ L.T, y, T))):
        np.testing.assert_array_equal(a, b)


def test_max_terms_and_stats():
    X, y, T, L = instance(1, 80, 4, 2, 3, 4, False)
    total = len(brute(X, y, T, L)[0])
    assert total > 10
    with pytest.raises(TooManyTerms):
        pruned_terms(X @ L.T, y, T, max_terms=total - 1)
    stats = {}
    assert len(pruned_terms(X @ L.T, y, T, max_terms=total, axes=2, stats=stats)[0]) == total
    assert stats["axes"] == 2 and 0.0 <= stats["survivors"] <= 1.0


def test_leading_axes():
    share = np.cumsum([0.5, 0.3, 0.15, 0.05] + [0.0] * 60)
    assert leading_axes(share, 64) == 8  # at least MIN_AXES
    assert leading_axes(share[:10], 10) is None  # more than half of d: no pruning


def test_nearby_metric_is_answered_by_the_last_search():
    """A full check at ``M'`` near the last searched ``M`` (``2δ`` under the kept margin)
    takes its triplets from the last search's near ones: exactly the brute force's at
    ``M'``, though they differ from those at ``M``; farther away it searches again."""
    from convexmetric.lmnn.active_list import MEMO_MARGIN, ActiveList

    X, y, T, L = instance(3, 90, 5, 3, 3, 5, False)
    # scale the metric so that one triplet sits at the kink (z = 1e-9 at M)
    I, J, Ls, _ = hinge_terms(L.T @ L, X, T, y, components=L)
    Z = X @ L.T
    gap = np.sum((Z[I] - Z[Ls]) ** 2, axis=1) - np.sum((Z[I] - Z[J]) ** 2, axis=1)
    L = L * np.sqrt((1 - 1e-9) / gap[np.argmax(gap)])
    lst = ActiveList(X, y, T, 0.5)
    M = L.T @ L
    lst._search(M, L, None)
    searches = lst.stream.checks
    rng = np.random.default_rng(0)
    changed = 0
    for _ in range(20):
        D = rng.normal(size=M.shape)
        D = D + D.T
        D *= 0.45 * MEMO_MARGIN / (np.linalg.norm(D) * lst._reach)
        L2 = np.linalg.cholesky(M + D + 1e-9 * np.eye(5)).T  # another factor
        got = lst._search(L2.T @ L2, L2, None)
        expected = brute(X, y, T, L2)
        assert set(zip(*got)) == set(zip(*expected))
        changed += set(zip(*expected)) != set(zip(*brute(X, y, T, L)))
    assert lst.stream.checks == searches  # no new search
    assert changed > 0  # the kink moved: the recall is not the old answer
    far = 2.0 * M
    lst._search(far, None, None)
    assert lst.stream.checks == searches + 1


@pytest.mark.parametrize("group", [1, 3, 7])
def test_brute_force_by_row_groups_finds_every_triplet(monkeypatch, group):
    """The full check compares rows by groups (sorted by radius) against a per-column
    threshold: with groups of every size it finds exactly hinge_terms' triplets."""
    from convexmetric.lmnn.blocks import full_check as stream

    monkeypatch.setattr(stream, "GROUP_ROWS", group)
    for seed in range(12):
        X, y, T, L = instance(seed, 70, 4, 3, 3, 4, seed % 3 == 0)
        got = brute(X, y, T, L)
        ref = hinge_terms(L.T @ L, X, T, y, components=L)
        assert len(set(zip(*got))) == len(got[0])
        assert set(zip(*got)) == set(zip(*ref[:3]))
