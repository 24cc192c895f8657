"""The options of ``solve maurer``, ``validate maurer`` and ``verify`` for Maurer's pairs
and model."""

from __future__ import annotations

import click

from ._common import POSITIVE_FLOAT, POSITIVE_INT

#: the options that, with the data options, say which pairs train (``solve maurer``, ``verify``)
PAIR_OPTIONS = [
    click.option(
        "--pairs",
        "pairs_file",
        type=click.Path(exists=True, dir_okay=False),
        help="Pairs CSV with header i,j,r (row indices into --features).",
    ),
    click.option(
        "--n-pairs",
        type=int,
        default=2000,
        show_default=True,
        help="Pairs drawn from labelled data.",
    ),
    click.option(
        "--oracle",
        type=click.Choice(["balanced", "labels"]),
        default="balanced",
        show_default=True,
        help="Balanced oracle (§5.1) or label oracle (eq. 10).",
    ),
]

#: eq. (5)'s hyperparameters and the SGD's steps
MAURER_MODEL = [
    click.option("--lam", type=POSITIVE_FLOAT, default=0.005, show_default=True,
                 help="λ > 0, the regulariser's weight."),
    click.option("--gamma", type=POSITIVE_FLOAT, default=1.0, show_default=True,
                 help="Margin γ₁ (similar pairs)."),
    click.option("--gamma-neg", type=POSITIVE_FLOAT, default=None,
                 help="Margin γ₋₁ (dissimilar pairs); default: --gamma."),
    click.option("--regularizer", type=click.Choice(["hs", "trace"]), default="hs",
                 show_default=True, help="‖A‖₂ (Hilbert–Schmidt) or tr A."),
    click.option("--max-iter", type=POSITIVE_INT, default=100_000, show_default=True,
                 help="SGD steps (--solver subgradient: its steps and the refinement's "
                 "together)."),
]  # fmt: skip

__all__ = ["MAURER_MODEL", "PAIR_OPTIONS"]
