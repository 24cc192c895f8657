"""Shared pieces of the command line: input loading, atomic output, JSON, errors."""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import os
import signal
import sys
import threading
import time

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
    The standard split (DESIGN.md) is applied when ``split``; its standardisation is
    recorded for this command, and a model written by :func:`write_outputs` applies it
    to new points.
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
    X = check_matrix(X, "features", min_rows=2, allow_sparse=True)
    if np.ndim(y) == 1 and len(y) != X.shape[0]:
        raise ValueError(f"'labels' has {len(y)} entries but 'features' has {X.shape[0]} rows.")
    y = check_labels(y, X.shape[0], "labels", min_classes=2)
    if not split:
        return X, y, None, None, name
    Xtr, Xte, ytr, yte = datasets.split(X, y)
    _record_standardisation(X, y)
    return Xtr, ytr, Xte, yte, name


def write_outputs(out_dir, arrays, report, *, model=None):
    """Write ``out_dir`` as a whole, atomically: ``arrays`` (name -> ndarray, as .npy),
    ``report`` (report.json) and, given a fitted ``model``, a self-describing model
    (model.json and its arrays, see :mod:`convexmetric.model_io`) that
    ``convexmetric transform`` / ``predict`` apply. Pass ``model`` only when the model
    saw the data as :func:`load_xy` returned it (its standardisation is stored with it).

    Everything is written into a temporary directory next to ``out_dir`` and renamed
    into place at the end; an existing ``out_dir`` (a previous output) is replaced only
    then. An interrupted run leaves the previous contents or nothing, never a part.
    """
    check_interrupted()
    from ..model_io import save_model, write_directory

    state = _command_state.get() or {}
    if model is None:
        files = {f"{name}.npy": np.asarray(arr) for name, arr in arrays.items()}
        files["report.json"] = report
        write_directory(out_dir, files)
    else:
        save_model(
            model,
            out_dir,
            provenance=cli_provenance(report),
            preprocessing=state.get("preprocessing"),
            extra_arrays=arrays,
            report=report,
        )


def cli_provenance(report):
    """Command, options and dataset of the running command, for model.json."""
    ctx = click.get_current_context(silent=True)
    out = {"dataset": report.get("instance", report.get("dataset"))}
    if ctx is not None:
        names, c = [], ctx
        while c.parent is not None:
            names.append(c.info_name)
            c = c.parent
        out["command"] = " ".join(["convexmetric", *reversed(names)])
        out["options"] = {
            k: v
            for k, v in ctx.params.items()
            if isinstance(v, (str, int, float, bool, type(None)))
        }
    return out


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def emit(report, as_json, lines):
    """Print the report: one JSON object (``--json``) or human-readable lines."""
    check_interrupted()
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


class ProgressLine:
    """The progress line of ``solve`` on stderr: iteration, objective, certified gap (when
    the solver reports a lower bound) and elapsed time, redrawn in place.

    Silent unless the stream is a terminal, and silent under ``--json``. Fed by
    :func:`convexmetric.progress.observe` (the solvers' iteration reports).
    """

    def __init__(self, label, stream=None, min_interval=0.2):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.min_interval = min_interval
        self.t0 = time.perf_counter()
        self.last = None
        self.width = 0
        self.quiet = None
        self.count = 0

    def _decide(self):
        isatty = getattr(self.stream, "isatty", None)
        if isatty is None or not isatty():
            return True
        ctx = click.get_current_context(silent=True)
        while ctx is not None:
            if ctx.params.get("as_json"):
                return True
            ctx = ctx.parent
        return False

    def __call__(self, iteration, objective, info):
        if self.quiet is None:
            self.quiet = self._decide()
        self.count += 1  # the solvers' phases each count from 0; show one running count
        now = time.perf_counter()
        if self.quiet or (self.last is not None and now - self.last < self.min_interval):
            return
        self.last = now
        text = f"{self.label}: iteration {self.count}, objective {objective:.6g}"
        lb = info.get("lower_bound")
        if lb is not None and np.isfinite(lb):
            text += f", certified gap {(objective - lb) / max(abs(objective), 1e-300):.1e}"
        text += f", {now - self.t0:.1f} s"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def close(self):
        """Erase the line (the command's own output follows)."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


@contextlib.contextmanager
def solve_progress(label):
    """Show a :class:`ProgressLine` while the block runs (a terminal, no ``--json``)."""
    from ..progress import observe

    line = ProgressLine(label)

    def observer(iteration, objective, info):
        # after Ctrl-C a solver returns its best iterate and the estimator may start its
        # next phase; stop that one at its first iteration too
        check_interrupted()
        line(iteration, objective, info)

    try:
        with observe(observer):
            yield line
    finally:
        line.close()


class Interrupted(click.ClickException):
    """Ctrl-C: one clean line and exit status 130 (128 + SIGINT)."""

    exit_code = 130

    def __init__(self):
        super().__init__("interrupted (Ctrl-C).")


_command_state = contextvars.ContextVar("convexmetric_command", default=None)


@contextlib.contextmanager
def interrupt_guard():
    """Per-command state: Ctrl-C (and the standardisation recorded by :func:`load_xy`).

    The solvers catch ``KeyboardInterrupt`` and return their best iterate (a library
    feature); the command line must not write or print that as a result. SIGINT still
    raises ``KeyboardInterrupt`` (so the solver stops at once) and is remembered;
    :func:`check_interrupted` (called by :func:`write_outputs` and :func:`emit`) then
    aborts the command.
    """
    state = {"hit": False}
    token = _command_state.set(state)
    old = None
    if threading.current_thread() is threading.main_thread():

        def handler(signum, frame):
            state["hit"] = True
            raise KeyboardInterrupt

        old = signal.signal(signal.SIGINT, handler)
    try:
        yield state
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
        _command_state.reset(token)


def _record_standardisation(X, y):
    """Keep the standard split's scaler (mean, scale of the training part) for this command."""
    state = _command_state.get()
    if state is not None:
        from sklearn.preprocessing import StandardScaler

        sc = StandardScaler().fit(datasets.split(X, y, scale=False)[0])  # as datasets.split
        state["preprocessing"] = {"mean": sc.mean_, "scale": sc.scale_}


def check_interrupted():
    """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed during this command."""
    state = _command_state.get()
    if state is not None and state["hit"]:
        raise KeyboardInterrupt


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
