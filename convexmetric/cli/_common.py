"""Shared pieces of the command line: options, atomic output, JSON, errors.

Inputs are read by :mod:`.inputs` (through :mod:`.reader`); per-command state (Ctrl-C,
progress, what was read) lives in :mod:`.session`. Their names are re-exported here.
"""

from __future__ import annotations

import contextlib
import json
import math
import os

import click
import numpy as np

from .inputs import (  # noqa: F401  (re-exported for the method modules)
    COMPARISONS_HELP,
    DATA_OPTIONS,
    DATASET_CHOICE,
    HEADER_OPTION,
    SPLIT_OPTION,
    load_comparisons,
    load_features,
    load_labels,
    load_matrix,
    load_pairs,
    load_xy,
    split_line,
)
from .session import (  # noqa: F401
    Interrupted,
    ProgressLine,
    check_interrupted,
    command_state,
    interrupt_guard,
    progress,
    solve_progress,
)


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


def reject_unused(names, why):
    """Refuse the options among ``names`` (parameter names) that the user gave on the
    command line but the command would not use: a :class:`click.UsageError` naming them,
    never an option silently dropped."""
    ctx = click.get_current_context()
    flags = {p.name: p.opts[0] for p in ctx.command.params}
    given = [
        flags[n]
        for n in names
        if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)
    ]
    if given:
        raise click.UsageError(f"{', '.join(given)}: not used {why}; leave it out.")


class CLIError(click.ClickException):
    """A library error shown as one clean line with a non-zero exit."""


@contextlib.contextmanager
def library_errors():
    """Turn library errors (ValueError, solver failures) into one clean message."""
    try:
        yield
    except click.ClickException:
        raise
    except (ValueError, TypeError, RuntimeError, OSError, KeyError, ArithmeticError) as exc:
        raise CLIError(" ".join(str(exc).split())) from None  # always one line


def _path_params(ctx):
    """``(option, path)`` for every string-valued parameter of the running command."""
    while ctx is not None:
        for name, value in ctx.params.items():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, str) and v:
                    yield name, v
        ctx = ctx.parent


def check_output_file(out, option="--out"):
    """Refuse an output file that is one of the command's inputs, or lies in an input
    directory (a model): writing it would destroy what the command reads. Any other
    existing file named by the user is replaced (atomically), as asked."""
    ctx = click.get_current_context(silent=True)
    target = os.path.realpath(out)
    own = option.lstrip("-").replace("-", "_")
    for name, path in _path_params(ctx):
        if name == own or not os.path.exists(path):
            continue
        if os.path.isdir(path) and os.path.dirname(target) == os.path.realpath(path):
            raise ValueError(
                f"{option} {out!r} lies in the input directory {path!r}; write it elsewhere."
            )
        if os.path.exists(out) and os.path.samefile(path, out):
            raise ValueError(
                f"{option} {out!r} is the input file {path!r}; refusing to overwrite it. "
                "Give another file name."
            )


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

    state = command_state() or {}
    annotate(report)
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
        split = (command_state() or {}).get("split")
        if split is not None:
            out["options"]["split"] = split["kind"]
    return out


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def annotate(report):
    """Add what the command read (files, rows) and the split (rows used) to ``report``."""
    state = command_state() or {}
    if state.get("inputs"):
        report.setdefault("inputs", state["inputs"])
    if state.get("split"):
        report.setdefault("split", state["split"])
    return report


def emit(report, as_json, lines):
    """Print the report: one JSON object (``--json``) or human-readable lines.

    In text mode the inputs read (file, rows, columns, header) go to stderr first and
    the rows used (the split) follow the first line of the report.
    """
    check_interrupted()
    annotate(report)
    if as_json:
        click.echo(json.dumps(report, default=_jsonable))
        return
    for line in (command_state() or {}).get("input_lines", ()):
        click.echo(line, err=True)
    lines = list(lines)
    if report.get("split") and lines:
        lines.insert(1, split_line(report["split"]))
    for line in lines:
        click.echo(line)


#: ``--no-exact`` of every ``validate`` command.
NO_EXACT_OPTION = click.option(
    "--no-exact",
    is_flag=True,
    help="Skip the exact CVXPY solve (for instances too large for it) and report only "
    "each solver's certificate: its dual lower bound and certified gap.",
)


def certified_gap(objective, lower_bound):
    """:func:`convexmetric.result.certified_gap`, or None without a lower bound."""
    from ..result import certified_gap as cg

    return None if lower_bound is None else cg(objective, lower_bound)
