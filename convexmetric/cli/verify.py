"""``convexmetric verify --model DIR``: the independent verifier on a saved model.

The model directory is one that ``solve ... --out DIR`` wrote from a certified fit; the
data options are those of ``solve`` for the model's method (LMNN: ``--dataset`` or
``--features/--labels`` and ``--split``; Maurer: the same, or ``--pairs``, with
``--n-pairs``, ``--oracle`` and ``--seed``; POE: ``--comparisons`` with ``--features``
or ``--kernel``, or the built-in instance with ``--n-comparisons`` and ``--seed``), so
the training data are rebuilt exactly as ``solve`` built them. The verifier
(:mod:`convexmetric.verifier`) recomputes the objective and the certified lower bound
from those data and the stored certificate; the command
exits with status 1 when the model is not verified.

The map verified is the one the model applies (POE and Maurer: ``components``, ``W``,
``kernel_points`` and the kernel of ``model.json``, each checked against its stored
``fitted__*`` copy), and Maurer's pairs are drawn by the verifier itself from the rows
and the options given (the options are the problem: another ``--seed`` is another
problem), never by the solver package's pair oracle.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import click
import numpy as np

from ..preprocessing import affine
from ._common import SPLIT_OPTION, apply_options, command_state, emit, library_errors, load_xy
from .inputs import DATA_OPTIONS
from .maurer_options import PAIR_OPTIONS
from .options import JSON_OPTION, SEED_OPTION
from .poe_options import COMPARISON_OPTIONS

#: saved estimators whose training data are ``(X, y)`` as ``solve lmnn`` reads them
LABELLED = ("LMNN", "MultiMetricLMNN", "KernelLMNN")
#: every saved estimator the command re-checks
SUPPORTED = (*LABELLED, "OperatorSimilarity", "POE")

#: the options of ``solve maurer`` and ``solve poe`` that rebuild their training data
METHOD_DATA = [
    *PAIR_OPTIONS,
    *COMPARISON_OPTIONS,
    SEED_OPTION,  # Maurer and POE: give the seed that solve was given
]


@click.command("verify", short_help="Re-check a saved certified model against its data.")
@click.option(
    "--model",
    "model_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="A model directory written by `convexmetric solve ... --out DIR`.",
)
@apply_options(DATA_OPTIONS)
@SPLIT_OPTION
@apply_options(METHOD_DATA)
@click.option(
    "--tol",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="The certified relative gap to verify (default: the method's documented default, "
    "1e-4; Maurer's subgradient solver 1e-6). The model's own tol is reported, never used.",
)
@JSON_OPTION
def VERIFY(model_dir, tol, as_json, **opts):
    """Recompute a saved model's objective and certified bound from the training data.

    Give the data options that `solve` was given. The report holds the recomputed
    objective, the bound proved by the stored certificate (recomputed, never read),
    the certified gap, the tolerance and whether the model is verified; the exit status
    is 1 when it is not.
    """
    from ..model_io import load_model
    from ..verifier import Fitted, VerificationError, verify_fitted

    with library_errors():
        model = load_model(model_dir)
        estimator = model.meta.get("estimator", "")
        if estimator not in SUPPORTED:
            raise ValueError(
                f"`convexmetric verify` rebuilds the training data of {', '.join(SUPPORTED)} "
                f"models; this one is a {estimator} (use convexmetric.verify in Python)."
            )
        try:
            fitted = Fitted.from_saved(model.meta, model.arrays)
            args, name = _training_data(fitted, model, opts)
            summary = verify_fitted(fitted, *args, tol=tol).summary()
        except VerificationError as exc:  # the claim is refused: a report, not a crash
            name = opts.get("dataset") or opts.get("features") or ""
            summary = {"verified": False, "reason": str(exc)}
    report = {"model": model_dir, "estimator": estimator, "instance": name, **summary}
    emit(report, as_json, _lines(report))
    if not report["verified"]:
        raise click.exceptions.Exit(1)


def _training_data(fitted, model, o):
    """``(fit arguments, instance name)`` rebuilt as ``solve`` built them.

    POE and Maurer: ``fitted``'s map becomes the arrays the saved model applies (checked
    against their stored copies: :func:`convexmetric.verifier._saved.applied_attrs`), and
    Maurer's pairs are the options' (``--n-pairs``, ``--oracle``, ``--seed``: the problem
    is the caller's), redrawn by the verifier itself from ``X, y``, or read from
    ``--pairs``; the solver package's pair oracle is not used.
    """
    if fitted.estimator in ("POE", "OperatorSimilarity"):
        from ..verifier._saved import applied_attrs

        fitted.attrs = applied_attrs(fitted, model.meta, model.arrays)
    if fitted.estimator == "POE":
        from .poe import _inputs

        kind = "linear" if fitted.params.get("kernel") is None else "kernel"
        files = (o["comparisons"], o["features"], o["kernels"])
        C, data, name = _inputs(kind, *files, o["dataset"], o["seed"], o["n_comparisons"])
        return (C, data), name
    if fitted.estimator == "OperatorSimilarity":
        return _maurer_data(fitted, model, o)
    Xtr, ytr, _, _, name = load_xy(o["dataset"], o["features"], o["labels"])
    _check_preprocessing(model, Xtr)
    return (Xtr, ytr), name


def _maurer_data(fitted, model, o):
    """Maurer's points (scaled to diameter 1 as ``solve maurer`` scaled them) and labels,
    with the options' draw; or the pairs of ``--pairs`` over ``--features``."""
    from ..preprocessing import DiameterScaler
    from .inputs import load_features, load_pairs
    from .maurer import _record_scaling

    if o["pairs_file"] is not None:
        if o["features"] is None or o["dataset"] is not None:
            raise ValueError("--pairs needs --features (the points its indices refer to).")
        X = load_features(o["features"])
        X = _record_scaling(DiameterScaler().fit(X), X)
        idx, r = load_pairs(o["pairs_file"], X.shape[0])
        _check_preprocessing(model, X)
        pairs = SimpleNamespace(points=X, i=idx[:, 0], j=idx[:, 1], r=np.asarray(r, float))
        return (pairs,), os.path.basename(o["features"])
    if not (o["dataset"] or o["features"]):
        o["dataset"] = "digits"  # solve maurer's default
    Xtr, ytr, _, _, name = load_xy(o["dataset"], o["features"], o["labels"], split=True)
    Xtr = _record_scaling(DiameterScaler().fit(Xtr), Xtr)
    _check_preprocessing(model, Xtr)
    fitted.params.update(n_pairs=o["n_pairs"], oracle=o["oracle"], random_state=o["seed"])
    return (Xtr, ytr), name


def _check_preprocessing(model, Xtr):
    """The data options must rebuild the rows the model was fitted on: the same number
    of features and the same standardisation (fitted on the same training rows). The
    model must say what it applies ("none" or "standardize", checked when loaded for
    verification); a model that standardises new points must match these rows' own."""
    if model.meta.get("n_features_in") not in (None, Xtr.shape[1]):
        raise ValueError(
            f"the data have {Xtr.shape[1]} features but the model expects "
            f"{model.meta['n_features_in']}: not the data it was fitted on."
        )
    steps = (command_state() or {}).get("preprocessing")
    applied = model.meta.get("preprocessing")
    if (applied == "standardize") != (steps is not None):
        said = "standardises" if applied == "standardize" else "does not standardise"
        raise ValueError(
            f"the model {said} new points, but these data options "
            f"{'do not' if steps is None else 'do'}: give the data options (and --split) "
            "that `solve` was given."
        )
    if steps is None:
        return
    a = model.arrays
    mean, scale = affine(steps, Xtr.shape[1])
    if not (
        np.allclose(a["input_mean"], mean, rtol=1e-12, atol=1e-12)
        and np.allclose(a["input_scale"], scale, rtol=1e-12, atol=0)
    ):
        raise ValueError(
            "the model's standardisation differs from that of these training rows: give the "
            "data options (and --split) that `solve` was given."
        )


def _lines(r):
    verdict = "verified" if r["verified"] else f"NOT verified: {r['reason']}"
    if "objective" not in r:  # refused before any number was recomputed
        return [f"{r['estimator']} model {r['model']} on {r['instance']}: {verdict}"]
    return [
        f"{r['estimator']} model {r['model']} on {r['instance']}: {verdict}",
        f"  objective {r['objective']:.10g} ± {r['resolution']:.2g} (stored "
        f"{r['reported_objective']:.10g}), lower bound {r['lower_bound']:.10g}, certified "
        f"gap {r['certified_gap']:.3g} (tol {r['tol']:g}), {r['seconds']:.2f} s",
    ]


__all__ = ["VERIFY"]
