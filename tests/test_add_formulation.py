"""A sixth formulation joins in one place (issue 66): a toy convex problem, written here
as a new package would write it, is registered in :mod:`convexmetric.formulations`; the
command line, :func:`convexmetric.validate`, saved models and the verifier then see it,
and unregistering it leaves nothing behind. ``docs/add_formulation.rst`` shows this code.

The toy: a diagonal metric ``w ≥ 0`` from labelled pairs, with a squared hinge (similar
pairs within distance 1, dissimilar ones beyond 3) and a ridge,

    f(w) = (1/m) Σ_ij [1 + r_ij (w·δ_ij − 2)]₊² + (λ/2)‖w‖²,   δ_ij = (x_i − x_j)²,

λ-strongly convex and smooth: projected gradient converges linearly, and at any ``w``
``f(w) − ‖ρ‖²/(2λ)`` is a lower bound, ρ the least-norm element of ∇f(w) + N(w) (the
normal cone of the orthant), hence a certified gap.
"""

import json
import time

import click
import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import BaseEstimator, TransformerMixin

import convexmetric
from convexmetric import formulations, validation
from convexmetric.cli.main import main
from convexmetric.model_io import load_model, save_model
from convexmetric.result import SolveResult, certified_gap
from convexmetric.validation.report import ValidationReport, exact_entry, instance
from convexmetric.verifier import VerificationError


# -- the formulation: data, objective, exact builder, large-scale solver ------------------
def pair_data(X, y):
    """``δ_ij = (x_i − x_j)²`` of every pair and ``r_ij`` (+1 same label, −1 not)."""
    i, j = np.triu_indices(len(y), k=1)
    return (X[i] - X[j]) ** 2, np.where(y[i] == y[j], 1.0, -1.0)


def objective(w, D, r, lam):
    """f(w), the numpy half."""
    return float(np.mean(np.maximum(0.0, 1 + r * (D @ w - 2)) ** 2) + lam / 2 * w @ w)


def build(D, r, lam):
    """The exact half: ``(cp.Problem, w)``."""
    import cvxpy as cp

    w = cp.Variable(D.shape[1], nonneg=True)
    hinge = cp.pos(1 + cp.multiply(r, D @ w - 2))
    return cp.Problem(cp.Minimize(cp.sum_squares(hinge) / len(r) + lam / 2 * cp.sum_squares(w))), w


def solve(D, r, lam, *, max_iter=2000, tol=1e-9):
    """Projected gradient (step 1/L), stopped by the certified gap; a SolveResult."""
    t0, w = time.perf_counter(), np.zeros(D.shape[1])
    step = 1.0 / (lam + 2 * np.linalg.norm(D, 2) ** 2 / len(r))
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        g = 2 * D.T @ (r * np.maximum(0.0, 1 + r * (D @ w - 2))) / len(r) + lam * w
        rho = np.where(w > 0, g, np.minimum(g, 0.0))  # least-norm ∇f + normal cone
        f, bound = objective(w, D, r, lam), objective(w, D, r, lam) - rho @ rho / (2 * lam)
        if certified_gap(f, bound) <= tol:
            break
        w = np.maximum(0.0, w - step * g)
    status = "optimal" if certified_gap(f, bound) <= tol else "user_limit"
    return SolveResult(
        matrix=np.diag(w),
        objective=f,
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        solver="projected-gradient",
        lower_bound=bound,
        certificate={"kind": "toy", "w": w},
    )


class DiagonalHinge(TransformerMixin, BaseEstimator):
    """The toy's estimator: ``metric_ = diag(w)``, ``transform`` scales by ``√w``."""

    def __init__(self, lam=1.0, max_iter=2000, tol=1e-9):
        self.lam, self.max_iter, self.tol = lam, max_iter, tol

    def fit(self, X, y):
        D, r = pair_data(np.asarray(X, float), np.asarray(y))
        self.result_ = solve(D, r, self.lam, max_iter=self.max_iter, tol=self.tol)
        self.w_ = np.diag(self.result_.matrix).copy()
        self.metric_, self.components_ = np.diag(self.w_), np.diag(np.sqrt(self.w_))
        self.objective_, self.n_iter_ = self.result_.objective, self.result_.iterations
        return self

    def transform(self, X):
        return np.asarray(X, float) @ self.components_.T


# -- what the registry names: validation entry, saver, verifier, commands -----------------
def run(data, *, name=None, conic_solver=None, exact=True, random_state=0, callback=None, lam=1.0):
    """:func:`convexmetric.validate`'s entry: both halves on one instance."""
    X, y = data if data is not None else convexmetric.datasets.load("iris")
    D, r = pair_data(np.asarray(X, float), np.asarray(y))
    conic = (conic_solver or "CLARABEL") if exact else None
    inst = instance(name or "iris", f"{len(r)} pairs", len(y), D.shape[1], len(r), "pairs")
    report = ValidationReport("toy", inst, {"lam": lam, "conic_solver": conic}, None)
    if exact:
        t0, (problem, w) = time.perf_counter(), build(D, r, lam)
        problem.solve(solver=conic)
        report.exact = exact_entry(
            conic, problem.status, objective(w.value, D, r, lam), time.perf_counter() - t0, {}
        )
    report.add("projected-gradient", solve(D, r, lam))
    return report


def describe(est):
    """The saved model: a linear map (:mod:`convexmetric.model_kinds`' ``"linear"``)."""
    return "linear", {}, {"components": est.components_}


def verify_toy(fitted, X, y, tol=None):
    """The toy's verifier: f and its strong-convexity bound, recomputed from the data."""
    from convexmetric.verifier import Verification

    lam, w = fitted.params["lam"], np.asarray(fitted.certificate["w"], float)
    D, r = pair_data(np.asarray(X, float), np.asarray(y))
    g = 2 * D.T @ (r * np.maximum(0.0, 1 + r * (D @ w - 2))) / len(r) + lam * w
    rho = np.where(w > 0, g, np.minimum(g, 0.0))
    f = objective(w, D, r, lam)
    bound, tol = f - rho @ rho / (2 * lam), 1e-6 if tol is None else tol
    gap = certified_gap(f, bound)
    ok = gap <= tol and np.isclose(f, fitted.objective, rtol=1e-9)
    return Verification("toy", f, bound, gap, tol, fitted.objective, bool(ok))


@click.command("toy")
@click.option("--lam", type=float, default=1.0, show_default=True, help="Ridge weight λ.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def SOLVE(lam, as_json):
    """Fit the toy diagonal metric on iris."""
    est = DiagonalHinge(lam=lam).fit(*convexmetric.datasets.load("iris"))
    click.echo(json.dumps({"objective": est.objective_, "status": est.result_.status}))


@click.command("toy")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def VALIDATE(as_json):
    """The toy both ways on iris."""
    click.echo(json.dumps(convexmetric.validate("toy").as_dict()))


TOY = formulations.Formulation(
    "toy",
    "a test's diagonal squared hinge",
    estimators=(DiagonalHinge,),
    exact=build,
    validate=run,
    solve_commands=(SOLVE,),
    validate_command=VALIDATE,
    savers=((DiagonalHinge, describe),),
    verifier={"toy": verify_toy},
)


# -- the tests ----------------------------------------------------------------------------
def _seen():
    """What each reader of the registry lists now."""
    from convexmetric.verifier import kinds

    runner = CliRunner()
    return {
        "solve": "toy" in runner.invoke(main, ["solve", "--help"]).output,
        "validate": "toy" in runner.invoke(main, ["validate", "--help"]).output,
        "papers": "toy" in validation.PAPERS,
        "verifier": "toy" in kinds(),
        "registry": "toy" in formulations.FORMULATIONS,
    }


@pytest.fixture
def toy():
    before = dict(formulations.FORMULATIONS)
    formulations.register(TOY)
    try:
        yield TOY
    finally:
        formulations.unregister("toy")
    assert formulations.FORMULATIONS == before


def test_the_two_halves_agree():
    X, y = convexmetric.datasets.load("iris")
    D, r = pair_data(X, y)
    problem, w = build(D, r, 1.0)
    problem.solve(solver="CLARABEL")
    assert np.isclose(objective(w.value, D, r, 1.0), problem.value, rtol=1e-6)
    res = solve(D, r, 1.0)
    assert res.status == "optimal" and res.lower_bound <= problem.value + 1e-9
    assert abs(res.objective - problem.value) <= 1e-5 * abs(problem.value)


def test_nothing_sees_the_toy_before_it_is_registered():
    assert not any(_seen().values())
    with pytest.raises(ValueError, match="'paper' parameter"):
        convexmetric.validate("toy")
    with pytest.raises(ValueError, match="cannot save a DiagonalHinge"):
        save_model(DiagonalHinge().fit(*convexmetric.datasets.load("iris")), "unused")


def test_every_reader_sees_the_registered_toy(toy, tmp_path):
    assert all(_seen().values()), _seen()
    runner = CliRunner()
    out = runner.invoke(main, ["solve", "toy", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["status"] == "optimal"
    out = runner.invoke(main, ["validate", "toy", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["paper"] == "toy" and report["exact"]["status"] == "optimal"
    assert abs(report["solvers"]["projected-gradient"]["gap_to_exact"]) < 1e-5
    X, y = convexmetric.datasets.load("iris")
    est = DiagonalHinge().fit(X, y)
    save_model(est, tmp_path / "m")
    np.testing.assert_allclose(load_model(tmp_path / "m").transform(X), est.transform(X))
    v = convexmetric.verify(est, X, y)
    assert v.kind == "toy" and v.verified


def test_unregistering_leaves_nothing_behind(toy):
    formulations.unregister("toy")
    try:
        assert not any(_seen().values())
        with pytest.raises(ValueError, match="'paper' parameter"):
            convexmetric.validate("toy")
        est = DiagonalHinge().fit(*convexmetric.datasets.load("iris"))
        with pytest.raises(ValueError, match="cannot save a DiagonalHinge"):
            save_model(est, "unused")
        with pytest.raises(VerificationError, match="unknown certificate kind 'toy'"):
            convexmetric.verify(est, *convexmetric.datasets.load("iris"))
    finally:
        formulations.register(TOY)  # the fixture unregisters it


def test_a_name_or_certificate_kind_is_registered_once(toy):
    with pytest.raises(ValueError, match="already registered"):
        formulations.register(TOY)
    with pytest.raises(ValueError, match="already verified"):
        formulations.register(formulations.Formulation("toy2", "", verifier={"toy": None}))
    with pytest.raises(ValueError, match="built-in ones stay"):
        formulations.unregister("lmnn")


def test_the_built_in_entries_resolve_and_match_the_verifiers_own_table():
    from convexmetric.verifier import kinds

    verified = {}
    for f in formulations.FORMULATIONS.values():
        for ref in (
            *f.estimators,
            f.exact,
            f.validate,
            *f.solve_commands,
            f.validate_command,
            *f.commands,
            *(x for pair in f.savers for x in pair),
        ):
            if ref is not None:
                assert formulations.resolve(ref) is not None, (f.name, ref)
        verified.update(formulations.resolve(f.verifier) or {})
    assert verified == kinds()
