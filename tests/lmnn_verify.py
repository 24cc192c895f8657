"""The independent verifier on a bare LMNN solver result (no estimator at hand)."""

from convexmetric.linalg import components_from_metric
from convexmetric.verifier import Fitted, verify_fitted


def lmnn_report(res, X, y, T, mu=0.5, tol=1e-4):
    """The verifier's report on ``res`` (``convexmetric.lmnn.solver.solve`` on ``X, y, T``)
    read as an ``LMNN`` fit."""
    params = {"k": T.shape[1], "mu": mu, "tol": tol, "n_passes": 1}
    M = 0.5 * (res.matrix + res.matrix.T)
    attrs = {"metric_": M, "components_": components_from_metric(M), "targets_": T}
    fitted = Fitted("LMNN", params, attrs, res.certificate, res.objective)
    return verify_fitted(fitted, X, y, tol=tol)


def verified_solve(res, X, y, T, mu=0.5, tol=1e-4):
    """:func:`lmnn_report`, asserted verified."""
    report = lmnn_report(res, X, y, T, mu, tol)
    assert report.verified, report.reason
    return report


def kernel_report(res, K, y, T, mu=0.5, tol=1e-4):
    """The verifier's report on ``res`` (``convexmetric.lmnn.kernel.solve`` on the
    kernel ``K``) read as a ``KernelLMNN(kernel="precomputed")`` fit."""
    params = {"k": T.shape[1], "mu": mu, "tol": tol, "kernel": "precomputed"}
    attrs = {"components_": res.info["components"], "targets_": T}
    fitted = Fitted("KernelLMNN", params, attrs, res.certificate, res.objective)
    return verify_fitted(fitted, K, y, tol=tol)


def certified_kernel_solve(res, K, y, T, mu=0.5, tol=1e-4, stored_rtol=1e-6):
    """:func:`kernel_report`: verified (the gap recomputed from the data within ``tol``,
    the stored objective within the verifier's share of ``tol``: ``A_ = T M̂ Tᵀ`` holds
    the solver's metric only to rounding times κ(K)), and the bound recomputed from the
    certificate equal to the reported one."""
    report = kernel_report(res, K, y, T, mu, tol)
    assert report.verified and report.certified_gap <= tol, report.reason
    assert abs(report.lower_bound - res.lower_bound) <= 1e-9 * abs(res.lower_bound)
    assert abs(report.objective - res.objective) <= stored_rtol * abs(res.objective)
    return report


def verified_multi_solve(res, X, y, T, clusters, mu=0.5, tol=1e-4, matrices=None):
    """The verifier's report on ``res`` (``convexmetric.lmnn.multi.solver``, clusters the
    classes) read as a ``MultiMetricLMNN`` fit, asserted verified (``matrices``: the
    metrics in the original coordinates, default ``res.matrices``)."""
    import numpy as np

    params = {"k": T.shape[1], "mu": mu, "tol": tol, "n_clusters": None}
    Ms = np.stack([0.5 * (M + M.T) for M in (res.matrices if matrices is None else matrices)])
    Ls = np.stack([components_from_metric(M) for M in Ms])
    attrs = {"metrics_": Ms, "components_": Ls, "clusters_": clusters, "targets_": T}
    fitted = Fitted("MultiMetricLMNN", params, attrs, res.certificate, res.objective)
    report = verify_fitted(fitted, X, y, T, tol=tol)
    assert report.verified, report.reason
    return report
