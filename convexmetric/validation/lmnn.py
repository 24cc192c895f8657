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
    settings = {"k": s["k"], "mu": s["mu"], "variant": variant}
    if variant == "single":
        settings["conic_solver"] = (conic_solver or "SCS") if exact else None
        return _single(X, y, name, settings, plain, exact, callback)
    X, y = small_instance(X, y, per_class)
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


def _multi(X, y, name, settings, exact):
    from ..lmnn.extensions import MultiMetricLMNN
    from ..lmnn.multi import solver as SM
    from ..problems import lmnn as P
    from ..problems import lmnn_multi as PM

    k, mu = settings["k"], settings["mu"]
    _, y = np.unique(y, return_inverse=True)
    est = MultiMetricLMNN(
        k=k, mu=mu, n_clusters=settings["n_clusters"], random_state=settings["random_state"]
    ).fit(X, y)
    g, T, c = est.clusters_, est.targets_, est.metrics_.shape[0]
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
    res = SM.solve(X, y, T, mu, g, c, M0=est.single_.metric_)
    report.add(res.solver, res)
    return report


def _kernel(X, y, name, settings, exact):
    from ..lmnn import kernel_solver as SK
    from ..lmnn.extensions import KernelLMNN
    from ..problems import lmnn as P
    from ..problems import lmnn_kernel as PK

    k, mu = settings["k"], settings["mu"]
    _, y = np.unique(y, return_inverse=True)
    est = KernelLMNN(k=k, mu=mu, kernel=settings["kernel"], gamma=settings["gamma"])
    est.set_params(max_iter=1).fit(X, y)  # only its kernel and target neighbours are used
    K, T = est.kernel_rows(X), est.targets_
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
