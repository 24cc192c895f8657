"""``convexmetric solve ssne``: fit an SSNE embedding and report its kNN error.

SSNE is not convex, so there is no exact solve and no ``validate ssne``; the report
carries the objective history instead.
"""

from __future__ import annotations

import click

from ..neighbors import knn_error
from ..ssne.estimator import SSNE
from ._common import (
    DATA_OPTIONS,
    POSITIVE_INT,
    SPLIT_OPTION,
    apply_options,
    emit,
    library_errors,
    load_features,
    load_pairs,
    load_xy,
    reject_unused,
    write_outputs,
)
from .options import (
    JSON_OPTION,
    OUT_DIR_OPTION,
    SEED_OPTION,
    TIME_LIMIT_OPTION,
    TOL_OPTION,
    deprecated_alias,
    estimator_limits,
    given,
    resolve_aliases,
)


@click.command("ssne")
@apply_options(DATA_OPTIONS)
@SPLIT_OPTION
@click.option(
    "--pairs",
    type=click.Path(exists=True, dir_okay=False),
    help="Pairs CSV with header i,j,r (r in [-1, 1]) indexing rows of --features.",
)
@click.option(
    "--n-components", default=16, show_default=True, type=int, help="M, the embedding dimension."
)
@click.option(
    "--loss-weight",
    default=100.0,
    show_default=True,
    type=float,
    help="Weight of the mean squared loss against the group norm.",
)
@deprecated_alias("--lam", "--loss-weight", "loss_weight", type=float)
@click.option(
    "--max-iter",
    default=40,
    show_default=True,
    type=int,
    help="Epochs (passes over the pairs) of the whole fit, split evenly among the restarts.",
)
@deprecated_alias(
    "--epochs",
    "--max-iter",
    "epochs",
    "--epochs E per restart is --max-iter E × --restarts",
    type=int,
)
@click.option("--restarts", default=1, show_default=True, type=int, help="Seeded restarts.")
@click.option(
    "--n-neighbors",
    "k",
    default=3,
    show_default=True,
    type=POSITIVE_INT,
    help="k of the kNN evaluation of the embedding.",
)
@deprecated_alias("--k", "--n-neighbors", "k", type=POSITIVE_INT)
@SEED_OPTION
@TOL_OPTION
@TIME_LIMIT_OPTION
@JSON_OPTION
@OUT_DIR_OPTION
def SOLVE(dataset, features, labels, pairs, k, as_json, out, **settings):
    """Learn an SSNE embedding onto the sphere (Batra & Shakhnarovich, eq. 3)."""
    aliases = resolve_aliases({})
    k = aliases.get("k", k)
    if pairs is not None:  # no labels: no split, no test part, no k-NN error
        reject_unused(("k", "split"), "with --pairs")
        if "k" in aliases:
            raise click.UsageError("--k (now --n-neighbors): not used with --pairs; leave it out.")
    n_components, lam = (
        settings["n_components"],
        aliases.get("loss_weight", settings["loss_weight"]),
    )
    with library_errors():
        model = _model(settings, aliases)
        report = {"method": "ssne", "n_components": n_components, "loss_weight": lam}
        if pairs is not None:
            if features is None or dataset is not None or labels is not None:
                raise ValueError("--pairs goes with --features only (no --dataset, no --labels).")
            X = load_features(features)
            idx, s = load_pairs(pairs, X.shape[0])
            model.fit(X, s, pairs=idx)
            report.update(instance=str(features), n_points=int(X.shape[0]), n_pairs=len(s))
        else:
            Xtr, ytr, Xte, yte, name = load_xy(dataset, features, labels)
            model.fit(Xtr, ytr)
            report.update(instance=name, n_train=int(Xtr.shape[0]), k=k)
            if Xte is not None:
                Ztr, Zte = model.transform(Xtr), model.transform(Xte)
                report["knn_test_error"] = knn_error(Ztr, ytr, Zte, yte, k)
                report["euclidean_knn_test_error"] = knn_error(Xtr, ytr, Xte, yte, k)
                report["n_test"] = int(Xte.shape[0])
        report.update(model.result_.summary())
        report["active_components"] = model.active_components_.tolist()
        report["history"] = [float(v) for v in model.result_.history]
        report["restart_objectives"] = model.result_.info["restart_objectives"]
        if out is not None:
            write_outputs(out, {"W": model.W_}, report, model=model)
    lines = [
        f"SSNE on {report['instance']}: M={n_components}, loss weight {lam:g}; objective "
        f"{report['objective']:.6g} ({report['status']}, {report['iterations']} epochs, "
        f"{report['seconds']:.2f} s); {len(report['active_components'])} active columns",
    ]
    if "knn_test_error" in report:
        lines.append(_knn_line(report, k))
    if out is not None:
        lines.append(f"  wrote {out.rstrip('/')}/ (model.json, W.npy, report.json)")
    emit(report, as_json, lines)


def _knn_line(report, k):
    """The test errors, as shares and as counts of test points (a small test part moves
    by whole points: on iris's 45, one point is 2.22%)."""
    n = report["n_test"]
    ours, euc = report["knn_test_error"], report["euclidean_knn_test_error"]
    return (
        f"  {k}-NN test error: {ours:.2%} ({round(ours * n)} of {n} test points; Euclidean "
        f"{euc:.2%}, {round(euc * n)} of {n})"
    )


def _model(o, aliases):
    """The SSNE estimator of the options (``--epochs E``, the former per-restart count,
    is ``--max-iter E × restarts``)."""
    if "epochs" in aliases and given(click.get_current_context(), "max_iter"):
        raise click.UsageError("give --max-iter alone (--epochs is its former spelling).")
    max_iter = aliases["epochs"] * o["restarts"] if "epochs" in aliases else o["max_iter"]
    model = SSNE(
        n_components=o["n_components"],
        loss_weight=aliases.get("loss_weight", o["loss_weight"]),
        max_iter=max_iter,
        n_restarts=o["restarts"],
        random_state=o["seed"],
    )
    return model.set_params(**estimator_limits(o, model))
