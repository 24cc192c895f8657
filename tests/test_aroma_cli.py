"""``convexmetric solve aroma|oasis`` and ``validate aroma`` through click's CliRunner."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from convexmetric.cli.main import main
from convexmetric.datasets import bag_of_features


@pytest.fixture
def runner():
    return CliRunner()


@pytest.mark.parametrize("variant", ["diagonal", "factored", "oasis"])
def test_solve_aroma_builtin_json(runner, variant, tmp_path):
    out = tmp_path / "res"
    args = ["solve", "aroma", "--variant", variant, "--dataset", "wine", "--n-iter", "300"]
    res = runner.invoke(
        main, [*args, "--precision-at", "1", "--precision-at", "10", "--json", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert set(rep["precision_at_k"]) == {"1", "10"} and 0 <= rep["map"] <= 1
    assert rep["rounds"] == 300 and rep["shape"] == [13, 13]
    assert np.load(out / "W.npy").shape == (13, 13)
    assert json.loads((out / "report.json").read_text())["method"] == rep["method"]
    if variant == "factored":
        assert np.load(out / "Omega.npy").shape == (13, 13)


def test_solve_oasis_sparse_files_human_output(runner, tmp_path):
    X, y = bag_of_features(150, 60, 3, n_tokens=8, group_size=4, class_groups=3)
    sp.save_npz(tmp_path / "X.npz", X)
    np.save(tmp_path / "y.npy", y)
    args = ["solve", "oasis", "--features", str(tmp_path / "X.npz"), "--labels"]
    res = runner.invoke(main, [*args, str(tmp_path / "y.npy"), "--n-iter", "500", "--C", "0.5"])
    assert res.exit_code == 0, res.output
    assert "OASIS on X.npz: W 60×60, 500 rounds" in res.output
    assert "P@10=" in res.output and "identity W = I" in res.output


def test_solve_bad_input_clean_errors(runner):
    res = runner.invoke(main, ["solve", "aroma", "--dataset", "iris", "--r", "-1"])
    assert res.exit_code != 0 and "'r' parameter of DiagonalAROMA" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(main, ["solve", "oasis", "--dataset", "iris", "--C", "0"])
    assert res.exit_code != 0 and "'C' parameter of OASIS" in res.output
    # without inputs, solve aroma runs on the built-in bag of words (tests/test_readme_commands)


def test_validate_aroma_json(runner):
    args = ["validate", "aroma", "--n-items", "30", "--n-features", "5", "--n-triplets", "40"]
    res = runner.invoke(main, [*args, "--epochs", "5", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["exact"]["status"] == "optimal" and rep["exact"]["solver"] == "CLARABEL"
    assert set(rep["solvers"]) == {"d-AROMA", "f-AROMA", "OASIS"}
    for v in rep["solvers"].values():  # nobody beats the certified optimum
        assert v["gap_to_exact"] >= -1e-6 and v["measures"]["mean_hinge"] >= 0


def test_solve_aroma_refuses_the_other_variants_parameter(runner):
    for variant, flag in (("oasis", "--r"), ("diagonal", "--C"), ("factored", "--C")):
        args = ["solve", "aroma", "--variant", variant, "--dataset", "wine", flag, "0.5"]
        res = runner.invoke(main, args)
        assert res.exit_code == 2 and flag in res.output and "not used" in res.output
