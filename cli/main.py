"""The ``convexmetric`` command: a thin click group over the library.

``convexmetric solve METHOD``, ``convexmetric validate METHOD``, ``convexmetric filter``,
``convexmetric datasets``, ``convexmetric transform`` / ``predict`` (apply a model
written by ``solve ... --out DIR``) and ``convexmetric verify`` (re-check its
certificate). Each method module (``cli/<method>.py``) defines its ``solve``
subcommand and is listed in :data:`METHOD_MODULES`; the ``validate`` subcommands are
thin commands over :func:`convexmetric.validate` (:mod:`.validate`).
"""

from __future__ import annotations

import importlib
import textwrap
import warnings

import click
from sklearn.exceptions import ConvergenceWarning

from .. import datasets
from ._common import Interrupted, interrupt_guard, solve_progress
from .options import JSON_OPTION

#: cli modules that define ``SOLVE`` and/or ``VALIDATE`` click commands (and maybe ``EXTRA``).
METHOD_MODULES = ["lmnn", "aroma", "oasis", "maurer", "ssne", "poe", "verify"]


class _Main(click.Group):
    """The top-level group: Ctrl-C anywhere ends in one clean line and exit status 130
    (before the group runs, while its modules are imported: :mod:`.launch`)."""

    def make_context(self, info_name, args, parent=None, **extra):
        # parsing (and --help, --version) runs before invoke's guard
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt:
            raise Interrupted() from None

    def invoke(self, ctx):
        # the reports carry every solver's status: a ConvergenceWarning would only repeat
        # it on stderr (which stays quiet when it is not a terminal)
        with interrupt_guard() as state, warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            try:
                rv = super().invoke(ctx)
            except KeyboardInterrupt:
                raise Interrupted() from None
            if state["hit"]:
                raise Interrupted()
            return rv


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="convexmetric")
def main():
    """Learn metrics and similarities from supervision (exact and large-scale solvers)."""


@main.group()
@click.pass_context
def solve(ctx):
    """Fit a method and report its objective (and write a model with --out DIR).

    On a terminal, a progress line on stderr shows the iteration, the objective, the
    certified gap (when the solver has a lower bound) and the elapsed time; it stays
    quiet with --json or when stderr is not a terminal.
    """
    ctx.with_resource(solve_progress(f"solve {ctx.invoked_subcommand}"))


@main.group()
def validate():
    """Solve one instance exactly and with the large-scale solvers; report the gaps."""


@main.command("datasets")
@JSON_OPTION
def datasets_cmd(as_json):
    """List the built-in data sets."""
    info = datasets.describe()
    if as_json:
        import json

        click.echo(json.dumps(info))
    else:
        for name, text in info.items():
            lines = textwrap.wrap(text, 88 - 17, break_on_hyphens=False) or [""]
            click.echo(f"{name:16s} {lines[0]}")
            for line in lines[1:]:
                click.echo(" " * 17 + line)


for _cmd in importlib.import_module(".apply", __package__).COMMANDS:
    main.add_command(_cmd)

for _cmd in importlib.import_module(".validate", __package__).COMMANDS:
    validate.add_command(_cmd)

for _mod in METHOD_MODULES:
    _m = importlib.import_module(f".{_mod}", __package__)
    if hasattr(_m, "SOLVE"):
        solve.add_command(_m.SOLVE)
    if hasattr(_m, "VALIDATE"):
        validate.add_command(_m.VALIDATE)
    for _cmd in getattr(_m, "EXTRA", ()):
        main.add_command(_cmd)


if __name__ == "__main__":  # pragma: no cover
    main()
