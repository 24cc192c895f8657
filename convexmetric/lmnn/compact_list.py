"""The active list's arrays: the listed triplets as indices, in the narrowest types.

:class:`CompactList` holds the triplets ``(I, J, L)`` of :class:`.active_list.ActiveList`,
sorted by their keys ``(i·n + j)·n + l``, with what an evaluation gathers through: the
target slot of each ``j`` and the distinct ``(i, l)`` pairs (the ``k`` targets of a point
share its impostors: ``d(i, l)`` once per pair). Indices are int32 while ``n < 2³¹``, the
slot the narrowest unsigned type that holds ``k``; the int64 keys exist only while a merge
runs (:meth:`CompactList.keys` computes them). What one listed term costs, with the
temporaries of a merge, an evaluation and a bound, is measured by
``benchmarks/bench_list_memory.py`` (:data:`.constants.BYTES_PER_TERM`).

The listed distances (:meth:`CompactList._list_distances`) come from ``Z = X Lᵀ``. With a
tolerance of at least :data:`.constants.SINGLE_TOL`, on data of at least
:data:`.constants.SINGLE_SIZE` entries, the drivers' trial evaluations
(:meth:`.active_list.ActiveList.hinge_arguments` without ``accepted``, and the smoothed
gradients built on them) project and measure in single precision: half the memory
traffic and twice the product rate, with a rounding near 1e-7 of each distance, far
below the tolerance. They only steer the drivers. Every value that is reported,
compared between stages, or enters a bound or a prox centre is computed in double
precision: :meth:`.oracle.ActiveSetOracle.objective`, the full checks' decisions, and
the hinge arguments at accepted points.
"""

from __future__ import annotations

import numpy as np

from ..linalg import in_lanes, row_distances, target_distances
from ._sets import member, unique, unique_inverse
from .constants import PROJECT_ROWS


class CompactList:
    """The listed triplets' arrays and their distances (a base of
    :class:`.active_list.ActiveList`, which sets ``n``, ``k``, ``X``, the targets ``T``,
    the per-term masks ``mask``, ``_index``, the ``Z`` buffers and the executor)."""

    def _set_list(self, I, J, L, keep_masks):
        """Hold the triplets ``(I, J, L)`` (sorted by :meth:`_keys`) and their masks.

        Indices only, in the narrowest types that hold them (:meth:`_compact`): the old
        list's arrays are released before the new list's pairs are built."""
        n = self.n
        self.slot = self._pair_of = self._pair_I = self._pair_L = None
        self.I, self.J, self.L = (self._compact(a) for a in (I, J, L))
        self.mask = {name: m for name, m in keep_masks.items()}
        self.slot = self._slots(self.I, self.J)
        # the k targets of a point share its impostors: d(i, l) once per listed pair
        pairs, self._pair_of = unique_inverse(self._pair_keys(), dtype=self._index)
        self._pair_I, self._pair_L = self._compact(pairs // n), self._compact(pairs % n)

    def _pair_keys(self):
        keys = self.I.astype(np.int64)
        keys *= self.n
        keys += self.L
        return keys

    def _compact(self, a):
        """``a`` as :attr:`_index` (int32 while ``n < 2³¹``), copied only if it is not."""
        return np.asarray(a, dtype=self._index)

    def _slots(self, I, J):
        """The target slot of each listed ``J`` among ``I``'s targets (the first match),
        one slot at a time: no ``|list| × k`` temporaries."""
        slot = np.zeros(len(I), np.min_scalar_type(max(self.k - 1, 0)))
        for q in range(self.k - 1, -1, -1):
            slot[self.T[I, q] == J] = q
        return slot

    @property
    def keys(self):
        """The listed triplets' keys ``(i·n + j)·n + l`` (int64, sorted; computed when
        asked: the list keeps only its indices)."""
        return self._keys(self.I, self.J, self.L)

    def _keys(self, I, J, L):
        """Keys of triplets: int64 ``(i·n + j)·n + l`` (exact while ``n³ < 2⁶³``)."""
        n = self.n
        keys = np.asarray(I, np.int64) * n
        keys += J
        keys *= n
        keys += L
        return keys

    def __len__(self):
        return len(self.I)

    def _merge(self, I, J, L):
        """Add triplets to the active list; return True if any were new."""
        n = self.n
        old = self._keys(self.I, self.J, self.L)
        keys = self._keys(I, J, L)
        keys = unique(keys[~member(keys, old)])
        if len(keys) == 0:
            return False
        order = np.argsort(np.concatenate([old, keys]), kind="stable")
        del old
        new = (keys // (n * n), (keys // n) % n, keys % n)
        del keys
        lists = [
            np.concatenate([a, self._compact(b)])[order]
            for a, b in zip((self.I, self.J, self.L), new)
        ]
        size = len(new[0])
        masks = {
            k: np.concatenate([m, np.zeros(size, m.dtype)])[order] for k, m in self.mask.items()
        }
        del order, new
        self._set_list(*lists, masks)
        return True

    @property
    def prox_centre(self):
        """λ̄, the smoothed stages' prox centre over the listed terms (0 at the start)."""
        return self.mask["lam"]

    def listed_arguments(self, Lc):
        """``z = 1 + d(i, j) − d(i, l)`` over the listed terms at ``M = LcᵀLc``, with no
        check (a bound of the listed multipliers is valid whatever the list misses)."""
        Dt, d_il = self._list_distances(Lc)
        return Dt[self.I, self.slot] + 1.0 - d_il[self._pair_of]

    def _list_distances(self, Lc, single=False):
        """The target distances (n × k) and the listed pairs' distances at ``Lc``; ``Z =
        X Lcᵀ`` is kept in ``self._Z`` (for the factor gradient, ActiveSetOracle), in
        float32 if ``single`` (the distances' values in double, from those products). On
        the executor's device when it has one
        (:meth:`.blocks.device.DeviceExecutor.list_distances`: the products there, the
        values back)."""
        on_device = getattr(self.executor, "list_distances", None)
        if on_device is None:  # (a padded target slot is never listed: never read here)
            Z = self._Z = self._project(Lc, single)
            t = self.threads
            return (
                target_distances(Z, self.T, threads=t),
                row_distances(Z, self._pair_I, self._pair_L, threads=t),
            )
        self._Z, Dt, d_il = on_device(self._streamer().data, Lc, self._pair_I, self._pair_L)
        return Dt, d_il

    def _project(self, Lc, single=False):
        """``Z = X Lcᵀ`` (float32 if ``single``) into a buffer reused from call to call (a
        fresh ``n × r`` array pays its page faults at every evaluation: at n = 60,000 a
        quarter of the GEMM)."""
        X = self.rows(np.float32 if single else self.X.dtype)
        shape, Z = (self.n, Lc.shape[0]), self._buffers.get(X.dtype)
        if Z is None or Z.shape != shape:
            Z = self._buffers[X.dtype] = np.empty(shape, X.dtype)
        Lt = Lc.T.astype(X.dtype, copy=False)

        def rows(s, e):  # fixed chunks: the same products whatever the lanes sharing them
            np.matmul(X[s:e], Lt, out=Z[s:e])

        in_lanes(self.n, PROJECT_ROWS, self.threads, rows)
        return Z

    @property
    def threads(self):
        """The executor's lanes (:class:`.blocks.local.LocalExecutor`), which the list's
        own distances share too; 1 for the others."""
        return getattr(self.executor, "threads", 1)

    def rows(self, dtype):
        """``X`` in ``dtype`` (float32: a copy made once), the rows a product with a ``Z``
        of that dtype takes (:meth:`.oracle.ActiveSetOracle.smooth_factor`)."""
        if np.dtype(dtype) != np.float32 or self.X.dtype == np.float32:
            return self.X
        if self._Xs is None:
            self._Xs = self.X.astype(np.float32)
        return self._Xs
