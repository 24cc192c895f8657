"""Eq. (14) of Weinberger & Saul (2009) and its dual bound by brute force in float64:
the computations of :mod:`convexmetric.verifier.lmnn` (whose docstring derives them and
documents the certificates)."""

from __future__ import annotations

import numpy as np

#: bytes of one float64 row block of the brute-force evaluations
BLOCK_BYTES = 64 << 20
#: eigenvalues of the pull matrix (or of ``K``) below this fraction of the largest are
#: its null space
RANGE_RTOL = 1e-10
#: the fitted metric's eigenvalues below this fraction of the largest are left out of
#: its factor (a distance moves by at most that fraction)
RANK_RTOL = 1e-15
#: a distance ``D(a, b)`` evaluated here (``M ≈ LᵀL`` by a symmetric eigensolver,
#: ``z = Lx`` formed, ``D`` from the differences or from ``‖z_a‖² + ‖z_b‖² − 2z_aᵀz_b``)
#: is taken to err by at most ``RESOLUTION_UNITS·(d + 2)·u·‖M‖₂(‖x_a‖ + ‖x_b‖)²`` (``u``
#: the unit roundoff): the eigensolver's backward error and the products' first-order
#: rounding, each of order ``d·u`` times those norms
RESOLUTION_UNITS = 4.0


class Infeasible(Exception):
    """The fitted point or the certificate's dual point is outside its domain."""


def block_rows(n):
    return max(1, BLOCK_BYTES // (8 * max(n, 1)))


def factor(M):
    """``L`` with ``M ≈ LᵀL`` (to ``RANK_RTOL``); :class:`Infeasible` unless ``M`` is
    finite, symmetric and PSD."""
    scale = max(float(np.abs(M).max()), 1e-300) if M.size else 1.0
    if not np.isfinite(M).all() or np.abs(M - M.T).max() > 1e-10 * scale:
        raise Infeasible("the fitted matrix is not finite and symmetric")
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    if w[0] < -1e-10 * max(float(np.abs(w).max()), 1e-300):
        raise Infeasible(f"the fitted matrix is not PSD (eigenvalue {w[0]:.3g})")
    # the rows of eigenvalues below RANK_RTOL·λ_max move a distance by at most that much
    # (relative): left out, every distance costs rank(M) products instead of d
    keep = w > RANK_RTOL * max(float(w[-1]), 0.0)
    return (V[:, keep] * np.sqrt(w[keep])).T


def objective(Zs, g, y, T, mu, xn, norms):
    """Eq. (14) from ``Zs[c] = X L_cᵀ`` (``M_c = L_cᵀL_c``; the pair ``(a, b)`` under
    ``M_{g[b]}``) by float64 row blocks; ``(value, resolution)``.

    A hinge ``[1 + D(i, j) − D(i, l)]_+`` is positive only where ``D(i, l) < R_i`` with
    ``R_i = max_j D(i, j) + 1``: each block's distances are compared with ``R_i``, and
    the hinges are summed over the pairs below it. ``resolution`` bounds the value's own
    float64 error (``xn``: the norms ``‖x_a‖``; ``norms``: ``‖M_c‖₂``): the error
    :data:`RESOLUTION_UNITS` allows every target distance, and every hinge within its
    two distances' error of positive (``R_i`` is raised by the largest of these errors,
    so that no such hinge is left out). One metric: :func:`_sums_symmetric`, each pair
    of different classes formed once; several: :func:`_sums_by_class`."""
    unit = RESOLUTION_UNITS * (Zs[0].shape[1] + 2) * np.finfo(np.float64).eps / 2
    err = unit * np.asarray(norms, dtype=np.float64)  # per metric, times (‖x_a‖ + ‖x_b‖)²
    if len(Zs) == 1:
        pull, push, pull_err, push_err = _sums_symmetric(Zs, g, y, T, xn, float(err[0]))
    else:
        pull, push, pull_err, push_err = _sums_by_class(Zs, g, y, T, xn, err)
    value = (1 - mu) * pull + mu * push
    return value, (1 - mu) * pull_err + mu * push_err


def _sums_by_class(Zs, g, y, T, xn, err):
    """Eq. (14)'s pull, push and their errors under several metrics, where ``D(i, l)``
    (under ``M_{g[l]}``) and ``D(l, i)`` (under ``M_{g[i]}``) differ: for each class,
    its row blocks against the points of the other classes, grouped by their metric."""
    pull = push = pull_err = push_err = 0.0
    sq = [np.einsum("ij,ij->i", Z, Z) for Z in Zs]
    for c in np.unique(y):
        rows_c = np.flatnonzero(y == c)
        groups = []  # the impostor candidates by the metric of their pairs: (h, Z, ‖z‖², ‖x‖)
        for h in range(len(Zs)):
            cols = np.flatnonzero((y != c) & (g == h))
            if len(cols):
                groups.append((h, Zs[h][cols], sq[h][cols], xn[cols]))
        step = block_rows(max(sum(len(q) for _, _, q, _ in groups), 1))
        for s in range(0, len(rows_c), step):
            rows = rows_c[s : s + step]
            Dt = _target_distances(Zs, g, rows, T)
            pull += float(Dt.sum())  # a slot naming i itself adds D(i, i) = 0
            pad = T[rows] == rows[:, None]
            Et = err[g[T[rows]]] * (xn[rows, None] + xn[T[rows]]) ** 2
            Et[pad] = 0.0  # D(i, i) = 0 exactly
            pull_err += float(Et.sum())
            Dt[pad] = -np.inf  # ... and is no target: no hinge
            for h, Zo, sqo, xno in groups:
                El_max = err[h] * (xn[rows] + xno.max()) ** 2
                reach = Dt.max(axis=1) + 1.0 + Et.max(axis=1) + El_max
                D = Zs[h][rows] @ Zo.T
                D *= -2.0
                D += sqo[None]
                D += sq[h][rows, None]
                at = np.flatnonzero(D < reach[:, None])  # (see _sums_symmetric)
                ii, ll = at // D.shape[1], at % D.shape[1]
                El = err[h] * (xn[rows[ii]] + xno[ll]) ** 2
                p, e = _hinges(Dt[ii], Et[ii], D.ravel()[at], El)
                push, push_err = push + p, push_err + e
    return pull, push, pull_err, push_err


def _sums_symmetric(Zs, g, y, T, xn, err):
    """Eq. (14)'s pull, push and their errors under one metric (error factor ``err``).

    Here ``D(i, l) = D(l, i)``: the pair of ``i`` in class ``a`` and ``l`` in a class
    ``b > a`` (in the order of ``np.unique(y)``) is formed once, in a row block of class
    ``a`` against the points of the later classes, and gives the hinges of both
    orientations: query ``i`` with impostor ``l`` where ``D < R_i``, query ``l`` with
    impostor ``i`` where ``D < R_l`` (each with its own query's targets). Over the
    classes ``a`` every differently labelled pair is met exactly once, so the hinge
    terms are those of :func:`_sums_by_class`, each from the same float64 formula
    ``‖z_i‖² + ‖z_l‖² − 2z_iᵀz_l``; only the order of the sums differs. ``R_p`` is that
    path's reach: the query's own (:func:`_own_terms`)."""
    Z = Zs[0]
    cls = np.unique(y, return_inverse=True)[1].ravel()
    Dt, Et, reach, pull, pull_err = _own_terms(Zs, g, cls, T, xn, err)
    sq = np.einsum("ij,ij->i", Z, Z)
    # D = [z_i, ‖z_i‖², 1]·[−2z_l, 1, ‖z_l‖²]: the formula as one product of r + 2 terms
    # (the error model of RESOLUTION_UNITS), with no pass over the block to add the norms
    Za = np.c_[Z, sq, np.ones(len(sq))]
    push = push_err = 0.0
    for a in range(int(cls.max(initial=0))):  # the last class has no later one
        rows_a, cols = np.flatnonzero(cls == a), np.flatnonzero(cls > a)
        Zc = np.c_[-2.0 * Z[cols], np.ones(len(cols)), sq[cols]]
        Rc = reach[cols][None]
        step = block_rows(len(cols))
        for s in range(0, len(rows_a), step):
            rows = rows_a[s : s + step]
            D = Za[rows] @ Zc.T
            # query i (class a) against impostor l, then query l against impostor i: a
            # comparison each, its few hits found by flatnonzero (np.nonzero of a 2-d
            # mask takes several times the comparison)
            for query, other, hit in ((0, 1, D < reach[rows, None]), (1, 0, D < Rc)):
                at = np.flatnonzero(hit)
                pair = (rows[at // len(cols)], cols[at % len(cols)])
                q, o = pair[query], pair[other]
                p, e = _hinges(Dt[q], Et[q], D.ravel()[at], err * (xn[q] + xn[o]) ** 2)
                push, push_err = push + p, push_err + e
    return pull, push, pull_err, push_err


def _own_terms(Zs, g, cls, T, xn, err):
    """Each point's target distances ``Dt`` (``−inf`` at padding: no hinge), their errors
    ``Et`` (0 at padding: ``D(i, i) = 0`` exactly), its reach and the pull sums, under
    one metric: ``(Dt, Et, R, pull, pull_err)``, by row blocks. The reach is that of
    :func:`_sums_by_class`, ``R_i = max_j D(i, j) + 1 + max_j Et(i, j) +
    err·(‖x_i‖ + max_{y_l ≠ y_i} ‖x_l‖)²``: a hinge within its error of positive has
    ``D(i, l) < 1 + D(i, j) + Et(i, j) + err·(‖x_i‖ + ‖x_l‖)² ≤ R_i``."""
    n = len(cls)
    Dt, Et = np.empty(T.shape), np.empty(T.shape)
    pull = pull_err = 0.0
    step = block_rows(Zs[0].shape[1])
    for s in range(0, n, step):
        rows = np.arange(s, min(s + step, n))
        D = _target_distances(Zs, g, rows, T)
        pull += float(D.sum())  # a slot naming i itself adds D(i, i) = 0
        pad = T[rows] == rows[:, None]
        E = err * (xn[rows, None] + xn[T[rows]]) ** 2
        E[pad] = 0.0
        pull_err += float(E.sum())
        D[pad] = -np.inf
        Dt[rows], Et[rows] = D, E
    far = np.array([xn[cls != c].max(initial=0.0) for c in range(int(cls.max(initial=0)) + 1)])
    reach = Dt.max(axis=1) + 1.0 + Et.max(axis=1) + err * (xn + far[cls]) ** 2
    return Dt, Et, reach, pull, pull_err


def _hinges(Dt, Et, D, El):
    """The hinges ``[1 + D(i, j) − D(i, l)]_+`` of candidate pairs ``(i, l)`` (``D``:
    ``D(i, l)``; ``Dt``, ``Et``: ``i``'s target distances and their errors, ``(m, k)``;
    ``El``: the pair's error) and the errors of those within them of positive:
    ``(Σ hinges, Σ errors)``."""
    H = 1.0 + Dt - D[:, None]  # (candidates, k)
    E = Et + El[:, None]
    return float(H[H > 0].sum()), float(E[H > -E].sum())


def _target_distances(Zs, g, rows, T):
    """``D(i, j)`` of the rows' targets, exact (from the differences), each pair under
    the metric of its target's cluster: ``(b, k)``."""
    Dt = np.empty((len(rows), T.shape[1]))
    for q in range(T.shape[1]):
        j = T[rows, q]
        for h in np.unique(g[j]):
            at = g[j] == h
            Dt[at, q] = ((Zs[h][rows[at]] - Zs[h][j[at]]) ** 2).sum(axis=1)
    return Dt


def dual_point(cert, n, y, T):
    """The certificate's triplets and multipliers, checked feasible (else :class:`Infeasible`)."""
    try:
        I, J, L, lam = (np.asarray(cert[key]) for key in ("i", "j", "l", "lam"))
    except KeyError as exc:
        raise Infeasible(f"the certificate lacks {exc}") from None
    m = len(lam)
    if any(a.ndim != 1 or len(a) != m for a in (I, J, L, lam)):
        raise Infeasible("the certificate's arrays i, j, l, lam differ in shape")
    if not all(np.issubdtype(a.dtype, np.integer) for a in (I, J, L)):
        raise Infeasible("the certificate's indices i, j, l are not integers")
    if m and (min(a.min() for a in (I, J, L)) < 0 or max(a.max() for a in (I, J, L)) >= n):
        raise Infeasible(f"the certificate's indices are outside [0, {n})")
    lam = lam.astype(np.float64)
    if not np.all((lam >= 0) & (lam <= 1)):  # (NaN fails too)
        raise Infeasible("multipliers outside their box [0, 1]")
    if np.any(~(T[I] == J[:, None]).any(axis=1)) or np.any(J == I):
        raise Infeasible("a certificate triplet (i, j, l) has j not a target neighbour of i")
    if np.any(y[L] == y[I]):
        raise Infeasible("a certificate triplet (i, j, l) has l of i's class")
    if len(np.unique(np.stack([I, J, L], axis=1), axis=0)) != m:
        raise Infeasible("a triplet appears twice in the certificate")
    return I, J, L, lam


def _scatter(X, A, B, w):
    """``Σ_t w_t (x_{A_t} − x_{B_t})(x_{A_t} − x_{B_t})ᵀ``, by blocks of pairs."""
    out = np.zeros((X.shape[1], X.shape[1]))
    step = block_rows(X.shape[1])
    for s in range(0, len(A), step):
        U = X[A[s : s + step]] - X[B[s : s + step]]
        out += (U.T * w[s : s + step]) @ U
    return out


def _distinct(n, *terms):
    """The distinct pairs ``(a, b)`` of the ``(A, B, w)`` terms, their weights summed:
    ``Σ_t w_t C_{A_t B_t}`` is then one scatter over fewer rows (a certificate's
    triplets share their target pairs, and each impostor pair serves up to ``k``)."""
    A = np.concatenate([np.asarray(t[0], np.int64) for t in terms])
    B = np.concatenate([np.asarray(t[1], np.int64) for t in terms])
    keys, inv = np.unique(A * n + B, return_inverse=True)
    w = np.concatenate([np.asarray(t[2], np.float64) for t in terms])
    return keys // n, keys % n, np.bincount(inv.ravel(), w, len(keys))


def bound(X, y, T, mu, cert, objective, g, c, range_rtol=None):
    """The lower bound that the certificate's dual point proves (module docstring), with
    ``ν`` the least over the clusters' blocks (one block for a single metric)."""
    n, k = T.shape
    I, J, L, lam = dual_point(cert, n, y, T)
    if mu >= 1.0:
        raise Infeasible("mu = 1: no pull term to bound the hinge multipliers' matrix by")
    total = mu * float(lam.sum())
    pi, pj = np.repeat(np.arange(n), k), T.ravel()
    rtol = RANGE_RTOL if range_rtol is None else range_rtol
    nu = min(_block_nu(X, mu, (pi[g[pj] == h], pj[g[pj] == h]),
                       (I[g[J] == h], J[g[J] == h], lam[g[J] == h]),
                       (I[g[L] == h], L[g[L] == h], lam[g[L] == h]), rtol)
             for h in range(c))  # fmt: skip
    if nu >= 0:
        return total
    bound = total / (1.0 - nu)
    F = float(cert.get("F", np.nan))
    if np.isfinite(F):
        bound = max(bound, total + nu * max(F, objective))
    return bound


def _block_nu(X, mu, pull, plus, minus, rtol):
    """``λ_min`` of ``S_h = (1 − μ)P_h + μΣλ C_ij − μΣλ C_il`` (``plus``, ``minus``: the
    triplets whose target, impostor is of this block) relative to ``(1 − μ)P_h``, on the
    range of ``P_h`` (:class:`Infeasible` when an impostor difference leaves it)."""
    P = _scatter(X, *pull, np.ones(len(pull[0])))
    w, V = np.linalg.eigh(0.5 * (P + P.T))
    keep = w > RANGE_RTOL * max(float(w[-1]), 1e-300) if len(w) and w[-1] > 0 else w > np.inf
    a, b, _ = _distinct(len(X), minus)  # each impostor pair once
    U = X[a] - X[b]
    off = np.sqrt(((U @ V[:, ~keep]) ** 2).sum(axis=1))
    if len(U) and np.any(off > rtol * np.sqrt((U**2).sum(axis=1))):
        raise Infeasible("an impostor difference with a multiplier leaves the pull range")
    if not keep.any():
        return np.inf  # no pull, no multiplier: S_h = 0
    W = V[:, keep] / np.sqrt(w[keep])  # the pull term's whitened coordinates
    S0 = (1 - mu) * (W.T @ P @ W)
    a, b, dual = _distinct(len(X), plus, (minus[0], minus[1], -minus[2]))
    S = S0 + mu * _scatter(X @ W, a, b, dual)
    w0, V0 = np.linalg.eigh(0.5 * (S0 + S0.T))
    W0 = V0 / np.sqrt(w0)
    return float(np.linalg.eigvalsh(0.5 * (W0.T @ (S + S.T) @ W0))[0])
