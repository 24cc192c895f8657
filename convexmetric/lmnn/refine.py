"""Refinement stage of the LMNN large-scale solver: smoothed L-BFGS in the factor L.

App. A's subgradient descent stalls about 1e-3 above the optimum of eq. (14): at the
optimum many hinge terms sit exactly at their kink. This stage minimises the smoothed
objective (see :meth:`ActiveSetOracle.smooth`: each hinge replaced by
``φ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²``) over the factor ``L`` (``M = LᵀL``) with
L-BFGS, stage by stage at a fixed width σ, moving the prox centre λ̄ to the current
dual estimate between stages (an augmented-Lagrangian step, which removes the
smoothing bias as λ̄ approaches the optimal multipliers; when streaming, with no
centre, σ decreases instead). The factorisation keeps every
iterate PSD without projections and is far better conditioned than first-order steps
on ``M``; every stage is checked on the exact objective and the best iterate is kept.
The dual estimate also gives a certified lower bound (:meth:`ActiveSetOracle.lower_bound`).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

from ..progress import notify
from ..result import SolveResult


class _Stop(Exception):
    pass


def refine_components(
    oracle,
    L0,
    *,
    sigma0=0.03,
    sigma_factor=None,
    sigma_min=1e-6,
    stage_iter=None,
    rtol=1e-7,
    stalls=2,
    time_limit=None,
    callback=None,
    gap_tol=None,
    max_stages=500,
):
    """L-BFGS on the smoothed eq. (14) in ``L``, stage by stage; a SolveResult.

    Over an active list each stage ends by moving the prox centre to the dual estimate,
    and σ stays fixed (``sigma_factor=None`` means 1.0, ``stage_iter=None`` 50): a
    proximal method of multipliers, whose centre removes the smoothing bias. The
    streaming mode has no centre (λ̄ = 0), so there σ shrinks (0.3 per stage, 300
    iterations a stage) instead. On digits the fixed σ took 240 evaluations to certify
    1e-4 where the continuation 0.03 → 0.009 → 0.0027 took 646 (breast_cancer: 580 vs
    2,119). A stage past the first without a relative gain of ``rtol`` in the exact
    objective is a stall; a fixed σ shrinks by 0.3 at each. The run ends when the
    certified gap is within ``gap_tol``, after ``stalls`` stalls in a row (a fixed σ
    must have shrunk to 1% of ``sigma0`` first), at ``sigma_min``, or after
    ``max_stages``; a full check at the best point must then
    find no new violated triplet (else it goes on).

    ``gap_tol``: stop as soon as the certified relative gap ``(best − bound)/best`` is
    within it (after a strict full check at the best point) instead of refining on. The
    bound of each stage is :meth:`~.lmnn.ActiveSetOracle.lower_bound` with the best
    attained value (which enables the crossover of :mod:`.lmnn_dual` near convergence).
    """
    t0 = time.perf_counter()
    d = L0.shape[1]
    L = np.array(L0, dtype=float)
    best_L, best_f = L.copy(), float(oracle.objective(L.T @ L, components=L))
    history, evals, sigma, status, lower = [best_f], 0, sigma0, "optimal", None
    n_stalled, stage = 0, 0

    def schedule():
        streaming = getattr(oracle, "mode", "active_set") == "streaming"
        factor = sigma_factor if sigma_factor is not None else (0.3 if streaming else 1.0)
        return factor, stage_iter if stage_iter is not None else (300 if streaming else 50)

    def fg(v):
        nonlocal evals
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise _Stop
        evals += 1
        Lm = v.reshape(L.shape)
        f, G = oracle.smooth(Lm.T @ Lm, sigma, components=Lm)
        return f, (2.0 * (Lm @ G)).ravel()

    try:
        while True:
            oracle.full_check(L.T @ L, L)
            try:
                res = minimize(
                    fg,
                    L.ravel(),
                    jac=True,
                    method="L-BFGS-B",
                    options={"maxiter": schedule()[1], "gtol": 1e-12, "ftol": 1e-15, "maxcor": 20},
                )
                L = res.x.reshape(L.shape)
            except _Stop:
                status = "user_limit"
                break
            f = float(oracle.objective(L.T @ L, components=L))
            history.append(f)
            stalled = best_f - f <= rtol * max(abs(best_f), 1e-12)
            n_stalled = n_stalled + 1 if stalled and stage > 0 else 0
            if f < best_f:
                best_L, best_f = L.copy(), f
            M = L.T @ L
            lower = max(oracle.lower_bound(M, sigma, F=best_f), -np.inf if lower is None else lower)
            notify(evals, f, lower_bound=lower)
            if callback is not None and callback(evals, f, sigma):
                status = "user_limit"
                break
            certified = gap_tol is not None and best_f - lower <= gap_tol * max(abs(best_f), 1e-300)
            # a fixed σ must have shrunk (by stalls) to 1% of σ₀ before stalls end the run
            shrunk = schedule()[0] < 1 or sigma <= 1e-2 * sigma0
            done = (n_stalled >= stalls and shrunk) or sigma <= sigma_min or stage + 1 >= max_stages
            if done or certified:
                if oracle.full_check(best_L.T @ best_L, best_L) or stage + 1 >= max_stages:
                    break
            oracle.recenter(M, sigma)
            # a fixed σ shrinks where the exact objective stalls (inexact inner solves
            # at a wide σ leave the primal short of the optimum: iris, about 5e-7)
            factor = schedule()[0]
            sigma = max(sigma * (0.3 if factor >= 1 and n_stalled else factor), sigma_min)
            stage += 1
    except KeyboardInterrupt:
        status = "user_limit"
    return SolveResult(
        matrix=best_L.T @ best_L,
        objective=best_f,
        status=status,
        iterations=evals,
        seconds=time.perf_counter() - t0,
        solver="smoothed-lbfgs",
        history=history,
        lower_bound=lower,
        info={"final_sigma": sigma, "components": best_L, "d": d},
    )
