"""Generic projected-subgradient driver.

Minimises a convex function ``f`` over a closed convex set ``C`` given

* an *oracle* ``oracle(x) -> (f(x), g)`` with ``g`` a subgradient of ``f`` at ``x``;
* a *cone* (any :class:`convexmetric.cones.Cone`) whose ``project`` is the Euclidean
  projection onto ``C``.

Iterates are arrays or lists of arrays (one block per matrix). Two step rules:

``"adaptive"``
    Weinberger & Saul (2009), App. A.3: after a step that lowers the objective the
    step size grows by ``grow`` (1.01); after one that raises it, the step is undone
    and the step size shrinks by ``shrink`` (0.5). Monotone in the objective.
``"diminishing"``
    The classical normalised rule ``α_t = α₀ / (‖g_t‖ √(t+1))``; not monotone, the
    best iterate is kept.

Stopping: the best objective improves by less than ``rtol`` (relative) over
``patience`` iterations (a stall: ``info["stop"] == "stall"``), the step size falls
below ``min_step`` (a stall too), ``max_iter`` iterations (``"max_iter"``), or
``time_limit`` seconds (``"time_limit"``). The driver has no lower bound, so it never
says "optimal": a stall or ``max_iter`` gives "optimal_inaccurate" (a caller with a
certificate sets the status from it, :func:`convexmetric.result.certified_status`).

An oracle may approximate ``f`` (LMNN checks
only an active set between full checks); if it has a method ``check(x) -> bool``, the
driver calls it at apparent convergence, and when it returns ``False`` (new
violations were found, the oracle updated itself) the run continues from the best
iterate: the "final check ... restarts" of App. A.1. A ``KeyboardInterrupt`` returns
the best iterate with status ``"user_limit"`` when it is the time limit's
(:class:`.deadline.TimeUp`, raised inside a long step); a real ``KeyboardInterrupt``
(Ctrl-C) propagates, as in scikit-learn: a fit the user stopped is no result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..progress import notify
from ..result import SolveResult
from . import vectors
from .constants import NORM_FLOOR, REL_FLOOR, RESTART_STEP_FLOOR
from .deadline import Deadline, TimeUp
from .oracle import Oracle


@dataclass(kw_only=True)
class SubgradientSettings:
    """Settings of :func:`projected_subgradient` (documented defaults)."""

    max_iter: int = 5000
    step: float | None = None  #: initial step; default ``step_scale·max(1,‖x₀‖)/‖g₀‖``
    step_scale: float = 0.1  #: relative size of the first step when ``step`` is None
    step_rule: str = "adaptive"  #: "adaptive" (×grow / ×shrink) or "diminishing"
    grow: float = 1.01
    monotone: bool = True  #: adaptive rule: undo a step that raised the objective
    shrink: float = 0.5
    rtol: float = 1e-8  #: relative improvement over `patience` iterations that ends the run
    patience: int = 100
    min_step: float = 1e-12  #: relative to the initial step
    time_limit: float | None = None  #: seconds
    max_restarts: int = 50  #: oracle checks that may reopen the run
    callback: object = None  #: called as callback(iteration, objective, step) ; True stops


def projected_subgradient(oracle, x0, cone, settings=None, *, solver_name="subgradient", **kw):
    """Run projected subgradient descent; return a :class:`SolveResult`.

    Parameters
    ----------
    oracle : callable
        ``oracle(x) -> (f, g)``; optionally with ``check(x) -> bool`` (see module doc)
        and ``objective(x) -> float`` (the exact objective, used for the final report).
    x0 : ndarray or list of ndarray
        Starting point (projected first).
    cone : Cone
        The feasible set.
    settings : SubgradientSettings, optional
        Or keyword arguments of the same names.

    Examples
    --------
    >>> import numpy as np
    >>> from convexmetric.cones import NonnegativeOrthant
    >>> f = lambda x: (float(np.abs(x - 2).sum()), np.sign(x - 2))
    >>> res = projected_subgradient(f, np.zeros(3), NonnegativeOrthant(), max_iter=2000)
    >>> bool(np.allclose(res.matrix, 2, atol=1e-3)), res.status
    (True, 'optimal_inaccurate')
    """
    s = settings if settings is not None else SubgradientSettings(**kw)
    if settings is not None and kw:
        raise TypeError("pass either settings or keyword arguments, not both")
    if s.step_rule not in ("adaptive", "diminishing"):
        raise ValueError(f"step_rule must be 'adaptive' or 'diminishing'; got {s.step_rule!r}")
    run = _Run(oracle if isinstance(oracle, Oracle) else _Plain(oracle), cone, s)
    status = run.loop(x0)
    o = run.oracle
    final = float(run.best_f) if isinstance(o, _Plain) else float(o.objective(run.best_x))
    best_x = run.best_x
    info = {
        "restarts": run.restarts,
        "final_step": float(run.alpha),
        "step_rule": s.step_rule,
        "stop": run.stop,
    }
    history = run.history
    if o.version is not None:  # an approximating oracle: its values are not objectives
        info["approx_history"], history = history, [final]
    return SolveResult(
        matrix=None if isinstance(best_x, list) else best_x,
        matrices=best_x if isinstance(best_x, list) else [best_x],
        objective=final,
        status=status,
        iterations=run.it,
        seconds=run.clock.elapsed(),
        solver=solver_name,
        history=history,
        info=info,
    )


class _Plain(Oracle):
    """A bare function ``x -> (f, g)`` as an oracle (its values are exact)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x, components=None):
        return self.fn(x)


class _Run:
    """The state of one run of :func:`projected_subgradient`."""

    def __init__(self, oracle, cone, settings):
        self.oracle, self.cone, self.s = oracle, cone, settings
        self.clock = Deadline(settings.time_limit)
        self.it, self.restarts, self.since = 0, 0, 0
        self.stop = None  #: why the run ended (``info["stop"]``)

    def start(self, x0):
        s, o = self.s, self.oracle
        self.x = self.cone.project(vectors.copy(x0))
        self.f, self.g = o(self.x)
        self.gnorm = vectors.norm(self.g)
        scale = s.step_scale * max(1.0, vectors.norm(self.x)) / max(self.gnorm, NORM_FLOOR)
        self.alpha0 = s.step if s.step is not None else scale
        self.alpha = self.alpha0
        self.best_x, self.best_f = vectors.copy(self.x), self.f
        self.history = [float(self.f)]
        self.ref_f = self.f  # best objective `patience` iterations ago

    def loop(self, x0):
        """Iterate until a stopping rule; return the status."""
        s = self.s
        self.start(x0)
        try:
            while self.it < s.max_iter:
                self.it += 1
                converged = True if self.gnorm == 0.0 else self.step()
                notify(self.it, self.f)
                if s.callback is not None and s.callback(self.it, float(self.f), float(self.alpha)):
                    self.stop = "callback"
                    return "user_limit"
                if converged:
                    if self.restarts < s.max_restarts and not self.oracle.check(self.best_x):
                        self.restart()
                        continue
                    self.stop = "stall"  # no bound here: a stall certifies nothing
                    return "optimal_inaccurate"
                if self.clock.expired():
                    self.stop = "time_limit"
                    return "user_limit"
        except TimeUp:  # the time limit inside a long step; Ctrl-C propagates
            self.stop = "time_limit"
            return "user_limit"
        self.stop = "max_iter"
        return "optimal_inaccurate"

    def step(self):
        """One step of the rule; whether the run has converged."""
        s, o = self.s, self.oracle
        diminishing = s.step_rule == "diminishing"
        step = self.alpha0 / (self.gnorm * np.sqrt(self.it)) if diminishing else self.alpha
        x_new = self.cone.project(vectors.axpy(self.x, -step, self.g))
        version = o.version
        f_new, g_new = o(x_new)
        changed = version is not None and o.version != version
        if changed:  # the oracle's approximation changed: compare like with like
            self.f, self.g = o(self.x)
            self.best_f = o(self.best_x)[0]
        if diminishing:
            self.x, self.f, self.g = x_new, f_new, g_new
        elif f_new <= self.f:
            self.x, self.f, self.g, self.alpha = x_new, f_new, g_new, self.alpha * s.grow
        else:
            self.alpha *= s.shrink
            if not s.monotone:
                self.x, self.f, self.g = x_new, f_new, g_new
        if changed and not np.isfinite(f_new):
            self.back_to_seen()
        self.gnorm = vectors.norm(self.g)
        if self.f < self.best_f:
            self.best_x, self.best_f = vectors.copy(self.x), self.f
        self.history.append(float(self.f))
        self.since += 1
        converged = self.alpha < s.min_step * self.alpha0 and not diminishing
        if self.since >= s.patience:
            gain = self.ref_f - self.best_f
            converged = converged or gain <= s.rtol * max(abs(self.best_f), REL_FLOOR)
            self.ref_f, self.since = self.best_f, 0
        return converged

    def back_to_seen(self):
        """The oracle refused a trial point (``inf``: past its cap or its list's budget)
        and changed its approximation. Its values are lower bounds, exact where it listed
        every term: when the current point's re-evaluated value rose above the least exact
        value the oracle has seen (``best_seen``), that point is better (the approximation
        had hidden the rise): go back there (beyond the rounding of the oracle's values)."""
        seen = self.oracle.best_seen
        if seen is None or not seen[0] < self.f - self.oracle.trial_rtol * abs(self.f):
            return
        if np.array_equal(vectors.flatten(seen[1]), vectors.flatten(self.x)):
            return  # (the same point, its value rounded)
        self.x = self.cone.project(vectors.copy(seen[1]))
        self.f, self.g = self.oracle(self.x)
        if self.f < self.best_f:
            self.best_x, self.best_f = vectors.copy(self.x), self.f

    def restart(self):
        """The oracle's check found new terms: continue from the best point (App. A.1)."""
        self.restarts += 1
        self.x = vectors.copy(self.best_x)
        self.f, self.g = self.oracle(self.x)
        self.best_f, self.gnorm = self.f, vectors.norm(self.g)
        self.alpha = max(self.alpha, self.alpha0 * RESTART_STEP_FLOOR)
        self.ref_f, self.since = self.f, 0
