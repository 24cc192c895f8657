"""Closing LMNN's certified gap: escape Burer–Monteiro saddles, then a convex method on M.

Phase 1 and the refinement of :func:`convexmetric.solvers.lmnn.solve` descend in the
factor ``L`` (``M = LᵀL``), where eq. (14) is not convex: a rank-deficient ``L`` can be
stationary (``2 L G = 0``) while ``M`` is not optimal. Which saddle the descent meets
depends on last-bit rounding (a polynomial-kernel instance stopped 12% above the
optimum under one OpenBLAS kernel and converged under another). The certificate
exposes such points, and this module closes the gap from wherever the descent stopped:

1. **Escape.** With the dual estimate ``λ`` of the refinement, the Lagrangian's
   gradient in ``M`` is ``S(λ) = (1 − μ)P + μ Σ λ_t (C_ij − C_il)``. At a factor
   stationary point ``L S = 0``, so ``M`` is optimal iff ``S ⪰ 0`` (with ``λ`` optimal).
   A negative eigenvalue ``s₀ < 0`` with unit eigenvector ``v`` is a descent direction
   ``vvᵀ`` that keeps ``M + t vvᵀ ⪰ 0`` for every ``t ≥ 0``; a line search on the exact
   objective picks ``t`` and the factor refinement restarts from there (the classical
   rank-increase step of low-rank SDP methods).
2. **Convex fallback.** If the gap is still open (no negative curvature left, or the
   rounds are spent), FISTA on the smoothed objective over ``M ⪰ 0`` with projection
   (:func:`.smoothing.smoothed_descent`), which is convex and cannot stall at a
   non-optimal point, runs until the certificate closes or its budget ends.

The status is "optimal" only when the certified relative gap
``(objective − lower_bound)/|objective|`` is within ``tol``; otherwise it stays
"optimal_inaccurate" whatever the stages said.
"""

from __future__ import annotations

import time

import numpy as np

from ..cones import PSDCone
from ..linalg import components_from_metric, triplet_scatter
from ..optim.linesearch import golden_section
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from .refine import refine_components


def certified_gap(res):
    """``(objective − lower_bound)/max(|objective|, 1e-12)`` of a SolveResult (``inf``
    without a bound); the floor makes an objective of 0 with a bound of 0 certified."""
    if res.lower_bound is None or not np.isfinite(res.objective):
        return np.inf
    return max(res.objective - res.lower_bound, 0.0) / max(abs(res.objective), 1e-12)


def dual_matrix(oracle, M, sigma):
    """``S(λ)`` at ``M`` with the oracle's dual estimate ``λ = clip(λ̄ + z/σ, 0, 1)``.

    In the streaming mode (λ̄ = 0) the sum runs over all triplets, by row blocks."""
    z = None if oracle.mode == "streaming" else oracle._hinge_args(M, accepted=True)
    if z is None:  # streaming mode: Σ λ (C_ij − C_il) accumulated block by block
        return oracle.stream.dual(components_from_metric(M), sigma)[0]
    lam = np.clip(oracle.mask["lam"] + z / sigma, 0.0, 1.0)
    nz = np.flatnonzero(lam > 0)
    G = triplet_scatter(oracle.X, oracle.I[nz], oracle.J[nz], oracle.L[nz], lam[nz])
    return (1 - oracle.mu) * oracle.C_pull + oracle.mu * G


def golden_line_search(phi, t_hi, max_doublings=40, golden_steps=30):
    """Minimise a convex ``φ`` over ``t ≥ 0`` from a first trial step ``t_hi``.

    Shrinks the step until ``φ`` decreases, doubles it until ``φ`` rises, then golden
    section on the bracket. Returns ``(t, φ(t))``, or ``(0, φ(0))`` without a decrease.
    """
    f0 = phi(0.0)
    f_hi = phi(t_hi)
    if f_hi >= f0:  # shrink until a decrease (the direction is a descent direction)
        for _ in range(max_doublings):
            t_hi *= 0.1
            f_hi = phi(t_hi)
            if f_hi < f0:
                break
        else:
            return 0.0, f0
    lo = 0.0
    for _ in range(max_doublings):  # bracket: grow until φ rises
        t_next = 2.0 * t_hi
        f_next = phi(t_next)
        if f_next >= f_hi:
            break
        lo, t_hi, f_hi = t_hi, t_next, f_next
    else:
        return t_hi, f_hi
    t, ft = golden_section(phi, lo, 2.0 * t_hi, golden_steps)
    return (t, ft) if ft < f0 else (0.0, f0)


def _line_search(oracle, M, D):
    """Minimise the exact (convex in t) objective ``f(M + tD)`` over ``t ≥ 0``."""
    t0 = max(float(np.trace(M)), 1e-8) * 1e-3
    return golden_line_search(lambda t: float(oracle.objective(M + t * D)), t0)


def close_gap(oracle, res, *, tol=1e-4, max_rounds=5, fallback_iter=20000, time_limit=None,
              callback=None, refine_settings=None):  # fmt: skip
    """Continue from ``res`` (a refined LMNN result on ``oracle``'s data) until certified.

    ``oracle`` is the :class:`~convexmetric.solvers.lmnn.ActiveSetOracle` the refinement
    ran on (its dual prox centre is the starting dual estimate). Returns a new
    SolveResult whose ``iterations``/``seconds`` count this stage only and whose
    ``info`` records ``escapes`` (rank-increase steps taken), ``fallback`` (whether the
    convex stage ran) and ``certified_gap``.
    """
    t0 = time.perf_counter()
    best, escapes, fallback, evals, stopped = res, 0, False, 0, False
    if best.lower_bound is None or not np.isfinite(best.lower_bound):
        best.lower_bound = 0.0  # eq. (14) ≥ 0
    sigma = float(res.info.get("final_sigma", 1e-6))

    def remaining():
        return None if time_limit is None else time_limit - (time.perf_counter() - t0)

    for _ in range(max_rounds):
        if certified_gap(best) <= tol or (remaining() is not None and remaining() <= 0):
            break
        M = best.matrix
        S = dual_matrix(oracle, M, sigma)
        w, V = np.linalg.eigh(0.5 * (S + S.T))
        if w[0] >= -1e-10 * max(1.0, float(np.abs(w).max())):
            break  # no negative curvature: the gap is the dual estimate's, not a saddle
        v = V[:, 0]
        t, _ = _line_search(oracle, M, np.outer(v, v))
        if t <= 0.0:
            break
        escapes += 1
        L0 = components_from_metric(M + t * np.outer(v, v))
        r = refine_components(oracle, L0, time_limit=remaining(), callback=callback,
                              **(refine_settings or {}))  # fmt: skip
        evals += r.iterations
        sigma = float(r.info.get("final_sigma", sigma))
        lower = max(best.lower_bound or -np.inf, r.lower_bound or -np.inf)
        if r.objective < best.objective:
            best = r
        best.lower_bound = lower
        if r.status == "user_limit":
            stopped = True
            break
    if not stopped and certified_gap(best) > tol and (remaining() is None or remaining() > 0):
        # the dual estimate of a saddle is poor: restart the prox centre at λ̄ = 0 and
        # the continuation at the default width (a small σ with a stale centre stalls)
        fallback = True
        oracle.mask["lam"] = np.zeros_like(oracle.mask["lam"])
        s = SmoothingSettings(gap_tol=tol, max_iter=fallback_iter, time_limit=remaining(),
                              callback=callback)  # fmt: skip
        r = smoothed_descent(oracle, best.matrix, PSDCone(), s)
        evals += r.iterations
        lower = max(best.lower_bound or -np.inf, r.lower_bound or -np.inf)
        if r.objective < best.objective:
            best = r
        best.lower_bound = lower
        stopped = r.status == "user_limit"
        if not stopped and (remaining() is None or remaining() > 0):
            # polish in the factor, now away from the saddle (kept only if better)
            r = refine_components(oracle, components_from_metric(best.matrix),
                                  sigma0=float(r.info.get("final_sigma", 1e-3)),
                                  time_limit=remaining(), callback=callback)  # fmt: skip
            evals += r.iterations
            lower = max(best.lower_bound, r.lower_bound or -np.inf)
            if r.objective < best.objective:
                best = r
            best.lower_bound = lower
            stopped = r.status == "user_limit"
    out = best
    # eq. (14) is a sum of nonnegative terms, so 0 is always a valid bound (it certifies
    # the instances with no active triplet, where the refinement computes none)
    lb = out.lower_bound if out.lower_bound is not None and np.isfinite(out.lower_bound) else 0.0
    out.lower_bound = min(max(lb, 0.0), out.objective)
    gap = certified_gap(out)
    out_of_time = remaining() is not None and remaining() <= 0
    if gap <= tol:
        out.status = "optimal"
    else:
        out.status = "user_limit" if out_of_time or stopped else "optimal_inaccurate"
    out.iterations, out.seconds = evals, time.perf_counter() - t0
    out.info = dict(out.info, escapes=escapes, fallback=fallback, certified_gap=gap)
    return out
