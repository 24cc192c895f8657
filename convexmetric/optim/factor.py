"""The factor parametrisation ``M = LᵀL`` of an oracle over PSD matrices (Burer–Monteiro).

Descent in the factor keeps every iterate PSD without a projection and is far better
conditioned than first-order steps on ``M``; the problem is no longer convex in ``L``, so
the drivers certify every result by the dual bound and escape saddles (:mod:`.escape`).
:class:`Factored` presents an oracle over ``M`` (one matrix, or a list of blocks
``M^g``) as an oracle over ``L`` (one factor per block): values are unchanged, gradients
map as ``∇_L = 2 L ∇_M``. The factor is handed to the oracle's ``__call__``,
``smooth``, ``objective``, ``check`` and ``begin_stage`` (``components=L``), so an oracle that
computes distances from ``Z = X Lᵀ`` needs no eigendecomposition per call; its
certificate and recentring read ``M`` alone. With ``rank_tol`` the factor sheds its
negligible eigen-directions between stages (:func:`trimmed`): ``L`` may have fewer rows
than ``d``, and a distance costs ``rank`` products instead of ``d``.

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

import numpy as np

from .oracle import Oracle, StageHooks, hooks_of


def metric(x):
    """``LᵀL`` for a factor, or the list of ``L_gᵀL_g`` for a list of factors."""
    return [L.T @ L for L in x] if isinstance(x, list) else x.T @ x


def trimmed(x, rank_tol):
    """The factor (or factors) of ``metric(x)`` without its eigen-directions below
    ``rank_tol·λ_max``: ``L' = Λ_k^{1/2} V_kᵀ`` over the kept eigenpairs, fewer rows.

    ``M`` moves by at most ``rank_tol·λ_max`` per dropped direction. A small direction
    is nearly frozen anyway: ``∇_L = 2L∇_M`` scales each eigen-row of ``L`` by its own
    length, so a row near zero regrows only geometrically, and an exactly zero row never;
    and at an optimum, dropping a direction of eigenvalue ``ε`` changes the value by
    ``O(ε²)`` (the gradient vanishes on its range). Every distance then costs ``rank``
    products instead of ``d`` (the MNIST sample's optimum has rank 54 of 164). A
    direction the optimum needs back shows as negative curvature of the Lagrangian's
    gradient: the escapes add it; the certificate judges the result either way. A factor
    that loses no row is returned as it is (the same object: its metric bit for bit, so
    LMNN's full check at the stage's start reuses the search of the last stage's
    objective).
    """
    if isinstance(x, list):
        return [trimmed(L, rank_tol) for L in x]
    w, V = np.linalg.eigh(x.T @ x)
    keep = w > rank_tol * max(float(w[-1]), 1e-300)
    keep[-1] = True  # never an empty factor
    if keep.sum() == x.shape[0]:
        return x
    return (V[:, keep] * np.sqrt(np.maximum(w[keep], 0.0))).T


class Factored(Oracle, StageHooks):
    """``oracle`` (over ``M`` or ``[M^g]``) in the factor variables ``L`` or ``[L_g]``.

    ``rank_tol``: at the start and at the end of every stage the factor is
    :func:`trimmed` (``None``: never; the factor keeps its rows). The wrapped oracle's
    stage hooks (:class:`.oracle.StageHooks`: the full check, the stage plan, the
    clean-up) are called through, in ``M``. Raises ``ValueError`` for an oracle whose
    points are not PSD matrices (``oracle.psd`` false: vectors, or factors already).
    """

    psd = False  #: its points are factors

    def __init__(self, oracle, rank_tol=None):
        if not getattr(oracle, "psd", False):
            raise ValueError(
                f"Factored needs an oracle over PSD matrices (M = LᵀL); {type(oracle).__name__}'s "
                "points are not (oracle.psd is false): run the engine on it directly."
            )
        self.oracle, self.rank_tol = oracle, rank_tol
        self.hooks = hooks_of(oracle)

    @property
    def version(self):
        return self.oracle.version

    def smooth(self, x, sigma, grad=True, components=None):
        if not grad:
            return self.oracle.smooth(metric(x), sigma, grad=False, components=x)
        f, LG = self.oracle.smooth_factor(metric(x), sigma, x)
        return f, ([2.0 * g for g in LG] if isinstance(x, list) else 2.0 * LG)

    def __call__(self, x, components=None):
        f, G = self.oracle(metric(x), components=x)
        if isinstance(x, list):
            return f, [2.0 * (L @ g) for L, g in zip(x, G)]
        return f, 2.0 * (x @ G)

    def objective(self, x, components=None):
        return self.oracle.objective(metric(x), components=x)

    def bound(self, stage):
        return self.oracle.bound(replace(stage, x=metric(stage.x), best_x=metric(stage.best_x)))

    def recenter(self, x, sigma):
        self.oracle.recenter(metric(x), sigma)

    def check(self, x, components=None):
        return self.oracle.check(metric(x), components=x)

    def begin_stage(self, x, index, components=None):
        if self.rank_tol is not None:
            x = trimmed(x, self.rank_tol)
        self.hooks.begin_stage(metric(x), index, components=x)
        return x

    def end_stage(self, x):
        # trimmed before the stage's exact objective, so that the next stage's full check
        # (at the same, already trimmed factor) reuses that objective's impostor search
        return None if self.rank_tol is None else trimmed(x, self.rank_tol)

    def stage_plan(self, sigma_factor, iterations):
        return self.hooks.stage_plan(sigma_factor, iterations)

    def finish(self):
        self.hooks.finish()
