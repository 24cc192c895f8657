"""Progress observers: who wants to hear about solver iterations, without printing.

The iterative drivers (projected subgradient, smoothing, refinements, SGD, block
coordinate descent, L-BFGS-B watchers) call :func:`notify` next to their own
``callback``. Nothing happens unless an observer was installed with :func:`observe`,
which is how the command line draws its progress line and how an estimator's
``verbose`` logging can be fed; library code never prints.

>>> seen = []
>>> with observe(lambda it, f, info: seen.append((it, f))):
...     notify(1, 2.5)
>>> seen
[(1, 2.5)]
>>> notify(2, 1.0)  # no observer: nothing happens
"""

from __future__ import annotations

import contextlib
import contextvars

_observer = contextvars.ContextVar("convexmetric_progress", default=None)


def notify(iteration, objective, **info):
    """Report one iteration (its objective; ``lower_bound=`` where known) to the observer."""
    cb = _observer.get()
    if cb is not None:
        cb(int(iteration), float(objective), info)


@contextlib.contextmanager
def observe(callback):
    """Install ``callback(iteration, objective, info)`` for the duration of the block."""
    token = _observer.set(callback)
    try:
        yield callback
    finally:
        _observer.reset(token)


__all__ = ["notify", "observe"]
