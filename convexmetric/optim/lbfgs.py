"""One stage of L-BFGS(-B) on a smoothed objective, the inner method of the staged driver.

The oracle works on structured points (an array, or a list of arrays; :mod:`.vectors`);
L-BFGS-B sees them flattened. Box constraints come from :attr:`.Oracle.bounds` (the
diagonal POE LPs: ``w ≥ 0``). The deadline is checked after every iteration through
scipy's callback (raising ``StopIteration`` ends the minimisation at the last iterate,
which the driver then evaluates). When L-BFGS-B's line search fails at a sharp kink
(status 2), ``rescue`` runs gradient steps with backtracking from where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from . import vectors
from .linesearch import backtracking_steps


@dataclass(kw_only=True)
class LBFGS:
    """L-BFGS-B options of a stage (scipy's names) and the line-search rescue."""

    maxcor: int = 20  #: stored correction pairs
    gtol: float = 1e-12  #: projected-gradient tolerance (absolute)
    ftol: float = 1e-15  #: relative reduction of the objective that ends a stage
    maxls: int = 20  #: line-search steps per iteration
    rescue: bool = False  #: gradient steps after a failed line search (status 2)

    def start(self, oracle, x0):
        """The starting point as given (L-BFGS-B enforces the bounds itself)."""
        return vectors.copy(x0) if isinstance(x0, list) else np.array(x0, dtype=float)

    def run(self, oracle, x, sigma, budget, clock, counts):
        """At most ``budget`` iterations on ``f_σ`` from ``x``: ``(x, stopped)``."""

        def fun(v):
            counts.evaluations += 1
            f, g = oracle.smooth(vectors.unflatten(v, x), sigma)
            return f, vectors.flatten(g)

        stopped = []

        def watch(intermediate_result):
            counts.iterations += 1
            if clock.expired():
                stopped.append(True)
                raise StopIteration

        opts = {"maxiter": int(budget), "gtol": self.gtol, "ftol": self.ftol,
                "maxcor": self.maxcor, "maxls": self.maxls}  # fmt: skip
        res = minimize(fun, vectors.flatten(x).copy(), jac=True, method="L-BFGS-B",
                       bounds=oracle.bounds, callback=watch, options=opts)  # fmt: skip
        v = res.x
        if res.status == 2 and self.rescue and not stopped:

            def phi(u, grad=True):
                out = oracle.smooth(vectors.unflatten(u, x), sigma, grad=grad)
                return (out[0], vectors.flatten(out[1])) if grad else out

            v = backtracking_steps(phi, v)
        return vectors.unflatten(v, x), bool(stopped)
