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

import logging

import numpy as np
from sklearn.base import BaseEstimator

from .._mahalanobis import MahalanobisMixin
from .._validation import check_choice, check_matrix, check_scalar
from .._verbose import check_verbose, log_summary, logging_to_stderr, progress_callback
from ..comparisons import check_comparisons
from ..kernels import check_kernel, linear_kernel, rbf_kernel
from ..metrics import gauc
from ..problems import poe as formulations
from ..problems.common import SOLVER_OPTIONS
from ..result import SolveResult
from . import solver as large_scale
from .graph import filter_comparisons
from .items import ItemComparisons, components_from_W, unbundle

__all__ = ["MKPOE", "POE", "ItemComparisons", "components_from_W"]

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
            res = _fit_blocks(blocks, kernels, C, self.beta, self.diagonal, self.solver,
                              self._solver_options())  # fmt: skip
            log_summary(logger, self.verbose, self._name, res)
        return res

    def _solver_options(self):
        """Keyword arguments of the large-scale solver: its default method with the
        estimator's caps (``verbose`` only adds the callback, so it never changes the
        result). The caps never change the method."""
        opts = {"callback": progress_callback(logger, self.verbose, self._name)}
        caps = {"tol": self.tol, "max_iter": self.max_iter, "time_limit": self.time_limit}
        caps = {k: v for k, v in caps.items() if v is not None}
        if caps:
            opts["settings"] = caps
        return opts

    def _finish(self, result, blocks, C):
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
        Z = self.embedding_ if X is None else self.transform(X)
        return gauc(Z, comparisons)


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
    solver : {"subgradient", "exact", "CLARABEL", "SCS"}
        The large-scale solver (App. B's projected subgradient + smoothing; for the
        diagonal LPs the certified smoothed L-BFGS-B of
        :mod:`convexmetric.poe.diagonal`), or an exact conic solve ("exact" is
        CLARABEL).
    max_iter : int or None
        Cap on the large-scale solver's L-BFGS iterations over the whole run (every
        smoothing stage together); the status is then "optimal_inaccurate" unless the
        certificate closed first. Ignored by the exact solvers.
    tol : float or None
        Certified relative gap that ends the large-scale solver (default 1e-4).
    time_limit : float or None
        Seconds for the large-scale solver (status "user_limit").
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

    With ``kernel=None`` or ``"linear"`` POE learns a Mahalanobis metric on the inputs:
    metric-learn's ``get_mahalanobis_matrix``, ``get_metric``, ``pair_distance`` and
    ``pair_score`` apply (``M = W`` for LPOE, ``M = X_fitᵀ W X_fit`` for the linear
    kernel); the last three work through ``transform`` for every kernel.
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
        X = check_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"'X' has {X.shape[1]} columns but POE was fitted with {self.n_features_in_}."
            )
        if self.kernel in ("linear", "rbf"):
            X = self._kernel(X, self.X_fit_)
        return X @ self.components_.T


class MKPOE(_POEBase):
    """Multiple kernel partial order embedding (Alg. 4), full or diagonal (§4.4).

    ``fit(comparisons, kernels)`` with a list of ``n × n`` PSD kernels; one
    ``Wᵖ`` per kernel; the embedding concatenates ``Nᵖ K_xᵖ`` over kernels.

    Parameters
    ----------
    beta, diagonal, solver, max_iter, tol, time_limit : float, bool, str, int, float, float
        As in :class:`POE`.
    filter_graph, random_state, verbose : bool, int or None, {0, 1}
        As in :class:`POE`.

    Attributes
    ----------
    W_ : list of ndarray
    components_ : list of ndarray
    kernel_weights_ : ndarray, ``tr(WᵖKᵖ)`` normalised to sum 1 (the share of the
        regulariser, i.e. of the embedding's energy, carried by each kernel)
    embedding_ : ndarray, the training items embedded
    objective_, result_, n_iter_
    """

    _name = "MKPOE"

    def __init__(
        self,
        *,
        beta=1.0,
        diagonal=False,
        solver="subgradient",
        max_iter=None,
        tol=None,
        time_limit=None,
        filter_graph=False,
        random_state=None,
        verbose=0,
    ):
        self.beta = beta
        self.diagonal = diagonal
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.time_limit = time_limit
        self.filter_graph = filter_graph
        self.random_state = random_state
        self.verbose = verbose

    def _check_kernels(self, kernels, n=None, square=True):
        if isinstance(kernels, np.ndarray) and kernels.ndim == 2:
            kernels = [kernels]
        kernels = list(kernels)
        if not kernels:
            raise ValueError("'kernels' is empty; MKPOE needs at least one kernel matrix.")
        out = []
        for p, K in enumerate(kernels):
            if square:
                K = check_kernel(K, n, name=f"kernels[{p}]")
                n = K.shape[0]
            else:
                K = check_matrix(K, f"kernels[{p}]")
                rows = out[0].shape[0] if out else K.shape[0]
                if K.shape != (rows, n):
                    raise ValueError(
                        f"'kernels[{p}]' must have shape (n_new, {n}) matching the others; "
                        f"got {K.shape}."
                    )
            out.append(K)
        return out

    def fit(self, comparisons, kernels=None):
        """Learn ``W¹ … Wᵐ`` from ``comparisons`` over the items of ``kernels``.

        Parameters
        ----------
        comparisons : Comparisons or ItemComparisons
            The comparisons; an :class:`ItemComparisons` carries the kernels too.
        kernels : list of arrays of shape (n, n)
            One PSD kernel per feature space.

        Returns
        -------
        self
            The fitted estimator.
        """
        comparisons, kernels = unbundle(comparisons, kernels, "MKPOE", "kernels")
        self._check_common()
        kernels = self._check_kernels(kernels)
        C = self._comparisons(comparisons, kernels[0].shape[0])
        blocks = formulations.kernel_blocks(kernels)
        res = self._solve(blocks, kernels, C)
        self._finish(res, blocks, C)
        self.embedding_ = np.hstack([K @ N.T for K, N in zip(kernels, self.components_)])
        self.n_train_ = kernels[0].shape[0]
        tr = np.array([formulations.regulariser([W], [(K, K)]) for W, K in zip(self.W_, kernels)])
        self.kernel_weights_ = tr / tr.sum() if tr.sum() > 0 else np.full(len(tr), 1 / len(tr))
        return self

    def transform(self, kernels):
        """Embed items given their kernel values against the training items.

        Parameters
        ----------
        kernels : list of arrays of shape (n_new, n_train)
            One array of kernel values per kernel.

        Returns
        -------
        ndarray
            The embedding: the blocks ``Nᵖ K_xᵖ`` concatenated.
        """
        self._check_fitted()
        kernels = self._check_kernels(kernels, self.n_train_, square=False)
        if len(kernels) != len(self.W_):
            raise ValueError(f"'kernels' must hold {len(self.W_)} kernels; got {len(kernels)}.")
        return np.hstack([K @ N.T for K, N in zip(kernels, self.components_)])
