"""The ``convexmetric`` command: a thin click group over the library.

``convexmetric solve METHOD``, ``convexmetric validate METHOD``, ``convexmetric filter``,
``convexmetric datasets``, ``convexmetric transform`` / ``predict`` (apply a model
written by ``solve ... --out DIR``) and ``convexmetric verify`` (re-check its
certificate). The ``solve`` and ``validate`` subcommands, and each method's extra
top-level commands, are those of :mod:`convexmetric.formulations`, read on every lookup:
a formulation registered there is a command here.
"""

from __future__ import annotations

import importlib
import textwrap
import warnings

import click
from sklearn.exceptions import ConvergenceWarning

from .. import datasets, formulations
from ._common import Interrupted, interrupt_guard, solve_progress
from .options import JSON_OPTION


class _Registered(click.Group):
    """A group whose commands are its own and the registry's ``role`` (a field of
    :class:`~convexmetric.formulations.Formulation`), read when asked."""

    def __init__(self, *args, role, **kwargs):
        super().__init__(*args, **kwargs)
        self.role = role

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *formulations.commands(self.role)})

    def get_command(self, ctx, cmd_name):
        own = super().get_command(ctx, cmd_name)
        return own if own is not None else formulations.commands(self.role).get(cmd_name)


class _Main(_Registered):
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


@click.group(cls=_Main, role="commands", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="convexmetric")
def main():
    """Learn metrics and similarities from supervision (exact and large-scale solvers)."""


@main.group(cls=_Registered, role="solve_commands")
@click.pass_context
def solve(ctx):
    """Fit a method and report its objective (and write a model with --out DIR).

    On a terminal, a progress line on stderr shows the iteration, the objective, the
    certified gap (when the solver has a lower bound) and the elapsed time; it stays
    quiet with --json or when stderr is not a terminal.
    """
    ctx.with_resource(solve_progress(f"solve {ctx.invoked_subcommand}"))


@main.group(cls=_Registered, role="validate_command")
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
main.add_command(importlib.import_module(".verify", __package__).VERIFY)


if __name__ == "__main__":  # pragma: no cover
    main()
