"""One BLAS thread for the solvers' many small products.

On small matrices, multithreaded BLAS costs more than it buys (it synchronises threads
on every small product, worse on a busy machine). ``threadpoolctl``'s
``threadpool_limits`` inspects every loaded library on *each* call, which can take as
long as a whole diagonal-LP solve; one :class:`ThreadpoolController`, created on
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
