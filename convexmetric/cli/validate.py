"""``convexmetric validate lmnn|poe|maurer|aroma``: thin commands over
:func:`convexmetric.validate`, which solves one instance exactly and with the
large-scale solvers and reports them in one schema (``--json`` prints it)."""

from __future__ import annotations

import os

import click

from ..validation import validate
from ._common import (
    DATA_OPTIONS,
    NO_EXACT_OPTION,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    annotate,
    apply_options,
    emit,
    library_errors,
    load_features,
    load_pairs,
    load_xy,
    progress,
    reject_unused,
)
from ._plot import plot_option, write_validate_plot
from .inputs import check_label_counts
from .lmnn_options import INPUTS, KERNEL_OPTIONS
from .maurer_options import MAURER_MODEL, PAIR_OPTIONS
from .options import (
    CONIC_SOLVERS,
    JSON_OPTION,
    SEED_OPTION,
    conic_solver_option,
    deprecated_alias,
    resolve_aliases,
)
from .poe_options import BETA, DIAGONAL, KIND

#: the deprecated ``--solver`` of ``validate maurer|poe|aroma`` (it meant the conic solver)
_OLD_SOLVER = deprecated_alias(
    "--solver", "--conic-solver", "conic_solver", type=click.Choice(CONIC_SOLVERS)
)


#: what the command adds to the library's report: the files read and the rows used
CLI_KEYS = ("inputs", "split")


def _finish(report, o):
    """Draw ``--plot``, then print the report (text or ``--json``)."""
    data = annotate(report.as_dict())
    for key in CLI_KEYS:  # the same keys for every paper, null when nothing was read
        data.setdefault(key, None)
    write_validate_plot(o["plot"], data, report.results, report.traces)
    emit(data, o["as_json"], report.lines())


def _no_exact(o, names=("conic_solver",)):
    if o["no_exact"]:
        reject_unused(names, "with --no-exact (no CVXPY solve)")


@click.command(
    "lmnn", short_help="Solve eq. (14) exactly and with the large-scale solver; report the gaps."
)
@apply_options(INPUTS)
@conic_solver_option(
    None, " [default: SCS for the plain solve of eq. (14), CLARABEL for --variant multi/kernel]"
)
@click.option(
    "--plain/--no-plain",
    default=None,
    help="Also solve the full SDP with plain CVXPY "
    "(default: only when it has at most 25,000 hinge terms).",
)
@click.option(
    "--variant",
    type=click.Choice(["single", "multi", "kernel"]),
    default="single",
    show_default=True,
    help="Which SDP: eq. (14), the multi-metric SDP (§5.2) or kernel LMNN (§5.3).",
)
@apply_options(KERNEL_OPTIONS)
@click.option(
    "--per-class",
    type=POSITIVE_INT,
    default=10,
    show_default=True,
    help="multi/kernel: points per class of the small instance solved exactly.",
)
@SEED_OPTION
@NO_EXACT_OPTION
@plot_option
def VALIDATE_LMNN(**o):
    """Solve eq. (14) exactly and with the large-scale solver; report the gaps to the
    exact optimum and each solver's certified gap (``--no-exact``: the certificates alone).

    Without inputs: the iris data (the training part of its standard split).
    """
    from ..validation.lmnn import small_instance

    variant = o["variant"]
    if variant == "single":
        reject_unused(("n_clusters", "kernel", "gamma", "per_class", "seed"), "by --variant single")
    else:
        reject_unused(("plain",), f"by --variant {variant}")
    _no_exact(o, ("conic_solver", "plain"))
    if o["dataset"] is None and o["features"] is None:
        o["dataset"] = "iris"
    with library_errors():
        X, y, _, _, name = load_xy(o["dataset"], o["features"], o["labels"])
        if variant != "single":
            X, y = small_instance(X, y, o["per_class"])
            name = f"{name} ({o['per_class']} per class)"
        check_label_counts(y, o["k"])
        settings = {
            key: o[key]
            for key in ("k", "mu", "variant", "plain", "per_class", "n_clusters", "kernel", "gamma")
        }
        report = validate(
            "lmnn",
            (X, y),
            name=name,
            conic_solver=o["conic_solver"],
            exact=not o["no_exact"],
            random_state=o["seed"],
            callback=progress("subgradient"),
            **settings,
        )
    _finish(report, o)


@click.command(
    "maurer", short_help="Solve eq. (5) exactly and with the large-scale solvers; report the gaps."
)
@apply_options([*DATA_OPTIONS, *PAIR_OPTIONS, *MAURER_MODEL])
@conic_solver_option()
@_OLD_SOLVER
@SEED_OPTION
@JSON_OPTION
@NO_EXACT_OPTION
@plot_option
def VALIDATE_MAURER(**o):
    """Solve eq. (5) exactly and with the large-scale solvers; report the gaps to the
    exact optimum and each solver's certified gap (dual lower bound).

    Without inputs: 300 balanced pairs of the iris data. ``--no-exact`` skips CVXPY and
    reports the certificates alone.
    """
    resolve_aliases(o)
    _no_exact(o)
    with library_errors():
        data, name = _maurer_data(o)
        settings = {
            key: o[key]
            for key in (
                "reg_weight",
                "margin",
                "margin_neg",
                "regularizer",
                "max_iter",
                "n_pairs",
                "oracle",
            )
        }
        report = validate(
            "maurer",
            data,
            name=name,
            conic_solver=o["conic_solver"],
            exact=not o["no_exact"],
            random_state=o["seed"],
            **settings,
        )
    _finish(report, o)


def _maurer_data(o):
    """``(X, y)`` or the pairs read from ``--pairs``, and the instance's name."""
    from ..maurer.pairs import Pairs
    from ..preprocessing import DiameterScaler

    if o["pairs_file"] is not None:
        if o["features"] is None or o["dataset"] is not None:
            raise ValueError("--pairs needs --features (the points its indices refer to).")
        X = DiameterScaler().fit_transform(load_features(o["features"]))
        idx, r = load_pairs(o["pairs_file"], X.shape[0])
        return Pairs.from_indices(X, idx[:, 0], idx[:, 1], r), os.path.basename(o["features"])
    if o["dataset"] is None and o["features"] is None:
        o["dataset"], o["n_pairs"] = "iris", min(o["n_pairs"], 300)
    X, y, _, _, name = load_xy(o["dataset"], o["features"], o["labels"], split=False)
    return (X, y), name


@click.command("poe", short_help="Solve one POE instance exactly and with the large-scale solver.")
@KIND
@DIAGONAL
@BETA
@click.option(
    "--n-per-class",
    type=click.IntRange(min=5),
    default=5,
    show_default=True,
    help="Digits per class in the default instance (80% are used; at least 5, so that "
    "the held-out 20% has a digit of every class).",
)
@click.option(
    "--n-comparisons",
    type=int,
    default=500,
    show_default=True,
    help="Comparisons in the default instance.",
)
@conic_solver_option()
@_OLD_SOLVER
@JSON_OPTION
@SEED_OPTION
@NO_EXACT_OPTION
@plot_option
def VALIDATE_POE(**o):
    """Solve one POE instance exactly and with the large-scale solver; report the gap to
    the exact optimum and the solver's certified gap (``--no-exact``: the certificate alone)."""
    resolve_aliases(o)
    _no_exact(o)
    with library_errors():
        settings = {
            key: o[key] for key in ("kind", "diagonal", "beta", "n_per_class", "n_comparisons")
        }
        report = validate(
            "poe",
            conic_solver=o["conic_solver"],
            exact=not o["no_exact"],
            random_state=o["seed"],
            **settings,
        )
    _finish(report, o)


@click.command("aroma", short_help="The batch ranking problem exactly against the online learners.")
@click.option(
    "--n-items",
    type=int,
    default=60,
    show_default=True,
    help="Items of the small bag-of-features instance.",
)
@click.option("--n-features", type=int, default=12, show_default=True, help="Features (W is d×d).")
@click.option(
    "--n-triplets", type=int, default=150, show_default=True, help="Triplets of the batch problem."
)
@click.option(
    "--C",
    "C",
    type=POSITIVE_FLOAT,
    default=1.0,
    show_default=True,
    help="Hinge weight of the batch problem.",
)
@click.option(
    "--r",
    type=float,
    default=1.0,
    show_default=True,
    help="AROW regulariser of the online learners.",
)
@click.option(
    "--epochs", type=int, default=20, show_default=True, help="Online passes over the triplets."
)
@conic_solver_option()
@_OLD_SOLVER
@SEED_OPTION
@JSON_OPTION
@NO_EXACT_OPTION
@plot_option
def VALIDATE_AROMA(**o):
    """The batch ranking problem exactly (CVXPY) against the online learners on the same
    triplets (they have no certificate: the gap to the exact optimum is all there is)."""
    resolve_aliases(o)
    _no_exact(o)
    with library_errors():
        settings = {
            key: o[key] for key in ("n_items", "n_features", "n_triplets", "C", "r", "epochs")
        }
        report = validate(
            "aroma",
            conic_solver=o["conic_solver"],
            exact=not o["no_exact"],
            random_state=o["seed"],
            **settings,
        )
    _finish(report, o)


__all__ = ["VALIDATE_AROMA", "VALIDATE_LMNN", "VALIDATE_MAURER", "VALIDATE_POE"]
