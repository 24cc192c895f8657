"""The staged smoothed solver: every refinement, polish and continuation of the project.

Each hinge ``max(0, z)`` of a convex formulation is replaced by its smoothing
``φ_σ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²`` around a prox centre ``λ̄`` (a Huber
function when ``λ̄ = 0``), whose gradient weighs every term by ``λ = clip(λ̄ + z/σ, 0, 1)``.
The driver minimises ``f_σ`` stage by stage with an *inner method* (L-BFGS in a
parametrisation, :mod:`.lbfgs`, or FISTA over a cone, :mod:`.fista`). After every stage
it evaluates the exact objective (the best point is kept), asks the oracle for a
certified lower bound (:meth:`.Oracle.bound`), and then either stops or moves on:

* **certified stop**: the relative gap ``(best − bound)/|best|`` is within ``tol``;
* **stalls**: the best exact objective improved by less than ``rtol`` (relative) in
  ``stalls`` stages in a row (with a fixed σ, only once σ has shrunk to
  ``stall_sigma·σ₀``), or a stage stalled at ``sigma_min``;
* **caps**: ``max_stages``, ``max_evaluations``, ``max_iter`` (inner iterations
  over the whole run), ``time_limit``, or the callback.

A stop (other than a cap) must pass :meth:`.Oracle.check` at the best point, else the
run goes on. The status is "optimal" only at a certified stop (or when the final bound
certifies the best point within ``tol``); a stall, a cap or the last stage gives
"optimal_inaccurate", a time limit or the callback "user_limit".

**Escapes.** A descent in factors (``M = LᵀL``, :mod:`.factor`) is not convex and can
stop at a Burer–Monteiro saddle, which the certificate exposes. After every uncertified
stage but the last (a stall included, ``Stage.stopping``), the oracle may
:meth:`~.StageHooks.escape` along negative curvature of the Lagrangian's gradient
(:mod:`.escape`), at most ``max_escapes`` times: the next stage starts at the new point,
and an escape at a stall restarts the run there (σ back to ``σ₀``, no stalls counted).
This is the engine's one escape path (POE's factored solver, LMNN's refinement). A
formulation with a convex fallback (FISTA on ``M``, which cannot stall at a non-optimal
point) runs it as its own last stage when the gap stays open.

**Run-offs.** An inner method that minimises an oracle's *model* (an active list that is
searched only between stages) can run far off once the model goes stale: the stage's
exact objective then ends many times above the best. With ``backoff`` the stage ends
instead at the first point ``x₀ + 2⁻ᵏ(x − x₀)`` (``x₀`` its start, ``x`` its end) whose
exact objective is within ``backoff``·best, so the next check lists the terms near that
point rather than the far larger list of the run-off's (``info["backoffs"]``: 1). Once per
run: a milder run-off is kept, and so is every later one, as without ``backoff`` (the
terms a run-off finds are the walls the next stage needs; a toy whose list drops every
slack term otherwise alternated between backed-off and run-off stages without end,
``tests/test_optim_engine.py``).

Otherwise the prox centre moves to the stage's multipliers (:meth:`~.Oracle.recenter`,
an augmented-Lagrangian step that removes the smoothing bias at a *fixed* σ) and σ is
updated: ``σ ← max(σ·sigma_factor, sigma_min)`` (continuation when ``sigma_factor < 1``),
or with a fixed σ, ``σ ← σ·stall_shrink`` after a stall.

The same loop, with different settings, is LMNN's factor refinement (fixed σ,
recentring), the multi-metric factor refinement and its convex polish, POE's factored
and diagonal solvers (continuation) and the FISTA continuation of Maurer's and POE's
subgradient paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._input_checks import check_scalar
from ..progress import notify
from ..result import SolveResult, certified_gap
from . import vectors
from .constants import BACKOFF_HALVINGS, RAMP_DOUBLINGS, REL_FLOOR
from .deadline import Deadline, TimeUp
from .oracle import Stage, hooks_of


@dataclass(kw_only=True)
class StageSettings:
    """Settings of :func:`run_stages` (defaults: LMNN's factor refinement)."""

    sigma0: float = 0.03  #: the first smoothing width (in units of the hinge argument)
    sigma_factor: float = 1.0  #: σ ← σ·factor after every stage (1: fixed σ)
    stall_shrink: float | None = None  #: with a fixed σ, σ ← σ·stall_shrink after a stall
    sigma_min: float = 1e-6  #: σ never goes below this
    stage_iter: int = 50  #: inner iterations per stage
    first_stage: int | None = None  #: ramp: stage k gets min(stage_iter, first_stage·2ᵏ)
    rtol: float = 1e-7  #: a stage stalls when the best objective gains less (relative)
    stalls: int | None = 2  #: stop after this many stalled stages in a row (None: never)
    stall_sigma: float | None = None  #: fixed σ: stalls stop only once σ ≤ stall_sigma·σ₀
    tol: float | None = None  #: stop when the certified relative gap is within this
    max_stages: int | None = None  #: stages at most (None: no cap)
    max_evaluations: int | None = None  #: smoothed evaluations at most (None: no cap)
    max_iter: int | None = None  #: inner iterations at most, over all stages (None: no cap)
    recenter: bool = True  #: move the prox centre between stages
    #: the run's first stage whose exact objective ends above ``backoff``·best (a run-off)
    #: ends at a point backed off towards its start, at most :data:`BACKOFF_HALVINGS`
    #: halvings (None: never; the module docstring)
    backoff: float | None = None
    max_escapes: int | None = None  #: escapes along negative curvature at most (None: no cap)
    time_limit: float | None = None  #: seconds (status "user_limit")
    callback: object = None  #: ``callback(evaluations, objective, sigma)``; True stops
    name: str = "staged"  #: the ``solver`` name of the result

    def __post_init__(self):
        if self.backoff is not None:  # a limit at or below best backs off every stage
            self.backoff = check_scalar(
                self.backoff, "backoff", float, min_val=1.0, closed="neither", owner="StageSettings"
            )


@dataclass
class Counts:
    """Work done so far: smoothed evaluations and inner iterations."""

    evaluations: int = 0
    iterations: int = 0
    cap: int | None = None  #: the run's evaluation cap (``max_evaluations``)
    stages: int = 0
    notes: dict = field(default_factory=dict)


def _budget(s, index):
    if s.first_stage is None:
        return s.stage_iter
    return min(s.stage_iter, s.first_stage << min(index, RAMP_DOUBLINGS))


def run_stages(oracle, x0, inner, settings=None, *, best=None, lower=None):
    """Minimise ``oracle``'s objective by smoothed stages; a :class:`SolveResult`.

    Parameters
    ----------
    oracle : :class:`.Oracle`
        The formulation (or an adapter of it) in the inner method's variables.
    x0 : array or list of arrays
        Starting point (projected or bounded by the inner method first).
    inner : :class:`.lbfgs.LBFGS` or :class:`.fista.FISTA`
        Minimises ``f_σ`` for one stage.
    settings : StageSettings
    best : (x, f), optional
        A better point known to the caller (kept unless improved on).
    lower : float, optional
        A lower bound known to the caller.

    Returns
    -------
    SolveResult
        ``matrices`` holds the best point's blocks (``matrix`` the point itself when
        it is one array); ``iterations`` are inner iterations; ``info`` has
        ``evaluations``, ``stages``, ``final_sigma`` and ``certified_gap``.
    """
    run = _Run(oracle, inner, settings or StageSettings(), x0, best, lower)
    s, hooks = run.s, run.hooks
    if s.tol is not None and certified_gap(run.best_f, run.low) <= s.tol:
        hooks.finish()  # the caller's point is certified already: no stage
        return run.result("optimal")
    status = None
    try:
        while status is None:
            status = run.stage()
    except TimeUp:  # the time limit inside a long step; Ctrl-C propagates (after finish)
        status = "user_limit"
    finally:
        hooks.finish()
    if status != "user_limit" and certified_gap(run.best_f, run.low) > (s.tol or 0.0):
        extra = hooks.final_bound(run.snapshot(run.best_x))
        run.low = run.low if extra is None else max(run.low, float(extra))
        if s.tol is not None and certified_gap(run.best_f, run.low) <= s.tol:
            status = "optimal"
    return run.result(status)


class _Run:
    """The state of one staged run: the point, the best point, the bound, the counters."""

    def __init__(self, oracle, inner, s, x0, best, lower):
        self.oracle, self.inner, self.s = oracle, inner, s
        self.hooks = hooks_of(oracle)  #: the stage hooks (:class:`.oracle.StageHooks`)
        self.clock, self.counts = Deadline(s.time_limit), Counts(cap=s.max_evaluations)
        self.x = inner.start(oracle, x0)
        f0 = float(oracle.objective(self.x))
        self.best_x, self.best_f = (
            (vectors.copy(self.x), f0) if best is None or f0 <= best[1] else best
        )
        self.history, self.sigma = [f0], float(s.sigma0)
        self.low = -np.inf if lower is None else float(lower)
        self.stalled, self.index = 0, 0

    def snapshot(self, x, stopping=False):
        return Stage(
            x, self.sigma, self.best_x, self.best_f, self.low, self.index, stopping=stopping
        )

    def stage(self):
        """One stage and its bound; the run's status if it ends here, else ``None``."""
        s, oracle, hooks, counts = self.s, self.oracle, self.hooks, self.counts
        moved = hooks.begin_stage(self.x, self.index)
        self.x = self.x if moved is None else moved
        guard = s.backoff is not None and not counts.notes.get("backoffs")
        start = vectors.copy(self.x) if guard else None
        factor, budget = hooks.stage_plan(s.sigma_factor, self._budget())
        self.x, stopped = self.inner.run(oracle, self.x, self.sigma, budget, self.clock, counts)
        f = self._settle(start, self.x)
        counts.stages += 1
        self.history.append(f)
        counts_stall = self.index > 0 and budget >= s.stage_iter
        little = self.best_f - f <= s.rtol * max(abs(self.best_f), REL_FLOOR)
        self.stalled = self.stalled + 1 if little and counts_stall else 0
        if f < self.best_f:
            self.best_x, self.best_f = vectors.copy(self.x), f
        bound = oracle.bound(self.snapshot(self.x))
        self.low = self.low if bound is None else max(self.low, float(bound))
        notify(counts.evaluations, f, lower_bound=None if self.low == -np.inf else self.low)
        if stopped or (s.callback is not None and s.callback(counts.evaluations, f, self.sigma)):
            return "user_limit"
        return self._cap() or self._next(factor)

    def _settle(self, start, end):
        """Set the stage's end point, the hooks' :meth:`~.StageHooks.end_stage` of ``end``
        (or, after a run-off, of a point backed off towards ``start``: the module
        docstring), and return its exact objective."""
        oracle, limit = self.oracle, None
        if start is not None and np.isfinite(self.best_f):
            limit = self.best_f + (self.s.backoff - 1.0) * max(abs(self.best_f), REL_FLOOR)
        t = 1.0
        for _ in range(BACKOFF_HALVINGS + 1):
            x = end if t == 1.0 else vectors.axpy(start, t, vectors.sub(end, start))
            settled = self.hooks.end_stage(x)
            self.x = x if settled is None else settled
            f = float(oracle.objective(self.x))
            if limit is None or f <= limit or self.clock.expired():
                break
            t *= 0.5
        if t < 1.0:
            self.counts.notes["backoffs"] = 1
        return f

    def _budget(self):
        s, n = self.s, _budget(self.s, self.index)
        if s.max_iter is not None:
            n = min(n, s.max_iter - self.counts.iterations)
        return n

    def _cap(self):
        s, counts = self.s, self.counts
        if self.clock.expired():
            return "user_limit"
        if s.max_evaluations is not None and counts.evaluations >= s.max_evaluations:
            return "optimal_inaccurate"
        if s.max_iter is not None and counts.iterations >= s.max_iter:
            return "optimal_inaccurate"
        return None

    def _next(self, factor):
        """After an uncapped stage: the status if the run ends here, else ``None`` (an
        escape, or the prox centre and σ updated for the next stage)."""
        s = self.s
        if s.tol is not None and certified_gap(self.best_f, self.low) <= s.tol:
            # a proof (an exact value and a valid bound): the final check is for runs that
            # stop without one (a new term found there would only reopen a certified run)
            return "optimal"
        last = s.max_stages is not None and self.index + 1 >= s.max_stages
        done = _done(s, self.best_f, self.low, self.stalled, self.sigma, factor)
        stop = (done or last) and (self.oracle.check(self.best_x) or last)
        if not last and self._escaped(stop):
            return None
        if stop:
            return "optimal_inaccurate"  # a stall or the last stage: no proof (above)
        if s.recenter:
            self.oracle.recenter(self.x, self.sigma)
        stalled = factor >= 1 and self.stalled and s.stall_shrink
        self.sigma = max(self.sigma * (s.stall_shrink if stalled else factor), s.sigma_min)
        self.index += 1
        return None

    def _escaped(self, stopping):
        """Ask the hooks for an escape along negative curvature; True if the next stage
        starts there (at a stall, ``stopping``, the run restarts: σ₀, no stalls)."""
        s, notes = self.s, self.counts.notes
        if s.max_escapes is not None and notes.get("escapes", 0) >= s.max_escapes:
            return False
        moved = self.hooks.escape(self.snapshot(self.x, stopping))
        if moved is None:
            return False
        self.x, self.index = moved, self.index + 1
        notes["escapes"] = notes.get("escapes", 0) + 1
        if stopping:
            self.sigma, self.stalled = float(s.sigma0), 0
        return True

    def result(self, status):
        return _result(self, status)


def _done(s, best_f, low, stalled, sigma, factor):
    if s.tol is not None and certified_gap(best_f, low) <= s.tol:
        return True
    if s.stalls is None or not stalled:
        return False
    shrunk = s.stall_sigma is None or factor < 1 or sigma <= s.stall_sigma * s.sigma0
    return (stalled >= s.stalls and shrunk) or sigma <= s.sigma_min


def _result(run, status):
    best_x, best_f, low, counts = run.best_x, run.best_f, run.low, run.counts
    blocks = best_x if isinstance(best_x, list) else [best_x]
    info = {
        "evaluations": counts.evaluations,
        "stages": counts.stages,
        "final_sigma": run.sigma,
        "certified_gap": certified_gap(best_f, low),
        **counts.notes,
    }
    return SolveResult(
        matrix=None if isinstance(best_x, list) else best_x,
        matrices=list(blocks),
        objective=float(best_f),
        status=status,
        iterations=counts.iterations,
        seconds=run.clock.elapsed(),
        solver=run.s.name,
        history=run.history,
        lower_bound=None if low == -np.inf else float(low),
        info=info,
    )
