"""Large-scale multi-metric LMNN (§5.2): subgradient, factor refinement, convex polish.

The variable is a list ``[M^0, …, M^{c−1}]`` (one PSD block per cluster) over the
active-list oracle of :mod:`.oracle`, in per-block whitened coordinates by default
(:class:`.whitened.WhitenedOracle`, an exact change of variables). Three engine
drivers (:mod:`convexmetric.optim`) run in turn:

1. projected subgradient from the single-metric solution (the paper's initialisation
   and solver; ``subgradient_iter`` steps, one by default: the steps are short, the refinement
   makes the large move much faster, and every step costs an evaluation);
2. the staged smoothed driver with L-BFGS in the factors ``M^g = L_gᵀL_g`` at a fixed
   σ = 0.03 with dual recentring and :data:`MAXCOR` correction pairs; stage ``k`` runs
   ``min(100, f·2ᵏ)`` iterations, ``f =`` :data:`FIRST_STAGE` (from the phase-1 point
   the list is stale, and long first stages run off to objectives of 10⁴–10⁵ that the
   next check pays for with lists of 10⁵–10⁶ terms) and the first :data:`EXACT_STAGES`
   stages search all triplets at every evaluation (and ask for no bound: the large first
   move is far from a proof); every later stage's bound climbs the trace bound over the
   multipliers near the kink once the best objective settles
   (:meth:`.MultiMetricOracle.lower_bound`), and the refinement runs until the certified
   gap is within ``tol`` or it stalls (digits to 1e-3: certified at the stage that first
   reaches the optimum's objective). The first list-only stage that runs off on its stale
   list (to :data:`BACKOFF` times the best) ends backed off towards its start;
3. the convex polish (:func:`polish`): FISTA on the ``M^g`` at a large fixed σ with
   recentring after every 30 steps, a proximal method of multipliers whose inner
   minimisers make every ``S_g(λ)`` PSD, until the certified gap is within ``tol`` (not
   run when stage 2 certified already).

``refine="fista"`` replaces 2–3 by FISTA with continuation. The status is "optimal" only
with a certified gap within ``tol``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..._threads import one_blas_thread
from ...cones import ProductCone, PSDCone
from ...linalg import components_from_metric
from ...neighbors import unit_scale
from ...optim.factor import Factored, metric, trimmed
from ...optim.fista import FISTA
from ...optim.lbfgs import LBFGS
from ...optim.smoothing import SmoothingSettings, smoothed_descent
from ...optim.stages import StageSettings, run_stages
from ...optim.subgradient import SubgradientSettings, projected_subgradient
from ...result import SolveResult, certified_gap, certified_status
from ..constants import BACKOFF, EXACT_STAGES, FIRST_STAGE, MAXCOR, MULTI_RANK_TOL
from ..proof import prove
from .oracle import MultiMetricOracle
from .whitened import WhitenedOracle

__all__ = ["MultiMetricOracle", "MultiSettings", "WhitenedOracle", "polish", "solve"]


@dataclass(kw_only=True)
class MultiSettings:
    """Settings of :func:`solve` (documented defaults)."""

    #: projected-subgradient iterations before the refinement. Digits (1,257 × 64, ten
    #: blocks) from the single-metric start: 20 steps lower the objective from 1726 to
    #: 1721 (the optimum is 210), and more steps only slow the solve down (measurements:
    #: ``benchmarks/TUNING.md``)
    subgradient_iter: int = 1
    refine: bool | str = True  #: True: factors then polish; "fista": continuation; False
    tol: float = 1e-4  #: the certified relative gap that "optimal" means
    time_limit: float | None = None  #: seconds (status "user_limit")
    precondition: bool = True  #: solve in per-block whitened coordinates
    polish_sigma: float = 1.0  #: the polish's fixed σ
    max_iter: int | None = None  #: iterations at most over every stage (None: no cap)
    refine_settings: object = None  #: dict: StageSettings fields, or exact_stages, maxcor


def solve(X, y, targets, mu, clusters, n_clusters=None, settings=None, *, M0=None, **overrides):
    """Minimise the multi-metric objective; return a :class:`SolveResult`.

    ``M0`` (one matrix, or one per cluster) is the starting point; the paper starts every
    block at the single-metric LMNN solution. ``result.matrix`` is ``(c, d, d)``;
    ``overrides`` are fields of :class:`MultiSettings`. The lower bound is in the original
    coordinates either way (the change of variables keeps values).
    """
    s = replace(settings or MultiSettings(), **overrides)
    scale = unit_scale(X)
    if not 2.0**-20 <= scale <= 2.0**20:  # far from 1: solved exactly at unit scale
        M0 = None if M0 is None else np.asarray(M0, dtype=float) / scale**2
        res = solve(X * scale, y, targets, mu, clusters, n_clusters, s, M0=M0)
        res.matrices = [M * scale**2 for M in res.matrices]
        res.matrix = np.stack(res.matrices)
        return res
    with one_blas_thread():  # d×d blocks and gathers: threads cost, and change the rounding
        res = _solve(X, y, targets, mu, clusters, n_clusters, M0, s)
        c = int(clusters.max()) + 1 if n_clusters is None else n_clusters
        return prove(res, X, y, targets, mu, s.tol, clusters, c)


def _solve(X, y, targets, mu, clusters, n_clusters, M0, s):
    t0 = time.perf_counter()
    c = int(clusters.max()) + 1 if n_clusters is None else n_clusters
    M0 = np.eye(X.shape[1]) if M0 is None else np.asarray(M0, dtype=float)
    x0 = [M0.copy() for _ in range(c)] if M0.ndim == 2 else [m.copy() for m in M0]
    base = MultiMetricOracle(X, y, targets, mu, clusters, c)
    base.tol = s.tol
    oracle = WhitenedOracle(base) if s.precondition else base
    x0 = oracle.from_original(x0) if s.precondition else x0
    cone = ProductCone([PSDCone() for _ in range(c)])
    cap, steps = s.max_iter, s.subgradient_iter
    ps = SubgradientSettings(
        max_iter=steps if cap is None else min(steps, cap),
        rtol=1e-5,
        patience=30,
        step_scale=0.1,
        time_limit=s.time_limit,
    )
    res = projected_subgradient(oracle, x0, cone, ps)
    run = _Pipeline(res)
    left = None if s.time_limit is None else s.time_limit - (time.perf_counter() - t0)
    more = None if cap is None else cap - res.iterations
    if s.refine and res.status != "user_limit" and (left is None or left > 0) and more != 0:
        run.add(_refine(oracle, res.matrices, cone, replace(s, max_iter=more), left, t0))
    best = oracle.to_original(run.best) if s.precondition else run.best
    if run.status != "user_limit":  # every path: "optimal" only with a certified gap ≤ tol
        run.status = certified_status(run.best_f, run.lower, s.tol)
    info = {
        **run.extra,
        "active_list": len(base.keys),
        "full_checks": base.full_checks,
        "preconditioned": bool(s.precondition),
        "certified_gap": certified_gap(run.best_f, run.lower),
        "stages": run.stages,
    }
    return SolveResult(
        matrix=np.stack(best),
        matrices=list(best),
        objective=float(run.best_f),
        status=run.status,
        iterations=run.iterations,
        seconds=time.perf_counter() - t0,
        solver="multi-" + "+".join(run.stages),
        history=run.history,
        lower_bound=run.lower,
        info=info,
        certificate=base.range_certificate().dual_point(run.lower),
    )


class _Pipeline:
    """The best point, bound, counts and history along the stages of :func:`solve`."""

    def __init__(self, res):
        self.best, self.best_f, self.status = res.matrices, res.objective, res.status
        self.lower = None
        self.history, self.iterations, self.extra = list(res.history), res.iterations, {}
        self.stages = ["subgradient"]

    def add(self, res):
        self.stages += res.info.pop("stages")
        self.extra.update(res.info)
        self.history += res.history
        self.iterations += res.iterations
        self.status, self.lower = res.status, res.lower_bound
        if res.objective < self.best_f:
            self.best, self.best_f = res.matrices, res.objective


def _refine(oracle, Ms, cone, s, time_limit, t0):
    """Stages 2 and 3 (or the continuation), merged into one :class:`SolveResult`."""
    if s.refine == "fista":
        rs = s.refine_settings or SmoothingSettings(max_evaluations=20000, stage_iter=2000)
        res = smoothed_descent(oracle, Ms, cone, replace(rs, time_limit=time_limit))
        res.info["stages"] = ["fista"]
        return res
    res2 = refine_factors(oracle, Ms, s, time_limit)
    res2.info["stages"] = ["smoothed-lbfgs"]
    if res2.status in ("user_limit", "optimal"):  # certified: the polish would only
        return res2  # evaluate its start (an exact search) and stop
    left = None if s.time_limit is None else s.time_limit - (time.perf_counter() - t0)
    more = None if s.max_iter is None else s.max_iter - res2.iterations
    if more is not None and more <= 0:
        return res2
    res3 = polish(
        oracle,
        res2.matrices,
        best=(res2.matrices, res2.objective),
        lower=res2.lower_bound,
        sigma=s.polish_sigma,
        tol=s.tol,
        time_limit=left,
        max_iter=more,
    )
    res2.info = {
        **res3.info,
        "polish_evaluations": res3.info["evaluations"],
        "stages": ["smoothed-lbfgs", "polish"],
    }
    res2.status, res2.lower_bound = res3.status, res3.lower_bound
    res2.history += res3.history
    res2.iterations += res3.iterations
    if res3.objective < res2.objective:
        res2.matrices, res2.objective = res3.matrices, res3.objective
    return res2


def refine_factors(oracle, Ms0, s, time_limit):
    """Stage 2: L-BFGS on the smoothed objective in the factors ``L_g``; ``matrices`` are
    the ``M^g`` (in ``oracle``'s coordinates)."""
    extra = dict(s.refine_settings or {})
    oracle.base_oracle().exact_stages = extra.pop("exact_stages", EXACT_STAGES)
    inner = LBFGS(maxcor=extra.pop("maxcor", MAXCOR))
    tol = extra.pop("switch_gap", s.tol)
    rs = StageSettings(
        sigma0=0.03,
        sigma_factor=1.0,
        sigma_min=1e-6,
        stage_iter=100,
        first_stage=FIRST_STAGE,
        rtol=1e-7,
        stalls=2,
        tol=tol,
        backoff=BACKOFF,
        max_iter=s.max_iter,
        time_limit=time_limit,
        name="multi-smoothed-lbfgs",
    )
    rank_tol = extra.pop("rank_tol", MULTI_RANK_TOL)  # see convexmetric.optim.factor.trimmed
    Ls = [components_from_metric(M) for M in Ms0]
    # trimmed now, as the first stage would: its check then reuses the start's search
    Ls = Ls if rank_tol is None else trimmed(Ls, rank_tol)
    oracle.base_oracle().trace_bound = True
    try:
        res = run_stages(Factored(oracle, rank_tol), Ls, inner, replace(rs, **extra))
    finally:
        oracle.base_oracle().trace_bound = False
    oracle.base_oracle().exact_stages = 0
    res.matrices = metric(res.matrices)
    res.matrix = np.stack(res.matrices)
    return res


def polish(
    oracle,
    Ms0,
    *,
    best=None,
    lower=None,
    sigma=1.0,
    tol=1e-4,
    max_stages=200,
    time_limit=None,
    max_iter=None,
):
    """Stage 3: FISTA on the smoothed objective over ``M^g ⪰ 0`` at fixed σ, recentring
    after every 30 steps, until the certified relative gap is within ``tol``.

    ``oracle``: a :class:`MultiMetricOracle` or its :class:`WhitenedOracle` (``Ms0`` and the
    result in its coordinates). ``best``/``lower``: the best ``(point, objective)`` and
    bound known so far (kept unless improved on). Returns a :class:`SolveResult`
    (``info``: ``stages``, ``evaluations``, ``certified_gap``).
    """
    base = oracle.base_oracle()
    cone = ProductCone([PSDCone() for _ in Ms0])
    inner = FISTA(cone=cone, window=None, restart_shrink=1.0)
    ps = StageSettings(
        sigma0=sigma,
        sigma_factor=1.0,
        stage_iter=30,
        stalls=None,
        tol=tol,
        max_stages=max_stages,
        max_iter=max_iter,
        time_limit=time_limit,
        name="multi-polish",
    )
    base.trace_bound = True
    try:
        res = run_stages(
            oracle, [np.array(M, dtype=float) for M in Ms0], inner, ps, best=best, lower=lower
        )
    finally:
        base.trace_bound = False
    res.matrix = np.stack(res.matrices)
    res.certificate = base.range_certificate().dual_point(res.lower_bound)
    return res
