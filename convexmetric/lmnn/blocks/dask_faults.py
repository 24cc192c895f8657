"""What LMNN's Dask executor does when the cluster fails: the contract (issue 67).

:class:`~.dask_executor.DaskExecutor` runs each evaluation (a full check, an exact
objective, a streaming pass's sums, the test rows of a prediction) as *attempts* under a
:class:`Watch`, through :class:`Cluster`, its view of the cluster. The executor asks
three things of this module: :meth:`Cluster.ensure` before an attempt (the data on every
running worker), :meth:`Cluster.collect` for an attempt's tasks, and
:meth:`Watch.failed` when an attempt raised. The promises:

Bounded. Every wait on the cluster has a bound. Tasks are awaited in slices of
:data:`POLL` seconds, with a look at the cluster between slices. Each control call
(membership, data sent, results gathered) must answer within :data:`CALL` seconds, and
one more second per :data:`RATE` bytes it moves. One
evaluation, its recoveries included, must end within the executor's ``timeout``
(``LMNN(backend_timeout=...)``), else :class:`DaskBackendError`. The fit's own
``time_limit`` ends the wait too (:class:`~convexmetric.optim.deadline.TimeUp`).

Worker loss. A lost worker is never waited on. Dask reruns its tasks on the workers
left, which hold the data (every worker gets a copy). The executor binds a task only
to a worker it saw running with the data; a task bound to a worker that left (Dask
would keep it waiting forever, even once new workers join) is submitted again on the
workers alive. A worker that joins (a nanny's restart, a scale-up) gets the data at the
next look at the cluster, or once one of its tasks reports
:class:`~.dask_worker.WorkerDataMissing`. These are recoveries, not failures.

Limits. An evaluation raises once the cluster lost workers more than ``retries`` times
while it ran, or once it failed otherwise (data gone from a worker that held it, tasks
cancelled by ``client.restart()``, a control call unanswered) more than ``retries``
times. Losses come in waves: a worker that leaves is a new loss unless it was in the
cluster, before and after, at the look that counted the last loss (the workers of one
restart leave over several looks at the cluster, some before they received the data: one
loss; a worker that dies each time it receives the data is new each time: a loss each
time). With no running worker (all lost, or all paused above their memory threshold) it
waits at most :data:`GRACE` seconds (or its ``timeout``, if shorter) for one. A task
that Dask gave up on because workers kept dying while they ran it (``KilledWorker``)
raises at once. Workers that keep dying have usually run out of memory: the errors say
so, with the workers' memory and limits as last seen.

Client and scheduler. A Client closed during the fit, or a lost connection to the
scheduler (killed, restarted, unreachable: the Client is "connecting"), raises at
once: the workers' data and the tasks went with the scheduler's state.
``client.restart()`` is a worker loss: the data is sent again and the attempt repeated.

Results. A failed attempt leaves nothing behind. Each task is a pure function of the
data and the attempt's arguments, and the client adds the partial sums in block order.
So a fit that recovers is the same, bit for bit, as one without faults.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time

from ..constants import CALL, GRACE, POLL, RATE
from .dask_worker import WorkerDataMissing, store_all

logger = logging.getLogger("convexmetric.lmnn")

#: worker states that take the data (``init``: registered, not yet running tasks)
ALIVE = ("init", "running", "paused")


def require_distributed(owner):
    """``dask.distributed``, or ValueError naming ``owner`` and the extra to install."""
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise ValueError(
            f"The 'backend' parameter of {owner} is 'dask', which needs dask.distributed: "
            "pip install 'convexmetric[dask]'."
        ) from exc
    return distributed


class DaskBackendError(RuntimeError):
    """LMNN's block work on the Dask cluster cannot go on; the message says why."""


class Stranded(RuntimeError):
    """Tasks bound to workers that left (Dask would keep them waiting), or a call to a
    worker that left (it would wait for the address to answer)."""


class _Abandoned(Exception):
    """A control call given up on: what it waited for went away."""


def is_fault(exc):
    """Whether ``exc`` is the cluster's (lost workers or data, closed comms), not a block
    function's error."""
    import distributed

    kinds = [WorkerDataMissing, Stranded, distributed.KilledWorker, distributed.CancelledError]
    kinds += [OSError, TimeoutError, asyncio.TimeoutError]  # CommClosedError is an OSError
    return isinstance(exc, tuple(kinds))


def _mb(value):
    return f"{value / 2**20:.0f} MiB"


class Cluster:
    """The executor's view of the cluster: the running workers and what they hold.

    ``items`` (key -> value) go to every running worker's store under ``token``;
    ``holders[key]`` are the workers known to hold ``items[key]``."""

    def __init__(self, client):
        self.client = client
        self.token, self.items, self.holders = None, {}, {}
        self.workers = {}  #: address -> the scheduler's identity of it, at the last look
        self.seen = {}  #: the same, at the last look that saw workers
        self.stale = True  #: look at the cluster before the next attempt
        self.lost = 0  #: workers that left while this executor used the cluster
        self.losses = 0  #: waves of workers lost (a restart of all: one loss)
        self.wave = set()  #: the workers that outlived the look counting the last loss

    def put(self, token, key, value):
        """Keep ``value`` under ``key`` on every worker (sent by :meth:`ensure`)."""
        if token != self.token:
            self.token, self.items, self.holders = token, {}, {}
        self.items[key], self.holders[key] = value, set()
        self.stale = True

    def ready(self):
        """The running workers that hold every item."""
        ok = {a for a, w in self.workers.items() if w.get("status") == "running"}
        for held in self.holders.values():
            ok &= held
        return ok

    def forget(self, address):
        """``address`` lost its data (restarted at the same address): send it again."""
        for held in self.holders.values():
            held.discard(address)
        self.stale = True

    # -- bounded calls --------------------------------------------------------------
    def check_client(self):
        """:class:`DaskBackendError` if the Client is closed or lost its scheduler."""
        status = str(getattr(self.client, "status", "closed"))
        if status in ("closing", "closed") or getattr(self.client, "scheduler", None) is None:
            raise DaskBackendError(
                "The Dask Client was closed during LMNN's fit: its block work cannot go on "
                "on the Dask cluster. Keep the Client open until fit returns, or use "
                "backend='local'."
            )
        if status != "running":
            where = getattr(getattr(self.client, "scheduler", None), "address", "?")
            raise DaskBackendError(
                f"LMNN lost its connection to the Dask scheduler at {where} (the Client is "
                f"{status!r}): the scheduler was killed, restarted or cannot be reached, and "
                "the cluster's state went with it. Fit again once the cluster is back, or "
                "use backend='local'."
            )

    def call(self, fn, *args, seconds, abandon=None, **kwargs):
        """``fn(*args, **kwargs)``, a coroutine function of the Client, answered within
        ``seconds``. Every :data:`POLL` seconds the Client is checked, and the call is
        given up (:class:`_Abandoned`) once ``abandon()`` is true."""
        self.check_client()
        task = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), self.client.loop.asyncio_loop)
        end = time.monotonic() + seconds
        try:
            while True:
                concurrent.futures.wait([task], timeout=max(min(POLL, end - time.monotonic()), 0))
                if task.done():
                    return task.result()
                self.check_client()
                if time.monotonic() >= end:
                    raise TimeoutError(
                        f"a call to the Dask cluster had no answer in {seconds:.3g} s"
                    )
                if abandon is not None and abandon():
                    raise _Abandoned()
        except BaseException:
            task.cancel()
            self.check_client()  # the Client or its scheduler went away meanwhile: say so
            raise

    def look(self, seconds):
        """The running workers' addresses (the scheduler asked, within ``seconds``)."""
        info = self.call(self.client.scheduler.identity, seconds=seconds)["workers"]
        gone = set(self.workers) - set(info)
        # a new loss, unless every worker gone outlived the look that counted the last
        # one: it belongs to that wave (a restart's workers leave over several looks)
        if gone - self.wave:
            self.losses += 1
            self.wave = set(self.workers) & set(info)
        self.lost += len(gone)
        for address in gone:
            self.forget(address)  # (a worker back at the same address has nothing)
        self.workers = dict(info)
        if info:
            self.seen = dict(info)
        return {a for a, w in info.items() if w.get("status") == "running"}

    def ensure(self, seconds):
        """Look at the cluster and send the items to the live workers that lack them, all
        of a worker's in one message; return the running workers. A send is given up
        (:class:`Stranded`) once one of its workers has left: the scheduler would wait
        for the dead address to answer."""
        from dask.sizeof import sizeof

        running = self.look(seconds)
        wants = {}  # the keys a worker lacks -> the workers that lack them
        for address, w in self.workers.items():
            keys = tuple(k for k in self.items if address not in self.holders[k])
            if keys and w.get("status") in ALIVE:
                wants.setdefault(keys, []).append(address)
        for keys, workers in wants.items():
            items = {k: self.items[k] for k in keys}
            try:
                got = self.call(
                    self.client._run,
                    store_all,
                    self.token,
                    items,
                    workers=workers,
                    on_error="return",
                    seconds=seconds + sizeof(items) * len(workers) / RATE,
                    abandon=lambda w=tuple(workers): not set(w) <= set(self.look(seconds)),
                )
            except _Abandoned:
                raise Stranded("a worker left while the data was sent to it") from None
            for address, answer in got.items():
                if not isinstance(answer, BaseException):
                    for k in keys:
                        self.holders[k].add(address)
        self.stale = False
        return running

    def collect(self, futures, watch, bound=None, size=0):
        """The futures' results, waited for in slices with a look at the cluster between.

        ``bound[i]``: the worker future ``i``'s task is bound to (or None). Raises
        :class:`Stranded` if a pending task is bound to a worker that left. ``size``:
        about how many bytes the results take (they are granted :data:`RATE`)."""
        import distributed

        while True:
            try:
                distributed.wait(futures, timeout=max(min(POLL, watch.left()), 0.01))
            except distributed.TimeoutError:
                watch.check(self)
                running = self.ensure(watch.seconds())
                pending = [b for f, b in zip(futures, bound or ()) if f.status == "pending"]
                if any(b is not None and b not in running for b in pending):
                    raise Stranded("tasks bound to workers that left the cluster") from None
                watch.idle(self, running)
                continue
            # given up on if a result is lost with its worker (Dask computes it again)
            lost = lambda: any(f.status != "finished" for f in futures)  # noqa: E731
            try:
                return self.call(
                    self.client._gather, futures, seconds=watch.seconds(size), abandon=lost
                )
            except _Abandoned:
                watch.check(self)

    def release(self, futures):
        """Forget ``futures`` (their tasks are dropped once no one wants them)."""
        for f in futures:
            try:
                f.release()
            except Exception:  # a closed Client has released them already
                logger.debug("future %s not released", f.key)

    def picture(self):
        """The workers at the last look (or the last seen), with their memory, and the
        workers lost, for an error message."""
        lost = f"{self.lost} worker(s) lost during the fit"
        if not self.seen:
            return f"no worker was seen; {lost}"
        parts = []
        for w in self.seen.values():
            used = (w.get("metrics") or {}).get("memory")
            limit = w.get("memory_limit") or 0
            limit = _mb(limit) if limit else "no limit"
            parts.append(f"{w.get('status', '?')}, memory {_mb(used) if used else '?'} of {limit}")
        when = "at the last look" if self.workers else "when last seen"
        return f"{lost}; {len(parts)} worker(s) {when}: " + "; ".join(parts)


class Watch:
    """One evaluation's bounds: ``timeout`` seconds in all (the fit's ``alarm`` too) and
    ``retries`` failed attempts."""

    def __init__(self, timeout, alarm, retries, cluster):
        self.timeout, self.alarm, self.retries = float(timeout), alarm, retries
        self.start = time.monotonic()
        self.failures = []
        self.idle_since = None  #: since when no worker runs
        self.losses = cluster.losses  #: the cluster's losses before this evaluation
        self.holders = set()  #: the workers that held the data when the attempt began

    def attempt(self, cluster):
        """A new attempt begins: note which workers hold the data."""
        self.holders = cluster.ready()

    def left(self):
        """Seconds left to this evaluation."""
        left = self.timeout - (time.monotonic() - self.start)
        alarm = self.alarm.remaining()
        return left if alarm is None else min(left, alarm)

    def seconds(self, size=0):
        """The bound of one control call now (moving about ``size`` bytes)."""
        return max(min(CALL + size / RATE, self.left()), 0.01)

    def check(self, cluster):
        """The fit's time limit (TimeUp), this evaluation's ``timeout``, its lost workers."""
        self.alarm.check()
        losses = cluster.losses - self.losses
        if losses > self.retries:
            raise DaskBackendError(
                f"The Dask cluster lost workers {losses} times during one of LMNN's block "
                f"evaluations (more than {self.retries}): workers that keep dying while they "
                f"hold LMNN's data or run its tasks have usually run out of memory "
                f"({cluster.picture()}). "
                "Give the workers more memory, check what stops them, or use backend='local'."
            )
        if time.monotonic() - self.start >= self.timeout:
            raise DaskBackendError(
                f"LMNN's block evaluation on the Dask cluster did not finish within "
                f"{self.timeout:g} s (LMNN's 'backend_timeout'); {cluster.picture()}. "
                "Are the workers busy with other work? Raise 'backend_timeout', or use "
                "backend='local'."
            )

    def idle(self, cluster, running):
        """Raise once no worker has run for :data:`GRACE` seconds (or ``timeout``)."""
        if running:
            self.idle_since = None
            return
        now = time.monotonic()
        self.idle_since = now if self.idle_since is None else self.idle_since
        grace = min(GRACE, self.timeout)
        if now - self.idle_since >= grace:
            paused = [w for w in cluster.workers.values() if w.get("status") == "paused"]
            why = "the cluster has no worker left"
            if paused:
                why = "every worker is paused: its memory is above Dask's pause threshold"
            elif cluster.lost:
                why += " (workers that die while they hold LMNN's data or run its tasks have "
                why += "usually run out of memory)"
            raise DaskBackendError(
                f"No Dask worker could run LMNN's block tasks for {grace:g} s: {why}; "
                f"{cluster.picture()}. Restart or add workers (with more memory), or use "
                "backend='local'."
            )

    def failed(self, exc, cluster):
        """Account for an attempt that raised ``exc``: return to try again, or raise
        :class:`DaskBackendError` (``exc`` itself if it is not the cluster's)."""
        if isinstance(exc, DaskBackendError):
            raise exc
        cluster.check_client()  # a closed Client, a lost scheduler: not worth a retry
        if not is_fault(exc):
            raise exc
        import distributed

        if isinstance(exc, distributed.KilledWorker):
            raise DaskBackendError(
                f"Dask workers kept dying while they ran LMNN's block tasks ({_text(exc)}). "
                f"Workers that die in these tasks usually ran out of memory: "
                f"{cluster.picture()}. Give the workers more memory, or use backend='local'."
            ) from exc
        cluster.stale = True
        self.check(cluster)
        if isinstance(exc, Stranded) or _newcomer(exc, self.holders):
            return  # a lost worker (counted as such) or one that joined: not a failure
        if isinstance(exc, WorkerDataMissing):
            cluster.forget(exc.address)
        self.failures.append(_text(exc))
        if len(self.failures) > self.retries:
            raise DaskBackendError(
                f"LMNN's block evaluation on the Dask cluster failed {len(self.failures)} "
                f"times ({'; '.join(self.failures[-3:])}): the cluster kept losing workers or "
                f"their data ({cluster.picture()}). Check the workers, or use backend='local'."
            ) from exc
        logger.warning("Dask evaluation failed (%s); trying again", self.failures[-1])


def _newcomer(exc, holders):
    """Whether ``exc`` says a worker had no data because it had not received it when the
    attempt began (it joined since), not because it lost it."""
    return isinstance(exc, WorkerDataMissing) and exc.address not in holders


def _text(exc):
    """``exc`` in one short line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"
