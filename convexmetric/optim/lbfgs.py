"""One stage of L-BFGS on a smoothed objective, the inner method of the staged driver.

The oracle works on structured points (an array, or a list of arrays; :mod:`.vectors`);
L-BFGS sees them flattened. Without bounds (:attr:`.Oracle.bounds` is ``None``) the
method is the engine's own (:class:`Memory`, :func:`.wolfe.wolfe_step`): the same
iteration as scipy's L-BFGS-B without bounds (a first step of ``1/‖g‖``, the
two-loop product with the latest pair's scaling, a strong Wolfe search with L-BFGS-B's
tolerances, a pair kept only when ``sᵀy > ε·yᵀy``), without the reverse-communication
and wrapper of scipy's, whose cost per iteration is large beside a cheap oracle's
(evidence: ``benchmarks/TUNING.md``, the engine's own L-BFGS). Box constraints
(the diagonal POE LPs: ``w ≥ 0``) go to scipy's L-BFGS-B. The deadline is checked after
every iteration. When the line search fails at a sharp kink even along ``−g``,
``rescue`` runs gradient steps with backtracking from where it stopped. An oracle whose
values are rounded (:attr:`.Oracle.trial_rtol`) ends a stage at a step that needed a
long search for a gain within that rounding (:data:`.constants.NOISY_GAIN`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from . import vectors
from .constants import EPS, NOISY_GAIN, NOISY_TRIALS
from .linesearch import backtracking_steps
from .wolfe import wolfe_step


@dataclass(kw_only=True)
class LBFGS:
    """L-BFGS options of a stage (scipy's names) and the line-search rescue."""

    maxcor: int = 20  #: stored correction pairs
    gtol: float = 1e-12  #: gradient tolerance (absolute, largest entry; projected with bounds)
    ftol: float = 1e-15  #: relative reduction of the objective that ends a stage
    maxls: int = 20  #: line-search steps per iteration
    rescue: bool = False  #: gradient steps after a failed line search

    def start(self, oracle, x0):
        """The starting point as given (L-BFGS-B enforces the bounds itself)."""
        return vectors.copy(x0) if isinstance(x0, list) else np.array(x0, dtype=float)

    def run(self, oracle, x, sigma, budget, clock, counts):
        """At most ``budget`` iterations on ``f_σ`` from ``x``: ``(x, stopped)``."""

        last = []  # the last point evaluated and its (f, g): a trial that rounds to it

        def fun(v, grad=True):  # (a step of 1e-22) is not evaluated again, as in scipy
            if grad and last and np.array_equal(v, last[0]):
                return last[1]
            counts.evaluations += 1
            out = oracle.smooth(vectors.unflatten(v, x), sigma, grad=grad)
            if not grad:
                return out
            last[:] = [v, (out[0], vectors.flatten(out[1]))]
            return last[1]

        v0 = vectors.flatten(x).copy()
        if oracle.bounds is None:
            v, stopped, failed = self._descend(
                fun, v0, budget, clock, counts, getattr(oracle, "trial_rtol", 0.0)
            )
        else:
            v, stopped, failed = self._bounded(fun, v0, oracle.bounds, budget, clock, counts)
        if failed and self.rescue and not stopped:
            v = backtracking_steps(fun, v)
        return vectors.unflatten(v, x), stopped

    def _descend(self, fun, v, budget, clock, counts, rounding):
        """Unconstrained L-BFGS: ``(v, stopped by the clock, line search failed)``."""
        f, g = fun(v)
        memory = Memory(self.maxcor)
        for k in range(int(budget)):
            e0 = counts.evaluations
            step = _step(fun, v, f, g, memory, self.maxls, first=k == 0)
            trials = counts.evaluations - e0
            if step is None:
                return v, False, True
            s, f_new, g_new = step
            memory.push(s, g_new - g)
            v, f_old, f, g = v + s, f, f_new, g_new
            counts.iterations += 1
            if clock.expired():
                return v, True, False
            # a search of more than two trials that gained within the values' rounding is
            # fighting that rounding: the stage is over (constants.NOISY_GAIN)
            ftol = max(self.ftol, NOISY_GAIN * rounding if trials > NOISY_TRIALS else 0.0)
            if f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
                break
            if float(np.abs(g).max()) <= self.gtol:
                break
        return v, False, False

    def _bounded(self, fun, v, bounds, budget, clock, counts):
        """scipy's L-BFGS-B over ``bounds``: ``(v, stopped by the clock, line search failed)``."""
        stopped = []

        def watch(intermediate_result):
            counts.iterations += 1
            if clock.expired():
                stopped.append(True)
                raise StopIteration

        opts = {
            "maxiter": int(budget),
            "gtol": self.gtol,
            "ftol": self.ftol,
            "maxcor": self.maxcor,
            "maxls": self.maxls,
        }
        res = minimize(
            fun, v, jac=True, method="L-BFGS-B", bounds=bounds, callback=watch, options=opts
        )
        return res.x, bool(stopped), res.status == 2


def _step(fun, v, f, g, memory, maxls, first):
    """One iteration's accepted step ``(s, f, g)`` along the memory's direction (``−g``
    from an empty memory), first trial 1 (``1/‖g‖`` at a run's ``first`` iteration, as
    L-BFGS-B); when that search fails the memory is dropped and ``−g`` tried once;
    ``None`` if that fails too."""
    for _ in range(2):
        d = memory.direction(g)
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction (rounding): start over along −g
            memory.clear()
            d, slope = -g, -float(g @ g)
        if slope == 0:
            return None
        trial = 1.0 / float(np.sqrt(-slope)) if first and not memory else 1.0

        def phi(t, d=d):
            ft, gt = fun(v + t * d)
            return ft, float(gt @ d), gt

        found = wolfe_step(phi, f, slope, trial, max_evals=maxls)
        if found is not None:
            t, ft, gt = found
            return t * d, ft, gt
        if not memory:
            return None
        memory.clear()
    return None


class Memory:
    """The last ``m`` correction pairs ``(s, y)`` of L-BFGS and the product ``−H g``."""

    def __init__(self, m):
        self.m, self.pairs = int(m), []

    def __bool__(self):
        return bool(self.pairs)

    def clear(self):
        self.pairs = []

    def push(self, s, y):
        """Keep ``(s, y)`` if its curvature ``sᵀy`` is positive enough, dropping the oldest."""
        sy = float(s @ y)
        if sy > EPS * float(y @ y):
            self.pairs.append((s, y, 1.0 / sy))
            del self.pairs[: -self.m]

    def direction(self, g):
        """``−H g`` by the two-loop recursion, ``H₀ = (sᵀy / yᵀy)·I`` of the newest pair
        (``−g`` with no pair)."""
        q = np.array(g, dtype=float)
        alphas = []
        for s, y, rho in reversed(self.pairs):
            a = rho * float(s @ q)
            q -= a * y
            alphas.append(a)
        if self.pairs:
            s, y, rho = self.pairs[-1]
            q *= 1.0 / (rho * float(y @ y))
        for (s, y, rho), a in zip(self.pairs, reversed(alphas)):
            q += (a - rho * float(y @ q)) * s
        return -q
