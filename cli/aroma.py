"""``convexmetric solve aroma`` and ``convexmetric validate aroma``.

``solve aroma --variant diagonal|factored|oasis`` fits an online bilinear learner on
the training part of the standard split (triplets drawn from labels) and reports
precision@k and mAP on the test part, every test item a query against the rest, beside
the identity ``W = I``. ``validate aroma`` solves the batch ranking problem of
``problems/bilinear.py`` exactly and reports the online learners' objective and mean
hinge on the same triplets.
"""

from __future__ import annotations

import os
import time

import click
import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler

from .. import datasets
from ..aroma.estimators import OASIS, DiagonalAROMA, FactoredAROMA
from ..bilinear import hinge_losses, sample_triplets, similarity
from ..metrics import mean_average_precision, precision_at_k
from ._common import (
    DATASET_CHOICE,
    HEADER_OPTION,
    POSITIVE_FLOAT,
    SPLIT_OPTION,
    command_state,
    emit,
    library_errors,
    load_labels,
    load_xy,
    reject_unused,
    relative_gap,
    write_outputs,
)
from ._plot import plot_option, write_validate_plot
from .inputs import split_mode

VARIANTS = {"diagonal": "d-AROMA", "factored": "f-AROMA", "oasis": "OASIS"}


def _data(dataset, features, labels, seed):
    """Train/test parts: a scipy sparse .npz is read as is; dense data is standardised.

    ``--split none`` (the default for --features) trains on every row and evaluates the
    retrieval on the training items themselves (the report says so).
    """
    if dataset is None and features is None:
        dataset = "bow"
    X = None
    if features is not None and features.endswith(".npz") and labels is not None:
        try:
            X = sp.load_npz(features).tocsr()
        except (ValueError, OSError, KeyError):
            X = None  # not a scipy sparse archive: an ordinary .npz of arrays
    if X is not None:
        y, name = load_labels(labels), os.path.basename(features)
        if len(y) != X.shape[0]:
            raise ValueError(
                f"the labels file has {len(y)} rows but the features file has {X.shape[0]}."
            )
    else:
        X, y, _, _, name = load_xy(dataset, features, labels, split=False)
    scale = not sp.issparse(X)
    if split_mode(dataset) == "none":
        if scale:
            X = StandardScaler().fit_transform(X)
        _record_split({"kind": "none", "n_train": X.shape[0], "n_test": 0})
        return X, X, y, y, name
    parts = datasets.split(X, y, scale=scale, random_state=seed)
    n_train, n_test = parts[0].shape[0], parts[1].shape[0]
    _record_split({"kind": "stratified", "n_train": n_train, "n_test": n_test, "seed": seed})
    return (*parts, name)


def _record_split(info):
    state = command_state()
    if state is not None:
        if info["kind"] == "none":
            info["evaluated_on"] = "the training rows"
        else:
            info.update(test_size=0.3, random_state=info.pop("seed"))
        state["split"] = info


def _model(variant, r, C, n_iter, mistake_driven, seed):
    kw = {"max_iter": n_iter, "mistake_driven": mistake_driven, "random_state": seed}
    if variant == "oasis":
        return OASIS(C=C, **kw)
    return (DiagonalAROMA if variant == "diagonal" else FactoredAROMA)(r=r, **kw)


def run_solve(variant, *, r, C, **opts):
    """The body shared by ``solve aroma`` and ``solve oasis`` (``opts``: their options)."""
    dataset, features, labels = opts["dataset"], opts["features"], opts["labels"]
    n_iter, mistake_driven, ks = opts["n_iter"], opts["mistake_driven"], opts["ks"]
    seed, out, as_json = opts["seed"], opts["out"], opts["as_json"]
    with library_errors():
        Xtr, Xte, ytr, yte, name = _data(dataset, features, labels, seed)
        model = _model(variant, r, C, n_iter, mistake_driven, seed)
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        seconds = time.perf_counter() - t0
        ks = sorted({k for k in ks if 1 <= k < Xte.shape[0]})
        if not ks:
            raise ValueError(f"no valid --k: the test part has only {Xte.shape[0]} items.")
        S = model.similarity(Xte)
        S0 = similarity(np.eye(Xte.shape[1]), Xte)
        report = {
            "method": VARIANTS[variant],
            "dataset": name,
            "params": {
                "r": r,
                "C": C,
                "n_iter": n_iter,
                "mistake_driven": mistake_driven,
                "seed": seed,
            },
            "shape": list(model.W_.shape),
            "n_train": int(Xtr.shape[0]),
            "n_test": 0 if Xte is Xtr else int(Xte.shape[0]),
            "rounds": model.n_rounds_,
            "updates": model.n_updates_,
            "mistakes": model.n_mistakes_,
            "average_online_loss": model.average_loss_,
            "seconds": seconds,
            "precision_at_k": dict(zip(map(str, ks), precision_at_k(S, yte, ks).tolist())),
            "map": mean_average_precision(S, yte),
            "identity": {
                "precision_at_k": dict(zip(map(str, ks), precision_at_k(S0, yte, ks).tolist())),
                "map": mean_average_precision(S0, yte),
            },
        }
        if out:
            arrays = {"W": model.W_}
            if variant == "diagonal":
                arrays["Sigma"] = model.Sigma_
            elif variant == "factored":
                arrays.update(Lambda=model.Lambda_, Omega=model.Omega_)
            write_outputs(out, arrays, report)
    pk = ", ".join(f"P@{k}={v:.4f}" for k, v in report["precision_at_k"].items())
    pk0 = ", ".join(f"P@{k}={v:.4f}" for k, v in report["identity"]["precision_at_k"].items())
    emit(
        report,
        as_json,
        [
            f"{report['method']} on {name}: W {model.W_.shape[0]}×{model.W_.shape[1]}, "
            f"{model.n_rounds_} rounds, {model.n_updates_} updates in {seconds:.2f} s",
            f"{'test' if report['n_test'] else 'training-row'} retrieval: {pk}, "
            f"mAP={report['map']:.4f}",
            f"identity W = I: {pk0}, mAP={report['identity']['map']:.4f}",
        ],
    )


def data_options(f):
    """The input, output and seed options shared by the solve commands."""
    for opt in reversed(
        [
            click.option(
                "--dataset",
                type=DATASET_CHOICE,
                default=None,
                help="A built-in data set [default: bow, without --features].",
            ),
            click.option(
                "--features",
                type=click.Path(exists=True, dir_okay=False),
                help="Features (.npy, .npz, .csv; scipy sparse .npz).",
            ),
            click.option(
                "--labels",
                type=click.Path(exists=True, dir_okay=False),
                help="Labels file (.csv, .npy), one label per row of --features.",
            ),
            HEADER_OPTION,
            SPLIT_OPTION,
            click.option(
                "--max-iter",
                "--n-iter",
                "n_iter",
                type=int,
                default=20000,
                show_default=True,
                help="Triplets (online rounds); --n-iter is the former name.",
            ),
            click.option("--mistake-driven", is_flag=True, help="Update only when qᵀWp ≤ 0."),
            click.option(
                "--k",
                "ks",
                type=int,
                multiple=True,
                default=(1, 5, 10, 50),
                show_default=True,
                help="Precision cut-offs (repeatable).",
            ),
            click.option(
                "--seed",
                type=int,
                default=0,
                show_default=True,
                help="Seed of the split and the triplet stream.",
            ),
            click.option(
                "--out",
                type=click.Path(file_okay=False),
                default=None,
                help="Directory for W.npy and report.json.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
        ]
    ):
        f = opt(f)
    return f


@click.command("aroma")
@click.option(
    "--variant",
    type=click.Choice(list(VARIANTS)),
    default="diagonal",
    show_default=True,
    help="d-AROMA (diagonal), f-AROMA (factored) or the OASIS baseline.",
)
@click.option("--r", type=float, default=1.0, show_default=True, help="AROW regulariser r > 0.")
@click.option(
    "--C",
    "C",
    type=float,
    default=0.1,
    show_default=True,
    help="OASIS aggressiveness C > 0 (variant oasis).",
)
@data_options
def SOLVE(variant, r, C, **kw):
    """Online bilinear similarity qᵀWp by AROMA (Crammer & Chechik 2012); test precision@k.

    Without inputs: the built-in bag of words (--dataset bow). With --split none (the
    default for --features) every row trains and precision is measured on them.
    """
    reject_unused(("r",) if variant == "oasis" else ("C",), f"by --variant {variant}")
    run_solve(variant, r=r, C=C, **kw)


@click.command("aroma")
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
@click.option(
    "--solver",
    type=click.Choice(["CLARABEL", "SCS"]),
    default="CLARABEL",
    show_default=True,
    help="Conic solver.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the instance.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@plot_option
def VALIDATE(n_items, n_features, n_triplets, C, r, epochs, solver, seed, as_json, plot):
    """Batch ranking problem exactly (CVXPY) against the online learners on the same triplets."""
    from ..problems.bilinear import objective, solve_batch

    with library_errors():
        group = max(1, min(3, n_features // 4))
        X, y = datasets.bag_of_features(
            n_items,
            n_features,
            3,
            n_tokens=4,
            group_size=group,
            class_groups=min(2, n_features // group),
            random_state=seed,
        )
        X = X.toarray()
        T = sample_triplets(y, n_triplets, random_state=seed)
        W, value, status, seconds = solve_batch(X, X, T, C, solver)
        report = {
            "method": "aroma",
            "instance": f"bag_of_features({n_items}, {n_features}), {n_triplets} triplets, C={C}",
            "exact": {
                "objective": value,
                "seconds": seconds,
                "status": status,
                "solver": solver,
                "mean_hinge": float(hinge_losses(W, X, X, T).mean()),
            },
            "solvers": {},
        }
        stream = np.tile(T, (epochs, 1))
        for variant in VARIANTS:
            model = _model(variant, r, 0.1, 0, False, seed)
            t0 = time.perf_counter()
            model.partial_fit_triplets(X[stream[:, 0]], X[stream[:, 1]], X[stream[:, 2]])
            f = objective(model.W_, X, X, T, C)
            report["solvers"][VARIANTS[variant]] = {
                "objective": f,
                "seconds": time.perf_counter() - t0,
                "status": model.result_.status,
                "relative_gap": relative_gap(f, value),
                "mean_hinge": float(hinge_losses(model.W_, X, X, T).mean()),
            }
    lines = [
        f"exact ({solver}): objective {value:.6g}, mean hinge {report['exact']['mean_hinge']:.4f}"
    ]
    lines += [
        f"{k}: objective {v['objective']:.6g} (gap {v['relative_gap']:+.3g}), "
        f"mean hinge {v['mean_hinge']:.4f}"
        for k, v in report["solvers"].items()
    ]
    write_validate_plot(plot, report)
    emit(report, as_json, lines)
