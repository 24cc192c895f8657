"""What LMNN's block functions share: the data, the row blocks, the projection ``Z = X Lᵀ``.

The block functions of :mod:`.stream` (streamed sums) and :mod:`.full_check` (the full
check's triplets) are pure functions of a block of rows, the data
(:class:`StreamData`) and the components ``L``; every block of one evaluation reads the
same :class:`Projection`, computed once per evaluation and kept in the caller's
:class:`Workspace` (one per thread: no module-level state).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ..constants import (
    BASE_BYTES,
    BLOCK_BUDGET,
    BYTES_PER_BLOCK_CELL,
    DATA_COPIES,
    LEAST_CHUNK,
    LEAST_ROWS,
    MAX_BLOCK_ROWS,
    MAX_TASKS,
    SQUARE_STATE,
    TASK_CELLS,
)
from .screen import screen
from .xp import (
    is_numpy,
    mask_padding,
    namespace,
    target_distances,
    to_device,
    to_numpy,
)


class StreamData(NamedTuple):
    """The data a block function reads: inputs ``X`` (n, d), labels ``y``, targets (n, k)."""

    X: np.ndarray
    y: np.ndarray
    targets: np.ndarray


def least_budget(n, d, k):
    """The least ``memory_limit`` (bytes) the smallest plan fits in: one block of
    :data:`LEAST_ROWS` rows against the ``n`` rows and one chunk of :data:`LEAST_CHUNK`
    candidate pairs (:func:`plan_blocks`)."""
    return LEAST_ROWS * BYTES_PER_BLOCK_CELL * n + LEAST_CHUNK * 8 * (2 * d + 6 * k + 8)


def check_budget(memory_limit, n, d, k, lanes=1):
    """ValueError naming ``memory_limit`` when it is below :func:`least_budget` for each of
    ``lanes`` (the lanes share it); the limit otherwise."""
    least = lanes * least_budget(n, d, k)
    if memory_limit is not None and memory_limit < least:
        each = f" for each of {lanes} lanes (n_jobs)" if lanes > 1 else ""
        raise ValueError(
            f"memory_limit={memory_limit} bytes is below the {least} bytes the smallest plan "
            f"needs for {n} rows, {d} features and k={k}{each}: one block of {LEAST_ROWS} "
            f"rows against every row and one chunk of {LEAST_CHUNK} candidate pairs. Pass at "
            f"least {least}, or None for no bound."
        )
    return memory_limit


def data_share(n, d, k):
    """Bytes a fit holds beyond ``memory_limit`` whatever its plan, at most (measured,
    ``tests/test_lmnn_memory_ceiling.py``): :data:`DATA_COPIES` arrays of ``n × (d + k)``
    doubles (the solver's copies of ``X``, ``Z = X Lᵀ`` with its float32 forms, the
    search coordinates, target distances, the certificate's row blocks),
    :data:`SQUARE_STATE` ``d × d`` doubles (L-BFGS memory, the metric, gradient,
    factors) and :data:`BASE_BYTES`."""
    return BASE_BYTES + 8 * (DATA_COPIES * n * (d + k) + SQUARE_STATE * d * d)


def plan_blocks(n, d, k, memory_limit):
    """``(block_rows, chunk)`` so that one block's working memory stays within the budget.

    Half the budget goes to the ``block_rows × n`` distance block, an eighth to one
    chunk of candidate triplets; of a budget above :data:`BLOCK_BUDGET`, that much (larger
    blocks only hold more memory: the active list takes the rest). ``memory_limit=None``
    gives 512 rows and 2¹⁸ pairs.
    """
    if memory_limit is None:
        return 512, 1 << 18
    memory_limit = min(memory_limit, BLOCK_BUDGET)
    rows = int(memory_limit // 2 // (BYTES_PER_BLOCK_CELL * max(n, 1)))
    chunk = int(memory_limit // 8 // (8 * (2 * d + 6 * k + 8)))
    return max(LEAST_ROWS, min(rows, MAX_BLOCK_ROWS)), max(LEAST_CHUNK, min(chunk, 1 << 18))


def row_blocks(y, block_rows):
    """Blocks of at most ``block_rows`` row indices, each within one class (sorted by ``y``).

    A block of one class compares against the other classes only (no same-class mask).
    """
    order = np.argsort(y, kind="stable")
    ys = np.asarray(y)[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], len(ys)]
    return [
        order[s : min(e, s + block_rows)]
        for a, e in zip(starts, ends)
        for s in range(a, e, block_rows)
    ]


def stale_blocks(blocks, stale, y, block_rows):
    """The rows of ``blocks`` in ``stale`` (a bool mask over the points), blocked again by
    class (:func:`row_blocks`): a partial check's blocks. Of all the fit's blocks: those of
    the stale rows in index order, as :func:`row_blocks` makes them."""
    rows = np.concatenate(blocks) if len(blocks) else np.empty(0, np.intp)
    rows = rows[stale[rows]]
    return [rows[b] for b in row_blocks(np.asarray(y)[rows], block_rows)]


def group_blocks(blocks, n, least=1):
    """Consecutive ``blocks`` per task: at most :data:`MAX_TASKS` tasks, each of at least
    :data:`TASK_CELLS` cells (a block's rows × the ``n`` points it is compared with), but
    at least ``least`` tasks where there are as many blocks."""
    if not blocks:
        return []
    cells = max(len(b) for b in blocks) * n
    size = max(-(-len(blocks) // MAX_TASKS), TASK_CELLS // max(cells, 1), 1)
    size = min(size, -(-len(blocks) // least))
    return [list(blocks[s : s + size]) for s in range(0, len(blocks), size)]


class Projection(NamedTuple):
    """``Z = X Lᵀ`` and what the candidate steps read from it, shared by all blocks.

    The arrays are of the data's namespace and device (:mod:`.xp`); ``L``, ``labels``,
    ``ranges`` and ``scale`` are host values (NumPy, Python)."""

    X: object
    L: np.ndarray  #: host copy of the components (compared, never computed with)
    Z: object
    sq: object  #: ‖z_i‖²
    order: object
    ranges: dict  #: class → (first, end) of its rows in ``order``
    scale: float  #: ``max ‖z‖² + 1``
    Dt: object  #: (n, k) exact target distances ``‖z_i − z_j‖²`` (``−inf``: padding)
    reach: object  #: (n,) ``max_j Dt[i, j]``: once per projection, not per block (_projection)
    labels: np.ndarray  #: host labels (a block's class is ``labels[rows[0]]``)


class Workspace:
    """One thread's reusable state of the block functions: the last :class:`Projection`
    and the scratch buffers of a full check.

    Block functions hold no module-level state: whoever runs them owns a workspace and
    passes it (``ws=``). Its buffers are never shared between threads: the in-process
    executor keeps one per thread (:mod:`.local`), a Dask worker one per thread and fit
    (several block tasks run at once in a worker's threads; a shared buffer would mix
    their triplets). A :meth:`fork` has buffers of its own and reads its parent's
    projection and screen (read-only arrays, computed once under the parent's lock).
    Without one, a block function makes a fresh workspace for its call (correct, but
    the projection is then computed once per block instead of once per evaluation).
    """

    def __init__(self, parent=None):
        self.last = None
        self.buffers = {}
        self._memo = (None, {})  #: (projection, {name: value computed from it})
        self._parent = parent  #: the workspace whose projection a fork reads
        self._lock = threading.Lock()

    def fork(self):
        """A workspace for another thread: scratch buffers of its own, this one's
        projection and screen (whichever thread asks first computes them; the others
        wait for that one and then read the same arrays)."""
        return Workspace(self)

    def screen(self, P):
        """The search coordinates of projection ``P`` (:func:`.screen.screen`), computed
        once per projection (by the first block of a check or streamed sum that asks)."""
        return self.of_projection("screen", P, lambda: screen(P))

    def of_projection(self, name, P, make):
        """``make()``, computed once per projection ``P`` and ``name`` by whichever thread
        asks first (a fork asks its parent): the arrays every block of an evaluation
        reads, made once instead of once per block (on a Dask worker, whose allocator
        returns freed memory at once, each fresh array costs its page faults again)."""
        if self._parent is not None:
            return self._parent.of_projection(name, P, make)
        with self._lock:
            if self._memo[0] is not P:
                self._memo = (P, {})
            memo = self._memo[1]
            if name not in memo:
                memo[name] = make()
            return memo[name]

    def project(self, data, L):
        """The :class:`Projection` of ``data`` under ``L``, computed once per (data, L).

        Every block of one evaluation calls this with the same ``data.X`` and an equal
        ``L``; only the first computes ``Z = X Lᵀ`` (O(n d r)) and the float32 search
        matrix, the others reuse it."""
        if self._parent is not None:
            return self._parent.project(data, L)
        with self._lock:
            last = self.last
            if (
                last is not None
                and last.X is data.X
                and last.L.shape == L.shape
                and np.array_equal(last.L, L)
            ):
                return last
            self.last = _projection(data, L)
            return self.last

    def scratch(self, name, shape, dtype):
        """A buffer of ``shape`` reused by the blocks of one full check (a fresh array of
        ``block_rows × n`` floats costs its page faults each time: at n = 60,000 as much
        as the GEMM that fills it)."""
        size = int(np.prod(shape))
        buf = self.buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self.buffers[name] = np.empty(size, dtype)
        return buf[:size].reshape(shape)

    def release(self):
        """Free the scratch buffers (the projection stays: the next evaluation may reuse it)."""
        self.buffers.clear()


def project(data, L, ws=None):
    """The :class:`Projection` of ``data`` under ``L`` (reused from ``ws`` when it holds it)."""
    return (ws if ws is not None else Workspace()).project(data, L)


def _projection(data, L):
    X, y, T = data
    xp = namespace(X)
    labels = to_numpy(y)
    Z = X @ to_device(L, X).T
    sq = xp.sum(Z * Z, axis=1) if not is_numpy(xp) else np.einsum("ij,ij->i", Z, Z)
    order_h = np.argsort(labels, kind="stable")
    ys = labels[order_h]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], len(ys)]
    order = to_device(order_h, X)
    ranges = {ys[a].item(): (int(a), int(e)) for a, e in zip(starts, ends)}
    Dt = mask_padding(xp, target_distances(xp, Z, T), T)  # padded slots: no hinge, no radius
    scale = float(xp.max(sq)) + 1.0 if sq.shape[0] else 1.0
    # a full check's every block reads all rows' radii: once here, not once per block
    # (benchmarks/TUNING.md, Projection.reach)
    reach = xp.max(Dt, axis=1)
    return Projection(X, np.array(L, copy=True), Z, sq, order, ranges, scale, Dt, reach, labels)
