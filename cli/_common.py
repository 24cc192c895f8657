"""Shared pieces of the command line: input loading, atomic output, JSON, errors."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile

import click
import numpy as np

from .. import datasets
from .._validation import check_labels, check_matrix

DATASET_CHOICE = click.Choice(sorted(datasets.names() + list(datasets.ALIASES)))


#: ``--dataset``, ``--features``, ``--labels``: the labelled-data inputs of every method.
DATA_OPTIONS = [
    click.option(
        "--dataset", type=DATASET_CHOICE, help="A built-in data set (see `convexmetric datasets`)."
    ),
    click.option(
        "--features",
        type=click.Path(exists=True, dir_okay=False),
        help="Features file (.npy, .npz, .csv); rows are points.",
    ),
    click.option(
        "--labels",
        type=click.Path(exists=True, dir_okay=False),
        help="Labels file (.npy, .npz, .csv), one label per row of --features.",
    ),
]


def apply_options(options):
    """Decorate a click command with a list of options (in the listed order)."""

    def deco(f):
        for opt in reversed(options):
            f = opt(f)
        return f

    return deco


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses NaN and ±inf (a NaN passes every comparison)."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{rv} is not a finite number.", param, ctx)
        return rv


#: Option types for parameters that reach solvers without an estimator's checks.
POSITIVE_FLOAT = FiniteFloatRange(min=0.0, min_open=True)
POSITIVE_INT = click.IntRange(min=1)


class CLIError(click.ClickException):
    """A library error shown as one clean line with a non-zero exit."""


@contextlib.contextmanager
def library_errors():
    """Turn library errors (ValueError, solver failures) into one clean message."""
    try:
        yield
    except click.ClickException:
        raise
    except (ValueError, TypeError, RuntimeError, OSError, KeyError) as exc:
        raise CLIError(" ".join(str(exc).split())) from None  # always one line


def load_array(path, name="array"):
    """Load a .npy, .npz (first array) or .csv (numeric, optional header) file."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npy":
        return np.load(path, allow_pickle=False)
    if ext == ".npz":
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.keys())
            if not keys:
                raise ValueError(f"{name} file {path!r} holds no arrays.")
            return z[keys[0]]
    if ext in (".csv", ".txt"):
        return load_csv(path)[1]
    raise ValueError(
        f"{name} file {path!r}: unsupported extension {ext!r} (use .npy, .npz or .csv)."
    )


def load_csv(path):
    """Read a numeric CSV; a first row that is not numeric is taken as a header.

    Returns ``(header or None, array)``.
    """
    with open(path, encoding="utf-8") as fh:
        lines = [ln.strip() for ln in fh if ln.strip()]
    if not lines:
        raise ValueError(f"CSV file {path!r} is empty.")
    header = None
    first = lines[0].split(",")
    try:
        [float(v) for v in first]
    except ValueError:
        header, lines = [h.strip() for h in first], lines[1:]
    if not lines:
        raise ValueError(f"CSV file {path!r} has a header but no rows.")
    try:
        arr = np.array([[float(v) for v in ln.split(",")] for ln in lines])
    except ValueError as exc:
        raise ValueError(f"CSV file {path!r}: {exc}") from None
    return header, arr


def load_comparisons(path):
    """Read a comparisons CSV (header ``i,j,k,l``); a file without comparisons is an error."""
    from ..comparisons import Comparisons, check_comparisons

    return check_comparisons(Comparisons.read_csv(path), name=os.path.basename(path))


def load_xy(dataset, features, labels, *, split=True):
    """``(X_train, y_train, X_test, y_test, name)`` from a dataset name or files.

    With files, the labels may also be the last column of an .npz's ``y`` array.
    The standard split (DESIGN.md) is applied when ``split``.
    """
    if dataset is not None and features is not None:
        raise ValueError("give either --dataset or --features/--labels, not both.")
    if dataset is not None:
        X, y = datasets.load(dataset)
        name = dataset
    elif features is not None:
        X = load_array(features, "features")
        if labels is None:
            if features.endswith(".npz"):
                with np.load(features, allow_pickle=False) as z:
                    if "X" in z and "y" in z:
                        X, y = z["X"], z["y"]
                    else:
                        raise ValueError("--labels is required (or an .npz with arrays X and y).")
            else:
                raise ValueError("--labels is required with --features.")
        else:
            y = load_array(labels, "labels")
            if y.ndim == 2 and 1 in y.shape:
                y = y.ravel()
        name = os.path.basename(features)
    else:
        raise ValueError("no input: give --dataset NAME or --features FILE --labels FILE.")
    X = check_matrix(X, "features", min_rows=2, allow_sparse=True)
    if np.ndim(y) == 1 and len(y) != X.shape[0]:
        raise ValueError(f"'labels' has {len(y)} entries but 'features' has {X.shape[0]} rows.")
    y = check_labels(y, X.shape[0], "labels", min_classes=2)
    if not split:
        return X, y, None, None, name
    Xtr, Xte, ytr, yte = datasets.split(X, y)
    return Xtr, ytr, Xte, yte, name


def write_outputs(out_dir, arrays, report):
    """Write ``arrays`` (name -> ndarray, as .npy) and ``report`` (report.json) atomically.

    Every file is written to a temporary file in ``out_dir`` and renamed into place, so
    an interrupted run never leaves a half-written file.
    """
    os.makedirs(out_dir, exist_ok=True)
    staged = []
    try:
        for name, arr in arrays.items():
            fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".npy")
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, np.asarray(arr))
            staged.append((tmp, os.path.join(out_dir, f"{name}.npy")))
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".report.", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, default=_jsonable)
        staged.append((tmp, os.path.join(out_dir, "report.json")))
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for tmp, final in staged:
        os.replace(tmp, final)


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def emit(report, as_json, lines):
    """Print the report: one JSON object (``--json``) or human-readable lines."""
    if as_json:
        click.echo(json.dumps(report, default=_jsonable))
    else:
        for line in lines:
            click.echo(line)


def progress(label):
    """A progress callback printing to stderr when it is a terminal (else None)."""
    if not sys.stderr.isatty():
        return None

    def cb(it, f, step):
        if it % 25 == 0:
            click.echo(f"\r{label}: iteration {it}, objective {f:.6g}", err=True, nl=False)
        return False

    return cb


def relative_gap(obj, ref):
    from ..result import relative_gap as rg

    return rg(obj, ref)
