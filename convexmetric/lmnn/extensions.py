"""Estimators for LMNN's extensions (§5): several metrics, and kernel LMNN.

>>> from convexmetric import datasets
>>> from convexmetric import MultiMetricLMNN
>>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
>>> m = MultiMetricLMNN(k=3).fit(Xtr, ytr)
>>> m.metrics_.shape
(3, 4, 4)
"""

from __future__ import annotations

import logging

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import kernels
from .._mahalanobis import MahalanobisMixin
from .._validation import (
    check_choice,
    check_labels,
    check_matrix,
    check_new_data,
    check_scalar,
)
from .._verbose import check_verbose, log_summary, logging_to_stderr, progress_callback
from ..linalg import components_from_metric
from ..neighbors import sqdist, target_neighbors, vote
from ..problems import lmnn_kernel as PK
from ..problems import lmnn_multi as PM
from . import kernel_solver as SK
from . import multi_solver as SM
from .energy import energy_predict
from .estimator import LMNN

logger = logging.getLogger("convexmetric.lmnn")


def knn_from_distances(D, y_enc, k, *, exclude=None):
    """kNN votes (paper's tie rule) from a query×train distance block."""
    if exclude is not None:
        D = D.copy()
        D[np.arange(D.shape[0]), exclude] = np.inf
    nn = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.array([vote(row) for row in y_enc[nn]], dtype=np.int64)


def _check_common(est, name):
    """The optional parameters shared by the extensions (None keeps the default)."""
    if est.n_neighbors is not None:
        check_scalar(est.n_neighbors, "n_neighbors", int, min_val=1, owner=name)
    if getattr(est, "time_limit", None) is not None:
        check_scalar(est.time_limit, "time_limit", float, min_val=0, closed="neither", owner=name)
    if hasattr(est, "conic_solver"):
        check_choice(str(est.conic_solver).upper(), "conic_solver", ("CLARABEL", "SCS"), owner=name)


def _check_labels(est, X, y, k):
    X = check_matrix(X, "X", min_rows=2)
    y = check_labels(y, X.shape[0], column_ok=True)
    X, y = validate_data(est, X, y, ensure_min_samples=2, dtype=np.float64)
    check_classification_targets(y)
    classes, y_enc = np.unique(y, return_inverse=True)
    counts = np.bincount(y_enc)
    if len(classes) < 2:
        raise ValueError("'y' has a single class; LMNN needs at least two classes.")
    if counts.min() <= k:
        raise ValueError(
            f"class {classes[np.argmin(counts)].item()!r} of 'y' has {counts.min()} members; "
            f"with k={k} every class needs at least k + 1 = {k + 1} (reduce 'k')."
        )
    return X, classes, y_enc


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
        20 by default: the multi-metric optimum is far from the single-metric start
        (digits: 210 vs 1726) and the refinement makes that move much faster.
        A cap on that phase only: ``n_iter_`` counts every stage (``result_.info["stages"]``).
    n_neighbors : int or None
        The k of :meth:`predict` (default ``k``).
    random_state : int or None
        Seeds k-means.
    conic_solver : {"CLARABEL", "SCS"}
        The conic solver of ``solver="exact"``.
    time_limit : float or None
        Seconds for the large-scale solver (status "user_limit").
    tol : float
        Certified relative gap below which the large-scale solver reports
        "optimal"; the solver runs until then (or ``time_limit``). On the digits
        standard split 1e-3 takes about 12 s, 1e-4 about 20 s (2-core machine).
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
        max_iter=20,
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
        mu = float(self.mu)
        # only a start: certified to 1e-2 is plenty (the multi-metric optimum is far away)
        self.single_ = LMNN(k=self.k, mu=mu, solver=self.solver, verbose=self.verbose,
                            tol=max(float(self.tol), 1e-2))  # fmt: skip
        self.single_.fit(X, y, targets=T)
        if self.solver == "exact":
            import time

            from ..result import SolveResult

            t0 = time.perf_counter()
            Ms, value, status, _ = PM.solve(
                X, y, T, mu, g, c, solver=str(self.conic_solver).upper()
            )
            res = SolveResult(
                matrix=Ms,
                matrices=list(Ms),
                objective=PM.objective(Ms, X, T, y, g, mu),
                status=status,
                seconds=time.perf_counter() - t0,
                solver=str(self.conic_solver).upper(),
                info={"cvxpy_value": value},
            )
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
                time_limit=self.time_limit,
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
        return self

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


class KernelLMNN(MahalanobisMixin, TransformerMixin, ClassifierMixin, BaseEstimator):
    """Kernel LMNN (§5.3): ``M = Σ A_lm Φ(x_l)Φ(x_m)ᵀ``, everything through kernel values.

    Parameters
    ----------
    k, mu : int, float
        As in :class:`~convexmetric.LMNN`.
    kernel : {"rbf", "linear", "precomputed"}
        With ``"precomputed"``, ``fit`` takes the n×n training kernel and
        ``transform``/``predict`` take m×n kernel values against the training points.
    gamma : float or None
        RBF width (default: scikit-learn's "scale").
    solver, max_iter, n_neighbors, tol, time_limit : str, int, int or None, float, float
        As in :class:`~convexmetric.LMNN` (``solver`` in {"subgradient", "exact"}).
    random_state : int or None
        Accepted for a uniform interface; the fit makes no random choice.
    verbose : {0, 1}
        Log the solver's progress (INFO, logger ``convexmetric.lmnn_extensions``).

    Attributes
    ----------
    A_ : ndarray of shape (n, n)
        The PSD matrix.
    components_ : ndarray
        Its factor, ``A_ = components_ᵀ components_``.
    objective_, result_, targets_, n_iter_ : float, SolveResult, ndarray, int
        As in :class:`~convexmetric.LMNN`.

    ``pair_distance``, ``pair_score`` and ``get_metric`` (metric-learn's interface) use
    the distance in the kernel's feature space; ``get_mahalanobis_matrix`` exists for
    ``kernel="linear"`` only (``M = XᵀAX`` over the training inputs ``X``).
    """

    def __init__(
        self,
        *,
        k=3,
        mu=0.5,
        kernel="rbf",
        gamma=None,
        solver="subgradient",
        max_iter=3000,
        n_neighbors=None,
        tol=1e-4,
        time_limit=None,
        random_state=None,
        verbose=0,
    ):
        self.tol = tol
        self.time_limit = time_limit
        self.random_state = random_state
        self.verbose = verbose
        self.k = k
        self.mu = mu
        self.kernel = kernel
        self.gamma = gamma
        self.solver = solver
        self.max_iter = max_iter
        self.n_neighbors = n_neighbors

    def _kernel(self, X, Y=None):
        if self.kernel == "linear":
            return kernels.linear_kernel(X, Y)
        return kernels.rbf_kernel(X, Y, gamma=self.gamma_)

    def fit(self, X, y):
        """Learn ``A`` from the training kernel.

        Parameters
        ----------
        X : array of shape (n, d), or (n, n) for ``kernel="precomputed"``
            Training points, or their kernel matrix.
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
        check_choice(self.kernel, "kernel", ("rbf", "linear", "precomputed"), owner=name)
        check_choice(self.solver, "solver", ("subgradient", "exact"), owner=name)
        if self.gamma is not None:
            check_scalar(self.gamma, "gamma", float, min_val=0, closed="neither", owner=name)
        check_scalar(self.max_iter, "max_iter", int, min_val=1, owner=name)
        _check_common(self, name)
        check_scalar(self.tol, "tol", float, min_val=0, closed="neither", owner=name)
        if self.time_limit is not None:
            check_scalar(
                self.time_limit, "time_limit", float, min_val=0, closed="neither", owner=name
            )
        check_verbose(self.verbose, name)
        if self.kernel == "precomputed":
            kernels.check_kernel(X, name="X")  # square, symmetric, PSD
        X, self.classes_, y = _check_labels(self, X, y, self.k)
        if self.kernel == "precomputed":
            K = X
        else:
            var = float(X.var())
            self.gamma_ = self.gamma or (1.0 / (X.shape[1] * var) if var > 0 else 1.0)
            K = self._kernel(X)
        T = PK.kernel_targets(K, y, self.k)
        mu = float(self.mu)
        with logging_to_stderr(logger, self.verbose):
            if self.solver == "exact":
                res = SK.solve(K, y, T, mu, exact=True)
            else:
                res = SK.solve(
                    K,
                    y,
                    T,
                    mu,
                    max_iter=self.max_iter,
                    tol=float(self.tol),
                    time_limit=self.time_limit,
                    callback=progress_callback(logger, self.verbose, name),
                )
            log_summary(logger, self.verbose, name, res)
        self.n_iter_ = res.iterations
        self.A_ = 0.5 * (res.matrix + res.matrix.T)
        self.components_ = components_from_metric(self.A_)
        self.objective_, self.result_, self.targets_ = float(res.objective), res, T
        self._X, self._K, self._y = X, K, y
        return self

    def kernel_rows(self, X):
        """Compute the kernel values ``k(x)`` against the training points.

        Parameters
        ----------
        X : array of shape (m, d), or (m, n) for ``kernel="precomputed"``
            New points (or their kernel values, returned as they are).

        Returns
        -------
        ndarray of shape (m, n)
            The kernel rows.
        """
        check_is_fitted(self, "A_")
        if self.kernel == "precomputed":
            from .._validation import check_matrix

            K = check_matrix(X, "X")
            n = self._K.shape[0]
            if K.shape[1] != n:
                raise ValueError(
                    f"'X' must hold kernel values against the {n} training points, shape "
                    f"(n_queries, {n}); got shape {K.shape}."
                )
            return K
        X = check_new_data(self, X)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._kernel(X, self._X)

    def _mahalanobis_matrix(self):
        if self.kernel != "linear":
            raise ValueError(
                f"KernelLMNN with kernel={self.kernel!r} learns a metric in the kernel's "
                "feature space and has no Mahalanobis matrix on the inputs (only "
                "kernel='linear' has one); pair_distance and get_metric work for every kernel."
            )
        return self._X.T @ self.A_ @ self._X

    def transform(self, X):
        """Map to the coordinates ``k(x) Lᵀ``, where Euclidean distance is the learned one.

        Parameters
        ----------
        X : array of shape (m, d), or (m, n) for ``kernel="precomputed"``
            New points.

        Returns
        -------
        ndarray of shape (m, n)
            The transformed points.
        """
        return self.kernel_rows(X) @ self.components_.T

    def predict(self, X):
        """Predict kNN labels under the learned feature-space metric (out of sample).

        Parameters
        ----------
        X : array of shape (m, d), or (m, n) for ``kernel="precomputed"``
            New points.

        Returns
        -------
        ndarray of shape (m,)
            The predicted labels.
        """
        Zq, Zt = self.transform(X), self._K @ self.components_.T
        D = sqdist(Zq, Zt)
        return self.classes_[knn_from_distances(D, self._y, self.n_neighbors or self.k)]
