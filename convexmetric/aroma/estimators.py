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

import numpy as np

from .._input_checks import check_choice, check_scalar
from .base import _OnlineBilinear, logger  # noqa: F401
from .stream import DiagonalEngine, FactoredEngine, OasisEngine

__all__ = ["OASIS", "DiagonalAROMA", "FactoredAROMA"]


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
        1: log the online loss once per chunk of triplets
        (``convexmetric.aroma.constants.TRIPLET_CHUNK``; INFO, logger ``convexmetric.aroma``).

    Attributes
    ----------
    W_, Sigma_ : ndarray of shape (m, n)
    n_rounds_, n_updates_, n_mistakes_ : int
    n_iter_ : int, rounds so far (``n_rounds_``)
    average_loss_ : float
    result_ : SolveResult

    Examples
    --------
    >>> from convexmetric import DiagonalAROMA, datasets
    >>> X, y = datasets.bag_of_features(n_samples=200, random_state=0)
    >>> m = DiagonalAROMA(r=1.0, max_iter=2000, random_state=0).fit(X, y)
    >>> m.result_.status, m.W_.shape  # online: no optimum to certify
    ('completed', (1000, 1000))
    >>> round(m.score(X, y, k=5), 3)  # precision@5, every item a query
    0.997
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

    Examples
    --------
    >>> from convexmetric import FactoredAROMA, datasets
    >>> X, y = datasets.bag_of_features(n_samples=200, n_features=100, random_state=0)
    >>> m = FactoredAROMA(max_iter=2000, random_state=0).fit(X, y)
    >>> m.result_.status, m.W_.shape
    ('completed', (100, 100))
    >>> m.rank(X[0], X[1:6]).shape  # the five candidates, most similar first
    (5,)
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

    Examples
    --------
    >>> from convexmetric import OASIS, datasets
    >>> X, y = datasets.bag_of_features(n_samples=200, random_state=0)
    >>> m = OASIS(max_iter=2000, random_state=0).fit(X, y)
    >>> m.result_.status, round(m.score(X, y, k=5), 3)  # precision@5
    ('completed', 0.88)
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
