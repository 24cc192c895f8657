"""Kernel LMNN (Weinberger & Saul, §5.3 and the kernel trick): the estimator ``KernelLMNN``
and its large-scale solver :func:`solve`, the App. A solver on the empirical kernel map.

By :mod:`convexmetric.problems.lmnn_kernel`, eq. (14) in ``A ⪰ 0`` (n×n) is linear LMNN
on the rows of ``Φ`` (``K = ΦΦᵀ``, ``Φ`` n×r) with metric ``M̂ = ΦᵀAΦ`` (r×r), and
``A = T M̂ Tᵀ``. The active-set subgradient solver with its smoothed refinement (or the
working-set exact solver) therefore applies verbatim, with ``O(r²)`` unknowns instead of
the ``O(n²)`` the paper warns about.

The features are those of the centred kernel ``HKH`` (``H = I − 11ᵀ/n``): distances do
not move (``H(k_i − k_j) = HKH(e_i − e_j)``), and a feature that is the same for every
point (the constant of a polynomial kernel) leaves the features instead of staying as
a direction in which the points differ by rounding only — a direction a certificate
cannot tell from one a metric of huge norm may use. The map applied to kernel rows is
``L = L̂TᵀH`` (``L̂`` the factor of ``M̂``): ``L(k_i − k_j) = L̂(φ_i − φ_j)``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .. import kernels
from .._convergence import warn_unconverged
from .._feature_names import check_feature_names
from .._input_checks import check_choice, check_matrix, check_new_data, check_scalar
from .._mahalanobis import MahalanobisMixin, kernel_point_map
from .._renamed import DEPRECATED
from .._verbose import log_summary, logging_to_stderr, progress_callback
from ..linalg import components_from_metric
from ..optim.deadline import Deadline
from ..problems import lmnn_kernel as PK
from .base import LMNNBaseEstimator, logger
from .blocks.xp import like_input
from .exact import solve_working_set
from .proof import applied
from .settings import LMNNSettings
from .solver import solve as _solve_linear


class KernelLMNN(MahalanobisMixin, TransformerMixin, LMNNBaseEstimator):
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
    solver, max_iter, predict_k, tol, time_limit : str, int, int or None, float, float
        As in :class:`~convexmetric.LMNN` (``solver`` in {"subgradient", "exact"};
        ``time_limit`` covers the whole fit, the kernel matrix included).
    random_state : int or None
        Accepted for a uniform interface; the fit makes no random choice.
    verbose : {0, 1}
        Log the solver's progress (INFO, logger ``convexmetric.lmnn``).
    n_neighbors : deprecated
        Renamed ``predict_k`` (the k of :meth:`predict`; the target neighbours are ``k``);
        the old name warns and is removed in 0.3.

    Attributes
    ----------
    A_ : ndarray of shape (n, n)
        The PSD matrix.
    components_ : ndarray
        Its factor, ``A_ = components_ᵀ components_``.
    objective_, result_, targets_, n_iter_, k_, predict_k_ : float, SolveResult, ndarray, int
        As in :class:`~convexmetric.LMNN`.
    X_fit_, y_fit_ : ndarray
        The training points and their class indices (what saved models read).

    Notes
    -----
    ``pair_distance``, ``pair_score`` and ``get_metric`` (metric-learn's interface) use
    the distance in the kernel's feature space; ``get_mahalanobis_matrix`` exists for
    ``kernel="linear"`` only (``M = XᵀAX`` over the training inputs ``X``).

    Examples
    --------
    >>> from convexmetric import KernelLMNN, datasets
    >>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
    >>> m = KernelLMNN(k=3, kernel="rbf").fit(Xtr, ytr)
    >>> m.result_.status, m.A_.shape  # one row and column per training point
    ('optimal', (105, 105))
    >>> m.transform(Xte).shape  # new points through their kernel rows
    (45, 104)
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
        predict_k=None,
        tol=1e-4,
        time_limit=None,
        random_state=None,
        verbose=0,
        n_neighbors=DEPRECATED,
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
        self.predict_k = predict_k
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
        self._check_shared_params()
        check_choice(self.kernel, "kernel", ("rbf", "linear", "precomputed"), owner=name)
        if self.gamma is not None:
            check_scalar(self.gamma, "gamma", float, min_val=0, closed="neither", owner=name)
        clock = Deadline(self.time_limit)  # the whole fit, the kernel matrix included
        if self.kernel == "precomputed":
            kernels.check_kernel(X, name="X")  # square, symmetric, PSD
        X, y, counts = self._check_data(X, y, kernel=self.kernel == "precomputed")
        if self.kernel == "precomputed":
            K = X
        else:
            var = float(X.var())
            self.gamma_ = self.gamma or (1.0 / (X.shape[1] * var) if var > 0 else 1.0)
            K = self._kernel(X)
        T = PK.kernel_targets(K, y, self._set_k(counts))
        mu = float(self.mu)
        with logging_to_stderr(logger, self.verbose):
            if self.solver == "exact":
                res = solve(K, y, T, mu, exact=True)
            else:
                res = solve(
                    K,
                    y,
                    T,
                    mu,
                    max_iter=self.max_iter,
                    tol=float(self.tol),
                    time_limit=clock.remaining(),
                    callback=progress_callback(logger, self.verbose, name),
                )
            log_summary(logger, self.verbose, name, res)
        if self.solver == "subgradient":
            warn_unconverged(self, res)
        self.n_iter_ = res.iterations
        self.components_ = res.info["components"]  # the solver's own factor, A = LᵀL
        self.A_ = self.components_.T @ self.components_
        self.objective_, self.result_, self.targets_ = float(res.objective), res, T
        self._X, self._K, self._y = X, K, y
        self.X_fit_, self.y_fit_ = X, y  # public, for saved models (model_kinds)
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
            check_feature_names(self, X)
            K = check_matrix(X, "X")
            n = self._K.shape[0]
            if K.shape[1] != n:
                raise ValueError(
                    f"'X' must hold kernel values against the {n} training points, shape "
                    f"(n_queries, {n}); got shape {K.shape}."
                )
            return K
        X = check_new_data(self, X)
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
        array of shape (m, n)
            The transformed points, in ``X``'s array namespace and on its device (as
            :meth:`LMNN.transform <convexmetric.LMNN.transform>`).
        """
        return like_input(self.kernel_rows(X) @ self.components_.T, X)

    @property
    def _point_map_is_linear(self):
        return self.kernel not in ("rbf",)

    def _point_map(self):
        return kernel_point_map(
            self.kernel, self._X, getattr(self, "gamma_", None), self.components_
        )

    def _queries(self, X):
        return self.kernel_rows(X)  # kernel rows: the hooks' queries

    def _embed(self, Q):
        return Q @ self.components_.T

    def _train_embedding(self):
        return self._K @ self.components_.T

    def _energy_inputs(self, Q):
        """Eq. (15) in the coordinates of the empirical kernel map ``K = E Eᵀ``: the
        training rows ``E``, a query's ``k(x) V Λ^{-1/2}`` and the components ``L E``."""
        w, V = np.linalg.eigh(0.5 * (self._K + self._K.T))
        keep = w > 1e-12 * max(float(w.max()), 1e-300)
        V, w = V[:, keep], w[keep]
        E = V * np.sqrt(w)
        train = dict(
            X_train=E,
            y_train=self._y,
            targets=self.targets_,
            components=self.components_ @ E,
            mu=float(self.mu),
        )
        return train, ((Q @ V) / np.sqrt(w), None)


def solve(K, y, targets, mu, *, exact=False, rtol=1e-10, **options):
    """Minimise eq. (14) over ``A ⪰ 0`` (n×n); ``result.matrix`` is ``A``.

    ``exact`` selects :func:`~convexmetric.lmnn.exact.solve_working_set` (exact
    SDPs on a working set) instead of :func:`convexmetric.lmnn.solver.solve`; ``options``
    are that function's. ``result.info`` gains ``"rank"`` (r), ``"features_M"`` (``M̂``)
    and ``"components"``: the factor ``L`` (``A = LᵀL``, ``r × n``, on kernel rows) that
    a model applies, formed from ``M̂``'s factor ``L̂`` as ``L̂TᵀH`` (module docstring;
    never by factoring ``A``, whose rounding grows with κ(K)). ``result.objective`` is
    eq. (14) at that map: the solver's value, or where the factor's rounding could move it
    by 1e-9 (:func:`.proof.applied`) the value on the kernel rows from the differences
    (the objective of what is applied, which the verifier recomputes).
    """
    Phi, T = kernels.empirical_features(centred(K), rtol)
    res = (solve_working_set if exact else _solve_linear)(Phi, y, targets, mu, **options)
    M = res.matrix
    TH = T.T - np.outer(T.T.mean(axis=1), np.ones(len(K)))  # TᵀH
    L = components_from_metric(0.5 * (M + M.T)) @ TH
    res.info.update(rank=Phi.shape[1], features_M=M, components=L)
    res.matrix = L.T @ L
    res.matrices = [res.matrix]
    # the objective of the applied map where its rounding can matter (a factor of large
    # norm, from a kernel's small eigenvalues): recomputed on the kernel rows
    res = applied(res, K, y, targets, mu, options.get("tol", LMNNSettings.tol), L)
    res.solver = ("kernel-" + res.solver) if res.solver else "kernel"
    if res.certificate is not None:  # the same dual point, over the rows of Φ
        res.certificate = {**res.certificate, "kind": "lmnn_kernel"}
    return res


def centred(K):
    """``HKH``: the kernel of the features less their mean (distances unchanged)."""
    K = 0.5 * (K + K.T)
    row = K.mean(axis=0)
    return K - row[None] - row[:, None] + row.mean()
