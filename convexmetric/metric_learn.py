"""metric-learn's LMNN, by its own names: change the import, keep the code.

metric-learn's documented usage runs as it is with only the import changed::

    import numpy as np
    from convexmetric.metric_learn import LMNN        # was: from metric_learn import LMNN
    from sklearn.datasets import load_iris

    iris_data = load_iris()
    X = iris_data['data']
    Y = iris_data['target']

    lmnn = LMNN(n_neighbors=5, learn_rate=1e-6, verbose=False)
    lmnn.fit(X, Y)

The estimator below takes metric-learn's parameters, with metric-learn's meanings, and
fits :class:`convexmetric.LMNN` (the same eq. 14, solved with a certificate):

=================== ======================================================================
metric-learn        here
=================== ======================================================================
``n_neighbors``     target neighbours per point: ``LMNN(k=n_neighbors)`` (``k``: its old
                    name, deprecated there too)
``regularization``  weight of the pull term: ``mu = 1 − regularization``
``convergence_tol`` ``tol``, the certified relative gap at which the solver stops (metric-
                    learn's is a change of the objective between iterations)
``max_iter``        ``max_iter`` (the whole fit's iterations)
``n_components``    ``n_components`` (LMNN-S: the leading eigen-directions of the metric)
``verbose``         ``verbose`` (logged, not printed)
``random_state``    ``random_state`` (the fit makes no random choice)
``preprocessor``    the same: an array indexed by the integer inputs, or a callable
``learn_rate``      accepted, no effect: the step sizes are chosen by the solver
``init``            accepted, no effect on the result: the problem is convex, every
                    start reaches the same optimum
``min_iter``        only its default (50): the solver stops when its certificate says so,
                    never before; other values raise, naming ``convergence_tol``
=================== ======================================================================

Methods: ``fit``, ``transform``, ``get_mahalanobis_matrix`` (a copy), ``get_metric`` (a
snapshot), ``pair_distance``, ``pair_score``, ``score_pairs`` (metric-learn's deprecated
name of ``pair_distance``, with its FutureWarning), and ``components_``, ``n_iter_``.
The fitted :class:`convexmetric.LMNN` is ``lmnn_`` (its ``result_`` holds the certificate).
``transform`` returns the input's array namespace (array-API input, array-API output).

Small classes train as in metric-learn: a point of a class of ``m ≤ n_neighbors``
members has the ``m − 1`` others as target neighbours, and a point alone in its class
none (it is still an impostor for the other classes), with a
:class:`~convexmetric.lmnn.base.SmallClassWarning`.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._feature_names import record_feature_names
from ._input_checks import check_bool, check_scalar
from ._mahalanobis import MahalanobisMixin
from .lmnn.estimator import LMNN as _LMNN

__all__ = ["LMNN"]

_INITS = ("auto", "pca", "lda", "identity", "random")


class LMNN(MahalanobisMixin, TransformerMixin, BaseEstimator):
    """LMNN by metric-learn's names and methods, over :class:`convexmetric.LMNN` (module doc).

    Parameters
    ----------
    init : {"auto", "pca", "lda", "identity", "random"} or array, default="auto"
        Accepted for metric-learn's interface; no effect (the problem is convex).
    n_neighbors : int, default=3
        Target neighbours per point (convexmetric's ``k``).
    min_iter : int, default=50
        Only the default: there is no minimum number of iterations here.
    max_iter : int, default=1000
        Iterations at most over the whole fit.
    learn_rate : float, default=1e-7
        Accepted for metric-learn's interface; no effect (steps are chosen by the solver).
    regularization : float in [0, 1], default=0.5
        Weight of the pull term; convexmetric's ``mu`` is ``1 − regularization``.
    convergence_tol : float, default=0.001
        The certified relative gap at which the solver stops (convexmetric's ``tol``).
    verbose : bool, default=False
        Log the solver's progress (logger ``convexmetric.lmnn``).
    preprocessor : array, callable or None
        Maps integer inputs (indices) to points: ``preprocessor[indices]`` or
        ``preprocessor(indices)``.
    n_components : int or None
        Output dimensionality (None: all features).
    random_state : int or None
        Accepted; the fit makes no random choice.
    k : int, deprecated
        The old name of ``n_neighbors`` in metric-learn.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    n_iter_ : int
    lmnn_ : convexmetric.LMNN, the fitted estimator
    """

    def __init__(
        self,
        init="auto",
        n_neighbors=3,
        min_iter=50,
        max_iter=1000,
        learn_rate=1e-7,
        regularization=0.5,
        convergence_tol=0.001,
        verbose=False,
        preprocessor=None,
        n_components=None,
        random_state=None,
        k="deprecated",
    ):
        self.init = init
        self.n_neighbors = n_neighbors
        self.min_iter = min_iter
        self.max_iter = max_iter
        self.learn_rate = learn_rate
        self.regularization = regularization
        self.convergence_tol = convergence_tol
        self.verbose = verbose
        self.preprocessor = preprocessor
        self.n_components = n_components
        self.random_state = random_state
        self.k = k

    def _settings(self):
        """convexmetric's LMNN parameters from metric-learn's (module doc)."""
        own = "LMNN"
        k = self.n_neighbors
        if not (isinstance(self.k, str) and self.k == "deprecated"):
            warnings.warn(
                "'k' was renamed 'n_neighbors' (metric-learn 0.6.3); pass n_neighbors instead.",
                FutureWarning,
                stacklevel=3,
            )
            k = self.k
        if self.min_iter != 50:
            raise ValueError(
                f"min_iter={self.min_iter!r} has no equivalent in convexmetric's LMNN: it "
                "stops when its certified gap is within 'convergence_tol' (its 'tol'), never "
                "before; leave min_iter at 50 and set convergence_tol instead."
            )
        reg = check_scalar(
            self.regularization, "regularization", float, min_val=0.0, max_val=1.0, owner=own
        )
        tol = check_scalar(
            self.convergence_tol, "convergence_tol", float, min_val=0.0, closed="neither", owner=own
        )
        check_scalar(self.learn_rate, "learn_rate", float, min_val=0.0, closed="neither", owner=own)
        if (isinstance(self.init, str) and self.init not in _INITS) or (
            not isinstance(self.init, str) and np.ndim(self.init) != 2
        ):
            raise ValueError(
                "`init` must be 'auto', 'pca', 'identity', 'random', 'lda' or a "
                "numpy array of shape (n_components, n_features)."
            )
        if not isinstance(self.init, str):
            self._check_init(np.asarray(self.init))
        verbose = int(check_bool(bool(self.verbose), "verbose", owner=own))
        d = self._n_features
        if self.n_components is not None and not (
            isinstance(self.n_components, int | np.integer) and 1 <= self.n_components <= d
        ):
            raise ValueError(f"Invalid n_components, must be in [1, {d}]")  # metric-learn's
        return dict(
            k=k,
            mu=1.0 - reg,
            max_iter=self.max_iter,
            tol=tol,
            verbose=verbose,
            n_components=self.n_components,
            random_state=self.random_state,
        )

    def fit(self, X, y):
        """Learn the metric from labelled points (or indices, with a preprocessor).

        Parameters
        ----------
        X : array of shape (n, d), or (n,) indices with a preprocessor
            The points.
        y : array of shape (n,)
            Their labels.

        Returns
        -------
        self
            The fitted estimator.
        """
        self._check_preprocessor()
        X = self._points(X)
        self._n_features = np.asarray(X).shape[-1]
        self.lmnn_ = _LMNN(**self._settings()).fit(X, y)
        self.components_ = np.array(self.lmnn_.components_)
        self.n_iter_ = self.lmnn_.n_iter_
        self.n_features_in_ = self.lmnn_.n_features_in_
        record_feature_names(self, X)  # the inner LMNN checks them at transform
        return self

    def _check_init(self, init):
        """An ``init`` array must fit the data, as metric-learn requires (its messages),
        though it does not change the result."""
        d, r = self._n_features, init.shape[0]
        if init.shape[1] != d:
            raise ValueError(
                f"The input dimensionality ({init.shape[-1]}) of the given linear "
                "transformation `init` must match the dimensionality of the "
                f"given inputs `X` ({d})."
            )
        if r > init.shape[1]:
            raise ValueError(
                f"The output dimensionality ({r}) of the given linear "
                "transformation `init` cannot be greater than its input "
                f"dimensionality ({init.shape[1]})."
            )
        if self.n_components is not None and self.n_components != r:
            raise ValueError(
                "The preferred dimensionality of the projected space "
                f"`n_components` ({self.n_components}) does not match the output "
                f"dimensionality of the given linear transformation `init` "
                f"({r})!"
            )

    def _check_preprocessor(self):
        """metric-learn's: set ``preprocessor_``."""
        self.preprocessor_ = self.preprocessor

    def _points(self, X, tuples=False):
        """``X`` itself, or the points its indices name through the preprocessor; with
        metric-learn's messages for inputs of the wrong dimension."""
        p = getattr(self, "preprocessor_", self.preprocessor)
        arr = np.asarray(X)
        indices = p is not None and np.issubdtype(arr.dtype, np.integer)
        want = (2 if tuples else 1) if indices else (3 if tuples else 2)
        if arr.ndim != want:
            what = "tuples" if tuples else "points"
            raise ValueError(
                f"{want}D array of formed {what} expected by LMNN. Found {arr.ndim}D array "
                f"instead:\ninput={arr}. Reshape your data and/or use a preprocessor.\n"
            )
        if tuples and arr.shape[1] != 2:
            raise ValueError(
                f"Tuples of 2 element(s) expected by LMNN. Got tuples of {arr.shape[1]} "
                f"element(s) instead (shape={arr.shape}):\ninput={arr}.\n"
            )
        if not indices:
            return X
        pts = p(arr) if callable(p) else np.asarray(p)[arr]
        return np.asarray(pts, dtype=float)

    def transform(self, X):
        """Embed ``X`` (points, or indices with a preprocessor): ``X Lᵀ``.

        Parameters
        ----------
        X : array of shape (m, d), or (m,) indices with a preprocessor
            The points.

        Returns
        -------
        ndarray of shape (m, n_components)
            The embedded points.
        """
        check_is_fitted(self, "components_")
        return self.lmnn_.transform(self._points(X))

    def _mahalanobis_matrix(self):
        return self.components_.T @ self.components_

    def pair_distance(self, pairs):
        return super().pair_distance(self._points(pairs, tuples=True))

    pair_distance.__doc__ = MahalanobisMixin.pair_distance.__doc__

    def score_pairs(self, pairs):
        """Return :meth:`pair_distance` (metric-learn's deprecated name, with its warning).

        Parameters
        ----------
        pairs : array of shape (n_pairs, 2, n_features)
            The pairs.

        Returns
        -------
        ndarray of shape (n_pairs,)
            The distance of each pair.
        """
        warnings.warn(
            "score_pairs will be deprecated in release 0.7.0. Use pair_score to "
            "compute similarity scores, or pair_distances to compute distances.",
            FutureWarning,
            stacklevel=2,
        )
        return self.pair_distance(pairs)
