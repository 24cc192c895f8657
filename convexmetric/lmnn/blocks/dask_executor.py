"""Dask distributed as the engine of LMNN's block map (issue 12).

:mod:`.stream` maps pure block functions over row blocks of the data: the full
checks of the active-set mode (:func:`~.full_check.terms_block`: a block's violated
triplets), exact objectives and, in the streaming mode, the value, gradient and
certificate sums (:func:`~.stream.hinge_block`). An *executor* runs the map:
:class:`~.stream.LocalExecutor` in this process, :class:`DaskExecutor` on the
workers of a ``dask.distributed`` cluster. "local" and "dask" are two executors of one
block map, not two solvers: the solver (its active list stays in the client process),
the block functions and the order in which the partial sums are added are the same,
so both give the same iterates. A task runs a group of consecutive blocks (at most
:data:`MAX_TASKS` tasks, each of at least :data:`TASK_CELLS` block cells: a task costs
milliseconds of the client, the scheduler and its worker beside its work), and adds its
blocks' sums in order on the worker: the streaming sums are the local executor's bit for
bit with one group or one block a group, else up to rounding. The grouping depends on
the blocks only, never on the number of workers.
:func:`predict_blocks` maps kNN and energy prediction over blocks of test rows.

Traffic. :meth:`DaskExecutor.scatter` ships the data (``X``, labels, targets) and the
row blocks' index arrays to every worker once per fit, into a per-process store
(``client.run``; a scattered future would not do: Dask's active memory manager drops
the extra replicas between evaluations, and each evaluation then copied the data
between workers). Every worker needs all of ``X`` (each block compares its rows
against all other points); the copies also let a surviving worker take over a lost
one's blocks. Each evaluation then sends only ``L`` (d×d; inline in the tasks while
``tasks × d² × 8`` bytes stay under :data:`INLINE_BYTES`, else broadcast once) and
gathers per task (at most :data:`MAX_TASKS`) one d×d matrix and three scalars, or at a
full check the task's violated triplets (three int32 arrays; the client merges them
into its active list). No n×n or n×k×n object travels.

Faults (:mod:`.dask_faults`, the contract). Lost workers are recovered: their tasks
run on the workers left, a worker that joins gets the data, and a failed evaluation is
repeated on the workers alive, up to ``retries`` times. Every wait has a bound: an
evaluation takes at most ``timeout`` seconds (``LMNN(backend_timeout=...)``), a
cluster without a running worker is waited on for at most
:data:`~.dask_faults.GRACE` seconds, and a closed Client or a lost scheduler ends the
fit at once. Each ends in one :class:`DaskBackendError` that names the cause.
"""

from __future__ import annotations

import contextlib
import logging
import uuid

import numpy as np

from ...optim.deadline import NEVER
from ..constants import INLINE_BYTES, MAX_TASKS
from .dask_faults import CALL, Cluster, DaskBackendError, Watch, require_distributed
from .dask_traffic import Traffic, is_array
from .dask_worker import (
    blocks_terms,
    chunk_task,
    drop,
    group_sums,
    group_terms,
    rebuild,
    small_part,
)
from .data import group_blocks, plan_blocks

__all__ = ["MAX_TASKS", "DaskBackendError", "DaskExecutor", "dask_client"]

logger = logging.getLogger("convexmetric.lmnn")


class DaskExecutor:
    """Runs the block functions of :mod:`.stream` on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
    retries : int, default=5
        Failed attempts of one evaluation (workers lost, data missing) repeated, on the
        workers left and after sending the data again, before :class:`DaskBackendError`.
    timeout : float, default=3600
        Seconds one evaluation may take, its recoveries included, before
        :class:`DaskBackendError` (``LMNN(backend_timeout=...)``).
    threads : int, default=1
        Lanes of the client's own work on the active list (its distances and sums,
        ``LMNN(n_jobs=...)``); the blocks run on the workers.

    Notes
    -----
    The solver runs the same algorithm as with the in-process executor: the active
    list of the active-set mode stays in the client process (its arithmetic is
    O(list size) per evaluation); the full checks and exact objectives, O(n²d), run on
    the workers (:meth:`map_terms`, :meth:`map_blocks`), and so does everything in the
    streaming mode, which the solver enters only when the memory budget says so. What
    happens when workers, the scheduler or the Client fail: :mod:`.dask_faults`.
    """

    name = "dask"
    alarm = NEVER  #: the fit's time limit, checked while waiting for the workers

    def __init__(self, client, *, retries=5, timeout=3600.0, threads=1):
        self.client, self.threads = client, int(threads)
        self.retries, self.timeout = retries, timeout
        self.cluster = Cluster(client)
        self.evaluations = self.rescatters = self.keys_moved = self._checks = 0
        self.traffic = Traffic()  #: the payload bytes of each kind of map
        self._data = self._blocks = self._groups = None
        #: per task: (check, sorted keys of its violated triplets) at the last full check,
        #: and the worker that holds them
        self._known, self._where = {}, {}

    @staticmethod
    def plan_blocks(n, d, k, memory_limit=None):
        """:func:`~.data.plan_blocks`: every worker holds the same budget."""
        return plan_blocks(n, d, k, memory_limit)

    # -- data, shipped once per fit -----------------------------------------------
    def scatter(self, data):
        """Keep ``data`` (a :class:`~.data.StreamData`) for every worker's store.

        Returns a handle for :meth:`map_blocks`. The data goes to the running workers
        before the first evaluation, and again to any worker that joins or loses it."""
        self._data, self._blocks, self._known = data, None, {}
        handle = _Handle(uuid.uuid4().hex)
        self.cluster.put(handle.token, "data", data)
        return handle

    def _set_blocks(self, handle, blocks):
        self._blocks, self._known = blocks, {}
        self._groups = group_blocks(blocks, len(self._data.y))
        self.cluster.put(handle.token, "groups", self._groups)

    # -- one evaluation -----------------------------------------------------------
    def map_blocks(self, fn, blocks, data, *args, **kwargs):
        """``[fn(rows, data, *args, **kwargs) for rows in blocks]``, on the workers.

        ``args`` and ``kwargs`` are small (``L``, σ, flags). The row blocks are sent
        once per fit. Each task runs a group of consecutive blocks (module docstring)
        and returns their partial sums added (``fn`` returns a dict of numbers and
        arrays); the results come back in block order."""

        def run(watch):
            args_ = self._inline(args, watch)
            futures = [
                self.client.submit(group_sums, fn, data.token, g, *args_, pure=False, **kwargs)
                for g in range(len(self._groups))
            ]
            # a d×d sum (or, listing multipliers, a block's triplets) per task
            size = 2 * len(futures) * sum(getattr(a, "nbytes", 0) for a in args)
            if kwargs.get("triplets"):
                size = float("inf")
            parts = self.cluster.collect(futures, watch, size=size)
            self._moved("evaluation", args, len(futures), parts)
            return parts

        return self._retrying(data, blocks, run)

    def fold_blocks(self, fold, total, fn, blocks, data, *args, until=None, **kwargs):
        """:meth:`map_blocks`' results (a task's group already added) folded into
        ``total`` in block order (the local executor's contract); ``until``: the fold
        stops there (the tasks have all run)."""
        for part in self.map_blocks(fn, blocks, data, *args, **kwargs):
            total = fold(total, part)
            if until is not None and until(total):
                break
        return total

    def map_terms(self, fn, blocks, data, *args, max_terms=None, **kwargs):
        """The triplets of :func:`~.full_check.terms_block` over ``blocks``, per task
        (:func:`~.full_check.collect_terms` over its group of blocks).

        Deltas: a task sends the keys of its violated triplets added and removed since
        the set it reported at this executor's last completed check (the whole set if
        its worker does not hold that one: restarted, another worker, a check that
        overflowed); the executor keeps each task's set and rebuilds it, so the result
        does not depend on what travelled. A task's message travels at once if it holds
        at most its share ``max_terms / tasks`` of keys; larger ones stay in the
        worker's memory until the counts of all tasks are known. Past ``max_terms``
        violated triplets in all, it raises
        :class:`~convexmetric.problems.lmnn.TooManyTerms` and nothing more travels.

        With ``stale`` (a partial check; ``blocks`` the stale rows'), the blocks travel with
        their tasks (:func:`~.dask_worker.blocks_terms`), and each sends its triplets."""
        from ..terms import TooManyTerms

        if kwargs.get("stale") is not None:
            return self._partial_terms(fn, blocks, data, args, max_terms, kwargs)

        def run(watch):
            self._checks += 1
            futures, bound = self._submit_terms(fn, data, args, kwargs, max_terms, watch)
            share = None if max_terms is None else max_terms // len(futures)
            small = [self.client.submit(small_part, f, share, pure=False) for f in futures]
            # keys added and removed: 16 bytes a listed triplet at most (no budget: no bound
            # but the evaluation's)
            size = float("inf") if max_terms is None else 16 * max_terms
            parts = self.cluster.collect(small, watch, bound, size)
            if _over(parts, max_terms):
                self.cluster.release(futures)
                raise TooManyTerms(f"more than {max_terms} hinge terms")
            held = [g for g, p in enumerate(parts) if p.get("held")]
            if held:
                late = [futures[g] for g in held]
                late = self.cluster.collect(late, watch, [bound[g] for g in held], size)
                for g, part in zip(held, late):
                    parts[g] = part
            self._moved("check", args, len(futures), parts)
            return self._merge_terms(parts)

        return self._retrying(data, blocks, run)

    def _partial_terms(self, fn, blocks, data, args, max_terms, kwargs):
        """:meth:`map_terms` of a partial check: ``blocks`` (the stale rows', as the local
        executor gets them) travel grouped as the fit's are, the stale mask as ``L`` does;
        the tasks' triplets come back whole, in block order (the delta reports are the
        full checks')."""
        from ..terms import TooManyTerms

        stale = kwargs.pop("stale")
        # (a task per worker at least: the stale rows are few, their blocks small)
        groups = group_blocks(blocks, len(stale), least=max(2 * len(self.cluster.ready()), 1))

        def run(watch):
            args_ = self._inline((*args, stale), watch)
            task = (blocks_terms, fn, data.token)
            futures = [
                self.client.submit(*task, group, *args_, pure=False, max_terms=max_terms, **kwargs)
                for group in groups
            ]
            size = float("inf") if max_terms is None else 12 * max_terms  # three int32
            parts = self.cluster.collect(futures, watch, size=size)
            if _over(parts, max_terms):
                raise TooManyTerms(f"more than {max_terms} hinge terms")
            self._moved("partial_check", (*args, stale), len(futures), parts, blocks)
            return parts

        return self._retrying(data, None, run)

    def _submit_terms(self, fn, data, args, kwargs, max_terms, watch):
        """One task per group; each goes back to the worker that holds its last report
        if that worker runs and holds the data (else anywhere). Returns the futures and
        the worker each is bound to (or None)."""
        args_, ready = self._inline(args, watch), self.cluster.ready()
        bound = [self._where.get(g) for g in range(len(self._groups))]
        bound = [where if where in ready else None for where in bound]
        futures = []
        for g, where in enumerate(bound):
            place = {} if where is None else {"workers": [where], "allow_other_workers": True}
            base = self._known.get(g, (None,))[0]
            task = (group_terms, fn, data.token, g, *args_)
            futures.append(
                self.client.submit(
                    *task,
                    pure=False,
                    base=base,
                    epoch=self._checks,
                    max_terms=max_terms,
                    **kwargs,
                    **place,
                )
            )
        return futures, bound

    def _merge_terms(self, parts):
        """The whole check's triplets from the tasks' messages (deltas or full sets)."""
        epoch = self._checks
        known = {g: (epoch, rebuild(self._known.get(g), p)) for g, p in enumerate(parts)}
        self._known = known  # only once the whole check has arrived
        self._where = {g: p["worker"][0] for g, p in enumerate(parts) if p.get("worker")}
        self.keys_moved += sum(p["size"] for p in parts)
        T = self._data.targets
        n, k = T.shape
        out = []
        for _, keys in known.values():
            ij, l_ = np.divmod(keys, n)
            i, slot = np.divmod(ij, k)
            out.append({"I": i, "J": T[i, slot], "L": l_, "count": len(keys), "overflow": False})
        return out

    def _moved(self, kind, args, tasks, parts, once=()):
        """Count one map's payload (:meth:`.dask_traffic.Traffic.moved`)."""
        self.traffic.moved(kind, args, tasks, parts, len(self.cluster.ready()), once)

    def traffic_info(self):
        """``result_.info``'s round trips and bytes (:meth:`.dask_traffic.Traffic.info`)."""
        return self.traffic.info()

    def _retrying(self, handle, blocks, run):
        """``run(watch)`` until it succeeds (:mod:`.dask_faults`: the data sent first to
        the running workers that lack it; a failed attempt repeated up to ``retries``
        times, all within ``timeout`` seconds)."""
        if blocks is not None and self._blocks is not blocks:
            self._set_blocks(handle, blocks)
        self.evaluations += 1
        watch = Watch(self.timeout, self.alarm, self.retries, self.cluster)
        while True:
            try:
                if self.cluster.stale:
                    self.cluster.ensure(watch.seconds())
                watch.attempt(self.cluster)
                return run(watch)
            except Exception as exc:  # the cluster's faults are retried, others raised
                watch.failed(exc, self.cluster)
                self.rescatters += 1

    def map_chunks(self, fn, chunks, data, **kwargs):
        """``[fn(chunk, data, **kwargs) for chunk in chunks]``, one task per chunk (the
        chunks, e.g. blocks of test rows, travel with their tasks; ``data`` is in the
        workers' stores)."""

        def run(watch):
            futures = [
                self.client.submit(chunk_task, fn, data.token, c, pure=False, **kwargs)
                for c in chunks
            ]
            return self.cluster.collect(futures, watch)

        return self._retrying(data, None, run)

    def _inline(self, args, watch):
        """``args``, with arrays broadcast once if inlining them in every task is costly."""
        # L: inline in each task while that is cheap, else broadcast once
        inline = sum(getattr(a, "nbytes", 0) for a in args) * len(self._groups or [None])
        if inline <= INLINE_BYTES:
            return args
        return [
            self.client.scatter([a], broadcast=True, hash=False, timeout=watch.seconds())[0]
            if is_array(a)
            else a
            for a in args
        ]

    def release(self):
        """Nothing here: each task frees its thread's buffers on the worker."""

    def close(self, data):
        """Drop this fit's data from the workers' stores (else the next fits evict it).

        Best effort, within :data:`~.dask_faults.CALL` seconds: a cluster that failed
        has nothing left to drop, and its error (if any) was raised already."""
        try:
            self.cluster.call(self.client._run, drop, data.token, seconds=CALL)
        except Exception as exc:  # nothing to free on a failed cluster
            logger.info("could not drop the fit's data from the workers (%s)", exc)


def _over(parts, max_terms):
    """Whether the tasks' triplets (``parts``) overflowed or exceed ``max_terms`` in all."""
    count = sum(p["count"] for p in parts)
    return any(p["overflow"] for p in parts) or (max_terms is not None and count > max_terms)


class _Handle:
    """The token under which the workers store one fit's data."""

    def __init__(self, token):
        self.token = token


@contextlib.contextmanager
def dask_client(scheduler, owner="--scheduler", timeout=30):
    """A Client for the duration of a ``with`` block (the CLI's ``--scheduler``).

    ``scheduler``: an address (``tcp://host:8786``; the cluster is left running) or
    ``local:N`` (a LocalCluster of N worker processes with one thread each, closed at
    the end)."""
    distributed = require_distributed(owner)
    text = str(scheduler)
    if text.startswith("local:"):
        n = text.split(":", 1)[1]
        if not n.isdigit() or int(n) < 1:
            raise ValueError(
                f"The '{owner}' option must be an address (tcp://host:port) or local:N with "
                f"N an int in the range [1, inf). Got {text!r} instead."
            )
        with (
            distributed.LocalCluster(
                n_workers=int(n), processes=True, threads_per_worker=1, dashboard_address=":0"
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client
        return
    if "://" not in text:
        raise ValueError(
            f"The '{owner}' option must be an address (tcp://host:port) or local:N. "
            f"Got {text!r} instead."
        )
    try:
        client = distributed.Client(text, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ValueError(
            f"The '{owner}' option names {text!r}, but no Dask scheduler answered there "
            f"within {timeout} s ({exc})."
        ) from None
    with client:
        yield client
