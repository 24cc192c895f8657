"""The strong Wolfe line search of the engine's L-BFGS (Moré and Thuente, 1994).

J. J. Moré and D. J. Thuente, "Line search algorithms with guaranteed sufficient
decrease", *ACM Trans. Math. Software* 20(3), 286–307 (1994): the search of L-BFGS-B,
so that :class:`.lbfgs.LBFGS` takes the same steps as scipy's L-BFGS-B did. Along a
descent direction, with ``φ(t)`` the objective at step ``t`` and ``φ'(t)`` its slope, a
step is accepted when

* ``φ(t) ≤ φ(0) + c₁ t φ'(0)`` (sufficient decrease) and
* ``|φ'(t)| ≤ c₂ |φ'(0)|`` (curvature).

The search keeps an interval of uncertainty ``[x, y]``: ``x`` the best step so far, ``y``
the other end. Until the interval brackets a minimiser, trials extrapolate to between
:data:`XTRAP_LO` and :data:`XTRAP_HI` times the distance from ``x``; once bracketed,
each trial is a safeguarded cubic or quadratic interpolation (the four cases of the
paper's §4, :func:`_trial`), bisection when two trials shrink the interval by less than
:data:`SHRINK`. While no trial has both sufficient decrease and a non-negative slope, the
rules apply to ``ψ(t) = φ(t) − φ(0) − c₁tφ'(0)`` instead (the paper's first stage), whose
minimisers have sufficient decrease. The search ends without a step meeting both
conditions when the interval is narrower than ``xtol`` relative, or when rounding leaves
no room; it then returns its best step ``x``, evaluated afresh (as L-BFGS-B does).

>>> phi = lambda t: ((t - 2.0) ** 2, 2.0 * (t - 2.0), None)
>>> t, f, _ = wolfe_step(phi, 4.0, -4.0, 0.1)  # extrapolates from 0.1
>>> float(t), f <= 4.0 - 1e-3 * 4.0 * t, abs(2.0 * (t - 2.0)) <= 0.9 * 4.0
(0.5, True, True)
"""

from __future__ import annotations

import numpy as np

from .constants import SHRINK, XTRAP_HI, XTRAP_LO


def wolfe_step(phi, f0, slope0, t, *, c1=1e-3, c2=0.9, xtol=0.1, max_evals=20, t_max=1e10):
    """A step along a descent direction by the Moré–Thuente search (module docstring).

    ``phi(t) -> (f, slope, data)``: the value and slope at step ``t`` and what the caller
    keeps of that point (its gradient); ``f0``, ``slope0 < 0``: at ``t = 0``; ``t``: the
    first trial. The defaults are L-BFGS-B's. Returns ``(t, f, data)``: a step that meets
    both conditions, or, where the search ends without one (the interval narrower than
    ``xtol`` relative, or no room left by rounding), its best step evaluated afresh, as
    L-BFGS-B accepts it: possibly ``t = 0``, with ``φ`` above ``f0`` where the objective
    changed under the search (an active list that grew); ``None`` after ``max_evals``
    trials.
    """
    s = _Search(f0, slope0, t, c1, t_max)
    for _ in range(max_evals):
        f, slope, data = phi(t)
        if f <= f0 + c1 * t * slope0 and abs(slope) <= -c2 * slope0:
            return t, f, data
        if s.ends(t, f, slope, xtol):
            return t, f, data
        t = s.next((t, f, slope), xtol)
    return None


class _Search:
    """The interval of uncertainty of one search: ends ``x`` (best) and ``y``, each a
    ``(t, φ, φ')``, the trial bounds ``[lo, hi]`` and the paper's stage."""

    def __init__(self, f0, slope0, t, c1, t_max):
        self.f0, self.gtest, self.t_max = f0, c1 * slope0, t_max
        self.x = self.y = (0.0, f0, slope0)
        self.bracketed, self.first_stage = False, True
        self.lo, self.hi = 0.0, t + XTRAP_HI * t
        self.width = t_max
        self.width1 = 2.0 * t_max

    def ends(self, t, f, g, xtol):
        """Whether the search stops at the trial ``t`` just evaluated (rounding leaves no
        room, the interval is narrower than ``xtol``, or ``t`` is at a bound where ``φ``
        still falls / no longer decreases enough)."""
        ftest = self.f0 + t * self.gtest
        if self.first_stage and f <= ftest and g >= 0:
            self.first_stage = False
        if self.bracketed and (t <= self.lo or t >= self.hi):
            return True
        if self.bracketed and self.hi - self.lo <= xtol * self.hi:
            return True
        if t >= self.t_max and f <= ftest and g <= self.gtest:
            return True
        return t <= 0.0 and (f > ftest or g >= self.gtest)

    def next(self, p, xtol):
        """The next trial after the trial ``p``: the best step ``x`` where the interval
        leaves no room (the search then ends there, :meth:`ends`)."""
        t, f, _ = p
        if self.first_stage and f <= self.x[1] and f > self.f0 + t * self.gtest:
            shift, back = _shifted(self.gtest), _shifted(-self.gtest)  # on ψ, then back to φ
            x, y, t, self.bracketed = _trial(
                shift(self.x), shift(self.y), shift(p), self.bracketed, self.lo, self.hi
            )
            self.x, self.y = back(x), back(y)
        else:
            self.x, self.y, t, self.bracketed = _trial(
                self.x, self.y, p, self.bracketed, self.lo, self.hi
            )
        (tx, _, _), (ty, _, _) = self.x, self.y
        if self.bracketed:
            if abs(ty - tx) >= SHRINK * self.width1:
                t = tx + 0.5 * (ty - tx)
            self.width1, self.width = self.width, abs(ty - tx)
            self.lo, self.hi = min(tx, ty), max(tx, ty)
        else:
            self.lo, self.hi = t + XTRAP_LO * (t - tx), t + XTRAP_HI * (t - tx)
        t = min(max(t, 0.0), self.t_max)
        if self.bracketed and (t <= self.lo or t >= self.hi or self.hi - self.lo <= xtol * self.hi):
            return tx
        return t


def _shifted(gtest):
    """``(t, φ, φ') ↦ (t, φ − t·gtest, φ' − gtest)``: to ``ψ`` (and back with ``−gtest``)."""
    return lambda q: (q[0], q[1] - q[0] * gtest, q[2] - gtest)


def _trial(x, y, p, bracketed, lo, hi):
    """The paper's trial value selection: the new ends ``(x, y)``, the next trial step and
    whether a minimiser is bracketed, after the trial ``p``. Each of ``x, y, p`` is
    ``(t, φ, φ')``; ``[lo, hi]``: where the trial may go."""
    (tx, fx, dx), (tp, fp, dp) = x, p
    opposite = dp * np.sign(dx) < 0
    if fp > fx:  # 1: a higher value: the minimum lies between x and p
        c, q = _cubic(x, p), _quadratic(x, p)
        t = c if abs(c - tx) < abs(q - tx) else c + 0.5 * (q - c)
        bracketed = True
    elif opposite:  # 2: the slopes change sign: bracketed again
        c, q = _cubic(x, p), _secant(x, p)
        t = c if abs(c - tp) > abs(q - tp) else q
        bracketed = True
    elif abs(dp) < abs(dx):  # 3: the slope falls in size: the cubic's minimiser if ahead
        c, q = _cubic(x, p, ahead=(lo, hi)), _secant(x, p)
        if bracketed:
            t = c if abs(c - tp) < abs(q - tp) else q
            toward = tp + SHRINK * (y[0] - tp)
            t = min(toward, t) if tp > tx else max(toward, t)
        else:
            t = min(max(c if abs(c - tp) > abs(q - tp) else q, lo), hi)
    elif bracketed:  # 4: the slope does not fall: the cubic through p and y
        t = _cubic(y, p)
    else:
        t = hi if tp > tx else lo
    if fp > fx:
        y = p
    else:
        y = x if opposite else y
        x = p
    return x, y, t, bracketed


def _cubic(a, b, ahead=None):
    """The minimiser of the cubic with the values and slopes of ``a`` and ``b``, the
    formula taken about ``b``'s step (scaled against overflow). ``ahead=(lo, hi)``
    (case 3): where that minimiser is behind ``b`` or the cubic has none, the bound
    ``b`` moves towards instead."""
    (ta, fa, da), (tb, fb, db) = a, b
    theta = 3.0 * (fa - fb) / (tb - ta) + da + db
    s = max(abs(theta), abs(da), abs(db))
    gamma = s * np.sqrt(max(0.0, (theta / s) ** 2 - (da / s) * (db / s)))
    gamma = -gamma if tb > ta else gamma
    p = (gamma - db) + theta
    q = (gamma + (da - db)) + gamma
    r = p / q if q != 0 else np.inf
    if ahead is None:
        return tb + r * (ta - tb) if np.isfinite(r) else 0.5 * (ta + tb)
    if r < 0 and gamma != 0:
        return tb + r * (ta - tb)
    return ahead[1] if tb > ta else ahead[0]


def _quadratic(a, b):
    """The minimiser of the quadratic with ``a``'s value and slope and ``b``'s value."""
    (ta, fa, da), (tb, fb, _) = a, b
    return ta + 0.5 * (da / ((fa - fb) / (tb - ta) + da)) * (tb - ta)


def _secant(a, b):
    """The zero of the slope's secant through ``a`` and ``b``."""
    (ta, _, da), (tb, _, db) = a, b
    return tb + (db / (db - da)) * (ta - tb)
