"""The streaming evaluator of LMNN's eq. (14): the block functions mapped over row blocks.

The block function :func:`~.stream.hinge_block` is pure: a function of the row indices, the data
(``X``, labels, targets), ``L`` and σ, returning small partial sums. So is
:func:`~.full_check.terms_block`, the full check of the active-set mode, returning violated
triplets ``(i, j, l)`` (each differently labelled pair once, by symmetry:
:mod:`.full_check`). An *executor* maps them over the blocks: :class:`~.local.LocalExecutor`
runs in this process (in one thread or several lanes); a distributed executor (Dask,
:mod:`.dask_executor`) ships the data once (``scatter``) and runs ``map_blocks`` /
``map_terms`` on its workers. Every block of one evaluation shares ``Z = X Lᵀ`` and the
float32 search matrix, computed once per process (:func:`~.data.project`).

Memory: one block holds ``O(block_rows · n)`` floats and one chunk ``O(chunk · (d + k))``;
:func:`plan_blocks` sizes both from the budget.
"""

from __future__ import annotations

import time

import numpy as np

from ..terms import index_dtype
from .data import StreamData, row_blocks, stale_blocks
from .full_check import terms_block
from .local import LocalExecutor
from .stream import hinge_block


def _add_sums(total, part):
    """``total`` plus one block's :func:`hinge_block` sums (in place: ``total`` is the
    fold's own)."""
    for key in ("value", "lam", "count"):
        total[key] += part[key]
    if part["G"] is not None:
        total["G"] = part["G"] if total["G"] is None else total["G"] + part["G"]
    return total


class StreamingEvaluator:
    """Eq. (14) over all triplets, streamed by row blocks through an executor.

    Parameters
    ----------
    X, y, targets : arrays
        Inputs (n, d), encoded labels and target neighbours (n, k).
    mu : float
    pull : ndarray (d, d)
        ``Σ C_ij`` over target pairs (:func:`~convexmetric.problems.lmnn.pull_matrix`).
    memory_limit : int or None
        Bytes of working memory; sizes the blocks (:func:`plan_blocks`).
    executor : Executor, default :class:`LocalExecutor`
        Runs the block maps (the contract: :mod:`.executor`).
    """

    def __init__(self, X, y, targets, mu, pull, *, memory_limit=None, executor=None):
        self.mu, self.pull = mu, pull
        n, d = X.shape
        self.n = n
        self.executor = executor if executor is not None else LocalExecutor()
        # an executor sizes its blocks itself (a device: its own memory; lanes: their share)
        self.block_rows, self.chunk = self.executor.plan_blocks(
            n, d, targets.shape[1], memory_limit
        )
        self.y, self.blocks = y, row_blocks(y, self.block_rows)
        self.data = self.executor.scatter(StreamData(X, y, targets))
        self.evaluations = self.checks = self.partial_checks = 0
        self.rows_searched = 0  #: rows the searches took: ``n`` a full one, the stale a partial
        self.seconds = 0.0  #: wall time spent in the block functions (all calls)
        self.seconds_by = dict.fromkeys(("terms", "partial", "sums", "multipliers"), 0.0)

    def terms(self, L, max_terms=None, margin=0.0):
        """The violated triplets at ``M = LᵀL``: int arrays ``(I, J, L)`` (int32 while ``n <
        2³¹``, as the blocks return them; a full check
        of the active-set mode, by blocks); with ``margin``, those with ``z > −margin``.
        Past ``max_terms`` raises :class:`TooManyTerms`."""
        self.checks += 1
        self.rows_searched += self.n
        kw = {"margin": margin} if margin else {}
        return self._terms(self.blocks, L, max_terms, kw, "terms")

    def partial_terms(self, L, stale, max_terms=None):
        """The violated triplets of the pairs with an end in ``stale`` (a bool mask over
        the points), each pair once: a full check's block work over the stale rows alone
        (:func:`~.full_check.terms_block`, blocks of :func:`~.data.stale_blocks`)."""
        self.partial_checks += 1
        self.rows_searched += int(np.count_nonzero(stale))
        blocks = stale_blocks(self.blocks, stale, self.y, self.block_rows)
        return self._terms(blocks, L, max_terms, {"stale": stale}, "partial")

    def _timed(self, kind, start):
        """Add the wall time since ``start`` to :attr:`seconds` and to its map's share."""
        took = time.perf_counter() - start
        self.seconds += took
        self.seconds_by[kind] += took

    def _terms(self, blocks, L, max_terms, kw, kind):
        start = time.perf_counter()
        try:
            parts = self.executor.map_terms(
                terms_block, blocks, self.data, L, max_terms=max_terms, chunk=self.chunk, **kw
            )
        finally:
            self.executor.release()
            self._timed(kind, start)
        if not parts:
            e = np.empty(0, index_dtype(self.n))
            return e, e, e
        return tuple(np.concatenate([p[key] for p in parts]) for key in ("I", "J", "L"))

    def sums(self, L, sigma=None, grad=True, cap=None):
        """Block partial sums added up: ``value``, ``lam``, ``count`` and ``G``.

        ``cap``: give up once ``Σ φ`` is known to exceed it (``value`` then exceeds it,
        or is ``inf``: a block's own sum past it)."""
        self.evaluations += 1
        start = time.perf_counter()
        total = self.executor.fold_blocks(
            _add_sums,
            {"value": 0.0, "lam": 0.0, "count": 0, "G": None},
            hinge_block,
            self.blocks,
            self.data,
            L,
            sigma,
            grad=grad,
            chunk=self.chunk,
            cap=cap,
            until=None if cap is None else lambda total: not total["value"] <= cap,
        )
        self._timed("sums", start)
        if grad and total["G"] is None:
            total["G"] = np.zeros_like(self.pull)
        return total

    def evaluate(self, M, L, sigma=None, cap=None):
        """``(f, G)``: eq. (14) (or its smoothing with width σ, prox centre 0) and gradient.

        With ``cap``, a point whose value exceeds it returns ``(inf, 0)`` early (a
        trial point the descent rejects anyway)."""
        f_pull = (1 - self.mu) * float(np.sum(self.pull * M))
        push_cap = None if cap is None else max((cap - f_pull) / self.mu, 0.0)
        if push_cap is not None and f_pull > cap:
            return np.inf, np.zeros_like(M)
        t = self.sums(L, sigma, cap=push_cap)  # (a block gives up past the whole cap)
        if push_cap is not None and not t["value"] <= push_cap:
            return np.inf, np.zeros_like(M)
        return f_pull + self.mu * t["value"], (1 - self.mu) * self.pull + self.mu * t["G"]

    def objective(self, M, L, dual=False):
        """Eq. (14) at ``M = LᵀL`` over all triplets (exact); with ``dual``, ``(f, S(λ), Σ λ)``
        at ``λ = 1[z > 0]`` from the same pass (a certificate's dual point, as :meth:`dual`)."""
        t = self.sums(L, None, grad=dual)
        f = (1 - self.mu) * float(np.sum(self.pull * M)) + self.mu * t["value"]
        return (f, (1 - self.mu) * self.pull + self.mu * t["G"], t["lam"]) if dual else f

    def dual(self, L, sigma):
        """``(S(λ), Σ λ)`` with ``λ = clip(z/σ, 0, 1)`` at ``M = LᵀL`` (the certificate's)."""
        t = self.sums(L, sigma)
        return (1 - self.mu) * self.pull + self.mu * t["G"], t["lam"]

    def multipliers(self, L, sigma):
        """The triplets with ``λ = clip(z/σ, 0, 1) > 0`` at ``M = LᵀL`` and their ``λ``
        (the dual point of :meth:`dual`): int64 ``I, J, L`` and float64 ``λ``."""
        start = time.perf_counter()
        parts = self.executor.map_blocks(
            hinge_block,
            self.blocks,
            self.data,
            L,
            sigma,
            grad=False,
            chunk=self.chunk,
            triplets=True,
        )
        self._timed("multipliers", start)
        # (a Dask task adds its blocks' dicts up: their tuples come concatenated)
        listed = [q["triplets"][s : s + 4] for q in parts for s in range(0, len(q["triplets"]), 4)]
        e = [np.empty(0, np.int64)] * 3 + [np.empty(0)]
        return tuple(np.concatenate(p) for p in zip(e, *listed))
