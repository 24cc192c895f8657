"""The full check's brute-force impostor search finds exactly ``hinge_terms``' triplets."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
from convexmetric.neighbors import target_neighbors
from convexmetric.problems.lmnn import hinge_terms, pull_matrix


def instance(seed, n, d, n_classes, k, rank, rounded, small=None):
    """``small``: class 0 cut to that many members (at most ``k``: its points get fewer
    targets, the rows padded with the point itself)."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % n_classes)
    if small is not None:
        y[np.flatnonzero(y == 0)[small:]] = 1
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(12, 90),
    d=st.integers(1, 7),
    n_classes=st.integers(2, 4),
    k=st.integers(1, 3),
    rank=st.integers(1, 7),
    rounded=st.booleans(),
    small=st.one_of(st.none(), st.integers(2, 3)),
)
def test_brute_force_equals_hinge_terms(seed, n, d, n_classes, k, rank, rounded, small):
    X, y, T, L = instance(seed, n, d, n_classes, k, rank, rounded, small)
    expected = brute(X, y, T, L)
    ref = hinge_terms(L.T @ L, X, T, y, components=L)
    # the brute force (each pair once, tested both ways) finds hinge_terms' triplets once
    assert len(set(zip(*expected))) == len(expected[0])
    assert set(zip(*expected)) == set(zip(*ref[:3]))
    if small is not None and small <= k:  # ragged: every triplet, by its definition
        assert set(zip(*expected)) == every_violated(X, y, T, L)


def every_violated(X, y, T, L):
    """The triplets with ``1 + D(i, j) − D(i, l) > 0``, over all ``(i, j, l)`` with ``j`` a
    target of ``i`` (a slot naming ``i`` itself is padding, no target)."""
    Z = X @ L.T
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    return {(i, j, l) for i in range(len(y)) for j in T[i] if j != i
            for l in np.flatnonzero(y != y[i]) if 1.0 + D[i, j] - D[i, l] > 0}  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_ragged_full_check_lists_every_violated_triplet(seed):
    """A class of two members at k = 3 (one target each, two padded slots): the full
    check by blocks and hinge_terms list the triplets of the definition, none through
    the padding."""
    X, y, T, L = instance(seed, 40, 3, 3, 3, 3, seed % 2 == 1, small=2)
    assert (T == np.arange(40)[:, None]).sum() == 4
    got, ref = brute(X, y, T, L), hinge_terms(L.T @ L, X, T, y, components=L)
    want = every_violated(X, y, T, L)
    assert len(want) > 0 and any(y[i] == 0 for i, _, _ in want)
    assert set(zip(*got)) == want and set(zip(*ref[:3])) == want
    tree = hinge_terms(L.T @ L, X, T, y, components=L, search="balltree")
    assert set(zip(*tree[:3])) == want


def test_collapsed_metric_every_pair():
    X, y, T, _ = instance(0, 40, 3, 3, 2, 3, False)
    L = np.zeros((3, 3))  # every differently labelled pair is an impostor
    expected = brute(X, y, T, L)
    assert len(expected[0]) == sum(2 * int(np.sum(y != y[i])) for i in range(40))
    assert len(set(zip(*expected))) == len(expected[0])


def test_nearby_metric_is_answered_by_the_last_search(monkeypatch):
    """A full check at ``M'`` near the last searched ``M`` (its shift under the kept margin)
    takes its triplets from the last search's near ones: exactly the brute force's at
    ``M'``, though they differ from those at ``M``; farther away it searches again."""
    from convexmetric.lmnn import memo
    from convexmetric.lmnn.active_list import ActiveList
    from convexmetric.lmnn.constants import MEMO_MARGIN

    monkeypatch.setattr(memo, "PARTIAL_MIN_N", 0)  # (small data: the memo's metric only)
    X, y, T, L = instance(3, 90, 5, 3, 3, 5, False)
    # scale the metric so that one triplet sits at the kink (z = 1e-9 at M)
    I, J, Ls, _ = hinge_terms(L.T @ L, X, T, y, components=L)
    Z = X @ L.T
    gap = np.sum((Z[I] - Z[Ls]) ** 2, axis=1) - np.sum((Z[I] - Z[J]) ** 2, axis=1)
    L = L * np.sqrt((1 - 1e-9) / gap[np.argmax(gap)])
    lst = ActiveList(X, y, T, 0.5)
    M = L.T @ L
    lst.search(M, L, None)
    searches = lst.stream.checks
    rng = np.random.default_rng(0)
    changed = 0
    C = X - X.mean(axis=0)
    reach = 4.0 * np.einsum("ij,ij->i", C, C).max()  # ≥ every ‖x_a − x_b‖²
    for _ in range(20):
        D = rng.normal(size=M.shape)
        D = D + D.T
        D *= 0.45 * MEMO_MARGIN / (np.linalg.norm(D) * reach)  # ≤ 0.9 m by the spectral bound
        L2 = np.linalg.cholesky(M + D + 1e-9 * np.eye(5)).T  # another factor
        got = lst.search(L2.T @ L2, L2, None)
        expected = brute(X, y, T, L2)
        assert set(zip(*got)) == set(zip(*expected))
        changed += set(zip(*expected)) != set(zip(*brute(X, y, T, L)))
    assert lst.stream.checks == searches  # no new search
    assert changed > 0  # the kink moved: the recall is not the old answer
    far = 2.0 * M
    lst.search(far, None, None)
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


@pytest.mark.parametrize("residual", [0.3, 0.9])
def test_low_rank_screen_finds_every_triplet(monkeypatch, residual):
    """The search's coordinates keep a few principal axes of ``Z`` and the norm of the
    rest (a contraction): leaving most of the spread out only widens the candidates,
    the triplets are hinge_terms' exactly (anisotropic data: the screen is in use)."""
    from convexmetric.lmnn.blocks import screen

    monkeypatch.setattr(screen, "SCREEN_RESIDUAL", residual)
    for seed in range(10):
        X, y, T, L = instance(seed, 80, 7, 3, 3, 7, seed % 3 == 0)
        X = X * np.geomspace(4.0, 0.1, 7)
        got = brute(X, y, T, L)
        ref = hinge_terms(L.T @ L, X, T, y, components=L)
        assert len(set(zip(*got))) == len(got[0])
        assert set(zip(*got)) == set(zip(*ref[:3]))


@pytest.mark.parametrize("seed", range(5))
def test_screen_coordinates_are_a_contraction(seed):  # (the default: 5% left out)
    """``‖w_a − w_b‖ ≤ ‖z_a − z_b‖`` for every pair; fewer columns than ``Z`` where the
    spread sits on a few axes; ``Z`` itself where it does not."""
    from convexmetric.lmnn.blocks.data import StreamData, Workspace

    X, y, T, L = instance(seed, 60, 6, 3, 2, 6, False)
    data = StreamData(X * np.r_[5.0, 3.0, 0.2, 0.1, 0.05, 0.01], y, T)
    ws = Workspace()
    P = ws.project(data, L)
    S = ws.screen(P)
    assert S.W.shape[1] < P.Z.shape[1] and S.B.shape == (60, S.W.shape[1] + 2)
    dz = ((P.Z[:, None] - P.Z[None]) ** 2).sum(-1)
    dw = ((S.W[:, None] - S.W[None]) ** 2).sum(-1)
    assert np.all(dw <= dz * (1 + 1e-12) + 1e-12)
    assert np.allclose(S.sq, (S.W**2).sum(1))
    assert S.scale == max(S.sq.max(), P.sq.max()) + 1.0
    assert ws.screen(P) is S  # once per projection
    iso = StreamData(np.random.default_rng(seed).normal(size=(60, 6)), y, T)
    P2 = ws.project(iso, np.eye(6))
    assert ws.screen(P2).W is P2.Z


def step(rng, M, kind, scale):
    """A change ``D`` of ``M``: a trim (``D ⪯ 0``), a symmetric step, a low-rank update."""
    d = M.shape[0]
    if kind == "trim":
        w, V = np.linalg.eigh(M)
        drop = w < np.quantile(w, 0.5)
        return -(V[:, drop] * w[drop]) @ V[:, drop].T
    if kind == "step":
        D = rng.normal(size=(d, d))
        return scale * (D + D.T)
    u, v = rng.normal(size=(2, d, 1))
    return scale * (u @ u.T - 0.5 * v @ v.T)


def factor(M):
    """``L`` with ``LᵀL`` the PSD part of ``M``."""
    w, V = np.linalg.eigh(M)
    return (V * np.sqrt(np.clip(w, 0, None))).T


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(12, 70), d=st.integers(1, 6),
       kind=st.sampled_from(["trim", "step", "low-rank"]), scale=st.sampled_from([1e-3, 1e-2, 0.1]),
       margin=st.sampled_from([0.05, 0.5, 2.0]))  # fmt: skip
def test_memo_decides_every_pair_without_a_stale_end(seed, n, d, kind, scale, margin):
    """From ``M`` to ``M + D``, every triplet violated at ``M + D`` whose pair has no stale
    end (:meth:`SearchMemo.stale`) was within the margin at ``M``: among the memo's."""
    from convexmetric.linalg import Spread
    from convexmetric.lmnn import memo as memo_module
    from convexmetric.lmnn.memo import SearchMemo

    X, y, T, L = instance(seed, n, d, 3, 2, d, seed % 2 == 0)
    rng = np.random.default_rng(seed)
    M = L.T @ L
    near = StreamingEvaluator(X, y, T, 0.5, pull_matrix(X, T)).terms(L, margin=margin)
    memo = SearchMemo(M, L, near, margin)
    L2 = factor(M + step(rng, M, kind, scale))
    M2 = L2.T @ L2
    with mock.patch.object(memo_module, "PARTIAL_MIN_N", 0):  # small data: exercised here
        stale, Z = memo.stale(M2, L2, X, T, Spread(X))
    if stale is None:
        return
    assert np.array_equal(Z, X @ L2.T)
    kept = set(zip(*near))
    for i, j, l in every_violated(X, y, T, L2):
        assert stale[i] or stale[l] or (i, j, l) in kept


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(12, 80), share=st.floats(0.0, 1.0),
       lanes=st.sampled_from([1, 2]))  # fmt: skip
def test_partial_check_lists_the_pairs_with_a_stale_end(seed, n, share, lanes):
    """``partial_terms`` finds exactly the violated triplets ``(i, j, l)`` with ``i`` or
    ``l`` stale, each once, in one thread or two lanes."""
    from convexmetric.lmnn.blocks.local import LocalExecutor

    X, y, T, L = instance(seed, n, 4, 3, 3, 4, seed % 3 == 0)
    stale = np.random.default_rng(seed).uniform(size=n) < share
    ev = StreamingEvaluator(X, y, T, 0.5, pull_matrix(X, T), executor=LocalExecutor(lanes))
    got = ev.partial_terms(L, stale)
    want = {(i, j, l) for i, j, l in every_violated(X, y, T, L) if stale[i] or stale[l]}
    assert len(got[0]) == len(want) and set(zip(*got)) == want
    assert ev.partial_checks == 1 and ev.checks == 0


def test_partial_search_answers_a_refinement_step(monkeypatch):
    """Between a refinement's checks the metric moves a little: the last search's
    memo decides most pairs, and the points it may miss are searched again (a partial
    check, no full one); the triplets are exactly the brute force's."""
    from convexmetric.lmnn import memo
    from convexmetric.lmnn.active_list import WIDE_MEMO_MARGIN, ActiveList

    monkeypatch.setattr(memo, "PARTIAL_MIN_N", 0)  # (small data: the memo's metric only)

    X, y, T, L = instance(7, 90, 5, 3, 3, 5, False)
    lst = ActiveList(X, y, T, 0.5)
    lst.searcher.margin = WIDE_MEMO_MARGIN
    M = L.T @ L
    lst.search(M, L, None)
    rng = np.random.default_rng(2)
    kinds = set()
    for scale in (1e-4, 1e-3, 3e-3, 1e-2):
        L2 = factor(M + step(rng, M, "low-rank", scale))
        checks, partial = lst.stream.checks, lst.stream.partial_checks
        got = lst.search(L2.T @ L2, L2, None)
        assert set(zip(*got)) == set(zip(*brute(X, y, T, L2)))
        assert len(set(zip(*got))) == len(got[0])  # each once
        kinds.add((lst.stream.checks - checks, lst.stream.partial_checks - partial))
        done = lst.stream.checks + lst.stream.partial_checks
        again = lst.search(L2.T @ L2, L2, None)  # the same point: no search
        assert all(np.array_equal(a, b) for a, b in zip(again, got))
        assert lst.stream.checks + lst.stream.partial_checks == done
    assert (0, 0) in kinds and (0, 1) in kinds  # the memo alone; a partial check
    monkeypatch.setattr(memo, "PARTIAL_MIN_N", 91)  # below it: a nearby metric searches
    L3 = factor(M + step(rng, M, "low-rank", 1e-4))
    checks = lst.stream.checks
    assert set(zip(*lst.search(L3.T @ L3, L3, None))) == set(zip(*brute(X, y, T, L3)))
    assert lst.stream.checks == checks + 1


def test_trimmed_metric_is_answered_by_the_last_search(monkeypatch):
    """The refinement's first stage trims the factor (directions below ``RANK_TOL·λ_max``
    dropped): where the data barely move along them, the last search decides its
    triplets (exactly the brute force's), with no new search; a coarse trim searches."""
    from convexmetric.lmnn import memo
    from convexmetric.lmnn.active_list import ActiveList
    from convexmetric.optim.factor import trimmed

    monkeypatch.setattr(memo, "PARTIAL_MIN_N", 0)  # (small data: the memo's metric only)
    X, y, T, _ = instance(5, 90, 6, 3, 3, 6, False)
    w = np.array([1e-7, 1e-6, 0.5, 1.0, 2.0, 3.0])
    V = np.linalg.qr(np.random.default_rng(1).normal(size=(6, 6)))[0]
    L = (V * np.sqrt(w)).T
    lst = ActiveList(X, y, T, 0.5)
    lst.search(L.T @ L, L, None)
    searches = lst.stream.checks
    Lt = trimmed(L, 1e-3)
    assert Lt.shape[0] == 4
    got = lst.search(Lt.T @ Lt, Lt, None)
    assert set(zip(*got)) == set(zip(*brute(X, y, T, Lt)))
    assert lst.stream.checks == searches  # answered by the last search
    Lc = trimmed(L, 0.4)  # drops the eigenvalues 0.5 and 1 too: a new search
    got = lst.search(Lc.T @ Lc, Lc, None)
    assert set(zip(*got)) == set(zip(*brute(X, y, T, Lc)))
    assert lst.stream.checks == searches + 1
