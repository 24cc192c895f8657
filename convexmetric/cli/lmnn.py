"""``convexmetric solve lmnn`` (``validate lmnn``: :mod:`.validate`)."""

from __future__ import annotations

import click

from ..lmnn.blocks.dask_executor import dask_client
from ..lmnn.estimator import LMNN
from ..neighbors import knn_error
from ._common import (
    SPLIT_OPTION,
    apply_options,
    emit,
    library_errors,
    load_xy,
    write_outputs,
)
from .inputs import check_label_counts
from .lmnn_options import EXTENSIONS, INPUTS, UNUSED_BY_VARIANT, memory_bytes, reject_unused
from .options import OUT_DIR_OPTION, TIME_LIMIT_OPTION, TOL_OPTION, estimator_limits


@click.command("lmnn", short_help="Learn an LMNN metric (eq. 14) and report kNN errors.")
@apply_options(INPUTS)
@SPLIT_OPTION
@click.option(
    "--solver",
    type=click.Choice(["subgradient", "exact"]),
    default="subgradient",
    show_default=True,
    help="Large-scale active-set solver, or working-set SDPs (exact).",
)
@click.option(
    "--max-iter",
    type=int,
    default=None,
    help="Iterations at most over the whole fit, every stage included [default: the "
    "estimator's, 3000].",
)
@TOL_OPTION
@TIME_LIMIT_OPTION
@OUT_DIR_OPTION
@click.option(
    "--memory-limit",
    default=None,
    callback=memory_bytes,
    help="Working memory of the solver in bytes (suffixes K, M, G allowed, e.g. 512M) "
    "[default: 2G, fixed: the same computation on every machine]; past it the solver "
    "streams over row blocks. The fit allocates at most this plus the data's share "
    "(reported as memory_bound); below the smallest plan it is refused.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Run the block work on Dask: a scheduler address (tcp://host:8786) or local:N "
    "(a LocalCluster of N worker processes); needs convexmetric[dask].",
)
@click.option(
    "--backend-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="With --scheduler: seconds one block evaluation on the cluster may take, "
    "recoveries from lost workers included, before the run fails [default: 3600]. "
    "A closed client or a lost scheduler fails it at once.",
)
@click.option(
    "--n-jobs",
    type=int,
    default=None,
    help="Threads of the work in this process (full checks and streaming sums, on the "
    "workers with --scheduler; the list's distances and gradients); -1: every core "
    "[default: from 30,000 points, the cores whose share of --memory-limit keeps one "
    "thread's block size]. The result does not depend on it.",
)
@apply_options(EXTENSIONS)
def SOLVE(**opts):
    """Learn an LMNN metric (eq. 14) and report kNN errors.

    A built-in --dataset is split by the standard split (70/30 stratified) and the test
    errors are measured on its held-out part; your own --features/--labels train on
    every row unless --split stratified. The report says which rows were used.

    Extensions (§5–6): --variant multi|kernel, --n-passes, --n-components with
    --reduction S|R, --pca, --search, --energy.
    """
    variant = opts["variant"]
    reject_unused(UNUSED_BY_VARIANT[variant], f"by --variant {variant}")
    if opts["n_clusters"] is None:
        reject_unused(("seed",), "without --n-clusters (the clusters are the labels)")
    extension = variant != "single" or _extension_requested(opts)
    if opts["backend_timeout"] is not None and opts["scheduler"] is None:
        raise click.UsageError("--backend-timeout needs --scheduler (it bounds the Dask work).")
    if extension and opts["scheduler"] is not None:
        raise click.UsageError(
            "--scheduler runs single-metric LMNN only (not --variant, --n-passes, "
            "--n-components, --pca, --search or --energy, yet)."
        )
    k, mu = opts["k"], opts["mu"]
    with library_errors():
        Xtr, ytr, Xte, yte, name = load_xy(opts["dataset"], opts["features"], opts["labels"])
        check_label_counts(ytr, k)
        if extension:
            from .lmnn_ext import fit_variant

            model, extra = fit_variant(Xtr, ytr, Xte, yte, variant=opts["variant"], opts=opts)
        else:
            model, extra = _fit_single(Xtr, ytr, Xte, yte, opts)
        report = {
            "method": "lmnn",
            "instance": name,
            "n_train": int(Xtr.shape[0]),
            "n_test": 0 if Xte is None else int(Xte.shape[0]),
            "n_features": int(Xtr.shape[1]),
            "k": k,
            "mu": mu,
            **model.result_.summary(),
            **extra,
        }
        if Xte is not None:
            report["euclidean_knn_test_error"] = knn_error(Xtr, ytr, Xte, yte, k)
        if opts["out"] is not None:
            arrays = {"components": model.components_}
            for attr in ("metric_", "metrics_", "A_"):
                if hasattr(model, attr):
                    arrays[attr.rstrip("_")] = getattr(model, attr)
            write_outputs(opts["out"], arrays, report, model=model)
    emit(report, opts["as_json"], _lines(report, name, Xtr.shape, opts))


def _fit_single(Xtr, ytr, Xte, yte, opts):
    """Single-metric LMNN, locally or on Dask; ``(model, report entries)``."""
    model = LMNN(k=opts["k"], mu=opts["mu"], solver=opts["solver"])
    model.set_params(**estimator_limits(opts, model))
    if opts["max_iter"] is not None:
        model.set_params(max_iter=opts["max_iter"])
    for key in ("memory_limit", "n_jobs", "backend_timeout"):
        if opts[key] is not None:
            model.set_params(**{key: opts[key]})
    if opts["scheduler"] is None:
        model.fit(Xtr, ytr)
    else:
        with dask_client(opts["scheduler"]):
            model.set_params(backend="dask").fit(Xtr, ytr)
    extra = {
        "variant": "single",
        "mode": model.result_.info.get("mode"),
        "backend": model.backend,
        "loo_train_error": model.loo_error(),
    }
    if Xte is not None:
        Ztr, Zte = model.transform(Xtr), model.transform(Xte)
        extra["knn_test_error"] = knn_error(Ztr, ytr, Zte, yte, opts["k"])
    return model, extra


def _lines(report, name, shape, opts):
    k, variant = opts["k"], report["variant"]
    what = "LMNN" if variant == "single" else f"LMNN ({variant})"
    lines = [
        f"{what} on {name}: {shape[0]} training points × {shape[1]} features, k={k}, "
        f"mu={opts['mu']}",
        f"  solver {report['solver']}: objective {report['objective']:.8g}, status "
        f"{report['status']}, {report['iterations']} iterations, {report['seconds']:.2f} s",
    ]
    errors = []
    if "knn_test_error" in report:
        errors.append(
            f"{k}-NN test error: {report['knn_test_error']:.2%} "
            f"(Euclidean {report['euclidean_knn_test_error']:.2%})"
        )
    if report.get("loo_train_error") is not None:
        errors.append(f"leave-one-out training error {report['loo_train_error']:.2%}")
    if errors:
        lines.append("  " + "; ".join(errors))
    if "energy_test_error" in report:
        lines.append(f"  energy-based test error: {report['energy_test_error']:.2%}")
    if opts["out"] is not None:
        out = opts["out"].rstrip("/")
        lines.append(f"  wrote {out}/ (model.json, the arrays, report.json)")
    return lines


def _extension_requested(opts):
    return (
        opts["n_passes"] != 1
        or opts["n_components"] is not None
        or opts["pca"] is not None
        or opts["search"] != "brute"
        or opts["energy"]
    )


__all__ = ["SOLVE"]
