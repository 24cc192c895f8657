"""``convexmetric verify --model DIR``: the independent verifier on a saved model.

The model directory is one that ``solve ... --out DIR`` wrote from a certified fit; the
data options are those of ``solve`` (the same ``--dataset`` or ``--features/--labels``,
the same ``--split``), so the training rows are rebuilt and standardised exactly as
``solve`` did. The verifier (:mod:`convexmetric.verifier`) recomputes the objective
and the certified lower bound from those rows and the stored certificate; the command
exits with status 1 when the model is not verified.
"""

from __future__ import annotations

import click
import numpy as np

from ._common import SPLIT_OPTION, apply_options, command_state, emit, library_errors, load_xy
from .inputs import DATA_OPTIONS

#: saved estimators whose training data are ``(X, y)`` as ``solve lmnn`` reads them
LABELLED = ("LMNN", "MultiMetricLMNN", "KernelLMNN")


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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def VERIFY(model_dir, dataset, features, labels, as_json, **_):
    """Recompute a saved model's objective and certified bound from the training data.

    Give the data options that `solve` was given. The report holds the recomputed
    objective, the bound proved by the stored certificate (recomputed, never read),
    the certified gap, the tolerance and whether the model is verified; the exit status
    is 1 when it is not.
    """
    from ..model_io import load_model
    from ..verifier import Fitted, verify_fitted

    with library_errors():
        model = load_model(model_dir)
        fitted = Fitted.from_saved(model.meta, model.arrays)
        if fitted.estimator not in LABELLED:
            raise ValueError(
                f"`convexmetric verify` rebuilds the training data of {', '.join(LABELLED)} "
                f"models; this one is a {fitted.estimator} (use convexmetric.verify in Python)."
            )
        Xtr, ytr, _, _, name = load_xy(dataset, features, labels)
        _check_preprocessing(model, Xtr)
        result = verify_fitted(fitted, Xtr, ytr)
    report = {"model": model_dir, "estimator": fitted.estimator, "instance": name,
              **result.summary()}  # fmt: skip
    emit(report, as_json, _lines(report))
    if not result.verified:
        raise click.exceptions.Exit(1)


def _check_preprocessing(model, Xtr):
    """The data options must rebuild the rows the model was fitted on: the same number
    of features and the same standardisation (fitted on the same training rows)."""
    if model.meta.get("n_features_in") not in (None, Xtr.shape[1]):
        raise ValueError(
            f"the data have {Xtr.shape[1]} features but the model expects "
            f"{model.meta['n_features_in']}: not the data it was fitted on."
        )
    seen = (command_state() or {}).get("preprocessing")
    if model.meta.get("preprocessing") != "standardize" or seen is None:
        return
    a = model.arrays
    if not (np.allclose(a["input_mean"], seen["mean"], rtol=1e-12, atol=1e-12)
            and np.allclose(a["input_scale"], seen["scale"], rtol=1e-12, atol=0)):  # fmt: skip
        raise ValueError(
            "the model's standardisation differs from that of these training rows: give the "
            "data options (and --split) that `solve` was given."
        )


def _lines(r):
    verdict = "verified" if r["verified"] else f"NOT verified: {r['reason']}"
    return [
        f"{r['estimator']} model {r['model']} on {r['instance']}: {verdict}",
        f"  objective {r['objective']:.10g} (stored {r['reported_objective']:.10g}), lower "
        f"bound {r['lower_bound']:.10g}, certified gap {r['certified_gap']:.3g} "
        f"(tol {r['tol']:g}), {r['seconds']:.2f} s",
    ]


EXTRA = [VERIFY]
__all__ = ["EXTRA", "VERIFY"]
