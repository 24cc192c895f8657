"""LMNN's factor refinement, its escapes, and the convex fallback that closes its gap.

:func:`refine` is the staged smoothed driver (:mod:`convexmetric.optim.stages`) with
L-BFGS in the factor ``L`` (``M = LᵀL``, :class:`convexmetric.optim.factor.Factored`). A
factor descent can stop at a Burer–Monteiro saddle (which one can depend on rounding):
at a stall without a certificate the driver asks the oracle's escape
(:meth:`.oracle.ActiveSetOracle.escape`: the row ``√t vᵀ`` appended, ``M + t vvᵀ`` along
the most negative eigenvector of the Lagrangian's gradient) and restarts there, at most
:data:`MAX_ESCAPES` times: the engine's one escape path, which POE's factored solver
takes too. If the gap stays open, :class:`GapClosing` runs the convex fallback, FISTA
on ``M ⪰ 0`` (which cannot stall at a non-optimal point of a convex problem), then a
polish in the factor. The status is "optimal" only when the certified relative gap is
within ``tol``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..cones import PSDCone
from ..linalg import components_from_metric
from ..optim.deadline import Deadline
from ..optim.factor import Factored
from ..optim.lbfgs import LBFGS
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.stages import StageSettings, run_stages
from ..result import certified_gap, certified_status
from .constants import MAX_ESCAPES


def refine_settings(s, time_limit, tol=None, *, overrides=True):
    """The refinement's :class:`StageSettings`: fixed σ = 0.03 with recentring, 50 L-BFGS
    iterations a stage, ×0.3 at stalls, a stall ends the run only once σ ≤ 3e-4 (and
    :data:`MAX_ESCAPES` escapes are spent or none is left);
    ``s.refine_settings`` overrides them (unless ``overrides=False``)."""
    rs = StageSettings(
        sigma0=0.03,
        sigma_factor=1.0,
        stall_shrink=0.3,
        sigma_min=1e-6,
        stage_iter=50,
        rtol=1e-7,
        stalls=2,
        stall_sigma=1e-2,
        tol=tol,
        max_stages=500,
        max_escapes=MAX_ESCAPES,
        time_limit=time_limit,
        callback=s.callback,
        name="smoothed-lbfgs",
    )
    extra = s.refine_settings if overrides and s.refine is True else None
    if isinstance(extra, StageSettings):
        return replace(extra, time_limit=time_limit, callback=s.callback)
    return replace(rs, **(extra or {}))


def refine(oracle, L0, settings, rank_tol=None):
    """The smoothed L-BFGS refinement in the factor from ``L0``; ``matrix`` is ``M``.

    ``rank_tol``: the factor sheds its eigen-directions below ``rank_tol·λ_max`` before
    every stage (:func:`convexmetric.optim.factor.trimmed`)."""
    res = run_stages(Factored(oracle, rank_tol), np.array(L0, dtype=float), LBFGS(), settings)
    L = res.matrix
    res.matrix, res.matrices = L.T @ L, [L.T @ L]
    res.info["components"] = L
    return res


class GapClosing:
    """The best point and bound over the runs that close a refinement's gap
    (:func:`.phases.close_gap`), their counts, and the convex fallback."""

    def __init__(self, oracle, result, s, max_iter):
        self.oracle, self.s, self.left, self.clock = oracle, s, max_iter, Deadline(s.time_limit)
        self.best, self.history, self.iterations = result, [], 0
        self.lower = -np.inf if result.lower_bound is None else float(result.lower_bound)
        self.escapes, self.fell_back, self.stopped = 0, False, False

    def open(self):
        """Whether to go on: gap open, time and iterations left, not stopped."""
        spent = self.left is not None and self.left <= 0
        gap = certified_gap(self.best.objective, max(self.lower, 0.0))  # eq. (14) ≥ 0
        return gap > self.s.tol and not (spent or self.stopped or self.clock.expired())

    def merge(self, r):
        """Merge the run ``r`` (best point, best bound, counts); returns ``r``."""
        self.iterations += r.iterations
        self.left = None if self.left is None else self.left - r.iterations
        self.history += r.history
        self.lower = max(self.lower, -np.inf if r.lower_bound is None else r.lower_bound)
        self.best = r if r.objective < self.best.objective else self.best
        self.stopped = r.status == "user_limit"
        return r

    def fallback(self):
        """FISTA on ``M ⪰ 0`` (convex: no saddle) from the best point, then the polish in
        the factor, while the gap is open."""
        if not self.open():
            return self
        self.fell_back, s, oracle = True, self.s, self.oracle
        # the dual estimate of a saddle is poor: restart the prox centre at λ̄ = 0 and the
        # continuation at the default width (a small σ with a stale centre stalls)
        oracle.reset_centre()
        fs = SmoothingSettings(
            tol=s.tol,
            max_evaluations=20000,
            callback=s.callback,
            time_limit=self.clock.remaining(),
            max_iter=self.left,
        )
        r = self.merge(smoothed_descent(oracle, self.best.matrix, PSDCone(), fs))
        if self.open():  # polish in the factor, now away from the saddle
            rs = replace(
                refine_settings(s, self.clock.remaining(), overrides=False),
                sigma0=float(r.info.get("final_sigma", 1e-3)),
                max_iter=self.left,
            )
            self.merge(refine(oracle, components_from_metric(self.best.matrix), rs, s.rank_tol))
        return self

    def finish(self):
        """The best point with the best bound (at least 0), this stage's counts, status."""
        f, lower = self.best.objective, max(self.lower, 0.0)
        stopped = "user_limit" if self.clock.expired() or self.stopped else None
        info = dict(
            self.best.info,
            escapes=self.escapes,
            fallback=self.fell_back,
            certified_gap=certified_gap(f, lower),
        )
        return replace(
            self.best,
            lower_bound=lower,
            iterations=self.iterations,
            seconds=self.clock.elapsed(),
            history=self.history,
            info=info,
            status=certified_status(f, lower, self.s.tol, stopped),
        )
