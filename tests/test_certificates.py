"""Certificates: dual lower bounds of the large-scale solvers, honest statuses, and the
``lower_bound`` / ``certified_gap`` fields of ``convexmetric validate --json``."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from test_verify_poe_maurer import verify_maurer_result

from convexmetric.cli.main import main
from convexmetric.lmnn import KernelLMNN, MultiMetricLMNN
from convexmetric.maurer import certificate as D
from convexmetric.maurer import solver as S
from convexmetric.maurer.pairs import balanced_pairs
from convexmetric.optim.subgradient import SubgradientSettings
from convexmetric.problems import maurer as P

VARIANTS = [("hs", None), ("trace", None), ("hs", 2.0), ("trace", 0.5)]
LAM = 0.05


def instance(m=300, D=6, seed=0, n=200):
    """4 Gaussian classes in R^D scaled to diameter ≤ 1, balanced pairs (Maurer §5.1)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((4, D)) * 1.5
    y = rng.integers(0, 4, n)
    X = centers[y] + rng.standard_normal((n, D))
    X /= 2 * np.linalg.norm(X - X.mean(0), axis=1).max()
    return balanced_pairs(X, y, m, random_state=seed)


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda v: f"{v[0]}-{v[1]}")
def solved(request):
    reg, gneg = request.param
    pairs = instance()
    U, r = pairs.differences, pairs.r
    A, val, status, _ = P.solve(U, r, LAM, 1.0, gneg, reg)
    assert status == "optimal"
    return U, r, reg, gneg, A, val


def _args(solved):
    U, r, reg, gneg, _, _ = solved
    return U, r, LAM, 1.0, gneg, reg


def test_bound_at_the_exact_optimum_is_tight(solved):
    U, r, reg, gneg, A, val = solved
    lb, _ = D.certify(
        P.hinge_arguments(P.quadratic_forms(A, U), r, 1.0, gneg),
        U, r, LAM, 1.0, gneg, reg, f_upper=val, A=A,
    )  # fmt: skip
    assert lb <= val * (1 + 1e-7)  # CLARABEL's own accuracy
    assert (val - lb) / val <= 1e-6


def test_any_dual_point_gives_a_valid_bound(solved):
    U, r, reg, gneg, _, val = solved
    c, b, mu = D._data(r, LAM, 1.0, gneg)
    rng = np.random.default_rng(1)
    for _ in range(20):
        alpha = rng.uniform(0, 1, len(r)) * (rng.uniform(size=len(r)) < 0.5) / len(r)
        assert D.dual_bound(alpha, U, c, b, mu, reg, f_upper=2 * val) <= val * (1 + 1e-9)


def test_far_from_the_optimum_only_the_ladder_runs(solved, monkeypatch):
    """A ladder gap above ``polish_gap``: no stationarity fit, no polish (the bound is the
    ladder's); with ``polish_gap=None`` they run, and the bound is at least as high."""
    U, r, reg, gneg, A, val = solved
    far = 50.0 * A + np.eye(len(A))  # far above the optimum
    z = P.hinge_arguments(P.quadratic_forms(far, U), r, 1.0, gneg)
    f = P.objective(far, U, r, LAM, 1.0, gneg, reg)
    c, b, mu = D._data(r, LAM, 1.0, gneg)
    ladder, how, _ = D._ladder(z, (U, c, b, mu, reg, f), D.CertifySettings())
    assert (f - ladder) / f > D.CertifySettings().polish_gap  # the case under test
    full, _ = D.certify(z, U, r, LAM, 1.0, gneg, reg, f_upper=f, A=far,
                        settings=D.CertifySettings(polish_gap=None))  # fmt: skip

    def refuse(*args, **kwargs):
        raise AssertionError("the polish ran at a point far from the optimum")

    monkeypatch.setattr(D, "_kkt_fit", refuse)
    monkeypatch.setattr(D, "_polish_sets", refuse)
    lb, info = D.certify(z, U, r, LAM, 1.0, gneg, reg, f_upper=f, A=far)
    assert lb == ladder and info["method"] == how
    assert ladder <= full <= val * (1 + 1e-7)


@pytest.mark.parametrize("solver", ["subgradient", "subgradient+smoothing", "sgd"])
def test_solver_bound_below_the_optimum_and_status_honest(solved, solver):
    args, val = _args(solved), solved[-1]
    if solver == "sgd":
        res = S.sgd(S.LinearBackend(args[0]), *args[1:], max_iter=20_000, random_state=0)
        tol = 1e-4
    else:
        res = S.solve_projected(*args, refine=solver != "subgradient")
        tol = 1e-6
    assert res.lower_bound is not None
    assert res.lower_bound <= val * (1 + 1e-7)  # CLARABEL's accuracy
    v = verify_maurer_result(res, *args)
    assert v.verified == (res.status == "optimal"), v.reason
    uncertified = "completed" if solver == "sgd" else "optimal_inaccurate"
    assert res.status in ("optimal", uncertified)
    if v.verified:  # a certified claim, against the exact optimum
        assert -1e-7 <= (res.objective - val) / val <= tol + 1e-7
    if solver == "subgradient+smoothing":  # converged: tight certificate
        assert res.status == "optimal"
        assert (val - res.lower_bound) / val <= 1e-6
    if solver == "subgradient":  # the plain method stalls near 1e-4..1e-3: not "optimal"
        assert (res.objective - val) / val > 1e-6
        assert res.status == "optimal_inaccurate"


def test_time_limit_reports_user_limit():
    pairs = instance()
    settings = SubgradientSettings(max_iter=3000, time_limit=0.0)
    res = S.solve_projected(pairs.differences, pairs.r, LAM, refine=False, settings=settings)
    assert res.status == "user_limit"
    assert res.lower_bound is not None  # still certified at the point it stopped at
    verify_maurer_result(res, pairs.differences, pairs.r, LAM)


def test_kernel_sgd_certificate_with_the_linear_kernel():
    pairs = instance(m=200, D=4, n=80)
    X = pairs.points
    _, val, _, _ = P.solve(pairs.differences, pairs.r, LAM)
    backend = S.KernelBackend(X @ X.T, pairs.i, pairs.j)
    res = S.sgd(backend, pairs.r, LAM, max_iter=20_000, random_state=0)
    assert res.lower_bound is not None
    assert res.lower_bound <= val * (1 + 1e-7) <= res.objective * (1 + 1e-7)


def test_operator_similarity_exposes_the_certificate(verified):
    from convexmetric.maurer.estimators import OperatorSimilarity

    pairs = instance(m=200, D=4, n=80)
    est = OperatorSimilarity(reg_weight=LAM, solver="subgradient").fit(pairs)
    assert est.result_.status == "optimal"
    assert est.result_.certificate["kind"] == "maurer"
    verified(est, pairs)


def _separable(n_per=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(3 * c, 1.0, (n_per, d)) for c in range(3)])
    return X, np.repeat(np.arange(3), n_per)


@pytest.mark.parametrize(
    "make",
    [lambda **kw: KernelLMNN(k=2, kernel="linear", max_iter=300, **kw),
     lambda **kw: MultiMetricLMNN(k=2, random_state=0, **kw)],
    ids=["kernel", "multi"],
)  # fmt: skip
def test_lmnn_extension_certificate_and_status(make, verified):
    """The bound recomputed from the certificate brackets the exact (CLARABEL) optimum."""
    X, y = _separable()
    est = make().fit(X, y)
    exact = make(solver="exact").fit(X, y)
    # CLARABEL: "optimal_inaccurate" on the multi-metric SDP (its value to about 1e-6)
    assert exact.result_.status.startswith("optimal")
    acc = 1e-7 if exact.result_.status == "optimal" else 1e-6
    report = verified(est, X, y)
    assert est.result_.status == "optimal"
    assert report.lower_bound == pytest.approx(est.result_.lower_bound, rel=1e-9)
    optimum = exact.objective_
    assert report.lower_bound <= optimum * (1 + acc) <= report.objective * (1 + 2 * acc)


# --------------------------------------------------------------------------- validate


def _run(args):
    out = CliRunner().invoke(main, ["validate", *args])
    assert out.exit_code == 0, out.output
    return out.output


def _check_entries(report, converged_within=1e-3):
    ref = None if report["exact"] is None else report["exact"]["objective"]
    for entry in report["solvers"].values():
        assert {"lower_bound", "certified_gap", "gap_to_exact"} <= set(entry)
        lb = entry["lower_bound"]
        if lb is None:
            assert entry["certified_gap"] is None
            continue
        obj = entry["objective"]
        assert entry["certified_gap"] == pytest.approx((obj - lb) / abs(obj))
        assert lb <= obj + 1e-9 * abs(obj)
        if ref is not None:
            assert lb <= ref + 1e-6 * abs(ref)
        if entry["status"] == "optimal":
            assert entry["certified_gap"] <= converged_within


def test_validate_maurer_json_and_no_exact():
    report = json.loads(_run(["maurer", "--n-pairs", "200", "--max-iter", "20000", "--json"]))
    _check_entries(report)
    assert report["solvers"]["subgradient+smoothing"]["status"] == "optimal"
    fast = json.loads(_run(["maurer", "--n-pairs", "200", "--max-iter", "5000", "--no-exact",
                            "--json"]))  # fmt: skip
    assert fast["exact"] is None
    assert all(e["gap_to_exact"] is None for e in fast["solvers"].values())
    _check_entries(fast)
    text = _run(["maurer", "--n-pairs", "200", "--max-iter", "5000", "--no-exact"])
    assert "exact solve skipped" in text and "certified gap" in text


def test_validate_no_exact_with_plot(tmp_path):
    pytest.importorskip("matplotlib")
    fig = tmp_path / "conv.png"
    _run(["maurer", "--n-pairs", "200", "--max-iter", "5000", "--no-exact", "--plot", str(fig)])
    assert fig.stat().st_size > 0


def test_validate_lmnn_wine_json():
    report = json.loads(_run(["lmnn", "--dataset", "wine", "--json"]))
    _check_entries(report)
    assert report["solvers"]["subgradient"]["lower_bound"] is not None


def test_validate_lmnn_no_exact_text_and_json():
    text = _run(["lmnn", "--dataset", "iris", "--no-exact"])
    assert "exact solve skipped" in text
    report = json.loads(_run(["lmnn", "--dataset", "iris", "--no-exact", "--json"]))
    assert report["exact"] is None and list(report["solvers"]) == ["subgradient"]
    _check_entries(report)


def test_validate_lmnn_multi_no_exact():
    report = json.loads(_run(["lmnn", "--variant", "multi", "--no-exact", "--json"]))
    assert report["exact"] is None
    _check_entries(report)


def test_validate_poe_diagonal_json():
    report = json.loads(
        _run(["poe", "--kind", "multi", "--diagonal", "--n-comparisons", "150", "--json"])
    )
    _check_entries(report)


def test_validate_poe_no_exact_accepts_a_missing_certificate():
    report = json.loads(
        _run(["poe", "--kind", "kernel", "--n-comparisons", "150", "--no-exact", "--json"])
    )
    assert report["exact"] is None
    _check_entries(report)  # the full POE bound may still be null (poescale adds it)
