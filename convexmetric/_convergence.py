"""One ``ConvergenceWarning`` for every batch learner that stops short.

A fit that ends with status ``"optimal_inaccurate"`` (a certified gap above ``tol``:
the iteration cap, or a stall) or ``"iteration_limit"`` (the cap reached before the
documented stop) warns with scikit-learn's ``ConvergenceWarning``, naming the cause and
what to change. ``"user_limit"`` (the ``time_limit`` the user set) does not warn: the
result says so. Online learners (AROMA, OASIS) have no stop short of their stream and
never warn.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

SHORT = ("optimal_inaccurate", "iteration_limit")


def warn_unconverged(est, res, *, tol=None, stacklevel=3):
    """Warn when ``res`` (a SolveResult of ``est``'s fit) stopped short of its stop."""
    if res.status not in SHORT:
        return
    name = type(est).__name__
    cap = getattr(est, "max_iter", None)
    tol = getattr(est, "tol", None) if tol is None else tol
    gap = res.certified_gap
    what = (
        f"a certified gap of {gap:.2g}"
        if gap is not None and np.isfinite(gap)
        else "no certified bound"
    )
    if res.status == "iteration_limit":
        msg = (
            f"{name} stopped at max_iter={cap} iterations before its stopping rule "
            f"(tol={tol}) held; increase 'max_iter'."
        )
    elif cap is not None and res.iterations >= cap:
        msg = (
            f"{name} stopped at max_iter={cap} iterations with {what} (tol={tol}); "
            "increase 'max_iter'."
        )
    else:
        msg = (
            f"{name}'s solver stalled with {what} above tol={tol} after {res.iterations}"
            f" iterations (max_iter={cap}): not certified."
        )
    warnings.warn(msg, ConvergenceWarning, stacklevel=stacklevel)
