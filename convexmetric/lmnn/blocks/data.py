"""What LMNN's block functions share: the data, the row blocks, the projection ``Z = X Lᵀ``.

The block functions of :mod:`.stream` (streamed sums) and :mod:`.full_check` (the full
check's triplets) are pure functions of a block of rows, the data
(:class:`StreamData`) and the components ``L``; every block of one evaluation reads the
same :class:`Projection`, computed once per evaluation and kept in the caller's
:class:`Workspace` (one per thread: no module-level state).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .xp import (
    device_of,
    is_numpy,
    mask_padding,
    namespace,
    take,
    target_distances,
    to_device,
    to_numpy,
)

#: bytes per (block row × data row) of one block: float32 distances, masks, temporaries
BYTES_PER_BLOCK_CELL = 16
#: the part of a memory budget that sizes the blocks, at most (bytes)
BLOCK_BUDGET = 1 << 30


class StreamData(NamedTuple):
    """The data a block function reads: inputs ``X`` (n, d), labels ``y``, targets (n, k)."""

    X: np.ndarray
    y: np.ndarray
    targets: np.ndarray


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
    return max(8, min(rows, 1024)), max(256, min(chunk, 1 << 18))


def row_blocks(y, block_rows):
    """Blocks of at most ``block_rows`` row indices, each within one class (sorted by ``y``).

    A block of one class compares against the other classes only (no same-class mask).
    """
    order = np.argsort(y, kind="stable")
    ys = np.asarray(y)[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], len(ys)]
    return [order[s : min(e, s + block_rows)] for a, e in zip(starts, ends)
            for s in range(a, e, block_rows)]  # fmt: skip


class Projection(NamedTuple):
    """``Z = X Lᵀ`` and the search matrices of the candidate step, shared by all blocks.

    The arrays are of the data's namespace and device (:mod:`.xp`); ``L``, ``labels``,
    ``ranges`` and ``scale`` are host values (NumPy, Python)."""

    X: object
    L: np.ndarray  #: host copy of the components (compared, never computed with)
    Z: object
    sq: object  #: ‖z_i‖²
    B: object  #: float32 ``[z_l, −‖z_l‖²/2, 1]``, rows sorted by class (``order``)
    order: object
    ranges: dict  #: class → (first, end) of its rows in ``order``
    scale: float  #: ``max ‖z‖² + 1``
    Dt: object  #: (n, k) exact target distances ``‖z_i − z_j‖²`` (``−inf``: padding)
    labels: np.ndarray  #: host labels (a block's class is ``labels[rows[0]]``)


class Workspace:
    """One thread's reusable state of the block functions: the last :class:`Projection`
    and the scratch buffers of a full check.

    Block functions hold no module-level state: whoever runs them owns a workspace and
    passes it (``ws=``). It is never shared between threads: the in-process executor
    keeps one, a Dask worker one per thread and fit (several block tasks run at once in
    a worker's threads; a shared buffer would mix their triplets). Without one, a block
    function makes a fresh workspace for its call (correct, but the projection is then
    computed once per block instead of once per evaluation).
    """

    def __init__(self):
        self.last = None
        self.buffers = {}
        self._screen = (None, None)

    def screen(self, P, residual):
        """The :class:`Screen` of projection ``P`` (computed once per projection)."""
        if self._screen[0] is not P:
            self._screen = (P, _screen(P, residual))
        return self._screen[1]

    def project(self, data, L):
        """The :class:`Projection` of ``data`` under ``L``, computed once per (data, L).

        Every block of one evaluation calls this with the same ``data.X`` and an equal
        ``L``; only the first computes ``Z = X Lᵀ`` (O(n d r)) and the float32 search
        matrix, the others reuse it."""
        last = self.last
        if last is not None and last.X is data.X and last.L.shape == L.shape \
                and np.array_equal(last.L, L):  # fmt: skip
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
    r = Z.shape[1]
    Zo, so = take(xp, Z, order), take(xp, sq, order)
    ones = xp.ones((len(order_h), 1), dtype=xp.float32, device=device_of(X))
    B = xp.concat([xp.astype(Zo, xp.float32), xp.astype(-0.5 * so[:, None], xp.float32), ones],
                  axis=1) if not is_numpy(xp) else _search_matrix(Zo, so, r)  # fmt: skip
    ranges = {ys[a].item(): (int(a), int(e)) for a, e in zip(starts, ends)}
    Dt = mask_padding(xp, target_distances(xp, Z, T), T)  # padded slots: no hinge, no radius
    scale = float(xp.max(sq)) + 1.0 if sq.shape[0] else 1.0
    return Projection(X, np.array(L, copy=True), Z, sq, B, order, ranges, scale, Dt, labels)


class Screen(NamedTuple):
    """A full check's search coordinates: ``W`` (n × (s + 1)) with ``‖w_a − w_b‖ ≤ ‖z_a −
    z_b‖`` for every pair, so that the pairs within a radius in ``W`` are a superset of
    those within it in ``Z``; ``sq = ‖w‖²``, ``B`` the float32 search matrix of ``W`` (as
    :attr:`Projection.B`), ``scale = max ‖w‖² + 1`` (the float32 rounding band's)."""

    W: object
    sq: object
    B: object
    scale: float


def _screen(P, residual):
    """``W = [(Z − z̄) V, ρ]``: the centred ``Z`` on its ``s`` leading principal axes ``V``,
    and ``ρ`` the norm of what they leave out (``(ρ_a − ρ_b)² ≤ ‖r_a − r_b‖²``: a
    contraction). ``s`` is the fewest axes leaving at most ``residual`` of the spread
    ``Σ ‖z − z̄‖²`` out; with ``s + 1 ≥ r`` (or no data), ``W = Z``. A learned metric
    concentrates ``Z`` on a few axes: the search's product then costs ``(s + 3)/(r + 2)``
    of ``Z``'s, and only the pairs the bound cannot exclude are computed exactly."""
    xp, Z, n, r = namespace(P.Z), P.Z, P.Z.shape[0], P.Z.shape[1]
    if n == 0 or r <= 2:
        return Screen(Z, P.sq, P.B, P.scale)
    mean = xp.mean(Z, axis=0)
    Zc = Z - mean
    w, V = np.linalg.eigh(to_numpy(xp.matrix_transpose(Zc) @ Zc) if not is_numpy(xp)
                          else Zc.T @ Zc)  # fmt: skip
    left = np.cumsum(np.maximum(w, 0.0))  # spread of the trailing axes, ascending
    s = r - int(np.searchsorted(left, residual * left[-1], side="right"))
    if s + 1 >= r:
        return Screen(Z, P.sq, P.B, P.scale)
    Ws = Zc @ to_device(np.ascontiguousarray(V[:, r - s :]), Z)
    csq = xp.sum(Zc * Zc, axis=1)
    rho = xp.sqrt(xp.clip(csq - xp.sum(Ws * Ws, axis=1), min=0.0))
    W = xp.concat([Ws, rho[:, None]], axis=1)
    sq = xp.sum(W * W, axis=1)
    Wo, so = take(xp, W, P.order), take(xp, sq, P.order)
    if is_numpy(xp):
        B = _search_matrix(Wo, so, s + 1)
    else:
        ones = xp.ones((n, 1), dtype=xp.float32, device=device_of(Z))
        B = xp.concat([xp.astype(Wo, xp.float32), xp.astype(-0.5 * so[:, None], xp.float32),
                       ones], axis=1)  # fmt: skip
    return Screen(W, sq, B, float(xp.max(sq)) + 1.0)


def _search_matrix(Zo, so, r):
    """NumPy's ``B`` written in place (no concatenated temporaries)."""
    B = np.empty((len(so), r + 2), np.float32)
    B[:, :r] = Zo
    B[:, r] = -0.5 * so
    B[:, r + 1] = 1.0
    return B
