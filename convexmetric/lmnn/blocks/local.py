"""The in-process executor of LMNN's block map: one thread, or several (``n_jobs``).

:class:`LocalExecutor` runs the block functions (:func:`~.full_check.terms_block`,
:func:`~.stream.hinge_block`, the prediction chunks) in this process. With ``threads >
1`` it runs that many *lanes* at once: each lane takes the next block in order from a
shared counter (the blocks of the first classes compare with more columns, so a fixed
split would leave one lane waiting) and keeps its own :class:`~.data.Workspace`, a fork
of the executor's, so the scratch buffers are the lane's and the projection ``Z = X Lᵀ``
and its screen are computed once per evaluation and read by every lane. NumPy releases
the GIL in the products and comparisons that are a block's work (BLAS itself stays at
the solver's thread limit: lanes, not BLAS threads, use the cores).

The results do not depend on the number of threads: they come back in block order, so
a full check's triplets are the same arrays in the same order and the streamed partial
sums are added in the same order as with one thread. Only the blocks' size does: the
memory budget is shared between the lanes (:meth:`LocalExecutor.plan_blocks`), so the
streaming mode's sums (not the triplets, nor the active-set mode's iterates) round
differently with more lanes.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from ..._input_checks import check_n_jobs
from ...optim.deadline import NEVER
from ..constants import LANES_FROM_ROWS
from ..terms import TooManyTerms
from .data import Workspace, least_budget, plan_blocks
from .full_check import collect_terms, join_terms


def check_lanes(n_jobs, device, owner="LMNN"):
    """The threads ``n_jobs`` asks for (:func:`~convexmetric._input_checks.check_n_jobs`):
    the lanes of the block work in this process, or on Dask of the client's own work on
    the active list; more than one not beside a device (which runs
    the blocks and the list's distances): else ValueError naming 'n_jobs'."""
    threads = check_n_jobs(n_jobs, owner)
    if threads > 1 and device not in (None, "cpu"):
        raise ValueError(
            f"The 'n_jobs' parameter of {owner} sets the threads of this process's block "
            f"or list work (no device); with device={device!r} it must be None or 1. "
            f"Got {n_jobs!r} instead."
        )
    return threads


def _omp_bound():
    bound = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(bound) if bound.isdigit() and int(bound) > 0 else None


#: ``OMP_NUM_THREADS`` when this module was imported (None: unset), read once as an
#: OpenMP runtime reads it when loaded: joblib's workers start with it set, while a
#: Dask ``LocalCluster`` sets it in its client's process too, after the fact
OMP_BOUND = _omp_bound()


def default_lanes(n, d, k, memory_limit):
    """The lanes of ``n_jobs=None``: from :data:`~..constants.LANES_FROM_ROWS` points
    on (one below), every core this process may use (at most
    :data:`OMP_BOUND`, as joblib's workers set it for the libraries they run), but no
    more than leave each lane's share of ``memory_limit`` the blocks one lane plans
    (:meth:`LocalExecutor.plan_blocks`). The streaming sums round as their blocks add,
    so the results do not depend on the machine's cores."""
    if n < LANES_FROM_ROWS:
        return 1
    cores = check_n_jobs(-1)
    cores = min(cores, OMP_BOUND or cores)
    if memory_limit is None:
        return cores
    one = plan_blocks(n, d, k, memory_limit)[0]
    lanes = 1
    while lanes < cores and memory_limit // (lanes + 1) >= least_budget(n, d, k):
        if plan_blocks(n, d, k, memory_limit // (lanes + 1))[0] != one:
            break
        lanes += 1
    return lanes


class LocalExecutor:
    """Runs block functions in this process, in ``threads`` lanes (one by default), each
    with its own :class:`~.data.Workspace` (see the module docstring).

    Parameters
    ----------
    threads : int, default=1
        Lanes running blocks at once.
    """

    name = "local"
    alarm = NEVER  #: checked before each block (:class:`convexmetric.optim.deadline.Alarm`)

    def __init__(self, threads=1):
        self.threads = int(threads)
        self.close(None)

    def scatter(self, data):
        """Make ``data`` available to the block functions (here: itself)."""
        return data

    def plan_blocks(self, n, d, k, memory_limit=None):
        """:func:`~.data.plan_blocks` with each lane's share of ``memory_limit``."""
        share = None if memory_limit is None else memory_limit // self.threads
        return plan_blocks(n, d, k, share)

    def map_blocks(self, fn, blocks, data, *args, **kwargs):
        """``[fn(rows, data, *args, ws=workspace, **kwargs) for rows in blocks]``
        (:attr:`alarm` checked before each block)."""
        return self._map(lambda rows, ws: fn(rows, data, *args, ws=ws, **kwargs), blocks)[0]

    def fold_blocks(self, fold, total, fn, blocks, data, *args, until=None, **kwargs):
        """``total`` with each block's ``fn(rows, data, *args, ws=..., **kwargs)`` folded
        in by ``total = fold(total, part)``, in block order whatever the lanes' order; a
        part is dropped once folded (a map of many small blocks holds no d × d sum per
        block). ``until(total)`` true halts the map (the contract's item 5)."""
        acc = _InOrder(fold, total)
        self._map(
            lambda ib, ws: acc.put(ib[0], fn(ib[1], data, *args, ws=ws, **kwargs)),
            list(enumerate(blocks)),
            stop=None if until is None else lambda _: until(acc.total),
        )
        return acc.total

    def map_chunks(self, fn, chunks, data, **kwargs):
        """``[fn(chunk, data, **kwargs) for chunk in chunks]`` (e.g. blocks of test rows)."""
        return self._map(lambda rows, ws: fn(rows, data, **kwargs), chunks)[0]

    def map_terms(self, fn, blocks, data, *args, max_terms=None, **kwargs):
        """:meth:`map_blocks` for a block function returning triplets (:func:`terms_block`),
        joined in block order: raises :class:`TooManyTerms` as soon as more than
        ``max_terms`` were found."""
        if self.threads == 1:
            part = collect_terms(
                fn,
                blocks,
                data,
                *args,
                max_terms=max_terms,
                ws=self.workspace,
                alarm=self.alarm,
                **kwargs,
            )
        else:
            part = self._terms(fn, blocks, data, args, max_terms, kwargs)
        if part["overflow"]:
            raise TooManyTerms(f"more than {max_terms} hinge terms")
        return [part]

    def _terms(self, fn, blocks, data, args, max_terms, kwargs):
        """:func:`collect_terms` over the lanes: a block gets what is left of
        ``max_terms`` when it starts; the lanes stop once the blocks found more."""
        found, lock = [0], threading.Lock()

        def run(rows, ws):
            with lock:
                left = None if max_terms is None else max_terms - found[0]
            part = fn(rows, data, *args, max_terms=left, ws=ws, **kwargs)
            with lock:
                found[0] += part["count"]
                part["overflow"] |= max_terms is not None and found[0] > max_terms
            return part

        parts, halted = self._map(run, blocks, stop=lambda part: part["overflow"])
        if halted:
            return {"I": None, "J": None, "L": None, "count": found[0], "overflow": True}
        return join_terms(parts)

    def _map(self, run, blocks, stop=None):
        """``([run(rows, ws) for rows in blocks], halted)``: in this thread, or in the
        lanes; ``stop(result)`` true halts the map (the results are then incomplete)."""
        if self.threads == 1 or len(blocks) < 2:
            out = []
            for rows in blocks:
                self.alarm.check()
                out.append(run(rows, self.workspace))
                if stop is not None and stop(out[-1]):
                    return out, True
            return out, False
        results, state = [None] * len(blocks), _Lanes(len(blocks))

        def lane(ws):
            for b in iter(state.take, None):
                try:
                    self.alarm.check()
                    results[b] = run(blocks[b], ws)
                except BaseException:
                    state.halt.set()
                    raise
                if stop is not None and stop(results[b]):
                    state.halt.set()

        lanes = min(self.threads, len(blocks))
        with ThreadPoolExecutor(lanes, thread_name_prefix="convexmetric-lane") as pool:
            futures = [pool.submit(lane, ws) for ws in self.spaces[:lanes]]
        for f in futures:
            f.result()  # a lane's exception (the alarm's TimeUp included), here
        return results, state.halt.is_set()

    def close(self, data):
        """Forget the workspaces' projection and buffers."""
        self.workspace = Workspace()
        #: the lanes' workspaces: the executor's, then its forks
        self.spaces = [self.workspace] + [self.workspace.fork() for _ in range(self.threads - 1)]

    def release(self):
        """Free the full check's scratch buffers (after each check)."""
        for ws in self.spaces:
            ws.release()


class _Lanes:
    """The lanes' shared counter of blocks and their halt flag."""

    def __init__(self, n):
        self.n, self.next, self.lock, self.halt = n, 0, threading.Lock(), threading.Event()

    def take(self):
        """The next block's index, or None when all are taken or the map halted."""
        with self.lock:
            if self.halt.is_set() or self.next >= self.n:
                return None
            self.next += 1
            return self.next - 1


class _InOrder:
    """A fold fed in any order and applied in block order (the parts that arrive early
    wait for those before them)."""

    def __init__(self, fold, total):
        self.fold, self.total, self.next, self.waiting = fold, total, 0, {}
        self.lock = threading.Lock()

    def put(self, b, part):
        with self.lock:
            self.waiting[b] = part
            while self.next in self.waiting:
                self.total = self.fold(self.total, self.waiting.pop(self.next))
                self.next += 1
