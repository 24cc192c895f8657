"""LMNN's full check by blocks: every violated triplet at ``M = LᵀL``, exactly.

A full check of the active-set mode (:mod:`.active_list`) needs every triplet with
``z_ijl = 1 + ‖z_i − z_j‖² − ‖z_i − z_l‖² > 0``, i.e. every differently labelled pair
with ``‖z_i − z_l‖² < r_i = 1 + max_j ‖z_i − z_j‖²``. Distances are symmetric: a block of
rows of class ``a`` is compared with the classes after ``a`` only, and each candidate
pair ``{p, q}`` is tested both ways (``p`` within ``q``'s radius, ``q`` within ``p``'s).
Every differently labelled pair is then met once, in half the float32 products of
comparing each row with all the other classes (the same triplets). Candidates come
from one float32 GEMM with widened radii (a superset: relative ``rtol``, absolute
``rtol · (1 + max ‖w‖²)``), their hinge arguments are recomputed in double precision from
the differences. The GEMM runs on the search coordinates ``W`` (:mod:`.screen`): the
leading principal axes of ``Z`` and the norm of the rest, a contraction (``‖w_a − w_b‖ ≤
‖z_a − z_b‖``), so its candidates are still a superset; a learned metric puts nearly all of
``Z``'s spread on a few axes (the 60,000-point MNIST fit: 30–40 of 164 carry 95%), and the
product costs that many columns instead of ``r``. :func:`terms_block` is pure (a function
of the rows, the data and ``L``; its buffers, projection and screen live in the caller's
:class:`~.data.Workspace`, one per thread): an executor maps it over the blocks, in
this process or on Dask workers.
"""

from __future__ import annotations

import numpy as np

from ..constants import GROUP_ROWS
from ..terms import index_dtype
from .data import Workspace
from .xp import (
    argsort_stable,
    astype,
    concat,
    device_of,
    empty_int,
    is_numpy,
    namespace,
    row_distances,
    take,
    to_device,
    to_numpy,
)


def _pairs(rows, data, L, rtol, margin, ws, stale=None):
    """The candidate pairs ``(a, b)`` of a full check's block: ``a ∈ rows`` (one class),
    ``b`` of the classes after it (in sorted order); a superset of the pairs with
    ``‖z_a − z_b‖² < r_a`` or ``< r_b`` (``r = 1 + margin + max_j ‖z − z_j‖²``, widened as
    in :func:`.stream._candidates`). Every differently labelled pair is some block's exactly once:
    half the products of comparing each row with all the other classes.

    ``stale`` (host bool mask over the points; the rows are among them): a partial check,
    the pairs with an end in ``stale``: ``b`` of every other class, but of the classes
    before the rows' only outside ``stale`` (a pair of two such points is met once).

    One float32 GEMM gives ``−‖z_a − z_b‖²/2``, compared with ``max(r_a, r_b)``
    (:func:`_hits`). ``rows`` are host indices; the pairs are of the data's namespace."""
    P = ws.project(data, L)
    xp = namespace(P.Z)
    c0, c1 = P.ranges[P.labels[rows[0]].item()]
    S = ws.screen(P)
    wide, half, half_o = ws.of_projection(
        ("radii", margin, rtol), P, lambda: _radii(P, S, margin, rtol)
    )
    B, cols, hc = S.B[c1:, :], P.order[c1:], half_o[c1:]
    if stale is not None:
        order = to_numpy(P.order)
        pos = to_device(np.r_[np.flatnonzero(~stale[order[:c0]]), np.arange(c1, len(order))], P.Z)
        B, cols, hc = _rows_of(xp, S.B, pos, ws), take(xp, P.order, pos), take(xp, half_o, pos)
    if cols.shape[0] == 0:
        e = empty_int(xp, P.Z)
        return e, e
    rows = to_device(rows, P.Z)
    rows = take(xp, rows, argsort_stable(xp, take(xp, wide, rows)))
    A = _row_matrix(xp, take(xp, S.W, rows), take(xp, S.sq, rows), S.W.shape[1])
    if is_numpy(xp):
        G = np.matmul(A, B.T, out=ws.scratch("G", (len(rows), len(cols)), np.float32))
    else:
        G = A @ B.T
    ii, ll = _hits(xp, G, take(xp, half, rows), hc, ws)
    return take(xp, rows, ii), take(xp, cols, ll)


def _radii(P, S, margin, rtol):
    """``(wide, half, half in class order)``: each point's radius ``r = 1 + margin +
    max_j ‖z − z_j‖²`` widened by the float32 band, and ``−wide/2`` in float32, by point
    and in the projection's ``order`` (one block's columns are a slice of it)."""
    xp = namespace(P.Z)
    wide = (P.reach + (1.0 + margin)) * (1 + rtol) + rtol * S.scale
    half = astype(xp, -0.5 * wide, xp.float32)
    return wide, half, take(xp, half, P.order)


def _rows_of(xp, B, pos, ws):
    """``B[pos]`` (NumPy: into a scratch buffer, one per check)."""
    if not is_numpy(xp):
        return take(xp, B, pos)
    out = ws.scratch("B", (len(pos), B.shape[1]), B.dtype)
    return np.take(B, pos, axis=0, out=out)


def _row_matrix(xp, Zr, sr, r):
    """float32 ``[z_a, 1, −‖z_a‖²/2]``: times ``B``'s rows, ``−‖z_a − z_b‖²/2``."""
    if is_numpy(xp):
        A = np.empty((len(sr), r + 2), np.float32)
        A[:, :r] = Zr
        A[:, r] = 1.0
        A[:, r + 1] = -0.5 * sr
        return A
    ones = xp.ones((sr.shape[0], 1), dtype=xp.float32, device=device_of(Zr))
    return xp.concat(
        [xp.astype(Zr, xp.float32), ones, xp.astype(-0.5 * sr[:, None], xp.float32)], axis=1
    )


def _hits(xp, G, hr, hc, ws):
    """``(ii, ll)``: the entries with ``G > min(hr[ii], hc[ll])`` (``h = −r/2``, float32).

    Other namespaces compare the whole block at once. NumPy compares by groups of
    :data:`GROUP_ROWS` rows (sorted by radius) against one per-column threshold
    ``min(min hr[group], hc)`` into a reused buffer, then tests the few hits exactly:
    the same entries, without a ``block_rows × n`` threshold matrix."""
    if not is_numpy(xp):
        return xp.nonzero(G > xp.minimum(hr[:, None], hc[None, :]))
    hit = ws.scratch("hit", G.shape, bool)
    bound = ws.scratch("bound", hc.shape, hc.dtype)
    for s in range(0, len(hr), GROUP_ROWS):
        g = slice(s, s + GROUP_ROWS)
        np.greater(G[g], np.minimum(hr[g].min(), hc, out=bound), out=hit[g])
    flat = np.flatnonzero(hit)
    ii, ll = np.divmod(flat, G.shape[1])
    keep = G.ravel()[flat] > np.minimum(hr[ii], hc[ll])
    return ii[keep], ll[keep]


def terms_block(
    rows, data, L, *, max_terms=None, chunk=1 << 18, rtol=1e-5, margin=0.0, ws=None, stale=None
):
    """The violated triplets (``z_ijl > 0``) of the block's pairs (:func:`_pairs`; of a
    partial check with ``stale``): a full check, each differently labelled pair ``{a, b}``
    tested both ways (``i = a, l = b`` and ``i = b, l = a``); with ``margin``, the
    triplets with ``z_ijl > −margin``.

    Returns a dict with int arrays ``I, J, L`` (host NumPy, int32 while ``n < 2³¹``:
    they travel), ``count`` and ``overflow``: past ``max_terms`` triplets the block stops
    and returns ``overflow=True`` without arrays. The values ``z`` are those of
    :func:`~convexmetric.problems.lmnn.hinge_terms` (same formula, double precision).
    ``ws``: the calling thread's :class:`~.data.Workspace` (a fresh one if None).
    """
    T = data.targets
    ws = ws if ws is not None else Workspace()
    P = ws.project(data, L)
    xp = namespace(P.Z)
    aa, bb = _pairs(rows, data, L, rtol, margin, ws, stale)
    out_I, out_J, out_L, count = [], [], [], 0
    for s in range(0, aa.shape[0], chunk):
        e = min(s + chunk, aa.shape[0])  # (in bounds: the standard leaves the rest open)
        a, b = aa[s:e], bb[s:e]
        dist = row_distances(xp, P.Z, a, b, ws)
        for i, l in ((a, b), (b, a)):
            p, q = xp.nonzero((1.0 + margin) + take(xp, P.Dt, i) - dist[:, None] > 0)  # (c, k)
            count += int(p.shape[0])
            if max_terms is not None and count > max_terms:
                return {"I": None, "J": None, "L": None, "count": count, "overflow": True}
            ip = take(xp, i, p)
            out_I.append(ip)
            out_J.append(_gather2(xp, T, ip, q))
            out_L.append(take(xp, l, p))
    kind = index_dtype(len(P.labels))
    I, J, L_ = (
        to_numpy(concat(xp, a)).astype(kind, copy=False) if a else np.empty(0, kind)
        for a in (out_I, out_J, out_L)
    )
    return {"I": I, "J": J, "L": L_, "count": count, "overflow": False}


def _gather2(xp, T, i, q):
    """``T[i, q]`` elementwise (targets of rows ``i`` at slots ``q``)."""
    if is_numpy(xp):
        return T[i, q]
    k = T.shape[1]
    return xp.take(xp.reshape(T, (-1,)), i * k + q)


def collect_terms(fn, blocks, data, *args, max_terms=None, alarm=None, **kwargs):
    """``fn`` (:func:`terms_block`) over ``blocks`` in order, triplets concatenated; stops
    with ``overflow=True`` once more than ``max_terms`` were found in all. ``alarm``
    (:class:`convexmetric.optim.deadline.Alarm`) is checked before each block."""
    parts, left, count = [], max_terms, 0
    for rows in blocks:
        if alarm is not None:
            alarm.check()
        part = fn(rows, data, *args, max_terms=left, **kwargs)
        count += part["count"]
        if part["overflow"]:
            return {"I": None, "J": None, "L": None, "count": count, "overflow": True}
        parts.append(part)
        left = None if left is None else left - part["count"]
    return join_terms(parts)


def join_terms(parts):
    """The blocks' triplets (:func:`terms_block`, none overflowed) joined in their order."""
    if not parts:
        e = np.empty(0, np.int32)
        return {"I": e, "J": e, "L": e, "count": 0, "overflow": False}
    out = {key: np.concatenate([p[key] for p in parts]) for key in ("I", "J", "L")}
    return {**out, "count": sum(p["count"] for p in parts), "overflow": False}
