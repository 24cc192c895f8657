"""Partial order embedding estimators: ``POE`` (LPOE / KPOE) and ``MKPOE``.

McFee & Lanckriet (JMLR 2011), Algorithms 2–4 and their diagonal variants (§4.4).
``fit(comparisons, X)`` learns ``W ⪰ 0`` (or a nonnegative diagonal); the embedding
is recovered from ``W = VΛVᵀ`` as ``g(x) = Λ^{1/2}Vᵀx`` (LPOE) or
``g(x) = Λ^{1/2}VᵀK_x`` (KPOE, ``K_x`` the kernel values of ``x`` against the
training items), concatenated over kernels for MKPOE.

>>> import numpy as np
>>> from convexmetric.comparisons import Comparisons
>>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
>>> C = Comparisons.triadic([0, 1], [1, 0], [2, 2])   # 0 is closer to 1 than to 2, ...
>>> m = POE(beta=10.0, solver="exact").fit(C, X)
>>> m.score(C, X)
1.0

Model selection: scikit-learn splits the *comparisons* (the samples of POE) and needs
the items alongside; bundle them with :class:`ItemComparisons` and score by GAUC:

>>> from sklearn.model_selection import GridSearchCV, KFold
>>> rng = np.random.default_rng(0); X = rng.normal(size=(12, 2))
>>> D = ((X[:, None] - X[None]) ** 2).sum(-1)
>>> T = np.array([(i, j, i, k) for i in range(12) for j in range(12) for k in range(12)
...               if len({i, j, k}) == 3 and D[i, j] < D[i, k]])
>>> search = GridSearchCV(POE(), {"beta": [1.0, 10.0]}, cv=KFold(3, shuffle=True, random_state=0))
>>> search.fit(ItemComparisons(T[::7], X)).best_params_["beta"] in (1.0, 10.0)
True
"""

from __future__ import annotations

import numpy as np

from .._feature_names import check_feature_names, record_feature_names
from .._input_checks import check_choice, check_matrix, check_scalar
from .._mahalanobis import MahalanobisMixin, kernel_point_map
from ..kernels import check_kernel, linear_kernel, rbf_kernel
from ..problems import poe as formulations
from .base import _fit_blocks, _POEBase, logger  # noqa: F401
from .items import ItemComparisons, components_from_W, unbundle
from .mkpoe import MKPOE

__all__ = ["MKPOE", "POE", "ItemComparisons", "components_from_W"]


class POE(MahalanobisMixin, _POEBase):
    """Partial order embedding with one feature space: LPOE (Alg. 2) or KPOE (Alg. 3).

    Parameters
    ----------
    beta : float
        Loss weight β > 0 (objective ``tr(WR) + β/|C| Σ ξ``).
    kernel : {None, "linear", "rbf", "precomputed"}
        ``None``: LPOE on the features ``X`` (``W`` is ``D × D``). Otherwise KPOE on
        the kernel of ``X`` (or on ``X`` itself for ``"precomputed"``); ``W`` is ``n × n``.
        ``K = I`` (precomputed) is GNMDS (§3.3).
    gamma : float, optional
        Width of the ``"rbf"`` kernel (default ``1/(D·var X)``).
    diagonal : bool
        The diagonal LP of §4.4.
    solver : {"subgradient", "exact"}
        The large-scale solver (App. B's projected subgradient + smoothing; for the
        diagonal LPs the certified smoothed L-BFGS-B of
        :mod:`convexmetric.poe.diagonal`), or an exact conic solve by
        ``conic_solver``. (``"CLARABEL"``/``"SCS"`` still mean ``"exact"`` with that
        conic solver, with a FutureWarning, until 0.3.)
    conic_solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The conic solver of ``solver="exact"``.
    max_iter : int or None
        Cap on the large-scale solver's L-BFGS iterations over the whole run (every
        smoothing stage together); the status is then "optimal_inaccurate" unless the
        certificate closed first. Ignored by the exact solvers.
    tol : float or None
        Certified relative gap that ends the large-scale solver (default 1e-4).
    time_limit : float or None
        Seconds for the whole fit (the graph filter and the large-scale solver; status
        "user_limit").
    filter_graph : bool, default=False
        Filter the comparisons first (§2.2: duplicates, length-2 cycles, a maximal
        acyclic subgraph by Alg. 1, transitive reduction); ``filter_report_`` records it.
    random_state : int, Generator or None
        Seeds Alg. 1's random edge order (``filter_graph=True``); the solvers themselves
        make no random choice.
    verbose : {0, 1}, default=0
        1: log the solver's progress and a summary (INFO, logger ``convexmetric.poe``).

    Attributes
    ----------
    W_ : ndarray  (``diagonal``: the vector of the diagonal)
    components_ : ndarray, ``N`` with ``W = NᵀN``; ``transform`` applies ``x ↦ N x``
        (or ``N K_x``)
    embedding_ : ndarray, the training items embedded
    objective_ : float, the objective at ``W_``
    result_ : SolveResult
    n_iter_ : int, ``result_.iterations``

    Notes
    -----
    With ``kernel=None`` or ``"linear"`` POE learns a Mahalanobis metric on the inputs:
    metric-learn's ``get_mahalanobis_matrix``, ``get_metric``, ``pair_distance`` and
    ``pair_score`` apply (``M = W`` for LPOE, ``M = X_fitᵀ W X_fit`` for the linear
    kernel); the last three work through ``transform`` for every kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from convexmetric import POE
    >>> from convexmetric.comparisons import Comparisons
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [1.0, 3.0]])
    >>> C = Comparisons(i=[0, 2, 0], j=[1, 3, 1], k=[0, 1, 1], l=[2, 3, 2])  # d(i,j) < d(k,l)
    >>> m = POE(beta=10.0).fit(C, X)
    >>> m.result_.status, m.transform(X).shape  # one axis: the rows y = 0 and y = 3
    ('optimal', (4, 1))
    >>> round(m.score(C, X), 3)  # GAUC: the share of the comparisons the embedding keeps
    1.0
    """

    _name = "POE"

    def __init__(
        self,
        *,
        beta=1.0,
        kernel=None,
        gamma=None,
        diagonal=False,
        solver="subgradient",
        conic_solver="CLARABEL",
        max_iter=None,
        tol=None,
        time_limit=None,
        filter_graph=False,
        random_state=None,
        verbose=0,
    ):
        self.beta = beta
        self.kernel = kernel
        self.gamma = gamma
        self.diagonal = diagonal
        self.solver = solver
        self.conic_solver = conic_solver
        self.max_iter = max_iter
        self.tol = tol
        self.time_limit = time_limit
        self.filter_graph = filter_graph
        self.random_state = random_state
        self.verbose = verbose

    def _kernel(self, X, Y=None):
        if self.kernel == "linear":
            return linear_kernel(X, Y)
        return rbf_kernel(X, Y, gamma=self.gamma_)

    def fit(self, comparisons, X=None):
        """Learn ``W`` from ``comparisons`` over the rows of ``X``.

        Parameters
        ----------
        comparisons : Comparisons or ItemComparisons
            The comparisons ``(i, j, k, l)``: ``d(i, j) + 1 ≤ d(k, l)`` is wanted. An
            :class:`ItemComparisons` carries ``X`` too.
        X : array of shape (n, D), or (n, n) for ``kernel="precomputed"``
            The items.

        Returns
        -------
        self
            The fitted estimator.
        """
        comparisons, X = unbundle(comparisons, X, "POE", "X")
        record_feature_names(self, X)
        self._check_common()
        check_choice(self.kernel, "kernel", [None, "linear", "rbf", "precomputed"], owner="POE")
        if self.gamma is not None:
            check_scalar(self.gamma, "gamma", float, min_val=0.0, closed="neither", owner="POE")
        if self.kernel == "precomputed":
            K = check_kernel(X, name="X")
        else:
            X = check_matrix(X, "X")
        C = self._comparisons(comparisons, X.shape[0])
        if self.kernel is None:
            blocks, kernels = formulations.lpoe_blocks(X), None
        else:
            if self.kernel != "precomputed":
                self.X_fit_ = X
                var = float(X.var())
                default = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
                self.gamma_ = self.gamma if self.gamma is not None else default
                K = self._kernel(X)
            kernels = [K]
            blocks = formulations.kernel_blocks(kernels)
        self.n_features_in_ = X.shape[1]
        res = self._solve(blocks, kernels, C)
        self._finish(res, blocks, C)
        self.W_ = self.W_[0]
        self.components_ = self.components_[0]
        self.embedding_ = (X if kernels is None else K) @ self.components_.T
        return self

    def _mahalanobis_matrix(self):
        W = np.diag(self.W_) if np.ndim(self.W_) == 1 else self.W_
        if self.kernel is None:
            return W
        if self.kernel == "linear":
            return self.X_fit_.T @ W @ self.X_fit_
        raise ValueError(
            f"POE with kernel={self.kernel!r} embeds through the kernel and has no "
            "Mahalanobis matrix on the inputs (kernel=None or 'linear' have one); "
            "pair_distance and get_metric work for every kernel."
        )

    @property
    def _point_map_is_linear(self):
        return self.kernel not in ("rbf",)

    def _point_map(self):
        self._check_fitted()
        kind = self.kernel if self.kernel in ("linear", "rbf") else None
        return kernel_point_map(
            kind, getattr(self, "X_fit_", None), getattr(self, "gamma_", None), self.components_
        )

    def transform(self, X):
        """Embed ``X``: features (LPOE), raw data (linear/rbf), or kernel values.

        Parameters
        ----------
        X : array of shape (n_new, D)
            New items; for ``kernel="precomputed"``, ``K(X, X_train)`` of shape
            ``(n_new, n_train)``.

        Returns
        -------
        ndarray
            Their embedding, one row per item.
        """
        self._check_fitted()
        check_feature_names(self, X)
        X = check_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"'X' has {X.shape[1]} columns but POE was fitted with {self.n_features_in_}."
            )
        if self.kernel in ("linear", "rbf"):
            X = self._kernel(X, self.X_fit_)
        return X @ self.components_.T
