"""Closing a certified gap left by a factored descent: escapes, then a convex fallback.

A descent in factors (``M = LᵀL``) is not convex: a rank-deficient ``L`` can be
stationary (``L ∇_M f = 0``) while ``M`` is not optimal, and which saddle the descent
meets can depend on rounding. The certificate exposes such points; :func:`close_gap`
closes the gap from wherever the descent stopped:

1. **Escape.** At a factor stationary point with dual estimate ``λ``, the Lagrangian's
   gradient ``S(λ)`` in ``M`` has ``L S = 0``, so ``M`` is optimal iff ``S ⪰ 0``. A
   negative eigenvalue of ``S`` with unit eigenvector ``v`` gives a descent direction
   ``vvᵀ`` along which ``M + t vvᵀ`` stays PSD for all ``t ≥ 0``; a line search
   (:func:`.linesearch.bracket_search`) on the exact objective picks ``t`` and the factor
   refinement restarts there (the rank-increase step of low-rank SDP methods).
   :func:`negative_curvature` finds the direction.
2. **Convex fallback.** If the gap is still open (no negative curvature left, or the
   rounds are spent), FISTA on the smoothed objective over the PSD cone, which cannot
   stall at a non-optimal point of a convex problem, runs until the certificate closes
   or its budget ends.

What is formulation-specific comes through a :class:`GapCloser`: how to escape, how
to restart the refinement and how to fall back. A formulation that escapes within the
staged run instead, between two stages (POE's factored solver, through
:meth:`.oracle.StageHooks.escape`), grows its factors by :func:`grown_factors`, along the
directions of the same :func:`negative_directions`. The status is "optimal" only when the
certified relative gap is within ``tol``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..result import SolveResult, certified_gap, certified_status
from .deadline import Deadline
from .linesearch import interval_search


def negative_directions(w, V, rtol=1e-10, limit=None):
    """The eigenpairs ``(w, V)`` (ascending, as ``eigh`` gives them) of the Lagrangian's
    gradient whose eigenvalue is below ``−rtol·max(1, max|λ|)``, most negative first, at
    most ``limit``: the descent directions ``vvᵀ`` of a factor saddle. Returns the
    eigenvalues and the eigenvectors (columns); both empty when none is left."""
    neg = np.flatnonzero(w < -rtol * max(1.0, float(np.abs(w).max())))[:limit]
    return w[neg], V[:, neg]


def grown_factors(Ls, pairs, value, max_new):
    """The factors ``Ls`` (``Wᵖ = LᵖLᵖᵀ``) with the negative-curvature eigenvectors of each
    block's Lagrangian gradient (eigenpairs ``pairs``) appended as new columns, at most
    ``max_new`` a block and never more columns than rows, each weighted by ``√−λ`` (steeper
    directions weigh more) and all scaled by one line search on ``value(Ls)``
    (:func:`.linesearch.interval_search`); ``None`` if no block has such a direction or
    no step lowers ``value``: the rank-increase step of low-rank SDP methods, within a
    staged run."""
    new_Ls, grew = [], False
    for L, (w, V) in zip(Ls, pairs):
        room = min(max_new, L.shape[0] - L.shape[1])  # a factor has at most r columns
        wn, D = negative_directions(w, V, limit=max(room, 0))
        if len(wn) == 0:
            new_Ls.append((L, None))
            continue
        new_Ls.append((L, D * np.sqrt(-wn)))
        grew = True
    if not grew:
        return None

    def stack(t):
        return [L if D is None else np.hstack([L, np.sqrt(t) * D]) for L, D in new_Ls]

    scale = max(float(sum(np.vdot(L, L) for L in Ls)), 1e-6)
    t, _ = interval_search(lambda t: value(stack(t)), 10.0 * scale)
    return None if t <= 0.0 else stack(t)


def negative_curvature(S, rtol=1e-10):
    """The unit eigenvector of the most negative eigenvalue of symmetric ``S``, or ``None``
    when ``λ_min(S) ≥ −rtol·max(1, max|λ|)`` (no direction of descent left)."""
    _, D = negative_directions(*np.linalg.eigh(0.5 * (S + S.T)), rtol, 1)
    return D[:, 0] if D.shape[1] else None


class GapCloser:
    """What :func:`close_gap` needs of a formulation (subclass and fill in)."""

    #: a bound that always holds (0 for a sum of nonnegative terms), or None
    trivial_bound = None

    def escape(self, result, sigma):
        """A starting point for the refinement past a saddle, or ``None``."""
        return None

    def restart(self, x0, time_limit):
        """The factor refinement from ``x0``: a :class:`SolveResult`."""
        raise NotImplementedError

    def fallback(self, best, deadline):
        """The convex stage: yields :class:`SolveResult`s in order; ``best()`` is the best
        result so far (merged after each yield), ``deadline`` a :class:`.Deadline`."""
        return iter(())


@dataclass(kw_only=True)
class GapSettings:
    """Settings of :func:`close_gap`."""

    tol: float = 1e-4  #: the certified relative gap to reach
    max_rounds: int = 5  #: escapes at most
    time_limit: float | None = None  #: seconds


def close_gap(result, closer, settings=None):
    """Continue from ``result`` until its certified gap is within ``settings.tol``.

    Returns a new :class:`SolveResult` (the best of every stage) whose ``iterations`` and
    ``seconds`` count this stage only, and whose ``info`` records ``escapes``,
    ``fallback`` (whether the convex stage ran) and ``certified_gap``.
    """
    s = settings or GapSettings()
    clock = Deadline(s.time_limit)
    state = _State(result, closer.trivial_bound)
    sigma = float(result.info.get("final_sigma", 1e-6))
    for _ in range(s.max_rounds):
        if state.gap() <= s.tol or clock.expired():
            break
        x0 = closer.escape(state.best, sigma)
        if x0 is None:
            break
        state.escapes += 1
        r = closer.restart(x0, clock.remaining())
        sigma = float(r.info.get("final_sigma", sigma))
        if state.keep(r):
            break
    if not state.stopped and state.gap() > s.tol and not clock.expired():
        state.fallback = True
        for r in closer.fallback(lambda: state.best, clock):
            if state.keep(r):
                break
    return state.finish(s.tol, clock, closer.trivial_bound)


class _State:
    def __init__(self, result, trivial):
        self.best, self.escapes, self.fallback = result, 0, False
        self.stopped, self.evaluations = False, 0
        if trivial is not None and not np.isfinite(result.lower_bound or -np.inf):
            self.best.lower_bound = trivial

    def gap(self):
        return certified_gap(self.best.objective, self.best.lower_bound)

    def keep(self, r):
        """Merge ``r`` (best point, best bound); True if it was stopped by the user."""
        self.evaluations += r.iterations
        lower = max(self.best.lower_bound or -np.inf, r.lower_bound or -np.inf)
        if r.objective < self.best.objective:
            self.best = r
        self.best.lower_bound = lower
        self.stopped = r.status == "user_limit"
        return self.stopped

    def finish(self, tol, clock, trivial):
        out: SolveResult = self.best
        lb = out.lower_bound if out.lower_bound is not None else -np.inf
        if trivial is not None:
            lb = max(lb if np.isfinite(lb) else trivial, trivial)
        out.lower_bound = None if not np.isfinite(lb) else lb
        gap = self.gap()
        stopped = "user_limit" if clock.expired() or self.stopped else None
        out.status = certified_status(out.objective, out.lower_bound, tol, stopped)
        out.iterations, out.seconds = self.evaluations, clock.elapsed()
        out.info = dict(out.info, escapes=self.escapes, fallback=self.fallback,
                        certified_gap=gap)  # fmt: skip
        return out
