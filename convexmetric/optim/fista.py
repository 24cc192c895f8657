"""One stage of accelerated projected gradient (FISTA) on a smoothed objective over a cone.

The convex inner method of the staged driver (:mod:`.stages`): projected gradient steps
on ``f_σ`` with Nesterov momentum, backtracking on the Lipschitz estimate (doubled until
the quadratic upper bound holds at the trial point, whose value alone is asked for) and
adaptive restart (O'Donoghue & Candès: drop the momentum when ``f_σ`` rises). The
Lipschitz estimate persists across stages and decays by a constant factor per accepted
step (:data:`.constants.FISTA_LIP_DECAY`). The feasible set is any
:class:`convexmetric.cones.Cone` (its ``project``), so FISTA cannot stall at a
non-optimal point of a convex problem: it is the engine's convex polish and its fallback
when a factored descent stops at a saddle.

A stage ends after ``budget`` steps, or when ``f_σ`` improved by less than ``stage_rtol``
(relative) over the last ``window`` accepted steps (``window=None``: never), or at the
driver's evaluation cap or deadline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import vectors
from .constants import (
    FISTA_BACKTRACKS,
    FISTA_BOUND_SLACK,
    FISTA_LIP_DECAY,
    NORM_FLOOR,
    REL_FLOOR,
)


@dataclass(kw_only=True)
class FISTA:
    """FISTA over ``cone`` (a :class:`~convexmetric.cones.Cone`) with backtracking."""

    cone: object  #: the feasible set (its ``project``)
    window: int | None = 20  #: accepted steps over which ``stage_rtol`` is measured
    stage_rtol: float = 1e-9  #: a stage ends when ``f_σ`` gains less over ``window`` steps
    restart_shrink: float = 0.9  #: Lipschitz estimate × this at a restart
    Lip: float | None = None  #: the Lipschitz estimate (kept across stages)

    def start(self, oracle, x0):
        """The projection of ``x0`` onto the cone."""
        return self.cone.project(vectors.copy(x0))

    def _step(self, oracle, y, fy, gy, sigma, counts):
        """The backtracking step from ``y``: ``(x_new, f_σ(x_new), fy, gy)``."""
        for _ in range(FISTA_BACKTRACKS):
            version = oracle.version
            x_new = self.cone.project(vectors.axpy(y, -1.0 / self.Lip, gy))
            fx = oracle.smooth(x_new, sigma, grad=False)
            counts.evaluations += 1
            if version is not None and oracle.version != version:
                fy, gy = oracle.smooth(y, sigma)  # the approximation grew: start again
                continue
            dx = vectors.sub(x_new, y)
            bound = fy + vectors.inner(gy, dx) + 0.5 * self.Lip * vectors.inner(dx, dx)
            if fx <= bound + FISTA_BOUND_SLACK * max(abs(fy), 1.0):
                break
            self.Lip *= 2.0
        return x_new, fx, fy, gy

    def run(self, oracle, x, sigma, budget, clock, counts):
        """At most ``budget`` steps on ``f_σ`` from ``x``: ``(x, stopped)``."""
        y, t_prev, f_prev, seen = vectors.copy(x), 1.0, np.inf, []
        for _ in range(budget):
            fy, gy = oracle.smooth(y, sigma)
            counts.evaluations += 1
            if self.Lip is None:
                self.Lip = max(vectors.norm(gy), NORM_FLOOR) / max(vectors.norm(x), 1.0)
            version = oracle.version
            x_new, fx, fy, gy = self._step(oracle, y, fy, gy, sigma, counts)
            if version is not None and oracle.version != version:
                f_prev = np.inf
            if fx > f_prev:  # adaptive restart: drop the momentum
                t_prev, y, f_prev = 1.0, vectors.copy(x), np.inf
                self.Lip *= self.restart_shrink
                continue
            counts.iterations += 1
            t_new = 0.5 * (1 + np.sqrt(1 + 4 * t_prev**2))
            y = vectors.axpy(x_new, (t_prev - 1) / t_new, vectors.sub(x_new, x))
            seen.append(fx)
            w = self.window
            converged = w is not None and len(seen) > w
            converged = converged and seen[-w - 1] - fx <= self.stage_rtol * max(abs(fx), REL_FLOOR)
            x, t_prev, f_prev = x_new, t_new, fx
            self.Lip *= FISTA_LIP_DECAY
            if converged or (counts.cap is not None and counts.evaluations >= counts.cap):
                break
            if clock.expired():
                return x, True
        return x, False
