"""Saved models: a self-describing directory of ``.npy`` arrays plus ``model.json``.

A model directory holds one ``.npy`` file per array (written with ``np.save``, read
back with ``allow_pickle=False``) and ``model.json``: the format and its version, the
model's kind, the estimator's class and hyperparameters, what applying it needs
(kernel, classifier settings), the shape and dtype of every array, and provenance
(package version, command, dataset, date, solver status, objective, lower bound).

Directories are written atomically: everything goes into a temporary directory next
to the target, which is renamed into place at the end; an existing target is replaced
only then (with SIGINT held back during the two renames). An interrupted run leaves
the previous contents or nothing, never a partial model.

>>> import tempfile, os
>>> from convexmetric import LMNN, datasets
>>> from convexmetric.model_io import save_model, load_model
>>> X, y = datasets.load("iris")
>>> d = os.path.join(tempfile.mkdtemp(), "m")
>>> save_model(LMNN(max_iter=50).fit(X, y), d, provenance={"dataset": "iris"})
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
import json
import os

import numpy as np

from ._atomic import atomic_directory, write_directory
from .model_kinds import KINDS, SavedModel, describe, required_arrays

FORMAT = "convexmetric-model"
FORMAT_VERSION = 1
MODEL_FILE = "model.json"


def _params(est):
    if not hasattr(est, "get_params"):
        return {}
    out = {}
    for key, val in est.get_params(deep=False).items():
        out[key] = val if isinstance(val, (str, int, float, bool, type(None))) else repr(val)
    return out


def _n_features(kind, arrays):
    if kind == "linear":
        return int(arrays["components"].shape[1])
    if kind in ("kernel", "multi_metric"):
        key = "kernel_points" if kind == "kernel" else "train_points"
        return int(arrays[key].shape[1])
    if kind == "ssne":
        return int(arrays["W"].shape[0] - 1)
    return None


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
    preprocessing : dict with arrays ``mean`` and ``scale``, optional
        The standardisation ``x ↦ (x − mean) / scale`` the estimator's training data went
        through; the loaded model applies it to new points first.
    extra_arrays : dict of ndarray, optional
        Further arrays written alongside (the model's own arrays win on a name clash).
    report : dict, optional
        Written as ``report.json`` (the CLI's run report).
    """
    kind, meta, arrays = describe(estimator_or_result)
    arrays = {**(extra_arrays or {}), **arrays}
    if preprocessing is not None:
        if kind in ("bilinear", "result"):
            raise ValueError(f"'preprocessing' does not apply to a {kind} model.")
        arrays["input_mean"] = np.asarray(preprocessing["mean"], dtype=float)
        arrays["input_scale"] = np.asarray(preprocessing["scale"], dtype=float)
        meta["preprocessing"] = "standardize"
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "estimator": type(estimator_or_result).__name__,
        "params": _params(estimator_or_result),
        "n_features_in": _n_features(kind, arrays),
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


def _fail(directory, what):
    raise ValueError(f"model directory {directory!r}: {what}")


def _read_meta(directory):
    if not os.path.isdir(directory):
        _fail(directory, "no such directory.")
    path = os.path.join(directory, MODEL_FILE)
    if not os.path.isfile(path):
        _fail(directory, f"{MODEL_FILE} is missing (`convexmetric solve ... --out DIR` writes it).")
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        _fail(directory, f"{MODEL_FILE} is not valid JSON ({exc}).")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        _fail(directory, f"{MODEL_FILE} is not a convexmetric model (format != {FORMAT!r}).")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        _fail(
            directory,
            f"{MODEL_FILE} has format_version {version!r}; this convexmetric reads "
            f"version {FORMAT_VERSION}.",
        )
    if meta.get("kind") not in KINDS:
        _fail(directory, f"unknown model kind {meta.get('kind')!r} (known: {', '.join(KINDS)}).")
    if not isinstance(meta.get("arrays"), dict):
        _fail(directory, f"{MODEL_FILE} has no 'arrays' table.")
    return meta


def _load_array(directory, name, rec):
    if not isinstance(rec, dict) or rec.get("file") != f"{name}.npy":
        _fail(directory, f"{MODEL_FILE} entry for array {name!r} must name file '{name}.npy'.")
    if os.sep in name or name.startswith(".") or (os.altsep and os.altsep in name):
        _fail(directory, f"array name {name!r} is not a plain file name.")
    path = os.path.join(directory, rec["file"])
    if not os.path.isfile(path):
        _fail(directory, f"{rec['file']} is missing (listed in {MODEL_FILE}).")
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            _fail(directory, f"{rec['file']} is not a readable .npy file (no .npy header).")
    try:
        arr = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "pickle" in str(exc).lower():
            _fail(directory, f"{rec['file']} holds pickled Python objects; refusing to load it.")
        _fail(directory, f"{rec['file']} is not a readable .npy file ({exc}).")
    except (OSError, EOFError) as exc:
        _fail(directory, f"{rec['file']} is not a readable .npy file ({exc}).")
    if not isinstance(arr, np.ndarray):
        _fail(directory, f"{rec['file']} is not a single .npy array.")
    if list(arr.shape) != list(rec.get("shape", [])):
        _fail(
            directory,
            f"{rec['file']} has shape {tuple(arr.shape)} but {MODEL_FILE} records "
            f"{tuple(rec.get('shape', []))}.",
        )
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        _fail(directory, f"{rec['file']} contains NaN or infinite values.")
    return arr


def _check_consistent(directory, kind, meta, a):
    n_in = meta.get("n_features_in")
    if n_in is not None and (not isinstance(n_in, int) or n_in < 1):
        _fail(directory, f"n_features_in must be a positive int; got {n_in!r}.")
    if n_in is not None and _n_features(kind, a) != n_in:
        _fail(directory, f"the arrays expect {_n_features(kind, a)} input features but "
                         f"{MODEL_FILE} says n_features_in = {n_in}.")  # fmt: skip
    if meta.get("preprocessing") is not None:
        if meta["preprocessing"] != "standardize":
            _fail(directory, f"unknown preprocessing {meta['preprocessing']!r}.")
        mean, scale = a.get("input_mean"), a.get("input_scale")
        if mean is None or scale is None or mean.shape != (n_in,) or scale.shape != (n_in,):
            _fail(directory, "input_mean.npy and input_scale.npy must hold one value per feature.")
        if np.any(scale <= 0):
            _fail(directory, "input_scale.npy must be positive.")
    L = a.get("components")
    if kind in ("linear", "kernel") and (L is None or L.ndim != 2):
        _fail(directory, "components.npy must be a 2-dimensional array.")
    if kind == "kernel":
        if L.shape[1] != a["kernel_points"].shape[0]:
            _fail(directory, "components.npy has a column per kernel point; the counts differ.")
        if meta.get("kernel", {}).get("name") not in ("rbf", "linear", "maurer"):
            _fail(directory, f"unknown kernel {meta.get('kernel')!r}.")
    if kind == "multi_metric" and (L.ndim != 3 or L.shape[2] != a["train_points"].shape[1]):
        _fail(directory, "components.npy must be (n_metrics, r, n_features).")
    if kind == "ssne" and a["W"].ndim != 2:
        _fail(directory, "W.npy must be a 2-dimensional array.")
    clf = meta.get("classifier")
    if clf:
        if not isinstance(clf.get("k"), int) or clf["k"] < 1:
            _fail(directory, f"classifier k must be a positive int; got {clf.get('k')!r}.")
        y, classes = a["train_labels"], a["classes"]
        if y.dtype.kind not in "iu" or y.ndim != 1 or y.size == 0:
            _fail(directory, "train_labels.npy must be a non-empty 1-d integer array.")
        if y.min() < 0 or y.max() >= len(classes):
            _fail(directory, "train_labels.npy indexes outside classes.npy.")
        Z = a.get("train_embedding")
        if Z is not None and (Z.ndim != 2 or Z.shape[0] != y.size):
            _fail(directory, "train_embedding.npy must have one row per training label.")


def load_model(directory):
    """Read and validate a model directory; return a :class:`SavedModel`.

    Raises ValueError naming the problem: a missing directory, model.json or array file,
    an unknown format version or kind, pickled or unreadable arrays, shapes that differ
    from those recorded or from each other, NaN or infinite values.
    """
    directory = os.fspath(directory)
    meta = _read_meta(directory)
    kind = meta["kind"]
    for name in required_arrays(kind, meta):
        if name not in meta["arrays"]:
            _fail(directory, f"{MODEL_FILE} lists no array {name!r}, needed by a {kind} model.")
    arrays = {name: _load_array(directory, name, rec) for name, rec in meta["arrays"].items()}
    _check_consistent(directory, kind, meta, arrays)
    return SavedModel(kind, meta, arrays, directory)


__all__ = [
    "FORMAT_VERSION",
    "SavedModel",
    "atomic_directory",
    "load_model",
    "save_model",
    "write_directory",
]
