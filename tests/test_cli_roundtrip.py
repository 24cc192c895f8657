"""Every CSV the command line writes reads back, through a CSV reader, to the same values;
a spreadsheet's export (UTF-8 BOM, CRLF line ends, quoted text labels with commas,
quotes and line breaks) is read as written, end to end."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric.cli.main import main
from convexmetric.comparisons import Comparisons
from convexmetric.poe.graph import filter_comparisons

#: labels as a spreadsheet holds them: a comma, quotes, a line break (Alt+Enter), a ';'
LABELS = ["Syrah; young", "Pinot Noir, old", 'Merlot "reserve"', "Rosé\nnew"]


def run(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def spreadsheet_csv(path, header, rows):
    """Write ``rows`` as a spreadsheet exports them: BOM, CRLF, every text cell quoted."""
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


@pytest.fixture(scope="module")
def wine_like(tmp_path_factory):
    """Four well-separated classes of 12 points with spreadsheet labels, and a model
    (``solve lmnn --out``); the directory and the labels."""
    d = tmp_path_factory.mktemp("sheet")
    rng = np.random.default_rng(0)
    centres = 8.0 * np.eye(4)[:, :3]
    X = np.vstack([c + rng.normal(scale=0.5, size=(12, 3)) for c in centres])
    y = np.repeat(LABELS, 12)
    features = spreadsheet_csv(d / "f.csv", ["alcohol", "acidity", "colour"], X.tolist())
    labels = spreadsheet_csv(d / "l.csv", ["variety"], [[v] for v in y])
    assert open(features, "rb").read(3) == b"\xef\xbb\xbf" and b"\r\n" in open(labels, "rb").read()
    run("solve", "lmnn", "--features", features, "--labels", labels, "--k", 2, "--out", d / "m")
    return d, y


def test_spreadsheet_labels_come_back_identical_end_to_end(wine_like):
    d, y = wine_like
    run("predict", "--model", d / "m", d / "f.csv", "--out", d / "p.csv")
    rows = read_csv(d / "p.csv")
    assert rows[0] == ["label"] and [r for r in rows[1:] if len(r) != 1] == []
    assert [r[0] for r in rows[1:]] == y.tolist()  # well separated: every one right
    # and the file reads back through convexmetric's own reader too
    from convexmetric.cli.reader import read_table

    assert read_table(d / "p.csv", "labels").labels().tolist() == y.tolist()


def test_transform_csv_reads_back_to_the_same_floats(wine_like, tmp_path):
    d, _ = wine_like
    run("transform", "--model", d / "m", d / "f.csv", "--out", tmp_path / "z.csv")
    run("transform", "--model", d / "m", d / "f.csv", "--out", tmp_path / "z.npy")
    rows = read_csv(tmp_path / "z.csv")
    Z = np.load(tmp_path / "z.npy")
    assert rows[0] == [f"z{i}" for i in range(Z.shape[1])]
    np.testing.assert_array_equal(np.array(rows[1:], dtype=float), Z)  # exact, not close


def test_predict_integer_labels_csv_reads_back(tmp_path):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(10, 2)), 6 + rng.normal(size=(10, 2))])
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", np.repeat([-1, 7], 10))
    run(
        "solve",
        "lmnn",
        "--features",
        tmp_path / "X.npy",
        "--labels",
        tmp_path / "y.npy",
        "--k",
        2,
        "--out",
        tmp_path / "m",
    )
    run("predict", "--model", tmp_path / "m", tmp_path / "X.npy", "--out", tmp_path / "p.csv")
    rows = read_csv(tmp_path / "p.csv")  # no header in, none out
    assert [int(r[0]) for r in rows] == [-1] * 10 + [7] * 10


def test_filter_csv_reads_back_to_the_kept_comparisons(tmp_path):
    src = tmp_path / "c.csv"  # a spreadsheet's export: BOM and CRLF
    src.write_bytes(b"\xef\xbb\xbfi,j,k,l\r\n0,1,0,2\r\n0,2,0,1\r\n0,1,1,2\r\n1,2,0,2\r\n")
    run("filter", src, "--out", tmp_path / "f.csv")
    rows = read_csv(tmp_path / "f.csv")
    kept = filter_comparisons(Comparisons.read_csv(src), random_state=0).comparisons
    assert rows[0] == ["i", "j", "k", "l"]
    assert [[int(v) for v in r] for r in rows[1:]] == kept.to_array().tolist()
    assert Comparisons.read_csv(tmp_path / "f.csv").to_array().tolist() == rows_as_ints(rows)


def rows_as_ints(rows):
    return [[int(v) for v in r] for r in rows[1:]]
