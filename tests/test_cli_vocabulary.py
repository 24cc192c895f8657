"""One meaning per command-line flag (issue 37): ``--solver`` the algorithm,
``--conic-solver`` the exact side's solver, ``--k`` target neighbours only; ``--json``,
``--seed`` and ``--out DIR`` declared once; ``--tol`` and ``--time-limit`` on every
``solve``, reaching the estimator; the old spellings still work, with a warning."""

import json

import click
import pytest
from click.testing import CliRunner

from convexmetric.cli.main import main, solve, validate

SMALL_AROMA = ["--n-items", "30", "--n-features", "5", "--n-triplets", "40", "--epochs", "1"]


def _items(group):
    """``(name, command)`` of a group, the formulations' commands included (read from
    :mod:`convexmetric.formulations` when asked, as ``--help`` lists them)."""
    ctx = click.Context(group)
    out = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
    assert out, group.name
    return out


def _commands(group=main, path=()):
    for name, cmd in _items(group):
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def _option(cmd, flag):
    return next((p for p in cmd.params if flag in p.opts and not p.hidden), None)


def test_validate_commands_name_the_conic_solver_conic_solver():
    for name, cmd in _items(validate):
        opt = _option(cmd, "--conic-solver")
        assert opt is not None and set(opt.type.choices) == {"CLARABEL", "SCS"}, name
        assert _option(cmd, "--solver") is None, name  # hidden: the deprecated spelling


def test_solver_is_always_an_algorithm():
    conic = {"CLARABEL", "SCS"}
    for name, cmd in _items(solve):
        opt = _option(cmd, "--solver")
        if opt is not None:  # POE keeps CLARABEL|SCS one release, as deprecated spellings
            algorithms = set(opt.type.choices) - conic
            assert algorithms and "subgradient" in algorithms | {"sgd"}, name


def test_k_means_target_neighbours_only():
    for path, cmd in _commands():
        opt = _option(cmd, "--k")
        if opt is not None:
            assert path[-1] == "lmnn" and opt.help == "Target neighbours per point.", path


def test_json_seed_and_out_are_declared_once():
    helps = {"--json": set(), "--seed": set(), "--out": set()}
    for _, cmd in _commands():
        for flag, seen in helps.items():
            opt = _option(cmd, flag)
            if opt is None:
                continue
            if flag == "--out" and not (
                isinstance(opt.type, click.Path) and not opt.type.file_okay
            ):
                continue  # transform/predict/filter write one file: a different --out
            seen.add(opt.help)
    assert all(len(seen) == 1 for seen in helps.values()), helps


def test_every_solve_has_tol_and_time_limit():
    for name, cmd in _items(solve):
        assert _option(cmd, "--tol") is not None and _option(cmd, "--time-limit"), name


class _Stop(ValueError):
    pass


@pytest.mark.parametrize(
    "cls_path, args",
    [
        ("convexmetric.lmnn.estimator.LMNN", ["lmnn", "--dataset", "iris"]),
        ("convexmetric.poe.estimators.POE", ["poe", "--kind", "linear", "--n-comparisons", "50"]),
        ("convexmetric.ssne.estimator.SSNE", ["ssne", "--dataset", "iris"]),
        (
            "convexmetric.maurer.estimators.OperatorSimilarity",
            ["maurer", "--dataset", "iris", "--solver", "subgradient"],
        ),
    ],
)
def test_tol_and_time_limit_reach_the_estimator(monkeypatch, cls_path, args):
    module, _, name = cls_path.rpartition(".")
    cls = getattr(__import__(module, fromlist=[name]), name)
    seen = {}

    def fit(self, *a, **kw):
        seen.update(self.get_params())
        raise _Stop("stopped by the test")

    monkeypatch.setattr(cls, "fit", fit)
    extra = ["--time-limit", "7.5"]
    if "tol" in cls().get_params():
        extra += ["--tol", "0.003"]
    res = CliRunner().invoke(main, ["solve", *args, *extra])
    assert "stopped by the test" in res.output, res.output
    assert seen["time_limit"] == 7.5
    if "--tol" in extra:
        assert seen["tol"] == 0.003


def test_tol_on_a_learner_without_one_is_a_usage_error():
    res = CliRunner().invoke(main, ["solve", "aroma", "--dataset", "wine", "--tol", "0.1"])
    assert res.exit_code == 2 and "--tol" in res.output and "has no tol" in res.output


def test_old_validate_solver_spelling_warns_and_means_the_conic_solver():
    res = CliRunner().invoke(main, ["validate", "aroma", *SMALL_AROMA, "--solver", "SCS", "--json"])
    assert res.exit_code == 0, res.output
    assert "--solver is deprecated" in res.stderr and "--conic-solver" in res.stderr
    assert json.loads(res.stdout)["exact"]["solver"] == "SCS"
    both = ["--solver", "SCS", "--conic-solver", "CLARABEL"]
    res = CliRunner().invoke(main, ["validate", "aroma", *SMALL_AROMA, *both])
    assert res.exit_code == 2 and "--conic-solver" in res.output


def test_solve_poe_old_conic_solver_spelling_is_the_exact_solve():
    args = ["solve", "poe", "--kind", "linear", "--n-comparisons", "50", "--json"]
    res = CliRunner().invoke(main, [*args, "--solver", "SCS"])
    assert res.exit_code == 0, res.output
    assert "deprecated" in res.stderr
    new = CliRunner().invoke(main, [*args, "--solver", "exact", "--conic-solver", "SCS"])
    assert new.exit_code == 0, new.output
    assert json.loads(res.stdout)["result"]["solver"] == json.loads(new.stdout)["result"]["solver"]
    res = CliRunner().invoke(main, [*args, "--conic-solver", "SCS"])  # subgradient: unused
    assert res.exit_code == 2 and "--conic-solver" in res.output


def test_precision_cut_offs_are_precision_at_and_the_old_k_still_works():
    base = ["solve", "aroma", "--dataset", "wine", "--max-iter", "200", "--json"]
    new = CliRunner().invoke(main, [*base, "--precision-at", "1", "--precision-at", "5"])
    old = CliRunner().invoke(main, [*base, "--k", "1", "--k", "5"])
    assert new.exit_code == 0 and old.exit_code == 0, (new.output, old.output)
    assert "--k is deprecated" in old.stderr
    a, b = json.loads(new.stdout), json.loads(old.stdout)
    assert set(a["precision_at_k"]) == {"1", "5"} and a["precision_at_k"] == b["precision_at_k"]


def test_ssne_evaluation_k_is_n_neighbors_and_the_old_k_still_works():
    base = ["solve", "ssne", "--dataset", "iris", "--max-iter", "2", "--json"]
    new = CliRunner().invoke(main, [*base, "--n-neighbors", "5"])
    old = CliRunner().invoke(main, [*base, "--k", "5"])
    assert new.exit_code == 0 and old.exit_code == 0, (new.output, old.output)
    assert "--k is deprecated" in old.stderr
    assert json.loads(new.stdout)["k"] == json.loads(old.stdout)["k"] == 5


def _params_reaching(monkeypatch, cls, args):
    """The estimator's parameters when the command calls ``fit`` (stopped there)."""
    seen = {}

    def fit(self, *a, **kw):
        seen.update(self.get_params())
        raise _Stop("stopped by the test")

    monkeypatch.setattr(cls, "fit", fit)
    res = CliRunner().invoke(main, args)
    assert "stopped by the test" in res.output, res.output
    return seen, res


def test_maurer_flags_use_the_estimators_words_and_the_old_ones_warn(monkeypatch):
    from convexmetric.maurer.estimators import OperatorSimilarity

    base = ["solve", "maurer", "--dataset", "iris"]
    new_args = ["--reg-weight", "0.02", "--margin", "2", "--margin-neg", "3"]
    old_args = ["--lam", "0.02", "--gamma", "2", "--gamma-neg", "3"]
    new, _ = _params_reaching(monkeypatch, OperatorSimilarity, [*base, *new_args])
    old, res = _params_reaching(monkeypatch, OperatorSimilarity, [*base, *old_args])
    assert "--lam is deprecated" in res.stderr and "--reg-weight" in res.stderr
    for params in (new, old):
        assert (params["reg_weight"], params["margin"], params["margin_neg"]) == (0.02, 2.0, 3.0)


def test_ssne_flags_use_the_estimators_words_and_the_old_ones_warn(monkeypatch):
    from convexmetric.ssne.estimator import SSNE

    base = ["solve", "ssne", "--dataset", "iris", "--restarts", "2"]
    new, _ = _params_reaching(monkeypatch, SSNE, [*base, "--max-iter", "6", "--loss-weight", "7"])
    old, res = _params_reaching(monkeypatch, SSNE, [*base, "--epochs", "3", "--lam", "7"])
    assert "--epochs is deprecated" in res.stderr and "--lam is deprecated" in res.stderr
    for params in (new, old):  # --epochs counted per restart
        assert (params["max_iter"], params["loss_weight"], params["n_restarts"]) == (6, 7.0, 2)
