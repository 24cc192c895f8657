"""Shared pieces of the command line: input loading, atomic output, JSON, errors."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile

import click
import numpy as np

from .. import datasets

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


class CLIError(click.ClickException):
    """A library error shown as one clean line with a non-zero exit."""


@contextlib.contextmanager
def library_errors():
    """Turn library errors (ValueError, solver failures) into one clean message."""
    try:
        yield
    except click.ClickException:
        raise
    except (ValueError, RuntimeError, OSError, KeyError) as exc:
        raise CLIError(str(exc)) from None


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


def load_xy(dataset, features, labels, *, split=True):
    """``(X_train, y_train, X_test, y_test, name)`` from a dataset name or files.

    With files, the labels may also be the last column of an .npz's ``y`` array.
    The standard split (DESIGN.md) is applied when ``split``.
    """
    if dataset is not None and features is not None:
        raise ValueError("give either --dataset or --features/--labels, not both.")
    if dataset is not None:
        if split and datasets.ALIASES.get(dataset, dataset) in datasets.GROUPED:
            Xtr, Xte, ytr, yte = datasets.load_split(dataset)  # split by source item
            return Xtr, ytr, Xte, yte, dataset
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
    if not split:
        return X, y, None, None, name
    if len(np.asarray(y)) != len(np.asarray(X)):
        raise ValueError(
            f"'labels' has {len(np.asarray(y))} entries but 'features' has "
            f"{len(np.asarray(X))} rows."
        )
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


#: ``--no-exact`` of every ``validate`` command.
NO_EXACT_OPTION = click.option(
    "--no-exact",
    is_flag=True,
    help="Skip the exact CVXPY solve (for instances too large for it) and report only "
    "each solver's certificate: its dual lower bound and certified gap.",
)

#: The sentence the text output prints under ``--no-exact``.
NO_EXACT_NOTE = (
    "  exact solve skipped (--no-exact): no CVXPY reference; the gaps below are certified "
    "by each solver's own dual lower bound"
)


def certified_gap(objective, lower_bound):
    """``(objective − lower_bound)/|objective|``, or None without a lower bound."""
    if lower_bound is None:
        return None
    diff = float(objective) - float(lower_bound)
    return diff / abs(float(objective)) if objective != 0 else diff


def solver_entry(res, reference=None, objective=None):
    """The JSON entry of one large-scale solver in a ``validate`` report.

    ``objective`` overrides ``res.objective`` (a value recomputed by the problem module);
    ``reference`` is the exact optimum (None under ``--no-exact``: no relative gap).
    """
    obj = float(res.objective if objective is None else objective)
    lb = None if res.lower_bound is None else float(res.lower_bound)
    return {
        "objective": obj,
        "seconds": float(res.seconds),
        "status": res.status,
        "relative_gap": None if reference is None else relative_gap(obj, reference),
        "lower_bound": lb,
        "certified_gap": certified_gap(obj, lb),
    }


def solver_line(name, entry):
    """One line of text for a :func:`solver_entry`."""
    parts = [f"  {name}: objective {entry['objective']:.10g}, status {entry['status']}"]
    parts.append(f"{entry['seconds']:.2f} s")
    if entry.get("relative_gap") is not None:
        parts.append(f"relative gap {entry['relative_gap']:.2e}")
    if entry.get("certified_gap") is None:
        parts.append("no certificate")
    else:
        parts.append(
            f"lower bound {entry['lower_bound']:.10g} (certified gap {entry['certified_gap']:.2e})"
        )
    return ", ".join(parts)
