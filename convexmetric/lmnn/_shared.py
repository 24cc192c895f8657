"""Helpers of the LMNN extensions' estimators: checks and kNN from distances."""

from __future__ import annotations

import logging

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._validation import (
    check_choice,
    check_labels,
    check_matrix,
    check_scalar,
)
from ..neighbors import vote

logger = logging.getLogger("convexmetric.lmnn")


def knn_from_distances(D, y_enc, k, *, exclude=None):
    """kNN votes (paper's tie rule) from a query×train distance block."""
    if exclude is not None:
        D = D.copy()
        D[np.arange(D.shape[0]), exclude] = np.inf
    nn = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.array([vote(row) for row in y_enc[nn]], dtype=np.int64)


def _check_common(est, name):
    """The optional parameters shared by the extensions (None keeps the default)."""
    if est.n_neighbors is not None:
        check_scalar(est.n_neighbors, "n_neighbors", int, min_val=1, owner=name)
    if getattr(est, "time_limit", None) is not None:
        check_scalar(est.time_limit, "time_limit", float, min_val=0, closed="neither", owner=name)
    if hasattr(est, "conic_solver"):
        check_choice(str(est.conic_solver).upper(), "conic_solver", ("CLARABEL", "SCS"), owner=name)


def _check_labels(est, X, y, k):
    X = check_matrix(X, "X", min_rows=2)
    y = check_labels(y, X.shape[0], column_ok=True)
    X, y = validate_data(est, X, y, ensure_min_samples=2, dtype=np.float64)
    check_classification_targets(y)
    classes, y_enc = np.unique(y, return_inverse=True)
    counts = np.bincount(y_enc)
    if len(classes) < 2:
        raise ValueError("'y' has a single class; LMNN needs at least two classes.")
    if counts.min() <= k:
        raise ValueError(
            f"class {classes[np.argmin(counts)].item()!r} of 'y' has {counts.min()} members; "
            f"with k={k} every class needs at least k + 1 = {k + 1} (reduce 'k')."
        )
    return X, classes, y_enc
