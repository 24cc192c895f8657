"""The staged smoothed solver: every refinement, polish and continuation of the project.

Each hinge ``max(0, z)`` of a convex formulation is replaced by its smoothing
``φ_σ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²`` around a prox centre ``λ̄`` (a Huber
function when ``λ̄ = 0``), whose gradient weighs every term by ``λ = clip(λ̄ + z/σ, 0, 1)``.
The driver minimises ``f_σ`` stage by stage with an *inner method* (L-BFGS in a
parametrisation, :mod:`.lbfgs`, or FISTA over a cone, :mod:`.fista`). After every stage
it evaluates the exact objective (the best point is kept), asks the oracle for a
certified lower bound (:meth:`.Oracle.bound`), and then either stops or moves on:

* **certified stop**: the relative gap ``(best − bound)/|best|`` is within ``gap_tol``;
* **stalls**: the best exact objective improved by less than ``rtol`` (relative) in
  ``stalls`` stages in a row (with a fixed σ, only once σ has shrunk to
  ``stall_sigma·σ₀``), or a stage stalled at ``sigma_min``;
* **caps**: ``max_stages``, ``max_evaluations``, ``time_limit``, or the callback.

A stop (other than a cap) must pass :meth:`.Oracle.check` at the best point, else the
run goes on. Otherwise the oracle may :meth:`~.Oracle.escape` along negative curvature
(the next stage starts there), or the prox centre moves to the stage's multipliers
(:meth:`~.Oracle.recenter`, an augmented-Lagrangian step that removes the smoothing bias
at a *fixed* σ) and σ is updated: ``σ ← max(σ·sigma_factor, sigma_min)`` (continuation
when ``sigma_factor < 1``), or with a fixed σ, ``σ ← σ·stall_shrink`` after a stall.

The same loop, with different settings, is LMNN's factor refinement (fixed σ,
recentring), the multi-metric factor refinement and its convex polish, POE's factored
and diagonal solvers (continuation) and the FISTA continuation of Maurer's and POE's
subgradient paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..progress import notify
from ..result import SolveResult, certified_gap
from . import vectors
from .deadline import Deadline
from .oracle import Stage


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
    gap_tol: float | None = None  #: stop when the certified relative gap is within this
    max_stages: int | None = None  #: stages at most (None: no cap)
    max_evaluations: int | None = None  #: smoothed evaluations at most (None: no cap)
    recenter: bool = True  #: move the prox centre between stages
    time_limit: float | None = None  #: seconds (status "user_limit")
    callback: object = None  #: ``callback(evaluations, objective, sigma)``; True stops
    name: str = "staged"  #: the ``solver`` name of the result


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
    return min(s.stage_iter, s.first_stage << min(index, 30))


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
    s = settings or StageSettings()
    clock, counts = Deadline(s.time_limit), Counts(cap=s.max_evaluations)
    x = inner.start(oracle, x0)
    f0 = float(oracle.objective(x))
    best_x, best_f = (vectors.copy(x), f0) if best is None or f0 <= best[1] else best
    history, sigma = [f0], float(s.sigma0)
    low = -np.inf if lower is None else float(lower)
    status, stalled, index = "optimal", 0, 0
    if s.gap_tol is not None and certified_gap(best_f, low) <= s.gap_tol:
        oracle.finish()  # the caller's point is certified already: no stage
        return _result(best_x, best_f, low, status, history, counts, sigma, clock, s.name)
    try:
        while True:
            oracle.begin_stage(x, index)
            factor, budget = oracle.stage_plan(s.sigma_factor, _budget(s, index))
            x, stopped = inner.run(oracle, x, sigma, budget, clock, counts)
            counts.stages += 1
            f = float(oracle.objective(x))
            history.append(f)
            counts_stall = index > 0 and budget >= s.stage_iter
            little = best_f - f <= s.rtol * max(abs(best_f), 1e-12)
            stalled = stalled + 1 if little and counts_stall else 0
            if f < best_f:
                best_x, best_f = vectors.copy(x), f
            stage = Stage(x, sigma, best_x, best_f, low, index)
            bound = oracle.bound(stage)
            low = low if bound is None else max(low, float(bound))
            notify(counts.evaluations, f, lower_bound=None if low == -np.inf else low)
            if stopped or (s.callback is not None and s.callback(counts.evaluations, f, sigma)):
                status = "user_limit"
                break
            if clock.expired():
                status = "user_limit"
                break
            if s.max_evaluations is not None and counts.evaluations >= s.max_evaluations:
                status = "optimal_inaccurate"
                break
            last = s.max_stages is not None and index + 1 >= s.max_stages
            done = _done(s, best_f, low, stalled, sigma, factor)
            if (done or last) and (oracle.check(best_x) or last):
                status = "optimal" if done else "optimal_inaccurate"
                break
            moved = oracle.escape(Stage(x, sigma, best_x, best_f, low, index))
            if moved is not None:
                x, index = moved, index + 1
                counts.notes["escapes"] = counts.notes.get("escapes", 0) + 1
                continue
            if s.recenter:
                oracle.recenter(x, sigma)
            shrink = s.stall_shrink if (factor >= 1 and stalled and s.stall_shrink) else factor
            sigma = max(sigma * shrink, s.sigma_min)
            index += 1
    except KeyboardInterrupt:
        status = "user_limit"
    finally:
        oracle.finish()
    if status != "user_limit" and certified_gap(best_f, low) > (s.gap_tol or 0.0):
        extra = oracle.final_bound(Stage(best_x, sigma, best_x, best_f, low, index))
        low = low if extra is None else max(low, float(extra))
        if s.gap_tol is not None and certified_gap(best_f, low) <= s.gap_tol:
            status = "optimal"
    return _result(best_x, best_f, min(low, best_f), status, history, counts, sigma, clock,
                   s.name)  # fmt: skip


def _done(s, best_f, low, stalled, sigma, factor):
    if s.gap_tol is not None and certified_gap(best_f, low) <= s.gap_tol:
        return True
    if s.stalls is None or not stalled:
        return False
    shrunk = s.stall_sigma is None or factor < 1 or sigma <= s.stall_sigma * s.sigma0
    return (stalled >= s.stalls and shrunk) or sigma <= s.sigma_min


def _result(best_x, best_f, low, status, history, counts, sigma, clock, name):
    blocks = best_x if isinstance(best_x, list) else [best_x]
    info = {"evaluations": counts.evaluations, "stages": counts.stages, "final_sigma": sigma,
            "certified_gap": certified_gap(best_f, low), **counts.notes}  # fmt: skip
    return SolveResult(
        matrix=None if isinstance(best_x, list) else best_x,
        matrices=list(blocks),
        objective=float(best_f),
        status=status,
        iterations=counts.iterations,
        seconds=clock.elapsed(),
        solver=name,
        history=history,
        lower_bound=None if low == -np.inf else float(low),
        info=info,
    )
