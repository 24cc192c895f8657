"""Columns by name: ``feature_names_in_`` recorded at fit and checked afterwards.

As scikit-learn does: a fit on a DataFrame whose column names are all strings records
them in ``feature_names_in_`` (an object array); ``transform``, ``predict`` and ``score``
given a DataFrame with other names, or the same names in another order, raise a
ValueError instead of reading the columns by position (which would silently give other
answers); a DataFrame given to an estimator fitted on an array draws scikit-learn's
UserWarning. Arrays are taken by position, as always (the estimators pass arrays
among themselves, so an array after a fit on a DataFrame draws no warning).

>>> import pandas as pd
>>> from convexmetric.preprocessing import DiameterScaler
>>> df = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 4.0]})
>>> DiameterScaler().fit(df).feature_names_in_
array(['a', 'b'], dtype=object)
>>> DiameterScaler().fit(df).transform(df[["b", "a"]])
Traceback (most recent call last):
...
ValueError: 'X' has the columns of the fit in another order; ...
"""

from __future__ import annotations

import warnings

import numpy as np


def column_names(X):
    """The string column names of a DataFrame-like ``X`` (object array), else None.

    Mixed or non-string names count as none, as in scikit-learn (which raises on mixed
    types; here they are read by position, as an array's columns are).
    """
    cols = getattr(X, "columns", None)
    if cols is None or getattr(X, "ndim", 2) != 2:
        return None
    names = list(cols)
    if not names or not all(isinstance(c, str) for c in names):
        return None
    return np.asarray(names, dtype=object)


def record_feature_names(est, X):
    """At fit: set ``est.feature_names_in_`` from ``X``'s columns, or remove an earlier
    fit's names when ``X`` has none."""
    names = column_names(X)
    if names is not None:
        est.feature_names_in_ = names
    elif hasattr(est, "feature_names_in_"):
        del est.feature_names_in_


def _listed(names, limit=5):
    shown = ", ".join(repr(str(n)) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_feature_names(est, X, name="X"):
    """After fit: raise a ValueError naming ``name`` when ``X``'s columns are not, in
    order, the ones of the fit (only when both have names)."""
    names = column_names(X)
    if names is None:
        return
    fitted = getattr(est, "feature_names_in_", None)
    owner = type(est).__name__
    if fitted is None:
        warnings.warn(
            f"{name} has feature names, but {owner} was fitted without feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if len(names) == len(fitted) and np.all(names == fitted):
        return
    unseen = [n for n in names if n not in set(fitted)]
    missing = [n for n in fitted if n not in set(names)]
    if not unseen and not missing:
        problem = "has the columns of the fit in another order"
    else:
        parts = [f"names unseen at fit: {_listed(unseen)}"] if unseen else []
        parts += [f"names seen at fit but missing: {_listed(missing)}"] if missing else []
        problem = "has other columns than the fit (" + "; ".join(parts) + ")"
    raise ValueError(
        f"'{name}' {problem}; {owner} reads columns by position, so they must be the "
        f"fit's, in order: {_listed(list(fitted), 10)}. Select them as "
        f"{name}[estimator.feature_names_in_]."
    )


__all__ = ["check_feature_names", "column_names", "record_feature_names"]
