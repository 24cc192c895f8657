"""Solving a CVXPY problem with a named conic solver, tight tolerances and a checked status."""

from __future__ import annotations

import time
import warnings

import numpy as np


class _LazyCvxpy:
    """``cvxpy``, imported on first use: building or solving a problem imports it, while
    the numpy halves of these modules (objectives, hinge terms, margins) never do, so
    ``import convexmetric`` does not pay for it."""

    def __getattr__(self, name):
        import cvxpy

        return getattr(cvxpy, name)


#: ``cvxpy`` for the formulations (``from .common import cp``), imported lazily.
cp = _LazyCvxpy()
#: Tight default tolerances per conic solver (named explicitly; never CVXPY's choice).
SOLVER_OPTIONS = {
    "CLARABEL": {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9, "max_iter": 500},
    "SCS": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 200_000},
}


class SolverFailed(RuntimeError):
    """The conic solver did not return an optimal or near-optimal solution."""


def solve_problem(problem: cp.Problem, solver: str = "CLARABEL", *, allow_inaccurate=True, **opts):
    """Solve ``problem`` with ``solver`` and its tight tolerances; check the status.

    Returns ``(status, seconds)``. Raises :class:`SolverFailed` unless the status is
    ``"optimal"`` (or ``"optimal_inaccurate"`` when ``allow_inaccurate``).
    """
    solver = solver.upper()
    if solver not in SOLVER_OPTIONS:
        raise ValueError(f"solver must be one of {', '.join(SOLVER_OPTIONS)}; got {solver!r}.")
    options = {**SOLVER_OPTIONS[solver], **opts}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(solver=solver, **options)
        except cp.error.SolverError as exc:
            raise SolverFailed(f"{solver} failed: {exc}") from None
    seconds = time.perf_counter() - t0
    ok = ("optimal", "optimal_inaccurate") if allow_inaccurate else ("optimal",)
    if problem.status not in ok:
        raise SolverFailed(
            f"{solver} returned status {problem.status!r}; try solver='SCS' or 'CLARABEL', "
            "or looser tolerances."
        )
    return problem.status, seconds


def psd_value(variable):
    """A PSD variable's value as the nearest symmetric PSD matrix.

    A conic solver meets ``M ⪰ 0`` only within its tolerance: its value can have
    eigenvalues of about ``−1e-10``, which a metric (and the verifier) refuses. The
    value is symmetrised and its negative eigenvalues are clipped to zero (the nearest
    PSD matrix in the Frobenius norm)."""
    V = np.asarray(variable.value, dtype=float)
    w, Q = np.linalg.eigh(0.5 * (V + V.T))
    if w[0] >= 0.0:
        return 0.5 * (V + V.T)
    return (Q * np.maximum(w, 0.0)) @ Q.T
