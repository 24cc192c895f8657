"""BLAS threads of the solvers: one by default, more on request.

On small matrices, multithreaded BLAS costs more than it buys (the solvers' products are
d×d blocks and gathers), and threads change the summation order, hence the last digits of
a result. So every solver runs its loop inside :func:`one_blas_thread`, which limits BLAS
to ``blas_threads`` threads: 1 unless set otherwise with :func:`set_config` or, for one
block of code, :func:`config_context` (on large dense problems, such as LMNN with a few
hundred features, more threads can pay)::

    import convexmetric
    convexmetric.set_config(blas_threads=4)           # every later fit
    with convexmetric.config_context(blas_threads=None):
        model.fit(X, y)                               # BLAS's own default, no limit

``threadpoolctl``'s ``threadpool_limits`` inspects every loaded library on *each* call,
which costs as much as a small solve; one :class:`ThreadpoolController`, created on first
use and reused, makes the switch cost microseconds.

**Fits in several threads.** A BLAS limit is the process's, not a thread's: a limit set
and restored by each fit on its own lets the first fit to end restore the original
limit under a fit still running (whose last digits then change), and the last to end
leave the process at its own limit. So the limit is one lease shared by the fits that
run at once: the first fit in sets it, fits asking for the same limit join, the last
one out restores the process's limit; a fit asking for another limit (``None``, no
limit, included) waits until the lease is free, so every fit runs under its own limit
from start to end and gives the result it gives alone. A fit nested in another, in the
same thread, runs under the outer one's limit. Code outside convexmetric that runs
BLAS in other threads meanwhile sees the lease's limit.

>>> get_config()["blas_threads"]
1
>>> with config_context(blas_threads=2):
...     get_config()["blas_threads"]
2
"""

from __future__ import annotations

import contextlib
import threading

from ._input_checks import check_scalar

_CONTROLLER = []
_CONTROLLER_LOCK = threading.Lock()
#: the settings of each thread (as scikit-learn's: a thread starts from the defaults)
_LOCAL = threading.local()
_DEFAULTS = {"blas_threads": 1}


def _config():
    if not hasattr(_LOCAL, "config"):
        _LOCAL.config = dict(_DEFAULTS)
    return _LOCAL.config


def get_config():
    """Return the settings of the calling thread.

    Returns
    -------
    dict
        ``{"blas_threads": int or None}`` (a copy).
    """
    return dict(_config())


def set_config(*, blas_threads=1):
    """Set the BLAS threads the solvers use (``None``: no limit, BLAS's own default).

    Parameters
    ----------
    blas_threads : int or None, default=1
        Threads of the BLAS library during a fit's solver loop.
    """
    if blas_threads is not None:
        blas_threads = check_scalar(
            blas_threads, "blas_threads", int, min_val=1, owner="set_config"
        )
    _config()["blas_threads"] = blas_threads


@contextlib.contextmanager
def config_context(*, blas_threads=1):
    """Within the block, use ``blas_threads`` BLAS threads (see :func:`set_config`).

    Parameters
    ----------
    blas_threads : int or None, default=1
        Threads of the BLAS library during a fit's solver loop (``None``: no limit).

    Yields
    ------
    None
        The block runs with the setting; the previous one comes back after it.
    """
    old = get_config()
    set_config(blas_threads=blas_threads)
    try:
        yield
    finally:
        _config().update(old)


class _Lease:
    """The process's BLAS limit, held by the fits that run at once (module doc)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._limit = None  # the limit of the fits holding the lease
        self._holders = {}  # thread id -> depth of its nested holds
        self._limiter = None  # threadpoolctl's, to restore the original limits

    @contextlib.contextmanager
    def hold(self, n):
        me = threading.get_ident()
        with self._cond:
            if me not in self._holders:
                self._cond.wait_for(lambda: not self._holders or self._limit == n)
                if not self._holders:
                    self._limit = n
                    if n is not None:
                        with _in_control():
                            self._limiter = _controller().limit(limits=n, user_api="blas")
            self._holders[me] = self._holders.get(me, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                self._holders[me] -= 1
                if not self._holders[me]:
                    del self._holders[me]
                if not self._holders:
                    if self._limiter is not None:
                        with _in_control():
                            self._limiter.restore_original_limits()
                    self._limiter = None
                    self._cond.notify_all()


_LEASE = _Lease()


@contextlib.contextmanager
def _in_control():
    """Make this thread the one allowed to change a process-wide OpenBLAS, for one change.

    threadpoolctl (from 3.8) lets only a "controlling" thread, the first to set a limit,
    change an OpenBLAS without OpenMP; the others' calls silently do nothing, so a fit
    in any thread but that one would run under no limit, and the last fit out could not
    restore the process's. The lease serialises convexmetric's changes: take control
    for the change, then give it back to whoever sets a limit next.
    """
    import threadpoolctl

    openblas = getattr(threadpoolctl, "OpenBLASController", None)
    clear = getattr(openblas, "clear_controlling_thread", None)
    if clear is None:  # before 3.8: any thread may change the limit
        yield
        return
    clear(force=True)
    try:
        yield
    finally:
        clear()


def _controller():
    with _CONTROLLER_LOCK:
        if not _CONTROLLER:
            import scipy.linalg  # noqa: F401  (load scipy's BLAS before the snapshot)
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def one_blas_thread():
    """A context manager running its block under ``blas_threads`` BLAS threads (1 by
    default; ``None``: the process's own), shared with the fits of other threads."""
    return _LEASE.hold(_config()["blas_threads"])
