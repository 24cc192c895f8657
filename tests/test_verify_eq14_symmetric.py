"""The verifier's eq. (14) under one metric (each differently labelled pair formed once,
both orientations' hinges from it) against the by-class sums it replaced, re-implemented
here: the same value and the same resolution, whatever the row blocks."""

import numpy as np
import pytest

from convexmetric.verifier import _eq14

SIZES = {5: 2, -1: 7, 3: 13, 10: 30, 7: 48}  # label: class size (a class of two at k = 3)


def by_class(Z, y, T, mu, xn, norm):
    """Eq. (14) and its resolution as the by-class path sums them, for one metric: each
    class's points against all points of the other classes, every hinge of ``D(i, l)``
    from ``‖z_i‖² + ‖z_l‖² − 2z_iᵀz_l``, no reach (every pair a candidate)."""
    err = _eq14.RESOLUTION_UNITS * (Z.shape[1] + 2) * np.finfo(np.float64).eps / 2 * norm
    sq = np.einsum("ij,ij->i", Z, Z)
    pull = push = pull_err = push_err = 0.0
    for c in np.unique(y):
        rows, cols = np.flatnonzero(y == c), np.flatnonzero(y != c)
        pad = T[rows] == rows[:, None]
        Dt = ((Z[rows, None] - Z[T[rows]]) ** 2).sum(axis=2)
        Et = np.where(pad, 0.0, err * (xn[rows, None] + xn[T[rows]]) ** 2)
        pull, pull_err = pull + Dt.sum(), pull_err + Et.sum()
        Dt[pad] = -np.inf  # padding: no hinge
        D = sq[rows, None] + sq[None, cols] - 2.0 * Z[rows] @ Z[cols].T
        H = 1.0 + Dt[:, None, :] - D[:, :, None]  # (rows, cols, k)
        E = Et[:, None, :] + (err * (xn[rows, None] + xn[None, cols]) ** 2)[:, :, None]
        push, push_err = push + H[H > 0].sum(), push_err + E[H > -E].sum()
    return (1 - mu) * pull + mu * push, (1 - mu) * pull_err + mu * push_err


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
    M = L.T @ L
    M /= np.median([(X[i] - X[T[i, 0]]) @ M @ (X[i] - X[T[i, 0]]) for i in range(len(y))])
    Xc = X - X.mean(axis=0)
    xn = np.sqrt(np.einsum("ij,ij->i", Xc, Xc))
    return Xc @ _eq14.factor(M).T, y, T, xn, float(np.linalg.eigvalsh(M)[-1])


@pytest.mark.parametrize("block_bytes", [None, 1, 8 * 60, 8 * 400])
@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2), (2, 6), (3, 1)])
def test_symmetric_objective_is_the_by_class_one(seed, rank, block_bytes, monkeypatch):
    if block_bytes is not None:  # one row a block, a few rows, several classes' rows
        monkeypatch.setattr(_eq14, "BLOCK_BYTES", block_bytes)
    Z, y, T, xn, norm = _problem(seed, rank)
    g = np.zeros(len(y), np.int64)
    value, resolution = _eq14.objective([Z], g, y, T, 0.5, xn, [norm])
    ref_value, ref_resolution = by_class(Z, y, T, 0.5, xn, norm)
    pull, _ = by_class(Z, y, T, 0.0, xn, norm)  # (μ = 0: the pull alone)
    assert 0 < 0.5 * pull < 0.99 * ref_value  # both pull and hinges in the sum
    assert value == pytest.approx(ref_value, rel=1e-12, abs=0)
    assert resolution == pytest.approx(ref_resolution, rel=1e-12, abs=0)


@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2), (2, 6), (3, 1)])
def test_some_pairs_are_out_of_reach(seed, rank):
    # the problems above are not all hinge: many differently labelled pairs are out of
    # reach, so the reach comparisons of both orientations are exercised
    Z, y, T, _, _ = _problem(seed, rank)
    sq = np.einsum("ij,ij->i", Z, Z)
    D = sq[:, None] + sq[None] - 2.0 * Z @ Z.T
    Dt = np.where(T == np.arange(len(y))[:, None], -np.inf, D[np.arange(len(y))[:, None], T])
    near = (D < Dt.max(axis=1)[:, None] + 1.0)[y[:, None] != y[None]]
    assert 0.01 < near.mean() < 0.6


@pytest.mark.parametrize("seed, rank", [(0, 6), (1, 2)])
def test_one_metric_twice_is_one_metric(seed, rank, monkeypatch):
    # the by-class path of several metrics, with the same metric in every cluster, sums
    # the same hinges as the symmetric path of one
    monkeypatch.setattr(_eq14, "BLOCK_BYTES", 8 * 60)
    Z, y, T, xn, norm = _problem(seed, rank)
    g = np.random.default_rng(seed).integers(0, 2, len(y))
    one = _eq14.objective([Z], np.zeros(len(y), np.int64), y, T, 0.5, xn, [norm])
    two = _eq14.objective([Z, Z], g, y, T, 0.5, xn, [norm, norm])
    assert one == pytest.approx(two, rel=1e-12, abs=0)


def plain_bound(X, T, mu, I, J, L, lam, g, F):
    """The certificate's bound from its definition, one triplet at a time: per cluster
    ``S_h = (1 − μ)P_h + μΣλ(C_ij[g(j)=h] − C_il[g(l)=h])``, ``ν`` the least generalised
    eigenvalue of ``(S_h, (1 − μ)P_h)`` on the range of ``P_h``."""
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
        B = V[:, w > 1e-10 * w[-1]] / np.sqrt(w[w > 1e-10 * w[-1]])
        A = B.T @ ((1 - mu) * Ph + mu * Sh) @ B / (1 - mu)
        nu = min(nu, np.linalg.eigvalsh(0.5 * (A + A.T))[0])
    total = mu * lam.sum()
    return total if nu >= 0 else max(total / (1 - nu), total + nu * F)


@pytest.mark.parametrize("clusters", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bound_is_the_triplet_by_triplet_one(seed, clusters, monkeypatch):
    # the verifier scatters each distinct pair once, its multipliers summed (triplets
    # share target pairs, and an impostor pair serves several targets): the same bound
    # as the sum over the triplets one by one
    monkeypatch.setattr(_eq14, "BLOCK_BYTES", 8 * 6 * 7)  # a few pairs a block
    rng = np.random.default_rng(seed)
    Z, y, T, _, _ = _problem(seed, 6)
    X = Z + 0.1 * rng.normal(size=Z.shape)
    n = len(y)
    trip = {(i, j, l) for i in range(n) for j in T[i] if j != i
            for l in rng.choice(np.flatnonzero(y != y[i]), 4)}  # fmt: skip
    I, J, L = (np.array(v) for v in zip(*sorted(trip)))
    assert len({(a, b) for a, b in zip(I, J)}) < len(I) > len({(a, b) for a, b in zip(I, L)})
    lam = rng.uniform(0.0, 1.0, len(I)) * (rng.uniform(size=len(I)) < 0.8)
    g = np.zeros(n, np.int64) if clusters == 1 else (np.arange(n) % 2)
    cert = {"i": I, "j": J, "l": L, "lam": lam, "F": 50.0}
    got = _eq14.bound(X, y, T, 0.5, cert, 40.0, g, clusters)
    assert got == pytest.approx(plain_bound(X, T, 0.5, I, J, L, lam, g, 50.0), rel=1e-10)
    assert got < 0.5 * lam.sum()  # ν < 0: the repair is exercised


def test_an_impostor_off_the_pull_range_is_refused():
    # a multiplier on an impostor difference outside range(P) proves nothing (the pull
    # term does not see that direction): the verifier refuses the certificate
    rng = np.random.default_rng(0)
    Z, y, T, _, _ = _problem(0, 6)
    # a seventh coordinate constant within each class: no target difference (of one
    # class) has it, every impostor difference does
    X = np.c_[Z, np.unique(y, return_inverse=True)[1].ravel().astype(float)]
    i = 0
    l = int(np.flatnonzero(y != y[0])[0])
    cert = {"i": np.array([i]), "j": np.array([T[i, 0]]), "l": np.array([l]),
            "lam": np.array([rng.uniform(0.1, 1.0)]), "F": np.nan}  # fmt: skip
    with pytest.raises(_eq14.Infeasible, match="leaves the pull range"):
        _eq14.bound(X, y, T, 0.5, cert, 40.0, np.zeros(len(y), np.int64), 1)
