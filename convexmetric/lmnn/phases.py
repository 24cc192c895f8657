"""The phases of LMNN's large-scale solver: App. A's subgradient phase, the smoothed
refinement, the convex fallback.

:func:`solve_phases` minimises eq. (14) over the active-set oracle of :mod:`.oracle` in
three stages, each an engine driver (:mod:`convexmetric.optim`):

1. **App. A** (Alg. 1): projected subgradient with the paper's step rule (×1.01 after a
   decrease, ×0.5 and undo after an increase), by default in the factor ``L``
   (``phase1="components"``: fast and well scaled; ``M = LᵀL`` stays PSD) or on ``M``
   with projection onto the PSD cone (``phase1="metric"``, Alg. 1 verbatim). It stalls
   about 1e-3 (relative) above the optimum, at the kinks of the hinge. Before a
   refinement it only has to find the active set and the scale: it hands over once it
   gains under 1% in 10 iterations.
2. **Refinement** (``refine=True``): the staged smoothed driver with L-BFGS in ``L`` at
   a fixed σ = 0.03 with dual recentring after every 50-iteration stage (a proximal
   method of multipliers; σ shrinks ×0.3 at stalls, and per stage when streaming), each
   stage certified by the dual bound of :mod:`.certificate`; it stops once certified.
   Before every stage, and at its end before its exact objective (so that the next
   stage's full check reuses that objective's search), the factor drops its
   eigen-directions below ``rank_tol·λ_max`` (``L`` gets fewer rows: a distance costs
   ``rank`` products, not ``d``). The default
   1e-3 sheds at once the small eigen-directions phase 1's subgradient steps leave
   behind (the optimum has far lower rank than phase 1's iterate), at equal or lower
   certified objectives (the measurements are in ``benchmarks/TUNING.md``).
   ``refine="fista"``: FISTA with continuation on ``M`` over the PSD cone instead.
   At a stall without a certificate the driver escapes along negative curvature of
   the Lagrangian's gradient (a factor descent can stop at a Burer–Monteiro saddle,
   and which one depends on rounding) and restarts there: :mod:`.refinement`, through
   the engine's one escape path (:meth:`.oracle.ActiveSetOracle.escape`).
3. **Convex fallback** (:func:`_close`): if the gap stays open, FISTA on ``M ⪰ 0``
   (convex: it cannot stall at a saddle), then a polish in the factor
   (:class:`.refinement.GapClosing`). :func:`close_gap` continues a given result the
   same way (an escape, the refinement, the fallback).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..cones import FullSpace, PSDCone
from ..linalg import components_from_metric
from ..optim.deadline import NEVER, Alarm, TimeUp
from ..optim.factor import Factored
from ..optim.oracle import Stage
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.subgradient import SubgradientSettings, projected_subgradient
from ..result import SolveResult, certified_status
from .constants import HANDOVER_RTOL, HANDOVER_SHARE, REFINE_PRUNE
from .oracle import ActiveSetOracle
from .refinement import GapClosing, refine, refine_settings
from .settings import LMNNSettings


def solve_phases(X, y, targets, mu, M0, s):
    """The three phases on ``X`` (whitened or not) from ``M0``; the :class:`SolveResult`
    with the certificate of its bound (:meth:`.ActiveSetOracle.dual_point`)."""
    t0 = time.perf_counter()
    oracle = ActiveSetOracle(
        X,
        y,
        targets,
        mu,
        check_every=s.check_every,
        prune=s.prune,
        block_size=s.block_size,
        search=s.search,
        memory_limit=s.memory_limit,
        executor=s.executor,
    )
    oracle.limit(s.tol, Alarm(s.time_limit, start=t0))
    M0 = np.eye(X.shape[1]) if M0 is None else M0
    try:
        res = _refined(oracle, _phase1(oracle, M0, s), s, t0)
        if s.refine and res.status != "user_limit":
            if res.certified_gap > s.tol and res.iterations < s.max_iter:
                remaining = None if s.time_limit is None else s.time_limit - res.seconds
                res = _close(oracle, res, s, remaining)
            if res.status != "user_limit":
                res.status = certified_status(res.objective, res.lower_bound, s.tol)
            res.info["certified_gap"] = res.certified_gap
            res.info.update(oracle.mode_info())
    except TimeUp:  # the time limit, in a step outside the drivers (they stop on it)
        res = _stopped(oracle, M0, t0)
    oracle.limit(s.tol, NEVER)  # the certificate's multipliers (a pass when streaming) are listed
    if res.lower_bound is None:  # stopped before the refinement bounded it: a bound at its point
        # the trace bound needs F ≥ f*: a driver's value between checks counts the listed
        # terms only, the least exact value the oracle computed is attained
        seen = oracle.best_seen
        F = res.objective if seen is None else max(res.objective, seen[0])
        res.info["attained_value"] = F
        res.lower_bound = oracle.bounds.at(res.matrix, F)
    res.certificate = oracle.dual_point(res.lower_bound)  # the dual point of lower_bound
    return res


def _phase1(oracle, M0, s):
    """App. A's subgradient phase; returns its result with ``matrix`` the metric ``M``."""
    # before a refinement, phase 1 only finds the active set and the scale: it hands over
    # once it gains under 1% in 10 iterations (the refinement's L-BFGS does the rest far
    # faster, to the same result: benchmarks/TUNING.md)
    rtol, patience = (HANDOVER_RTOL, 10) if s.refine else (1e-4, 20)
    ps = s.phase1_settings or SubgradientSettings(
        max_iter=s.max_iter, rtol=rtol, patience=patience, step_scale=0.3
    )
    ps.time_limit = s.time_limit
    switched = []

    def callback(*args):
        # once the oracle streams, every subgradient step costs a pass over the data:
        # hand over to the refinement (L-BFGS needs far fewer evaluations)
        if s.callback is not None and s.callback(*args):
            return True
        if s.refine and oracle.active.mode == "streaming":
            switched.append(True)
            return True
        return False

    ps.callback = callback
    oracle.active.handover = HANDOVER_SHARE if s.refine else 0.0
    if s.phase1 == "components":
        res = projected_subgradient(Factored(oracle), components_from_metric(M0), FullSpace(), ps)
        res.info["components"], res.matrix = res.matrix, res.matrix.T @ res.matrix
    elif s.phase1 == "metric":
        res = projected_subgradient(oracle, M0, PSDCone(), ps)
    else:
        raise ValueError(f"phase1 must be 'components' or 'metric'; got {s.phase1!r}.")
    oracle.active.handover = 0.0
    if s.refine and s.prune is not None:
        oracle.active.start_refinement(min(s.prune, REFINE_PRUNE))
    if switched:
        _after_switch(oracle, res)
    return res


def _after_switch(oracle, res):
    """Phase 1 handed over at the switch to streaming (not the user's stop). If its point
    was accepted on an incomplete list, restart from the point of least exact value seen."""
    if res.status == "user_limit":
        res.status = "optimal_inaccurate"
    seen = oracle.best_seen
    if seen is not None and not res.objective <= seen[0]:
        res.objective, res.matrix = seen
        res.matrices = [res.matrix]


def _refined(oracle, res, s, t0):
    """The refinement after phase 1; the pipeline's :class:`SolveResult`."""
    status, lower, history = res.status, None, list(res.history)
    best_M, best_f, iterations = res.matrix, res.objective, res.iterations
    info = {"phase1_objective": res.objective, "phase1_iterations": res.iterations}
    stages = ["subgradient"]
    remaining = None if s.time_limit is None else s.time_limit - (time.perf_counter() - t0)
    left = s.max_iter - iterations  # max_iter caps every stage together
    if s.refine and status != "user_limit" and (remaining is None or remaining > 0) and left > 0:
        if s.refine == "fista":  # first-order smoothed stage on M
            rs = replace(
                s.refine_settings or SmoothingSettings(),
                time_limit=remaining,
                callback=s.callback,
                max_iter=left,
            )
            res2 = smoothed_descent(oracle, res.matrix, PSDCone(), rs)
        else:  # smoothed L-BFGS in the factor L (default)
            rs = replace(refine_settings(s, remaining, tol=s.tol), max_iter=left)
            res2 = refine(oracle, components_from_metric(res.matrix), rs, s.rank_tol)
        history += res2.history
        iterations += res2.iterations
        status, lower = res2.status, res2.lower_bound
        stages.append("fista" if s.refine == "fista" else "smoothed-lbfgs")
        info["refine_evaluations"] = res2.info.get("evaluations", res2.iterations)
        info["final_sigma"] = res2.info.get("final_sigma")
        if res2.info.get("escapes"):  # the refinement escaped saddles (.refinement)
            info["escapes"] = res2.info["escapes"]
            stages.append("escape")
        if res2.objective < best_f:
            best_M, best_f = res2.matrix, res2.objective
    info.update(oracle.mode_info())
    info["stages"] = stages
    return SolveResult(
        matrix=best_M,
        objective=float(best_f),
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        solver="+".join(stages),
        history=history,
        lower_bound=lower,
        info=info,
    )


def close_gap(oracle, result, settings=None, *, max_iter=None, **overrides):
    """Continue from a refinement's ``result`` until its certified gap is within ``tol``.

    The solver's own path (:func:`solve` runs it after its refinement): the escape of
    :meth:`.ActiveSetOracle.escape` at ``result``'s point, the refinement from there
    (escaping again at its stalls, :mod:`convexmetric.optim.stages`), and while the gap
    stays open the convex fallback (:func:`_close`).

    Parameters
    ----------
    oracle : ActiveSetOracle
        The oracle ``result`` was computed on.
    result : SolveResult
        A refinement's result (``info["final_sigma"]``: its smoothing width).
    settings : LMNNSettings, optional
        ``tol``, ``time_limit``, ``callback``, ``refine_settings``, ``rank_tol``.
    max_iter : int, optional
        Iterations of this stage at most (default: no cap).
    **overrides
        Fields of :class:`LMNNSettings`.

    Returns
    -------
    SolveResult
        The best point, counting this stage only; ``info`` has ``escapes``,
        ``fallback`` and ``certified_gap``, ``certificate`` the bound's dual point.
    """
    s = replace(settings or LMNNSettings(), **overrides)
    run = GapClosing(oracle, result, s, max_iter)
    if run.open():
        L = result.info.get("components")
        L = components_from_metric(result.matrix) if L is None else L
        at = Stage(
            result.matrix,
            float(result.info.get("final_sigma", 1e-6)),
            result.matrix,
            result.objective,
            run.lower,
            0,
            L,
            L,
            stopping=True,
        )
        moved = oracle.escape(at)
        if moved is not None:
            rs = replace(refine_settings(s, run.clock.remaining()), max_iter=run.left)
            r = run.merge(refine(oracle, moved, rs, s.rank_tol))
            run.escapes += 1 + r.info.get("escapes", 0)
    out = run.fallback().finish()
    out.certificate = oracle.dual_point(out.lower_bound)
    return out


def _close(oracle, res, s, time_limit):
    """The convex fallback after the refinement (whose escapes ran at its stalls), with
    the pipeline's counts and names; the stages "escape"/"fista-fallback" when they ran."""
    s = replace(s, time_limit=time_limit)
    out = GapClosing(oracle, res, s, s.max_iter - res.iterations).fallback().finish()
    info = dict(res.info, escapes=res.info.get("escapes", 0), fallback=out.info["fallback"])
    info["stages"] = res.info["stages"] + ["fista-fallback"] * bool(out.info["fallback"])
    out.info, out.solver = info, "+".join(info["stages"])
    out.iterations += res.iterations
    out.seconds += res.seconds
    out.history = res.history + out.history
    return out


def _stopped(oracle, M0, t0):
    """The time limit rang in a step outside the drivers (they stop on
    :class:`~convexmetric.optim.deadline.TimeUp` themselves, with their best point): the
    :class:`SolveResult` of a fit stopped at ``time.perf_counter() = t0 + time_limit``:
    the least exact objective the oracle computed (:attr:`.ActiveList.best_seen`; else
    ``M0``'s, computed now: the alarm rings once), status "user_limit"; the solver adds the
    best bound so far (:meth:`.bounds.ListBounds.at`)."""
    best = oracle.best_seen
    if best is None:
        oracle.objective(M0, bound=True)
        best = oracle.best_seen
    f, M = best
    info = {"stop": "time_limit", **oracle.mode_info()}
    return SolveResult(
        matrix=M,
        objective=f,
        status="user_limit",
        iterations=0,
        seconds=time.perf_counter() - t0,
        solver="time_limit",
        history=[f],
        lower_bound=None,
        info=info,
    )
