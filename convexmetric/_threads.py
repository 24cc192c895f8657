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

>>> get_config()["blas_threads"]
1
>>> with config_context(blas_threads=2):
...     get_config()["blas_threads"]
2
"""

from __future__ import annotations

import contextlib

from ._validation import check_scalar

_CONTROLLER = []
_CONFIG = {"blas_threads": 1}


def get_config():
    """Return the package's settings: ``{"blas_threads": int or None}`` (a copy)."""
    return dict(_CONFIG)


def set_config(*, blas_threads=1):
    """Set the BLAS threads the solvers use (``None``: no limit, BLAS's own default).

    Parameters
    ----------
    blas_threads : int or None, default=1
        Threads of the BLAS library during a fit's solver loop.
    """
    if blas_threads is not None:
        blas_threads = check_scalar(blas_threads, "blas_threads", int, min_val=1,
                                    owner="set_config")  # fmt: skip
    _CONFIG["blas_threads"] = blas_threads


@contextlib.contextmanager
def config_context(*, blas_threads=1):
    """Within the block, use ``blas_threads`` BLAS threads (see :func:`set_config`)."""
    old = get_config()
    set_config(blas_threads=blas_threads)
    try:
        yield
    finally:
        _CONFIG.update(old)


def one_blas_thread():
    """A context manager limiting BLAS to ``blas_threads`` threads (1 by default)."""
    n = _CONFIG["blas_threads"]
    if n is None:
        return contextlib.nullcontext()
    if not _CONTROLLER:
        import scipy.linalg  # noqa: F401  (load scipy's BLAS before the snapshot)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=n, user_api="blas")
