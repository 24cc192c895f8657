"""Accelerated projected gradient on a smoothed objective, with continuation.

For a convex objective made of a linear part and hinge terms,
``f(x) = ⟨c, x⟩ + Σ_t w_t [z_t(x)]_+`` with affine ``z_t``, the hinge is replaced by
its Huber (Nesterov) smoothing

    h_σ(z) = 0 (z ≤ 0),  z²/(2σ) (0 < z < σ),  z − σ/2 (z ≥ σ),

so ``f_σ ≤ f ≤ f_σ + (σ/2)·Σ_{z_t>0} w_t`` and ``∇f_σ`` is the hinge subgradient
with the kink terms weighted by ``clip(z/σ, 0, 1)``: an averaged subgradient. FISTA
with backtracking on the Lipschitz estimate and adaptive restart (O'Donoghue &
Candès) minimises ``f_σ`` over the cone, warm-started as ``σ`` shrinks geometrically
(continuation). The best iterate under the *exact* objective is kept.

This is the refinement stage of the large-scale solvers: plain projected
subgradient descent (App. A of Weinberger & Saul) reaches a relative gap of about
1e-3 and then stalls at the kinks; the smoothed stage goes on to ≤ 1e-4.

The oracle protocol: ``oracle.smooth(x, sigma) -> (f_sigma, grad)`` and
``oracle.objective(x) -> f`` (exact); optionally ``oracle.check(x) -> bool``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..progress import notify
from ..result import SolveResult
from .subgradient import _axpy, _copy, _norm


def _inner(a, b):
    if isinstance(a, list):
        return float(sum(np.vdot(ai, bi).real for ai, bi in zip(a, b)))
    return float(np.vdot(a, b).real)


def _sub(a, b):
    return [ai - bi for ai, bi in zip(a, b)] if isinstance(a, list) else a - b


@dataclass(kw_only=True)
class SmoothingSettings:
    """Settings of :func:`smoothed_descent` (documented defaults)."""

    sigma0: float = 0.03  #: initial smoothing width (in units of the hinge argument)
    sigma_min: float = 1e-6  #: final smoothing width
    sigma_factor: float = 0.3  #: σ ← σ · factor between stages
    stage_iter: int = 300  #: FISTA iterations per stage at most
    stage_rtol: float = 1e-9  #: a stage ends when f_σ improves by less than this (relative)
    window: int = 20  #: ... over this many iterations
    rtol: float = 1e-6  #: a stage "stalls" if it improves the exact objective by less (relative)
    stalls: int = 1  #: stop after this many stalled stages in a row
    max_iter: int = 20000  #: total gradient evaluations
    gap_tol: float = 1e-6  #: stop when (objective − lower bound)/|objective| is below this
    recenter: bool = True  #: move the dual prox centre between stages (oracles with ``recenter``)
    time_limit: float | None = None
    callback: object = None


def smoothed_descent(oracle, x0, cone, settings=None, *, solver_name="smoothed", **kw):
    """Continuation over σ of FISTA on ``f_σ``; returns a :class:`SolveResult`."""
    s = settings if settings is not None else SmoothingSettings(**kw)
    t0 = time.perf_counter()
    x = cone.project(_copy(x0))
    best_x, best_f = _copy(x), float(oracle.objective(x))
    history = [best_f]
    Lip, sigma, evals, status = None, s.sigma0, 0, "optimal"
    lower, stalls = None, 0
    try:
        while True:
            _x_prev, t_prev = _copy(x), 1.0
            y = _copy(x)
            f_prev, window = np.inf, []
            for _ in range(s.stage_iter):
                fy, gy = oracle.smooth(y, sigma)
                evals += 1
                if Lip is None:
                    Lip = max(_norm(gy), 1e-12) / max(_norm(x), 1.0)
                for _ in range(60):  # backtracking on the Lipschitz estimate
                    version = getattr(oracle, "version", None)
                    x_new = cone.project(_axpy(y, -1.0 / Lip, gy))
                    fx, _ = oracle.smooth(x_new, sigma)
                    evals += 1
                    if version is not None and oracle.version != version:
                        fy, gy = oracle.smooth(y, sigma)  # the approximation grew
                        f_prev = np.inf
                        continue
                    dx = _sub(x_new, y)
                    bound = fy + _inner(gy, dx) + 0.5 * Lip * _inner(dx, dx)
                    if fx <= bound + 1e-12 * max(abs(fy), 1.0):
                        break
                    Lip *= 2.0
                if fx > f_prev:  # adaptive restart: drop the momentum
                    t_prev, y = 1.0, _copy(x)
                    Lip *= 0.9
                    f_prev = np.inf
                    continue
                t_new = 0.5 * (1 + np.sqrt(1 + 4 * t_prev**2))
                y = _axpy(x_new, (t_prev - 1) / t_new, _sub(x_new, x))
                window.append(fx)
                converged = len(window) > s.window and window[
                    -s.window - 1
                ] - fx <= s.stage_rtol * max(abs(fx), 1e-12)
                x, t_prev, f_prev = x_new, t_new, fx
                Lip *= 0.95
                if converged or evals >= s.max_iter:
                    break
                if s.time_limit is not None and time.perf_counter() - t0 > s.time_limit:
                    break
            f_exact = float(oracle.objective(x))
            history.append(f_exact)
            # a stage "stalls" when it barely improves the best exact objective; the first
            # stage (largest σ) may not beat a good warm start and is never counted
            stalled = best_f - f_exact <= s.rtol * max(abs(best_f), 1e-12)
            stalls = stalls + 1 if stalled and sigma < s.sigma0 else 0
            if f_exact < best_f:
                best_x, best_f = _copy(x), f_exact
            notify(evals, f_exact)
            if s.callback is not None and s.callback(evals, f_exact, sigma):
                status = "user_limit"
                break
            if s.time_limit is not None and time.perf_counter() - t0 > s.time_limit:
                status = "user_limit"
                break
            if evals >= s.max_iter:
                status = "optimal_inaccurate"
                break
            bound = getattr(oracle, "lower_bound", None)
            if bound is not None:
                lower = max(float(bound(x, sigma)), -np.inf if lower is None else lower)
            done = lower is not None and best_f - lower <= s.gap_tol * max(abs(best_f), 1e-12)
            done = done or stalls >= s.stalls or (stalls and sigma <= s.sigma_min)
            if done:
                check = getattr(oracle, "check", None)
                if check is None or check(best_x):
                    break
            recenter = getattr(oracle, "recenter", None)
            if recenter is not None and s.recenter:
                recenter(x, sigma)
            sigma = max(sigma * s.sigma_factor, s.sigma_min)
    except KeyboardInterrupt:
        status = "user_limit"
    return SolveResult(
        matrix=None if isinstance(best_x, list) else best_x,
        matrices=best_x if isinstance(best_x, list) else [best_x],
        objective=best_f,
        status=status,
        iterations=evals,
        seconds=time.perf_counter() - t0,
        solver=solver_name,
        history=history,
        lower_bound=lower,
        info={"final_sigma": sigma},
    )
