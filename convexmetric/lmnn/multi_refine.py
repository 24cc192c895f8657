"""Multi-metric LMNN (§5.2): per-block whitening and the factor refinement.

:class:`WhitenedOracle` is the exact change of variables ``M^g = S_g M'^g S_gᵀ`` with
``S_gᵀP_gS_g = I``; :func:`refine_factors` is L-BFGS on the smoothed objective in the
factors ``M^g = L_gᵀL_g``, with dual recentring between stages (used by
:func:`.lmnn_multi.solve`).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

from ..linalg import components_from_metric
from ..result import SolveResult


class WhitenedOracle:
    """A multi-metric oracle in per-block whitened coordinates ``M^g = S_g M'^g S_gᵀ``.

    With ``S_gᵀ P_g S_g = I`` (eigenvalues of ``P_g`` floored at ``rtol·λ_max``) the
    pull term is ``Σ tr M'^g``: the curvature that uneven feature scales and nearly
    singular pull matrices give the factor descent is equalised block by block, as
    :func:`convexmetric.solvers.lmnn.pull_whitening` does for one metric. The objective
    depends on each ``M^g`` only through distances, so this is an exact change of
    variables; gradients map as ``G'_g = S_gᵀ G_g S_g``, values and bounds unchanged.
    """

    def __init__(self, oracle, rtol=1e-8):
        self.base = oracle
        self.S, self.S_inv = [], []
        for P in oracle.P:
            w, V = np.linalg.eigh(0.5 * (P + P.T))
            w = np.maximum(w, rtol * max(float(w[-1]), 1e-300))
            self.S.append(V / np.sqrt(w))
            self.S_inv.append((V * np.sqrt(w)).T)

    def to_original(self, Ms):
        return [S @ M @ S.T for S, M in zip(self.S, Ms)]

    def from_original(self, Ms):
        return [Si @ M @ Si.T for Si, M in zip(self.S_inv, Ms)]

    def _grads(self, G):
        return [S.T @ Gg @ S for S, Gg in zip(self.S, G)]

    @property
    def version(self):
        return self.base.version

    @property
    def check_every(self):
        return self.base.check_every

    @check_every.setter
    def check_every(self, value):
        self.base.check_every = value

    def __call__(self, Ms):
        f, G = self.base(self.to_original(Ms))
        return f, self._grads(G)

    def smooth(self, Ms, sigma, grad=True):
        if not grad:
            return self.base.smooth(self.to_original(Ms), sigma, grad=False)
        f, G = self.base.smooth(self.to_original(Ms), sigma)
        return f, self._grads(G)

    def recenter(self, Ms, sigma):
        self.base.recenter(self.to_original(Ms), sigma)

    def objective(self, Ms):
        return self.base.objective(self.to_original(Ms))

    def lower_bound(self, Ms, sigma):
        return self.base.lower_bound(self.to_original(Ms), sigma)

    def full_check(self, Ms, margin=None):
        return self.base.full_check(self.to_original(Ms), margin)

    def check(self, Ms):
        return self.base.check(self.to_original(Ms))


def refine_factors(
    oracle,
    Ms0,
    *,
    sigma0=0.03,
    sigma_factor=1.0,
    sigma_min=1e-6,
    stage_iter=100,
    first_stage=5,
    rtol=1e-7,
    stalls=2,
    switch_gap=None,
    exact_stages=0,
    maxcor=20,
    time_limit=None,
):
    """L-BFGS on the smoothed objective in the factors ``L_g``, stage by stage.

    Each stage starts with a full check (so the active list is fixed while L-BFGS runs)
    and ends with dual recentring; σ shrinks by ``sigma_factor`` per stage (1: fixed σ,
    a proximal method of multipliers). Stage ``k`` runs at most
    ``min(stage_iter, first_stage·2^k)`` iterations: from the phase-1 point the list is
    stale and long first stages run off to objectives of 10⁴–10⁵ (digits), which the
    next full check pays for with lists of 10⁵–10⁶ terms. The run ends (after a final
    check finds no new violated triplet) when the exact objective stalls, σ reaches
    ``sigma_min`` (``sigma_factor < 1``), or the certified gap is within ``switch_gap``.
    The first ``exact_stages`` stages search all triplets at every evaluation (the list
    is rebuilt each time), so the large first move sees the real objective.
    """
    t0 = time.perf_counter()
    Ls = [components_from_metric(M) for M in Ms0]
    d, c = Ls[0].shape[1], len(Ls)
    every, oracle.check_every = oracle.check_every, 1 << 62  # checks only between stages

    def metrics(v):
        Lv = v.reshape(c, d, d)
        return Lv, [L.T @ L for L in Lv]

    evals, sigma, status, stalled, lower, stage = 0, sigma0, "optimal", 0, None, 0
    v = np.stack(Ls).ravel()
    best_v, best_f = v.copy(), float(oracle.objective(metrics(v)[1]))
    history = [best_f]

    def fg(v):
        nonlocal evals
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise StopIteration
        evals += 1
        Lv, Ms = metrics(v)
        f, G = oracle.smooth(Ms, sigma)
        return f, np.stack([2.0 * (L @ Gg) for L, Gg in zip(Lv, G)]).ravel()

    try:
        while True:
            oracle.full_check(metrics(v)[1])
            oracle.check_every = 1 if stage < exact_stages else 1 << 62
            try:
                it = min(stage_iter, first_stage << min(stage, 30))
                opts = {"maxiter": it, "gtol": 1e-12, "ftol": 1e-15, "maxcor": maxcor}
                v = minimize(fg, v, jac=True, method="L-BFGS-B", options=opts).x
            except StopIteration:
                status = "user_limit"
                break
            f = float(oracle.objective(metrics(v)[1]))
            history.append(f)
            bound = oracle.lower_bound(metrics(v)[1], sigma)
            lower = bound if lower is None else max(lower, bound)
            little = best_f - f <= rtol * max(abs(best_f), 1e-12)
            stalled = stalled + 1 if little and it >= stage_iter else 0
            if f < best_f:
                best_v, best_f = v.copy(), f
            gap = np.inf if lower is None else (best_f - lower) / max(abs(best_f), 1e-12)
            done = stalled >= stalls or (sigma_factor < 1 and sigma <= sigma_min)
            done = done or (switch_gap is not None and gap <= switch_gap)
            if done and oracle.full_check(metrics(best_v)[1]):
                break
            stage += 1
            oracle.recenter(metrics(v)[1], sigma)
            sigma = max(sigma * sigma_factor, sigma_min)
    finally:
        oracle.check_every = every
    return SolveResult(
        matrix=np.stack(metrics(best_v)[1]),
        matrices=metrics(best_v)[1],
        objective=best_f,
        status=status,
        iterations=evals,
        seconds=time.perf_counter() - t0,
        solver="multi-smoothed-lbfgs",
        history=history,
        lower_bound=lower,
        info={"final_sigma": sigma},
    )
