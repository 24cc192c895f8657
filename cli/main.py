"""The ``convexmetric`` command: a thin click group over the library.

``convexmetric solve METHOD``, ``convexmetric validate METHOD``, ``convexmetric filter``
and ``convexmetric datasets``. Each method module (``cli/<method>.py``) defines its
``solve`` and ``validate`` subcommands and registers them in :data:`METHOD_MODULES`.
"""

from __future__ import annotations

import importlib

import click

from .. import datasets

#: cli modules that define ``SOLVE`` and/or ``VALIDATE`` click commands (and maybe ``EXTRA``).
METHOD_MODULES = ["lmnn", "aroma", "oasis", "maurer", "ssne", "poe"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="convexmetric")
def main():
    """Learn metrics and similarities from supervision (exact and large-scale solvers)."""


@main.group()
def solve():
    """Fit a method and report its objective (and write results with --out)."""


@main.group()
def validate():
    """Solve one instance exactly and with the large-scale solvers; report the gaps."""


@main.command("datasets")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def datasets_cmd(as_json):
    """List the built-in data sets."""
    info = datasets.describe()
    if as_json:
        import json

        click.echo(json.dumps(info))
    else:
        for name, text in info.items():
            click.echo(f"{name:16s} {text}")


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
