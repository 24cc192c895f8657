"""Closing the certified gap of multi-metric LMNN (§5.2), as :mod:`.lmnn_certify` does for one.

:func:`.lmnn_multi.solve` no longer calls :func:`close_gap`: the convex polish of
:mod:`.lmnn_multi_polish` certifies faster (digits: 8e-4 after about 130 evaluations,
where each escape below cost 700–3,000). The escape stays available as a tool.

The refinement descends in the factors ``M^g = L_gᵀL_g``, where the problem is not
convex: a factor point can be stationary (``L_g S_g = 0`` for every block) while some
``S_g(λ) = (1 − μ)P_g + μ Σ λ_t (C_ij[g(j)=g] − C_il[g(l)=g])`` has negative
eigenvalues in directions that ``M^g`` does not use. On the digits standard split the
refinement stopped with a 17% certified gap, and every block with a negative
eigenvalue had ``vᵀM^g v ≈ 0.01`` along it (a Burer–Monteiro saddle, not a poor dual
estimate: ``μ Σ λ`` already matched the objective to 0.2%).

1. **Escape.** ``D_g = −min(S_g, 0)`` (the negative part of every block) keeps
   ``M^g + tD_g ⪰ 0`` for all ``t ≥ 0`` and has directional derivative
   ``−Σ_g ‖min(S_g, 0)‖²_F < 0``; a line search on the objective over the active list
   (exact there; a full check follows in the refinement) picks ``t``, and the factor
   refinement restarts from the new point.
2. **Convex fallback.** FISTA on the smoothed objective over the product of PSD cones
   (:func:`.smoothing.smoothed_descent`), which cannot stall at a non-optimal point.

Status "optimal" only when ``(objective − lower_bound)/|objective| ≤ tol``.
"""

from __future__ import annotations

import time

import numpy as np

from ..cones import ProductCone, PSDCone
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from .close_gap import certified_gap, golden_line_search


def negative_parts(oracle, Ms, sigma):
    """``[−min(S_g(λ), 0)]`` at ``Ms`` (original coordinates; ``oracle`` the base oracle)."""
    z = oracle._z(Ms)
    lam = np.clip(oracle.lam_bar + z / sigma, 0.0, 1.0)
    lam[oracle._outside_range()] = 0.0
    out, worst = [], 0.0
    for S in oracle._grad(lam):
        w, V = np.linalg.eigh(0.5 * (S + S.T))
        neg = np.minimum(w, 0.0)
        neg[neg > -1e-10 * max(1.0, float(np.abs(w).max()))] = 0.0
        worst = min(worst, float(neg.min()))
        out.append((V * -neg) @ V.T)
    return out, worst


def _line_search(f, Ms, D, t0):
    """Minimise the convex ``φ(t) = f([M + tD])`` over ``t ≥ 0``; returns ``(t, φ(t))``."""
    return golden_line_search(lambda t: float(f([M + t * Dg for M, Dg in zip(Ms, D)])), t0)


def close_gap(oracle, res, refine, *, tol=1e-4, max_rounds=5, fallback_iter=5000,
              time_limit=None):  # fmt: skip
    """Continue from ``res`` (matrices in ``oracle``'s coordinates) until certified.

    ``oracle`` is a :class:`~.lmnn_multi.MultiMetricOracle` or its
    :class:`~.lmnn_multi.WhitenedOracle`; ``refine(oracle, Ms, time_limit)`` restarts the
    factor refinement. Returns ``(result, info)``; ``info`` counts ``escapes`` and
    records ``fallback`` and ``certified_gap``.
    """
    t0 = time.perf_counter()
    base = getattr(oracle, "base", oracle)
    to_orig = getattr(oracle, "to_original", lambda Ms: Ms)
    from_orig = getattr(oracle, "from_original", lambda Ms: Ms)
    best, escapes, fallback, stopped = res, 0, False, False
    sigma = float(res.info.get("final_sigma", 1e-6))

    def remaining():
        return None if time_limit is None else time_limit - (time.perf_counter() - t0)

    def out_of_time():
        return remaining() is not None and remaining() <= 0

    def keep(r):
        nonlocal best
        lower = max(best.lower_bound or -np.inf, r.lower_bound or -np.inf)
        if r.objective < best.objective:
            best = r
        best.lower_bound = lower

    for _ in range(max_rounds):
        if certified_gap(best) <= tol or out_of_time():
            break
        Ms = to_orig(best.matrices)
        D, worst = negative_parts(base, Ms, sigma)
        if worst == 0.0:
            break  # no negative curvature: the gap is the dual estimate's
        scale = max(float(np.trace(M)) for M in Ms) / max(float(np.trace(Dg)) for Dg in D)
        every, base.check_every = base.check_every, 1 << 62  # one list for the whole search
        try:
            t, _ = _line_search(lambda x: base(x)[0], Ms, D, 1e-3 * max(scale, 1e-12))
        finally:
            base.check_every = every
        if t <= 0.0:
            break
        escapes += 1
        r = refine(oracle, from_orig([M + t * Dg for M, Dg in zip(Ms, D)]), remaining())
        sigma = float(r.info.get("final_sigma", sigma))
        keep(r)
        if r.status == "user_limit":
            stopped = True
            break
    if not stopped and certified_gap(best) > tol and not out_of_time():
        fallback = True
        base.lam_bar = np.zeros_like(base.lam_bar)
        s = SmoothingSettings(gap_tol=tol, max_iter=fallback_iter, time_limit=remaining())
        cone = ProductCone([PSDCone() for _ in best.matrices])
        r = smoothed_descent(oracle, [M.copy() for M in best.matrices], cone, s)
        keep(r)
        stopped = r.status == "user_limit"
    gap = certified_gap(best)
    if gap <= tol:
        status = "optimal"
    else:
        status = "user_limit" if stopped or out_of_time() else "optimal_inaccurate"
    info = {"escapes": escapes, "fallback": fallback, "certified_gap": gap}
    return best, status, info
