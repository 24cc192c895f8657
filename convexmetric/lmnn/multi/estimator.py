"""The multi-metric LMNN estimator (§5.2): one metric per cluster, learned jointly.

>>> from convexmetric import datasets
>>> from convexmetric import MultiMetricLMNN
>>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
>>> m = MultiMetricLMNN(k=3).fit(Xtr, ytr)
>>> m.metrics_.shape
(3, 4, 4)
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..._convergence import warn_unconverged
from ..._input_checks import check_scalar
from ..._renamed import DEPRECATED
from ..._verbose import log_summary, logging_to_stderr
from ...linalg import components_from_metric
from ...neighbors import sqdist, target_neighbors
from ...optim.deadline import Deadline
from ...problems import lmnn_multi as PM
from ..base import LMNNBaseEstimator, logger
from ..estimator import LMNN
from . import solver as SM


class MultiMetricLMNN(LMNNBaseEstimator):
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
    max_iter : int, default=3000
        Iterations at most over the whole fit: the single-metric start's and every
        multi-metric stage's together (``n_iter_`` never exceeds it). Before 0.2 this
        capped the first subgradient phase only (default 1); that phase is now one step
        inside the cap, as the default was.
    predict_k : int or None
        The k of :meth:`predict` and :meth:`loo_error` (default ``k``; formerly
        ``n_neighbors``, deprecated).
    random_state : int or None
        Seeds k-means.
    conic_solver : {"CLARABEL", "SCS"}
        The conic solver of ``solver="exact"``.
    time_limit : float or None
        Seconds for the whole fit (the single-metric start and the multi-metric solver
        together; status "user_limit").
    tol : float
        Certified relative gap below which the large-scale solver reports
        "optimal"; the solver runs until then (or ``time_limit``). Times on the
        digits standard split: ``benchmarks/results/bench_lmnn_ext.md``.
    verbose : {0, 1}
        Log a summary of each stage (INFO, logger ``convexmetric.lmnn``; the
        single-metric start logs its progress).
    n_neighbors : deprecated
        Renamed ``predict_k`` (the k of :meth:`predict`; the target neighbours are ``k``);
        the old name warns and is removed in 0.3.

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
    X_fit_, y_fit_ : ndarray
        The training points and their class indices (what saved models read).
    n_iter_ : int
        Iterations of the whole fit: the single-metric start's plus the multi-metric
        solver's (``result_.iterations``).
    k_, predict_k_ : int
        As in :class:`~convexmetric.LMNN`.
    single_ : LMNN
        The single-metric :class:`~convexmetric.LMNN` used as the start (fitted
        with ``tol=max(tol, 1e-2)``).

    Examples
    --------
    >>> from convexmetric import MultiMetricLMNN, datasets
    >>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
    >>> m = MultiMetricLMNN(k=3).fit(Xtr, ytr)  # one metric per class
    >>> m.result_.status, m.metrics_.shape
    ('optimal', (3, 4, 4))
    >>> round(m.score(Xte, yte), 3)
    0.978
    """

    def __init__(
        self,
        *,
        k=3,
        mu=0.5,
        n_clusters=None,
        solver="subgradient",
        max_iter=3000,
        predict_k=None,
        random_state=None,
        conic_solver="CLARABEL",
        time_limit=None,
        tol=1e-4,
        verbose=0,
        n_neighbors=DEPRECATED,
    ):
        self.verbose = verbose
        self.time_limit = time_limit
        self.tol = tol
        self.k = k
        self.mu = mu
        self.n_clusters = n_clusters
        self.solver = solver
        self.max_iter = max_iter
        self.predict_k = predict_k
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
        self._check_shared_params()
        check_scalar(self.max_iter, "max_iter", int, min_val=2, owner=name)  # start + metrics
        clock = Deadline(self.time_limit)  # one deadline for the whole fit
        X, y, counts = self._check_data(X, y)
        g, c = self._clusters(X, y)
        T = target_neighbors(X, y, self._set_k(counts))
        mu = float(self.mu)
        # only a start: certified to 1e-2 is plenty (the multi-metric optimum is far away)
        self.single_ = LMNN(
            k=self.k_,
            mu=mu,
            solver=self.solver,
            verbose=self.verbose,
            tol=max(float(self.tol), 1e-2),
            max_iter=self.max_iter - 1,
            time_limit=self.time_limit,
        )
        with warnings.catch_warnings():  # a start short of 1e-2 is still a start
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.single_.fit(X, y, targets=T)
        used = self.single_.n_iter_ if self.solver == "subgradient" else 0
        if self.solver == "exact":
            res = self._solve_exact(X, y, T, mu, g, c)
        else:
            left = clock.remaining()
            res = SM.solve(
                X,
                y,
                T,
                mu,
                g,
                c,
                M0=self.single_.metric_,
                subgradient_iter=1,
                max_iter=self.max_iter - used,
                tol=float(self.tol),
                time_limit=None if left is None else max(left, 1e-9),
            )
            res.iterations += used
            warn_unconverged(self, res)
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

    def _clusters(self, X, y):
        """The cluster of every point (its label, or k-means) and the number of clusters."""
        if self.n_clusters is None:
            self.cluster_centers_ = None
            return y, len(self.classes_)
        c = check_scalar(
            self.n_clusters,
            "n_clusters",
            int,
            min_val=1,
            max_val=X.shape[0],
            owner=type(self).__name__,
        )
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=c, n_init=10, random_state=self.random_state).fit(X)
        self.cluster_centers_ = km.cluster_centers_
        return km.labels_.astype(np.int64), c

    def _solve_exact(self, X, y, T, mu, g, c):
        """The multi-metric SDP in CVXPY with ``conic_solver``; a SolveResult."""
        import time

        from ...cones import PSDCone
        from ...problems.common import solve_problem
        from ...problems.lmnn import all_triplets
        from ...result import SolveResult
        from .certificate import exact_certificate
        from .oracle import MultiMetricOracle

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
        return SolveResult(
            matrix=Ms,
            matrices=list(Ms),
            objective=f,
            status=status,
            seconds=time.perf_counter() - t0,
            solver=solver,
            lower_bound=lower,
            info={"cvxpy_value": float(problem.value)},
            certificate=cert,
        )

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
        return self._distances(self._queries(X))

    def _distances(self, Q):
        check_is_fitted(self, "metrics_")
        D = np.empty((Q.shape[0], self._X.shape[0]))
        for c, L in enumerate(self.components_):
            idx = np.flatnonzero(self.clusters_ == c)
            D[:, idx] = sqdist(Q @ L.T, self._X[idx] @ L.T)
        return D

    def _energy_inputs(self, Q):
        """Eq. (15) with the metrics of eq. (16); a test point's cluster is its nearest
        k-means centre (clusters from k-means) or its hypothetical label."""
        train, _ = super()._energy_inputs(Q)
        train["clusters"] = self.clusters_
        tc = None
        if self.cluster_centers_ is not None:
            tc = sqdist(Q, self.cluster_centers_).argmin(axis=1)
        return train, (Q, tc)
