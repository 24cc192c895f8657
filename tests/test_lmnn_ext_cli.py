"""CLI options for the LMNN extensions (``solve lmnn`` / ``validate lmnn``)."""

import json

from click.testing import CliRunner

from convexmetric.cli.main import main


def run(*args):
    res = CliRunner().invoke(main, list(args))
    return res, (json.loads(res.output) if res.exit_code == 0 and "--json" in args else None)


def test_validate_multi_metric_json():
    res, out = run("validate", "lmnn", "--variant", "multi", "--per-class", "6", "--json")
    assert res.exit_code == 0, res.output
    assert out["exact"]["solver"] == "CLARABEL"
    assert abs(out["exact"]["objective"] - out["exact"]["cvxpy_value"]) <= 1e-6
    (entry,) = out["solvers"].values()
    # tol (1e-4) plus CLARABEL's accuracy ("optimal_inaccurate" here: its value to ~1e-6)
    acc = 1e-7 if out["exact"]["status"] == "optimal" else 1e-6
    assert entry["status"] == "optimal" and abs(entry["relative_gap"]) <= 1e-4 + acc
    assert entry["lower_bound"] <= out["exact"]["objective"] * (1 + acc)


def test_validate_kernel_linear_json():
    res, out = run(
        "validate",
        "lmnn",
        "--variant",
        "kernel",
        "--kernel",
        "linear",
        "--per-class",
        "5",
        "--json",
    )
    assert res.exit_code == 0, res.output
    (entry,) = out["solvers"].values()
    assert out["exact"]["status"] == "optimal"  # tol (1e-4) plus CLARABEL's accuracy
    assert entry["status"] == "optimal" and abs(entry["relative_gap"]) <= 1e-4 + 1e-7
    assert entry["lower_bound"] <= out["exact"]["objective"] * (1 + 1e-7)


def test_solve_single_with_extensions_and_energy():
    res, out = run(
        "solve",
        "lmnn",
        "--dataset",
        "wine",
        "--energy",
        "--n-passes",
        "2",
        "--search",
        "auto",
        "--n-components",
        "3",
        "--pca",
        "8",
        "--json",
    )
    assert res.exit_code == 0, res.output
    assert out["variant"] == "single" and 0 <= out["energy_test_error"] <= 1
    assert out["n_passes"] == 2


def test_solve_multi_writes_metrics(tmp_path):
    res, _ = run(
        "solve",
        "lmnn",
        "--dataset",
        "circles",
        "--variant",
        "multi",
        "--k",
        "1",
        "--n-clusters",
        "3",
        "--out",
        str(tmp_path),
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "metrics.npy").exists() and "multi" in res.output


def test_bad_options_are_clean_errors():
    res, _ = run("solve", "lmnn", "--dataset", "iris", "--n-components", "9")
    assert res.exit_code != 0 and "'n_components'" in res.output and "Traceback" not in res.output
    res, _ = run("solve", "lmnn", "--dataset", "iris", "--variant", "multi", "--n-clusters", "1000")
    assert res.exit_code != 0 and "'n_clusters'" in res.output
