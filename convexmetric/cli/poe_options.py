"""The options of ``solve poe``, ``validate poe`` and ``verify`` for POE's comparisons
and model."""

from __future__ import annotations

import click

from ._common import COMPARISONS_HELP, POSITIVE_FLOAT

KINDS = ("linear", "kernel", "multi")

KIND = click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="kernel",
    show_default=True,
    help="LPOE on features, KPOE on one kernel, or MKPOE on several.",
)
DIAGONAL = click.option("--diagonal", is_flag=True, help="The diagonal LP of §4.4.")
BETA = click.option(
    "--beta",
    type=POSITIVE_FLOAT,
    default=100.0,
    show_default=True,
    help="Loss weight β (objective tr(WR) + β/|C| Σ ξ).",
)
COMPARISONS = click.option(
    "--comparisons",
    type=click.Path(exists=True, dir_okay=False),
    help=COMPARISONS_HELP,
)
KERNELS = click.option(
    "--kernel",
    "kernels",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A kernel matrix file; repeat for --kind multi.",
)
N_COMPARISONS = click.option(
    "--n-comparisons",
    type=int,
    default=1000,
    show_default=True,
    help="Comparisons drawn for --dataset.",
)
#: the options besides --features/--dataset that say which comparisons and items train
#: (``solve poe``, ``verify``)
COMPARISON_OPTIONS = [COMPARISONS, KERNELS, N_COMPARISONS]

__all__ = ["BETA", "COMPARISON_OPTIONS", "DIAGONAL", "KIND", "KINDS"]
