"""Refinement stage of the LMNN large-scale solver: smoothed L-BFGS in the factor L.

App. A's subgradient descent stalls about 1e-3 above the optimum of eq. (14): at the
optimum many hinge terms sit exactly at their kink. This stage minimises the smoothed
objective (see :meth:`ActiveSetOracle.smooth`: each hinge replaced by
``φ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²``) over the factor ``L`` (``M = LᵀL``) with
L-BFGS, for a decreasing sequence of widths σ, moving the prox centre λ̄ to the current
dual estimate between stages (an augmented-Lagrangian step, which removes the
smoothing bias as λ̄ approaches the optimal multipliers). The factorisation keeps every
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
    sigma_factor=0.3,
    sigma_min=1e-6,
    stage_iter=300,
    rtol=1e-7,
    stalls=2,
    time_limit=None,
    callback=None,
    gap_tol=None,
):
    """Continuation over σ of L-BFGS on the smoothed eq. (14) in ``L``; a SolveResult.

    ``gap_tol``: when the oracle streams (``oracle.mode == "streaming"``, every
    evaluation a full pass over the data), stop as soon as the certified relative gap
    is within it instead of refining on.
    """
    t0 = time.perf_counter()
    d = L0.shape[1]
    L = np.array(L0, dtype=float)
    best_L, best_f = L.copy(), float(oracle.objective(L.T @ L, components=L))
    history, evals, sigma, status, lower = [best_f], 0, sigma0, "optimal", None
    n_stalled = 0

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
                    options={"maxiter": stage_iter, "gtol": 1e-12, "ftol": 1e-15, "maxcor": 20},
                )
                L = res.x.reshape(L.shape)
            except _Stop:
                status = "user_limit"
                break
            f = float(oracle.objective(L.T @ L, components=L))
            history.append(f)
            stalled = best_f - f <= rtol * max(abs(best_f), 1e-12)
            n_stalled = n_stalled + 1 if stalled and sigma < sigma0 else 0
            if f < best_f:
                best_L, best_f = L.copy(), f
            M = L.T @ L
            lower = max(oracle.lower_bound(M, sigma, F=best_f), -np.inf if lower is None else lower)
            notify(evals, f, lower_bound=lower)
            if callback is not None and callback(evals, f, sigma):
                status = "user_limit"
                break
            certified = gap_tol is not None and best_f - lower <= gap_tol * max(abs(best_f), 1e-300)
            if n_stalled >= stalls or sigma <= sigma_min or certified:
                if oracle.full_check(best_L.T @ best_L, best_L):
                    break
            oracle.recenter(M, sigma)
            sigma = max(sigma * sigma_factor, sigma_min)
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
