"""Input validation at the library boundary, with scikit-learn-style messages.

Every public entry point validates once, here; inner code trusts its inputs.
Messages name the argument, the allowed range and the value received:

>>> check_scalar(0, "k", int, min_val=1, owner="LMNN")
Traceback (most recent call last):
...
ValueError: The 'k' parameter of LMNN must be an int in the range [1, inf). Got 0 instead.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from ._feature_names import check_feature_names


def _range_text(min_val, max_val, closed):
    lo = "-inf" if min_val is None else repr(min_val)
    hi = "inf" if max_val is None else repr(max_val)
    left = "[" if closed in ("both", "left") and min_val is not None else "("
    right = "]" if closed in ("both", "right") and max_val is not None else ")"
    return f"{left}{lo}, {hi}{right}"


def check_scalar(value, name, kind, *, min_val=None, max_val=None, closed="both", owner=None):
    """Check a scalar parameter's type and range; return it (ints as ``int``).

    ``kind`` is ``int`` or ``float`` (a float parameter accepts ints).
    ``closed`` is one of "both", "left", "right", "neither".
    """
    who = f" of {owner}" if owner else ""
    type_name = "an int" if kind is int else "a float"
    rng = _range_text(min_val, max_val, closed)
    msg = (
        f"The '{name}' parameter{who} must be {type_name} in the range {rng}. "
        f"Got {value!r} instead."
    )
    if kind is int:
        ok_type = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    else:
        ok_type = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok_type:
        raise ValueError(msg)
    if not np.isfinite(float(value)):
        raise ValueError(msg)
    lo_closed = closed in ("both", "left")
    hi_closed = closed in ("both", "right")
    if min_val is not None and (value < min_val or (value == min_val and not lo_closed)):
        raise ValueError(msg)
    if max_val is not None and (value > max_val or (value == max_val and not hi_closed)):
        raise ValueError(msg)
    return int(value) if kind is int else float(value)


def check_choice(value, name, choices, *, owner=None):
    """Check that ``value`` is one of ``choices``."""
    if value not in choices:
        who = f" of {owner}" if owner else ""
        opts = ", ".join(repr(c) for c in choices)
        raise ValueError(
            f"The '{name}' parameter{who} must be one of {opts}. Got {value!r} instead."
        )
    return value


def check_matrix(
    X, name="X", *, ndim=2, min_rows=1, dtype=float, allow_sparse=False, promote_1d=False
):
    """Return ``X`` as a finite float array of the given ``ndim``.

    With ``promote_1d`` (and ``ndim=2``), a 1-d vector is taken as a single row.

    Raises ``ValueError`` naming ``name`` for wrong dimensionality, too few rows,
    non-numeric or complex data (never silently dropping an imaginary part), NaN or inf.
    """
    try:
        import scipy.sparse as sp

        if sp.issparse(X):
            if not allow_sparse:
                raise ValueError(f"'{name}' must be a dense array; got a sparse matrix.")
            if X.dtype.kind not in "biuf":
                raise ValueError(f"'{name}' must be a real numeric matrix; got dtype {X.dtype}.")
            X = sp.csr_matrix(X, dtype=dtype)
            if not np.all(np.isfinite(X.data)):
                raise ValueError(f"'{name}' contains NaN or infinity.")
            if X.shape[0] < min_rows:
                raise ValueError(f"'{name}' must have at least {min_rows} rows; got {X.shape[0]}.")
            return X
    except ImportError:  # pragma: no cover
        pass
    msg = f"'{name}' must be a real numeric array"
    try:
        raw = np.asarray(X)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{msg}: {exc}") from None
    if raw.dtype.kind == "c":
        raise ValueError(f"{msg}: Complex data not supported (dtype {raw.dtype}).")
    if raw.dtype.kind not in "biufO":
        raise ValueError(f"{msg}; got dtype {raw.dtype}.")
    try:
        arr = np.asarray(raw, dtype=dtype)
    except TypeError as exc:  # an object entry that is no number (scikit-learn: TypeError)
        raise TypeError(f"{msg}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{msg}: {exc}") from None
    if promote_1d and ndim == 2 and arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != ndim:
        hint = " Reshape your data (one row per sample)." if ndim == 2 else ""
        raise ValueError(
            f"'{name}' must be a {ndim}-dimensional array; got shape {arr.shape}.{hint}"
        )
    # the wording after the name is scikit-learn's (its estimator checks match on it)
    if arr.shape[0] < min_rows:
        raise ValueError(
            f"'{name}' has {arr.shape[0]} sample(s) (shape={arr.shape}) while a minimum of "
            f"{min_rows} is required."
        )
    if ndim == 2 and arr.shape[1] < 1:
        raise ValueError(
            f"'{name}' has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinity.")
    return arr


def check_new_data(est, X, name="X"):
    """``X`` given to a fitted estimator: a finite real 2-d array with the fitted width
    and, for a DataFrame, the fitted columns by name (:mod:`._feature_names`)."""
    check_feature_names(est, X, name)
    X = check_matrix(X, name)
    n = getattr(est, "n_features_in_", None)
    if n is not None and X.shape[1] != n:
        raise ValueError(
            f"'{name}' has the wrong width: {name} has {X.shape[1]} features, but "
            f"{type(est).__name__} is expecting {n} features as input."
        )
    return X


def check_bool(value, name, *, owner=None):
    """Check that ``value`` is a bool (Python or numpy); return it as ``bool``."""
    if not isinstance(value, bool | np.bool_):
        who = f" of {owner}" if owner else ""
        raise ValueError(f"The '{name}' parameter{who} must be a bool. Got {value!r} instead.")
    return bool(value)


def check_labels(y, n, name="y", *, min_classes=None, owner=None, column_ok=False):
    """Return ``y`` as a 1-d array of length ``n`` (any hashable labels).

    With ``min_classes``, also require that many distinct labels. With ``column_ok``,
    an ``(n, 1)`` column is raveled with scikit-learn's ``DataConversionWarning``.
    """
    if y is None:
        raise ValueError(f"'{name}' is missing: requires y to be passed, but the target y is None.")
    try:
        arr = np.asarray(y)
    except ValueError as exc:
        raise ValueError(f"'{name}' must be a 1-dimensional array of labels: {exc}") from None
    if column_ok and arr.ndim == 2 and arr.shape[1] == 1:
        import warnings

        from sklearn.exceptions import DataConversionWarning

        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples, ), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(
            f"'{name}' must be a 1-dimensional array of labels; got shape {arr.shape}."
        )
    if arr.shape[0] != n:
        raise ValueError(f"'{name}' has {arr.shape[0]} labels but X has {n} rows; they must match.")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinity.")
    if arr.dtype.kind == "c":
        raise ValueError(f"'{name}' must hold real or categorical labels; got complex values.")
    if min_classes is not None:
        try:
            classes = np.unique(arr)
        except TypeError:
            raise ValueError(f"'{name}' holds labels of mixed, unorderable types.") from None
        if len(classes) < min_classes:
            who = f"{owner} needs" if owner else "needs"
            raise ValueError(
                f"'{name}' has {len(classes)} class(es); {who} at least {min_classes} classes."
            )
    return arr


def check_indices(idx, n, name):
    """Return ``idx`` as an int array with every entry in ``[0, n)``."""
    arr = np.asarray(idx)
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ValueError(f"'{name}' must hold integer indices; got dtype {arr.dtype}.")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        bad = arr[(arr < 0) | (arr >= n)].ravel()[0]
        raise ValueError(f"'{name}' holds index {bad}, outside the range [0, {n}).")
    return arr


def check_square_kernel(K, n=None, name="K"):
    """Return ``K`` as a finite symmetric ``n×n`` float array."""
    K = check_matrix(K, name)
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"'{name}' must be a square kernel matrix; got shape {K.shape}.")
    if n is not None and K.shape[0] != n:
        raise ValueError(f"'{name}' must be {n}×{n} to match the data; got shape {K.shape}.")
    scale = max(1.0, float(np.abs(K).max()))
    if not np.allclose(K, K.T, atol=1e-8 * scale):
        raise ValueError(f"'{name}' must be symmetric.")
    return K


def check_memory_limit(value, owner="LMNN"):
    """Validate a ``memory_limit``: a positive int (bytes) or None; return it."""
    if value is None or (
        isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1
    ):
        return None if value is None else int(value)
    raise ValueError(
        f"The 'memory_limit' parameter of {owner} must be an int in the range [1, inf) "
        f"(bytes) or None. Got {value!r} instead."
    )


def check_n_jobs(value, owner="LMNN"):
    """Validate ``n_jobs`` as scikit-learn reads it and return the threads it means:
    None is 1, a positive int that many, ``-1`` every core this process may use, ``-2``
    all but one, and so on (at least 1)."""
    if value is None:
        return 1
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value != 0:
        if value > 0:
            return int(value)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return max(1, (cores or 1) + 1 + int(value))
    raise ValueError(
        f"The 'n_jobs' parameter of {owner} must be None or a nonzero int (-1: every core). "
        f"Got {value!r} instead."
    )
