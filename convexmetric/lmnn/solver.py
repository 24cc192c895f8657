"""LMNN's large-scale solver: App. A's subgradient phase, the smoothed refinement, the gap.

:func:`solve` minimises eq. (14) over the active-set oracle of :mod:`.oracle` in three
stages, each an engine driver (:mod:`convexmetric.optim`):

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

Features constant over the data are left out first (:func:`_on_varying`: an exact
reduction; ``M`` keeps the start's block there). ``precondition=True`` solves in
coordinates where the pull term is ``tr M``
(:func:`pull_whitening`): eq. (14) depends on ``M`` only through distances, so
``x ↦ Sᵀx`` with ``M = S M' Sᵀ`` is an exact change of variables, and it equalises the
curvature that badly scaled features give the factor ``L`` (breast_cancer: the solver
ended 3.2e-3 above the optimum without it). The status is "optimal" only when the
certified relative gap ``(objective − lower_bound)/|objective|`` is within ``tol``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .._memory import settle_heap
from .._threads import one_blas_thread
from .._validation import check_memory_limit
from ..cones import FullSpace, PSDCone
from ..linalg import components_from_metric
from ..neighbors import unit_scale
from ..optim.deadline import NEVER, Alarm, TimeUp
from ..optim.factor import Factored
from ..optim.oracle import Stage
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.subgradient import SubgradientSettings, projected_subgradient
from ..problems.lmnn import all_triplets, pull_matrix
from ..result import SolveResult, certified_status
from .blocks.data import check_budget, data_share
from .constants import DEFAULT_MEMORY_LIMIT, HANDOVER_RTOL, REFINE_PRUNE
from .oracle import ActiveSetOracle
from .proof import prove
from .refinement import GapClosing, refine, refine_settings
from .time_limit import stopped


@dataclass(kw_only=True)
class LMNNSettings:
    """Settings of :func:`solve` (documented defaults)."""

    max_iter: int = 3000  #: iterations at most, over App. A, the refinement and the gap closing
    phase1: str = "components"  #: "components" (in L) or "metric" (on M, Alg. 1)
    refine: bool | str = True  #: True: L-BFGS in L; "fista": FISTA on M; False: none
    tol: float = 1e-4  #: the certified relative gap that "optimal" means
    time_limit: float | None = None  #: seconds for the whole solve (status "user_limit")
    precondition: bool = True  #: solve in pull-whitened coordinates
    search: object = "brute"  #: impostor search of the full checks (see ActiveList)
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  #: bytes of working memory
    check_every: int = 10  #: calls between full checks (adaptive)
    prune: float | None = 1.0  #: drop listed terms with hinge argument below −prune
    block_size: int = 512  #: rows per block of the tree searches
    callback: object = None  #: ``callback(iteration, objective, step)``; True stops
    phase1_settings: SubgradientSettings | None = None  #: replaces phase 1's defaults
    refine_settings: object = None  #: StageSettings or a dict of its fields (overrides)
    executor: object = None  #: runs the block functions (local, or Dask)
    rank_tol: float | None = 1e-3  #: refinement: drop factor directions below rank_tol·λ_max


def pull_whitening(X, targets, rtol=1e-8):
    """``S`` (and ``S⁻¹``) with ``Sᵀ P S = I``, ``P`` the pull matrix of :func:`pull_matrix`.

    ``P = Σ (x_i − x_j)(x_i − x_j)ᵀ`` over target pairs; eigenvalues of ``P`` below
    ``rtol·λ_max`` are raised to that floor (directions in which no target pair differs).
    """
    P = pull_matrix(X, targets)
    w, V = np.linalg.eigh(0.5 * (P + P.T))
    w = np.maximum(w, rtol * max(float(w[-1]), 1e-300))
    return V / np.sqrt(w), (V * np.sqrt(w)).T


def solve(X, y, targets, mu, settings=None, *, M0=None, **overrides):
    """Minimise eq. (14) with the large-scale solver; return a :class:`SolveResult`.

    Parameters
    ----------
    X : ndarray (n, d)
    y : int ndarray (n,), encoded labels
    targets : int ndarray (n, k), target neighbours
    mu : float
    settings : LMNNSettings, optional
    M0 : ndarray (d, d), optional
        Starting metric (default the identity), in the original coordinates.
    **overrides
        Fields of :class:`LMNNSettings` (``solve(..., tol=1e-6)``).

    Returns
    -------
    SolveResult
        ``matrix`` is ``M``; ``lower_bound`` the certificate; ``info`` has
        ``certified_gap``, ``mode`` ("active_set" or "streaming"), phase counts,
        ``escapes`` (the refinement's, when it escaped) and ``fallback`` (whether
        the convex fallback ran, when the refinement left the gap open).

    Examples
    --------
    >>> from convexmetric import datasets
    >>> from convexmetric.neighbors import target_neighbors
    >>> X, _, y, _ = datasets.load_split("iris")
    >>> res = solve(X, y, target_neighbors(X, y, 3), 0.5)
    >>> res.status, res.certified_gap <= 1e-4
    ('optimal', True)
    """
    s = replace(settings or LMNNSettings(), **overrides)
    s.memory_limit = check_memory_limit(s.memory_limit, owner="solve")
    (n, d), k = X.shape, targets.shape[1]
    check_budget(s.memory_limit, n, d, k, getattr(s.executor, "threads", 1))
    res = _dispatch(X, y, targets, mu, s, M0)
    if s.memory_limit is not None:  # what the fit allocates, at most
        res.info["memory_bound"] = s.memory_limit + data_share(n, d, k)
    return res


def _dispatch(X, y, targets, mu, s, M0):
    """:func:`solve` on checked settings: at unit scale, on the varying features."""
    scale = unit_scale(X)
    if not 2.0**-20 <= scale <= 2.0**20:  # far from 1: solved exactly at unit scale
        M0 = None if M0 is None else np.asarray(M0, dtype=float) / scale**2
        return rescaled(solve(X * scale, y, targets, mu, s, M0=M0), scale)
    varying = np.ptp(X, axis=0) > 0
    if not varying.any():
        return prove(constant(y, targets, mu, X.shape[1], M0), X, y, targets, mu, s.tol)
    if varying.any() and not varying.all():
        return _on_varying(X, y, targets, mu, s, M0, varying)
    settle_heap(s.memory_limit)  # temporaries from the heap, whatever the process freed
    with one_blas_thread():  # d×d and gather-sized products: threads only cost
        if not s.precondition:
            res = _solve(X, y, targets, mu, M0, s)
        else:
            S, S_inv = pull_whitening(X, targets)
            M0 = np.eye(X.shape[1]) if M0 is None else np.asarray(M0, dtype=float)
            res = _solve(X @ S, y, targets, mu, S_inv @ M0 @ S_inv.T, s)
            res.matrix = S @ res.matrix @ S.T
            res.matrices = [res.matrix]
            res.info["preconditioned"] = True
        return prove(res, X, y, targets, mu, s.tol)


def rescaled(res, scale):
    """A result on ``X·scale`` as one on ``X``: the metric ``M·scale²`` (eq. (14) is
    scale-covariant: the same objective, bound and dual point)."""
    res.matrix = res.matrix * scale**2
    res.matrices = [res.matrix]
    if res.info.get("components") is not None:
        res.info["components"] = res.info["components"] * scale
    res.info["rescaled"] = float(scale)
    return res


def constant(y, targets, mu, d, M0=None):
    """Every point equal: every distance is 0 whatever ``M``, so eq. (14) is ``μ`` times
    the number of hinge terms at every ``M`` and ``M0`` (default ``I``) is optimal; the
    certificate puts every multiplier at 1 (``S(λ) = 0``), proving that value."""
    I, J, L = all_triplets(y, targets)
    f = float(mu) * len(I)
    index = np.int32 if len(y) < 2**31 else np.int64
    cert = {"kind": "lmnn", "i": I.astype(index), "j": J.astype(index),
            "l": L.astype(index), "lam": np.ones(len(I)), "F": f}  # fmt: skip
    M = np.eye(d) if M0 is None else np.asarray(M0, dtype=float)
    return SolveResult(matrix=M, matrices=[M], objective=f, status="optimal",
                       solver="constant", lower_bound=f, certificate=cert,
                       info={"constant_features": d})  # fmt: skip


def _on_varying(X, y, targets, mu, s, M0, keep):
    """Solve without the features that are constant over ``X`` (an exact reduction).

    No distance between two of the points has a component there, so eq. (14) and its
    certificate are those of the problem on the other features; a raw MNIST sample has
    127 such pixels of 784 (every distance, search and scatter then costs ``(d − 127)``
    columns, every factor product ``(d − 127)²``). ``M`` keeps ``M0``'s block on them
    (the identity by default: no evidence moves it) and no cross terms."""
    d = X.shape[1]
    M0 = np.eye(d) if M0 is None else np.asarray(M0, dtype=float)
    res = solve(X[:, keep], y, targets, mu, s, M0=M0[np.ix_(keep, keep)])
    M = np.zeros((d, d))
    M[np.ix_(keep, keep)] = res.matrix
    M[np.ix_(~keep, ~keep)] = M0[np.ix_(~keep, ~keep)]
    res.matrix, res.matrices = M, [M]
    res.info["constant_features"] = int(d - keep.sum())
    return res


def _solve(X, y, targets, mu, M0, s):
    t0 = time.perf_counter()
    oracle = ActiveSetOracle(X, y, targets, mu, check_every=s.check_every, prune=s.prune,
                             block_size=s.block_size, search=s.search,
                             memory_limit=s.memory_limit, executor=s.executor)  # fmt: skip
    oracle.tol, oracle.alarm = s.tol, Alarm(s.time_limit, start=t0)
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
        res = stopped(oracle, M0, t0)
    oracle.alarm = NEVER  # the certificate's multipliers (a pass when streaming) are listed
    if res.lower_bound is None:  # stopped before the refinement bounded it: a bound at its point
        res.lower_bound = oracle.bound_at(res.matrix, res.objective)
    res.certificate = oracle.certificate(res.lower_bound)  # the dual point of lower_bound
    return res


def _phase1(oracle, M0, s):
    """App. A's subgradient phase; returns its result with ``matrix`` the metric ``M``."""
    # before a refinement, phase 1 only finds the active set and the scale: it hands over
    # once it gains under 1% in 10 iterations (the refinement's L-BFGS does the rest far
    # faster, to the same result: benchmarks/TUNING.md)
    rtol, patience = (HANDOVER_RTOL, 10) if s.refine else (1e-4, 20)
    ps = s.phase1_settings or SubgradientSettings(max_iter=s.max_iter, rtol=rtol,
                                                  patience=patience, step_scale=0.3)  # fmt: skip
    ps.time_limit = s.time_limit
    switched = []

    def callback(*args):
        # once the oracle streams, every subgradient step costs a pass over the data:
        # hand over to the refinement (L-BFGS needs far fewer evaluations)
        if s.callback is not None and s.callback(*args):
            return True
        if s.refine and oracle.mode == "streaming":
            switched.append(True)
            return True
        return False

    ps.callback = callback
    oracle.handover = 1e-3 if s.refine else 0.0
    if s.phase1 == "components":
        res = projected_subgradient(Factored(oracle), components_from_metric(M0), FullSpace(), ps)
        res.info["components"], res.matrix = res.matrix, res.matrix.T @ res.matrix
    elif s.phase1 == "metric":
        res = projected_subgradient(oracle, M0, PSDCone(), ps)
    else:
        raise ValueError(f"phase1 must be 'components' or 'metric'; got {s.phase1!r}.")
    oracle.handover = 0.0
    if s.refine and s.prune is not None:
        oracle.start_refinement(min(s.prune, REFINE_PRUNE))
    if switched:
        _after_switch(oracle, res, s.phase1 == "metric")
    return res


def _after_switch(oracle, res, metric):
    """Phase 1 handed over at the switch to streaming (not the user's stop). If its point
    was accepted on an incomplete list, restart from the last point whose terms were all
    known (its value is exact)."""
    if res.status == "user_limit":
        res.status = "optimal_inaccurate"
    ok = oracle.last_checked_value
    if ok is not None and not res.objective <= ok:
        M_ok, L_ok = oracle.last_checked
        L_ok = components_from_metric(M_ok) if L_ok is None else L_ok
        res.matrix, res.objective = (M_ok if metric else L_ok.T @ L_ok), ok
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
            rs = replace(s.refine_settings or SmoothingSettings(), time_limit=remaining,
                         callback=s.callback, max_iterations=left)  # fmt: skip
            res2 = smoothed_descent(oracle, res.matrix, PSDCone(), rs)
        else:  # smoothed L-BFGS in the factor L (default)
            rs = replace(refine_settings(s, remaining, gap_tol=s.tol), max_iterations=left)
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
    info.update(active_list=len(oracle.keys), active=int(np.count_nonzero(oracle.mask["sub"])),
                full_checks=oracle.full_checks,
                search=str(getattr(oracle.search, "choice", oracle.search)),
                **oracle.mode_info())  # fmt: skip
    info["stages"] = stages
    return SolveResult(matrix=best_M, objective=float(best_f), status=status,
                       iterations=iterations, seconds=time.perf_counter() - t0,
                       solver="+".join(stages), history=history, lower_bound=lower,
                       info=info)  # fmt: skip


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
        at = Stage(result.matrix, float(result.info.get("final_sigma", 1e-6)), result.matrix,
                   result.objective, run.lower, 0, L, L, stopping=True)  # fmt: skip
        moved = oracle.escape(at)
        if moved is not None:
            rs = replace(refine_settings(s, run.clock.remaining()), max_iterations=run.left)
            r = run.keep(refine(oracle, moved, rs, s.rank_tol))
            run.escapes += 1 + r.info.get("escapes", 0)
    out = run.fallback().finish()
    out.certificate = oracle.certificate(out.lower_bound)
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
