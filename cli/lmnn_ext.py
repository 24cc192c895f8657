"""The LMNN extensions behind ``solve lmnn --variant …`` and ``validate lmnn --variant …``.

Not a command module of its own: :mod:`convexmetric.cli.lmnn` delegates here.
"""

from __future__ import annotations

import time

import numpy as np

from ..lmnn import kernel_solver as SK
from ..lmnn.estimator import LMNN
from ..lmnn.extensions import KernelLMNN, MultiMetricLMNN
from ..lmnn.multi import solver as SM
from ..lmnn.solver import solve as solve_linear
from ..problems import lmnn_kernel as PK
from ..problems import lmnn_multi as PM
from ._common import solver_entry


def fit_variant(Xtr, ytr, Xte, yte, *, variant, opts):
    """Fit the chosen variant; return ``(model, report)`` with kNN (and energy) errors on
    the test part (when there is one) and the leave-one-out training error."""
    k, mu = opts["k"], opts["mu"]
    # --max-iter unset: each estimator's own default (the multi-metric phase is 1 step)
    given = {} if opts["max_iter"] is None else {"max_iter": opts["max_iter"]}
    given.update(time_limit=opts["time_limit"], solver=opts["solver"])
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
        memory = {} if opts["memory_limit"] is None else {"memory_limit": opts["memory_limit"]}
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


def small_instance(X, y, per_class):
    """The first ``per_class`` points of every class (a deterministic small instance)."""
    keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)])
    return X[keep], y[keep]


def validate_variant(X, y, *, variant, k, mu, settings, conic_solver, no_exact=False, runs=None):
    """Exact (CVXPY, all hinge terms) vs large-scale for the multi-metric or kernel SDP.

    ``settings``: ``n_clusters`` (multi), ``kernel`` and ``gamma`` (kernel).
    ``no_exact`` skips CVXPY: ``exact`` is None and the entries carry certificates only.
    ``runs`` (a dict), when given, receives the large-scale SolveResult by solver name.
    """
    _, y = np.unique(y, return_inverse=True)
    if variant == "multi":
        est = MultiMetricLMNN(k=k, mu=mu, n_clusters=settings["n_clusters"], random_state=0)
        est.fit(X, y)  # validates, clusters, and gives the single-metric start
        g, T, c = est.clusters_, est.targets_, est.metrics_.shape[0]
        t0, exact = time.perf_counter(), None
        if not no_exact:
            Ms, value, status, _ = PM.solve(X, y, T, mu, g, c, solver=conic_solver)
            exact = {"objective": PM.objective(Ms, X, T, y, g, mu), "cvxpy_value": value}
            exact.update(seconds=time.perf_counter() - t0, status=status, solver=conic_solver)
        res = SM.solve(X, y, T, mu, g, c, M0=est.single_.metric_)
    else:
        est = KernelLMNN(
            k=k, mu=mu, kernel=settings["kernel"], gamma=settings["gamma"], max_iter=1
        ).fit(X, y)
        K, T = est.kernel_rows(X), est.targets_
        t0, exact = time.perf_counter(), None
        if not no_exact:
            A, value, status, _ = PK.solve(K, y, T, mu, solver=conic_solver)
            exact = {"objective": PK.objective(A, K, T, y, mu), "cvxpy_value": value}
            exact.update(seconds=time.perf_counter() - t0, status=status, solver=conic_solver)
        res = SK.solve(K, y, T, mu)
    if runs is not None:
        runs[res.solver] = res
    solvers = {res.solver: solver_entry(res, None if exact is None else exact["objective"])}
    return exact, solvers


__all__ = ["fit_variant", "small_instance", "solve_linear", "validate_variant"]
