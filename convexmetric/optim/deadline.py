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


class TimeUp(KeyboardInterrupt):
    """The time limit, reached inside a long step (a full check, a streaming pass, an
    evaluation): the drivers stop on it as on an interrupt, with their best point and
    the status "user_limit"."""


class Alarm:
    """A deadline that long steps check between their blocks: :meth:`check` raises
    :class:`TimeUp` once the time is up, and only once (then the alarm is off, so the
    drivers' closing work, such as the exact objective of their best point, runs).

    It rings :attr:`reserve` seconds early: the time the closing work will take, as the
    oracle last measured it (:meth:`reserve_for`), so that the fit ends by its limit rather than
    one pass after it.

    >>> Alarm(None).check() is None
    True
    """

    def __init__(self, seconds=None, start=None):
        self.deadline = Deadline(seconds)
        if start is not None:
            self.deadline.start = start
        self.on = seconds is not None
        self.reserve = 0.0  #: seconds kept for the closing work (:meth:`reserve_for`)

    def check(self):
        """Raise :class:`TimeUp` once fewer than :attr:`reserve` seconds are left (the
        first time only)."""
        if self.on and self.deadline.remaining() <= self.reserve:
            self.on = False
            raise TimeUp(f"time limit of {self.deadline.seconds} s reached")

    def reserve_for(self, seconds):
        """Reserve ``seconds`` for the closing work (the last measured duration of a step it
        repeats, such as a search over all triplets); a no-op once the alarm is off."""
        if self.on:
            self.reserve = float(seconds)

    def remaining(self):
        """Seconds left while on (may be negative), else ``None``."""
        return self.deadline.remaining() if self.on else None


#: an alarm that never rings (the default of the oracles and executors)
NEVER = Alarm(None)
