r"""Eq. (14) of Weinberger & Saul (2009) by brute force in float64, with a rigorous bound
on its rounding: the objective of :mod:`convexmetric.verifier.lmnn` (whose docstring
states the problem; the dual bound is :mod:`._lmnn_bound`).

**What is computed.** The map ``L`` a model applies (``M = LᵀL``) acts on the points
centred by any float vector ``m`` (distances do not move): ``ẑ_a = fl(fl(x_a − m)Lᵀ)``.
A target distance is ``fl(‖ẑ_i − ẑ_j‖²)``; every other pair's is
``fl([ẑ_i, s_i, 1]·[−2ẑ_l, 1, s_l])`` with ``s = fl(‖ẑ‖²)`` (one product of ``r + 2``
terms per pair).

**Its error** (Higham's ``γ_n = nu/(1 − nu)``, :mod:`._rigor`). The centring errs by
``u|x̃_a|`` componentwise and the product by ``γ_d|L||x̃_a|``, so
``‖ẑ_a − L(x_a − m)‖ ≤ ε_a = (γ_d + 2u)·‖|L||x̃_a|‖`` — componentwise in the data: a
direction in which the data do not vary adds nothing, however large ``L`` is there —
and ``ẑ_i − ẑ_j`` differs from the exact ``L(x_i − x_j)`` by at most ``ε_i + ε_j``.
Hence a target distance errs by at most
``γ_{r+2}D̂ + (ε_i + ε_j)(2√D̂' + ε_i + ε_j)`` (``D̂'`` an upper bound of the computed
sum of squares), and a pair's by at most
``γ_{2r+3}(ρ_i + ρ_l)² + (ε_i + ε_l)(2(ρ_i + ρ_l) + ε_i + ε_l) ≤ (τ_i + τ_l)²`` with
``ρ = ‖ẑ‖`` and ``τ = √γ_{2r+3}·ρ + ε/√γ_{2r+3}``. A hinge ``[1 + D(i, j) − D(i, l)]_+``
evaluated as ``fl(1 + D̂t − D̂)`` adds ``γ_2(1 + D̂t + D̂)``. Every hinge within its
error of positive contributes its error; the others are 0 exactly. The sums of ``N``
non-negative terms add ``γ_N`` of themselves, the weighting ``γ_3``. The total is the
objective's ``resolution``: ``|f̂ − f(M)| ≤ resolution`` for the exact objective at the
model's ``L`` on the user's points.

**Which pairs.** A hinge is positive only where ``D(i, l) < R_i`` with
``R_i = max_j D(i, j) + 1``; ``R_i`` is raised by the largest error of ``i``'s target
distances and pairs, so that no hinge within its error of positive is left out. Under
one metric each differently labelled pair is formed once, in a row block of class ``a``
against the later classes, and gives the hinges of both orientations
(:func:`_sums_symmetric`); under several, each class's rows against the other classes'
points grouped by their metric (:func:`_sums_by_class`).
"""

from __future__ import annotations

import numpy as np

from ._rigor import SAFETY, UNIT, gamma, sum_upper

#: bytes of one float64 row block of the brute-force evaluations
BLOCK_BYTES = 64 << 20


def block_rows(n):
    return max(1, BLOCK_BYTES // (8 * max(n, 1)))


class Mapped:
    """The points under one map: ``Z = fl(X̃Lᵀ)``, their norms ``ρ``, ``ε`` (the bound
    on each row's error, module docstring) and ``τ`` (a pair's error is at most
    ``(τ_a + τ_b)²``)."""

    def __init__(self, Xc, L):
        d, r = Xc.shape[1], L.shape[0]
        self.Z = Xc @ L.T
        B = np.abs(Xc) @ np.abs(L).T  # |x̃_a||L|ᵀ: the componentwise scale of z_a's error
        self.eps = (gamma(d) + 2 * UNIT) * SAFETY * np.sqrt(np.einsum("ij,ij->i", B, B))
        self.sq = np.einsum("ij,ij->i", self.Z, self.Z)
        rho = np.sqrt(self.sq * (1 + gamma(r + 1)))
        root = np.sqrt(gamma(2 * r + 3))
        self.tau = (root * rho + self.eps / root) * SAFETY
        self.rank = r


def objective(maps, g, y, T, mu):
    """Eq. (14) at the maps ``maps[c]`` (:class:`Mapped`; the pair ``(a, b)`` under
    ``maps[g[b]]``) by float64 row blocks: ``(value, resolution)`` (module docstring)."""
    if len(maps) == 1:
        sums = _sums_symmetric(maps[0], y, T)
    else:
        sums = _sums_by_class(maps, g, y, T)
    pull, push, pull_err, push_err, n_hinges = sums
    value = (1 - mu) * pull + mu * push
    n_pull = int(np.count_nonzero(T != np.arange(len(y))[:, None]))
    pull_err += sum_upper(pull, n_pull) - pull
    push_err += sum_upper(push, n_hinges) - push
    resolution = (1 - mu) * pull_err + mu * push_err + gamma(3) * value
    return value, resolution * SAFETY


def _target_terms(maps, g, rows, T):
    """The rows' target distances ``Dt`` (``−inf`` at padding: no hinge), their errors
    ``Et`` (0 at padding: ``D(i, i) = 0`` exactly) and their sums: ``(Dt, Et, pull,
    pull_err)``."""
    Dt, Et = _target_distances(maps, g, rows, T)
    pad = T[rows] == rows[:, None]
    Dt[pad], Et[pad] = 0.0, 0.0
    pull, pull_err = float(Dt.sum()), float(Et.sum())
    Dt[pad] = -np.inf
    return Dt, Et, pull, pull_err


def _sums_by_class(maps, g, y, T):
    """Eq. (14)'s pull, push, their errors and the hinges counted, under several metrics,
    where ``D(i, l)`` (under ``M_{g[l]}``) and ``D(l, i)`` (under ``M_{g[i]}``) differ:
    for each class, its row blocks against the other classes' points, by metric."""
    pull = push = pull_err = push_err = 0.0
    hinges = 0
    for c in np.unique(y):
        rows_c = np.flatnonzero(y == c)
        groups = [
            (h, cols) for h in range(len(maps)) if len(cols := np.flatnonzero((y != c) & (g == h)))
        ]
        step = block_rows(max(sum(len(cols) for _, cols in groups), 1))
        for s in range(0, len(rows_c), step):
            rows = rows_c[s : s + step]
            Dt, Et, p, e = _target_terms(maps, g, rows, T)
            pull, pull_err = pull + p, pull_err + e
            for h, cols in groups:
                m = maps[h]
                pair_max = (m.tau[rows] + m.tau[cols].max()) ** 2
                reach = _reach(Dt, Et, pair_max)
                D = m.Z[rows] @ (-2.0 * m.Z[cols]).T
                D += m.sq[None, cols]
                D += m.sq[rows, None]
                at = np.flatnonzero(D < reach[:, None])
                ii, ll = at // D.shape[1], at % D.shape[1]
                El = (m.tau[rows[ii]] + m.tau[cols[ll]]) ** 2
                p, e, n = _hinges(Dt[ii], Et[ii], D.ravel()[at], El)
                push, push_err, hinges = push + p, push_err + e, hinges + n
    return pull, push, pull_err, push_err, hinges


def _sums_symmetric(m, y, T):
    """Eq. (14)'s pull, push, their errors and the hinges counted under one metric.

    Here ``D(i, l) = D(l, i)``: the pair of ``i`` in class ``a`` and ``l`` in a class
    ``b > a`` (in the order of ``np.unique(y)``) is formed once, in a row block of class
    ``a`` against the points of the later classes, and gives the hinges of both
    orientations: query ``i`` with impostor ``l`` where ``D < R_i``, query ``l`` with
    impostor ``i`` where ``D < R_l`` (each with its own query's targets). Over the
    classes ``a`` every differently labelled pair is met exactly once, so the hinge
    terms are those of :func:`_sums_by_class`, from the same float64 formula."""
    cls = np.unique(y, return_inverse=True)[1].ravel()
    n = len(cls)
    Dt, Et = np.empty(T.shape), np.empty(T.shape)
    pull = pull_err = 0.0
    step = block_rows(m.Z.shape[1])
    for s in range(0, n, step):
        rows = np.arange(s, min(s + step, n))
        Dt[rows], Et[rows], p, e = _target_terms([m], np.zeros(n, np.int64), rows, T)
        pull, pull_err = pull + p, pull_err + e
    far = np.array([m.tau[cls != c].max(initial=0.0) for c in range(int(cls.max(initial=0)) + 1)])
    reach = _reach(Dt, Et, (m.tau + far[cls]) ** 2)
    # D = [z_i, ‖z_i‖², 1]·[−2z_l, 1, ‖z_l‖²]: the formula as one product of r + 2 terms
    Za = np.c_[m.Z, m.sq, np.ones(n)]
    push = push_err = 0.0
    hinges = 0
    for a in range(int(cls.max(initial=0))):  # the last class has no later one
        rows_a, cols = np.flatnonzero(cls == a), np.flatnonzero(cls > a)
        Zc = np.c_[-2.0 * m.Z[cols], np.ones(len(cols)), m.sq[cols]]
        Rc = reach[cols][None]
        step = block_rows(len(cols))
        for s in range(0, len(rows_a), step):
            rows = rows_a[s : s + step]
            D = Za[rows] @ Zc.T
            # query i (class a) against impostor l, then query l against impostor i
            for query, other, hit in ((0, 1, D < reach[rows, None]), (1, 0, D < Rc)):
                at = np.flatnonzero(hit)
                pair = (rows[at // len(cols)], cols[at % len(cols)])
                q, o = pair[query], pair[other]
                El = (m.tau[q] + m.tau[o]) ** 2
                p, e, k = _hinges(Dt[q], Et[q], D.ravel()[at], El)
                push, push_err, hinges = push + p, push_err + e, hinges + k
    return pull, push, pull_err, push_err, hinges


def _reach(Dt, Et, pair_max):
    """``R_i``: above every ``D(i, l)`` whose hinge may be positive, rounding included
    (``pair_max``: the largest error of ``i``'s pairs)."""
    reach = Dt.max(axis=1) + 1.0 + Et.max(axis=1) + pair_max
    return reach * (1.0 + 8.0 * UNIT) * SAFETY


def _hinges(Dt, Et, D, El):
    """The hinges ``[1 + D(i, j) − D(i, l)]_+`` of candidate pairs ``(i, l)`` (``D``:
    ``D(i, l)``; ``Dt``, ``Et``: ``i``'s target distances and their errors, ``(m, k)``;
    ``El``: the pair's error) and the errors of those within them of positive:
    ``(Σ hinges, Σ errors, hinges summed)``."""
    H = 1.0 + Dt - D[:, None]  # (candidates, k)
    E = Et + El[:, None] + gamma(2) * (1.0 + np.abs(Dt) + np.abs(D)[:, None])
    E[~np.isfinite(Dt)] = 0.0  # padding: no hinge
    positive = H > 0
    return float(H[positive].sum()), float(E[H > -E].sum()), int(positive.sum())


def _target_distances(maps, g, rows, T):
    """``D(i, j)`` of the rows' targets from the differences, each pair under the metric
    of its target's cluster, and their errors: ``(Dt, Et)``, each ``(b, k)``."""
    Dt, Et = np.empty((len(rows), T.shape[1])), np.empty((len(rows), T.shape[1]))
    for q in range(T.shape[1]):
        j = T[rows, q]
        for h in np.unique(g[j]):
            at = g[j] == h
            m = maps[h]
            D = ((m.Z[rows[at]] - m.Z[j[at]]) ** 2).sum(axis=1)
            e = m.eps[rows[at]] + m.eps[j[at]]
            up = np.sqrt(D * (1 + gamma(m.rank + 2)))
            Dt[at, q] = D
            Et[at, q] = (gamma(m.rank + 2) * D + e * (2 * up + e)) * SAFETY
    return Dt, Et


def zero_value(y, T, mu):
    """Eq. (14) at ``M = 0``: every hinge of a real target at its margin 1, so
    ``μ·Σ_i (targets of i)·(points of other classes)`` (the problem's own scale)."""
    real = np.count_nonzero(T != np.arange(len(y))[:, None], axis=1)
    _, inv, counts = np.unique(y, return_inverse=True, return_counts=True)
    others = len(y) - counts[inv.ravel()]
    return float(mu) * float(np.dot(real.astype(np.float64), others.astype(np.float64)))
