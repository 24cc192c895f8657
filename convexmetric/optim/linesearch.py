"""The line searches of the engine: golden section, a bracketing search, gradient steps.

* :func:`golden_section`: the minimum of a unimodal function on an interval;
* :func:`interval_search`: the best step in ``[0, t_max]`` (0 when nothing decreases),
  for escapes whose scale is known (POE's new factor columns);
* :func:`bracket_search`: the best step ``t ≥ 0`` of a convex function from a trial step
  (shrink until it decreases, double until it rises, then golden section), for escapes
  along a direction of unknown scale (LMNN's ``M + t vvᵀ``);
* :func:`backtracking_steps`: gradient steps with Armijo backtracking, the rescue after a
  failed L-BFGS line search.

>>> t, f = bracket_search(lambda t: (t - 3.0) ** 2, 0.1)
>>> round(float(t), 4), interval_search(lambda t: (t + 1.0) ** 2, 5.0)[0]
(3.0, 0.0)
"""

from __future__ import annotations

import numpy as np

from .constants import BACKTRACK_MIN_STEP


def golden_section(phi, a, b, steps):
    """Golden-section minimum of a unimodal ``φ`` on ``[a, b]``: ``(t, φ(t))``."""
    g = (np.sqrt(5.0) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = phi(c), phi(d)
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = phi(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = phi(d)
    return (c, fc) if fc <= fd else (d, fd)


def interval_search(phi, t_max, steps=25):
    """The golden-section minimum of ``φ`` on ``[0, t_max]``; ``(0, None)`` without a
    decrease below ``φ(0)``."""
    t, ft = golden_section(phi, 0.0, t_max, steps)
    return (t, ft) if ft < phi(0.0) else (0.0, None)


def bracket_search(phi, t_hi, max_doublings=40, golden_steps=30):
    """Minimise a convex ``φ`` over ``t ≥ 0`` from a first trial step ``t_hi``.

    Shrinks the step until ``φ`` decreases, doubles it until ``φ`` rises, then golden
    section on the bracket. Returns ``(t, φ(t))``, or ``(0, φ(0))`` without a decrease.
    """
    f0 = phi(0.0)
    f_hi = phi(t_hi)
    if f_hi >= f0:  # shrink until a decrease (the direction is a descent direction)
        for _ in range(max_doublings):
            t_hi *= 0.1
            f_hi = phi(t_hi)
            if f_hi < f0:
                break
        else:
            return 0.0, f0
    lo = 0.0
    for _ in range(max_doublings):  # bracket: grow until φ rises
        t_next = 2.0 * t_hi
        f_next = phi(t_next)
        if f_next >= f_hi:
            break
        lo, t_hi, f_hi = t_hi, t_next, f_next
    else:
        return t_hi, f_hi
    t, ft = golden_section(phi, lo, 2.0 * t_hi, golden_steps)
    return (t, ft) if ft < f0 else (0.0, f0)


def backtracking_steps(phi, x, steps=50):
    """Gradient steps with Armijo backtracking on ``phi(x, grad=True) -> (f, g)``
    (``grad=False``: the value), from a flat vector ``x``; the last point reached."""
    f, g = phi(x)
    t = 1.0 / max(float(np.linalg.norm(g)), 1e-300)
    for _ in range(steps):
        gg = float(g @ g)
        if gg == 0.0:
            break
        while t > BACKTRACK_MIN_STEP:
            xn = x - t * g
            if phi(xn, grad=False) <= f - 0.5 * t * gg:
                break
            t *= 0.5
        else:
            break
        x = xn
        f, g = phi(x)
        t *= 2.0
    return x
