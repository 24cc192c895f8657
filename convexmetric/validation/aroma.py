"""Validation of the bilinear learners (Crammer & Chechik 2012): the batch hinge-ranking
problem of :mod:`convexmetric.problems.bilinear` solved exactly, against d-AROMA, f-AROMA
and OASIS run online over the same triplets (no certificate: they are online)."""

from __future__ import annotations

import time

import numpy as np

from .report import ValidationReport, exact_entry, instance


def default_data(n_items=60, n_features=12, random_state=0):
    """The default instance: a small bag of features (3 classes), dense."""
    from .. import datasets

    group = max(1, min(3, n_features // 4))
    X, y = datasets.bag_of_features(
        n_items,
        n_features,
        3,
        n_tokens=4,
        group_size=group,
        class_groups=min(2, n_features // group),
        random_state=random_state,
    )
    return X.toarray(), y, f"bag_of_features({n_items}, {n_features})"


def _learners(r, random_state):
    from ..aroma.estimators import OASIS, DiagonalAROMA, FactoredAROMA

    common = {"max_iter": 0, "mistake_driven": False, "random_state": random_state}
    return {
        "d-AROMA": DiagonalAROMA(r=r, **common),
        "f-AROMA": FactoredAROMA(r=r, **common),
        "OASIS": OASIS(C=0.1, **common),
    }


def validate(
    X,
    y,
    *,
    name,
    n_triplets=150,
    C=1.0,
    r=1.0,
    epochs=20,
    conic_solver=None,
    exact=True,
    random_state=0,
):
    """The bilinear problem both ways; see :func:`convexmetric.validate` for the arguments."""
    from ..bilinear import hinge_losses, sample_triplets
    from ..problems.bilinear import objective

    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    T = sample_triplets(y, n_triplets, random_state=random_state)
    conic = (conic_solver or "CLARABEL") if exact else None
    settings = {
        "n_triplets": n_triplets,
        "C": C,
        "r": r,
        "epochs": epochs,
        "conic_solver": conic,
        "random_state": random_state,
    }
    inst = instance(
        name, f"{name}, {len(T)} triplets, C={C}", X.shape[0], X.shape[1], len(T), "triplets"
    )
    report = ValidationReport("aroma", inst, settings, None)
    if exact:
        from ..problems.bilinear import solve_batch
        from ..problems.common import SOLVER_OPTIONS

        W, value, status, seconds = solve_batch(X, X, T, C, conic)
        report.exact = exact_entry(
            conic,
            status,
            value,
            seconds,
            SOLVER_OPTIONS[conic],
            mean_hinge=hinge_losses(W, X, X, T).mean(),
        )
    stream = np.tile(T, (epochs, 1))
    for label, model in _learners(r, random_state).items():
        t0 = time.perf_counter()
        model.partial_fit_triplets(X[stream[:, 0]], X[stream[:, 1]], X[stream[:, 2]])
        f = objective(model.W_, X, X, T, C)
        report.add(
            label,
            model.result_,
            objective=f,
            seconds=time.perf_counter() - t0,
            mean_hinge=hinge_losses(model.W_, X, X, T).mean(),
        )
    return report


def run(data, *, name=None, random_state=0, callback=None, **given):
    """:func:`convexmetric.validate`'s entry: ``data`` is ``(X, y)`` or None (a bag of
    features, ``n_items`` × ``n_features``); the online learners take no callback."""
    shape = {k: given.pop(k) for k in ("n_items", "n_features") if k in given}
    if data is None:
        X, y, default = default_data(**shape, random_state=random_state)
    else:
        X, y, default = (*data, "data")
    return validate(X, y, name=name or default, random_state=random_state, **given)
