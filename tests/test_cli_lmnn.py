"""The click front end for LMNN, through CliRunner."""

import json

import numpy as np
from click.testing import CliRunner

from convexmetric.cli.main import main


def test_datasets_lists_builtins():
    res = CliRunner().invoke(main, ["datasets", "--json"])
    assert res.exit_code == 0
    info = json.loads(res.output)
    assert {"iris", "wine", "breast_cancer", "digits", "zebra"} <= set(info)


def test_validate_default_instance_json():
    res = CliRunner().invoke(main, ["validate", "lmnn", "--json", "--no-plain"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["paper"] == "lmnn" and out["instance"]["name"] == "iris"
    assert set(out["exact"]) >= {"objective", "seconds", "status", "solver"}
    sub = out["solvers"]["subgradient"]
    assert set(sub) >= {"objective", "seconds", "status", "gap_to_exact"}
    assert 0 <= sub["gap_to_exact"] <= 1e-4


def test_solve_from_files_writes_atomically(tmp_path):
    from convexmetric import datasets

    X, y = datasets.load("iris")
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.csv", y, delimiter=",", header="label", comments="")
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main,
        [
            "solve",
            "lmnn",
            "--features",
            str(tmp_path / "X.npy"),
            "--labels",
            str(tmp_path / "y.csv"),
            "--out",
            str(out),
            "--json",
            "--split",
            "stratified",
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["status"] == "optimal" and report["knn_test_error"] <= 0.1
    assert report["split"]["kind"] == "stratified" and report["split"]["n_train"] == 105
    assert report["inputs"]["labels"]["rows"] == 150
    names = {p.name for p in out.iterdir()}
    assert {"components.npy", "metric.npy", "report.json", "model.json"} <= names
    # the "optimal" re-checked by the verifier, from the same files and split
    check = CliRunner().invoke(
        main,
        [
            "verify",
            "--model",
            str(out),
            "--features",
            str(tmp_path / "X.npy"),
            "--labels",
            str(tmp_path / "y.csv"),
            "--split",
            "stratified",
            "--json",
        ],
    )
    assert check.exit_code == 0, check.output
    assert json.loads(check.output)["verified"] is True
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers
    M = np.load(out / "metric.npy")
    L = np.load(out / "components.npy")
    assert np.allclose(L.T @ L, M)


def test_library_errors_are_one_clean_line(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["solve", "lmnn", "--dataset", "iris", "--k", "0"])
    assert res.exit_code != 0
    assert "Invalid value for '--k'" in res.output  # the option the user typed
    assert "Traceback" not in res.output
    np.save(tmp_path / "X.npy", np.zeros((5, 2)))
    np.save(tmp_path / "y.npy", np.zeros(4))
    res = runner.invoke(
        main,
        [
            "solve",
            "lmnn",
            "--features",
            str(tmp_path / "X.npy"),
            "--labels",
            str(tmp_path / "y.npy"),
        ],
    )
    assert (
        res.exit_code != 0
        and "the labels file has 4 rows but the features file has 5" in res.output
    )
    res = runner.invoke(main, ["solve", "lmnn"])
    assert res.exit_code != 0 and "no input" in res.output
    # nothing half-written on failure
    out = tmp_path / "never"
    res = runner.invoke(
        main, ["solve", "lmnn", "--dataset", "iris", "--mu", "2", "--out", str(out)]
    )
    assert res.exit_code != 0 and not out.exists()
