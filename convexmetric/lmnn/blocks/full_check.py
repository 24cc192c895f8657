"""LMNN's full check by blocks: every violated triplet at ``M = LᵀL``, exactly.

A full check of the active-set mode (:mod:`.active_list`) needs every triplet with
``z_ijl = 1 + ‖z_i − z_j‖² − ‖z_i − z_l‖² > 0``, i.e. every differently labelled pair
with ``‖z_i − z_l‖² < r_i = 1 + max_j ‖z_i − z_j‖²``. Distances are symmetric: a block of
rows of class ``a`` is compared with the classes after ``a`` only, and each candidate
pair ``{p, q}`` is tested both ways (``p`` within ``q``'s radius, ``q`` within ``p``'s).
Every differently labelled pair is then met once, in half the float32 products of
comparing each row with all the other classes (MNIST 60,000 × 164 at a metric of phase
1, one thread: 5.2 s a check instead of 11.3 s, the same triplets). Candidates come
from one float32 GEMM with widened radii (a superset: relative ``rtol``, absolute
``rtol · (1 + max ‖z‖²)``), their hinge arguments are recomputed in double precision from
the differences. :func:`terms_block` is pure (a function of the rows, the data and
``L``; its buffers and projection live in the caller's :class:`~.data.Workspace`, one
per thread): an executor maps it over the blocks, in this process or on Dask workers.
"""

from __future__ import annotations

import numpy as np

from ...linalg import row_distances
from .data import Workspace

#: rows of a full check's block compared in one pass (:func:`_pairs`)
GROUP_ROWS = 64


def _pairs(rows, data, L, rtol, margin, ws):
    """The candidate pairs ``(a, b)`` of a full check's block: ``a ∈ rows`` (one class),
    ``b`` of the classes after it (in sorted order); a superset of the pairs with
    ``‖z_a − z_b‖² < r_a`` or ``< r_b`` (``r = 1 + margin + max_j ‖z − z_j‖²``, widened as
    in :func:`.stream._candidates`). Every differently labelled pair is some block's exactly once:
    half the products of comparing each row with all the other classes.

    One float32 GEMM gives ``−‖z_a − z_b‖²/2``; the rows, sorted by radius, go by groups
    of :data:`GROUP_ROWS`, each compared in one pass with ``max(r_group, r_b)`` (a
    per-column threshold), and the few hits are then tested with ``max(r_a, r_b)``. The
    block's matrices live in buffers of the caller's workspace, reused from block to block
    (:meth:`.blocks.Workspace.scratch`)."""
    y = data.y
    P = ws.project(data, L)
    c1 = P.ranges[y[rows[0]].item()][1]
    cols = P.order[c1:]
    if len(cols) == 0:
        e = np.empty(0, np.intp)
        return e, e
    wide = (P.Dt.max(axis=1) + (1.0 + margin)) * (1 + rtol) + rtol * P.scale
    rows = rows[np.argsort(wide[rows], kind="stable")]
    r = P.Z.shape[1]
    A = np.empty((len(rows), r + 2), np.float32)
    A[:, :r] = P.Z[rows]
    A[:, r] = 1.0
    A[:, r + 1] = -0.5 * P.sq[rows]
    G = np.matmul(A, P.B[c1:].T, out=ws.scratch("G", (len(rows), len(cols)), np.float32))
    hit = ws.scratch("hit", G.shape, bool)  # G = −‖z_a − z_b‖²/2 above:
    half = (-0.5 * wide).astype(np.float32)
    hc = half[cols]
    for s in range(0, len(rows), GROUP_ROWS):
        g = slice(s, s + GROUP_ROWS)
        np.greater(G[g], np.minimum(half[rows[g]].min(), hc), out=hit[g])
    flat = np.flatnonzero(hit)
    ii, ll = np.divmod(flat, len(cols))
    keep = G.ravel()[flat] > np.minimum(half[rows[ii]], hc[ll])
    return rows[ii[keep]], cols[ll[keep]]


def terms_block(rows, data, L, *, max_terms=None, chunk=1 << 18, rtol=1e-5, margin=0.0, ws=None):
    """The violated triplets (``z_ijl > 0``) of the block's pairs (:func:`_pairs`): a full
    check, each differently labelled pair ``{a, b}`` tested both ways (``i = a, l = b``
    and ``i = b, l = a``); with ``margin``, the triplets with ``z_ijl > −margin``.

    Returns a dict with int arrays ``I, J, L`` (int32 while ``n < 2³¹``: they travel),
    ``count`` and ``overflow``: past ``max_terms`` triplets the block stops and returns
    ``overflow=True`` without arrays. The values ``z`` are those of
    :func:`~convexmetric.problems.lmnn.hinge_terms` (same formula, double precision).
    ``ws``: the calling thread's :class:`~.data.Workspace` (a fresh one if None).
    """
    _, y, T = data
    ws = ws if ws is not None else Workspace()
    P = ws.project(data, L)
    aa, bb = _pairs(rows, data, L, rtol, margin, ws)
    out_I, out_J, out_L, count = [], [], [], 0
    for s in range(0, len(aa), chunk):
        a, b = aa[s : s + chunk], bb[s : s + chunk]
        dist = row_distances(P.Z, a, b)
        for i, l in ((a, b), (b, a)):
            p, q = np.nonzero((1.0 + margin) + P.Dt[i] - dist[:, None] > 0)  # (c, k)
            count += len(p)
            if max_terms is not None and count > max_terms:
                return {"I": None, "J": None, "L": None, "count": count, "overflow": True}
            out_I.append(i[p])
            out_J.append(T[i[p], q])
            out_L.append(l[p])
    kind = np.int32 if len(y) < 2**31 else np.int64
    I, J, L_ = (np.concatenate(a).astype(kind, copy=False) if a else np.empty(0, kind)
                for a in (out_I, out_J, out_L))  # fmt: skip
    return {"I": I, "J": J, "L": L_, "count": count, "overflow": False}


def collect_terms(fn, blocks, data, *args, max_terms=None, **kwargs):
    """``fn`` (:func:`terms_block`) over ``blocks`` in order, triplets concatenated; stops
    with ``overflow=True`` once more than ``max_terms`` were found in all."""
    parts, left, count = [], max_terms, 0
    for rows in blocks:
        part = fn(rows, data, *args, max_terms=left, **kwargs)
        count += part["count"]
        if part["overflow"]:
            return {"I": None, "J": None, "L": None, "count": count, "overflow": True}
        parts.append(part)
        left = None if left is None else left - part["count"]
    if not parts:
        e = np.empty(0, np.int32)
        return {"I": e, "J": e, "L": e, "count": 0, "overflow": False}
    out = {key: np.concatenate([p[key] for p in parts]) for key in ("I", "J", "L")}
    return {**out, "count": count, "overflow": False}
