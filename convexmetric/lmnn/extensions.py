"""Estimators for LMNN's extensions (§5): several metrics, and kernel LMNN.

>>> from convexmetric import datasets
>>> from convexmetric import MultiMetricLMNN
>>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
>>> m = MultiMetricLMNN(k=3).fit(Xtr, ytr)
>>> m.metrics_.shape
(3, 4, 4)
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    check_choice,
    check_new_data,
    check_scalar,
)
from .._verbose import check_verbose, log_summary, logging_to_stderr
from ..linalg import components_from_metric
from ..neighbors import sqdist, target_neighbors
from ..optim.deadline import Deadline
from ..problems import lmnn_multi as PM
from . import multi_solver as SM
from ._shared import _check_common, _check_labels, knn_from_distances, logger
from .energy import energy_predict
from .estimator import LMNN
from .kernel_estimator import KernelLMNN  # noqa: F401


class MultiMetricLMNN(ClassifierMixin, BaseEstimator):
    """Multi-metric LMNN (§5.2): one metric per cluster, learned jointly.

    Parameters
    ----------
    k, mu : int, float
        As in :class:`~convexmetric.LMNN`.
    n_clusters : int or None
        ``None``: one cluster per class (the paper's choice). An int: k-means clusters.
    solver : {"subgradient", "exact"}
        Large-scale solver (started from the single-metric solution) or the full SDP
        in CVXPY (small problems).
    max_iter : int
        Iterations of the subgradient phase (the L-BFGS refinement follows).
        1 by default: the multi-metric optimum is far from the single-metric start
        (digits: 210 vs 1726), the subgradient steps are short (20 of them: 1726 to
        1721) and the refinement makes that move much faster.
        A cap on that phase only: ``n_iter_`` counts every stage (``result_.info["stages"]``).
    n_neighbors : int or None
        The k of :meth:`predict` (default ``k``).
    random_state : int or None
        Seeds k-means.
    conic_solver : {"CLARABEL", "SCS"}
        The conic solver of ``solver="exact"``.
    time_limit : float or None
        Seconds for the whole fit (the single-metric start and the multi-metric solver
        together; status "user_limit").
    tol : float
        Certified relative gap below which the large-scale solver reports
        "optimal"; the solver runs until then (or ``time_limit``). On the digits
        standard split the fit takes about 2.5 s to 1e-3, 4 s to 1e-4 (one core).
    verbose : {0, 1}
        Log a summary of each stage (INFO, logger ``convexmetric.lmnn_extensions``; the
        single-metric start logs its progress).

    Attributes
    ----------
    metrics_ : ndarray of shape (c, d, d)
        The PSD matrices, one per cluster.
    components_ : ndarray of shape (c, d, d)
        Their factors.
    clusters_ : ndarray of shape (n,)
        The cluster of every training point.
    objective_, result_, targets_ : float, SolveResult, ndarray
        As in :class:`~convexmetric.LMNN`.
    n_iter_ : int
        Iterations of the multi-metric solver (``result_.iterations``).
    single_ : LMNN
        The single-metric :class:`~convexmetric.LMNN` used as the start (fitted
        with ``tol=max(tol, 1e-2)``).
    """

    def __init__(
        self,
        *,
        k=3,
        mu=0.5,
        n_clusters=None,
        solver="subgradient",
        max_iter=1,
        n_neighbors=None,
        random_state=None,
        conic_solver="CLARABEL",
        time_limit=None,
        tol=1e-4,
        verbose=0,
    ):
        self.verbose = verbose
        self.time_limit = time_limit
        self.tol = tol
        self.k = k
        self.mu = mu
        self.n_clusters = n_clusters
        self.solver = solver
        self.max_iter = max_iter
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.conic_solver = conic_solver

    def fit(self, X, y):
        """Cluster (labels or k-means), start from single-metric LMNN, learn all metrics.

        Parameters
        ----------
        X : array of shape (n, d)
            Training points.
        y : array of shape (n,)
            Their labels.

        Returns
        -------
        self
            The fitted estimator.
        """
        name = type(self).__name__
        check_scalar(self.k, "k", int, min_val=1, owner=name)
        check_scalar(self.mu, "mu", float, min_val=0.0, max_val=1.0, owner=name)
        check_choice(self.solver, "solver", ("subgradient", "exact"), owner=name)
        check_scalar(self.max_iter, "max_iter", int, min_val=1, owner=name)
        _check_common(self, name)
        check_scalar(self.tol, "tol", float, min_val=0, closed="neither", owner=name)
        check_verbose(self.verbose, name)
        X, self.classes_, y = _check_labels(self, X, y, self.k)
        if self.n_clusters is None:
            g, c = y, len(self.classes_)
            self.cluster_centers_ = None
        else:
            c = check_scalar(
                self.n_clusters, "n_clusters", int, min_val=1, max_val=X.shape[0], owner=name
            )
            from sklearn.cluster import KMeans

            km = KMeans(n_clusters=c, n_init=10, random_state=self.random_state).fit(X)
            g, self.cluster_centers_ = km.labels_.astype(np.int64), km.cluster_centers_
        T = target_neighbors(X, y, self.k)
        mu, clock = float(self.mu), Deadline(self.time_limit)  # one deadline for the fit
        # only a start: certified to 1e-2 is plenty (the multi-metric optimum is far away)
        self.single_ = LMNN(k=self.k, mu=mu, solver=self.solver, verbose=self.verbose,
                            tol=max(float(self.tol), 1e-2), time_limit=self.time_limit)  # fmt: skip
        self.single_.fit(X, y, targets=T)
        if self.solver == "exact":
            res = self._solve_exact(X, y, T, mu, g, c)
        else:
            res = SM.solve(
                X,
                y,
                T,
                mu,
                g,
                c,
                M0=self.single_.metric_,
                max_iter=self.max_iter,
                time_limit=clock.remaining(),
                tol=float(self.tol),
            )
        with logging_to_stderr(logger, self.verbose):
            log_summary(logger, self.verbose, name, res)
        self.n_iter_ = res.iterations
        self.metrics_ = np.stack([0.5 * (M + M.T) for M in res.matrices])
        self.components_ = np.stack([components_from_metric(M) for M in self.metrics_])
        self.objective_, self.result_ = float(res.objective), res
        self.clusters_, self.targets_ = g, T
        self._X, self._y = X, y
        self.X_fit_, self.y_fit_ = X, y  # public, for saved models (model_kinds)
        return self

    def _solve_exact(self, X, y, T, mu, g, c):
        """The multi-metric SDP in CVXPY with ``conic_solver``; a SolveResult."""
        import time

        from ..cones import PSDCone
        from ..problems.common import solve_problem
        from ..problems.lmnn import all_triplets
        from ..result import SolveResult
        from .multi_certificate import exact_certificate
        from .multi_oracle import MultiMetricOracle

        t0 = time.perf_counter()
        solver = str(self.conic_solver).upper()
        trip = all_triplets(y, T)
        problem, Mv, _ = PM.build(X, T, mu, g, c, trip)
        status, _ = solve_problem(problem, solver)
        # the conic solver's matrices are PSD to its accuracy only: projected (a point of
        # the feasible set, whose objective is then the one reported)
        Ms = np.stack([PSDCone().project(0.5 * (M.value + M.value.T)) for M in Mv])
        f = PM.objective(Ms, X, T, y, g, mu)
        duals = problem.constraints[0].dual_value if problem.constraints else np.zeros(0)
        oracle = MultiMetricOracle(X, y, T, mu, g, c)
        lower, cert = exact_certificate(oracle, trip, duals, f)  # its hinge duals' bound
        return SolveResult(matrix=Ms, matrices=list(Ms), objective=f, status=status,
                           seconds=time.perf_counter() - t0, solver=solver, lower_bound=lower,
                           info={"cvxpy_value": float(problem.value)},
                           certificate=cert)  # fmt: skip

    def distances(self, X):
        """Compute ``D̂(x, x_i)`` of eq. (16) to every training point ``x_i``.

        The metric is that of ``x_i``'s cluster.

        Parameters
        ----------
        X : array of shape (m, d)
            New points.

        Returns
        -------
        ndarray of shape (m, n)
            Squared distances to the training points.
        """
        check_is_fitted(self, "metrics_")
        X = check_new_data(self, X)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        D = np.empty((X.shape[0], self._X.shape[0]))
        for c, L in enumerate(self.components_):
            idx = np.flatnonzero(self.clusters_ == c)
            D[:, idx] = sqdist(X @ L.T, self._X[idx] @ L.T)
        return D

    def predict(self, X):
        """Predict labels by kNN under the asymmetric distance of eq. (16).

        Parameters
        ----------
        X : array of shape (m, d)
            New points.

        Returns
        -------
        ndarray of shape (m,)
            The predicted labels.
        """
        D = self.distances(X)
        return self.classes_[knn_from_distances(D, self._y, self.n_neighbors or self.k)]

    def loo_error(self, k=None):
        """Compute the leave-one-out kNN training error under eq. (16).

        Parameters
        ----------
        k : int, optional
            Neighbours of the vote (default ``n_neighbors``, else ``k``).

        Returns
        -------
        float
            The fraction of training points misclassified.
        """
        D = self.distances(self._X)
        kk = k or self.n_neighbors or self.k
        pred = knn_from_distances(D, self._y, kk, exclude=np.arange(len(self._y)))
        return float(np.mean(pred != self._y))

    def energy_predict(self, X):
        """Predict energy-based labels (eq. 15) with the metrics of eq. (16).

        Parameters
        ----------
        X : array of shape (m, d)
            New points.

        Returns
        -------
        ndarray of shape (m,)
            The labels of least energy.
        """
        check_is_fitted(self, "metrics_")
        X = check_new_data(self, X)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        tc = None
        if self.cluster_centers_ is not None:
            tc = sqdist(X, self.cluster_centers_).argmin(axis=1)
        pred = energy_predict(
            self._X,
            self._y,
            self.targets_,
            X,
            self.components_,
            float(self.mu),
            clusters=self.clusters_,
            test_clusters=tc,
        )
        return self.classes_[pred]
