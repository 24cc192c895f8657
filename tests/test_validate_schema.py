"""``convexmetric.validate`` and ``convexmetric validate METHOD --json``: one schema for
every paper (the same keys at every level), and the library and the command agree."""

import json

import pytest
from click.testing import CliRunner

from convexmetric import validate
from convexmetric.cli.main import main
from convexmetric.cli.validate import CLI_KEYS
from convexmetric.validation import EXACT_KEYS, INSTANCE_KEYS, SCHEMA, SOLVER_KEYS, TOP_KEYS

#: small instances of every paper: library keywords, command-line arguments
CASES = {
    "lmnn": ({"variant": "multi", "per_class": 5}, ["--variant", "multi", "--per-class", "5"]),
    "poe": ({"kind": "linear", "n_comparisons": 60}, ["--kind", "linear", "--n-comparisons", "60"]),
    "maurer": ({"n_pairs": 100, "max_iter": 2000}, ["--n-pairs", "100", "--max-iter", "2000"]),
    "aroma": (
        {"n_items": 30, "n_features": 5, "n_triplets": 40, "epochs": 2},
        ["--n-items", "30", "--n-features", "5", "--n-triplets", "40", "--epochs", "2"],
    ),
}


def _keys(report):
    """The key sets of every level of a report (settings excepted: the paper's names)."""
    out = {"top": set(report), "instance": set(report["instance"])}
    out["exact"] = None if report["exact"] is None else set(report["exact"])
    out["solvers"] = {frozenset(entry) for entry in report["solvers"].values()}
    return out


@pytest.fixture(scope="module")
def cli_reports():
    reports = {}
    for paper, (_, args) in CASES.items():
        res = CliRunner().invoke(main, ["validate", paper, *args, "--json"])
        assert res.exit_code == 0, res.output
        reports[paper] = json.loads(res.output)
    return reports


def test_every_paper_prints_the_same_keys(cli_reports):
    expected = {
        "top": {*TOP_KEYS, *CLI_KEYS},
        "instance": set(INSTANCE_KEYS),
        "exact": set(EXACT_KEYS),
        "solvers": {frozenset(SOLVER_KEYS)},
    }
    for paper, report in cli_reports.items():
        assert _keys(report) == expected, paper
        assert report["schema"] == SCHEMA and report["paper"] == paper
        assert isinstance(report["instance"], dict) and isinstance(report["settings"], dict)
        assert report["exact"]["tolerances"], paper  # the conic solver's options, named
        for entry in report["solvers"].values():
            assert isinstance(entry["measures"], dict)


def test_gap_to_exact_is_the_gap_to_the_exact_objective(cli_reports):
    for report in cli_reports.values():
        ref = report["exact"]["objective"]
        for name, entry in report["solvers"].items():
            gap = (entry["objective"] - ref) / abs(ref)
            assert entry["gap_to_exact"] == pytest.approx(gap, rel=1e-12, abs=1e-15), name
            if entry["lower_bound"] is None:
                assert entry["certified_gap"] is None
            else:
                cert = (entry["objective"] - entry["lower_bound"]) / abs(entry["objective"])
                assert entry["certified_gap"] == pytest.approx(cert, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("paper", ["poe", "aroma"])
def test_library_and_command_report_the_same_solve(cli_reports, paper):
    lib = validate(paper, **CASES[paper][0]).as_dict()
    cli = cli_reports[paper]
    assert lib["instance"] == cli["instance"] and lib["settings"] == cli["settings"]
    assert set(lib["solvers"]) == set(cli["solvers"])
    for name, entry in lib["solvers"].items():  # deterministic solvers: the same objective
        assert entry["objective"] == pytest.approx(cli["solvers"][name]["objective"], rel=1e-9)


def test_without_the_exact_side_the_keys_stay():
    rep = validate("aroma", exact=False, n_items=30, n_features=5, n_triplets=40, epochs=1)
    d = rep.as_dict()
    assert set(d) == set(TOP_KEYS) and d["exact"] is None
    for entry in d["solvers"].values():
        assert set(entry) == set(SOLVER_KEYS) and entry["gap_to_exact"] is None


def test_unknown_paper_and_ssne_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="'paper' parameter"):
        validate("pca")
    with pytest.raises(ValueError, match="SSNE is not convex"):
        validate("ssne")


def test_conic_solver_is_the_exact_sides_solver():
    rep = validate("aroma", conic_solver="SCS", n_items=30, n_features=5, n_triplets=40, epochs=1)
    assert rep.exact["solver"] == "SCS" and "eps_abs" in rep.exact["tolerances"]


def test_an_unknown_setting_is_named():
    with pytest.raises(ValueError, match=r"unknown lmnn setting.*'kk'.*k, mu"):
        validate("lmnn", kk=3)
    with pytest.raises(ValueError, match="'variant' parameter"):
        validate("lmnn", variant="double")
