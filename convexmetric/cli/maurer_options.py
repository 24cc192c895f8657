"""The options of ``solve maurer``, ``validate maurer`` and ``verify`` for Maurer's pairs
and model."""

from __future__ import annotations

import click

from ._common import POSITIVE_FLOAT, POSITIVE_INT
from .options import deprecated_alias

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

#: eq. (5)'s hyperparameters (the estimator's names) and the SGD's steps; --lam, --gamma
#: and --gamma-neg are their former spellings
MAURER_MODEL = [
    click.option(
        "--reg-weight",
        type=POSITIVE_FLOAT,
        default=0.005,
        show_default=True,
        help="λ > 0, the regulariser's weight.",
    ),
    deprecated_alias("--lam", "--reg-weight", "reg_weight", type=POSITIVE_FLOAT),
    click.option(
        "--margin",
        type=POSITIVE_FLOAT,
        default=1.0,
        show_default=True,
        help="Margin γ₁ (similar pairs).",
    ),
    deprecated_alias("--gamma", "--margin", "margin", type=POSITIVE_FLOAT),
    click.option(
        "--margin-neg",
        type=POSITIVE_FLOAT,
        default=None,
        help="Margin γ₋₁ (dissimilar pairs); default: --margin.",
    ),
    deprecated_alias("--gamma-neg", "--margin-neg", "margin_neg", type=POSITIVE_FLOAT),
    click.option(
        "--regularizer",
        type=click.Choice(["hs", "trace"]),
        default="hs",
        show_default=True,
        help="‖A‖₂ (Hilbert–Schmidt) or tr A.",
    ),
    click.option(
        "--max-iter",
        type=POSITIVE_INT,
        default=100_000,
        show_default=True,
        help="SGD steps (--solver subgradient: its steps and the refinement's together).",
    ),
]

__all__ = ["MAURER_MODEL", "PAIR_OPTIONS"]
