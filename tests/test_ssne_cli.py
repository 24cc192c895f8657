"""``convexmetric solve ssne`` through click's CliRunner."""

import json

import numpy as np
from click.testing import CliRunner

from convexmetric.cli.main import main


def _run(*args):
    return CliRunner().invoke(main, ["solve", "ssne", *args])


def test_solve_builtin_dataset_json_and_out(tmp_path):
    out = tmp_path / "res"
    r = _run(
        "--dataset", "iris", "--max-iter", "3", "--n-components", "6", "--json", "--out", str(out)
    )
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["method"] == "ssne" and rep["instance"] == "iris" and rep["n_train"] == 105
    assert len(rep["history"]) == 4 and rep["objective"] == min(rep["history"])
    assert 0.0 <= rep["knn_test_error"] <= 1.0
    W = np.load(out / "W.npy")
    assert W.shape == (5, 6)
    assert json.loads((out / "report.json").read_text())["objective"] == rep["objective"]


def test_solve_from_files_is_seeded(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    np.save(tmp_path / "X.npy", X)
    np.savetxt(tmp_path / "y.csv", y, delimiter=",")
    args = [
        "--features",
        str(tmp_path / "X.npy"),
        "--labels",
        str(tmp_path / "y.csv"),
        "--max-iter",
        "3",
        "--seed",
        "5",
        "--json",
    ]
    a, b = _run(*args), _run(*args)
    assert a.exit_code == 0, a.output
    assert json.loads(a.output)["history"] == json.loads(b.output)["history"]
    plain = _run(*args[:-1])
    assert plain.exit_code == 0 and "SSNE on X.npy" in plain.output


def test_solve_from_pairs_file(tmp_path):
    np.save(tmp_path / "X.npy", np.random.default_rng(1).normal(size=(6, 2)))
    (tmp_path / "p.csv").write_text("i,j,r\n0,1,1\n2,3,-1\n4,5,0.5\n1,4,0\n")
    r = _run(
        "--features",
        str(tmp_path / "X.npy"),
        "--pairs",
        str(tmp_path / "p.csv"),
        "--max-iter",
        "2",
        "--json",
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["n_pairs"] == 4


def test_bad_input_is_one_clean_message(tmp_path):
    np.save(tmp_path / "X.npy", np.zeros((3, 2)))
    (tmp_path / "p.csv").write_text("i,j,r\n0,1,2.0\n")
    r = _run("--features", str(tmp_path / "X.npy"), "--pairs", str(tmp_path / "p.csv"))
    assert r.exit_code != 0 and "'s' must lie in [-1, 1]" in r.output
    assert "Traceback" not in r.output
    r = _run("--dataset", "iris", "--n-components", "0")
    assert r.exit_code != 0 and "'n_components' parameter of SSNE" in r.output
    r = _run("--dataset", "iris", "--loss-weight", "-1")
    assert r.exit_code != 0 and "'loss_weight' parameter of SSNE" in r.output
    r = _run("--max-iter", "1")
    assert r.exit_code != 0 and "no input" in r.output


def test_pairs_refuse_k_and_split(tmp_path):
    np.save(tmp_path / "X.npy", np.arange(12.0).reshape(6, 2))
    (tmp_path / "p.csv").write_text("i,j,s\n0,1,1\n2,3,-1\n")
    base = [
        "solve",
        "ssne",
        "--features",
        str(tmp_path / "X.npy"),
        "--pairs",
        str(tmp_path / "p.csv"),
    ]
    for extra, flag in (
        (["--n-neighbors", "5"], "--n-neighbors"),
        (["--split", "stratified"], "--split"),
    ):
        res = CliRunner().invoke(main, [*base, *extra])
        assert res.exit_code == 2 and flag in res.output and "not used" in res.output
