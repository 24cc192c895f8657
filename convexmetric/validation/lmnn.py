"""Validation of LMNN (Weinberger & Saul 2009): eq. (14), the multi-metric SDP (§5.2)
or kernel LMNN (§5.3), exactly and with the large-scale solver, in one report."""

from __future__ import annotations

import time

import numpy as np

from ..result import SolveResult
from .report import Recorder, ValidationReport, exact_entry, instance, settings_of

#: a plain CVXPY solve of eq. (14) by default only up to this many hinge terms
PLAIN_LIMIT = 25_000


def default_data(random_state=0):
    """The default instance: the training part of iris' standard split."""
    from .. import datasets

    X, y = datasets.load("iris")
    Xtr, _, ytr, _ = datasets.split(X, y, random_state=0)
    return Xtr, ytr, "iris"


def small_instance(X, y, per_class):
    """The first ``per_class`` points of every class (a deterministic small instance)."""
    keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)])
    return X[keep], y[keep]


def _tolerances(conic):
    from ..problems.common import SOLVER_OPTIONS

    return dict(SOLVER_OPTIONS[conic.upper()])


#: the settings of :func:`validate` and their defaults
DEFAULTS = {
    "k": 3,
    "mu": 0.5,
    "variant": "single",
    "per_class": 10,
    "n_clusters": None,
    "kernel": "rbf",
    "gamma": None,
    "plain": None,
}


def validate(X, y, *, name, conic_solver=None, exact=True, random_state=0, callback=None, **given):
    """LMNN both ways; see :func:`convexmetric.validate` for the arguments."""
    s = settings_of("lmnn", given, DEFAULTS)
    variant, per_class, plain = s["variant"], s["per_class"], s["plain"]
    if variant not in ("single", "multi", "kernel"):
        raise ValueError(
            "The 'variant' parameter must be one of ('single', 'multi', 'kernel'). "
            f"Got {variant!r} instead."
        )
    _check(s)
    settings = {"k": s["k"], "mu": s["mu"], "variant": variant}
    if variant == "single":
        settings["conic_solver"] = (conic_solver or "SCS") if exact else None
        return _single(X, y, name, settings, plain, exact, callback)
    X, y = small_instance(X, y, per_class)
    if variant == "multi" and s["n_clusters"] is not None and s["n_clusters"] > X.shape[0]:
        raise ValueError(
            f"The 'n_clusters' parameter must be at most the {X.shape[0]} points of the "
            f"small instance. Got {s['n_clusters']} instead."
        )
    # SCS for the kernel SDP: an rbf kernel's small eigenvalues (iris: 2.8e-4 of 10.8)
    # put the optimum at a metric of large entries, where CLARABEL fails
    default = "SCS" if variant == "kernel" else "CLARABEL"
    conic = (conic_solver or default) if exact else None
    settings.update(per_class=per_class, conic_solver=conic)
    if variant == "multi":
        settings.update(n_clusters=s["n_clusters"], random_state=random_state)
        return _multi(X, y, name, settings, exact)
    settings.update(kernel=s["kernel"], gamma=s["gamma"])
    return _kernel(X, y, name, settings, exact)


def _check(s):
    """The settings the estimators would check (the variants build their parts directly)."""
    from .._input_checks import check_choice, check_scalar

    check_scalar(s["k"], "k", int, min_val=1)
    check_scalar(s["mu"], "mu", float, min_val=0.0, max_val=1.0)
    if s["variant"] == "multi" and s["n_clusters"] is not None:
        check_scalar(s["n_clusters"], "n_clusters", int, min_val=1)
    if s["variant"] == "kernel":
        check_choice(s["kernel"], "kernel", ("rbf", "linear"))
        if s["gamma"] is not None:
            check_scalar(s["gamma"], "gamma", float, min_val=0, closed="neither")


def _single(X, y_raw, name, settings, plain, exact, callback):
    from ..lmnn.estimator import LMNN
    from ..lmnn.solver import solve as solve_large_scale
    from ..neighbors import target_neighbors
    from ..problems import lmnn as P

    k, mu = settings["k"], settings["mu"]
    _, y = np.unique(y_raw, return_inverse=True)
    T = target_neighbors(X, y, k)
    n_terms = len(P.all_triplets(y, T)[0])
    inst = instance(
        name, f"{name} (k={k}, mu={mu})", X.shape[0], X.shape[1], n_terms, "hinge terms"
    )
    report = ValidationReport("lmnn", inst, settings, None)
    if exact:
        ws = LMNN(k=k, mu=mu, solver="exact").fit(X, y_raw, targets=T).result_
        report.exact = exact_entry(
            ws.solver, ws.status, ws.objective, ws.seconds, _tolerances("CLARABEL"), ws.lower_bound
        )
        if plain or (plain is None and n_terms <= PLAIN_LIMIT):
            conic = settings["conic_solver"]
            t0 = time.perf_counter()
            M, value, status, _ = P.solve(X, y, T, mu, solver=conic)
            res = SolveResult(
                matrix=M,
                objective=P.objective(M, X, T, y, mu),
                status=status,
                seconds=time.perf_counter() - t0,
                solver=conic,
            )
            report.add(f"plain-{conic}", res, cvxpy_value=value)
    trace = Recorder(callback)
    report.add("subgradient", solve_large_scale(X, y, T, mu, callback=trace), trace=trace)
    return report


def _clusters(X, y, n_clusters, random_state):
    """The cluster of every point and their number: the labels (``n_clusters`` None) or
    k-means, as :class:`~convexmetric.lmnn.multi.estimator.MultiMetricLMNN` clusters."""
    if n_clusters is None:
        return y, int(y.max()) + 1
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=n_clusters, n_init=10, random_state=random_state).fit(X)
    return km.labels_.astype(np.int64), int(n_clusters)


def _single_start(X, y, T, k, mu):
    """The single metric :class:`~convexmetric.lmnn.multi.estimator.MultiMetricLMNN` starts
    from (its defaults: certified to 1e-2 within ``max_iter − 1`` = 2999 iterations)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from ..lmnn.estimator import LMNN

    with warnings.catch_warnings():  # a start short of 1e-2 is still a start
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LMNN(k=k, mu=mu, tol=1e-2, max_iter=2999).fit(X, y, targets=T).metric_


def _multi(X, y, name, settings, exact):
    from ..lmnn.multi import solver as SM
    from ..neighbors import target_neighbors
    from ..problems import lmnn as P
    from ..problems import lmnn_multi as PM

    k, mu = settings["k"], settings["mu"]
    _, y = np.unique(y, return_inverse=True)
    g, c = _clusters(X, y, settings["n_clusters"], settings["random_state"])
    T = target_neighbors(X, y, k)
    n_terms = len(P.all_triplets(y, T)[0])
    what = f"{name} (n={len(y)}, k={k}, mu={mu}, {c} metrics)"
    inst = instance(name, what, X.shape[0], X.shape[1], n_terms, "hinge terms")
    report = ValidationReport("lmnn", inst, settings, None)
    if exact:
        conic = settings["conic_solver"]
        t0 = time.perf_counter()
        Ms, value, status, _ = PM.solve(X, y, T, mu, g, c, solver=conic)
        report.exact = exact_entry(
            conic,
            status,
            PM.objective(Ms, X, T, y, g, mu),
            time.perf_counter() - t0,
            _tolerances(conic),
            cvxpy_value=value,
        )
    res = SM.solve(X, y, T, mu, g, c, M0=_single_start(X, y, T, k, mu))
    report.add(res.solver, res)
    return report


def _kernel(X, y, name, settings, exact):
    from .. import kernels
    from ..lmnn import kernel as SK
    from ..problems import lmnn as P
    from ..problems import lmnn_kernel as PK

    k, mu = settings["k"], settings["mu"]
    _, y = np.unique(y, return_inverse=True)
    if settings["kernel"] == "linear":
        K = kernels.linear_kernel(X)
    else:  # gamma None: 1/(d·var(X)), KernelLMNN's default
        K = kernels.rbf_kernel(X, gamma=settings["gamma"])
    T = PK.kernel_targets(K, y, k)
    n_terms = len(P.all_triplets(y, T)[0])
    what = f"{name} (n={len(y)}, k={k}, mu={mu}, {settings['kernel']} kernel)"
    inst = instance(name, what, X.shape[0], X.shape[1], n_terms, "hinge terms")
    report = ValidationReport("lmnn", inst, settings, None)
    if exact:
        conic = settings["conic_solver"]
        t0 = time.perf_counter()
        A, value, status, _ = PK.solve(K, y, T, mu, solver=conic)
        report.exact = exact_entry(
            conic,
            status,
            PK.objective(A, K, T, y, mu),
            time.perf_counter() - t0,
            _tolerances(conic),
            cvxpy_value=value,
        )
    res = SK.solve(K, y, T, mu)
    report.add(res.solver, res)
    return report


def run(data, *, name=None, random_state=0, callback=None, **given):
    """:func:`convexmetric.validate`'s entry: ``data`` is ``(X, y)`` or None (iris)."""
    X, y, default = default_data() if data is None else (*data, "data")
    return validate(
        X, y, name=name or default, random_state=random_state, callback=callback, **given
    )
