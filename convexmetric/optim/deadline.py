"""Wall-clock budgets: one object instead of a hand-written check in every loop.

>>> d = Deadline(None)
>>> d.expired(), d.remaining() is None
(False, True)
>>> Deadline(0.0).expired()
True
"""

from __future__ import annotations

import time


class Deadline:
    """``seconds`` from now (``None``: never). :meth:`child` gives what is left."""

    def __init__(self, seconds=None):
        self.start = time.perf_counter()
        self.seconds = None if seconds is None else float(seconds)

    def elapsed(self):
        """Seconds since the deadline was set."""
        return time.perf_counter() - self.start

    def remaining(self):
        """Seconds left (may be negative), or ``None`` without a limit."""
        return None if self.seconds is None else self.seconds - self.elapsed()

    def expired(self):
        """Whether the time is up."""
        return self.seconds is not None and self.elapsed() >= self.seconds

    def child(self, seconds=None):
        """A deadline ending at ``seconds`` from now or at this one, whichever is first."""
        left = self.remaining()
        if seconds is None:
            return Deadline(left)
        return Deadline(seconds if left is None else min(seconds, left))
