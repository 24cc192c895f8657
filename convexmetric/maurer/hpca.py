"""Hyperbolic PCA (Maurer 2008, §4.2): ``HyperbolicPCA``."""

from __future__ import annotations

import time

import numpy as np

from .. import kernels as _kernels
from .._input_checks import check_scalar
from .._verbose import check_verbose, log_summary, logging_to_stderr
from ..result import SolveResult
from . import constants as const
from .base import _PairOperator, logger


class HyperbolicPCA(_PairOperator):
    """Hyperbolic PCA (Maurer 2008, §4.2): ``T = cP``, ``P`` a projection.

    ``P`` is the projection onto the top-``n_components`` eigenspace of
    ``Â = (1/m) Σ η_{r_i} Q_{x_i − x'_i}``, ``η₁ = −1``, ``η₋₁ = 1/(c² − 1)``
    (Proposition 15 and 17).

    ``objective_ = ⟨P, Â⟩₂`` (the sum of the top eigenvalues, maximised by P). The
    eigendecomposition is exact, but the problem is not convex in ``T`` and carries no
    dual certificate: ``result_`` reports status "converged", no iterations.

    Parameters
    ----------
    n_components : int, default=10
        The rank of the projection ``P``.
    c : float, default=2.0
        The scale ``c > 1`` of ``T = cP`` (it sets ``η₋₁``).
    kernel : None, "linear", "maurer" or callable
        As in :class:`OperatorSimilarity`.
    n_pairs, oracle : int, {"balanced", "labels"}
        Pairs drawn from ``X, y`` (2000, ``"balanced"``).
    random_state : int, Generator or None
        Seeds the pair oracle.
    verbose : {0, 1}
        1: log a summary.

    Examples
    --------

    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0]]); y = [0, 0, 1, 1]
    >>> h = HyperbolicPCA(n_components=1, c=2.0, random_state=0).fit(X, y)
    >>> np.round(np.abs(h.components_), 1).tolist()  # the class-separating axis, scaled by c
    [[2.0, 0.0]]
    """

    def __init__(
        self,
        *,
        n_components=10,
        c=2.0,
        kernel=None,
        n_pairs=const.N_PAIRS,
        oracle="balanced",
        random_state=None,
        verbose=0,
    ):
        self.verbose = verbose
        self.n_components, self.c, self.kernel = n_components, c, kernel
        self.n_pairs, self.oracle, self.random_state = n_pairs, oracle, random_state

    def fit(self, X, y=None):
        """Fit from a :class:`Pairs` object, or from ``X, y`` through the pair oracle.

        Parameters
        ----------
        X : Pairs or array of shape (n, d)
            The pairs, or points from which the oracle draws ``n_pairs`` pairs.
        y : array of shape (n,), optional
            The labels of the points (pairs of one class are similar).

        Returns
        -------
        self
            The fitted estimator.
        """
        own = "HyperbolicPCA"
        c = check_scalar(self.c, "c", float, min_val=1, closed="neither", owner=own)
        d = check_scalar(self.n_components, "n_components", int, min_val=1, owner=own)
        check_verbose(self.verbose, own)
        t0 = time.perf_counter()
        pairs = self._pairs(X, y, fitting=True)
        self._setup(pairs)
        if self.kernel_fn_ is None:
            F, basis = pairs.points, None
        else:
            K = self.kernel_fn_(pairs.points, pairs.points)
            basis = _kernels.EmpiricalKernelMap(self.kernel_fn_).fit(pairs.points, K).basis_
            F = K @ basis
        U = F[pairs.i] - F[pairs.j]
        eta = np.where(pairs.r > 0, -1.0, 1.0 / (c**2 - 1.0))
        self.empirical_operator_ = (U.T * eta) @ U / len(pairs)
        w, E = np.linalg.eigh(self.empirical_operator_)
        d = min(d, len(w))
        self.eigenvalues_, E = w[::-1][:d], E[:, ::-1][:, :d]
        self.objective_ = float(self.eigenvalues_.sum())
        self.coef_ = c * (E if basis is None else basis @ E)
        self.singular_values_ = np.full(d, c)
        self.components_ = self.coef_.T if basis is None else None
        self.result_ = SolveResult(
            matrix=self.metric_,
            objective=self.objective_,
            status="converged",
            iterations=0,
            seconds=time.perf_counter() - t0,
            solver="eigh",
        )
        self.n_iter_ = 0
        with logging_to_stderr(logger, self.verbose):
            log_summary(logger, self.verbose, own, self.result_)
        return self
