"""When an active list's oracle runs a full check (App. A.1), for one metric or several.

Between full checks an active-list oracle (:mod:`.active_list`, :mod:`.multi.oracle`)
evaluates only its listed triplets; App. A.1 re-checks all of them "every 10–20
iterations, depending on fluctuations of the active set", and at apparent convergence
(the drivers' :meth:`~convexmetric.optim.oracle.Oracle.check`). :class:`CheckSchedule`
decides which evaluations check first:

* a fixed period (``every`` calls), or none between the checks the drivers ask for
  themselves (``every=None``: the staged driver's before every stage and at its stop,
  for a list kept fixed while L-BFGS runs);
* ``adaptive``: from a start-up ramp 1, 2, 4, … the interval doubles after a check
  that found nothing new, up to a cap, and halves after new violations, not below
  ``every`` (LMNN's single metric).

>>> s = CheckSchedule(10)
>>> [c for c in range(25) if s.due(c) and s.checked(c) is None]
[0, 10, 20]
"""

from __future__ import annotations


class CheckSchedule:
    """Which calls of an active-list oracle run a full check first (see the module).

    Parameters
    ----------
    every : int or None
        Calls between full checks (adaptive: the least interval after new violations);
        ``None``: no check between those the drivers ask for.
    adaptive : bool
        Double the interval while checks find nothing new, halve it at new ones.
    """

    def __init__(self, every, *, adaptive=False):
        self.every, self.adaptive = every, adaptive
        self.interval = 1 if adaptive else every  #: calls from a check to the next
        self.next = 0  #: the first call that checks

    def due(self, calls):
        """Whether call number ``calls`` runs a full check first."""
        return self.every is not None and calls >= self.next

    def checked(self, calls, stable=True, cap=None):
        """Record the full check of call ``calls`` (``stable``: it found nothing new;
        ``cap``: the adaptive interval's largest value); sets the next check's call."""
        if self.adaptive:
            grow = cap if stable else max(self.interval // 2, self.every)
            self.interval = min(2 * self.interval, grow)
        self.next = calls + self.interval

    def ramp(self, calls):
        """Start again from the start-up ramp (adaptive; else the period) at call
        ``calls``: the list was found far from complete."""
        self.interval, self.next = (1 if self.adaptive else self.every), calls

    def now(self, calls):
        """The next call (number ``calls``) checks, whatever the interval."""
        self.next = calls

    def period(self, every, calls):
        """A fixed period from call ``calls`` on: every ``every`` calls from that call
        (``None``: none between the drivers' checks)."""
        self.every = self.interval = every
        self.next = calls


def check_cap(n, d, listed, check_every):
    """The largest check interval of an active list of ``listed`` terms over ``n × d`` data:
    ``max(2·check_every, flops(check)/flops(evaluation))`` (a deterministic cost model:
    ``n²d`` for a check, ``nd² + 3·listed·d`` for an evaluation), so that the checks cost
    at most about the evaluations between them and the result never depends on the
    machine's speed."""
    ratio = n * n * d / (n * d * d + 3 * listed * d + 1)
    return int(max(2 * check_every, min(ratio, 10_000)))
