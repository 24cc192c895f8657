"""``convexmetric solve maurer`` (Maurer, JMLR 2008); ``validate maurer`` is in :mod:`.validate`.

``solve maurer`` learns ``T`` from labelled pairs (drawn from the training part of the
standard split by the balanced or the label oracle, or read from a pair CSV ``i,j,r``
over ``--features``) and reports Maurer's §6 measures on the test part: empirical
risk and balanced error on fresh balanced pairs, ROC area of the distance and 1-shot
1-NN error for the input and for ``T``, and the sparsity of ``T``.
"""

from __future__ import annotations

import os
import time

import click
import numpy as np

from .. import metrics
from ..maurer.estimators import ORACLES, HyperbolicPCA, OperatorSimilarity
from ..maurer.pairs import Pairs, balanced_pairs
from ..preprocessing import DiameterScaler
from ._common import (
    DATA_OPTIONS,
    SPLIT_OPTION,
    apply_options,
    certified_gap,
    command_state,
    emit,
    library_errors,
    load_features,
    load_pairs,
    load_xy,
    reject_unused,
    write_outputs,
)
from .maurer_options import MAURER_MODEL, PAIR_OPTIONS
from .options import (
    JSON_OPTION,
    OUT_DIR_OPTION,
    SEED_OPTION,
    TIME_LIMIT_OPTION,
    TOL_OPTION,
    estimator_limits,
    resolve_aliases,
)


def _inputs(dataset, features, labels, pairs_file, n_pairs, oracle, seed, split):
    """``(train pairs, X_test or None, y_test or None, name)``; the points are scaled to
    diameter 1 (:class:`~convexmetric.preprocessing.DiameterScaler`, recorded for a saved
    model after the standardisation of :func:`load_xy`)."""
    if pairs_file is not None:
        if features is None or dataset is not None:
            raise ValueError("--pairs needs --features (the points its indices refer to).")
        X = load_features(features)
        X = _record_scaling(DiameterScaler().fit(X), X)
        idx, r = load_pairs(pairs_file, X.shape[0])
        train = Pairs.from_indices(X, idx[:, 0], idx[:, 1], r)
        return train, None, None, os.path.basename(features)
    Xtr, ytr, Xte, yte, name = load_xy(dataset, features, labels, split=split)
    scaler = DiameterScaler().fit(Xtr)
    Xtr = _record_scaling(scaler, Xtr)
    if oracle not in ORACLES:
        raise ValueError(f"unknown oracle {oracle!r}.")
    train = ORACLES[oracle](Xtr, ytr, n_pairs, random_state=seed)
    return train, (None if Xte is None else scaler.transform(Xte)), yte, name


def _record_scaling(scaler, X):
    """``scaler.transform(X)``; the scaler is appended to this command's preprocessing
    (after its standardisation, if any), so that a saved model maps raw new points as
    the solver saw the training points."""
    state = command_state()
    if state is not None:
        state["preprocessing"] = [*(state.get("preprocessing") or []), scaler]
    return scaler.transform(X)


#: the options of ``solve maurer`` that a solver does not use (given: a usage error)
UNUSED_BY_SOLVER = {
    "sgd": ("c", "tol"),
    "subgradient": ("learning_rate", "n_components", "c"),
    "exact": ("learning_rate", "max_iter", "n_components", "c", "tol", "time_limit"),
    "hpca": (
        "reg_weight",
        "margin",
        "margin_neg",
        "regularizer",
        "max_iter",
        "learning_rate",
        "tol",
        "time_limit",
    ),
}


@click.command("maurer")
@apply_options([*DATA_OPTIONS, *PAIR_OPTIONS, *MAURER_MODEL, SEED_OPTION, JSON_OPTION])
@SPLIT_OPTION
@click.option(
    "--solver",
    type=click.Choice(["sgd", "subgradient", "exact", "hpca"]),
    default="sgd",
    show_default=True,
    help="Table 1 SGD, projected subgradient, CVXPY, or hyperbolic PCA (§4.2).",
)
@click.option(
    "--kernel",
    type=click.Choice(["linear", "maurer"]),
    default="linear",
    show_default=True,
    help="Linear, or Maurer's normalised Gaussian kernel (§6.1).",
)
@click.option("--learning-rate", type=float, default=0.01, show_default=True, help="SGD θ.")
@click.option(
    "--n-components",
    type=int,
    default=None,
    help="SGD vectors d (default min(m, 100)); hyperbolic PCA dimension (default 10).",
)
@click.option("--c", "c", type=float, default=2.0, show_default=True, help="Hyperbolic PCA c > 1.")
@TOL_OPTION
@TIME_LIMIT_OPTION
@OUT_DIR_OPTION
def SOLVE(**o):
    """Learn a similarity operator T (Maurer 2008) and evaluate it on the test part.

    The test part is the held-out 30% of --split stratified (the default for --dataset);
    with --split none (the default for --features) every row trains and no test
    measures are reported.

    Without inputs: the built-in digits data (--dataset digits).
    """
    resolve_aliases(o)
    solver, kernel, seed = o["solver"], o["kernel"], o["seed"]
    reject_unused(UNUSED_BY_SOLVER[solver], f"by --solver {solver}")
    with library_errors():
        if o["dataset"] is None and o["features"] is None and o["pairs_file"] is None:
            o["dataset"] = "digits"
        train, Xte, yte, name = _inputs(
            *(o[key] for key in ("dataset", "features", "labels", "pairs_file")),
            o["n_pairs"],
            o["oracle"],
            seed,
            split=True,
        )
        model = _model(o)
        t0 = time.perf_counter()
        model.fit(train)
        seconds = time.perf_counter() - t0
        params = {key: o[key] for key in ("solver", "kernel", "reg_weight", "margin", "margin_neg")}
        report = {
            "method": "hyperbolic_pca" if solver == "hpca" else "maurer",
            "dataset": name,
            "params": {**params, "regularizer": o["regularizer"], "n_pairs": len(train)},
            "seconds": seconds,
            "objective": model.objective_,
            "sparsity": metrics.sparsity(model.singular_values_),
        }
        report["params"]["seed"] = seed
        if solver != "hpca":
            res = model.result_
            report["train_risk"] = model.train_risk_
            report["status"] = res.status
            report["lower_bound"] = res.lower_bound
            report["certified_gap"] = certified_gap(res.objective, res.lower_bound)
        if Xte is not None:
            report["test"] = _evaluate(model, Xte, yte, seed)
        if o["out"]:
            arrays = {"coef": model.coef_, "singular_values": model.singular_values_}
            write_outputs(o["out"], arrays, report, model=model)
    lines = [
        f"{report['method']} ({solver}, {kernel}) on {name}: objective "
        f"{report['objective']:.6g}, sparsity {report['sparsity']}, {seconds:.2f} s"
    ]
    if report.get("certified_gap") is not None:
        lines.append(
            f"status {report['status']}: lower bound {report['lower_bound']:.6g}, "
            f"certified gap {report['certified_gap']:.2e}"
        )
    if "test" in report:
        t = report["test"]
        lines.append(f"test: risk {t['risk']:.4f}, balanced error {t['balanced_error']:.4f}")
        lines.append(
            f"ROC area input {t['roc_area_input']:.4f} -> T {t['roc_area_T']:.4f}; "
            f"1-shot error input {t['one_shot_error_input']:.4f} -> T "
            f"{t['one_shot_error_T']:.4f}"
        )
    emit(report, o["as_json"], lines)


def _model(o):
    if o["solver"] == "hpca":
        return HyperbolicPCA(
            n_components=o["n_components"] or 10,
            c=o["c"],
            kernel=o["kernel"],
            random_state=o["seed"],
        )
    keys = ("regularizer", "solver", "kernel", "n_components")
    return OperatorSimilarity(
        **{key: o[key] for key in keys},
        reg_weight=o["reg_weight"],
        margin=o["margin"],
        margin_neg=o["margin_neg"],
        learning_rate=o["learning_rate"],
        max_iter=o["max_iter"],
        random_state=o["seed"],
        **estimator_limits(o, OperatorSimilarity),
    )


def _evaluate(model, Xte, yte, seed, n_draws=100):
    test = balanced_pairs(Xte, yte, 2000, random_state=seed + 1)
    d2 = model.pair_distances(test)
    Z = model.transform(Xte)
    Xn = Xte / np.maximum(np.linalg.norm(Xte, axis=1, keepdims=True), 1e-300)
    return {
        "risk": metrics.pair_risk(d2, test.r),
        "balanced_error": metrics.balanced_pair_error(d2, test.r),
        "roc_area_input": metrics.distance_roc_auc(Xn, yte),
        "roc_area_T": metrics.distance_roc_auc(Z, yte),
        "one_shot_error_input": metrics.one_shot_error(Xn, yte, n_draws=n_draws, random_state=seed),
        "one_shot_error_T": metrics.one_shot_error(Z, yte, n_draws=n_draws, random_state=seed),
    }
