"""Preprocessing that a saved model carries: per-feature affine maps of the inputs.

The command line standardises the training part (and Maurer's commands scale the
points to diameter 1, as §6 of the paper assumes); a model saved by
:func:`convexmetric.model_io.save_model` records the composed map
``x ↦ (x − mean) / scale`` and applies it to new points, so a library user who fits
``make_pipeline(StandardScaler(), DiameterScaler(), OperatorSimilarity())`` (or passes
``preprocessing=[scaler, ...]``) gets the same model back from
:func:`~convexmetric.model_io.load_model`.

>>> import numpy as np
>>> X = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
>>> s = DiameterScaler().fit(X)
>>> round(s.diameter_, 4), affine([s], 2)[1].tolist() == [s.diameter_] * 2
(2.9814, True)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._feature_names import check_feature_names, record_feature_names
from ._input_checks import check_matrix


class DiameterScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Divide the points by the diameter of their set, without centring them.

    The diameter is ``2·max‖x − x̄‖`` (Maurer §6: inputs in a ball of diameter 1).

    Attributes
    ----------
    diameter_ : float
        ``2·max_i ‖x_i − x̄‖`` of the fitted points (1.0 if they coincide).
    n_features_in_ : int
    """

    def fit(self, X, y=None):
        """Measure the diameter of ``X``.

        Parameters
        ----------
        X : array of shape (n, d)
            The points.
        y : None
            Ignored (scikit-learn's signature).

        Returns
        -------
        DiameterScaler
            The fitted scaler.
        """
        record_feature_names(self, X)
        X = check_matrix(X, "X")
        r = float(np.linalg.norm(X - X.mean(0), axis=1).max())
        self.diameter_ = 2.0 * r if r > 0 else 1.0
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        """Divide ``X`` by the fitted diameter.

        Parameters
        ----------
        X : array of shape (m, d)
            Points of the fitted number of features.

        Returns
        -------
        ndarray of shape (m, d)
            ``X / diameter_``.
        """
        check_is_fitted(self, "diameter_")
        check_feature_names(self, X)
        X = check_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"'X' has {X.shape[1]} features but DiameterScaler was fitted on "
                f"{self.n_features_in_}."
            )
        return X / self.diameter_


def standardize_unless_sparse(X):
    """Return the scaler that the bilinear learners' inputs go through.

    Parameters
    ----------
    X : array or scipy sparse matrix of shape (n, d)
        The training points.

    Returns
    -------
    StandardScaler or None
        A fitted ``StandardScaler`` for dense ``X``; None for a sparse matrix (kept as
        it is, its zeros intact).
    """
    if sp.issparse(X):
        return None
    from sklearn.preprocessing import StandardScaler

    return StandardScaler().fit(X)


def _step_affine(step, d):
    """``(mean, scale)`` of one fitted per-feature step (x ↦ (x − mean) / scale)."""
    if isinstance(step, dict):
        return np.asarray(step["mean"], dtype=float), np.asarray(step["scale"], dtype=float)
    if isinstance(step, DiameterScaler):
        check_is_fitted(step, "diameter_")
        return np.zeros(d), np.full(d, step.diameter_)
    if hasattr(step, "scale_") and hasattr(step, "mean_"):  # StandardScaler and its kind
        mean, scale = step.mean_, step.scale_
        mean = np.zeros(d) if mean is None else np.asarray(mean, dtype=float)
        scale = np.ones(d) if scale is None else np.asarray(scale, dtype=float)
        return mean, scale
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return np.zeros(d), np.ones(d)
    raise ValueError(
        f"cannot save the preprocessing step {type(step).__name__}: a saved model keeps "
        "per-feature affine maps only (StandardScaler, DiameterScaler, or a dict with "
        "arrays 'mean' and 'scale')."
    )


def affine(steps, d):
    """Compose fitted per-feature steps, applied in order, into one affine map.

    Parameters
    ----------
    steps : sequence
        Fitted ``StandardScaler``, :class:`DiameterScaler`, ``"passthrough"``/None, or
        dicts with arrays ``"mean"`` and ``"scale"``.
    d : int
        The number of features.

    Returns
    -------
    mean : ndarray of shape (d,)
        The offset of the composed map.
    scale : ndarray of shape (d,)
        Its divisor: ``x ↦ (x − mean) / scale`` equals applying every step in turn.
    """
    mean, scale = np.zeros(d), np.ones(d)
    for step in steps:
        m, s = _step_affine(step, d)
        # ((x − mean)/scale − m)/s = (x − (mean + m·scale)) / (scale·s)
        mean, scale = mean + m * scale, scale * s
    return mean, scale


__all__ = ["DiameterScaler", "affine", "standardize_unless_sparse"]
