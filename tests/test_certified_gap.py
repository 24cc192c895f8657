"""One certified gap, never clipped (issue 36): a bound above the objective is a broken
certificate and raises; saved models keep the certificate the verifier reads."""

import numpy as np
import pytest
from test_optim_engine import SVM, A, stages

from convexmetric import LMNN, datasets
from convexmetric.model_io import load_model, save_model
from convexmetric.optim.lbfgs import LBFGS
from convexmetric.optim.stages import run_stages
from convexmetric.result import (
    ROUNDING,
    STATUS_MESSAGES,
    CertificateError,
    SolveResult,
    certified_gap,
    certified_status,
)
from convexmetric.verifier import Fitted, VerificationError


def test_certified_gap_is_signed_and_raises_beyond_rounding():
    assert certified_gap(100.0, 99.0) == pytest.approx(0.01, rel=1e-12)
    assert certified_gap(2.0, None) == certified_gap(2.0, -np.inf) == np.inf
    # within rounding: a tiny negative gap, reported as it is (no clipping)
    assert -ROUNDING <= certified_gap(1.0, 1.0 + 0.5 * ROUNDING) < 0
    with pytest.raises(CertificateError, match="exceeds the objective"):
        certified_gap(1.0, 1.0 + 1e-6)
    with pytest.raises(CertificateError):
        _ = SolveResult(None, 5.0, "optimal", lower_bound=6.0).certified_gap


def test_status_rule_needs_a_certificate_within_tol():
    assert certified_status(1.0, 1.0 - 1e-5, 1e-4) == "optimal"
    assert certified_status(1.0, 1.0 - 1e-3, 1e-4) == "optimal_inaccurate"
    assert certified_status(1.0, None, 1e-4, "user_limit") == "user_limit"
    assert certified_status(1.0, 1.0 - 1e-3, 1e-4, "user_limit") == "user_limit"
    with pytest.raises(CertificateError):
        certified_status(1.0, 2.0, 1e-4)
    for word in ("converged", "completed", "iteration_limit"):
        assert "no optimality is claimed" in STATUS_MESSAGES[word]


def test_engine_raises_on_a_bound_above_the_objective():
    class Broken(SVM):  # a certificate with a bug: its bound exceeds the objective
        def bound(self, stage):
            return self.objective(stage.x) + 1.0

    res = run_stages(SVM(A), np.zeros(5), LBFGS(), stages(tol=1e-6))
    assert res.status == "optimal"
    with pytest.raises(CertificateError, match="exceeds the objective"):
        run_stages(Broken(A), np.zeros(5), LBFGS(), stages(tol=1e-6))


@pytest.fixture(scope="module")
def wine_fit():
    X, _, y, _ = datasets.load_split("wine")
    return LMNN().fit(X, y), X, y


def test_saved_model_keeps_the_certificate_and_the_fitted_view(wine_fit, tmp_path):
    m = wine_fit[0]
    kept = m.result_.certificate
    m.result_.certificate = {"kind": "lmnn", "lam": np.linspace(0, 1, 7),
                             "index": np.arange(7, dtype=np.int32), "radius": 2.5}  # fmt: skip
    try:
        save_model(m, tmp_path / "m")
    finally:
        m.result_.certificate = kept
    saved = load_model(tmp_path / "m")
    got = Fitted.from_saved(saved.meta, saved.arrays)
    assert got.estimator == "LMNN" and got.objective == m.result_.objective
    assert got.certificate["kind"] == "lmnn" and got.certificate["radius"] == 2.5
    np.testing.assert_array_equal(got.certificate["lam"], np.linspace(0, 1, 7))
    assert got.certificate["index"].dtype == np.int32
    np.testing.assert_array_equal(got.attrs["metric_"], m.metric_)
    np.testing.assert_array_equal(got.attrs["targets_"], m.targets_)
    assert got.params["k"] == m.k and got.params["mu"] == m.mu and got.params["tol"] == m.tol


def test_a_model_without_certificate_has_nothing_to_verify(wine_fit, tmp_path):
    m = wine_fit[0]
    kept, m.result_.certificate = m.result_.certificate, None
    try:
        save_model(m, tmp_path / "m")
        with pytest.raises(VerificationError, match="no certificate"):
            Fitted.from_estimator(m)
    finally:
        m.result_.certificate = kept
    saved = load_model(tmp_path / "m")
    with pytest.raises(VerificationError, match="no certificate"):
        Fitted.from_saved(saved.meta, saved.arrays)


@pytest.mark.parametrize("bad", ["nan", "inf", "columns", "rows"])
def test_verify_rejects_bad_input_naming_it(wine_fit, bad):
    from convexmetric import verify

    m, X, y = wine_fit
    X = X.copy()
    if bad == "nan":
        X[3, 2] = np.nan
    elif bad == "inf":
        X[0, 0] = np.inf
    elif bad == "columns":
        X = X[:, :-1]
    else:
        y = y[:-1]
    words = {"nan": "'X' contains NaN", "inf": "'X' contains NaN or infinite",
             "columns": "components_ has shape", "rows": "n labels"}[bad]  # fmt: skip
    with pytest.raises(VerificationError, match=words):
        verify(m, X, y)
