"""What the three LMNN estimators share: parameters, data checks, targets and prediction.

:class:`LMNNBaseEstimator` is the one base of :class:`~convexmetric.LMNN`,
:class:`~convexmetric.KernelLMNN` and :class:`~convexmetric.MultiMetricLMNN`. It
validates the shared parameters (``k``, ``mu``, ``solver``, ``max_iter``, ``tol``,
``time_limit``, ``predict_k``, ``verbose``, ``conic_solver``) and the labelled data once,
chooses the target neighbours, and gives :meth:`~LMNNBaseEstimator.predict`,
:meth:`~LMNNBaseEstimator.loo_error` and :meth:`~LMNNBaseEstimator.energy_predict` (eq. 15) one
implementation each. A subclass supplies the learned geometry through three hooks:

* ``_embed(Q)``: the coordinates of validated queries where Euclidean distance is the
  learned one (``None`` for a learner without one, such as several metrics);
* ``_train_embedding()``: those coordinates of the training points;
* ``_energy_inputs(Q)``: the keyword arguments of
  :func:`~convexmetric.lmnn.energy.energy_predict` for the queries.

**Small classes.** Eq. (14) sums, for every point, over its own target neighbours, so
the target sets may differ in size. A point of a class with ``m ≤ k`` members gets the
``m − 1`` others as targets; every other point keeps ``k``. The fit warns
(:class:`SmallClassWarning`, naming each such class and its number of targets); ``k_``
stays the number of target slots per row, and ``targets_`` pads the short rows with the
point itself (:func:`convexmetric.neighbors.target_neighbors`; a padded slot is no
target: zero pull, no hinge term). A class of one point has no target neighbour at all
(its row is all padding: no pull term, no triplet ``(i, j, l)`` with it as ``i``), and
is still an impostor ``l`` for every point of the other classes, as in eq. (14), where
``l`` runs over all points of other classes. Only data where no class has two members
(no term at all) are refused.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._feature_names import record_feature_names
from .._input_checks import check_choice, check_labels, check_matrix, check_new_data, check_scalar
from .._renamed import DEPRECATED, REMOVED_IN, is_deprecated, renamed
from .._verbose import check_verbose
from ..neighbors import knn_predict, sqdist, vote
from .blocks.predict import energy_chunk, knn_chunk, predict_blocks

logger = logging.getLogger("convexmetric.lmnn")


_N_NEIGHBORS = (
    " It only ever set the k of predict, never the target neighbours: those are 'k' "
    "(metric-learn's n_neighbors; convexmetric.metric_learn.LMNN takes metric-learn's names)."
)


#: the spread of ``X`` (its largest centred entry) a metric can learn in float64: data
#: at scale ``c`` need a metric near ``c⁻²`` (eq. (14)'s margin is 1), whose entries and
#: products must stay far inside float64's ``[1e-308, 1e308]``
SPREAD_RANGE = (1e-120, 1e120)


def check_spread(X, kernel=False):
    """ValueError naming ``X`` when its spread leaves :data:`SPREAD_RANGE` (a kernel
    matrix is exempt: its entries are what they are)."""
    if kernel:
        return
    spread = float(np.abs(X - X.mean(axis=0)).max(initial=0.0))
    lo, hi = SPREAD_RANGE
    if spread and not lo <= spread <= hi:
        raise ValueError(
            f"'X' has a spread of {spread:.3g}: the metric LMNN learns on it would need "
            f"entries near 1e{-2 * np.log10(spread):.0f}, beyond what float64 holds well. "
            f"Rescale X (the problem is scale-covariant): a spread within "
            f"[{lo:g}, {hi:g}] is learned exactly as at scale 1."
        )


class SmallClassWarning(UserWarning):
    """A class has ``k`` members or fewer: its points get fewer target neighbours.

    A class of one member gets none: that point is only an impostor for the other
    classes.
    """


def knn_from_distances(D, y_enc, k, *, exclude=None):
    """kNN votes (paper's tie rule) from a query×train distance block."""
    if exclude is not None:
        D = D.copy()
        D[np.arange(D.shape[0]), exclude] = np.inf
    nn = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.array([vote(row) for row in y_enc[nn]], dtype=np.int64)


def targets_k(k, counts, classes, owner):
    """The target slots per row (``k``) for class sizes ``counts``; a class of ``m ≤ k``
    members gets ``m − 1`` targets (none for one member), with a
    :class:`SmallClassWarning` (module docstring). ValueError naming ``y`` when no class
    has two members: eq. (14) then has no target, hence no term."""

    def name(c):
        c = classes[c]
        return c.item() if hasattr(c, "item") else c

    if counts.max(initial=0) < 2:
        raise ValueError(
            f"no class of 'y' has two members: no point has a target neighbour, so eq. (14) "
            f"has no term. {owner} needs at least one class of two points or more (and "
            "another class for its impostors)."
        )
    small = np.flatnonzero(counts <= k)
    if len(small):
        each = "; ".join(_small_class_note(name(c), int(counts[c]), k) for c in small)
        warnings.warn(
            f"{owner}: {each}. Every other point keeps k={k} (eq. (14) sums over each "
            "point's own targets).",
            SmallClassWarning,
            stacklevel=3,
        )
    return k


def _small_class_note(c, m, k):
    """What :func:`targets_k` says of class ``c`` with ``m ≤ k`` members."""
    if m == 1:
        return (
            f"class {c!r} of 'y' has a single member: it has no target neighbour (no "
            "pull term, no triplet of its own) and is an impostor for the other classes"
        )
    s = "s" if m > 2 else ""
    return (
        f"class {c!r} of 'y' has {m} members, fewer than k + 1 = {k + 1}: its points "
        f"get {m - 1} target neighbour{s}"
    )


class LMNNBaseEstimator(ClassifierMixin, BaseEstimator):
    """The base of the LMNN estimators (module docstring); not for direct use."""

    #: solvers the estimator offers
    _solvers = ("subgradient", "exact")

    def _check_shared_params(self):
        """Validate the parameters every LMNN estimator takes; set ``predict_k_``."""
        name = type(self).__name__
        check_scalar(self.k, "k", int, min_val=1, owner=name)
        check_scalar(self.mu, "mu", float, min_val=0.0, max_val=1.0, owner=name)
        check_choice(self.solver, "solver", self._solvers, owner=name)
        check_scalar(self.max_iter, "max_iter", int, min_val=1, owner=name)
        check_scalar(self.tol, "tol", float, min_val=0, closed="neither", owner=name)
        if self.time_limit is not None:
            check_scalar(
                self.time_limit, "time_limit", float, min_val=0, closed="neither", owner=name
            )
        if hasattr(self, "conic_solver"):
            check_choice(
                str(self.conic_solver).upper(), "conic_solver", ("CLARABEL", "SCS"), owner=name
            )
        check_verbose(self.verbose, name)
        predict_k = renamed(self, "n_neighbors", "predict_k", hint=_N_NEIGHBORS)
        if predict_k is not None:
            check_scalar(predict_k, "predict_k", int, min_val=1, owner=name)
        self._predict_k = predict_k

    def _check_data(self, X, y, *, kernel=False):
        """Validated ``X``, encoded labels (``classes_`` set) and the class sizes."""
        n_x = X.shape[0] if hasattr(X, "shape") else len(X) if hasattr(X, "__len__") else None
        n_y = len(y) if hasattr(y, "__len__") else None
        if n_x is not None and n_y is not None and n_x != n_y:
            raise ValueError(f"'y' has {n_y} labels but 'X' has {n_x} rows; they must match.")
        X_in, X = X, check_matrix(X, "X", min_rows=2)
        y = check_labels(y, X.shape[0], column_ok=True)
        X, y = validate_data(self, X, y, ensure_min_samples=2, dtype=np.float64)
        record_feature_names(self, X_in)
        check_classification_targets(y)
        check_spread(X, kernel)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"'y' has a single class ({self.classes_[0].item()!r}); "
                f"{type(self).__name__} needs at least two classes (impostors are points of "
                "other classes)."
            )
        return X, y_enc, np.bincount(y_enc)

    def _set_k(self, counts):
        """``k_``: the target slots per row this fit uses (see the module docstring)."""
        self.k_ = targets_k(int(self.k), counts, self.classes_, type(self).__name__)
        self.predict_k_ = int(self._predict_k or self.k)
        return self.k_

    # -- the hooks (subclasses) ------------------------------------------------------
    def _embed(self, Q):  # pragma: no cover - overridden
        return None

    def _train_embedding(self):  # pragma: no cover - overridden
        return None

    def _executor(self):
        return None

    def _queries(self, X):
        check_is_fitted(self, "targets_")
        return check_new_data(self, X)

    def _distances(self, Q):
        """Squared learned distances of the queries ``Q`` to every training point."""
        return sqdist(self._embed(Q), self._train_embedding())

    # -- prediction, written once ----------------------------------------------------
    def predict(self, X):
        """Predict kNN labels under the learned metric (ties: reduce k until they break).

        Parameters
        ----------
        X : array of shape (m, d)
            New points (for ``KernelLMNN(kernel="precomputed")``: their kernel rows).

        Returns
        -------
        ndarray of shape (m,)
            The predicted labels (``predict_k`` neighbours; default ``k``).
        """
        Q = self._queries(X)
        k = self.predict_k_
        Z = self._embed(Q)
        if Z is None:  # no single embedding: from the distances, by row blocks
            pred = (
                np.concatenate(
                    [
                        knn_from_distances(self._distances(Q[s : s + 512]), self._y, k)
                        for s in range(0, len(Q), 512)
                    ]
                )
                if len(Q)
                else np.empty(0, np.int64)
            )
        else:
            train = (self._train_embedding(), self._y)
            pred = predict_blocks(knn_chunk, train, Z, self._executor(), k=k)
        return self.classes_[pred]

    def score(self, X, y, sample_weight=None):
        """Return the kNN accuracy on ``X, y``: the fraction of rows :meth:`predict` gets right.

        The vote is :meth:`predict`'s: the ``predict_k`` nearest training points under
        the learned metric (default ``k``), a tie broken by reducing the vote's size until
        it breaks. This is ``1 −`` the kNN test error of the paper's tables, and what
        ``GridSearchCV`` maximises by default.

        Parameters
        ----------
        X : array of shape (m, d)
            Test points (for ``KernelLMNN(kernel="precomputed")``: their kernel rows).
        y : array of shape (m,)
            Their true labels.
        sample_weight : array of shape (m,), optional
            Weights of the rows in the mean.

        Returns
        -------
        float
            The (weighted) fraction of correctly classified rows, in [0, 1].
        """
        return super().score(X, y, sample_weight=sample_weight)

    def loo_error(self, predict_k=None, *, k=DEPRECATED):
        """Compute the leave-one-out kNN error on the training data under the metric.

        Parameters
        ----------
        predict_k : int, optional
            Neighbours of the vote (default ``predict_k_``: ``predict_k``, else ``k``).
        k : int, optional
            Deprecated: the old name of ``predict_k`` (``k`` is the target neighbours).

        Returns
        -------
        float
            The fraction of training points misclassified by their neighbours.
        """
        check_is_fitted(self, "targets_")
        if not is_deprecated(k):
            if predict_k is not None:
                raise ValueError("loo_error got both 'k' and 'predict_k'; pass only predict_k.")
            warnings.warn(
                f"The 'k' parameter of loo_error was renamed 'predict_k' in 0.2 and 'k' will "
                f"be removed in {REMOVED_IN}; pass predict_k={k!r} instead.",
                FutureWarning,
                stacklevel=2,
            )
            predict_k = k
        kk = self.predict_k_
        if predict_k is not None:
            kk = check_scalar(predict_k, "predict_k", int, min_val=1)
        Z = self._train_embedding()
        if Z is not None:
            pred = knn_predict(Z, self._y, Z, kk, exclude_self=True)
        else:
            Q, n = self._X, len(self._y)
            pred = np.concatenate(
                [
                    knn_from_distances(
                        self._distances(Q[s : s + 512]),
                        self._y,
                        kk,
                        exclude=np.arange(s, min(s + 512, n)),
                    )
                    for s in range(0, n, 512)
                ]
            )
        return float(np.mean(pred != self._y))

    def energy_predict(self, X):
        """Predict energy-based labels (§3.5, eq. 15) under the learned metric.

        Parameters
        ----------
        X : array of shape (m, d)
            New points.

        Returns
        -------
        ndarray of shape (m,)
            The labels of least energy.
        """
        Q = self._queries(X)
        train, (Xq, tc) = self._energy_inputs(Q)
        pred = predict_blocks(energy_chunk, train, (Xq, tc), self._executor())
        return self.classes_[pred]

    def _energy_inputs(self, Q):
        """``(training keyword arguments, (test rows, test clusters))`` of eq. (15)."""
        train = dict(
            X_train=self._X,
            y_train=self._y,
            targets=self.targets_,
            components=self.components_,
            mu=float(self.mu),
        )
        return train, (Q, None)
