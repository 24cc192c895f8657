"""The online bilinear estimator that AROMA and OASIS share (fit, partial_fit, scoring)."""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .. import bilinear
from .._feature_names import check_feature_names, record_feature_names
from .._input_checks import check_labels, check_matrix, check_scalar
from .._verbose import check_verbose, log_summary, logging_to_stderr
from ..metrics import precision_at_k
from ..result import SolveResult
from .constants import TRIPLET_CHUNK

logger = logging.getLogger("convexmetric.aroma")


def _rows(A, name):
    """A 2-d (one row per item) finite float array or CSR matrix, validated."""
    return check_matrix(A, name, allow_sparse=True, promote_1d=True)


class _OnlineBilinear(BaseEstimator):
    """Shared machinery: validation, the triplet stream, counters and scoring."""

    _solver = ""

    def _params(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def _check_common(self):
        name = type(self).__name__
        check_scalar(self.max_iter, "max_iter", int, min_val=0, owner=name)
        check_verbose(self.verbose, name)
        if not isinstance(self.mistake_driven, bool | np.bool_):
            raise ValueError(
                f"The 'mistake_driven' parameter of {name} must be a bool. "
                f"Got {self.mistake_driven!r} instead."
            )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # X may be a scipy.sparse matrix (CSR inside)
        return tags

    def _start(self, m, n):
        self._check_common()
        self._engine = self._make_engine(m, n)
        self._rng = np.random.default_rng(self.random_state)  # partial_fit's triplet draws
        if m == n:
            self.n_features_in_ = m
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_
        self.n_rounds_ = self.n_updates_ = self.n_mistakes_ = 0
        self.cumulative_loss_ = 0.0
        self.loss_history_ = []
        self._sync()

    def _sync(self):
        self.W_ = self._engine.W
        self.n_iter_ = self.n_rounds_
        self.n_updates_ = self._engine.updates
        self.result_ = SolveResult(
            matrix=self.W_,
            objective=self.average_loss_ if self.n_rounds_ else 0.0,
            status="completed",  # an online learner stops when its stream ends
            iterations=self.n_rounds_,
            solver=self._solver,
            history=list(self.loss_history_),
            info={"updates": self.n_updates_, "mistakes": self.n_mistakes_},
        )

    @property
    def average_loss_(self):
        """Mean hinge loss suffered online (before each round's update)."""
        return self.cumulative_loss_ / max(self.n_rounds_, 1)

    def _run(self, Q, D):
        margins = self._engine.run(Q, D)
        self.n_rounds_ += margins.size
        self.n_mistakes_ += int(np.count_nonzero(margins <= 0.0))
        self.cumulative_loss_ += float(np.maximum(0.0, 1.0 - margins).sum())
        self.loss_history_.append(self.average_loss_)
        self._sync()

    def fit(self, X, y, max_iter=None):
        """Learn ``W`` from ``max_iter`` triplets drawn from the labels ``y`` (``m = n = d``).

        Parameters
        ----------
        X : array or sparse matrix of shape (N, d)
            The items, one row each.
        y : array of shape (N,)
            Their labels: a triplet is a query, an item of its class and one of another.
        max_iter : int, optional
            Deprecated (a hyperparameter given to ``fit``): set the estimator's
            ``max_iter`` instead (``set_params``); it still overrides it until 0.3, with
            a FutureWarning.

        Returns
        -------
        self
            The fitted estimator.
        """
        if max_iter is not None:
            warnings.warn(
                f"fit(max_iter=...) of {type(self).__name__} is deprecated and goes in 0.3: "
                f"set the estimator's max_iter instead, set_params(max_iter={max_iter!r}).",
                FutureWarning,
                stacklevel=2,
            )
        X_in, X = X, check_matrix(X, "X", allow_sparse=True, min_rows=2)
        y = check_labels(y, X.shape[0])
        self._start(X.shape[1], X.shape[1])
        record_feature_names(self, X_in)
        return self._fit_triplets(X, y, max_iter, self.random_state)

    def partial_fit(self, X, y, max_iter=None):
        """Continue learning ``W`` from ``max_iter`` more triplets of the batch ``(X, y)``.

        scikit-learn's incremental ``fit``: the first call starts from the initial ``W``,
        every call adds rounds (the counters and the online loss carry on). Successive
        calls draw their triplets from one seeded stream (``random_state``). For a
        stream of explicit triplets use :meth:`partial_fit_triplets`.

        Parameters
        ----------
        X : array or sparse matrix of shape (N, d)
            The items, one row each.
        y : array of shape (N,)
            Their labels.
        max_iter : int, optional
            Triplets of this call (default: the ``max_iter`` parameter).

        Returns
        -------
        self
            The updated estimator.
        """
        X_in, X = X, check_matrix(X, "X", allow_sparse=True, min_rows=2)
        y = check_labels(y, X.shape[0])
        if not hasattr(self, "W_"):
            self._start(X.shape[1], X.shape[1])
            record_feature_names(self, X_in)
        else:
            check_feature_names(self, X_in)
        self._check_dims(X, "X", X, "X")
        return self._fit_triplets(X, y, max_iter, self._rng)

    def _fit_triplets(self, X, y, max_iter, random_state):
        name = type(self).__name__
        if max_iter is not None:
            max_iter = check_scalar(max_iter, "max_iter", int, min_val=0, owner=name)
        max_iter = self.max_iter if max_iter is None else max_iter
        triplets = bilinear.sample_triplets(y, max_iter, random_state=random_state)
        with logging_to_stderr(logger, self.verbose):
            for s in range(0, max_iter, TRIPLET_CHUNK):
                self._run(*bilinear.triplet_differences(X, X, triplets[s : s + TRIPLET_CHUNK]))
                if self.verbose:
                    logger.info(
                        "%s: %d triplets, average online loss %.6g, %d updates",
                        name,
                        self.n_rounds_,
                        self.average_loss_,
                        self.n_updates_,
                    )
            log_summary(logger, self.verbose, name, self.result_)
        return self

    def partial_fit_triplets(self, q, p_pos, p_neg):
        """Run one round per triplet ``(q, p_pos, p_neg)``.

        Parameters
        ----------
        q : array of shape (m,) or (T, m)
            The queries (one, or a block of rows).
        p_pos, p_neg : arrays of shape (n,) or (T, n)
            For each query, the item that should rank higher and the one below it.

        Returns
        -------
        self
            The updated estimator.
        """
        Q, Pp, Pn = _rows(q, "q"), _rows(p_pos, "p_pos"), _rows(p_neg, "p_neg")
        if Pp.shape != Pn.shape or Q.shape[0] != Pp.shape[0]:
            raise ValueError(
                f"'q', 'p_pos' and 'p_neg' must hold one row per triplet with p_pos and p_neg "
                f"of equal shape; got {Q.shape}, {Pp.shape} and {Pn.shape}."
            )
        if not hasattr(self, "W_"):
            self._start(Q.shape[1], Pp.shape[1])
            record_feature_names(self, None)  # rows of triplets: no columns by name
        self._check_dims(Q, "q", Pp, "p_pos")
        self._run(Q, Pp - Pn)
        return self

    def _check_fitted(self):
        if not hasattr(self, "W_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call 'fit' or "
                "'partial_fit' first."
            )

    def _check_dims(self, Q, qname, P, pname):
        m, n = self.W_.shape
        if Q.shape[1] != m:
            raise ValueError(
                f"'{qname}' has the wrong width: {qname} has {Q.shape[1]} features, but "
                f"{type(self).__name__} is expecting {m} features as input (the rows of W_)."
            )
        if P.shape[1] != n:
            raise ValueError(f"'{pname}' has {P.shape[1]} features but W_ has {n} columns (n).")

    def _checked(self, Q, P):
        self._check_fitted()
        check_feature_names(self, Q, "Q")
        check_feature_names(self, P, "P")
        Q = _rows(Q, "Q")
        P = Q if P is None else _rows(P, "P")
        self._check_dims(Q, "Q", P, "P")
        return Q, P

    def score_pairs(self, Q, P):
        """Score paired rows: ``q_iᵀ W p_i``.

        Parameters
        ----------
        Q, P : arrays of shape (T, m) and (T, n)
            Queries and items, row ``i`` of one paired with row ``i`` of the other.

        Returns
        -------
        ndarray of shape (T,)
            The similarity of each pair.
        """
        Q, P = self._checked(Q, P)
        if Q.shape[0] != P.shape[0]:
            raise ValueError(f"'Q' and 'P' must pair rows; got {Q.shape[0]} and {P.shape[0]}.")
        return bilinear.score_pairs(self.W_, Q, P)

    def similarity(self, Q, P=None):
        """Compute the score matrix ``Q W Pᵀ``.

        Parameters
        ----------
        Q : array of shape (T, m)
            Queries.
        P : array of shape (U, n), optional
            Items (default: ``Q``).

        Returns
        -------
        ndarray of shape (T, U)
            The similarity of every query to every item.
        """
        Q, P = self._checked(Q, P)
        return bilinear.similarity(self.W_, Q, P)

    def rank(self, query, candidates):
        """Rank ``candidates`` by decreasing similarity to ``query``.

        Parameters
        ----------
        query : array of shape (m,)
            The query.
        candidates : array of shape (U, n)
            The items to rank.

        Returns
        -------
        ndarray of shape (U,)
            Indices of ``candidates``, most similar first.
        """
        Q, P = self._checked(query, candidates)
        return bilinear.rank(self.W_, Q[:1], P)

    def score(self, X, y, k=10):
        """Compute precision at ``k`` with every row of ``X`` as a query against the rest.

        Parameters
        ----------
        X : array or sparse matrix of shape (N, d)
            The items.
        y : array of shape (N,)
            Their labels (an item is relevant to a query of its class).
        k : int, default=10
            The cut-off.

        Returns
        -------
        float
            The mean precision@k over the queries.
        """
        self._check_fitted()
        check_feature_names(self, X)
        X = _rows(X, "X")
        self._check_dims(X, "X", X, "X")
        return precision_at_k(self.similarity(X), y, k)
