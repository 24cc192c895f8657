"""One result type for every solver, exact or iterative, and the one certified gap.

Status words (:data:`STATUS_MESSAGES`, one table for every estimator) are CVXPY's for
the convex solvers (``"optimal"``, ``"optimal_inaccurate"``, ``"user_limit"``,
``"infeasible"``, ``"unbounded"``, ``"solver_error"``) so that a CVXPY solve and a
hand-written solver can be compared field by field. A hand-written convex solver says
"optimal" only through :func:`certified_status`: a dual bound within ``tol`` of the
objective. Learners with no convex certificate (SSNE, AROMA, OASIS, hyperbolic PCA,
Maurer's SGD) use words that claim no optimality: ``"converged"``, ``"completed"``,
``"iteration_limit"``. Convergence is reported here, never printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from .verifier._gap import FLOOR_SHARE, ROUNDING, CertificateError, certified_gap

__all__ = [
    "ACCEPTABLE",
    "FLOOR_SHARE",
    "ROUNDING",
    "STATUS_MESSAGES",
    "CertificateError",
    "SolveResult",
    "certified_gap",
    "certified_status",
]

#: Status words and what they mean for an iterative solver (cf. ``scipy.optimize``).
STATUS_MESSAGES = {
    "optimal": "certified: a dual bound within tol of the objective (a conic solver's "
    "optimality for the exact side)",
    "optimal_inaccurate": "a convex solver stopped (max_iter, a stall) without a certified "
    "gap within tol; the best iterate is returned",
    "user_limit": "stopped by the time limit or by the user; the best iterate is returned",
    "converged": "a learner without a convex certificate met its documented stopping rule "
    "(SSNE's plateau, hyperbolic PCA's eigendecomposition); no optimality is claimed",
    "completed": "an online or stochastic learner made all its passes (AROMA, OASIS, "
    "Maurer's SGD without a certificate within tol); no optimality is claimed",
    "iteration_limit": "a learner without a convex certificate stopped at max_iter before "
    "its stopping rule; no optimality is claimed",
    "infeasible": "the problem is infeasible",
    "unbounded": "the problem is unbounded",
    "solver_error": "the solver failed",
}

#: the statuses whose point may be used: a finished run of any learner
ACCEPTABLE = ("optimal", "optimal_inaccurate", "converged", "completed", "iteration_limit")


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
    certificate : dict or None
        The dual point that proves ``lower_bound`` (its formulation's multipliers or
        dual matrices, documented per formulation in :mod:`convexmetric.verify`), with
        ``"kind"`` naming the formulation; ``None`` where nothing is certified. The
        independent verifier recomputes the bound from it and the data.

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
        Whether the run finished with a usable point (:data:`ACCEPTABLE`: every word but
        "user_limit" and the failures).

    Notes
    -----
    ``repr(result)`` is a few lines: the status, objective, bound and certified gap, the
    solver, iterations and time, and the sizes of the matrices, history, certificate and
    ``info``; ``result.report()`` gives every field in full.
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
    certificate: dict | None = None

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
        """The certified relative gap (:func:`certified_gap`); ``inf`` without a bound.

        With ``info["zero_value"]`` (the objective at the zero point) where the solver
        recorded it.
        """
        return certified_gap(self.objective, self.lower_bound, self.info.get("zero_value", 0.0))

    @property
    def message(self) -> str:
        return STATUS_MESSAGES.get(self.status, self.status)

    @property
    def success(self) -> bool:
        return self.status in ACCEPTABLE

    def __repr__(self) -> str:
        gap = self.certified_gap if self.lower_bound is not None else None
        lines = [
            f"status={self.status!r}, objective={_num(self.objective)}, "
            f"certified_gap={_num(gap, '.2e')}",
            f"lower_bound={_num(self.lower_bound)}, solver={self.solver!r}",
            f"iterations={self.iterations}, seconds={_num(self.seconds, '.3g')}, "
            f"matrices={_shapes(self.matrices)}, history={len(self.history)} values",
            f"certificate={_certificate(self.certificate)}, info={len(self.info)} keys",
        ]
        return "SolveResult(" + ",\n            ".join(lines) + ")"

    def report(self) -> str:
        """Every field in full (``repr`` shows a summary).

        Returns
        -------
        str
            One line per field, ``name = value``, and one per entry of ``info``.
        """
        out = [f"{f.name} = {getattr(self, f.name)!r}" for f in fields(self) if f.name != "info"]
        out += [f"info[{k!r}] = {v!r}" for k, v in self.info.items()]
        return "\n".join(out)

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
            out["certified_gap"] = self.certified_gap
        return out


def _num(value, spec=".10g"):
    return "None" if value is None else format(float(value), spec)


def _shapes(matrices):
    shapes = ["×".join(map(str, np.shape(m))) for m in matrices]
    return "[" + ", ".join(shapes) + "]"


def _certificate(certificate):
    if not certificate:
        return "None"
    return f"{certificate.get('kind')!r} ({len(certificate)} entries)"


def certified_status(objective, lower_bound, tol, stopped=None, zero_value=0.0) -> str:
    """The status of a convex solver's answer: "optimal" iff :func:`certified_gap` ≤
    ``tol`` (``zero_value``: the objective at the zero point, the floor of the gap's
    denominator); otherwise ``stopped`` (e.g. "user_limit") when given, else
    "optimal_inaccurate". The one place the rule is written.

    >>> certified_status(100.0, 99.995, 1e-4), certified_status(1.0, None, 1e-4)
    ('optimal', 'optimal_inaccurate')
    """
    if certified_gap(objective, lower_bound, zero_value) <= tol:
        return "optimal"
    return stopped or "optimal_inaccurate"


def relative_gap(objective: float, reference: float) -> float:
    """``(objective - reference) / |reference|`` (absolute difference if reference is 0)."""
    denom = abs(reference)
    return float((objective - reference) / denom) if denom > 0 else float(objective - reference)
