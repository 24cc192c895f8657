"""The options shared by the commands, declared once (one spelling, one help text).

``--solver`` is always the algorithm; ``--conic-solver`` always the conic solver of the
exact side; ``--k`` always the number of target neighbours (LMNN). ``--tol`` and
``--time-limit`` reach the estimator of every ``solve`` command that has them. Old
spellings keep working for one release with a deprecation message on stderr
(:func:`deprecated_alias`).
"""

from __future__ import annotations

import click

#: ``--json``
JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout (nothing else)."
)

#: ``--seed``
SEED_OPTION = click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of every random choice of the command (data drawn, split, solver).",
)


def _replaceable_out(ctx, param, value):
    """Refuse, before any work, an ``--out`` directory that holds the user's files."""
    if value is not None:
        from .._atomic import check_replaceable

        try:
            check_replaceable(value, option="--out")
        except ValueError as exc:  # one clean line, as every library error
            raise click.ClickException(str(exc)) from None
    return value


#: ``--out DIR`` of the commands that write results
OUT_DIR_OPTION = click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    callback=_replaceable_out,
    help="Directory for report.json, the learned arrays (.npy) and, where the method has "
    "one, a model (model.json) for `convexmetric transform` / `predict`; written "
    "atomically. It must be new, empty or a previous output (its files listed in "
    "convexmetric-output.json): a directory holding other files is refused, never "
    "replaced.",
)

#: ``--conic-solver`` of the exact side (CVXPY)
CONIC_SOLVERS = ("CLARABEL", "SCS")


def conic_solver_option(default="CLARABEL", note=""):
    """``--conic-solver``: the conic solver of the exact (CVXPY) side."""
    return click.option(
        "--conic-solver",
        type=click.Choice(CONIC_SOLVERS),
        default=default,
        show_default=default is not None,
        help="Conic solver of the exact (CVXPY) side, with tight tolerances." + note,
    )


#: ``--tol`` of every ``solve`` command
TOL_OPTION = click.option(
    "--tol",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Stopping tolerance of the solver: the certified relative gap of the convex "
    "batch learners, the documented stop of the others [default: the estimator's].",
)

#: ``--time-limit`` of every ``solve`` command
TIME_LIMIT_OPTION = click.option(
    "--time-limit",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Seconds for the whole fit; the best point so far is returned at the limit "
    "[default: none].",
)


def given(ctx, name):
    """Whether option ``name`` (a parameter name) was given on the command line."""
    src = ctx.get_parameter_source(name)
    return src is not None and src != click.core.ParameterSource.DEFAULT


def deprecated_alias(old, new, name, note="it means the same", **kw):
    """A hidden option ``old`` kept for one release: it warns on stderr and its value is
    stored as ``name`` (the parameter of ``new``) unless ``new`` was given too."""

    def callback(ctx, param, value):
        if value is None or value == ():
            return value
        click.echo(f"Warning: {old} is deprecated here; use {new} ({note}).", err=True)
        ctx.meta.setdefault("convexmetric.aliases", {})[name] = value
        return value

    return click.option(
        old,
        f"_alias_{name}",
        hidden=True,
        default=None,
        expose_value=False,
        callback=callback,
        **kw,
    )


def resolve_aliases(opts):
    """Fill ``opts`` (a command's parameters) from deprecated spellings given instead of
    the new ones; both given is a usage error."""
    ctx = click.get_current_context()
    for name, value in ctx.meta.get("convexmetric.aliases", {}).items():
        if given(ctx, name):
            flag = next(p.opts[0] for p in ctx.command.params if p.name == name)
            raise click.UsageError(f"give {flag} once (its deprecated spelling was given too).")
        opts[name] = value
    return opts


def estimator_limits(opts, estimator):
    """``{"tol": …, "time_limit": …}`` of the options given, for ``estimator``'s class;
    a usage error for one the estimator does not have."""
    params = estimator().get_params() if isinstance(estimator, type) else estimator.get_params()
    out = {}
    for key, flag in (("tol", "--tol"), ("time_limit", "--time-limit")):
        if opts.get(key) is None:
            continue
        if key not in params:
            name = estimator.__name__ if isinstance(estimator, type) else type(estimator).__name__
            raise click.UsageError(f"{flag}: not used by {name} (it has no {key}); leave it out.")
        out[key] = opts[key]
    return out


__all__ = [
    "CONIC_SOLVERS",
    "JSON_OPTION",
    "OUT_DIR_OPTION",
    "SEED_OPTION",
    "TIME_LIMIT_OPTION",
    "TOL_OPTION",
    "conic_solver_option",
    "deprecated_alias",
    "estimator_limits",
    "given",
    "resolve_aliases",
]
