"""The factor parametrisation ``M = LᵀL`` of an oracle over PSD matrices (Burer–Monteiro).

Descent in the factor keeps every iterate PSD without a projection and is far better
conditioned than first-order steps on ``M``; the problem is no longer convex in ``L``, so
the drivers certify every result by the dual bound and escape saddles (:mod:`.escape`).
:class:`Factored` presents an oracle over ``M`` (one matrix, or a list of blocks
``M^g``) as an oracle over ``L`` (one factor per block): values are unchanged, gradients
map as ``∇_L = 2 L ∇_M``. The factor is handed to the oracle's ``smooth``,
``objective``, ``check`` and ``begin_stage`` (``components=L``), so an oracle that
computes distances from ``Z = X Lᵀ`` needs no eigendecomposition per call; its
certificate and recentring read ``M`` alone.

>>> import numpy as np
>>> from convexmetric.optim.oracle import Oracle
>>> class Trace(Oracle):  # f(M) = tr M
...     def smooth(self, M, sigma, grad=True, components=None):
...         return (float(np.trace(M)), np.eye(len(M))) if grad else float(np.trace(M))
>>> Factored(Trace()).smooth(2 * np.eye(2), 0.1)
(8.0, array([[4., 0.],
       [0., 4.]]))
"""

from __future__ import annotations

from dataclasses import replace

from .oracle import Oracle


def metric(x):
    """``LᵀL`` for a factor, or the list of ``L_gᵀL_g`` for a list of factors."""
    return [L.T @ L for L in x] if isinstance(x, list) else x.T @ x


class Factored(Oracle):
    """``oracle`` (over ``M`` or ``[M^g]``) in the factor variables ``L`` or ``[L_g]``."""

    def __init__(self, oracle):
        self.oracle = oracle

    @property
    def version(self):
        return self.oracle.version

    def smooth(self, x, sigma, grad=True):
        out = self.oracle.smooth(metric(x), sigma, grad=grad, components=x)
        if not grad:
            return out
        f, G = out
        if isinstance(x, list):
            return f, [2.0 * (L @ g) for L, g in zip(x, G)]
        return f, 2.0 * (x @ G)

    def __call__(self, x):
        f, G = self.oracle(metric(x), components=x)
        if isinstance(x, list):
            return f, [2.0 * (L @ g) for L, g in zip(x, G)]
        return f, 2.0 * (x @ G)

    def objective(self, x):
        return self.oracle.objective(metric(x), components=x)

    def bound(self, stage):
        return self.oracle.bound(replace(stage, x=metric(stage.x), best_x=metric(stage.best_x)))

    def recenter(self, x, sigma):
        self.oracle.recenter(metric(x), sigma)

    def check(self, x):
        return self.oracle.check(metric(x), components=x)

    def begin_stage(self, x, index):
        self.oracle.begin_stage(metric(x), index, components=x)

    def stage_plan(self, sigma_factor, iterations):
        return self.oracle.stage_plan(sigma_factor, iterations)

    def finish(self):
        self.oracle.finish()
