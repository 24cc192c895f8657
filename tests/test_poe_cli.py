"""The click front end for POE and comparison filtering, through CliRunner."""

import json

import numpy as np
from click.testing import CliRunner

from convexmetric.cli.main import main
from convexmetric.comparisons import Comparisons


def test_filter_reports_stages_and_writes_csv(tmp_path):
    src = tmp_path / "c.csv"
    src.write_text("i,j,k,l\n0,1,0,2\n0,2,0,1\n0,1,1,2\n1,2,0,2\n0,1,1,2\n0,1,0,2\n")
    out = tmp_path / "f.csv"
    res = CliRunner().invoke(main, ["filter", str(src), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["input"] == 6 and rep["output"] == 2
    assert rep["removed"]["duplicates"] == [4, 5]
    assert rep["removed"]["length2_cycles"] == [0, 1]
    kept = Comparisons.read_csv(out).to_array().tolist()
    assert kept == [[0, 1, 1, 2], [1, 2, 0, 2]]


def test_filter_bad_file_is_one_clean_line(tmp_path):
    src = tmp_path / "c.csv"
    src.write_text("i,j,k,l\n0,1,1,0\n")
    res = CliRunner().invoke(main, ["filter", str(src)])
    assert res.exit_code != 0 and "same pair" in res.output and "Traceback" not in res.output


def test_validate_poe_json():
    res = CliRunner().invoke(main, ["validate", "poe", "--kind", "linear", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["paper"] == "poe" and set(out["exact"]) >= {"objective", "status", "solver"}
    (sub,) = out["solvers"].values()
    assert abs(sub["gap_to_exact"]) <= 1e-3


def test_solve_multi_from_files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    np.save(tmp_path / "K1.npy", X @ X.T)
    np.save(tmp_path / "K2.npy", np.eye(10))
    (tmp_path / "c.csv").write_text("i,j,k,l\n0,1,0,2\n3,4,3,5\n6,7,6,8\n")
    out = tmp_path / "out"
    args = [
        "solve",
        "poe",
        "--kind",
        "multi",
        "--diagonal",
        "--comparisons",
        str(tmp_path / "c.csv"),
        "--kernel",
        str(tmp_path / "K1.npy"),
        "--kernel",
        str(tmp_path / "K2.npy"),
        "--out",
        str(out),
        "--json",
    ]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["training_gauc"] == 1.0 and len(rep["kernel_weights"]) == 2
    assert sorted(p.name for p in out.iterdir()) == [
        "W0.npy",
        "W1.npy",
        "convexmetric-output.json",
        "embedding.npy",
        "report.json",
    ]


def test_solve_errors_name_the_problem(tmp_path):
    (tmp_path / "c.csv").write_text("i,j,k,l\n0,1,0,20\n")
    np.save(tmp_path / "K.npy", np.eye(5))
    res = CliRunner().invoke(
        main,
        [
            "solve",
            "poe",
            "--comparisons",
            str(tmp_path / "c.csv"),
            "--kernel",
            str(tmp_path / "K.npy"),
        ],
    )
    assert res.exit_code != 0 and "'c.csv', row 2, column 4 ('l'): index 20 is past" in res.output
    res = CliRunner().invoke(
        main, ["solve", "poe", "--kind", "linear", "--comparisons", str(tmp_path / "c.csv")]
    )
    assert res.exit_code != 0 and "--features" in res.output


def test_solve_from_files_refuses_the_built_in_instance_options(tmp_path):
    (tmp_path / "c.csv").write_text("i,j,k,l\n0,1,0,2\n")
    np.save(tmp_path / "X.npy", np.eye(3))
    base = [
        "solve",
        "poe",
        "--kind",
        "linear",
        "--comparisons",
        str(tmp_path / "c.csv"),
        "--features",
        str(tmp_path / "X.npy"),
    ]
    for flag in ("--seed", "--n-comparisons"):
        res = CliRunner().invoke(main, [*base, flag, "3"])
        assert res.exit_code == 2 and flag in res.output and "not used" in res.output


def test_validate_n_per_class_below_five_is_a_usage_error():
    """--n-per-class 1 to 4 crashed inside scikit-learn's split (a test part smaller than
    the ten classes)."""
    from click.testing import CliRunner

    from convexmetric.cli.main import main

    out = CliRunner().invoke(main, ["validate", "poe", "--n-per-class", "4", "--no-exact"])
    assert out.exit_code == 2 and "--n-per-class" in out.output and "x>=5" in out.output
