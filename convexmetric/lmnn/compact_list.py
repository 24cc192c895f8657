"""The active list's arrays and its distances: the listed triplets as indices, in the
narrowest types.

:class:`TermList` holds the triplets ``(I, J, L)`` of :class:`.active_list.ActiveList`,
sorted by their keys ``(i·n + j)·n + l``, with what an evaluation gathers through: the
target slot of each ``j`` and the distinct ``(i, l)`` pairs (the ``k`` targets of a point
share its impostors: ``d(i, l)`` once per pair), and the per-term masks of the
evaluations (``sub``, ``smooth``: the terms counted in their incremental sums; ``lam``:
the smoothed stages' prox centre λ̄). Indices are int32 while ``n < 2³¹``, the slot the
narrowest unsigned type that holds ``k``; the int64 keys exist only while a merge runs
(:attr:`TermList.keys` computes them). What one listed term costs, with the temporaries
of a merge, an evaluation and a bound, is measured by ``benchmarks/bench_list_memory.py``
(:data:`.constants.BYTES_PER_TERM`).

:class:`ListDistances` measures the listed distances from ``Z = X Lᵀ``. With a tolerance
of at least :data:`.constants.SINGLE_TOL`, on data of at least
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
from .terms import index_dtype


def triplet_keys(I, J, L, n):
    """Keys of triplets: int64 ``(i·n + j)·n + l`` (exact while ``n³ < 2⁶³``)."""
    keys = np.asarray(I, np.int64) * n
    keys += J
    keys *= n
    keys += L
    return keys


class TermList:
    """The listed triplets of the target neighbours ``targets`` (n × k), empty at first."""

    def __init__(self, targets):
        self.T = targets
        self.n, self.k = targets.shape
        self.index = index_dtype(self.n)  #: the list's index type
        self.evaluated = 0  #: listed terms over all calls of :meth:`arguments` (the list's work)
        self.clear()

    def clear(self):
        """Empty the list (its masks too)."""
        e = np.empty(0, self.index)
        masks = {"sub": np.zeros(0, bool), "smooth": np.zeros(0, bool), "lam": np.zeros(0)}
        self._set(e, e, e, masks)

    def _set(self, I, J, L, masks):
        """Hold the triplets ``(I, J, L)`` (sorted by key) and their masks.

        Indices only, in the narrowest types that hold them (:meth:`_compact`): the old
        list's arrays are released before the new list's pairs are built."""
        n = self.n
        self.slot = self.pair_of = self.pair_I = self.pair_L = None
        self.I, self.J, self.L = (self._compact(a) for a in (I, J, L))
        self.mask = dict(masks)
        self.slot = self._slots(self.I, self.J)
        # the k targets of a point share its impostors: d(i, l) once per listed pair
        pairs, self.pair_of = unique_inverse(self._pair_keys(), dtype=self.index)
        self.pair_I, self.pair_L = self._compact(pairs // n), self._compact(pairs % n)

    def _pair_keys(self):
        keys = self.I.astype(np.int64)
        keys *= self.n
        keys += self.L
        return keys

    def _compact(self, a):
        """``a`` as :attr:`index` (int32 while ``n < 2³¹``), copied only if it is not."""
        return np.asarray(a, dtype=self.index)

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
        return triplet_keys(self.I, self.J, self.L, self.n)

    def __len__(self):
        return len(self.I)

    def merge(self, I, J, L):
        """Add triplets to the list (their masks 0); return True if any were new."""
        n = self.n
        old = self.keys
        keys = triplet_keys(I, J, L, n)
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
        self._set(*lists, masks)
        return True

    def prune(self, z, margin):
        """Drop the triplets with ``z < −margin`` that no mask counts; ``z`` of those kept."""
        drop = z < -margin
        for m in self.mask.values():
            drop &= m == 0
        if not drop.any():
            return z
        keep = ~drop
        masks = {k: m[keep] for k, m in self.mask.items()}
        self._set(self.I[keep], self.J[keep], self.L[keep], masks)
        return z[keep]

    @property
    def prox_centre(self):
        """λ̄, the smoothed stages' prox centre over the listed terms (0 at the start)."""
        return self.mask["lam"]

    def arguments(self, Dt, d_il):
        """``z = 1 + d(i, j) − d(i, l)`` over the list from the target distances ``Dt`` (n
        × k) and the listed pairs' ``d_il`` (in place: ``(d(i, j) + 1) − d(i, l)``)."""
        self.evaluated += len(self.I)
        z = Dt[self.I, self.slot]
        z += 1.0
        z -= d_il[self.pair_of]
        return z


class ListDistances:
    """The listed distances of ``X`` at a factor ``Lc``, from ``Z = X Lcᵀ``.

    ``executor``: its lanes (:class:`.blocks.local.LocalExecutor`) share the products;
    one with ``list_distances`` (:meth:`.blocks.device.DeviceExecutor.list_distances`)
    takes the products to its device, reading the streamed data ``device_data()``."""

    def __init__(self, X, T, executor, device_data):
        self.X, self.T, self.executor, self.device_data = X, T, executor, device_data
        self.Z = None  #: ``X Lᵀ`` of the last call (one of ``_buffers``: :meth:`project`)
        self._buffers, self._Xs = {}, None  #: ``Z`` buffers by dtype; ``X`` in float32

    @property
    def threads(self):
        """The executor's lanes, which the list's own distances share too; 1 for the others."""
        return getattr(self.executor, "threads", 1)

    def __call__(self, Lc, terms, single=False):
        """The target distances (n × k) and ``terms``' listed pairs' distances at ``Lc``;
        ``Z`` kept in :attr:`Z` (for the factor gradient), float32 if ``single`` (the
        distances' values in double, from those products)."""
        on_device = getattr(self.executor, "list_distances", None)
        if on_device is None:  # (a padded target slot is never listed: never read here)
            Z = self.Z = self.project(Lc, single)
            t = self.threads
            return (
                target_distances(Z, self.T, threads=t),
                row_distances(Z, terms.pair_I, terms.pair_L, threads=t),
            )
        self.Z, Dt, d_il = on_device(self.device_data(), Lc, terms.pair_I, terms.pair_L)
        return Dt, d_il

    def project(self, Lc, single=False):
        """``Z = X Lcᵀ`` (float32 if ``single``) into a buffer reused from call to call (a
        fresh ``n × r`` array pays its page faults at every evaluation)."""
        X = self.rows(np.float32 if single else self.X.dtype)
        shape, Z = (len(X), Lc.shape[0]), self._buffers.get(X.dtype)
        if Z is None or Z.shape != shape:
            Z = self._buffers[X.dtype] = np.empty(shape, X.dtype)
        Lt = Lc.T.astype(X.dtype, copy=False)

        def rows(s, e):  # fixed chunks: the same products whatever the lanes sharing them
            np.matmul(X[s:e], Lt, out=Z[s:e])

        in_lanes(len(X), PROJECT_ROWS, self.threads, rows)
        return Z

    def rows(self, dtype):
        """``X`` in ``dtype`` (float32: a copy made once), the rows a product with a ``Z``
        of that dtype takes (:meth:`.oracle.ActiveSetOracle.smooth_factor`)."""
        if np.dtype(dtype) != np.float32 or self.X.dtype == np.float32:
            return self.X
        if self._Xs is None:
            self._Xs = self.X.astype(np.float32)
        return self._Xs
