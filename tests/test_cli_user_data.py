"""A new user's own CSV files, end to end through the command line (issue 23).

Each test here failed on the code before the single reader: rows were dropped as a
header, the model was trained on 70% of the rows without saying so, text labels were
refused, integer labels came back as floats, and messages named no file, row or column.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric import datasets
from convexmetric.cli.main import main

NAMES = np.array(["setosa", "versicolor", "virginica"])


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def solve(features, labels, *args):
    """``convexmetric solve lmnn`` on a user's features and labels files."""
    return run("solve", "lmnn", "--features", features, "--labels", labels, *args)


def write_csv(path, rows, header=None):
    with open(path, "w", encoding="utf-8") as fh:
        if header is not None:
            fh.write(",".join(header) + "\n")
        for row in rows:
            fh.write(",".join(str(v) for v in np.atleast_1d(row)) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("user")
    X, y = datasets.load("iris")
    return {
        "dir": d,
        "X": X,
        "y": y,
        "features": write_csv(d / "F.csv", X, ["sl", "sw", "pl", "pw"]),
        "features_nh": write_csv(d / "Fnh.csv", X),
        "labels_text": write_csv(d / "L.csv", NAMES[y], ["species"]),
        "labels_int": write_csv(d / "Li.csv", y),
        "new": write_csv(d / "new.csv", X[::15]),
        "new_na": write_csv(d / "new_na.csv", [["1.5", "NA", "3", "1"], *X[1::15].tolist()]),
    }


@pytest.fixture(scope="module")
def text_model(files):
    out = files["dir"] / "m_text"
    res = solve(files["features"], files["labels_text"], "--max-iter", 100, "--out", out, "--json")
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout)


@pytest.fixture(scope="module")
def int_model(files):
    out = files["dir"] / "m_int"
    res = solve(files["features_nh"], files["labels_int"], "--max-iter", 100, "--out", out)
    assert res.exit_code == 0, res.output
    return out


def test_solve_trains_on_every_row_of_a_user_file_and_says_so(text_model):
    _, report = text_model
    assert report["n_train"] == 150 and report["n_test"] == 0
    assert report["split"] == {"kind": "none", "n_train": 150, "n_test": 0}
    assert report["inputs"]["features"]["rows"] == 150
    assert report["inputs"]["labels"]["rows"] == 150
    assert report["inputs"]["labels"]["header"] == ["species"]
    assert "knn_test_error" not in report and report["loo_train_error"] < 0.2


def test_split_stratified_reports_the_training_rows(files):
    res = solve(
        files["features_nh"], files["labels_int"], "--max-iter", 50, "--split", "stratified"
    )
    assert res.exit_code == 0, res.output
    assert "105 of 150 rows for training" in res.stdout and "45 held out" in res.stdout
    res = solve(
        files["features_nh"],
        files["labels_int"],
        "--max-iter",
        50,
        "--split",
        "stratified",
        "--json",
    )
    split = json.loads(res.stdout)["split"]
    assert split["kind"] == "stratified" and len(split["train_rows"]) == 105
    assert len(set(split["train_rows"])) == 105 and max(split["train_rows"]) < 150


def test_builtin_dataset_keeps_the_standard_split(files):
    res = run("solve", "lmnn", "--dataset", "iris", "--max-iter", 50, "--json")
    report = json.loads(res.stdout)
    assert report["split"]["kind"] == "stratified" and report["n_train"] == 105
    assert "knn_test_error" in report


def test_text_labels_round_trip_to_predict(files, text_model):
    out, _ = text_model
    res = run("predict", "--model", out, files["new"])
    assert res.exit_code == 0, res.output
    labels = res.stdout.split()
    assert len(labels) == 10 and set(labels) <= set(NAMES)
    assert labels == NAMES[files["y"][::15]].tolist()  # iris is easy: every one right
    assert "read 10 rows × 4 columns" in res.stderr


def test_integer_labels_come_back_as_integers(files, int_model, tmp_path):
    out = int_model
    res = run("predict", "--model", out, files["new"], "--json")
    preds = json.loads(res.stdout)["predictions"]
    assert all(type(p) is int for p in preds), preds
    res = run("predict", "--model", out, files["new"])
    assert res.stdout.split()[0] == "0"  # not 0.0
    res = run("predict", "--model", out, files["new"], "--out", tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().splitlines()[0] == "0"


def test_na_in_row_1_of_a_headerless_file_is_an_error_not_a_header(files, int_model, tmp_path):
    out = int_model
    e = tmp_path / "e.csv"
    res = run("transform", "--model", out, files["new_na"], "--out", e)
    assert res.exit_code == 1
    assert "'new_na.csv', row 1, column 2: missing value 'NA'" in res.stderr
    assert not e.exists()  # nothing half-written
    res = run("predict", "--model", out, files["new_na"])
    assert res.exit_code == 1 and "row 1, column 2" in res.stderr


def test_transform_reports_every_row(files, int_model, tmp_path):
    out = int_model
    res = run("transform", "--model", out, files["new"], "--out", tmp_path / "e.csv")
    assert res.exit_code == 0
    assert "transformed 10 points" in res.stdout and "read 10 rows" in res.stderr
    assert len((tmp_path / "e.csv").read_text().splitlines()) == 10


def test_small_class_message_speaks_of_the_users_labels_and_k(files, tmp_path):
    y = NAMES[files["y"]].copy()
    y[:146] = "setosa"
    y[146:149] = "rare"  # 3 rows: two target neighbours at k = 3
    y[149] = "alone"  # 1 row: no target neighbour, an impostor only (issue 65)
    labels = write_csv(tmp_path / "y.csv", y, ["species"])
    res = run("solve", "lmnn", "--features", files["features"], "--labels", labels)
    assert res.exit_code == 0, res.stderr
    assert "label 'rare' has 3 rows; with --k 3 its rows get 2 target neighbours" in res.stderr
    assert "label 'alone' has 1 row; with --k 3 it gets no target neighbour" in res.stderr
    assert "of 'y'" not in res.stderr and "SmallClassWarning" not in res.stderr  # (library's)
    res = solve(files["features"], labels, "--split", "stratified")
    assert res.exit_code == 1
    assert "label 'alone' has a single row: --split stratified needs two rows" in res.stderr
    labels = write_csv(tmp_path / "y1.csv", [f"c{i}" for i in range(150)], ["species"])
    res = run("solve", "lmnn", "--features", files["features"], "--labels", labels)
    assert res.exit_code == 1
    assert "every label has a single row: no row has a target neighbour" in res.stderr


def test_missing_cell_names_file_row_and_column(files, tmp_path):
    rows = files["X"].astype(str).tolist()
    rows[4][2] = ""
    bad = write_csv(tmp_path / "bad.csv", rows, ["sl", "sw", "pl", "pw"])
    res = run("solve", "lmnn", "--features", bad, "--labels", files["labels_int"])
    assert res.exit_code == 1
    assert "features file 'bad.csv', row 6, column 3 ('pl'): missing value" in res.stderr
    assert "could not convert" not in res.stderr


def test_non_utf8_and_semicolon_files(files, tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes("espèce\n".encode("latin-1") + b"0\n1\n" * 75)
    res = run("solve", "lmnn", "--features", files["features"], "--labels", latin)
    assert res.exit_code == 1 and "labels file" in res.stderr and "latin.csv" in res.stderr
    assert "not UTF-8" in res.stderr
    semi = tmp_path / "semi.csv"
    semi.write_text("\n".join(";".join(map(str, r)) for r in files["X"]) + "\n")
    res = run("solve", "lmnn", "--features", semi, "--labels", files["labels_int"])
    assert res.exit_code == 1 and "semicolons" in res.stderr and len(res.stderr) < 300


def test_header_flags(files, tmp_path):
    out = tmp_path / "m"
    res = solve(
        files["features_nh"], files["labels_int"], "--no-header", "--max-iter", 20, "--out", out
    )
    assert res.exit_code == 0, res.output
    res = run("transform", "--model", out, files["new"], "--header", "--out", tmp_path / "e.npy")
    assert res.exit_code == 0 and "read 9 rows" in res.stderr  # row 1 taken as a header
    assert np.load(tmp_path / "e.npy").shape == (9, 4)


def test_triadic_comparisons_are_accepted(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    feats = write_csv(tmp_path / "X.csv", X)
    comps = write_csv(tmp_path / "c.csv", [[0, 1, 2], [3, 4, 5], [6, 7, 0]], ["i", "j", "k"])
    res = run(
        "solve", "poe", "--kind", "linear", "--comparisons", comps, "--features", feats, "--json"
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["comparisons"] == 3


def test_comparisons_format_is_in_help():
    text = " ".join(run("solve", "poe", "--help").stdout.split())
    assert "i,j,k,l" in text and "0-based" in text and "d(i,j) + 1 <= d(k,l)" in text
    text = " ".join(run("filter", "--help").stdout.split())
    assert "i,j,k,l" in text and "0,1,0,2" in text


def test_out_of_range_indices_name_row_and_column(tmp_path):
    feats = write_csv(tmp_path / "X.csv", np.random.default_rng(0).normal(size=(8, 3)))
    comps = write_csv(tmp_path / "c.csv", [[0, 1, 0, 2], [1, 2, 0, 30]], ["i", "j", "k", "l"])
    res = run("solve", "poe", "--kind", "linear", "--comparisons", comps, "--features", feats)
    assert res.exit_code == 1
    assert "comparisons file 'c.csv', row 3, column 4 ('l'): index 30 is past" in res.stderr
    pairs = write_csv(tmp_path / "p.csv", [[0, 1, 1], [9, 2, -1]], ["i", "j", "r"])
    res = run("solve", "maurer", "--features", feats, "--pairs", pairs)
    assert res.exit_code == 1 and "pairs file 'p.csv', row 3, column 1 ('i'): index 9" in res.stderr


def test_solve_with_na_in_row_1_names_the_cell_not_a_length_mismatch(files, tmp_path):
    rows = files["X"].astype(str).tolist()
    rows[0][1] = "NA"
    feats = write_csv(tmp_path / "na.csv", rows)  # no header: row 1 is data
    res = run("solve", "lmnn", "--features", feats, "--labels", files["labels_int"])
    assert res.exit_code == 1
    assert "features file 'na.csv', row 1, column 2: missing value 'NA'" in res.stderr
    assert "rows but" not in res.stderr and "entries" not in res.stderr
