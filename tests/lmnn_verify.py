"""The independent verifier on a bare LMNN solver result (no estimator at hand)."""

from convexmetric.verifier import Fitted, verify_fitted


def verified_solve(res, X, y, T, mu=0.5, tol=1e-4):
    """The verifier's report on ``res`` (``convexmetric.lmnn.solver.solve`` on ``X, y, T``)
    read as an ``LMNN`` fit, asserted verified."""
    params = {"k": T.shape[1], "mu": mu, "tol": tol, "n_passes": 1}
    attrs = {"metric_": 0.5 * (res.matrix + res.matrix.T), "targets_": T}
    report = verify_fitted(Fitted("LMNN", params, attrs, res.certificate, res.objective), X, y)
    assert report.verified, report.reason
    return report
