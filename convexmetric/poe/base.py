"""What POE and MKPOE share: validation, the solve with the estimator's caps, the fitted
attributes and GAUC scoring."""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from .._convergence import warn_unconverged
from .._input_checks import check_choice, check_scalar
from .._output import plain_transform
from .._verbose import check_verbose, log_summary, logging_to_stderr, progress_callback
from ..comparisons import check_comparisons
from ..metrics import gauc
from ..optim.deadline import Deadline
from ..problems import poe as formulations
from ..problems.common import SOLVER_OPTIONS
from ..result import SolveResult
from . import constants as const
from . import solver as large_scale
from .graph import filter_comparisons
from .items import components_from_W, unbundle

logger = logging.getLogger("convexmetric.poe")


def _fit_blocks(blocks, kernels, C, beta, diagonal, solver, options=None):
    """Solve over ``blocks`` (exact) or through the large-scale solver; a SolveResult.

    ``options``: keyword arguments of :func:`convexmetric.poe.solver.solve`.
    """
    if solver == "subgradient":
        kw = options or {}
        if kernels is None:
            return large_scale.solve(blocks, C, beta, diagonal=diagonal, **kw)
        return large_scale.solve_kernels(kernels, C, beta, diagonal=diagonal, **kw)
    solver = "CLARABEL" if solver == "exact" else solver
    Ws, value, status, seconds = formulations.solve(
        blocks, C, beta, diagonal=diagonal, solver=solver
    )
    return SolveResult(
        matrix=Ws[0], matrices=Ws, objective=value, status=status, seconds=seconds, solver=solver
    )


class _POEBase(BaseEstimator):
    def _check_common(self):
        own = self._name
        check_scalar(self.beta, "beta", float, min_val=0.0, closed="neither", owner=own)
        check_choice(self.solver, "solver", ["subgradient", "exact", *SOLVER_OPTIONS], owner=own)
        conic = check_choice(
            str(self.conic_solver).upper(), "conic_solver", list(SOLVER_OPTIONS), owner=own
        )
        self._algorithm, self._conic = self.solver, conic
        if self.solver in SOLVER_OPTIONS:  # a conic solver's name: "exact" with it
            warnings.warn(
                f"solver={self.solver!r} of {own} names the conic solver; since 0.2 'solver' "
                f"is the algorithm: pass solver='exact', conic_solver={self.solver!r} (this "
                "spelling goes in 0.3).",
                FutureWarning,
                stacklevel=3,
            )
            self._algorithm, self._conic = "exact", self.solver
        self._clock = Deadline(self.time_limit)  # the whole fit, the graph filter included
        check_choice(self.diagonal, "diagonal", [False, True], owner=own)
        check_choice(self.filter_graph, "filter_graph", [False, True], owner=own)
        if self.max_iter is not None:
            check_scalar(self.max_iter, "max_iter", int, min_val=1, owner=own)
        if self.tol is not None:
            check_scalar(self.tol, "tol", float, min_val=0.0, closed="neither", owner=own)
        if self.time_limit is not None:
            check_scalar(
                self.time_limit, "time_limit", float, min_val=0, closed="neither", owner=own
            )
        check_verbose(self.verbose, own)

    def _comparisons(self, comparisons, n):
        C = check_comparisons(comparisons, n, owner=self._name)
        if self.filter_graph:  # §2.2: duplicates, 2-cycles, acyclic subgraph (seeded), reduction
            self.filter_report_ = filter_comparisons(C, random_state=self.random_state)
            C = self.filter_report_.comparisons
        return C

    def _solve(self, blocks, kernels, C):
        """Run the solver (with the estimator's caps and progress logging); a SolveResult."""
        with logging_to_stderr(logger, self.verbose):
            solver = self._conic if self._algorithm == "exact" else "subgradient"
            res = _fit_blocks(
                blocks, kernels, C, self.beta, self.diagonal, solver, self._solver_options()
            )
            log_summary(logger, self.verbose, self._name, res)
        return res

    def _solver_options(self):
        """Keyword arguments of the large-scale solver: its default method with the
        estimator's caps (``verbose`` only adds the callback, so it never changes the
        result). The caps never change the method."""
        opts = {"callback": progress_callback(logger, self.verbose, self._name)}
        left = self._clock.remaining()
        left = None if left is None else max(left, 1e-9)
        caps = {"tol": self.tol, "max_iter": self.max_iter, "time_limit": left}
        caps = {k: v for k, v in caps.items() if v is not None}
        if caps:
            opts["settings"] = caps
        return opts

    def _finish(self, result, blocks, C):
        if result.certificate is not None and self.filter_graph:
            # the multipliers index the filtered comparisons: name them in the input
            result.certificate["comparisons"] = np.asarray(self.filter_report_.kept, np.int64)
        if self._algorithm == "subgradient":
            warn_unconverged(
                self, result, tol=const.TOL if self.tol is None else self.tol, stacklevel=4
            )
        self.result_ = result
        self.n_iter_ = result.iterations
        self.W_ = [np.asarray(W) for W in result.matrices]
        self.objective_ = formulations.objective(self.W_, blocks, C, self.beta)
        self.components_ = [components_from_W(W) for W in self.W_]
        return self

    def _check_fitted(self):
        if not hasattr(self, "W_"):
            raise RuntimeError(f"This {self._name} instance is not fitted yet; call fit first.")

    def score(self, comparisons, X=None):
        """GAUC (eq. 18) of the comparisons among the items ``X`` embedded by ``transform``.

        ``X`` defaults to the items of an :class:`ItemComparisons`, else to the training
        items (their embedding ``embedding_``). Higher is better, so ``GridSearchCV`` can
        use it as is.

        Parameters
        ----------
        comparisons : Comparisons or ItemComparisons
            The comparisons ``(i, j, k, l)`` to score.
        X : array, list of arrays or None
            The items they index (features, or kernel values against the training items).

        Returns
        -------
        float
            The fraction of comparisons the embedding satisfies (GAUC).
        """
        self._check_fitted()
        comparisons, X = unbundle(comparisons, X, self._name, None)
        Z = self.embedding_ if X is None else plain_transform(self, X)
        return gauc(Z, comparisons)
