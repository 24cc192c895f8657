"""metric-learn's interface for the Mahalanobis learners (LMNN, KernelLMNN, POE).

A learner that maps a point ``x`` to ``L x`` (its ``transform``) defines the distance
``d(u, v) = ‖L(u − v)‖ = sqrt((u − v)ᵀ M (u − v))`` with ``M = LᵀL``. The mixin gives
it metric-learn's four methods, with metric-learn's semantics:

* ``get_mahalanobis_matrix()``: ``M`` (``d × d``);
* ``get_metric()``: a function ``f(u, v, squared=False)`` of two 1-d points, the true
  distance (its square with ``squared=True``), usable as ``metric=`` of scikit-learn's
  neighbour estimators;
* ``pair_distance(pairs)``: distances of the pairs of an ``(n, 2, d)`` array;
* ``pair_score(pairs)``: ``−pair_distance(pairs)`` (higher means more similar).

>>> import numpy as np
>>> from convexmetric import LMNN, datasets
>>> X, y = datasets.load("iris")
>>> m = LMNN(k=3).fit(X, y)
>>> pairs = np.stack([X[:5], X[5:10]], axis=1)     # five pairs, shape (5, 2, 4)
>>> d = m.pair_distance(pairs)
>>> bool(np.allclose(d, [m.get_metric()(u, v) for u, v in pairs]))
True
>>> bool(np.allclose(m.pair_score(pairs), -d))
True
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._input_checks import check_matrix
from ._output import OutputNamesMixin, plain_transform


class MahalanobisMixin(OutputNamesMixin):
    """``get_mahalanobis_matrix``, ``get_metric``, ``pair_distance``, ``pair_score``.

    The host provides ``transform`` (the map ``x ↦ L x``), ``_mahalanobis_matrix()``
    (``M = LᵀL`` on the input space, or a ``ValueError`` saying why there is none) and
    ``_point_map()``: a function of one 1-d point giving its transformed coordinates,
    built on copies of the fitted arrays (so that :meth:`get_metric` is a snapshot).
    """

    @property
    def _n_features_out(self):
        check_is_fitted(self, "components_")
        return self.components_.shape[0]

    #: whether ``_point_map`` is linear (``embed(u) − embed(v) = embed(u − v)``)
    _point_map_is_linear = True

    def _point_map(self):
        L = np.array(self.components_, dtype=float)  # a copy: later fits do not change it
        return L.__matmul__

    def get_mahalanobis_matrix(self):
        """Return the learned Mahalanobis matrix ``M``, as metric-learn does.

        Returns
        -------
        ndarray of shape (d, d)
            The PSD matrix ``M`` of the squared distance ``(u − v)ᵀ M (u − v)``: a copy,
            so editing it leaves the model unchanged.
        """
        check_is_fitted(self)
        return np.array(self._mahalanobis_matrix(), dtype=float)

    def get_metric(self):
        """Return the learned distance as a function of two points.

        Returns
        -------
        callable
            ``metric(u, v, squared=False)`` of two 1-d points returns
            ``sqrt((u − v)ᵀ M (u − v))`` (the squared distance with ``squared=True``), as
            metric-learn's ``get_metric``; pass it as ``metric=`` to scikit-learn's
            ``KNeighborsClassifier`` or ``pairwise_distances``. A snapshot: it holds
            copies of the fitted arrays, so refitting the estimator does not change it.
        """
        check_is_fitted(self)
        embed, linear = self._point_map(), self._point_map_is_linear
        asarray, dot, sqrt = np.asarray, np.dot, np.sqrt

        def metric(u, v, squared=False):
            u, v = asarray(u, dtype=float), asarray(v, dtype=float)
            if u.ndim != 1 or v.ndim != 1:
                u, v = _vector(u, v)
            du = embed(u - v) if linear else embed(u) - embed(v)
            d2 = float(dot(du, du))
            return d2 if squared else float(sqrt(d2))

        return metric

    def pair_distance(self, pairs):
        """Compute the distances ``sqrt((u − v)ᵀ M (u − v))`` of the pairs ``(u, v)``.

        Parameters
        ----------
        pairs : array of shape (n_pairs, 2, n_features)
            The pairs, ``pairs[:, 0]`` the points ``u`` and ``pairs[:, 1]`` the ``v``.

        Returns
        -------
        ndarray of shape (n_pairs,)
            The distance of each pair under the learned metric.
        """
        check_is_fitted(self)
        P = check_matrix(pairs, "pairs", ndim=3)
        if P.shape[1] != 2:
            raise ValueError(
                f"'pairs' must have shape (n_pairs, 2, n_features); got shape {P.shape}."
            )
        Z = plain_transform(self, P.reshape(-1, P.shape[2])).reshape(P.shape[0], 2, -1)
        diff = Z[:, 0] - Z[:, 1]
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))

    def pair_score(self, pairs):
        """Score pairs by ``−pair_distance(pairs)``: higher means more similar.

        Parameters
        ----------
        pairs : array of shape (n_pairs, 2, n_features)
            The pairs, as in :meth:`pair_distance`.

        Returns
        -------
        ndarray of shape (n_pairs,)
            Minus the distance of each pair (metric-learn's convention).
        """
        return -self.pair_distance(pairs)


def _vector(u, v):
    """Two points as 1-d arrays, as scipy.spatial.distance's ``validate_vector`` takes them
    (lists, ``(1, d)`` rows, scalars); a clear error otherwise."""
    u, v = np.atleast_1d(np.squeeze(u)), np.atleast_1d(np.squeeze(v))
    if u.ndim != 1 or v.ndim != 1:
        raise ValueError(
            f"the metric takes two 1-dimensional points; got shapes {u.shape} and {v.shape}."
        )
    return u, v


def kernel_point_map(kind, X_train, gamma, components):
    """The map ``x ↦ L k(x)`` of one point, on copies of the fitted arrays.

    ``kind``: ``"linear"`` (``k(x) = X x``), ``"rbf"`` (``exp(−γ‖x_i − x‖²)``), or
    ``None``/``"precomputed"`` (the point is already its features or kernel row).
    """
    L = np.array(components, dtype=float)
    if kind in (None, "precomputed"):
        return L.__matmul__
    X = np.array(X_train, dtype=float)
    if kind == "linear":
        LX = L @ X
        return LX.__matmul__
    sq = np.einsum("ij,ij->i", X, X)
    g = float(gamma)

    def embed(x):
        return L @ np.exp(-g * np.maximum(sq - 2.0 * (X @ x) + x @ x, 0.0))

    return embed
