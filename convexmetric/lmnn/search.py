r"""Exact impostor search pruned by partial distances on the principal axes of ``Z = X Lᵀ``.

A full check of LMNN (:mod:`.active_list`) needs every triplet ``(i, j, l)`` with an
active hinge, ``1 + ‖z_i − z_j‖² − ‖z_i − z_l‖² > 0`` (``j`` a target of ``i``, ``l`` of
another class), i.e. every differently labelled pair with ``‖z_i − z_l‖² < r_i = 1 +
max_j ‖z_i − z_j‖²``. The brute-force check (:func:`.full_check.terms_block`) compares every
differently labelled pair once in ``d`` dimensions (float32 GEMMs with ``d + 1`` columns).

Here the rows are first rotated onto the principal axes of ``Z`` (``Zr = (Z − z̄) V``: a
rotation, so distances are unchanged), and a pair is dropped when its *partial* squared
distance over the ``p`` leading axes alone already reaches the (widened) radius: a
partial distance never exceeds the full one, so no active pair is lost. Once LMNN has
learned a metric its ``Z`` concentrates on few axes (MNIST at PCA 164: the 32 leading
axes of a learned ``Z`` hold 92% of the variance, and their partial distances leave 0.5%
of the differently labelled pairs, against 0.1% truly inside the radius). The GEMM then
has ``p + 1`` columns instead of ``d + 1``, and the survivors' hinge arguments are
computed in double precision from the differences of ``Z``, by the brute force's formula.

**Exactness.** The radius is widened as in the brute force (relative ``rtol``, absolute
``rtol · (1 + max ‖z‖²)``), which covers float32 rounding and the rotation's; every pair
the brute force finds with an active hinge survives, and its hinge arguments are computed
bit for bit as there (``tests/test_lmnn_search.py`` checks that both find the same
triplets on random data and metrics; the brute force visits each pair once, this search
each row's pairs, so the order differs).

**What it buys: nothing yet, on this machine.** It is not sub-quadratic: every pair is still
compared, in ``p`` dimensions (``O(n² p)`` instead of ``O(n² d)``), but each pair of every
row (the brute force visits each unordered pair once, by symmetry), and the survivors need
an exact filter. Measured (CPU seconds, one thread, 2026-11-24, under load, before the brute
force used the symmetry), at a metric from a short LMNN fit: MNIST sample 4,000 × 164, brute
force 0.07 s, pruned 0.10 s (40 axes, 0.29% of pairs survive); augmented MNIST 20,000 × 164,
1.6 s vs 3.0 s (the survivors' exact filter, 3× the brute force's candidates, costs more
than the smaller GEMM saves). Bounds that skip whole blocks prune little at ``d = 164``:
cells of 4–64 rows by bisection (as ball trees are built), with triangle bounds in the
leading 16 axes and in the rest, left 43–91% of the pairs on the sample and 56–82% on
augmented MNIST. So the full checks keep the brute force; this search is opt-in
(``search=PrunedSearch()`` where a callable search is accepted, e.g.
:class:`~.active_list.ActiveList`) and is kept, with its exactness test, as the base for a
sub-quadratic one.
"""

from __future__ import annotations

import numpy as np

from ..problems.lmnn import TooManyTerms
from .blocks.data import row_blocks

#: relative widening of the radius, as in the brute force (:func:`.full_check.terms_block`)
RTOL = 1e-5
#: the leading axes kept: the fewest holding this share of the variance of ``Z`` ...
VARIANCE_SHARE = 0.95
#: ... but at least this many (and pruning is skipped when ``p`` exceeds half of ``d``)
MIN_AXES = 8


def principal_rotation(Z):
    """``(Zr, share)``: ``Z`` centred and rotated onto its principal axes (largest variance
    first), and the cumulative share of the variance per axis."""
    C = Z - Z.mean(axis=0)
    w, V = np.linalg.eigh(C.T @ C)
    w = np.maximum(w[::-1], 0.0)
    return C @ V[:, ::-1], np.cumsum(w) / max(float(w.sum()), 1e-300)


def leading_axes(share, d, variance_share=VARIANCE_SHARE):
    """The number of leading axes to prune with, or ``None`` when pruning cannot pay."""
    p = max(MIN_AXES, int(np.searchsorted(share, variance_share)) + 1)
    return None if 2 * p > d else p


def pruned_terms(Z, y, targets, *, axes=None, block_rows=512, max_terms=None, chunk=1 << 18,
                 rtol=RTOL, stats=None):  # fmt: skip
    """The triplets ``(I, J, L)`` (int64) with an active hinge at ``Z = X Lᵀ``.

    The triplets of the brute-force full check (in another order),
    :meth:`.stream.StreamingEvaluator.terms`. ``axes``: the leading principal axes to
    prune with (default :func:`leading_axes`; all ``d`` axes make it a brute force in
    rotated coordinates). Past ``max_terms`` triplets raises
    :class:`~convexmetric.problems.lmnn.TooManyTerms`. ``stats`` (a dict) receives
    ``axes`` and ``survivors``, the fraction of differently labelled pairs kept.
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y)
    T = targets
    n, d = Z.shape
    Zr, share = principal_rotation(Z)
    p = axes if axes is not None else (leading_axes(share, d) or d)
    sq = np.einsum("ij,ij->i", Z, Z)
    scale = float(sq.max(initial=0.0)) + 1.0
    order = np.argsort(y, kind="stable")
    ys = y[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ranges = {ys[a].item(): (a, e) for a, e in zip(starts, np.r_[starts[1:], n])}
    P = Zr[:, :p]
    psq = np.einsum("ij,ij->i", P, P)
    B = np.empty((n, p + 1), np.float32)  # [w_l, −‖w_l‖²/2], rows in class order
    B[:, :-1] = P[order]
    B[:, -1] = -0.5 * psq[order]
    parts, count, kept, pairs = [], 0, 0, 0
    for rows in row_blocks(y, block_rows):
        diff = Z[rows][:, None, :] - Z[T[rows]]
        Dt = np.einsum("ijk,ijk->ij", diff, diff)  # as terms_block computes them
        wide = (Dt.max(axis=1) + 1.0) * (1 + rtol) + rtol * scale
        A = np.ones((len(rows), p + 1), np.float32)
        A[:, :-1] = P[rows]
        G = A @ B.T
        c0, c1 = ranges[y[rows[0]].item()]
        G[:, c0:c1] = -np.inf  # the block's own class
        thr = 0.5 * (psq[rows] - wide)
        ii, cc = np.nonzero(G > thr[:, None].astype(np.float32))
        del G
        pairs += len(rows) * (n - (c1 - c0))
        kept += len(ii)
        ll = order[cc]
        Zb = Z[rows]
        for s in range(0, len(ii), chunk):  # the brute force's exact filter
            ic, lc = ii[s : s + chunk], ll[s : s + chunk]
            dz = Zb[ic] - Z[lc]
            H = 1.0 + Dt[ic] - np.einsum("ij,ij->i", dz, dz)[:, None]
            q_i, q_j = np.nonzero(H > 0)
            count += len(q_i)
            if max_terms is not None and count > max_terms:
                raise TooManyTerms(f"more than {max_terms} hinge terms")
            i = rows[ic[q_i]]
            parts.append((i, T[i, q_j], lc[q_i]))
    if stats is not None:
        stats.update(axes=p, survivors=kept / max(pairs, 1))
    if not parts:
        e = np.empty(0, np.int64)
        return e, e, e
    return tuple(np.concatenate([part[t] for part in parts]).astype(np.int64) for t in range(3))


class PrunedSearch:
    """The candidate-pair protocol of :func:`~convexmetric.problems.lmnn.hinge_terms`
    (``search(Z, y, radius, block_size=...) -> (I, L)``, a superset of the pairs with
    ``‖z_i − z_l‖² < radius[i]``), by the partial distances of :func:`pruned_terms`."""

    def __init__(self, axes=None, rtol=RTOL):
        self.axes, self.rtol = axes, rtol

    def __call__(self, Z, y, radius, *, block_size=512):
        Z, y = np.asarray(Z, dtype=float), np.asarray(y)
        d = Z.shape[1]
        Zr, share = principal_rotation(Z)
        p = self.axes if self.axes is not None else (leading_axes(share, d) or d)
        scale = float(np.einsum("ij,ij->i", Z, Z).max(initial=0.0)) + 1.0
        wide = np.asarray(radius, dtype=float) * (1 + self.rtol) + self.rtol * scale
        from ..neighbors import impostor_pairs

        # impostor_pairs widens once more (its own rtol): still a superset
        return impostor_pairs(Zr[:, :p], y, wide, block_size=block_size, rtol=self.rtol)
