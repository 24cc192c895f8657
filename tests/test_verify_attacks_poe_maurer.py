"""Issue 63, the POE/MKPOE and OperatorSimilarity side: each way an adversary made the
independent verifier say "verified" to a false (or ill-posed) claim, as a test. Every
test but those of item 10 failed on the verifier of 5b68af8 (item 10's was fixed there:
they fail on its parent); the issue's item number is in each test's name."""

import copy
import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import poe_instance

from convexmetric import verify
from convexmetric.cli.main import main
from convexmetric.maurer.estimators import OperatorSimilarity
from convexmetric.maurer.pairs import balanced_pairs
from convexmetric.poe.estimators import MKPOE, POE
from convexmetric.problems import poe as P
from convexmetric.verifier import Fitted, VerificationError, verify_fitted


def _refused(est, *args, **kw):
    """The verifier's answer: a report not verified, or a VerificationError (nothing to
    verify); returns the reason."""
    try:
        v = verify(est, *args, **kw)
    except VerificationError as exc:
        return str(exc)
    assert not v.verified, f"verified: {v}"
    return v.reason


# --- item 6: the kept comparisons of filter_graph=True are recomputed -------------------


@pytest.mark.parametrize("seed", [0, None], ids=["seeded", "unseeded"])
def test_item6_one_kept_comparison_of_400_is_not_the_filters(seed):
    """A fit on one comparison, claimed to be the filter's choice among 400."""
    X, C = poe_instance(25, 400, flip=0.1)
    honest = POE(beta=10.0, filter_graph=True, random_state=0).fit(C, X)
    t = int(honest.filter_report_.kept[0])
    bad = POE(beta=10.0).fit(C[np.array([t])], X)
    bad.set_params(filter_graph=True, random_state=seed)
    bad.result_.certificate["comparisons"] = np.array([t])
    reason = _refused(bad, C, X)
    assert "filter" in reason


def test_item6_the_filter_re_derived_equals_the_solvers_on_random_graphs():
    from convexmetric.comparisons import Comparisons
    from convexmetric.poe.graph import filter_comparisons
    from convexmetric.verifier._graph import alg1_possible, filtered

    rng = np.random.default_rng(7)
    for _ in range(150):
        n, m = int(rng.integers(3, 12)), int(rng.integers(1, 150))
        C = rng.integers(0, n, (m, 4))
        left = np.sort(C[:, :2], axis=1)
        right = np.sort(C[:, 2:], axis=1)
        C = C[(C[:, 0] != C[:, 1]) & (C[:, 2] != C[:, 3]) & (left != right).any(axis=1)]
        if len(C) == 0:
            continue
        seed = int(rng.integers(0, 1000))
        theirs = filter_comparisons(Comparisons.from_array(C), random_state=seed).kept
        mine = filtered(C, seed)
        assert np.array_equal(np.asarray(theirs), mine)
        assert alg1_possible(C, mine) == ""


# --- item 7: primal feasibility -------------------------------------------------------


def _lpoe():
    X, C = poe_instance(12, 60, seed=3, flip=0.1)
    _, optimum, status, _ = P.solve(P.lpoe_blocks(X), C, 10.0, solver="CLARABEL")
    assert status == "optimal"
    return X, C, optimum


def _scaled_certificate(est, f):
    """The certificate's multipliers scaled so that they prove ``f`` (to 1e-5)."""
    lam = est.result_.certificate["lam"]
    theta = min(1.0, f * (1 - 1e-5) / lam.sum())
    est.result_.certificate = {**est.result_.certificate, "lam": theta * lam, "radius": f}
    est.result_.objective = f


def test_item7_an_indefinite_W_below_the_optimum_is_not_verified():
    X, C, optimum = _lpoe()
    bad = POE(beta=10.0).fit(C, X)
    bad.W_ = bad.W_ - 0.05 * np.eye(X.shape[1])  # lowers tr W below the true optimum
    del bad.components_  # a bare metric, as a solver result carries it
    f = P.objective([bad.W_], P.lpoe_blocks(X), C, 10.0)
    assert f < optimum
    _scaled_certificate(bad, f)
    assert "not positive semidefinite" in _refused(bad, C, X)


def test_item7_a_negative_diagonal_is_not_verified():
    X, C, _ = _lpoe()
    _, optimum, status, _ = P.solve(P.lpoe_blocks(X), C, 10.0, diagonal=True, solver="CLARABEL")
    bad = POE(beta=10.0, diagonal=True).fit(C, X)
    bad.W_ = bad.W_ - 0.02
    del bad.components_
    f = P.objective([bad.W_], P.lpoe_blocks(X), C, 10.0)
    assert status == "optimal" and f < optimum
    _scaled_certificate(bad, f)
    assert "negative entries" in _refused(bad, C, X)


def test_item7_an_indefinite_mkpoe_block_is_not_verified():
    X, C = poe_instance(12, 60, seed=3, flip=0.1)
    Ks = [X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4.0)]
    bad = MKPOE(beta=10.0).fit(C, Ks)
    bad.W_[1] = bad.W_[1] - 0.05 * np.eye(len(X))
    del bad.components_, bad.embedding_
    f = P.objective(bad.W_, P.kernel_blocks(Ks), C, 10.0)
    assert f < bad.objective_
    _scaled_certificate(bad, f)
    assert "not positive semidefinite" in _refused(bad, C, Ks)


# --- item 8: unseeded pairs are the caller's data ---------------------------------------


def _maurer_xy(n=40, D=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    X = rng.standard_normal((4, D))[y] * 1.5 + rng.standard_normal((n, D))
    return X / (2 * np.linalg.norm(X - X.mean(0), axis=1).max()), y


def test_item8_pairs_of_an_unseeded_fit_are_not_read_from_the_fit():
    """``pairs_ = (0, 0, +1)`` repeated and ``coef_ = 0``: every hinge 0, objective 0."""
    X, y = _maurer_xy()
    bad = OperatorSimilarity(reg_weight=0.05, solver="subgradient", n_pairs=60, tol=1e-4)
    bad.fit(X, y)
    bad.pairs_ = np.tile([0, 0, 1], (60, 1)).astype(np.int64)
    bad.coef_, bad.components_ = np.zeros((3, 1)), np.zeros((1, 3))
    bad.result_.certificate = {**bad.result_.certificate, "alpha": np.zeros(60), "radius": 0.0}
    bad.result_.objective = 0.0
    assert "cannot be replayed: pass the pairs" in _refused(bad, X, y, tol=1e-4)


# --- item 9: parameters outside their domain ---------------------------------------------


def _maurer_fit():
    X, y = _maurer_xy()
    pairs = balanced_pairs(X, y, 80, random_state=0)
    est = OperatorSimilarity(reg_weight=0.05, solver="subgradient", random_state=0).fit(pairs)
    return est, pairs


def test_item9_a_negative_reg_weight_is_not_verified():
    """λ < 0: eq. (5) is unbounded below; ``A = 0`` with ``α = 0`` "proved" it optimal."""
    est, pairs = _maurer_fit()
    bad = copy.deepcopy(est).set_params(reg_weight=-0.05)
    bad.coef_, bad.components_ = np.zeros((3, 1)), np.zeros((1, 3))
    r = pairs.r
    zero = float(np.maximum(0.0, 1.0 - r / 1.0).mean())  # Ω(0): every distance 0
    bad.result_.certificate = {**est.result_.certificate, "alpha": np.zeros(len(r)), "radius": zero}
    bad.result_.objective = zero
    assert "'reg_weight'" in _refused(bad, pairs)


@pytest.mark.parametrize("margin", [{"margin": -1.0}, {"margin_neg": 0.0}])
def test_item9_margins_outside_their_domain_are_not_verified(margin):
    est, pairs = _maurer_fit()
    bad = copy.deepcopy(est).set_params(**margin)
    bad.coef_, bad.components_ = np.zeros((3, 1)), np.zeros((1, 3))
    bad.result_.certificate = {
        **est.result_.certificate,
        "alpha": np.zeros(len(pairs.r)),
        "radius": 0.0,
    }
    bad.result_.objective = 0.0
    assert "margin" in _refused(bad, pairs)


def test_item9_an_rbf_width_below_zero_is_not_verified():
    """γ < 0 makes the "rbf" kernel indefinite and KPOE unbounded below; a fit on its
    positive part "verified" as the kernel problem's optimum."""
    X, C = poe_instance(15, 120, seed=2, flip=0.1)
    X = X / 2.0
    K = np.exp(0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))  # γ = −0.5
    w, V = np.linalg.eigh(K)
    Kp = (V * np.maximum(w, 0.0)) @ V.T
    fit = POE(beta=10.0, kernel="precomputed").fit(C, Kp)
    # the claim is false: W = t·vvᵀ along K's most negative direction does better
    below = [
        P.objective([t * np.outer(V[:, 0], V[:, 0])], P.kernel_blocks([K]), C, 10.0)
        for t in np.geomspace(1e-3, 1e3, 25)
    ]
    assert min(below) < 0.7 * fit.objective_
    bad = copy.deepcopy(fit).set_params(kernel="rbf", gamma=-0.5)
    del bad.embedding_
    assert "'gamma'" in _refused(bad, C, X)


def test_item9_a_beta_outside_its_domain_is_not_verified():
    """β = 0: the problem of Alg. 2 without its loss (the estimator refuses it)."""
    X, C, _ = _lpoe()
    bad = POE(beta=10.0).fit(C, X).set_params(beta=0.0)
    bad.W_, bad.components_ = np.zeros((4, 4)), np.zeros((0, 4))
    del bad.embedding_
    bad.result_.certificate = {**bad.result_.certificate, "lam": np.zeros(len(C)), "radius": 0.0}
    bad.result_.objective = 0.0
    assert "'beta'" in _refused(bad, C, X)


# --- item 10: the tolerance is the caller's ----------------------------------------------


def test_item10_a_model_fitted_with_tol_near_one_is_held_to_the_default():
    X, C, _ = _lpoe()
    est = POE(beta=10.0).fit(C, X)
    bad = copy.deepcopy(est).set_params(tol=0.99)
    bad.W_, bad.components_ = 3.0 * est.W_, 3.0**0.5 * est.components_
    bad.embedding_ = 3.0**0.5 * est.embedding_
    bad.result_.objective = P.objective([bad.W_], P.lpoe_blocks(X), C, 10.0)
    v = verify(bad, C, X)
    assert not v.verified and v.tol == 1e-4 and v.model_tol == 0.99
    assert "pass tol=" in v.reason


def test_item10_a_saved_model_with_tol_one_is_not_verified_by_the_cli(tmp_path):
    out = tmp_path / "m"
    data = ["--n-comparisons", "300", "--seed", "2"]
    r = CliRunner().invoke(main, ["solve", "poe", "--kind", "linear", *data, "--out", str(out)])
    assert r.exit_code == 0, r.output
    meta = json.loads((out / "model.json").read_text())
    meta["verification"]["params"]["tol"] = 1.0
    meta["verification"]["certificate"]["radius"] = 1e9
    (out / "model.json").write_text(json.dumps(meta))
    lam = np.load(out / "certificate__lam.npy")
    np.save(out / "certificate__lam.npy", 0.5 * lam)  # proves half the objective
    rep = json.loads(
        CliRunner().invoke(main, ["verify", "--model", str(out), *data, "--json"]).output
    )
    assert rep["verified"] is False and rep["tol"] == 1e-4 and rep["model_tol"] == 1.0


def test_item9_a_clearly_indefinite_precomputed_kernel_is_not_verified():
    """The floating-point story's kernel case: a "precomputed" kernel with λ_min < 0 well
    beyond rounding was truncated to its positive part, a problem the user did not pose;
    the fit on that part "verified" although W = t·vvᵀ does better."""
    X, C = poe_instance(15, 120, seed=2, flip=0.1)
    K = np.exp(0.5 * ((X[:, None] / 2.0 - X[None] / 2.0) ** 2).sum(-1))
    w, V = np.linalg.eigh(K)
    fit = POE(beta=10.0, kernel="precomputed").fit(C, (V * np.maximum(w, 0.0)) @ V.T)
    assert "not positive semidefinite" in _refused(fit, C, K)


# --- item 11: every stored form of the map is the map verified ---------------------------


def test_item11_poe_components_not_the_verified_W_are_not_verified():
    """``transform`` applies ``components_``; ``W_`` alone was verified."""
    X, C, _ = _lpoe()
    bad = POE(beta=10.0).fit(C, X)
    bad.components_ = 2.0 * bad.components_  # the applied map, another one
    bad.embedding_ = X @ bad.components_.T
    assert "not the map components_ applies" in _refused(bad, C, X)


def test_item11_an_rbf_width_the_model_does_not_apply_is_not_verified():
    X, C = poe_instance(15, 120, seed=2, flip=0.1)
    bad = POE(beta=10.0, kernel="rbf").fit(C, X)
    bad.gamma_ = 3.0 * bad.gamma_  # transform's kernel width
    assert "gamma_" in _refused(bad, C, X)


def _run(*args):
    return CliRunner().invoke(main, [*map(str, args)])


def _edit(path, change):
    np.save(path, change(np.load(path)))


POE_DATA = ["--n-comparisons", "300", "--seed", "2"]


@pytest.mark.parametrize("diagonal", [[], ["--diagonal"]], ids=["full", "diagonal"])
def test_item11_a_saved_poe_whose_applied_components_were_edited(tmp_path, diagonal):
    out = tmp_path / "m"
    r = _run("solve", "poe", "--kind", "linear", *diagonal, *POE_DATA, "--out", out)
    assert r.exit_code == 0, r.output
    _edit(out / "components.npy", lambda L: 3.0 * L)  # what transform applies
    r = _run("verify", "--model", out, *POE_DATA, "--json")
    assert r.exit_code != 0 and "components.npy" in r.output


def test_item11_a_saved_operator_whose_applied_components_were_edited(tmp_path):
    out, data = tmp_path / "m", ["--dataset", "wine", "--n-pairs", "300"]
    r = _run("solve", "maurer", *data, "--solver", "subgradient", "--out", out)
    assert r.exit_code == 0, r.output
    _edit(out / "components.npy", lambda L: 3.0 * L)
    r = _run("verify", "--model", out, *data, "--json")
    assert r.exit_code != 0 and "components.npy" in r.output


def _kernel_operator(tmp_path):
    """A saved Maurer-kernel operator fitted from --features/--pairs files, and the
    data options that verify it."""
    X, y = _maurer_xy(n=20)
    pairs = balanced_pairs(X, y, 40, random_state=0)
    np.save(tmp_path / "f.npy", X)
    rows = "".join(f"{a},{b},{int(r)}\n" for a, b, r in zip(pairs.i, pairs.j, pairs.r))
    (tmp_path / "p.csv").write_text("i,j,r\n" + rows)
    data = ["--features", tmp_path / "f.npy", "--pairs", tmp_path / "p.csv"]
    out = tmp_path / "m"
    r = _run(
        "solve",
        "maurer",
        *data,
        "--kernel",
        "maurer",
        "--solver",
        "subgradient",
        "--reg-weight",
        "0.1",
        "--out",
        out,
    )
    assert r.exit_code == 0, r.output
    assert json.loads(_run("verify", "--model", out, *data, "--json").output)["verified"]
    return out, data


def test_item11_a_saved_kernel_operator_whose_kernel_points_moved(tmp_path):
    out, data = _kernel_operator(tmp_path)
    _edit(out / "kernel_points.npy", lambda P: P[::-1].copy())  # where the kernel is taken
    r = _run("verify", "--model", out, *data, "--json")
    assert r.exit_code != 0 and "not the fitted map: points_" in r.output


# --- item 13: the CLI's Maurer pairs are the verifier's own draw -------------------------


def test_item13_the_cli_does_not_draw_maurer_pairs_with_the_solvers_oracle(tmp_path, monkeypatch):
    from convexmetric.maurer import base

    out, data = tmp_path / "m", ["--dataset", "wine", "--n-pairs", "300"]
    r = _run("solve", "maurer", *data, "--solver", "subgradient", "--out", out)
    assert r.exit_code == 0, r.output

    def oracle(*args, **kwargs):
        raise AssertionError("the solver package's pair oracle was used")

    for name in list(base.ORACLES):
        monkeypatch.setitem(base.ORACLES, name, oracle)
    r = _run("verify", "--model", out, *data, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["verified"] is True, r.output


@pytest.mark.parametrize("edit", ["kernel_points", "gamma"])
def test_item11_a_saved_rbf_poe_whose_applied_kernel_changed(tmp_path, edit):
    """The arrays a saved kernel model applies to new points (its kernel's points and
    width), read back as the library reads a saved model."""
    from convexmetric.model_io import load_model, save_model

    X, C = poe_instance(15, 120, seed=2, flip=0.1)
    save_model(POE(beta=10.0, kernel="rbf").fit(C, X), tmp_path / "m")
    if edit == "kernel_points":
        _edit(tmp_path / "m" / "kernel_points.npy", lambda P: P[::-1].copy())
    else:
        meta = json.loads((tmp_path / "m" / "model.json").read_text())
        meta["kernel"]["gamma"] *= 3.0
        (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    model = load_model(tmp_path / "m")
    v = verify_fitted(Fitted.from_saved(model.meta, model.arrays), C, X)
    assert not v.verified and "not the fitted map" in v.reason, v.reason
