"""One result type for every solver, exact or iterative.

Status words are CVXPY's (``"optimal"``, ``"optimal_inaccurate"``, ``"user_limit"``,
``"infeasible"``, ``"unbounded"``, ``"solver_error"``) so that a CVXPY solve and a
hand-written solver can be compared field by field. Convergence is reported here,
never printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Status words and what they mean for an iterative solver (cf. ``scipy.optimize``).
STATUS_MESSAGES = {
    "optimal": "converged: the stopping rule was met (or the certificate holds)",
    "optimal_inaccurate": "stopped at max_iter; the best iterate is returned",
    "user_limit": "stopped by the time limit or by the user; the best iterate is returned",
    "infeasible": "the problem is infeasible",
    "unbounded": "the problem is unbounded",
    "solver_error": "the solver failed",
}

ACCEPTABLE = ("optimal", "optimal_inaccurate")


@dataclass
class SolveResult:
    """What a solver returns.

    Parameters
    ----------
    matrix : ndarray or None
        The learned matrix (M, W or A); for multi-matrix problems the first one.
    objective : float
        The objective at ``matrix`` (the full objective, not a surrogate).
    status : str
        One of :data:`STATUS_MESSAGES`.
    iterations : int
        Iterations (or working-set rounds, or online updates).
    seconds : float
        Wall-clock time of the solve.
    solver : str
        Which solver produced it (``"SCS"``, ``"CLARABEL"``, ``"subgradient"``, ...).
    history : list of float
        Exact objective values along the run (one per iteration, stage or round).
        Values of an approximation (an active list's) are never here: a solver that
        keeps them puts them in ``info["approx_history"]``.
    matrices : list of ndarray
        All learned matrices (``[matrix]`` for single-matrix problems).
    lower_bound : float or None
        A certified lower bound on the optimum, where known.
    info : dict
        Solver-specific extras (active-set sizes, step sizes, ...).

    Attributes
    ----------
    gap : float or None
        ``objective − lower_bound`` where a lower bound is known.
    certified_gap : float
        The certified relative gap ``(objective − lower_bound)/|objective|``; ``inf``
        without a bound.
    message : str
        The status in words.
    success : bool
        Whether the status is "optimal" or "optimal_inaccurate".
    """

    matrix: np.ndarray | None
    objective: float
    status: str
    iterations: int = 0
    seconds: float = 0.0
    solver: str = ""
    history: list = field(default_factory=list)
    matrices: list = field(default_factory=list)
    lower_bound: float | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.matrices and self.matrix is not None:
            self.matrices = [self.matrix]
        if self.matrix is None and self.matrices:
            self.matrix = self.matrices[0]

    @property
    def gap(self) -> float | None:
        """``objective - lower_bound`` where a lower bound is known."""
        if self.lower_bound is None:
            return None
        return float(self.objective - self.lower_bound)

    @property
    def certified_gap(self) -> float:
        """The certified relative gap (:func:`certified_gap`); ``inf`` without a bound."""
        return certified_gap(self.objective, self.lower_bound)

    @property
    def message(self) -> str:
        return STATUS_MESSAGES.get(self.status, self.status)

    @property
    def success(self) -> bool:
        return self.status in ACCEPTABLE

    def summary(self) -> dict:
        """Summarise the result for JSON (no matrices).

        Returns
        -------
        dict
            ``objective``, ``status``, ``iterations``, ``seconds``, ``solver``, and
            ``lower_bound`` and ``gap`` where a lower bound is known.
        """
        out = {
            "objective": float(self.objective),
            "status": self.status,
            "iterations": int(self.iterations),
            "seconds": float(self.seconds),
            "solver": self.solver,
        }
        if self.lower_bound is not None:
            out["lower_bound"] = float(self.lower_bound)
            out["gap"] = self.gap
        return out


def certified_gap(objective, lower_bound) -> float:
    """``max(objective − lower_bound, 0) / max(|objective|, 1e-12)``: the relative error
    that a lower bound certifies, the one definition every solver and report uses.

    ``inf`` without a bound (``None`` or ``-inf``) or with a non-finite objective. The
    floor of the denominator certifies an objective of 0 with a bound of 0.

    >>> certified_gap(100.0, 99.99), certified_gap(0.0, 0.0), certified_gap(1.0, None)
    (0.00010000000000005117, 0.0, inf)
    """
    if lower_bound is None or not np.isfinite(lower_bound) or not np.isfinite(objective):
        return float("inf")
    return max(float(objective) - float(lower_bound), 0.0) / max(abs(float(objective)), 1e-12)


def relative_gap(objective: float, reference: float) -> float:
    """``(objective - reference) / |reference|`` (absolute difference if reference is 0)."""
    denom = abs(reference)
    return float((objective - reference) / denom) if denom > 0 else float(objective - reference)
