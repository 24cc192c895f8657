"""The LMNN extensions behind ``solve lmnn --variant …`` (``validate lmnn --variant …``
is :func:`convexmetric.validate`).

Not a command module of its own: :mod:`convexmetric.cli.lmnn` delegates here.
"""

from __future__ import annotations

import numpy as np

from ..lmnn import KernelLMNN, MultiMetricLMNN
from ..lmnn.estimator import LMNN


def fit_variant(Xtr, ytr, Xte, yte, *, variant, opts):
    """Fit the chosen variant; return ``(model, report)`` with kNN (and energy) errors on
    the test part (when there is one) and the leave-one-out training error."""
    k, mu = opts["k"], opts["mu"]
    # --max-iter unset: each estimator's own default (the multi-metric phase is 1 step)
    given = {} if opts["max_iter"] is None else {"max_iter": opts["max_iter"]}
    given.update(solver=opts["solver"])
    given.update({key: opts[key] for key in ("tol", "time_limit") if opts[key] is not None})
    if variant == "multi":
        model = MultiMetricLMNN(
            k=k, mu=mu, n_clusters=opts["n_clusters"], random_state=opts["seed"], **given
        )
        model.fit(Xtr, ytr)
        report = {"variant": "multi", "n_metrics": int(model.metrics_.shape[0])}
        report["loo_train_error"] = model.loo_error()
    elif variant == "kernel":
        model = KernelLMNN(k=k, mu=mu, kernel=opts["kernel"], gamma=opts["gamma"], **given)
        model.fit(Xtr, ytr)
        report = {"variant": "kernel", "kernel": opts["kernel"]}
    else:
        memory = {key: opts[key] for key in ("memory_limit", "n_jobs") if opts[key] is not None}
        model = LMNN(
            k=k,
            mu=mu,
            **given,
            **memory,
            **{key: opts[key] for key in ("n_passes", "n_components", "reduction", "pca")},
            search=opts["search"],
        ).fit(Xtr, ytr)
        report = {"variant": "single", "n_passes": opts["n_passes"]}
        report["loo_train_error"] = model.loo_error()
    if Xte is not None:
        report["knn_test_error"] = float(np.mean(model.predict(Xte) != yte))
        if opts["energy"] and variant != "kernel":
            report["energy_test_error"] = float(np.mean(model.energy_predict(Xte) != yte))
    return model, report


__all__ = ["fit_variant"]
