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

from ._validation import check_matrix


class MahalanobisMixin:
    """``get_mahalanobis_matrix``, ``get_metric``, ``pair_distance``, ``pair_score``.

    The host provides ``transform`` (the map ``x ↦ L x``) and ``_mahalanobis_matrix()``
    (``M = LᵀL`` on the input space, or a ``ValueError`` saying why there is none).
    """

    def get_mahalanobis_matrix(self):
        """Return the learned Mahalanobis matrix ``M``, as metric-learn does.

        Returns
        -------
        ndarray of shape (d, d)
            The PSD matrix ``M`` of the squared distance ``(u − v)ᵀ M (u − v)``.
        """
        check_is_fitted(self)
        return self._mahalanobis_matrix()

    def get_metric(self):
        """Return the learned distance as a function of two points.

        Returns
        -------
        callable
            ``metric(u, v, squared=False)`` of two 1-d points returns
            ``sqrt((u − v)ᵀ M (u − v))`` (the squared distance with ``squared=True``), as
            metric-learn's ``get_metric``; pass it as ``metric=`` to scikit-learn's
            ``KNeighborsClassifier`` or ``pairwise_distances``.
        """
        check_is_fitted(self)
        transform = self.transform

        def metric(u, v, squared=False):
            u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
            if u.ndim != 1 or v.ndim != 1:
                raise ValueError(
                    f"the metric takes two 1-dimensional points; got shapes {u.shape} and "
                    f"{v.shape}."
                )
            du = transform(u[None, :])[0] - transform(v[None, :])[0]
            d2 = float(du @ du)
            return d2 if squared else float(np.sqrt(d2))

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
        Z = self.transform(P.reshape(-1, P.shape[2])).reshape(P.shape[0], 2, -1)
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
