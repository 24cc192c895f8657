"""The verifier's eq. (14) under one metric (each differently labelled pair formed once,
both orientations' hinges from it) against the by-class sums it replaced, re-implemented
here: the same value and the same resolution, whatever the row blocks."""

import numpy as np
import pytest

from convexmetric.verifier import _lmnn_bound, _lmnn_objective
from convexmetric.verifier._rigor import SAFETY, gamma

SIZES = {5: 2, -1: 7, 3: 13, 10: 30, 7: 48}  # label: class size (a class of two at k = 3)


def by_class(m, y, T, mu):
    """Eq. (14) and its resolution as the by-class path sums them, for one metric
    (``m``: the verifier's :class:`~convexmetric.verifier._lmnn_objective.Mapped`): each class's
    points against all points of the other classes, every hinge of ``D(i, l)`` from
    ``‖z_i‖² + ‖z_l‖² − 2z_iᵀz_l``, no reach (every pair a candidate)."""
    Z, tau, eps, r = m.Z, m.tau, m.eps, m.rank
    g2, gr = gamma(2), gamma(r + 2)
    sq = np.einsum("ij,ij->i", Z, Z)
    pull = push = pull_err = push_err = 0.0
    hinges = 0
    for c in np.unique(y):
        rows, cols = np.flatnonzero(y == c), np.flatnonzero(y != c)
        pad = T[rows] == rows[:, None]
        Dt = ((Z[rows, None] - Z[T[rows]]) ** 2).sum(axis=2)
        e = eps[rows, None] + eps[T[rows]]
        Et = np.where(pad, 0.0, (gr * Dt + e * (2 * np.sqrt(Dt * (1 + gr)) + e)) * SAFETY)
        pull, pull_err = pull + Dt.sum(), pull_err + Et.sum()
        Dt[pad] = -np.inf  # padding: no hinge
        D = sq[rows, None] + sq[None, cols] - 2.0 * Z[rows] @ Z[cols].T
        H = 1.0 + Dt[:, None, :] - D[:, :, None]  # (rows, cols, k)
        El = ((tau[rows, None] + tau[None, cols]) ** 2)[:, :, None]
        E = Et[:, None, :] + El + g2 * (1.0 + np.abs(Dt)[:, None, :] + np.abs(D)[:, :, None])
        E = np.where(np.isfinite(Dt)[:, None, :], E, 0.0)
        push, push_err = push + H[H > 0].sum(), push_err + E[H > -E].sum()
        hinges += int((H > 0).sum())
    return pull, push, pull_err, push_err, hinges


def _problem(seed, rank, k=3):
    """Points of unequal classes in a shuffled order (labels not 0..c−1), a few of them
    repeated within and across classes (ties, zero distances), their ``k`` nearest
    same-class targets (padded with the point itself in the class of two), and
    ``Z = X̃Lᵀ`` for a random PSD metric of ``rank``, scaled so that some hinges are
    active and most pairs are out of reach."""
    rng = np.random.default_rng(seed)
    d = 6
    y = rng.permutation(np.repeat(list(SIZES), list(SIZES.values())))
    X = rng.normal(size=(len(y), d)) + 1.5 * rng.normal(size=(max(SIZES) + 2, d))[y + 1]
    X[3], X[10] = X[8], X[np.flatnonzero(y != y[10])[0]]  # a tie in or across a class
    T = np.empty((len(y), k), np.int64)
    for c in SIZES:
        idx = np.flatnonzero(y == c)
        D = ((X[idx, None] - X[idx]) ** 2).sum(axis=2)
        np.fill_diagonal(D, np.inf)
        near = idx[np.argsort(D, axis=1, kind="stable")[:, : min(k, len(idx) - 1)]]
        T[idx] = np.c_[near, np.repeat(idx[:, None], k - near.shape[1], axis=1)]
    L = rng.normal(size=(rank, d))
    L /= np.sqrt(np.median([np.sum((L @ (X[i] - X[T[i, 0]])) ** 2) for i in range(len(y))]))
    return _lmnn_objective.Mapped(X - X.mean(axis=0), L), y, T


@pytest.mark.parametrize("block_bytes", [None, 1, 8 * 60, 8 * 400])
@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2), (2, 6), (3, 1)])
def test_symmetric_sums_are_the_by_class_ones(seed, rank, block_bytes, monkeypatch):
    if block_bytes is not None:  # one row a block, a few rows, several classes' rows
        monkeypatch.setattr(_lmnn_objective, "BLOCK_BYTES", block_bytes)
    m, y, T = _problem(seed, rank)
    got = _lmnn_objective._sums_symmetric(m, y, T)
    ref = by_class(m, y, T, 0.5)
    assert 0 < got[0] and 0 < got[1]  # both pull and hinges in the sum
    assert got[4] == ref[4]  # the same hinges counted
    for a, b in zip(got[:4], ref[:4]):
        assert a == pytest.approx(b, rel=1e-12, abs=0)


@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2), (2, 6), (3, 1)])
def test_some_pairs_are_out_of_reach(seed, rank):
    # the problems above are not all hinge: many differently labelled pairs are out of
    # reach, so the reach comparisons of both orientations are exercised
    m, y, T = _problem(seed, rank)
    Z = m.Z
    sq = np.einsum("ij,ij->i", Z, Z)
    D = sq[:, None] + sq[None] - 2.0 * Z @ Z.T
    Dt = np.where(T == np.arange(len(y))[:, None], -np.inf, D[np.arange(len(y))[:, None], T])
    near = (D < Dt.max(axis=1)[:, None] + 1.0)[y[:, None] != y[None]]
    assert 0.01 < near.mean() < 0.6


@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2)])
def test_one_metric_twice_is_one_metric(seed, rank, monkeypatch):
    # the by-class path of several metrics, with the same metric in every cluster, sums
    # the same hinges as the symmetric path of one
    monkeypatch.setattr(_lmnn_objective, "BLOCK_BYTES", 8 * 60)
    m, y, T = _problem(seed, rank)
    g = np.random.default_rng(seed).integers(0, 2, len(y))
    one = _lmnn_objective.objective([m], np.zeros(len(y), np.int64), y, T, 0.5)
    two = _lmnn_objective.objective([m, m], g, y, T, 0.5)
    assert one == pytest.approx(two, rel=1e-12, abs=0)


@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2), (3, 1)])
def test_objective_within_its_resolution_of_extended_precision(seed, rank):
    # the resolution is a rigorous bound: the same eq. (14) in long double, at the map
    # itself, is within it
    _, y, T = _problem(seed, rank)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(y), 6)) * 10.0 ** rng.integers(-3, 4, 6) + 1e3
    L = rng.normal(size=(rank, 6)) / X.std(0)
    m = _lmnn_objective.Mapped(X - X.mean(0), L)
    f, res = _lmnn_objective.objective([m], np.zeros(len(y), np.int64), y, T, 0.5)
    Zl = X.astype(np.longdouble) @ L.T.astype(np.longdouble)
    exact = 0.0
    for i in range(len(y)):
        for j in T[i][T[i] != i]:
            dij = np.sum((Zl[i] - Zl[j]) ** 2)
            exact += 0.5 * dij + 0.5 * sum(max(0.0, 1 + dij - np.sum((Zl[i] - Zl[l]) ** 2))
                                           for l in np.flatnonzero(y != y[i]))  # fmt: skip
    assert abs(f - float(exact)) <= res and res < 1e-9 * f


def plain_bound(X, T, mu, I, J, L, lam, g, F):
    """The certificate's bound from its definition, one triplet at a time: per cluster
    ``S_h = (1 − μ)P_h + μΣλ(C_ij[g(j)=h] − C_il[g(l)=h])``, ``ν`` the least generalised
    eigenvalue of ``(S_h, (1 − μ)P_h)`` on the whole space (``P_h`` nonsingular here)."""
    n, d = T.shape[0], X.shape[1]
    P, S = np.zeros((g.max() + 1, d, d)), np.zeros((g.max() + 1, d, d))
    for i in range(n):
        for j in T[i]:
            P[g[j]] += np.outer(X[i] - X[j], X[i] - X[j])
    for i, j, l, w in zip(I, J, L, lam):
        S[g[j]] += w * np.outer(X[i] - X[j], X[i] - X[j])
        S[g[l]] -= w * np.outer(X[i] - X[l], X[i] - X[l])
    nu = np.inf
    for Ph, Sh in zip(P, S):
        w, V = np.linalg.eigh(Ph)
        B = V / np.sqrt(w)
        A = B.T @ ((1 - mu) * Ph + mu * Sh) @ B / (1 - mu)
        nu = min(nu, np.linalg.eigvalsh(0.5 * (A + A.T))[0])
    total = mu * lam.sum()
    return total if nu >= 0 else max(total / (1 - nu), total + nu * F)


@pytest.mark.parametrize("clusters", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bound_is_the_triplet_by_triplet_one(seed, clusters, monkeypatch):
    # the verifier scatters each distinct pair once, its multipliers summed (triplets
    # share target pairs, and an impostor pair serves several targets), and proves the
    # matrix inequality with a raise of κ by at most 1e-10: the bound is the one of the
    # triplets one by one, to that share, and never above it
    monkeypatch.setattr(_lmnn_bound, "BLOCK", 7)  # a few pairs a block
    rng = np.random.default_rng(seed)
    m, y, T = _problem(seed, 6)
    X = m.Z + 0.1 * rng.normal(size=m.Z.shape)
    n = len(y)
    trip = {(i, j, l) for i in range(n) for j in T[i] if j != i
            for l in rng.choice(np.flatnonzero(y != y[i]), 4)}  # fmt: skip
    I, J, L = (np.array(v) for v in zip(*sorted(trip)))
    assert len({(a, b) for a, b in zip(I, J)}) < len(I) > len({(a, b) for a, b in zip(I, L)})
    lam = rng.uniform(0.0, 1.0, len(I)) * (rng.uniform(size=len(I)) < 0.8)
    g = np.zeros(n, np.int64) if clusters == 1 else (np.arange(n) % 2)
    cert = {"i": I, "j": J, "l": L, "lam": lam, "F": 50.0}
    got = _lmnn_bound.bound(X, y, T, 0.5, cert, 40.0, g, clusters)
    want = plain_bound(X, T, 0.5, I, J, L, lam, g, 50.0)
    assert want * (1 - 1e-9) <= got <= want * (1 + 1e-12)
    assert got < 0.5 * lam.sum()  # ν < 0: the repair is exercised


def test_an_impostor_off_the_pull_coordinates_proves_nothing():
    # a multiplier on an impostor difference in a coordinate where no target pair
    # differs proves nothing (the pull term does not see that direction, a metric of any
    # size may use it): the bound is the trivial 0
    rng = np.random.default_rng(0)
    m, y, T = _problem(0, 6)
    # a seventh coordinate constant within each class: no target difference (of one
    # class) has it, every impostor difference does
    X = np.c_[m.Z, np.unique(y, return_inverse=True)[1].ravel().astype(float)]
    i = 0
    l = int(np.flatnonzero(y != y[0])[0])
    cert = {"i": np.array([i]), "j": np.array([T[i, 0]]), "l": np.array([l]),
            "lam": np.array([rng.uniform(0.1, 1.0)]), "F": np.nan}  # fmt: skip
    assert _lmnn_bound.bound(X, y, T, 0.5, cert, 40.0, np.zeros(len(y), np.int64), 1) == 0.0
    X[:, 6] = 0.0  # the coordinate constant: the same multiplier now proves its share
    assert _lmnn_bound.bound(X, y, T, 0.5, cert, 40.0, np.zeros(len(y), np.int64), 1) > 0.0


def test_a_nearly_null_pull_direction_weakens_the_bound():
    # a coordinate in which target pairs differ by 1e-9 of the others: not a null space
    # (a metric of norm 1e18 may use it), so impostors along it weaken the bound as they
    # should, where a tolerance would have set the direction aside
    rng = np.random.default_rng(1)
    m, y, T = _problem(1, 6)
    extra = np.unique(y, return_inverse=True)[1].ravel() + 1e-9 * rng.normal(size=len(y))
    X = np.c_[m.Z, extra]
    n = len(y)
    I = np.array([i for i in range(n) for _ in range(2)])
    J = np.array([T[i, 0] for i in range(n) for _ in range(2)])
    L = np.array([np.flatnonzero(y != y[i])[q] for i in range(n) for q in range(2)])
    cert = {"i": I, "j": J, "l": L, "lam": np.full(len(I), 0.5), "F": np.nan}
    g = np.zeros(n, np.int64)
    weak = _lmnn_bound.bound(X, y, T, 0.5, cert, 40.0, g, 1)
    strong = _lmnn_bound.bound(X[:, :6], y, T, 0.5, cert, 40.0, g, 1)
    assert weak < 1e-6 * strong
