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
    assert abs(out["exact"]["objective"] - out["exact"]["measures"]["cvxpy_value"]) <= 1e-6
    (entry,) = out["solvers"].values()
    # tol (1e-4) plus CLARABEL's accuracy ("optimal_inaccurate" here: its value to ~1e-6)
    acc = 1e-7 if out["exact"]["status"] == "optimal" else 1e-6
    assert entry["status"] == "optimal" and abs(entry["gap_to_exact"]) <= 1e-4 + acc
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
    assert entry["status"] == "optimal" and abs(entry["gap_to_exact"]) <= 1e-4 + 1e-7
    assert entry["lower_bound"] <= out["exact"]["objective"] * (1 + 1e-7)


def test_validate_kernel_default_rbf_json():
    """The default kernel variant (rbf, iris 10 per class): an optimum at 0 (2.8e-4 the
    least eigenvalue of K) where CLARABEL failed and the command ended in an error; SCS
    solves it, and both gaps are floored at the zero point's scale (the certified
    gap printed 1.0 beside "optimal")."""
    res, out = run("validate", "lmnn", "--variant", "kernel", "--json")
    assert res.exit_code == 0, res.output
    assert out["exact"]["solver"] == "SCS" and out["exact"]["status"] == "optimal"
    (entry,) = out["solvers"].values()
    assert entry["status"] == "optimal" and entry["certified_gap"] <= 1e-4
    # no worse than the exact side by more than tol; the exact side may be the worse one by
    # SCS's accuracy on this optimum at 0 (scs 3.2.4: 2.7e-3 of the zero point's floor)
    assert -1e-2 <= entry["gap_to_exact"] <= 1e-4


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


def _recording(monkeypatch, name):
    """Replace ``cli.lmnn_ext``'s estimator class ``name`` by one recording its params."""
    import convexmetric.cli.lmnn_ext as ext

    seen = {}
    base = getattr(ext, name)

    class Recording(base):
        def fit(self, X, y):
            seen.update(self.get_params())
            return super().fit(X, y)

    monkeypatch.setattr(ext, name, Recording)
    return seen


def test_solve_variants_pass_time_limit_solver_and_seed(monkeypatch):
    seen = _recording(monkeypatch, "MultiMetricLMNN")
    common = ("--dataset", "iris", "--k", "2", "--time-limit", "1e-9", "--json")
    res, out = run("solve", "lmnn", "--variant", "multi", "--n-clusters", "2", "--seed", "7",
                   *common)  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (seen["time_limit"], seen["random_state"], seen["solver"]) == (1e-9, 7, "subgradient")
    assert out["status"] == "user_limit"  # the time limit reached the solver
    seen = _recording(monkeypatch, "KernelLMNN")
    kernel = ("--variant", "kernel", "--kernel", "linear", "--solver", "exact")
    res, out = run("solve", "lmnn", *kernel, "--dataset", "iris", "--time-limit", "100", "--json")
    assert res.exit_code == 0, res.output
    assert (seen["solver"], seen["time_limit"]) == ("exact", 100.0)


def test_options_a_variant_cannot_use_are_refused():
    for args, flag in [
        (("--variant", "multi", "--n-passes", "2"), "--n-passes"),
        (("--variant", "kernel", "--energy"), "--energy"),
        (("--variant", "kernel", "--memory-limit", "1G"), "--memory-limit"),
        (("--n-clusters", "3"), "--n-clusters"),
        (("--variant", "multi", "--seed", "3"), "--seed"),  # no k-means without --n-clusters
    ]:
        res, _ = run("solve", "lmnn", "--dataset", "iris", *args)
        assert res.exit_code == 2 and flag in res.output and "not used" in res.output, args
    res, _ = run("validate", "lmnn", "--per-class", "5")
    assert res.exit_code == 2 and "--per-class" in res.output
    res, _ = run("validate", "lmnn", "--variant", "multi", "--plain")
    assert res.exit_code == 2 and "--plain" in res.output


def test_no_exact_refuses_the_conic_solver_options():
    for args, flag in [
        (("validate", "lmnn", "--conic-solver", "SCS"), "--conic-solver"),
        (("validate", "lmnn", "--plain"), "--plain"),
        (("validate", "maurer", "--conic-solver", "SCS"), "--conic-solver"),
        (("validate", "poe", "--conic-solver", "SCS"), "--conic-solver"),
        (("validate", "aroma", "--conic-solver", "SCS"), "--conic-solver"),
    ]:
        res, _ = run(*args, "--no-exact")
        assert res.exit_code == 2 and flag in res.output and "--no-exact" in res.output, args
