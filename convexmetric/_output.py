"""Output feature names and ``set_output`` for every transformer.

:class:`OutputNamesMixin` gives scikit-learn's ``get_feature_names_out`` (names
``<estimator name in lower case><i>``, as PCA's ``pca0, pca1, …``) and, through
scikit-learn's output wrapping, ``set_output(transform="pandas")``. A transformer defines
``_n_features_out`` (the width of its ``transform``).

Once ``set_output`` asks for pandas, ``transform`` returns a DataFrame; the estimators'
own methods that need arrays (``pair_distance``, ``similarity``, …) call
:func:`plain_transform`, which always returns the array.

>>> import numpy as np
>>> from convexmetric import LMNN
>>> X = np.r_[np.eye(3), np.eye(3) + 0.1]; y = [0, 1, 2, 0, 1, 2]
>>> LMNN(k=1).fit(X, y).get_feature_names_out().tolist()
['lmnn0', 'lmnn1', 'lmnn2']
"""

from __future__ import annotations

from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils._set_output import _SetOutputMixin


class OutputNamesMixin(ClassNamePrefixFeaturesOutMixin, _SetOutputMixin):
    """``get_feature_names_out`` and ``set_output`` (module docstring)."""


def plain_transform(est, X):
    """``est.transform(X)`` as an array, whatever ``set_output`` asked for."""
    method = type(est).transform
    return getattr(method, "__wrapped__", method)(est, X)
