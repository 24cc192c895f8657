"""The options of ``solve lmnn`` and ``validate lmnn``."""

from __future__ import annotations

import click

from ._common import DATA_OPTIONS, POSITIVE_INT, FiniteFloatRange, reject_unused
from .options import JSON_OPTION, SEED_OPTION

#: the inputs and the model of every LMNN command
INPUTS = [
    *DATA_OPTIONS,
    click.option(
        "--k", default=3, show_default=True, type=POSITIVE_INT, help="Target neighbours per point."
    ),
    click.option(
        "--mu",
        default=0.5,
        show_default=True,
        type=FiniteFloatRange(0.0, 1.0),
        help="Weight of the push term, in [0, 1].",
    ),
    JSON_OPTION,
]

#: the settings of the multi-metric (§5.2) and kernel (§5.3) variants
KERNEL_OPTIONS = [
    click.option(
        "--n-clusters", type=int, default=None, help="multi: k-means clusters (default: labels)."
    ),
    click.option(
        "--kernel",
        type=click.Choice(["rbf", "linear"]),
        default="rbf",
        show_default=True,
        help="kernel: the kernel function.",
    ),
    click.option("--gamma", type=float, default=None, help="kernel: RBF width (default 'scale')."),
]

#: ``solve lmnn``'s extensions (§5–6)
EXTENSIONS = [
    click.option(
        "--variant",
        type=click.Choice(["single", "multi", "kernel"]),
        default="single",
        show_default=True,
        help="One metric (eq. 14), one per cluster (§5.2), or kernel LMNN (§5.3).",
    ),
    *KERNEL_OPTIONS,
    click.option(
        "--n-passes", type=int, default=1, show_default=True, help="Multi-pass LMNN (§5.1)."
    ),
    click.option("--n-components", type=int, default=None, help="Output dimensionality r (§5.4)."),
    click.option(
        "--reduction",
        type=click.Choice(["S", "R"]),
        default="S",
        show_default=True,
        help="With --n-components: LMNN-S (eigen-directions) or LMNN-R (rectangular L).",
    ),
    click.option("--pca", type=int, default=None, help="PCA to this many dimensions first."),
    click.option(
        "--search",
        type=click.Choice(["brute", "balltree", "kdtree", "auto"]),
        default="brute",
        show_default=True,
        help="Impostor search (§6): blocked brute force, trees, or measured choice.",
    ),
    click.option("--energy", is_flag=True, help="Also report energy-based test error (eq. 15)."),
    SEED_OPTION,
]

#: the options of ``solve lmnn`` that a variant does not use (given: a usage error)
_SINGLE_ONLY = ("n_passes", "n_components", "reduction", "pca", "search", "memory_limit", "n_jobs")
UNUSED_BY_VARIANT = {
    "single": ("n_clusters", "kernel", "gamma", "seed"),
    "multi": (*_SINGLE_ONLY, "kernel", "gamma"),
    "kernel": (*_SINGLE_ONLY, "n_clusters", "energy", "seed"),
}


def memory_bytes(ctx, param, value):
    """``--memory-limit``: an int of bytes, optionally with a K, M or G suffix (powers of 2)."""
    if value is None:
        return None
    text = str(value).strip().upper().removesuffix("B")
    factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    try:
        number = int(text[:-1] if factor > 1 else text)
    except ValueError:
        raise click.BadParameter(
            f"must be a positive number of bytes such as 1073741824 or 1G; got {value!r}.",
            param_hint="'--memory-limit'",
        ) from None
    return number * factor


__all__ = [
    "EXTENSIONS",
    "INPUTS",
    "KERNEL_OPTIONS",
    "UNUSED_BY_VARIANT",
    "memory_bytes",
    "reject_unused",
]
