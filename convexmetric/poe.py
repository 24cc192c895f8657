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
"""

from __future__ import annotations

import numpy as np

from ._validation import check_choice, check_matrix, check_scalar
from .comparisons import check_comparisons
from .kernels import check_kernel, linear_kernel, rbf_kernel
from .metrics import gauc
from .problems import poe as formulations
from .problems.common import SOLVER_OPTIONS
from .result import SolveResult
from .solvers import poe as large_scale


def components_from_W(W):
    """``N = Λ^{1/2}Vᵀ`` (positive eigenvalues only) with ``W = NᵀN``; W may be a diagonal
    vector."""
    if np.ndim(W) == 1:
        keep = np.flatnonzero(W > 0)
        N = np.zeros((len(keep), len(W)))
        N[np.arange(len(keep)), keep] = np.sqrt(W[keep])
        return N
    lam, V = np.linalg.eigh(0.5 * (W + W.T))
    lam, V = lam[::-1], V[:, ::-1]
    keep = lam > 1e-10 * max(lam[0], 1e-300)
    return (V[:, keep] * np.sqrt(lam[keep])).T


def _fit_blocks(blocks, kernels, C, beta, diagonal, solver):
    """Solve over ``blocks`` (exact) or through the large-scale solver; a SolveResult."""
    if solver == "subgradient":
        if kernels is None:
            return large_scale.solve(blocks, C, beta, diagonal=diagonal)
        return large_scale.solve_kernels(kernels, C, beta, diagonal=diagonal)
    solver = "CLARABEL" if solver == "exact" else solver
    Ws, value, status, seconds = formulations.solve(
        blocks, C, beta, diagonal=diagonal, solver=solver
    )
    return SolveResult(
        matrix=Ws[0], matrices=Ws, objective=value, status=status, seconds=seconds, solver=solver
    )


class _POEBase:
    def _check_common(self):
        check_scalar(self.beta, "beta", float, min_val=0.0, closed="neither", owner=self._name)
        check_choice(
            self.solver, "solver", ["subgradient", "exact", *SOLVER_OPTIONS], owner=self._name
        )
        check_choice(self.diagonal, "diagonal", [False, True], owner=self._name)

    def _finish(self, result, blocks, C):
        self.result_ = result
        self.W_ = [np.asarray(W) for W in result.matrices]
        self.objective_ = formulations.objective(self.W_, blocks, C, self.beta)
        self.components_ = [components_from_W(W) for W in self.W_]
        return self

    def _check_fitted(self):
        if not hasattr(self, "W_"):
            raise RuntimeError(f"This {self._name} instance is not fitted yet; call fit first.")

    def score(self, comparisons, X):
        """GAUC (eq. 18) of the comparisons among the items ``X`` embedded by ``transform``."""
        return gauc(self.transform(X), comparisons)


class POE(_POEBase):
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
        :mod:`convexmetric.solvers.poe_diagonal`), or an exact conic solve ("exact" is
        CLARABEL).

    Attributes
    ----------
    W_ : ndarray  (``diagonal``: the vector of the diagonal)
    components_ : ndarray, ``N`` with ``W = NᵀN``; ``transform`` applies ``x ↦ N x``
        (or ``N K_x``)
    objective_ : float, the objective at ``W_``
    result_ : SolveResult
    """

    _name = "POE"

    def __init__(self, beta=1.0, *, kernel=None, gamma=None, diagonal=False, solver="subgradient"):
        self.beta = beta
        self.kernel = kernel
        self.gamma = gamma
        self.diagonal = diagonal
        self.solver = solver

    def _kernel(self, X, Y=None):
        if self.kernel == "linear":
            return linear_kernel(X, Y)
        return rbf_kernel(X, Y, gamma=self.gamma_)

    def fit(self, comparisons, X):
        """Learn ``W`` from ``comparisons`` over the rows of ``X``; return self."""
        self._check_common()
        check_choice(self.kernel, "kernel", [None, "linear", "rbf", "precomputed"], owner="POE")
        if self.gamma is not None:
            check_scalar(self.gamma, "gamma", float, min_val=0.0, closed="neither", owner="POE")
        if self.kernel == "precomputed":
            K = check_kernel(X, name="X")
        else:
            X = check_matrix(X, "X")
        C = check_comparisons(comparisons, X.shape[0], owner="POE")
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
        res = _fit_blocks(blocks, kernels, C, self.beta, self.diagonal, self.solver)
        self._finish(res, blocks, C)
        self.W_ = self.W_[0]
        self.components_ = self.components_[0]
        return self

    def transform(self, X):
        """Embed ``X``: features (LPOE), raw data (linear/rbf), or kernel values
        ``K(X, X_train)`` of shape ``(n_new, n_train)`` for ``kernel="precomputed"``."""
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

    Attributes
    ----------
    W_ : list of ndarray
    components_ : list of ndarray
    kernel_weights_ : ndarray, ``tr(WᵖKᵖ)`` normalised to sum 1 (the share of the
        regulariser, i.e. of the embedding's energy, carried by each kernel)
    objective_, result_
    """

    _name = "MKPOE"

    def __init__(self, beta=1.0, *, diagonal=False, solver="subgradient"):
        self.beta = beta
        self.diagonal = diagonal
        self.solver = solver

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

    def fit(self, comparisons, kernels):
        """Learn ``W¹ … Wᵐ`` from ``comparisons`` over the items of ``kernels``; return self."""
        self._check_common()
        kernels = self._check_kernels(kernels)
        C = check_comparisons(comparisons, kernels[0].shape[0], owner="MKPOE")
        blocks = formulations.kernel_blocks(kernels)
        res = _fit_blocks(blocks, kernels, C, self.beta, self.diagonal, self.solver)
        self._finish(res, blocks, C)
        self.n_train_ = kernels[0].shape[0]
        tr = np.array([formulations.regulariser([W], [(K, K)]) for W, K in zip(self.W_, kernels)])
        self.kernel_weights_ = tr / tr.sum() if tr.sum() > 0 else np.full(len(tr), 1 / len(tr))
        return self

    def transform(self, kernels):
        """Embed items given their kernel values against the training items, one
        ``(n_new, n_train)`` array per kernel; the blocks are concatenated."""
        self._check_fitted()
        kernels = self._check_kernels(kernels, self.n_train_, square=False)
        if len(kernels) != len(self.W_):
            raise ValueError(f"'kernels' must hold {len(self.W_)} kernels; got {len(kernels)}.")
        return np.hstack([K @ N.T for K, N in zip(kernels, self.components_)])
