"""Continuation: FISTA on a Huber-smoothed objective as σ shrinks (a preset of the engine).

For a convex objective made of a linear part and hinge terms,
``f(x) = ⟨c, x⟩ + Σ_t w_t [z_t(x)]_+`` with affine ``z_t``, the hinge is replaced by
its Huber (Nesterov) smoothing

    h_σ(z) = 0 (z ≤ 0),  z²/(2σ) (0 < z < σ),  z − σ/2 (z ≥ σ),

so ``f_σ ≤ f ≤ f_σ + (σ/2)·Σ_{z_t>0} w_t`` and ``∇f_σ`` is the hinge subgradient
with the kink terms weighted by ``clip(z/σ, 0, 1)``: an averaged subgradient. FISTA
(:mod:`.fista`) minimises ``f_σ`` over the cone, warm-started as ``σ`` shrinks
geometrically, and the best iterate under the *exact* objective is kept; the staged
driver (:mod:`.stages`) does the rest. Plain projected subgradient descent (App. A of
Weinberger & Saul) stalls at the kinks; this stage goes on from where it stalled.

:class:`SmoothingSettings` keeps the continuation's own defaults and names;
:func:`smoothed_descent` maps them onto :func:`.stages.run_stages` with :class:`.FISTA`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fista import FISTA
from .stages import StageSettings, run_stages


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
    max_evaluations: int = 20000  #: smoothed evaluations at most, over all stages
    max_iter: int | None = None  #: FISTA iterations at most, over all stages
    tol: float = 1e-6  #: stop when (objective − lower bound)/|objective| is below this
    recenter: bool = True  #: move the dual prox centre between stages
    time_limit: float | None = None
    callback: object = None


def smoothed_descent(oracle, x0, cone, settings=None, *, solver_name="smoothed", **kw):
    """Continuation over σ of FISTA on ``f_σ`` over ``cone``; a :class:`SolveResult`."""
    s = settings if settings is not None else SmoothingSettings(**kw)
    stages = StageSettings(
        sigma0=s.sigma0,
        sigma_factor=s.sigma_factor,
        sigma_min=s.sigma_min,
        stage_iter=s.stage_iter,
        rtol=s.rtol,
        stalls=s.stalls,
        tol=s.tol,
        max_evaluations=s.max_evaluations,
        max_iter=s.max_iter,
        recenter=s.recenter,
        time_limit=s.time_limit,
        callback=s.callback,
        name=solver_name,
    )
    inner = FISTA(cone=cone, window=s.window, stage_rtol=s.stage_rtol)
    return run_stages(oracle, x0, inner, stages)
