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

from ..linalg import components_from_metric
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
    products instead of ``d``. A direction the optimum needs back shows as negative
    curvature of the Lagrangian's gradient: the escapes add it; the certificate judges the
    result either way. A factor that loses no row is returned as it is (the same object:
    its metric bit for bit, so LMNN's full check at the stage's start reuses the search of
    the last stage's objective).
    """
    if isinstance(x, list):
        return [trimmed(L, rank_tol) for L in x]
    w, V = np.linalg.eigh(x.T @ x)
    keep = w > rank_tol * max(float(w[-1]), 1e-300)
    keep[-1] = True  # never an empty factor
    if keep.sum() == x.shape[0]:
        return x
    return (V[:, keep] * np.sqrt(np.maximum(w[keep], 0.0))).T


def _each(f, x):
    return [f(L) for L in x] if isinstance(x, list) else f(x)


class Factored(Oracle, StageHooks):
    """``oracle`` (over ``M`` or ``[M^g]``) in the factor variables ``L`` or ``[L_g]``.

    ``rank_tol``: at the start and at the end of every stage the factor is
    :func:`trimmed` (``None``: never; the factor keeps its rows). ``columns``: the factor
    is ``d × rank`` with ``M = LLᵀ`` (a formulation that grows its factor by columns)
    instead of ``rank × d`` with ``M = LᵀL``; the oracle sees the factor as ``Lᵀ`` either
    way (``components``, a view). The wrapped oracle's stage hooks
    (:class:`.oracle.StageHooks`) are called through, in ``M``; ``bound``, ``escape`` and
    ``final_bound`` get the stage's factors too (``Stage.factor``), and ``escape`` returns
    a factor (more rows: new directions). An oracle with ``needs_metric`` false reads the
    factor alone: it gets ``None`` for every ``M``. Raises ``ValueError`` for an oracle
    whose points are not PSD matrices (``oracle.psd`` false: vectors, or factors already).
    """

    psd = False  #: its points are factors

    def __init__(self, oracle, rank_tol=None, *, columns=False):
        if not getattr(oracle, "psd", False):
            raise ValueError(
                f"Factored needs an oracle over PSD matrices (M = LᵀL); {type(oracle).__name__}'s "
                "points are not (oracle.psd is false): run the engine on it directly."
            )
        self.oracle, self.rank_tol, self.columns = oracle, rank_tol, columns
        self.hooks = hooks_of(oracle)
        self._last = None  #: the last stage translated to ``M`` (see :meth:`_in_metric`)

    @property
    def version(self):
        return self.oracle.version

    @property
    def best_seen(self):
        """The oracle's ``best_seen`` with its point as a factor: the one it was given
        (``seen_factor``), else an eigen-square-root."""
        seen = getattr(self.oracle, "best_seen", None)
        if seen is None:
            return None
        L = getattr(self.oracle, "seen_factor", None)
        return seen[0], self._rows(_each(components_from_metric, seen[1]) if L is None else L)

    @property
    def trial_rtol(self):
        return getattr(self.oracle, "trial_rtol", 0.0)

    def _rows(self, x):
        """The factor as the oracle sees it (``M = LᵀL``): ``x``, or its transpose."""
        return _each(np.transpose, x) if self.columns else x

    def _metric(self, x):
        """``M`` at the factor ``x``, or ``None`` for an oracle that reads the factor alone."""
        if not self.oracle.needs_metric:
            return None
        return metric(self._rows(x))

    def smooth(self, x, sigma, grad=True, components=None):
        L = self._rows(x)
        if not grad:
            return self.oracle.smooth(self._metric(x), sigma, grad=False, components=L)
        f, LG = self.oracle.smooth_factor(self._metric(x), sigma, L)
        return f, _each(lambda g: 2.0 * (g.T if self.columns else g), LG)

    def __call__(self, x, components=None):
        f, G = self.oracle(self._metric(x), components=self._rows(x))
        xs, Gs = (x, G) if isinstance(x, list) else ([x], [G])
        out = [2.0 * (g @ L if self.columns else L @ g) for L, g in zip(xs, Gs)]
        return f, out if isinstance(x, list) else out[0]

    def objective(self, x, components=None):
        return self.oracle.objective(self._metric(x), components=self._rows(x))

    def _in_metric(self, stage):
        """``stage`` in ``M`` (its factors kept in ``factor``/``best_factor``); the stage's
        bound and escape share one translation."""
        key, last = (stage.x, stage.best_x), self._last
        if last is None or last[0][0] is not key[0] or last[0][1] is not key[1]:
            at = replace(
                stage,
                x=self._metric(stage.x),
                best_x=self._metric(stage.best_x),
                factor=self._rows(stage.x),
                best_factor=self._rows(stage.best_x),
            )
            self._last = (key, at)
        return replace(
            self._last[1],
            sigma=stage.sigma,
            best_f=stage.best_f,
            lower=stage.lower,
            index=stage.index,
            stopping=stage.stopping,
        )

    def bound(self, stage):
        return self.oracle.bound(self._in_metric(stage))

    def recenter(self, x, sigma):
        self.oracle.recenter(self._metric(x), sigma, components=self._rows(x))

    def check(self, x, components=None):
        return self.oracle.check(self._metric(x), components=self._rows(x))

    def _trimmed(self, x):
        return self._rows(trimmed(self._rows(x), self.rank_tol))

    def begin_stage(self, x, index, components=None):
        if self.rank_tol is not None:
            x = self._trimmed(x)
        self.hooks.begin_stage(self._metric(x), index, components=self._rows(x))
        return x

    def end_stage(self, x):
        # trimmed before the stage's exact objective, so that the next stage's full check
        # (at the same, already trimmed factor) reuses that objective's impostor search
        return None if self.rank_tol is None else self._trimmed(x)

    def stage_plan(self, sigma_factor, iterations):
        return self.hooks.stage_plan(sigma_factor, iterations)

    def escape(self, stage):
        """The wrapped oracle's escape, which sees ``stage`` in ``M`` with its factors and
        returns a factor (more rows: new directions), or ``None``."""
        moved = self.hooks.escape(self._in_metric(stage))
        return None if moved is None else self._rows(moved)

    def final_bound(self, stage):
        return self.hooks.final_bound(self._in_metric(stage))

    def finish(self):
        self.hooks.finish()
