"""The distinct pairs of a multi-metric active list, as a graph per metric block.

A listed triplet ``(i, j, l)`` needs the distances of two pairs, ``(i, j)`` under the
metric of ``j``'s cluster and ``(i, l)`` under that of ``l``'s; the distinct pairs are far
fewer than the triplets (each impostor pair serves up to ``k`` targets, each target pair
many impostors). Block ``g`` touches only the points of its own pairs (digits: about 230
of 1,257), so :class:`PairGraph` stacks those points block by block (``U``, centred per
block) and keeps the pairs as edges between the stacked rows.

Every product is over rows, not over pairs. With the incidence ``E`` (pairs × rows,
``+1`` at ``a``, ``−1`` at ``b``) and pair weights ``ω``, the weighted scatter of the
differences is a Laplacian, ``Σ_p ω_p δ_p δ_pᵀ = Uᵀ Eᵀ diag(ω) E U = Uᵀ(deg − W)U``
(``W`` the symmetrised weights), so

* a block's gradient is ``U_gᵀ(deg − W)U_g``, and its product with a factor,
  ``L_g U_gᵀ(deg − W)U_g = ((deg − W)Z_g)ᵀU_g`` with ``Z = U L_gᵀ``: sparse products with
  ``r`` columns and an ``r × n_g × d`` product, instead of the ``pairs × r × d`` product
  of the pair differences (the ``pairs × d`` differences do not fit the cache);
* distances from a factor are the row norms of ``E Z``, and ``(deg − W)Z`` is
  ``Eᵀ(ω ⊙ E Z)`` from those same differences (cheaper than assembling ``W`` and
  multiplying by it).

The Laplacian annihilates constants, so centring ``U`` per block changes no value and
keeps the products small (raw pixel coordinates are all positive).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._sets import unique_inverse


class PairGraph:
    """The pairs ``(pa, pb)`` (point indices) in blocks ``blk`` (the metric of each pair).

    ``perm`` lists the pairs in stacked block order (pair ``perm[s]`` is edge ``s``);
    block ``g``'s points are rows ``off[g]:off[g+1]`` of ``U`` and its edges
    ``pair_off[g]:pair_off[g+1]``.
    """

    def __init__(self, X, pa, pb, blk, n_blocks):
        prow, pts, a, b, off = [], [], [], [], [0]
        for g in range(n_blocks):
            r = np.flatnonzero(blk == g)
            p, loc = unique_inverse(np.concatenate([pa[r], pb[r]]))
            prow.append(r)
            pts.append(p)
            a.append(loc[: len(r)] + off[-1])
            b.append(loc[len(r) :] + off[-1])
            off.append(off[-1] + len(p))
        self.off, self.perm = off, np.concatenate(prow)
        self.pair_off = np.cumsum([0] + [len(r) for r in prow])
        self.U = X[np.concatenate(pts)]
        for _, rows, _ in self.blocks():
            if rows.stop > rows.start:
                self.U[rows] -= self.U[rows].mean(axis=0)
        self.a, self.b = np.concatenate(a), np.concatenate(b)
        m, rows = len(self.a), len(self.U)
        edges = np.arange(m)
        self.E = sp.csr_matrix(
            (np.r_[np.ones(m), -np.ones(m)], (np.r_[edges, edges], np.r_[self.a, self.b])),
            shape=(m, rows),
        )
        self.Et = self.E.T.tocsr()  # the Laplacian's scatter back to the rows
        self._diff = self._mapped = self._last_D = None

    def blocks(self):
        """``(g, rows slice, edges slice)`` for every block."""
        po = self.pair_off
        return [
            (g, slice(s, e), slice(po[g], po[g + 1]))
            for g, (s, e) in enumerate(zip(self.off, self.off[1:]))
        ]

    def project(self, components, maps=None):
        """``Z`` (rows × max r): block ``g``'s rows times ``components[g]ᵀ``, zero-padded;
        with ``maps``, the rows mapped first (block ``g``'s by ``maps[g]``)."""
        U = self.U if maps is None else self.mapped(maps)
        Z = np.zeros((len(U), max(len(Lg) for Lg in components)))
        for g, rows, _ in self.blocks():
            Z[rows, : len(components[g])] = U[rows] @ components[g].T
        return Z

    def mapped(self, maps):
        """``U`` with block ``g``'s rows times ``maps[g]`` (made once: a graph belongs to
        one oracle, whose maps are fixed)."""
        if self._mapped is None:
            self._mapped = np.empty_like(self.U)
            for g, rows, _ in self.blocks():
                self._mapped[rows] = self.U[rows] @ maps[g]
        return self._mapped

    def factor_distances(self, Z):
        """``‖z_a − z_b‖²`` per edge (stacked order); the differences ``E Z`` are kept for
        :meth:`factor_scatter` at the same ``Z``."""
        D = self.E @ Z
        self._last_D = (Z, D)
        return np.einsum("ij,ij->i", D, D)

    def metric_distances(self, Ms):
        """``(u_a − u_b)ᵀ M^g (u_a − u_b)`` per edge (stacked order)."""
        Y = np.empty_like(self.U)
        for g, rows, _ in self.blocks():
            Y[rows] = self.U[rows] @ Ms[g]
        return np.einsum("ij,ij->i", self.E @ Y, self._differences())

    def _differences(self):
        """``E U`` (edges × d), made once: only the metric path needs it."""
        if self._diff is None:
            self._diff = self.E @ self.U
        return self._diff

    def laplacian(self, w, V, D=None):
        """``(deg − W)V = Eᵀ diag(w) E V`` for edge weights ``w`` (stacked order); ``D``:
        ``E V`` if known."""
        D = self.E @ V if D is None else D
        return self.Et @ (w[:, None] * D)

    def scatter(self, w):
        """``[Σ_{p∈g} w_p δ_p δ_pᵀ]`` per block (``d × d``, symmetric)."""
        R = self.laplacian(w, self.U, self._differences())
        out = []
        for _, rows, _ in self.blocks():
            H = self.U[rows].T @ R[rows]
            out.append(0.5 * (H + H.T))
        return out

    def factor_scatter(self, w, Z, ranks, maps=None):
        """``[L_g Σ_{p∈g} w_p δ_p δ_pᵀ]`` per block from ``Z`` (:meth:`project`) and the
        factors' row counts ``ranks`` (with ``maps``: in the mapped coordinates)."""
        U = self.U if maps is None else self.mapped(maps)
        last = self._last_D
        R = self.laplacian(w, Z, last[1] if last is not None and last[0] is Z else None)
        return [R[rows, : ranks[g]].T @ U[rows] for g, rows, _ in self.blocks()]
