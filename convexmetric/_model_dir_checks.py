"""The checks of a saved model directory, before anything is applied.

Everything read from disk is checked here, once: ``model.json``'s structure and types,
every array file (a real ``.npy`` header, no pickled objects, the recorded shape, finite
values), and the consistency of the arrays with each other and with the metadata
(feature counts, index ranges). Each failure is a ValueError naming the directory, the
file and the problem; nothing else escapes.
"""

from __future__ import annotations

import json
import numbers
import os

import numpy as np

from ._npy import load_npy
from .model_kinds import KINDS, NAMED_KERNELS, n_features

FORMAT = "convexmetric-model"
FORMAT_VERSION = 1
MODEL_FILE = "model.json"
RULES = ("knn", "energy")


def fail(directory, what):
    raise ValueError(f"model directory {directory!r}: {what}")


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)


def read_meta(directory):
    """``model.json`` as a dict whose every field :class:`SavedModel` uses is well typed."""
    if not os.path.isdir(directory):
        fail(directory, "no such directory.")
    path = os.path.join(directory, MODEL_FILE)
    if not os.path.isfile(path):
        fail(directory, f"{MODEL_FILE} is missing (`convexmetric solve ... --out DIR` writes it).")
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        fail(directory, f"{MODEL_FILE} is not valid JSON ({exc}).")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        fail(directory, f"{MODEL_FILE} is not a convexmetric model (format != {FORMAT!r}).")
    version = meta.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        fail(
            directory,
            f"{MODEL_FILE} has format_version {version!r}; this convexmetric reads "
            f"version {FORMAT_VERSION}.",
        )
    kind = meta.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        fail(directory, f"unknown model kind {kind!r} (known: {', '.join(KINDS)}).")
    if not isinstance(meta.get("arrays"), dict):
        fail(directory, f"{MODEL_FILE} has no 'arrays' table.")
    for key in ("params", "provenance"):
        if not isinstance(meta.get(key, {}), dict):
            fail(directory, f"{MODEL_FILE}: {key!r} must be a table.")
    if not isinstance(meta.get("estimator", ""), str):
        fail(directory, f"{MODEL_FILE}: 'estimator' must be a class name.")
    n_in = meta.get("n_features_in")
    if n_in is not None and (not _is_int(n_in) or n_in < 1):
        fail(directory, f"n_features_in must be a positive int; got {n_in!r}.")
    _check_sections(directory, kind, meta)
    return meta


def _check_sections(directory, kind, meta):
    clf = meta.get("classifier")
    if clf is not None:
        if not isinstance(clf, dict):
            fail(directory, "'classifier' must be a table.")
        if not _is_int(clf.get("k")) or clf["k"] < 1:
            fail(directory, f"classifier k must be a positive int; got {clf.get('k')!r}.")
        if not _is_real(clf.get("mu")) or not 0 <= clf["mu"] <= 1:
            fail(directory, f"classifier mu must be a number in [0, 1]; got {clf.get('mu')!r}.")
        rules = clf.get("rules")
        if not isinstance(rules, list) or not rules or not all(r in RULES for r in rules):
            fail(directory, f"classifier rules must be a list from {RULES}; got {rules!r}.")
    if kind == "kernel":
        k = meta.get("kernel")
        if not isinstance(k, dict) or k.get("name") not in NAMED_KERNELS:
            fail(directory, f"unknown kernel {k!r} (known: {', '.join(NAMED_KERNELS)}).")
        if k["name"] == "rbf" and (not _is_real(k.get("gamma")) or k["gamma"] <= 0):
            fail(directory, f"the rbf kernel needs a positive gamma; got {k.get('gamma')!r}.")
    prep = meta.get("preprocessing")
    if prep not in (None, "none", "standardize"):
        fail(directory, f"unknown preprocessing {prep!r}.")


def load_array(directory, name, rec):
    """One array file, read with ``allow_pickle=False`` and checked against its record."""
    if os.sep in name or name.startswith(".") or (os.altsep and os.altsep in name):
        fail(directory, f"array name {name!r} is not a plain file name.")
    if not isinstance(rec, dict) or rec.get("file") != f"{name}.npy":
        fail(directory, f"{MODEL_FILE} entry for array {name!r} must name file '{name}.npy'.")
    shape = rec.get("shape")
    if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
        fail(directory, f"{MODEL_FILE} entry for array {name!r} has no valid shape.")
    path = os.path.join(directory, rec["file"])
    if not os.path.isfile(path):
        fail(directory, f"{rec['file']} is missing (listed in {MODEL_FILE}).")
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            fail(directory, f"{rec['file']} is not a readable .npy file (no .npy header).")
    # the header is checked first: a shape it cannot hold is refused, never allocated
    arr = load_npy(path, f"model directory {directory!r}: {rec['file']}")
    if list(arr.shape) != shape:
        fail(
            directory,
            f"{rec['file']} has shape {tuple(arr.shape)} but {MODEL_FILE} records {tuple(shape)}.",
        )
    if arr.dtype.kind not in "biufU":
        fail(directory, f"{rec['file']} has dtype {arr.dtype}; expected numbers or text.")
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        fail(directory, f"{rec['file']} contains NaN or infinite values.")
    return arr


def _ndim(directory, a, name, ndim, kinds="fiu"):
    """``a[name]`` (if present) is ``ndim``-d and numeric; only ``components`` (a metric of
    rank 0 is a legitimate, if useless, optimum) may have no rows."""
    arr = a.get(name)
    empty = arr is not None and (0 in arr.shape[1:] if name == "components" else 0 in arr.shape)
    if arr is not None and (arr.ndim != ndim or arr.dtype.kind not in kinds or empty):
        fail(directory, f"{name}.npy must be a non-empty {ndim}-d numeric array.")
    return arr


def check_consistent(directory, kind, meta, a):
    """The arrays agree with each other and with ``meta``."""
    for name in ("components", "kernel_points", "train_points", "train_embedding", "W"):
        if not (kind == "multi_metric" and name == "components"):
            _ndim(directory, a, name, 2)
    n_in = meta.get("n_features_in")
    if kind in ("linear", "kernel", "multi_metric", "ssne") and n_features(kind, a) != n_in:
        fail(
            directory,
            f"the arrays expect {n_features(kind, a)} input features but "
            f"{MODEL_FILE} says n_features_in = {n_in}.",
        )
    if meta.get("preprocessing") == "standardize":
        mean, scale = a.get("input_mean"), a.get("input_scale")
        if mean is None or scale is None or mean.shape != (n_in,) or scale.shape != (n_in,):
            fail(directory, "input_mean.npy and input_scale.npy must hold one value per feature.")
        if mean.dtype.kind not in "fiu" or scale.dtype.kind not in "fiu" or np.any(scale <= 0):
            fail(directory, "input_scale.npy must hold positive numbers.")
    L = a.get("components")
    if kind == "kernel" and L.shape[1] != a["kernel_points"].shape[0]:
        fail(directory, "components.npy must have one column per kernel point.")
    if kind == "multi_metric":
        _ndim(directory, a, "components", 3)
        g = _ndim(directory, a, "clusters", 1, "iu")
        if L.shape[2] != a["train_points"].shape[1] or g.size != a["train_points"].shape[0]:
            fail(
                directory,
                "components.npy (n_metrics, r, d) and clusters.npy (n,) must match "
                "train_points.npy (n, d).",
            )
        if g.min() < 0 or g.max() >= L.shape[0]:
            fail(directory, "clusters.npy indexes outside the metrics of components.npy.")
        c = _ndim(directory, a, "cluster_centers", 2)
        if c is not None and c.shape != (L.shape[0], L.shape[2]):
            fail(directory, "cluster_centers.npy must be (n_metrics, n_features).")
    if meta.get("classifier"):
        _check_classifier(directory, kind, meta, a)


def _check_classifier(directory, kind, meta, a):
    y = _ndim(directory, a, "train_labels", 1, "iu")
    classes = a["classes"]
    if classes.ndim != 1 or classes.size == 0 or y.min() < 0 or y.max() >= len(classes):
        fail(directory, "train_labels.npy must index into classes.npy.")
    k = meta["classifier"]["k"]
    if k > y.size:
        fail(
            directory,
            f"{MODEL_FILE}: classifier k = {k} is larger than the {y.size} training "
            "points it votes among.",
        )
    Z = a.get("train_embedding")
    if Z is not None:
        r = a["components"].shape[0]
        if Z.shape != (y.size, r):
            fail(directory, f"train_embedding.npy must be ({y.size}, {r}): a row per label.")
    if "energy" in meta["classifier"]["rules"]:
        X = a["train_points"]
        T = _ndim(directory, a, "targets", 2, "iu")
        if X.shape[0] != y.size or T.shape[0] != y.size:
            fail(directory, "train_points.npy and targets.npy must have a row per label.")
        if T.min() < 0 or T.max() >= y.size:
            fail(directory, "targets.npy indexes outside the training points.")
        if kind != "multi_metric" and X.shape[1] != a["components"].shape[1]:
            fail(directory, "train_points.npy must have a column per input feature.")
