"""``convexmetric transform`` and ``convexmetric predict``: apply a saved model.

A model directory is what ``convexmetric solve METHOD ... --out DIR`` writes (see
:mod:`convexmetric.model_io`). Inputs are CSV (numbers, comma-separated; a header row
with --header or when every cell of the first row is non-numeric) or .npy files with
one point per row, read by :mod:`.reader` (the rows read are reported); the output
format follows the output file's extension (.csv or .npy), and the file is written
atomically (a temporary file renamed into place), so it is never left half-written.
"""

from __future__ import annotations

import csv
import os

import click
import numpy as np

from .._atomic import atomic_file
from ..model_io import load_model
from ._common import HEADER_OPTION, check_output_file, emit, library_errors
from .inputs import read
from .options import JSON_OPTION

_model_opt = click.option(
    "--model",
    "model_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Model directory written by `convexmetric solve METHOD ... --out DIR`.",
)
_input_arg = click.argument("input_file", metavar="INPUT", type=click.Path(exists=True))
_json = JSON_OPTION
OUTPUT_FORMATS = (".csv", ".npy")


def _read_input(path):
    """``(header_or_None, X)`` from a .csv/.npy/.npz file of points."""
    table = read(path, "INPUT")
    return table.header, table.floats()


def _apply(method, input_file, X, **kw):
    """``method(X)``; a problem with the points names the input file."""
    try:
        return method(X, **kw)
    except ValueError as exc:
        msg = str(exc)
        if msg.startswith("'X'"):
            msg = f"INPUT {input_file!r}{msg[3:]}"
        raise ValueError(msg) from None


def _output_format(out):
    ext = os.path.splitext(out)[1].lower()
    if ext not in OUTPUT_FORMATS:
        raise ValueError(
            f"--out {out!r}: unsupported extension {ext or '(none)'!r}; use .csv or .npy."
        )
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise ValueError(f"--out {out!r}: directory {parent!r} does not exist.")
    if os.path.isdir(out):
        raise ValueError(f"--out {out!r} is a directory; give a file name.")
    check_output_file(out)
    return ext


def _format_cell(v):
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v.item() if isinstance(v, np.generic) else v)


def _cell(v):
    """A cell for the ``csv`` writer: a Python float (written as its exact ``repr``), int
    or string (quoted: a text label may hold commas, quotes or line breaks)."""
    v = v.item() if isinstance(v, np.generic) else v
    return float(v) if isinstance(v, float) else v if isinstance(v, int) else str(v)


def write_array(out, arr, header=None):
    """Write ``arr`` to ``out`` (.csv or .npy) atomically: a temporary file, then rename.

    A .csv file is written by Python's ``csv`` module: numbers bare (floats as their
    exact ``repr``), text cells quoted, so a CSV reader gets back the same values."""
    ext = _output_format(out)
    arr = np.asarray(arr)
    with atomic_file(out, "wb" if ext == ".npy" else "w") as fh:
        if ext == ".npy":
            np.save(fh, arr, allow_pickle=False)
        else:
            if header is not None:
                csv.writer(fh, lineterminator="\n").writerow(header)
            rows = csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
            rows.writerows([_cell(v) for v in row] for row in arr.reshape(len(arr), -1))


@click.command("transform", short_help="Map new points through a saved model.")
@_model_opt
@_input_arg
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Output file (.csv or .npy), one transformed point per row; written atomically.",
)
@HEADER_OPTION
@_json
def TRANSFORM(model_dir, input_file, out, as_json):
    """Map the points of INPUT (.csv or .npy, one per row) through the model in --model.

    Linear models (LMNN, POE, hyperbolic PCA) give ``x ↦ L x``; kernel models
    ``x ↦ L k(x, X_train)``; SSNE its embedding on the sphere. Multi-metric LMNN and
    bilinear similarities (AROMA, OASIS) have no transform.
    """
    with library_errors():
        model = load_model(model_dir)
        header, X = _read_input(input_file)
        Z = _apply(model.transform, input_file, X)
        names = None if header is None else [f"z{i}" for i in range(Z.shape[1])]
        write_array(out, Z, names)
    report = {
        "command": "transform",
        "model": model_dir,
        "estimator": model.estimator,
        "input": input_file,
        "output": out,
        "n_points": int(Z.shape[0]),
        "n_components": int(Z.shape[1]),
    }
    emit(report, as_json, [f"transformed {Z.shape[0]} points to {Z.shape[1]} columns: {out}"])


@click.command("predict", short_help="Classify new points with a saved LMNN model.")
@_model_opt
@_input_arg
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file (.csv or .npy), one label per row (default: print the labels).",
)
@click.option(
    "--rule",
    type=click.Choice(["knn", "energy"]),
    default="knn",
    show_default=True,
    help="kNN vote under the learned metric, or energy-based classification (eq. 15).",
)
@HEADER_OPTION
@_json
def PREDICT(model_dir, input_file, out, rule, as_json):
    """Classify the points of INPUT with the LMNN classifier saved in --model."""
    with library_errors():
        model = load_model(model_dir)
        header, X = _read_input(input_file)
        labels = _apply(model.predict, input_file, X, rule=rule)
        if out is not None:
            write_array(out, labels, None if header is None else ["label"])
    report = {
        "command": "predict",
        "model": model_dir,
        "estimator": model.estimator,
        "rule": rule,
        "input": input_file,
        "output": out,
        "n_points": len(labels),
    }
    if out is None:
        report["predictions"] = labels.tolist()
        lines = [_format_cell(v) for v in labels]
    else:
        lines = [f"predicted {len(labels)} labels ({rule}): {out}"]
    emit(report, as_json, lines)


COMMANDS = [TRANSFORM, PREDICT]
__all__ = ["COMMANDS", "PREDICT", "TRANSFORM", "write_array"]
