"""What OperatorSimilarity and HyperbolicPCA share: pairs, kernels, transform, scoring."""

from __future__ import annotations

import logging

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.metrics import roc_auc_score

from .. import kernels as _kernels
from .._feature_names import check_feature_names, record_feature_names
from .._input_checks import check_choice, check_matrix, check_new_data, check_scalar
from .._output import OutputNamesMixin, plain_transform
from .pairs import Pairs, balanced_pairs, label_pairs

logger = logging.getLogger("convexmetric.maurer")

ORACLES = {"balanced": balanced_pairs, "labels": label_pairs}
KERNELS = {"maurer": _kernels.maurer_kernel, "linear": None}


class _PairOperator(OutputNamesMixin, TransformerMixin, BaseEstimator):
    """Shared plumbing: pairs from the input, kernels, transform and pair predictions."""

    @property
    def _n_features_out(self):
        if not hasattr(self, "coef_"):
            raise AttributeError("not fitted")
        return self.coef_.shape[1]

    def _pairs(self, X, y, *, fitting=False):
        """The pairs of ``Pairs`` or drawn from ``X, y``; at fit (``fitting``) ``X``'s
        column names are recorded, afterwards checked (:mod:`.._feature_names`)."""
        name = type(self).__name__
        if fitting:
            record_feature_names(self, X)
        else:
            check_feature_names(self, X)
        if isinstance(X, Pairs):
            if y is not None:
                raise ValueError(f"{name}.fit takes either a Pairs object or X, y; not both.")
            return X.require_both()
        if y is None:
            raise ValueError(f"{name}.fit needs labels 'y' (or a Pairs object as 'X').")
        check_choice(self.oracle, "oracle", tuple(ORACLES), owner=name)
        n_pairs = check_scalar(self.n_pairs, "n_pairs", int, min_val=2, owner=name)
        X = check_matrix(X, "X", min_rows=2)
        pairs = ORACLES[self.oracle](X, y, n_pairs, random_state=self.random_state)
        # the pairs the oracle drew, as (i, j, r) rows of X: a fit from X, y is then
        # checkable whatever its random_state (the verifier tests them against y)
        self.pairs_ = np.column_stack([pairs.i, pairs.j, pairs.r]).astype(np.int64)
        return pairs.require_both()

    def _kernel(self):
        k = self.kernel
        if k is None or k == "linear":
            return None
        if callable(k):
            return k
        check_choice(k, "kernel", (None, *KERNELS, "<callable>"), owner=type(self).__name__)
        return KERNELS[k]

    def _embed(self, Z):
        Z = check_new_data(self, Z)
        return Z if self.kernel_fn_ is None else self.kernel_fn_(Z, self.points_)

    def _finish(self, coef, gram):
        """Rotate ``T = coefᵀ·`` to principal axes; ``gram = coefᵀ G coef`` with G = K or I."""
        w, E = np.linalg.eigh(0.5 * (gram + gram.T))
        w, E = w[::-1], E[:, ::-1]
        keep = w > 1e-12 * max(float(w[0]), 1e-300)
        self.coef_ = coef @ E[:, keep]
        self.singular_values_ = np.sqrt(w[keep])
        self.components_ = self.coef_.T if self.kernel_fn_ is None else None

    @property
    def metric_(self):
        return self.coef_ @ self.coef_.T

    def transform(self, X):
        """Map the rows of ``X`` to ``T x`` (principal axes, by singular value).

        Parameters
        ----------
        X : array of shape (n, d)
            The points.

        Returns
        -------
        ndarray of shape (n, r)
            Their images under the learned operator.
        """
        return self._embed(X) @ self.coef_

    def pair_distances(self, x, x_prime=None):
        """Compute ``‖T(x − x')‖²`` for pairs given as a Pairs object or two arrays.

        Parameters
        ----------
        x : Pairs or array of shape (m, d)
            The pairs, or the first points of the pairs.
        x_prime : array of shape (m, d), optional
            The second points (with an array ``x``).

        Returns
        -------
        ndarray of shape (m,)
            The squared distances.
        """
        if isinstance(x, Pairs):
            Z = plain_transform(self, x.points)
            return np.sum((Z[x.i] - Z[x.j]) ** 2, axis=1)
        diff = plain_transform(self, x) - plain_transform(self, x_prime)
        return np.sum(diff**2, axis=1)

    def predict_pairs(self, x, x_prime=None):
        """Verify pairs: ``sgn(1 − ‖T(x − x')‖)`` (Definition 1).

        Parameters
        ----------
        x : Pairs or array of shape (m, d)
            The pairs, or the first points of the pairs.
        x_prime : array of shape (m, d), optional
            The second points (with an array ``x``).

        Returns
        -------
        ndarray of shape (m,)
            +1 similar, −1 dissimilar, 0 undecided.
        """
        return np.sign(1.0 - self.pair_distances(x, x_prime))

    def score(self, X, y=None):
        """Score by the ROC AUC of ``−‖T(x − x')‖²`` as a detector of similar pairs.

        The pairs are drawn by the estimator's oracle (``n_pairs``, ``random_state``): the
        same pairs for every candidate of a grid search. Higher is better.

        Parameters
        ----------
        X : Pairs or array of shape (n, d)
            The pairs, or points from which pairs are drawn.
        y : array of shape (n,), optional
            The labels of the points.

        Returns
        -------
        float
            The ROC AUC.
        """
        pairs = self._pairs(X, y)
        return float(roc_auc_score(pairs.r > 0, -self.pair_distances(pairs)))

    def _setup(self, pairs):
        self.points_ = pairs.points
        self.n_features_in_ = pairs.dim
        self.kernel_fn_ = self._kernel()
