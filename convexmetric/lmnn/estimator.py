"""The LMNN estimator (Weinberger & Saul, JMLR 2009), scikit-learn style.

>>> from convexmetric import LMNN, datasets
>>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
>>> m = LMNN(k=3, mu=0.5).fit(Xtr, ytr)
>>> m.metric_.shape, m.result_.status
((4, 4), 'optimal')
"""

from __future__ import annotations

import logging
from functools import partial

from sklearn.base import TransformerMixin

from .._convergence import warn_unconverged
from .._input_checks import (
    check_bool,
    check_choice,
    check_memory_limit,
    check_n_jobs,
    check_scalar,
)
from .._mahalanobis import MahalanobisMixin
from .._renamed import DEPRECATED
from .._verbose import log_summary, logging_to_stderr, progress_callback
from ..linalg import components_from_metric
from ..neighbors import check_targets, target_neighbors
from ..optim.deadline import Deadline
from .base import LMNNBaseEstimator
from .blocks.device import DeviceExecutor, check_device
from .blocks.executor import check_backend, executor_for
from .blocks.local import check_lanes, default_lanes
from .blocks.xp import like_input
from .constants import DEFAULT_MEMORY_LIMIT
from .exact import solve_working_set
from .passes import run_passes
from .proof import applied
from .reduction import leading_components, pca_axes, solve_rectangular
from .solver import solve as solve_large_scale
from .terms import objective

logger = logging.getLogger("convexmetric.lmnn")


class LMNN(MahalanobisMixin, TransformerMixin, LMNNBaseEstimator):
    """Large margin nearest neighbour metric learning.

    Learns a Mahalanobis metric ``M ⪰ 0`` minimising eq. (14): ``(1 − μ)`` times the
    squared distances to each point's ``k`` target neighbours plus ``μ`` times the hinge
    losses of impostors invading their perimeters (unit margin).

    Parameters
    ----------
    k : int, default=3
        Target neighbours per point (the k nearest same-class points, Euclidean);
        metric-learn's ``n_neighbors``. The points of a class with ``m ≤ k`` members get
        ``m − 1`` target neighbours (a :class:`~convexmetric.lmnn.base.SmallClassWarning`);
        the other points keep ``k``. A point alone in its class has none (no pull term, no
        hinge of its own) and is still an impostor for the other classes.
    mu : float in [0, 1], default=0.5
        Weight of the push (hinge) term.
    solver : {"subgradient", "exact"}, default="subgradient"
        ``"subgradient"``: the large-scale active-set solver (App. A) with the smoothed
        refinement; ``"exact"``: working-set SDPs solved by ``conic_solver``.
    max_iter : int, default=3000
        Iterations at most over the whole large-scale solve (App. A's subgradient phase,
        the refinement and the gap closing together); ``n_iter_`` never exceeds it.
    refine : bool, default=True
        Run the refinement stage after the subgradient phase (``solver="subgradient"``).
    time_limit : float or None
        Seconds for the whole fit (the target neighbours and every pass); the best
        iterate so far is returned with status ``"user_limit"``, its exact objective and
        a certified bound. Long steps (full checks, streaming passes, the certificate's
        ascent) check it between their blocks, and the fit stops one search early (the
        time its closing work, the returned point's exact objective, takes), so it ends
        within about one search of the limit.
    conic_solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The conic solver of the exact path.
    predict_k : int or None
        The k of the kNN vote of :meth:`predict` and :meth:`loo_error` (default: ``k``).
        Formerly ``n_neighbors``, which still works until 0.3 with a FutureWarning (it
        never set the target neighbours: that is ``k``).
    n_passes : int, default=1
        Multi-pass LMNN (§5.1): after each pass the target neighbours are re-selected
        under the learned metric and the next pass starts from it. ``max_iter`` and
        ``time_limit`` bound all passes together (:mod:`convexmetric.lmnn.passes`).
    n_components : int or None
        Output dimensionality ``r`` (§5.4); ``None`` keeps all ``d``.
    reduction : {"S", "R"}, default="S"
        With ``n_components``: LMNN-S (leading eigen-directions of the learned metric)
        or LMNN-R (rectangular ``L`` optimised directly from the LMNN-S start;
        non-convex).
    pca : int or None
        Project the inputs onto this many leading principal axes before training
        (the learned transform is composed with the projection).
    search : {"brute", "balltree", "kdtree", "auto"}, default="brute"
        Impostor search of the large-scale solver (§6); all give the same result,
        ``"auto"`` picks the faster by measuring.
    tol : float, default=1e-4
        Certified relative gap ``(objective − lower bound)/|objective|`` below which the
        large-scale solver reports "optimal" (``solver="subgradient"``).
    random_state : int, Generator or None
        Accepted for a uniform interface. LMNN's fit makes no random choice (target
        neighbours, impostor search and both solvers are deterministic), so it does not
        change the result.
    verbose : {0, 1}, default=0
        1: log the solver's progress and a summary (INFO, logger ``convexmetric.lmnn``).
    memory_limit : int or None, default=2**31
        Bytes of working memory for the large-scale solver, beyond the data's share
        (about 200 bytes per listed triplet, 2 GiB about 11 million triplets). When the
        active list or a full check would exceed it, the solver streams over row blocks
        instead (exact objective and gradient, never a triplet list);
        ``result_.info["mode"]`` says which mode ran. The fit allocates at most
        ``result_.info["memory_bound"]``: the limit plus the data's share, copies of
        ``X`` and its projections and the solver's d × d state
        (``convexmetric.lmnn.blocks.data.data_share``). A limit below the smallest plan
        (a block of 8 rows against all n, per ``n_jobs`` lane) is refused. ``None``: no
        bound. The default is fixed rather than read from the machine's free memory: the
        mode and block sizes, and with them the iterates, then do not depend on the
        machine or its load (a certified result is within ``tol`` in either mode).
    backend : {"local", "dask"}, default="local"
        Where the large-scale solver's block work runs. ``"dask"``: on the workers of
        the running ``dask.distributed`` Client (``pip install 'convexmetric[dask]'``;
        :mod:`convexmetric.lmnn.blocks.dask_executor`): the full checks, exact
        objectives and the streaming mode's sums, and :meth:`predict`/:meth:`energy_predict`
        by test-row blocks. The same algorithm as ``"local"`` (same iterates up to summation order).
    backend_timeout : float, default=3600
        With ``backend="dask"``: seconds one block evaluation on the cluster may take,
        its recoveries from lost workers included, before a
        ``DaskBackendError``. Lost workers are
        recovered or reported within about a minute, and a closed Client or a lost
        scheduler at once, whatever this says (``convexmetric.lmnn.blocks.dask_faults``).
    device : str or None, default=None
        Where the block work runs in this process: None (or ``"cpu"``) NumPy;
        ``"cuda"`` or ``"cuda:N"`` a GPU through PyTorch or CuPy (``pip install
        'convexmetric[gpu]'``); ``"torch:DEVICE"``, ``"cupy[:N]"`` a library named.
        The full checks, exact objectives and streaming sums run on the device's arrays,
        the solver and the certificate in NumPy float64; the triplets are the CPU's.
    n_jobs : int or None, default=None
        Threads of the work in this process (no device): the full checks, exact
        objectives and streaming sums (``backend="local"``; on Dask the workers run them),
        the list's distances and gradients, the target search and :meth:`predict`; -1:
        every core. None: the fit in ``lmnn.blocks.local.default_lanes`` threads (one below
        30,000 points; above, the cores whose share of ``memory_limit`` keeps one
        thread's block size: two at 240,000 × 164), :meth:`predict` in one. The results
        do not depend on it (the streaming sums round as an explicit ``n_jobs``'s
        smaller blocks add).
    n_neighbors : deprecated
        Renamed ``predict_k`` (the k of :meth:`predict`; the target neighbours are ``k``);
        the old name warns and is removed in 0.3.

    Attributes
    ----------
    metric_ : ndarray (d, d)
    components_ : ndarray (d, d), with ``metric_ = components_.T @ components_``
    objective_ : float, eq. (14) at ``metric_``
    result_ : SolveResult
    n_iter_ : int, iterations of the solver (``result_.iterations``)
    targets_ : ndarray (n, ``k_``), target neighbours used, nearest first; a point with
        fewer (its class has ``k`` members or fewer) fills its last slots with itself
        (padding, no target: :func:`convexmetric.neighbors.target_neighbors`)
    passes_ : list of dict, the passes before the last (``n_passes > 1``, §5.1), oldest
        first: ``components`` (whose nearest neighbours are the next pass's targets),
        ``targets``, ``certificate``, ``objective``, ``status`` (what
        :func:`convexmetric.verify` checks in turn); empty for one pass
    k_ : int, target slots per row (``k``, or the columns of the given ``targets``)
    predict_k_ : int, the k of :meth:`predict`
    classes_ : ndarray
    X_fit_, y_fit_ : ndarray, the training points and their class indices into
        ``classes_`` (what :meth:`predict` and saved models read)

    Examples
    --------
    >>> from convexmetric import LMNN, datasets
    >>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
    >>> m = LMNN(k=3).fit(Xtr, ytr)
    >>> m.result_.status  # the certified gap is within tol
    'optimal'
    >>> m.transform(Xte).shape  # x -> Lx: Euclidean distances there are the metric's
    (45, 4)
    >>> round(m.score(Xte, yte), 3)  # 3-NN accuracy under the learned metric
    0.978
    """

    def __init__(
        self,
        *,
        k=3,
        mu=0.5,
        solver="subgradient",
        max_iter=3000,
        refine=True,
        time_limit=None,
        conic_solver="CLARABEL",
        predict_k=None,
        n_passes=1,
        n_components=None,
        reduction="S",
        pca=None,
        search="brute",
        tol=1e-4,
        random_state=None,
        verbose=0,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        backend="local",
        backend_timeout=3600.0,
        device=None,
        n_jobs=None,
        n_neighbors=DEPRECATED,
    ):
        self.k = k
        self.mu = mu
        self.solver = solver
        self.max_iter = max_iter
        self.refine = refine
        self.time_limit = time_limit
        self.conic_solver = conic_solver
        self.predict_k = predict_k
        self.n_neighbors = n_neighbors
        self.n_passes = n_passes
        self.n_components = n_components
        self.reduction = reduction
        self.pca = pca
        self.search = search
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

        self.memory_limit = memory_limit
        self.backend = backend
        self.backend_timeout = backend_timeout
        self.device = device
        self.n_jobs = n_jobs

    def _validate_params(self):
        name = type(self).__name__
        self._check_shared_params()
        check_bool(self.refine, "refine", owner=name)
        check_scalar(self.n_passes, "n_passes", int, min_val=1, owner=name)
        check_choice(self.reduction, "reduction", ("S", "R"), owner=name)
        check_choice(self.search, "search", ("brute", "balltree", "kdtree", "auto"), owner=name)
        check_memory_limit(self.memory_limit, owner=name)
        check_backend(self.backend, owner=name)
        timeout = self.backend_timeout
        check_scalar(timeout, "backend_timeout", float, min_val=0, closed="neither", owner=name)
        check_device(self.device, owner=name)
        check_lanes(self.n_jobs, self.device, owner=name)

    def fit(self, X, y, targets=None):
        """Learn the metric from labelled data.

        Parameters
        ----------
        X : array (n, d)
            Training points.
        y : array (n,)
            Their labels.
        targets : int array (n, k), optional
            Target neighbours supplied by the user (row i lists i's targets, all of
            i's class; a slot naming i itself is padding, for a row with fewer
            targets); default: the k nearest same-class points.

        Returns
        -------
        self
            The fitted estimator.
        """
        self._validate_params()
        clock = Deadline(self.time_limit)  # the whole fit: the target neighbours included
        X_raw, y_enc, counts = self._check_data(X, y)
        X, axes = self._reduce_inputs(X_raw)
        T = self._targets(X, y_enc, counts, targets)
        mu = float(self.mu)
        left = clock.remaining()  # (spent already: the solver returns its start, evaluated)
        budget, solve_pass = None if left is None else max(left, 1e-9), self._solve_pass
        with logging_to_stderr(logger, self.verbose):
            res, T, earlier = run_passes(
                partial(solve_pass, X, y_enc, mu), X, y_enc, T, self.n_passes, self.max_iter, budget
            )
            log_summary(logger, self.verbose, type(self).__name__, res)
        if res.status == "optimal_inaccurate" and self.solver == "subgradient":
            warn_unconverged(self, res)
        res = self._set_metric(res, X, y_enc, T, axes)
        self.result_, self.n_iter_, self.targets_ = res, res.iterations, T
        self.passes_ = earlier
        self._X, self._y = X_raw, y_enc
        self.X_fit_, self.y_fit_ = X_raw, y_enc  # public, for saved models (model_kinds)
        return self

    def _reduce_inputs(self, X):
        """The inputs after the optional PCA (``pca``), and its axes (or None)."""
        name, axes = type(self).__name__, None
        if self.pca is not None:
            check_scalar(self.pca, "pca", int, min_val=1, max_val=min(X.shape), owner=name)
            axes = pca_axes(X, self.pca)[0]
            X = X @ axes.T
        if self.n_components is not None:
            check_scalar(
                self.n_components, "n_components", int, min_val=1, max_val=X.shape[1], owner=name
            )
        return X, axes

    def _targets(self, X, y_enc, counts, targets):
        """The target neighbours: the k nearest same-class points, or the user's (checked)."""
        if targets is None:
            device = getattr(self, "device", None)  # the float32 screen on the device
            screen = None if device in (None, "cpu") else DeviceExecutor(device).screen_targets
            threads = check_n_jobs(self._lanes(device, (*X.shape, 0)), type(self).__name__)
            return target_neighbors(X, y_enc, self._set_k(counts), screen=screen, threads=threads)
        self.k_, self.predict_k_ = None, int(self._predict_k or self.k)
        T = check_targets(targets, y_enc, counts)
        self.k_ = T.shape[1]
        return T

    def _set_metric(self, res, X, y_enc, T, axes):
        """``components_``, ``metric_``, ``objective_`` from ``M``; the result to record."""
        M = 0.5 * (res.matrix + res.matrix.T)
        Lc = components_from_metric(M)
        if axes is None and self.n_components is None:  # the objective of what is applied
            res = applied(res, X, y_enc, T, float(self.mu), float(self.tol), Lc)
        self.objective_ = float(res.objective)
        if self.n_components is not None:
            Lc = leading_components(M, self.n_components)
            if self.reduction == "R":
                res = solve_rectangular(
                    X, y_enc, T, float(self.mu), self.n_components, L0=Lc, search=self.search
                )
                Lc = res.matrix
            self.objective_ = objective(Lc.T @ Lc, X, T, y_enc, float(self.mu))
        if axes is not None:
            Lc = Lc @ axes
        self.components_ = Lc
        self.metric_ = Lc.T @ Lc if (axes is not None or self.n_components) else M
        return res

    def _solve_pass(self, X, y_enc, mu, T, M0, max_iter, time_limit):
        if self.solver == "exact":
            return solve_working_set(X, y_enc, T, mu, solver=str(self.conic_solver).upper())
        return solve_large_scale(
            X,
            y_enc,
            T,
            mu,
            M0=M0,
            max_iter=max_iter,
            refine=self.refine,
            time_limit=time_limit,
            search=self.search,
            tol=float(self.tol),
            callback=progress_callback(logger, self.verbose, type(self).__name__),
            memory_limit=self.memory_limit,
            executor=self._executor(getattr(self, "device", None), (*X.shape, T.shape[1])),
        )

    def _mahalanobis_matrix(self):
        return self.metric_

    def transform(self, X):
        """Map ``X`` to ``X Lᵀ``, the learned metric's Euclidean coordinates.

        Parameters
        ----------
        X : array of shape (m, d)
            New points.

        Returns
        -------
        array of shape (m, r)
            The transformed points, in ``X``'s array namespace and on its device (a
            NumPy array for NumPy input, lists and frames; an array-API array for one,
            as the fit accepts them).
        """
        return like_input(self._embed(self._queries(X)), X)

    def _embed(self, Q):
        return Q @ self.components_.T

    def _train_embedding(self):
        return self._X @ self.components_.T

    def _lanes(self, device, plan):
        """``n_jobs``; None: ``default_lanes`` (on Dask, for the client's list work: no budget)."""
        n_jobs, local = getattr(self, "n_jobs", None), getattr(self, "backend", "local") == "local"
        if n_jobs is None and device in (None, "cpu"):
            return default_lanes(*plan, self.memory_limit if local else None)
        return n_jobs

    def _executor(self, device=None, plan=None):
        """The block work's executor (Dask: the fit's evaluations and predict's test-row
        blocks on the workers); a fit's (``plan = (n, d, k)``) in :meth:`_lanes` threads."""
        lanes = getattr(self, "n_jobs", None) if plan is None else self._lanes(device, plan)
        return executor_for(
            getattr(self, "backend", "local"),
            owner=type(self).__name__,
            device=device,
            n_jobs=lanes,
            timeout=getattr(self, "backend_timeout", 3600.0),
        )
