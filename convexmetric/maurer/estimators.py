"""Operator-valued large-margin similarity and hyperbolic PCA (Maurer, JMLR 2008).

A representation ``T`` defines the pair hypothesis ``f_T(x, x') = sgn(1 − ‖T(x − x')‖)``
(§1.2): similar iff ``‖T(x − x')‖ < 1``. Two ways to learn ``T`` from labelled
pairs (:class:`~convexmetric.pairs.Pairs`, or ``X, y`` through a pair oracle):

* :class:`OperatorSimilarity` minimises Ω_{ψ,λ}(A) of eq. (5) over ``A = T*T ⪰ 0``
  (SGD of Table 1, projected subgradient, or CVXPY), linear or kernelised;
* :class:`HyperbolicPCA` (§4.2) projects onto the top-``d`` eigenspace of the
  empirical operator ``Â = (1/m) Σ η_{r_i} Q_{x_i − x'_i}`` (eq. 9) and sets ``T = cP``.

After ``fit``, ``transform(X)`` gives ``T x`` in principal axes (coordinates sorted by
the singular values of ``T``, ``singular_values_``), so ``‖T(x − x')‖`` is a Euclidean
distance between transformed rows. With a kernel, ``T x = Cᵀ k_X(x)`` over the stored
points ``X`` (``coef_ = C``), and ``metric_`` holds ``C Cᵀ`` (``A = Σ_pq (CCᵀ)_pq
φ(x_p) φ(x_q)ᵀ``); without one, ``metric_`` is the ``D × D`` matrix ``A``.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as _kernels
from .._convergence import warn_unconverged
from .._input_checks import check_choice, check_scalar
from .._renamed import DEPRECATED, renamed
from .._verbose import check_verbose, log_summary, logging_to_stderr, progress_callback
from ..optim.deadline import Deadline
from ..problems import maurer as _problem
from ..result import SolveResult
from . import constants as const
from . import solver as _solvers
from .base import KERNELS, ORACLES, _PairOperator, logger  # noqa: F401
from .hpca import HyperbolicPCA  # noqa: F401


def _diverged(res):
    """The message of an SGD run that blew up (its best point is the start's)."""
    info = res.info
    return (
        f"OperatorSimilarity's SGD diverged: its objective overflowed by step "
        f"{info['diverged_at']} (learning_rate={info['learning_rate']!r}, a step of "
        f"{info['step_size']:.3g} on pairs of mean squared difference "
        f"{info['data_scale']:.4g}), so no operator was learned. Lower 'learning_rate' "
        f"(for example to {info['learning_rate'] / 10:g}), or use solver='subgradient'."
    )


class OperatorSimilarity(_PairOperator):
    """Learn ``T`` minimising Λ(T) = Ω(T*T) of eq. (5) (Maurer 2008, §3).

    Parameters
    ----------
    reg_weight : float, default 0.005
        The paper's λ > 0, the weight of the regulariser ``λ‖A‖/√m`` (the paper's value
        for the HS norm). Formerly ``lam``.
    margin, margin_neg : float, default 1.0 and None
        Margins γ₁ (similar pairs) and γ₋₁ (dissimilar; ``None`` = ``margin``).
        Formerly ``gamma`` and ``gamma_neg`` (``gamma`` is a kernel width elsewhere).
    regularizer : {"hs", "trace"}
        ``‖A‖₂`` (Hilbert–Schmidt) or ``tr A = ‖T‖₂²``.
    solver : {"sgd", "subgradient", "exact"}
        Table 1; projected subgradient on A + smoothed refinement; CVXPY (Clarabel).
    kernel : None, "linear", "maurer" or callable ``k(X, Y)``
        With a kernel, SGD keeps ``v_i`` as coefficients over the points; the other
        solvers run on the empirical kernel map (exact: the optimum lies in span φ(X)).
    n_components : int or None
        ``d`` vectors of the SGD (``min(m, 100)``).
    learning_rate, max_iter, block_size, reg_every : float, int, int, int
        SGD settings (θ = 0.01, 10⁵ steps, blocks of 50, regulariser gradient refreshed
        every 500 steps). θ is Table 1's step for inputs of diameter 1; on pairs whose
        mean ``‖x − x'‖²`` is ``s² > 1`` the step is ``θ/s²`` (see
        ``convexmetric.maurer.sgd``). A run that diverges raises a ValueError.
        ``max_iter`` also bounds ``solver="subgradient"``: its subgradient steps (at most
        3000) and refinement iterations together.
    tol : float or None, default None
        The certified relative gap ``(objective − lower bound)/|objective|`` that status
        "optimal" means; ``solver="subgradient"`` runs until it (or ``max_iter``,
        ``time_limit``). ``None``: 1e-6 for ``"subgradient"``, 1e-4 for ``"sgd"`` (which
        always takes ``max_iter`` steps and only certifies its end point).
    n_pairs, oracle : int, {"balanced", "labels"}
        Pairs drawn from ``X, y`` (2000, ``"balanced"``).
    random_state : int, Generator or None
        Seeds the pair oracle and the SGD (start and sampling).
    time_limit : float or None
        Seconds for the whole fit (SGD, or both stages of ``solver="subgradient"``).
    verbose : {0, 1}
        1: log the solver's progress and a summary (INFO, logger ``convexmetric.maurer``).
    lam : deprecated
        Renamed ``reg_weight`` (the regulariser's weight); the old name warns and is removed
        in 0.3.
    gamma : deprecated
        Renamed ``margin`` (the margin of similar pairs); the old name warns and is removed
        in 0.3.
    gamma_neg : deprecated
        Renamed ``margin_neg`` (the margin of dissimilar pairs); the old name warns and is
        removed in 0.3.

    Attributes
    ----------
    coef_, singular_values_, components_ (linear), metric_, objective_, train_risk_, result_
        The fitted operator and its fit (``n_iter_`` is ``result_.iterations``).
    pairs_ : ndarray of shape (n_pairs, 3), int
        After a fit from ``X, y``: the pairs the oracle drew, rows ``(i, j, r)`` of ``X``
        (``r = +1`` similar, ``−1`` dissimilar); the verifier reads them.

    Examples
    --------
    >>> from convexmetric.datasets import load
    >>> X, y = load("iris"); X = X / np.linalg.norm(X, axis=1).max()
    >>> m = OperatorSimilarity(reg_weight=0.01, max_iter=20000, random_state=0).fit(X, y)
    >>> m.metric_.shape, bool(m.objective_ < 1.0)
    ((4, 4), True)
    """

    def __init__(
        self,
        *,
        reg_weight=0.005,
        margin=1.0,
        margin_neg=None,
        regularizer="hs",
        solver="sgd",
        kernel=None,
        n_components=None,
        learning_rate=const.LEARNING_RATE,
        max_iter=const.SGD_MAX_ITER,
        block_size=const.BLOCK_SIZE,
        reg_every=const.REG_EVERY,
        tol=None,
        n_pairs=const.N_PAIRS,
        oracle="balanced",
        random_state=None,
        time_limit=None,
        verbose=0,
        lam=DEPRECATED,
        gamma=DEPRECATED,
        gamma_neg=DEPRECATED,
    ):
        self.time_limit, self.verbose, self.tol = time_limit, verbose, tol
        self.reg_weight, self.margin, self.margin_neg = reg_weight, margin, margin_neg
        self.lam, self.gamma, self.gamma_neg = lam, gamma, gamma_neg
        self.regularizer, self.solver, self.kernel = regularizer, solver, kernel
        self.n_components, self.learning_rate, self.max_iter = n_components, learning_rate, max_iter
        self.block_size, self.reg_every = block_size, reg_every
        self.n_pairs, self.oracle, self.random_state = n_pairs, oracle, random_state

    def _check_params(self):
        own = "OperatorSimilarity"
        lam, gamma = renamed(self, "lam", "reg_weight"), renamed(self, "gamma", "margin")
        gamma_neg = renamed(self, "gamma_neg", "margin_neg")
        positive = {"min_val": 0, "closed": "neither", "owner": own}
        if gamma_neg is not None:
            gamma_neg = check_scalar(gamma_neg, "margin_neg", float, **positive)
        p = {
            "lam": check_scalar(lam, "reg_weight", float, **positive),
            "gamma": check_scalar(gamma, "margin", float, **positive),
            "gamma_neg": gamma_neg,
        }
        p["regularizer"] = check_choice(self.regularizer, "regularizer", ("hs", "trace"), owner=own)
        check_choice(self.solver, "solver", ("sgd", "subgradient", "exact"), owner=own)
        if self.solver != "exact":
            check_scalar(self.max_iter, "max_iter", int, min_val=1, owner=own)
        if self.solver == "sgd":
            check_scalar(
                self.learning_rate, "learning_rate", float, min_val=0, closed="neither", owner=own
            )
            check_scalar(self.block_size, "block_size", int, min_val=1, owner=own)
            check_scalar(self.reg_every, "reg_every", int, min_val=1, owner=own)
            if self.n_components is not None:
                check_scalar(self.n_components, "n_components", int, min_val=1, owner=own)
        if self.time_limit is not None:
            check_scalar(
                self.time_limit, "time_limit", float, min_val=0, closed="neither", owner=own
            )
        check_verbose(self.verbose, own)
        if self.tol is not None:
            check_scalar(self.tol, "tol", float, min_val=0, closed="neither", owner=own)
        return p

    def _tol(self):
        """The certified gap "optimal" means: ``tol``, or the solver's default."""
        if self.tol is not None:
            return float(self.tol)
        return _solvers.TOL["sgd" if self.solver == "sgd" else "subgradient"]

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
        p = self._check_params()
        pairs = self._pairs(X, y, fitting=True)
        self._setup(pairs)
        with logging_to_stderr(logger, self.verbose):
            res, coef, K = self._solve(p, pairs)
            log_summary(logger, self.verbose, "OperatorSimilarity", res)
        if self.solver == "subgradient":
            warn_unconverged(self, res, tol=self._tol())
        if res.info.get("diverged_at") is not None:
            raise ValueError(_diverged(res))
        self._finish(coef, coef.T @ coef if K is None else coef.T @ K @ coef)
        self.result_, self.n_iter_ = res, res.iterations
        d2 = self.pair_distances(pairs)
        z = _problem.hinge_arguments(d2, pairs.r, p["gamma"], p["gamma_neg"])
        sv2 = self.singular_values_**2
        reg = float(np.sqrt(np.sum(sv2**2))) if p["regularizer"] == "hs" else float(sv2.sum())
        self.objective_ = float(np.maximum(z, 0).mean() + p["lam"] * reg / np.sqrt(len(pairs)))
        self.train_risk_ = float(np.mean(pairs.r * (1.0 - d2) <= 0))
        return self

    def _solve(self, p, pairs):
        """Run the chosen solver; return its SolveResult, ``coef`` and the kernel (or None)."""
        cb = progress_callback(logger, self.verbose, "OperatorSimilarity")
        K = None if self.kernel_fn_ is None else self.kernel_fn_(pairs.points, pairs.points)
        if self.solver == "sgd":
            backend = (
                _solvers.LinearBackend(pairs.differences)
                if K is None
                else _solvers.KernelBackend(K, pairs.i, pairs.j)
            )
            res = _solvers.sgd(
                backend,
                pairs.r,
                **p,
                n_components=self.n_components,
                learning_rate=self.learning_rate,
                max_iter=self.max_iter,
                block_size=self.block_size,
                reg_every=self.reg_every,
                tol=self._tol(),
                random_state=self.random_state,
                time_limit=self.time_limit,
                callback=cb,
            )
            coef = res.matrix.T if K is None else res.matrix  # V is d×D; β is n×d
        else:
            fmap = (
                None
                if K is None
                else _kernels.EmpiricalKernelMap(self.kernel_fn_).fit(pairs.points, K)
            )
            F = pairs.points if fmap is None else K @ fmap.basis_
            U = F[pairs.i] - F[pairs.j]
            if self.solver == "exact":
                A, val, status, sec = _problem.solve(U, pairs.r, **p)
                res = SolveResult(
                    matrix=A, objective=val, status=status, seconds=sec, solver="CLARABEL"
                )
            else:
                budget = _WholeFit(self.max_iter, self.time_limit, cb, self._tol())
                res = _solvers.solve_projected(
                    U, pairs.r, **p, **budget.settings(), tol=self._tol()
                )
            w, E = np.linalg.eigh(res.matrix)
            V = E * np.sqrt(np.maximum(w, 0.0))  # A = V Vᵀ in the feature coordinates
            coef = V if fmap is None else fmap.basis_ @ V
        return res, coef, K


class _WholeFit:
    """The settings of ``solver="subgradient"``: the solver's defaults, with ``max_iter``
    and ``time_limit`` bounding both stages together and ``callback`` (logging) added.

    Neither ``verbose`` nor ``time_limit`` changes a step: the stages' settings are the
    same whatever they are. The refinement gets what the subgradient stage left: the
    stage's callback hands the remaining iterations and seconds over to the refinement's
    settings, which :func:`~convexmetric.maurer.solver.solve_projected` reads when the
    refinement starts.
    """

    def __init__(self, max_iter, time_limit, callback, tol):
        self.max_iter, self.callback = int(max_iter), callback
        self.clock = Deadline(time_limit)
        # the solver's own stages (defaults in one place), within max_iter and time_limit
        first = min(_solvers.first_stage().max_iter, self.max_iter)
        self.first = _solvers.first_stage(
            max_iter=first, time_limit=time_limit, callback=self._step
        )
        self.refine = _solvers.refinement(
            tol=tol,
            time_limit=time_limit,
            callback=callback,
            max_iter=self.max_iter - first,
        )

    def settings(self):
        """Keyword arguments of ``solve_projected``."""
        return {"settings": self.first, "refine": self.refine}

    def _step(self, iteration, objective, step):
        self.refine.max_iter = max(self.max_iter - iteration, 0)
        self.refine.time_limit = self.clock.remaining()
        return self.callback is not None and self.callback(iteration, objective, step)
