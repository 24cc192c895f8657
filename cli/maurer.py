"""``convexmetric solve maurer`` and ``convexmetric validate maurer`` (Maurer, JMLR 2008).

``solve maurer`` learns ``T`` from labelled pairs (drawn from the training part of the
standard split by the balanced or the label oracle, or read from a pair CSV ``i,j,r``
over ``--features``) and reports Maurer's §6 measures on the test part: empirical
risk and balanced error on fresh balanced pairs, ROC area of the distance and 1-shot
1-NN error for the input and for ``T``, and the sparsity of ``T``.
``validate maurer`` solves eq. (5) with CVXPY and with the hand-written solvers on
the same pairs and reports the relative gaps.
"""

from __future__ import annotations

import os
import time

import click
import numpy as np

from .. import metrics
from ..maurer import solver as solvers
from ..maurer.estimators import ORACLES, HyperbolicPCA, OperatorSimilarity
from ..maurer.pairs import Pairs, balanced_pairs
from ..problems import maurer as problem
from ._common import (
    DATA_OPTIONS,
    NO_EXACT_NOTE,
    NO_EXACT_OPTION,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    SPLIT_OPTION,
    certified_gap,
    command_state,
    emit,
    library_errors,
    load_features,
    load_pairs,
    load_xy,
    reject_unused,
    solver_entry,
    solver_line,
    write_outputs,
)
from ._plot import Trace, plot_option, write_validate_plot


def _read_pairs(path, X):
    idx, r = load_pairs(path, X.shape[0])
    return Pairs.from_indices(X, idx[:, 0], idx[:, 1], r)


def _inputs(dataset, features, labels, pairs_file, n_pairs, oracle, seed, split):
    """``(train pairs, X_test or None, y_test or None, name)``; inputs scaled to diameter ≤ 1."""
    if pairs_file is not None:
        if features is None or dataset is not None:
            raise ValueError("--pairs needs --features (the points its indices refer to).")
        X = load_features(features)
        _record_scaling(X.shape[1], _diameter(X))
        return _read_pairs(pairs_file, X / _diameter(X)), None, None, os.path.basename(features)
    Xtr, ytr, Xte, yte, name = load_xy(dataset, features, labels, split=split)
    scale = _diameter(Xtr)
    _record_scaling(Xtr.shape[1], scale)
    if oracle not in ORACLES:
        raise ValueError(f"unknown oracle {oracle!r}.")
    train = ORACLES[oracle](Xtr / scale, ytr, n_pairs, random_state=seed)
    return train, (None if Xte is None else Xte / scale), yte, name


def _record_scaling(d, diameter):
    """Compose the division by the diameter with this command's standardisation (if any),
    so that a saved model maps raw new points as the solver saw the training points."""
    state = command_state()
    if state is None:
        return
    pre = state.get("preprocessing") or {"mean": np.zeros(d), "scale": np.ones(d)}
    state["preprocessing"] = {"mean": pre["mean"], "scale": np.asarray(pre["scale"]) * diameter}


def _diameter(X):
    X = np.asarray(X, dtype=float)
    r = float(np.linalg.norm(X - X.mean(0), axis=1).max())
    return 2.0 * r if r > 0 else 1.0


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


def _common_options(f):
    opts = [
        *DATA_OPTIONS,
        *PAIR_OPTIONS,
        click.option("--lam", type=POSITIVE_FLOAT, default=0.005, show_default=True, help="λ > 0."),
        click.option(
            "--gamma",
            type=POSITIVE_FLOAT,
            default=1.0,
            show_default=True,
            help="Margin γ₁ (similar pairs).",
        ),
        click.option(
            "--gamma-neg",
            type=POSITIVE_FLOAT,
            default=None,
            help="Margin γ₋₁ (dissimilar pairs); default: --gamma.",
        ),
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
        click.option(
            "--seed",
            type=int,
            default=0,
            show_default=True,
            help="Seed of the split, the pairs and the SGD.",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


#: the options of ``solve maurer`` that a solver does not use (given: a usage error)
UNUSED_BY_SOLVER = {
    "sgd": ("c",),
    "subgradient": ("learning_rate", "n_components", "c"),
    "exact": ("learning_rate", "max_iter", "n_components", "c"),
    "hpca": ("lam", "gamma", "gamma_neg", "regularizer", "max_iter", "learning_rate"),
}


@click.command("maurer")
@_common_options
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
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for coef.npy, singular_values.npy and report.json.",
)
def SOLVE(**o):
    """Learn a similarity operator T (Maurer 2008) and evaluate it on the test part.

    The test part is the held-out 30% of --split stratified (the default for --dataset);
    with --split none (the default for --features) every row trains and no test
    measures are reported.

    Without inputs: the built-in digits data (--dataset digits).
    """
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
        params = {key: o[key] for key in ("solver", "kernel", "lam", "gamma", "gamma_neg")}
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
        reg_weight=o["lam"],
        margin=o["gamma"],
        margin_neg=o["gamma_neg"],
        learning_rate=o["learning_rate"],
        max_iter=o["max_iter"],
        random_state=o["seed"],
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


@click.command(
    "maurer", short_help="Solve eq. (5) exactly and with the large-scale solvers; report the gaps."
)
@_common_options
@click.option(
    "--solver",
    "conic",
    type=click.Choice(["CLARABEL", "SCS"]),
    default="CLARABEL",
    show_default=True,
    help="Conic solver of the exact problem.",
)
@NO_EXACT_OPTION
@plot_option
def VALIDATE(**o):
    """Solve eq. (5) exactly and with the large-scale solvers; report the relative gaps
    and each solver's certified gap (dual lower bound).

    Without inputs: 300 balanced pairs of the iris training part. ``--no-exact`` skips
    CVXPY and reports the certificates alone.
    """
    lam, gamma, gamma_neg, regularizer = (
        o[k] for k in ("lam", "gamma", "gamma_neg", "regularizer")
    )
    no_exact, conic, seed = o["no_exact"], o["conic"], o["seed"]
    if no_exact:
        reject_unused(("conic",), "with --no-exact (no CVXPY solve)")
    with library_errors():
        if o["dataset"] is None and o["features"] is None:
            o["dataset"], o["n_pairs"] = "iris", min(o["n_pairs"], 300)
        train, _, _, name = _inputs(
            *(o[key] for key in ("dataset", "features", "labels", "pairs_file", "n_pairs")),
            o["oracle"],
            seed,
            split=False,
        )
        train.require_both()
        U, r = train.differences, train.r
        if U.shape[1] > 40 and not no_exact:
            raise ValueError(
                f"the exact problem has {U.shape[1]} features; validate instances "
                "with at most 40 (A has D² entries), or pass --no-exact."
            )
        args = (U, r, lam, gamma, gamma_neg, regularizer)
        if no_exact:
            exact, val = None, None
        else:
            A, val, status, sec = problem.solve(*args, solver=conic)
            exact = {
                "objective": val,
                "seconds": sec,
                "status": status,
                "solver": conic,
                "numpy_objective": problem.objective(A, *args),
            }
        runs = {
            "subgradient": solvers.solve_projected(*args, refine=False),
            "subgradient+smoothing": solvers.solve_projected(*args),
            "sgd": solvers.sgd(
                solvers.LinearBackend(U),
                *args[1:],
                max_iter=o["max_iter"],
                random_state=seed,
                callback=(sgd_trace := Trace()),  # time stamps for --plot
            ),
        }
        report = {
            "method": "maurer",
            "instance": {
                "dataset": name,
                "pairs": len(r),
                "features": U.shape[1],
                "lam": lam,
                "gamma": gamma,
                "gamma_neg": gamma_neg,
                "regularizer": regularizer,
            },
            "exact": exact,
            "solvers": {k: solver_entry(v, val) for k, v in runs.items()},
        }
    lines = [f"maurer on {name}: {len(r)} pairs, {U.shape[1]} features"]
    if exact is None:
        lines.append(NO_EXACT_NOTE)
    else:
        lines.append(
            f"  exact ({conic}, {exact['status']}): {val:.8g} in {exact['seconds']:.2f} s "
            f"(numpy {exact['numpy_objective']:.8g})"
        )
    lines += [solver_line(k, v) for k, v in report["solvers"].items()]
    write_validate_plot(o["plot"], report, runs, {"sgd": sgd_trace})
    emit(report, o["as_json"], lines)
