"""Escaping a Burer–Monteiro saddle: negative curvature, and the factor grown along it.

A descent in factors (``M = LᵀL``, or ``W = LLᵀ`` by columns) is not convex: a
rank-deficient factor can be stationary (``L ∇_M f = 0``) while ``M`` is not optimal, and
which saddle the descent meets can depend on rounding. The certificate exposes such
points. At a factor stationary point with dual estimate ``λ``, the Lagrangian's gradient
``S(λ)`` in ``M`` has ``L S = 0``, so ``M`` is optimal iff ``S ⪰ 0``. A negative
eigenvalue of ``S`` with unit eigenvector ``v`` gives a descent direction ``vvᵀ`` along
which ``M + t vvᵀ`` stays PSD for all ``t ≥ 0``: the factor with the new column ``√t v``
(the rank-increase step of low-rank SDP methods). :func:`negative_directions` finds the
directions, :func:`grown_factors` appends them and picks ``t`` by a line search.

The staged driver owns the escape (:mod:`.stages`, through
:meth:`.oracle.StageHooks.escape`, the engine's one escape path): POE's factored solver
grows its blocks whenever their curvature dominates the open gap, LMNN's refinement at
its stalls; both with :func:`grown_factors`. A formulation with a convex fallback runs it
after the staged run when the gap stays open (LMNN: FISTA on ``M``).

>>> import numpy as np
>>> w, V = np.linalg.eigh(np.diag([2.0, -1.0]))
>>> negative_directions(w, V)[0]
array([-1.])
"""

from __future__ import annotations

import numpy as np

from .constants import ESCAPE_BRACKET_FLOOR, ESCAPE_SCALE_FLOOR, ESCAPE_SPAN, ESCAPE_TRIAL
from .linesearch import bracket_search, interval_search


def negative_directions(w, V, rtol=1e-10, limit=None):
    """The eigenpairs ``(w, V)`` (ascending, as ``eigh`` gives them) of the Lagrangian's
    gradient whose eigenvalue is below ``−rtol·max(1, max|λ|)``, most negative first, at
    most ``limit``: the descent directions ``vvᵀ`` of a factor saddle. Returns the
    eigenvalues and the eigenvectors (columns); both empty when none is left."""
    neg = np.flatnonzero(w < -rtol * max(1.0, float(np.abs(w).max())))[:limit]
    return w[neg], V[:, neg]


def grown_factors(Ls, pairs, value, max_new, *, bracket=False):
    """The factors ``Ls`` (``Wᵖ = LᵖLᵖᵀ``) grown along negative curvature, or ``None``.

    The negative-curvature eigenvectors of each block's Lagrangian gradient (eigenpairs
    ``pairs``, as ``eigh`` gives them) are appended as new columns, at most ``max_new`` a
    block and never more columns than rows, each weighted by ``√−λ`` (steeper directions
    weigh more) and all scaled by ``√t``, with ``t`` from one line search on
    ``value(Ls)``: over ``[0, 10·Σ‖Lᵖ‖²]`` (:func:`.linesearch.interval_search`; a
    smoothed value of known scale), or with ``bracket`` from the trial step
    ``10⁻³·Σ‖Lᵖ‖² / max|λ|`` (:func:`.linesearch.bracket_search`; the exact objective,
    convex along the ray). ``None`` if no block has such a direction or no step lowers
    ``value``.
    """
    new_Ls, steepest = [], 0.0
    for L, (w, V) in zip(Ls, pairs):
        room = min(max_new, L.shape[0] - L.shape[1])  # a factor has at most r columns
        wn, D = negative_directions(w, V, limit=max(room, 0))
        if len(wn) == 0:
            new_Ls.append((L, None))
            continue
        new_Ls.append((L, D * np.sqrt(-wn)))
        steepest = max(steepest, float(-wn[0]))
    if steepest == 0.0:
        return None

    def stack(t):
        return [L if D is None else np.hstack([L, np.sqrt(t) * D]) for L, D in new_Ls]

    floor = ESCAPE_BRACKET_FLOOR if bracket else ESCAPE_SCALE_FLOOR
    scale = max(float(sum(np.vdot(L, L) for L in Ls)), floor)
    if bracket:
        t, _ = bracket_search(lambda t: value(stack(t)), ESCAPE_TRIAL * scale / steepest)
    else:
        t, _ = interval_search(lambda t: value(stack(t)), ESCAPE_SPAN * scale)
    return None if t <= 0.0 else stack(t)
