"""One BLAS thread for the solvers' many small products.

On small matrices, multithreaded BLAS costs more than it buys (2–5× slower on this
project's 2-core reference machine, worse on a busy one). ``threadpoolctl``'s
``threadpool_limits`` inspects every loaded library on *each* call (about 4 ms), which
is as long as a whole diagonal-LP solve; one :class:`ThreadpoolController`, created on
first use and reused, makes the switch cost microseconds.
"""

from __future__ import annotations

_CONTROLLER = []


def one_blas_thread():
    """A context manager limiting BLAS to one thread (a reused ThreadpoolController)."""
    if not _CONTROLLER:
        import scipy.linalg  # noqa: F401  (load scipy's BLAS before the snapshot)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
