"""``convexmetric solve aroma`` (and the body of ``solve oasis``).

``solve aroma --variant diagonal|factored|oasis`` fits an online bilinear learner on
the training part of the standard split (triplets drawn from labels) and reports
precision@k and mAP on the test part, every test item a query against the rest, beside
the identity ``W = I``. ``validate aroma`` (in :mod:`.validate`) solves the batch
ranking problem exactly against the online learners.
"""

from __future__ import annotations

import os
import time

import click
import numpy as np
import scipy.sparse as sp

from .. import datasets
from ..aroma.estimators import OASIS, DiagonalAROMA, FactoredAROMA
from ..bilinear import similarity
from ..metrics import mean_average_precision, precision_at_k
from ..preprocessing import standardize_unless_sparse
from ._common import (
    DATASET_CHOICE,
    HEADER_OPTION,
    SPLIT_OPTION,
    command_state,
    emit,
    library_errors,
    load_labels,
    load_xy,
    reject_unused,
    write_outputs,
)
from .inputs import split_mode
from .options import (
    JSON_OPTION,
    OUT_DIR_OPTION,
    SEED_OPTION,
    TIME_LIMIT_OPTION,
    TOL_OPTION,
    deprecated_alias,
    estimator_limits,
    resolve_aliases,
)

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
    scale = not sp.issparse(X)  # the policy of standardize_unless_sparse
    if split_mode(dataset) == "none":
        scaler = standardize_unless_sparse(X)
        if scaler is not None:
            X = scaler.transform(X)
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
    resolve_aliases(opts)
    dataset, features, labels = opts["dataset"], opts["features"], opts["labels"]
    n_iter, mistake_driven, ks = opts["n_iter"], opts["mistake_driven"], opts["ks"]
    seed, out, as_json = opts["seed"], opts["out"], opts["as_json"]
    with library_errors():
        Xtr, Xte, ytr, yte, name = _data(dataset, features, labels, seed)
        model = _model(variant, r, C, n_iter, mistake_driven, seed)
        model.set_params(**estimator_limits(opts, model))
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        seconds = time.perf_counter() - t0
        ks = sorted({k for k in ks if 1 <= k < Xte.shape[0]})
        if not ks:
            raise ValueError(
                f"no valid --precision-at: the test part has only {Xte.shape[0]} items."
            )
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
                "--precision-at",
                "ks",
                type=int,
                multiple=True,
                default=(1, 5, 10, 50),
                show_default=True,
                help="Cut-offs k of precision@k (repeatable).",
            ),
            deprecated_alias("--k", "--precision-at", "ks", type=int, multiple=True),
            SEED_OPTION,
            TOL_OPTION,
            TIME_LIMIT_OPTION,
            OUT_DIR_OPTION,
            JSON_OPTION,
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
