"""Online bilinear similarity learners: d-AROMA, f-AROMA (Crammer & Chechik 2012) and OASIS.

Each learns ``W`` (m×n) for the similarity ``S_W(q, p) = qᵀ W p`` from triplets
``(q, p⁺, p⁻)``, one round per triplet. ``partial_fit_triplets(q, p_pos, p_neg)``
consumes a stream (single vectors or blocks of rows, dense or scipy.sparse; queries and
objects may have different dimensions); ``fit(X, y)`` draws ``max_iter`` triplets from
labels with :func:`convexmetric.bilinear.sample_triplets` (query, same-class positive,
other-class negative), so ``m = n = X.shape[1]``; ``partial_fit(X, y)`` is
scikit-learn's incremental form of ``fit``: it continues from the current ``W`` with
``max_iter`` more triplets drawn from the labelled batch ``(X, y)``.

>>> from convexmetric.datasets import bag_of_features
>>> X, y = bag_of_features(200, 100, 4, random_state=0)
>>> model = DiagonalAROMA(r=0.1, max_iter=2000, random_state=0).fit(X, y)
>>> model.W_.shape, model.Sigma_.shape
((100, 100), (100, 100))
>>> model.score(X, y) > OASIS(C=0.1, max_iter=0, init="identity").fit(X, y).score(X, y)
True
"""

from __future__ import annotations

import logging

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .. import bilinear
from .._validation import check_choice, check_labels, check_matrix, check_scalar
from .._verbose import check_verbose, log_summary, logging_to_stderr
from ..metrics import precision_at_k
from ..result import SolveResult
from .stream import DiagonalEngine, FactoredEngine, OasisEngine

__all__ = ["OASIS", "DiagonalAROMA", "FactoredAROMA"]

_CHUNK = 10_000  # triplets materialised at a time by fit
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
            status="optimal_inaccurate",  # an online learner stops when its stream ends
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
            Overrides the ``max_iter`` parameter for this call.

        Returns
        -------
        self
            The fitted estimator.
        """
        X = check_matrix(X, "X", allow_sparse=True, min_rows=2)
        y = check_labels(y, X.shape[0])
        self._start(X.shape[1], X.shape[1])
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
        X = check_matrix(X, "X", allow_sparse=True, min_rows=2)
        y = check_labels(y, X.shape[0])
        if not hasattr(self, "W_"):
            self._start(X.shape[1], X.shape[1])
        self._check_dims(X, "X", X, "X")
        return self._fit_triplets(X, y, max_iter, self._rng)

    def _fit_triplets(self, X, y, max_iter, random_state):
        name = type(self).__name__
        if max_iter is not None:
            max_iter = check_scalar(max_iter, "max_iter", int, min_val=0, owner=name)
        max_iter = self.max_iter if max_iter is None else max_iter
        triplets = bilinear.sample_triplets(y, max_iter, random_state=random_state)
        with logging_to_stderr(logger, self.verbose):
            for s in range(0, max_iter, _CHUNK):
                self._run(*bilinear.triplet_differences(X, X, triplets[s : s + _CHUNK]))
                if self.verbose:
                    logger.info(
                        "%s: %d triplets, average online loss %.6g, %d updates",
                        name, self.n_rounds_, self.average_loss_, self.n_updates_,
                    )  # fmt: skip
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
        X = _rows(X, "X")
        self._check_dims(X, "X", X, "X")
        return precision_at_k(self.similarity(X), y, k)


class _AROMA(_OnlineBilinear):
    """The parameters shared by d-AROMA and f-AROMA (documented on :class:`DiagonalAROMA`)."""

    def __init__(
        self, *, r=1.0, max_iter=10000, mistake_driven=False, random_state=None, verbose=0
    ):
        self.r = r
        self.max_iter = max_iter
        self.mistake_driven = mistake_driven
        self.random_state = random_state
        self.verbose = verbose


class DiagonalAROMA(_AROMA):
    """Diagonal AROMA, d-AROMA (Alg. 1): a diagonal covariance ``Σ`` (m×n) beside the mean ``W``.

    Parameters
    ----------
    r : float, default=1.0
        AROW's regulariser ``r > 0`` (small ``r``: aggressive updates).
    max_iter : int, default=10000
        Triplets drawn by :meth:`fit`, one round each (formerly ``n_iter``).
    mistake_driven : bool, default=False
        Update only when ``qᵀ W p ≤ 0`` instead of ``< 1``.
    random_state : int, Generator or None
        Seeds the triplet stream of :meth:`fit`.
    verbose : {0, 1}, default=0
        1: log the online loss every 10,000 triplets (INFO, logger ``convexmetric.aroma``).

    Attributes
    ----------
    W_, Sigma_ : ndarray of shape (m, n)
    n_rounds_, n_updates_, n_mistakes_ : int
    n_iter_ : int, rounds so far (``n_rounds_``)
    average_loss_ : float
    result_ : SolveResult
    """

    _solver = "d-AROMA"

    def _make_engine(self, m, n):
        r = check_scalar(self.r, "r", float, min_val=0, closed="neither", owner="DiagonalAROMA")
        return DiagonalEngine(m, n, r, self.mistake_driven)

    def _sync(self):
        super()._sync()
        self.Sigma_ = self._engine.Sigma


class FactoredAROMA(_AROMA):
    """Factored AROMA, f-AROMA (Alg. 2): covariance ``Ω ⊗ Λ`` with ``Λ`` (m×m) and ``Ω`` (n×n).

    ``Lambda_`` and ``Omega_`` are the full symmetric matrices (assembled on access from
    the stored triangles).

    Parameters
    ----------
    r, max_iter, mistake_driven, random_state, verbose : float, int, bool, int, {0, 1}
        As in :class:`DiagonalAROMA`.
    """

    _solver = "f-AROMA"

    def _make_engine(self, m, n):
        r = check_scalar(self.r, "r", float, min_val=0, closed="neither", owner="FactoredAROMA")
        return FactoredEngine(m, n, r, self.mistake_driven)

    @property
    def Lambda_(self):
        self._check_fitted()
        return self._engine.Lambda

    @property
    def Omega_(self):
        self._check_fitted()
        return self._engine.Omega


class OASIS(_OnlineBilinear):
    """OASIS (Chechik et al. 2009): passive-aggressive updates of ``W``.

    Parameters
    ----------
    C : float, default=0.1
        Aggressiveness ``C > 0``: the step is ``τ = min(C, ℓ / ‖q pᵀ‖²_F)``.
    init : {"identity", "zeros"}, default="identity"
        ``W₀ = I`` (OASIS's choice; the m×n identity when m ≠ n) or ``W₀ = 0``.
    max_iter, mistake_driven, random_state, verbose : int, bool, int or None, {0, 1}
        As in :class:`DiagonalAROMA`.
    """

    _solver = "OASIS"

    def __init__(
        self,
        *,
        C=0.1,
        init="identity",
        max_iter=10000,
        mistake_driven=False,
        random_state=None,
        verbose=0,
    ):
        self.C = C
        self.init = init
        self.max_iter = max_iter
        self.mistake_driven = mistake_driven
        self.random_state = random_state
        self.verbose = verbose

    def _make_engine(self, m, n):
        C = check_scalar(self.C, "C", float, min_val=0, closed="neither", owner="OASIS")
        check_choice(self.init, "init", ("identity", "zeros"), owner="OASIS")
        W0 = np.eye(m, n) if self.init == "identity" else None
        return OasisEngine(m, n, C, self.mistake_driven, W0)
