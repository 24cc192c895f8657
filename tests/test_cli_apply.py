"""`solve ... --out DIR`, then `convexmetric transform` / `predict` on new points."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric import LMNN, datasets
from convexmetric.cli._common import ProgressLine
from convexmetric.cli.main import main
from convexmetric.model_io import load_model
from convexmetric.progress import notify, observe


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_clean_failure(res):
    assert res.exit_code not in (0, None), res.output
    assert "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli") / "m"
    res = run("solve", "lmnn", "--dataset", "iris", "--out", d, "--json")
    assert res.exit_code == 0, res.output
    return d, json.loads(res.stdout)


@pytest.fixture(scope="module")
def raw_split():
    """The standard split of iris *before* standardisation (what a user has)."""
    X, y = datasets.load("iris")
    return datasets.split(X, y, scale=False)


def _write_csv(path, X, header=True):
    with open(path, "w") as fh:
        if header:
            fh.write(",".join(f"f{i}" for i in range(X.shape[1])) + "\n")
        for row in X:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")


def test_out_writes_model_and_keeps_legacy_files(model_dir):
    d, report = model_dir
    files = set(os.listdir(d))
    assert {"model.json", "report.json", "metric.npy", "components.npy"} <= files
    assert not [f for f in os.listdir(d.parent) if f.startswith(".")]  # no temp leftovers
    meta = json.loads((d / "model.json").read_text())
    assert meta["provenance"]["command"] == "convexmetric solve lmnn"
    assert meta["provenance"]["dataset"] == "iris"
    assert meta["provenance"]["objective"] == pytest.approx(report["objective"])
    assert meta["provenance"]["status"] == report["status"]
    assert meta["preprocessing"] == "standardize"


def test_transform_new_points_matches_the_library(tmp_path, model_dir, raw_split):
    d, _ = model_dir
    Xtr, Xte, ytr, _ = raw_split
    _write_csv(tmp_path / "new.csv", Xte)
    res = run("transform", "--model", d, tmp_path / "new.csv", "--out", tmp_path / "emb.csv")
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "emb.csv").read_text().splitlines()
    assert lines[0] == "z0,z1,z2,z3"  # a header in, a header out
    Z = np.array([[float(v) for v in ln.split(",")] for ln in lines[1:]])
    mean, scale = Xtr.mean(0), Xtr.std(0)
    est = LMNN().fit((Xtr - mean) / scale, ytr)  # what `solve lmnn` fits
    np.testing.assert_allclose(Z, est.transform((Xte - mean) / scale), rtol=1e-10, atol=1e-10)
    # .npy in, .npy out
    np.save(tmp_path / "new.npy", Xte)
    res = run("transform", "--model", d, tmp_path / "new.npy", "--out", tmp_path / "emb.npy")
    assert res.exit_code == 0, res.output
    np.testing.assert_allclose(np.load(tmp_path / "emb.npy"), Z, rtol=1e-12)


def test_predict_reproduces_the_reported_test_error(tmp_path, model_dir, raw_split):
    d, report = model_dir
    _, Xte, _, yte = raw_split
    np.save(tmp_path / "test.npy", Xte)
    res = run("predict", "--model", d, tmp_path / "test.npy", "--out", tmp_path / "p.npy")
    assert res.exit_code == 0, res.output
    pred = np.load(tmp_path / "p.npy")
    assert np.mean(pred != yte) == pytest.approx(report["knn_test_error"])
    res = run("predict", "--model", d, tmp_path / "test.npy", "--rule", "energy", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["rule"] == "energy" and len(out["predictions"]) == len(yte)
    assert np.mean(np.array(out["predictions"]) != yte) < 0.2
    res = run("predict", "--model", d, tmp_path / "test.npy")  # labels on stdout
    assert res.stdout.split() == [str(v) for v in pred]


def test_wrong_dimension_input_fails_cleanly(tmp_path, model_dir):
    d, _ = model_dir
    _write_csv(tmp_path / "bad.csv", np.ones((3, 3)))
    res = run("transform", "--model", d, tmp_path / "bad.csv", "--out", tmp_path / "e.csv")
    assert_clean_failure(res)
    assert "3 columns" in res.stderr and "expects 4 features" in res.stderr
    assert not (tmp_path / "e.csv").exists()
    assert os.listdir(tmp_path) == ["bad.csv"]  # no temporary file left either


@pytest.mark.parametrize(
    "content, message",
    [
        (b"a,b,c,d\n1,2,x,4\n", "'in.csv', row 2, column 3 ('c'): 'x' is not a number"),
        (b"", "is empty"),
        (None, "pickled"),
    ],
)
def test_bad_input_files(tmp_path, model_dir, content, message):
    d, _ = model_dir
    if content is None:
        path = tmp_path / "obj.npy"
        np.save(path, np.array([[{"x": 1}] * 4], dtype=object), allow_pickle=True)
    else:
        path = tmp_path / "in.csv"
        path.write_bytes(content)
    res = run("transform", "--model", d, path, "--out", tmp_path / "e.csv")
    assert_clean_failure(res)
    assert message in res.stderr


def test_bad_model_directories_and_outputs(tmp_path, model_dir):
    d, _ = model_dir
    _write_csv(tmp_path / "x.csv", np.ones((2, 4)))
    (tmp_path / "empty").mkdir()
    res = run("transform", "--model", tmp_path / "empty", tmp_path / "x.csv", "--out", "e.csv")
    assert_clean_failure(res)
    assert "model.json is missing" in res.stderr
    res = run("transform", "--model", d, tmp_path / "x.csv", "--out", tmp_path / "e.txt")
    assert_clean_failure(res)
    assert "use .csv or .npy" in res.stderr
    res = run("transform", "--model", d, tmp_path / "x.csv", "--out", tmp_path / "no" / "e.csv")
    assert_clean_failure(res)
    assert "does not exist" in res.stderr


def test_out_refuses_a_foreign_directory(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    res = run("solve", "lmnn", "--dataset", "iris", "--max-iter", "20", "--out", tmp_path)
    assert_clean_failure(res)
    assert "refusing to replace" in res.stderr
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_ssne_model_transforms_and_is_not_a_classifier(tmp_path):
    d = tmp_path / "s"
    res = run("solve", "ssne", "--dataset", "iris", "--max-iter", "2", "--out", d, "--json")
    assert res.exit_code == 0, res.output
    X, _ = datasets.load("iris")
    np.save(tmp_path / "x.npy", X[:5])
    res = run("transform", "--model", d, tmp_path / "x.npy", "--out", tmp_path / "z.npy")
    assert res.exit_code == 0, res.output
    Z = np.load(tmp_path / "z.npy")
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0)  # points on the sphere
    np.testing.assert_allclose(Z, load_model(d).transform(X[:5]))
    res = run("predict", "--model", d, tmp_path / "x.npy")
    assert_clean_failure(res)
    assert "not a classifier" in res.stderr


# ---- progress --------------------------------------------------------------------------


class _TTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_draws_on_a_terminal_and_erases_itself():
    stream = _TTY()
    line = ProgressLine("solve lmnn", stream=stream, min_interval=0.0)
    with observe(line):
        notify(1, 10.0)
        notify(2, 5.0, lower_bound=4.0)
    text = stream.getvalue()
    assert "solve lmnn: iteration 1, objective 10" in text
    assert "iteration 2, objective 5, certified gap 2.0e-01" in text
    line.close()
    assert stream.getvalue().endswith("\r")


def test_progress_line_is_silent_off_a_terminal():
    stream = io.StringIO()  # not a TTY
    line = ProgressLine("x", stream=stream, min_interval=0.0)
    line(1, 1.0, {})
    line.close()
    assert stream.getvalue() == ""


def test_solve_is_quiet_on_stderr_when_not_a_terminal(tmp_path):
    res = run("solve", "lmnn", "--dataset", "iris", "--max-iter", "50")
    assert res.exit_code == 0, res.output
    assert res.stderr == ""


@pytest.mark.parametrize("variant, rule", [("multi", "energy"), ("kernel", "knn")])
def test_lmnn_variants_predict_from_their_saved_model(tmp_path, raw_split, variant, rule):
    d = tmp_path / variant
    args = ["solve", "lmnn", "--dataset", "iris", "--variant", variant, "--max-iter", "100"]
    res = run(*args, "--out", d, "--json")
    assert res.exit_code == 0, res.output
    _, Xte, _, yte = raw_split
    np.save(tmp_path / "x.npy", Xte)
    res = run("predict", "--model", d, tmp_path / "x.npy", "--rule", rule, "--json")
    assert res.exit_code == 0, res.output
    pred = np.array(json.loads(res.stdout)["predictions"])
    if rule == "knn":  # the command's own kNN test error, from the saved model
        report = json.loads((d / "report.json").read_text())
        assert np.mean(pred != yte) == pytest.approx(report["knn_test_error"])
    else:
        assert np.mean(pred != yte) < 0.2


def test_out_refuses_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("solve", "lmnn", "--dataset", "iris", "--max-iter", "20", "--out", ".")
    assert_clean_failure(res)
    assert "working directory" in res.stderr


def test_solve_maurer_model_maps_raw_points_as_the_solver_saw_them(tmp_path, raw_split):
    """``solve maurer`` standardises and divides by the training diameter; the model must too."""
    from sklearn.preprocessing import StandardScaler

    from convexmetric.preprocessing import DiameterScaler

    d = tmp_path / "maurer"
    res = run("solve", "maurer", "--dataset", "iris", "--out", d, "--json")
    assert res.exit_code == 0, res.output
    Xtr_raw, Xte_raw = raw_split[0], raw_split[1]
    sc = StandardScaler().fit(Xtr_raw)
    Xtr = sc.transform(Xtr_raw)
    expected = (sc.transform(Xte_raw) / DiameterScaler().fit(Xtr).diameter_) @ np.load(
        d / "components.npy"
    ).T
    _write_csv(tmp_path / "new.csv", Xte_raw)
    out = tmp_path / "emb.npy"
    res = run("transform", "--model", d, tmp_path / "new.csv", "--out", out)
    assert res.exit_code == 0, res.output
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "variant, args, expected",
    [("multi", [], 3000), ("multi", ["--max-iter", "7"], 7), ("single", [], 3000)],
)
def test_lmnn_max_iter_defaults_to_each_estimators_own(monkeypatch, variant, args, expected):
    # max_iter caps each estimator's whole fit; the command passes it on only when given
    from convexmetric.lmnn import MultiMetricLMNN

    seen = {}
    for cls in (LMNN, MultiMetricLMNN):
        original = cls.fit

        def spy(self, *a, _original=original, **k):
            seen[type(self).__name__] = self.max_iter
            return _original(self, *a, **k)

        monkeypatch.setattr(cls, "fit", spy)
    res = run("solve", "lmnn", "--dataset", "iris", "--variant", variant, *args, "--json")
    assert res.exit_code == 0, res.output
    name = "MultiMetricLMNN" if variant == "multi" else "LMNN"
    assert seen[name] == expected
