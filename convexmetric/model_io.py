"""Saved models: a self-describing directory of ``.npy`` arrays plus ``model.json``.

A model directory holds one ``.npy`` file per array (written with ``np.save``, read
back with ``allow_pickle=False``) and ``model.json``: the format and its version, the
model's kind, the estimator's class and hyperparameters, what applying it needs
(kernel, classifier settings), the shape and dtype of every array, and provenance
(package version, command, dataset, date, solver status, objective, lower bound).
A certified fit also keeps its certificate and its public fitted attributes
(``verification``: JSON scalars; ``certificate__*`` and ``fitted__*`` arrays), so that
``convexmetric verify --model DIR`` can recompute the objective and the bound.

Directories are written atomically: everything goes into a temporary directory next
to the target, which is renamed into place at the end; an existing target is replaced
only then (with SIGINT held back during the two renames). An interrupted run leaves
the previous contents or nothing, never a partial model.

>>> import tempfile, os
>>> from convexmetric import LMNN, datasets
>>> from convexmetric.model_io import save_model, load_model
>>> X, y = datasets.load("iris")
>>> d = os.path.join(tempfile.mkdtemp(), "m")
>>> save_model(LMNN().fit(X, y), d, provenance={"dataset": "iris"})
>>> m = load_model(d)
>>> m.kind, m.transform(X[:2]).shape, m.predict(X[:2]).tolist()
('linear', (2, 4), [0, 0])

Supported: LMNN (transform, kNN and energy prediction), KernelLMNN (rbf/linear/
precomputed; transform, kNN), MultiMetricLMNN (kNN and energy prediction), POE
(linear, rbf, linear-kernel, precomputed), HyperbolicPCA and OperatorSimilarity
(linear or the named ``"maurer"`` kernel), SSNE (transform), DiagonalAROMA,
FactoredAROMA and OASIS (``score_pairs``), and a bare SolveResult (arrays only).
Not supported: MKPOE, callable kernels.
"""

from __future__ import annotations

import datetime
import os

import numpy as np

from ._atomic import atomic_directory, write_directory
from ._model_dir_checks import (
    FORMAT,
    FORMAT_VERSION,
    MODEL_FILE,
    check_consistent,
    fail,
    load_array,
    read_meta,
)
from .model_kinds import SavedModel, describe, n_features, required_arrays
from .preprocessing import affine


def _params(est):
    if not hasattr(est, "get_params"):
        return {}
    out = {}
    for key, val in est.get_params(deep=False).items():
        out[key] = val if isinstance(val, (str, int, float, bool, type(None))) else repr(val)
    return out


def _provenance(est, provenance):
    from . import __version__

    out = {
        "package": "convexmetric",
        "version": __version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    res = est if type(est).__name__ == "SolveResult" else getattr(est, "result_", None)
    if res is not None:
        out.update(status=res.status, objective=float(res.objective), solver=res.solver)
        out["lower_bound"] = None if res.lower_bound is None else float(res.lower_bound)
        out["iterations"] = int(res.iterations)
    out.update(provenance or {})
    return out


def _is_scalar(v):
    return isinstance(v, (str, bool, type(None))) or (
        isinstance(v, (int, float, np.integer, np.floating)) and np.isfinite(v)
    )


def _scalar(v):
    return v.item() if isinstance(v, np.generic) else v


#: fitted attributes that hold the training data (the model's own arrays keep what it needs)
_TRAINING_DATA = ("X_fit_", "y_fit_")


def _verification(est):
    """``(meta, arrays)`` that let the verifier check a saved model: the certificate (its
    scalars in JSON, its arrays as ``certificate__<key>``), the public fitted attributes
    (``fitted__<name>`` arrays, scalars in JSON), the stored objective and, for a
    multi-pass LMNN, each earlier pass (``passes`` in JSON, ``pass<p>__*`` arrays);
    ``({}, {})`` for a model without a certificate."""
    res = getattr(est, "result_", None)
    cert = getattr(res, "certificate", None)
    if not cert:
        return {}, {}
    scalars, arrays = _certificate_parts(cert, "")
    attrs = {}
    for name, v in vars(est).items():
        if not name.endswith("_") or name.startswith("_") or name in _TRAINING_DATA:
            continue
        if isinstance(v, np.ndarray) and v.dtype.kind in "biuf":
            arrays[f"fitted__{name}"] = v
        elif _is_scalar(v):
            attrs[name] = _scalar(v)
    passes = []
    for p, e in enumerate(getattr(est, "passes_", None) or ()):
        pass_scalars, pass_arrays = _certificate_parts(e["certificate"] or {}, f"pass{p}__")
        arrays.update(pass_arrays)
        arrays[f"pass{p}__fitted__components_"] = np.asarray(e["components"], dtype=float)
        arrays[f"pass{p}__fitted__targets_"] = np.asarray(e["targets"], dtype=np.int64)
        passes.append({"objective": float(e["objective"]), "certificate": pass_scalars})
    params = {k: _scalar(v) for k, v in est.get_params(deep=False).items() if _is_scalar(v)}
    meta = {
        "objective": float(res.objective),
        "certificate": scalars,
        "attrs": attrs,
        "params": params,
        "passes": passes,
    }
    return {"verification": meta}, arrays


def _certificate_parts(cert, prefix):
    """A certificate as ``(JSON scalars, {prefix + "certificate__" + key: array})``."""
    scalars, arrays = {}, {}
    for key, v in cert.items():
        if isinstance(v, np.ndarray):
            arrays[f"{prefix}certificate__{key}"] = v
        else:
            scalars[key] = _scalar(v)
    return scalars, arrays


def save_model(
    estimator_or_result,
    directory,
    *,
    provenance=None,
    preprocessing=None,
    extra_arrays=None,
    report=None,
):
    """Write a fitted estimator (or a SolveResult) as a model directory, atomically.

    Parameters
    ----------
    estimator_or_result : a fitted convexmetric estimator or a SolveResult
    directory : str, replaced as a whole (only if empty or a previous convexmetric output)
    provenance : dict, optional
        Merged into the recorded provenance (e.g. ``command``, ``dataset``).
    preprocessing : fitted transformer, list of them, or dict, optional
        What the estimator's training data went through, in order: fitted
        ``StandardScaler`` s, :class:`~convexmetric.preprocessing.DiameterScaler` s, or a
        dict with arrays ``mean`` and ``scale`` (``x ↦ (x − mean) / scale``). They are
        stored composed; the loaded model applies them to new points first. A
        scikit-learn ``Pipeline`` passed as ``estimator_or_result`` gives its leading
        steps here and saves its last step.
    extra_arrays : dict of ndarray, optional
        Further arrays written alongside (the model's own arrays win on a name clash).
    report : dict, optional
        Written as ``report.json`` (the CLI's run report).
    """
    estimator_or_result, steps = _split_pipeline(estimator_or_result, preprocessing)
    kind, meta, arrays = describe(estimator_or_result)
    proof, proof_arrays = _verification(estimator_or_result)
    meta.update(proof)
    arrays = {**(extra_arrays or {}), **proof_arrays, **arrays}
    if steps:
        if kind in ("bilinear", "result"):
            raise ValueError(f"'preprocessing' does not apply to a {kind} model.")
        d = n_features(kind, arrays)
        arrays["input_mean"], arrays["input_scale"] = affine(steps, d)
        meta["preprocessing"] = "standardize"
        meta["preprocessing_steps"] = [_step_name(s) for s in steps]
    elif kind not in ("bilinear", "result"):
        meta["preprocessing"] = "none"  # said, not left out: a verifier refuses a silent model
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "estimator": type(estimator_or_result).__name__,
        "params": _params(estimator_or_result),
        "n_features_in": n_features(kind, arrays),
        **meta,
        "arrays": {
            name: {"file": f"{name}.npy", "shape": list(np.shape(a)), "dtype": str(a.dtype)}
            for name, a in ((n, np.asarray(v)) for n, v in arrays.items())
        },
        "provenance": _provenance(estimator_or_result, provenance),
    }
    files = {f"{name}.npy": np.asarray(a) for name, a in arrays.items()}
    files[MODEL_FILE] = meta
    if report is not None:
        files["report.json"] = report
    write_directory(directory, files)


def _split_pipeline(est, preprocessing):
    """``(estimator, [fitted preprocessing steps])`` from a Pipeline or the arguments."""
    if preprocessing is None:
        steps = []
    elif isinstance(preprocessing, (list, tuple)):
        steps = list(preprocessing)
    else:
        steps = [preprocessing]
    if type(est).__name__ == "Pipeline" and hasattr(est, "steps"):
        if steps:
            raise ValueError(
                "give the preprocessing once: as the Pipeline's steps or as "
                "'preprocessing', not both."
            )
        *lead, (_, last) = est.steps
        return last, [step for _, step in lead]
    return est, steps


def _step_name(step):
    return "affine" if isinstance(step, dict) else type(step).__name__


def load_model(directory):
    """Read and validate a model directory; return a :class:`SavedModel`.

    Raises ValueError naming the problem: a missing directory, model.json or array file,
    an unknown format version or kind, pickled or unreadable arrays, shapes that differ
    from those recorded or from each other, NaN or infinite values.
    """
    directory = os.fspath(directory)
    meta = read_meta(directory)
    kind = meta["kind"]
    for name in required_arrays(kind, meta):
        if name not in meta["arrays"]:
            fail(directory, f"{MODEL_FILE} lists no array {name!r}, needed by a {kind} model.")
    arrays = {name: load_array(directory, name, rec) for name, rec in meta["arrays"].items()}
    check_consistent(directory, kind, meta, arrays)
    return SavedModel(kind, meta, arrays, directory)


__all__ = [
    "FORMAT_VERSION",
    "SavedModel",
    "atomic_directory",
    "load_model",
    "save_model",
    "write_directory",
]
