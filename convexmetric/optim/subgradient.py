"""Generic projected-subgradient driver.

Minimises a convex function ``f`` over a closed convex set ``C`` given

* an *oracle* ``oracle(x) -> (f(x), g)`` with ``g`` a subgradient of ``f`` at ``x``;
* a *cone* (any :class:`convexmetric.cones.Cone`) whose ``project`` is the Euclidean
  projection onto ``C``.

Iterates are arrays or lists of arrays (one block per matrix). Two step rules:

``"adaptive"``
    Weinberger & Saul (2009), App. A.3: after a step that lowers the objective the
    step size grows by ``grow`` (1.01); after one that raises it, the step is undone
    and the step size shrinks by ``shrink`` (0.5). Monotone in the objective.
``"diminishing"``
    The classical normalised rule ``α_t = α₀ / (‖g_t‖ √(t+1))``; not monotone, the
    best iterate is kept.

Stopping: the best objective improves by less than ``rtol`` (relative) over
``patience`` iterations, the step size falls below ``min_step``, ``max_iter``
iterations, or ``time_limit`` seconds. An oracle may approximate ``f`` (LMNN checks
only an active set between full checks); if it has a method ``check(x) -> bool``, the
driver calls it at apparent convergence, and when it returns ``False`` (new
violations were found, the oracle updated itself) the run continues from the best
iterate: the "final check ... restarts" of App. A.1. A ``KeyboardInterrupt`` returns
the best iterate with status ``"user_limit"``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..progress import notify
from ..result import SolveResult


@dataclass(kw_only=True)
class SubgradientSettings:
    """Settings of :func:`projected_subgradient` (documented defaults)."""

    max_iter: int = 5000
    step: float | None = None  #: initial step; default ``step_scale·max(1,‖x₀‖)/‖g₀‖``
    step_scale: float = 0.1  #: relative size of the first step when ``step`` is None
    step_rule: str = "adaptive"  #: "adaptive" (×grow / ×shrink) or "diminishing"
    grow: float = 1.01
    monotone: bool = True  #: adaptive rule: undo a step that raised the objective
    shrink: float = 0.5
    rtol: float = 1e-8  #: relative improvement over `patience` iterations that ends the run
    patience: int = 100
    min_step: float = 1e-12  #: relative to the initial step
    time_limit: float | None = None  #: seconds
    max_restarts: int = 50  #: oracle checks that may reopen the run
    callback: object = None  #: called as callback(iteration, objective, step) ; True stops


def _axpy(x, a, g):
    if isinstance(x, list):
        return [xi + a * gi for xi, gi in zip(x, g)]
    return x + a * g


def _norm(g):
    if isinstance(g, list):
        return float(np.sqrt(sum(np.vdot(gi, gi).real for gi in g)))
    return float(np.linalg.norm(g))


def _copy(x):
    return [np.array(xi, copy=True) for xi in x] if isinstance(x, list) else np.array(x, copy=True)


def projected_subgradient(oracle, x0, cone, settings=None, *, solver_name="subgradient", **kw):
    """Run projected subgradient descent; return a :class:`SolveResult`.

    Parameters
    ----------
    oracle : callable
        ``oracle(x) -> (f, g)``; optionally with ``check(x) -> bool`` (see module doc)
        and ``objective(x) -> float`` (the exact objective, used for the final report).
    x0 : ndarray or list of ndarray
        Starting point (projected first).
    cone : Cone
        The feasible set.
    settings : SubgradientSettings, optional
        Or keyword arguments of the same names.

    Examples
    --------
    >>> import numpy as np
    >>> from convexmetric.cones import NonnegativeOrthant
    >>> f = lambda x: (float(np.abs(x - 2).sum()), np.sign(x - 2))
    >>> res = projected_subgradient(f, np.zeros(3), NonnegativeOrthant(), max_iter=2000)
    >>> bool(np.allclose(res.matrix, 2, atol=1e-3)), res.status
    (True, 'optimal')
    """
    s = settings if settings is not None else SubgradientSettings(**kw)
    if settings is not None and kw:
        raise TypeError("pass either settings or keyword arguments, not both")
    if s.step_rule not in ("adaptive", "diminishing"):
        raise ValueError(f"step_rule must be 'adaptive' or 'diminishing'; got {s.step_rule!r}")
    t0 = time.perf_counter()
    x = cone.project(_copy(x0))
    f, g = oracle(x)
    gnorm = _norm(g)
    alpha0 = s.step if s.step is not None else s.step_scale * max(1.0, _norm(x)) / max(gnorm, 1e-12)
    alpha = alpha0
    best_x, best_f = _copy(x), f
    history = [float(f)]
    status, it, restarts, since = "optimal_inaccurate", 0, 0, 0
    ref_f = f  # best objective `patience` iterations ago
    try:
        while it < s.max_iter:
            it += 1
            if gnorm == 0.0:
                converged = True
            else:
                if s.step_rule == "diminishing":
                    step = alpha0 / (gnorm * np.sqrt(it))
                else:
                    step = alpha
                x_new = cone.project(_axpy(x, -step, g))
                version = getattr(oracle, "version", None)
                f_new, g_new = oracle(x_new)
                if version is not None and oracle.version != version:
                    # the oracle's approximation changed: compare like with like
                    f, g = oracle(x)
                    best_f = oracle(best_x)[0]
                if s.step_rule == "adaptive":
                    if f_new <= f:
                        x, f, g, alpha = x_new, f_new, g_new, alpha * s.grow
                    else:
                        alpha *= s.shrink
                        if not s.monotone:
                            x, f, g = x_new, f_new, g_new
                else:
                    x, f, g = x_new, f_new, g_new
                gnorm = _norm(g)
                if f < best_f:
                    best_x, best_f = _copy(x), f
                history.append(float(f))
                since += 1
                converged = alpha < s.min_step * alpha0 and s.step_rule == "adaptive"
                if since >= s.patience:
                    converged = converged or (ref_f - best_f) <= s.rtol * max(abs(best_f), 1e-12)
                    ref_f, since = best_f, 0
            notify(it, f)
            if s.callback is not None and s.callback(it, float(f), float(alpha)):
                status = "user_limit"
                break
            if converged:
                check = getattr(oracle, "check", None)
                if check is not None and restarts < s.max_restarts and not check(best_x):
                    restarts += 1
                    x = _copy(best_x)
                    f, g = oracle(x)
                    best_f, gnorm = f, _norm(g)
                    alpha, ref_f, since = max(alpha, alpha0 * 1e-3), f, 0
                    continue
                status = "optimal"
                break
            if s.time_limit is not None and time.perf_counter() - t0 > s.time_limit:
                status = "user_limit"
                break
    except KeyboardInterrupt:
        status = "user_limit"
    exact = getattr(oracle, "objective", None)
    final_f = float(exact(best_x)) if exact is not None else float(best_f)
    return SolveResult(
        matrix=None if isinstance(best_x, list) else best_x,
        matrices=best_x if isinstance(best_x, list) else [best_x],
        objective=final_f,
        status=status,
        iterations=it,
        seconds=time.perf_counter() - t0,
        solver=solver_name,
        history=history,
        info={"restarts": restarts, "final_step": float(alpha), "step_rule": s.step_rule},
    )
