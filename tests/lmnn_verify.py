"""The independent verifier on a bare LMNN solver result (no estimator at hand)."""

from convexmetric.verifier import Fitted, verify_fitted


def lmnn_report(res, X, y, T, mu=0.5, tol=1e-4):
    """The verifier's report on ``res`` (``convexmetric.lmnn.solver.solve`` on ``X, y, T``)
    read as an ``LMNN`` fit."""
    params = {"k": T.shape[1], "mu": mu, "tol": tol, "n_passes": 1}
    attrs = {"metric_": 0.5 * (res.matrix + res.matrix.T), "targets_": T}
    return verify_fitted(Fitted("LMNN", params, attrs, res.certificate, res.objective), X, y)


def verified_solve(res, X, y, T, mu=0.5, tol=1e-4):
    """:func:`lmnn_report`, asserted verified."""
    report = lmnn_report(res, X, y, T, mu, tol)
    assert report.verified, report.reason
    return report
