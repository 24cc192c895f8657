"""SSNE: a similarity-sensitive nonlinear embedding onto the unit sphere.

Batra & Shakhnarovich, "Similarity Sensitive Nonlinear Embeddings". Each of the M
embedding coordinates is ``h_m(x) = 2/(1 + exp(w_mᵀ[x; 1])) − 1``; the embedding
``H(x) = H̃(x)/‖H̃(x)‖`` lies on the unit sphere and the learned similarity is
``H(x)ᵀH(z)``. The objective (eq. 3, see :mod:`convexmetric.ssne.solver`) is a
squared loss on target similarities plus the L1,2 group norm of the columns of W.

**The objective is not convex.** Different initialisations reach different local
minima: ``n_restarts`` runs the solver from several seeded starts and keeps the run
with the lowest objective; every run's objective history is kept in ``result_``.

One deliberate change of scale: ``loss_weight`` weights the *mean* squared loss over
the Q pairs, so the paper's λ of eq. (3) is ``loss_weight / Q``. The same ``loss_weight``
then means the same trade-off on 100 points or on 10,000 (with the paper's sum, λ would
have to shrink like 1/Q).

Supervision from labels: target ``+1`` for same-class pairs and ``dissimilar`` (0 by
default) for the others. Why 0 and not −1: C unit vectors can have mutual dot
product −1 only when C = 2 (the least achievable common value is −1/(C−1)), so a −1
target is unreachable for three classes or more, while 0 (orthogonal classes) is
reachable once M ≥ C. On the data of Table 1, 0 was also as good or better for the
two-class wdbc.

>>> from convexmetric import datasets
>>> X, y = datasets.load("iris"); X = (X - X.mean(0)) / X.std(0)
>>> m = SSNE(n_components=8, random_state=0).fit(X, y)
>>> m.result_.status
'converged'
>>> Z = m.transform(X)
>>> Z.shape, bool(np.allclose(np.linalg.norm(Z, axis=1), 1.0))
((150, 8), True)
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._convergence import warn_unconverged
from .._feature_names import record_feature_names
from .._input_checks import (
    check_indices,
    check_labels,
    check_matrix,
    check_new_data,
    check_scalar,
)
from .._output import OutputNamesMixin, plain_transform
from .._renamed import DEPRECATED, renamed
from .._verbose import check_verbose, log_summary, logging_to_stderr, progress_callback
from ..optim.deadline import Deadline
from ..result import SolveResult
from .pairs import _ndim, check_similarity, label_pairs
from .solver import SSNESettings, embed, features, ssne_bcd

logger = logging.getLogger("convexmetric.ssne")


class SSNE(OutputNamesMixin, TransformerMixin, BaseEstimator):
    """Similarity-sensitive nonlinear embedding (Batra & Shakhnarovich, eq. 3).

    Parameters
    ----------
    n_components : int, default=16
        M, the number of embedding coordinates (may exceed the input dimension).
    loss_weight : float, default=100.0
        Weight of the mean squared loss against the group norm (λ·Q in eq. 3). Small
        values let the penalty dominate: whole columns of ``W_`` become zero.
        Formerly ``lam``.
    dissimilar : float, default=0.0
        Target similarity of different-label pairs when fitting from labels.
    max_iter : int, default=40
        Epochs at most over the whole fit, all restarts together (``n_iter_`` never
        exceeds it): the restarts share it evenly, the first ones taking the remainder.
        Formerly ``n_epochs``, a cap per restart: ``n_epochs=E`` is
        ``max_iter=E * n_restarts``.
    batch_size : int, default=128
        Pairs per minibatch.
    learning_rate, decay : float, default=0.5 and 0.05
        The step ``learning_rate / (1 + decay·epoch)``.
    n_blocks : int, default=1
        Column blocks visited in turn on every minibatch (1: all at once). These five
        are the solver settings (:class:`~convexmetric.ssne.solver.SSNESettings`).
    n_restarts : int, default=1
        Seeded starts; the lowest objective wins (the problem is non-convex).
    init_scale : float, default=1.0
        Initial W is Gaussian with standard deviation ``init_scale / sqrt(d+1)``.
    max_pairs : int, default=50000
        Pairs drawn from labels (all pairs if there are fewer).
    tol : float, default=1e-5
        The documented stop (the problem is not convex, so no gap is certified): a run
        ends (status "converged") when its best objective has not improved by more
        than ``tol`` (relative) for 5 epochs in a row: a plateau, not a stationary
        point. A run that reaches its share of ``max_iter`` first ends with status
        "iteration_limit" and a ``ConvergenceWarning``.
    time_limit : float or None
        Seconds for the whole fit (all restarts together; a restart that would start
        after it is not run); the best iterate so far is kept.
    random_state : int, Generator or None
        Seeds the initialisation, the pair sample and the minibatch schedule.
    verbose : {0, 1}, default=0
        1: log each epoch's objective and a summary (INFO, logger ``convexmetric.ssne``).
    lam : deprecated
        Renamed ``loss_weight`` (the loss's weight); the old name warns and is removed in
        0.3.
    n_epochs : deprecated
        Renamed ``max_iter`` (epochs over the whole fit; ``n_epochs=E`` is ``max_iter=E *
        n_restarts``); the old name warns and is removed in 0.3.

    Attributes
    ----------
    W_ : ndarray of shape (d+1, M)
        The learned parameters (last row multiplies the constant feature).
    active_components_ : ndarray of int
        Columns of ``W_`` that are not exactly zero.
    objective_ : float
        Eq. (3) (with ``loss_weight / Q`` as λ) at ``W_``.
    result_ : SolveResult
        The winning run; ``result_.info["restart_objectives"]`` and
        ``result_.info["histories"]`` hold every run.
    n_iter_ : int
        Epochs run, summed over the restarts (``result_.iterations``).

    Examples
    --------
    >>> from convexmetric import SSNE, datasets
    >>> Xtr, Xte, ytr, yte = datasets.load_split("iris")
    >>> m = SSNE(n_components=8, learning_rate=0.1, max_iter=300, tol=1e-2, random_state=0)
    >>> m.fit(Xtr, ytr).result_.status  # not convex: converged, never "optimal"
    'converged'
    >>> m.transform(Xte).shape  # unit-norm codes
    (45, 8)
    """

    def __init__(
        self,
        *,
        n_components=16,
        loss_weight=100.0,
        dissimilar=0.0,
        max_iter=40,
        batch_size=128,
        learning_rate=0.5,
        decay=0.05,
        n_blocks=1,
        n_restarts=1,
        init_scale=1.0,
        max_pairs=50_000,
        tol=1e-5,
        time_limit=None,
        random_state=None,
        verbose=0,
        lam=DEPRECATED,
        n_epochs=DEPRECATED,
    ):
        self.tol = tol
        self.time_limit = time_limit
        self.verbose = verbose
        self.n_components = n_components
        self.loss_weight = loss_weight
        self.lam = lam
        self.dissimilar = dissimilar
        self.max_iter = max_iter
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.decay = decay
        self.n_blocks = n_blocks
        self.n_restarts = n_restarts
        self.init_scale = init_scale
        self.max_pairs = max_pairs
        self.random_state = random_state

    def _check_params(self):
        own = "SSNE"
        check_scalar(self.n_components, "n_components", int, min_val=1, owner=own)
        self._loss_weight = check_scalar(
            renamed(self, "lam", "loss_weight"), "loss_weight", float, min_val=0.0, owner=own
        )
        check_scalar(self.dissimilar, "dissimilar", float, min_val=-1.0, max_val=1.0, owner=own)
        check_scalar(self.n_restarts, "n_restarts", int, min_val=1, owner=own)
        self._max_iter = check_scalar(
            renamed(self, "n_epochs", "max_iter", convert=lambda e: e * self.n_restarts),
            "max_iter",
            int,
            min_val=self.n_restarts,
            owner=own,
        )
        check_scalar(self.batch_size, "batch_size", int, min_val=1, owner=own)
        check_scalar(
            self.learning_rate, "learning_rate", float, min_val=0.0, closed="right", owner=own
        )
        check_scalar(self.decay, "decay", float, min_val=0.0, owner=own)
        check_scalar(self.n_blocks, "n_blocks", int, min_val=1, owner=own)
        check_scalar(self.init_scale, "init_scale", float, min_val=0.0, closed="right", owner=own)
        check_scalar(self.max_pairs, "max_pairs", int, min_val=1, owner=own)
        check_scalar(self.tol, "tol", float, min_val=0.0, owner=own)
        if self.time_limit is not None:
            check_scalar(
                self.time_limit, "time_limit", float, min_val=0, closed="neither", owner=own
            )
        check_verbose(self.verbose, own)
        if self.n_blocks > self.n_components:
            raise ValueError(
                f"The 'n_blocks' parameter of SSNE must not exceed n_components="
                f"{self.n_components}. Got {self.n_blocks} instead."
            )

    def fit(self, X, y=None, *, pairs=None):
        """Learn ``W_`` from labels, from pairs of points, or from index pairs.

        * ``fit(X, y)``: ``X`` of shape (n, d), ``y`` labels (pairs via :func:`label_pairs`).
        * ``fit(pairs, s)``: ``pairs`` of shape (Q, 2, d), ``s`` targets in [−1, 1].
        * ``fit(X, s, pairs=idx)``: ``idx`` of shape (Q, 2) indexes rows of ``X``.

        Parameters
        ----------
        X : array of shape (n, d), or (Q, 2, d) for pairs of points
            The points, or the pairs of points.
        y : array
            Labels of the rows of ``X``, or the target similarities of the pairs.
        pairs : int array of shape (Q, 2), optional
            Index pairs into the rows of ``X`` (``y`` then holds their targets).

        Returns
        -------
        SSNE
            The fitted estimator.
        """
        self._check_params()
        rng = np.random.default_rng(self.random_state)
        if y is None:
            raise ValueError(
                "'y' is missing: SSNE needs supervision, fit(X, y) with labels or fit(pairs, s)."
            )
        record_feature_names(self, X)
        if pairs is not None:
            X = check_matrix(X, "X")
            idx = check_indices(pairs, X.shape[0], "pairs")
            if idx.ndim != 2 or idx.shape[1] != 2:
                raise ValueError(f"'pairs' must have shape (Q, 2); got {idx.shape}.")
            I, J = idx[:, 0], idx[:, 1]
            s = check_similarity(y, len(I))
        elif _ndim(X) == 3:
            P = check_matrix(X, "pairs", ndim=3)
            if P.shape[1] != 2:
                raise ValueError(f"'pairs' must have shape (Q, 2, d); got {P.shape}.")
            s = check_similarity(y, P.shape[0])
            X = P.reshape(-1, P.shape[2])
            I, J = np.arange(0, len(X), 2), np.arange(1, len(X), 2)
        else:
            X = check_matrix(X, "X", min_rows=2)
            y = check_labels(y, X.shape[0], min_classes=2, owner="SSNE")
            I, J, s = label_pairs(
                y, dissimilar=self.dissimilar, max_pairs=self.max_pairs, random_state=rng
            )
        if len(I) == 0:
            raise ValueError("SSNE needs at least one pair of points.")
        self.n_features_in_ = X.shape[1]
        with logging_to_stderr(logger, self.verbose):
            self.W_, self.result_ = self._solve(X, I, J, s, rng)
            log_summary(logger, self.verbose, "SSNE", self.result_)
        self.objective_ = float(self.result_.objective)
        self.n_iter_ = self.result_.iterations
        self.active_components_ = np.flatnonzero(np.any(self.W_ != 0, axis=0))
        if len(self.active_components_) == 0:
            warnings.warn(
                f"Every column of W is zero: loss_weight={self._loss_weight} lets the group "
                "penalty dominate. Increase loss_weight.",
                UserWarning,
                stacklevel=2,
            )
        return self

    def _solve(self, X, I, J, s, rng):
        d1, Q = X.shape[1] + 1, len(I)
        settings = SSNESettings(
            max_iter=self._max_iter,
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            decay=self.decay,
            n_blocks=self.n_blocks,
            tol=float(self.tol),
            time_limit=self.time_limit,
            callback=progress_callback(logger, self.verbose, "SSNE", every=0.0),
        )
        runs, clock = [], Deadline(self.time_limit)  # one deadline for all restarts
        share, extra = divmod(self._max_iter, self.n_restarts)  # max_iter: the whole fit
        for run in range(self.n_restarts):
            if runs and clock.expired():
                break
            settings.time_limit = clock.remaining()
            settings.max_iter = share + (run < extra)
            W0 = rng.normal(scale=self.init_scale / np.sqrt(d1), size=(d1, self.n_components))
            lam = self._loss_weight / Q
            runs.append(ssne_bcd(X, I, J, s, lam, W0, settings, random_state=rng))
        best = min(runs, key=lambda r: r.objective)
        info = dict(best.info)
        info["restart_objectives"] = [r.objective for r in runs]
        info["histories"] = [r.history for r in runs]
        info["n_pairs"] = Q
        stopped = len(runs) < self.n_restarts or any(r.status == "user_limit" for r in runs)
        result = SolveResult(
            matrix=best.matrix,
            objective=best.objective,
            status="user_limit" if stopped else best.status,
            iterations=sum(r.iterations for r in runs),
            seconds=sum(r.seconds for r in runs),
            solver=best.solver,
            history=best.history,
            info=info,
        )
        if result.status == "iteration_limit":
            warn_unconverged(self, result, stacklevel=4)
        return best.matrix, result

    @property
    def _n_features_out(self):
        if not hasattr(self, "W_"):
            raise AttributeError("not fitted")
        return self.W_.shape[1]

    def _check_X(self, X):
        if not hasattr(self, "W_"):
            raise ValueError("This SSNE instance is not fitted yet; call fit first.")
        return check_new_data(self, X)

    def transform(self, X):
        """Embed ``X``: ``H(X)``, one point on the unit sphere of R^M per row.

        Parameters
        ----------
        X : array of shape (n, d)
            The points.

        Returns
        -------
        ndarray of shape (n, n_components)
            Unit rows (zero rows if ``W_`` is all zero).
        """
        return embed(features(self._check_X(X)), self.W_)[2]

    def similarity(self, X, Z):
        """Compute the learned similarity matrix ``H(X) H(Z)ᵀ`` (eq. 2).

        Parameters
        ----------
        X, Z : arrays of shape (n, d) and (p, d)
            The two sets of points.

        Returns
        -------
        ndarray of shape (n, p)
            The similarities, in [−1, 1].
        """
        return plain_transform(self, X) @ plain_transform(self, Z).T

    def score(self, X, y):
        """Score by minus the mean squared loss of eq. (3) on the label pairs of ``X, y``.

        Targets: ``+1`` for same-label pairs, ``dissimilar`` for the others (as in
        :meth:`fit`; at most ``max_pairs`` pairs, drawn with ``random_state``). Higher is
        better, so ``GridSearchCV`` can use it as is.

        Parameters
        ----------
        X : array of shape (n, d)
            The points.
        y : array of shape (n,)
            Their labels.

        Returns
        -------
        float
            Minus the mean squared loss.
        """
        X = self._check_X(X)
        y = check_labels(y, X.shape[0])
        I, J, s = label_pairs(
            y, dissimilar=self.dissimilar, max_pairs=self.max_pairs, random_state=self.random_state
        )
        if len(I) == 0:
            raise ValueError("SSNE.score needs at least two points (one pair).")
        H = plain_transform(self, X)
        return -float(np.mean((np.einsum("ij,ij->i", H[I], H[J]) - s) ** 2))
