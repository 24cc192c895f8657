"""``convexmetric solve oasis``: the OASIS baseline (Chechik et al. 2009) on its own.

The same inputs, report and outputs as ``solve aroma --variant oasis``.
"""

from __future__ import annotations

import click

from .aroma import data_options, run_solve


@click.command("oasis")
@click.option("--C", "C", type=float, default=0.1, show_default=True, help="Aggressiveness C > 0.")
@data_options
def SOLVE(C, **kw):
    """Online bilinear similarity qᵀWp by OASIS; precision@k on the test part.

    Without inputs: the built-in bag of words (--dataset bow). With --split none (the
    default for --features) every row trains and precision is measured on them.
    """
    run_solve("oasis", r=1.0, C=C, **kw)
