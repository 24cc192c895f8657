"""What a saved model holds, per estimator, and how a loaded one is applied.

:func:`describe` turns a fitted estimator into ``(kind, meta, arrays)``: plain JSON
metadata and named numpy arrays, nothing pickled. :class:`SavedModel` applies them to
new data. The kinds:

``linear``
    ``x ↦ L x`` (``components``: ``r × d``). LMNN, POE (linear, and precomputed kernels,
    whose inputs are kernel rows), HyperbolicPCA / OperatorSimilarity with a linear kernel.
``kernel``
    ``x ↦ L k(x, X_fit)`` with a named kernel (``rbf``, ``linear``, ``maurer``) over the
    stored ``kernel_points``. KernelLMNN, POE (rbf/linear), Maurer with its kernel.
``multi_metric``
    One metric per cluster (LMNN §5.2); no single ``transform``, only ``predict``.
``ssne``
    ``x ↦ H(x)``, the tanh embedding onto the sphere (``W``: ``(d+1) × M``).
``bilinear``
    A similarity ``qᵀ W p`` (AROMA, OASIS): ``score_pairs`` only.
``result``
    A bare :class:`~convexmetric.result.SolveResult` (its matrices); nothing to apply.

A model may record the standardisation its training data went through
(``preprocessing: "standardize"`` with ``input_mean`` and ``input_scale``); new points
go through it first. The LMNN classifiers add a ``classifier`` section (kNN and,
where the training targets are kept, energy-based prediction, eq. 15) with the
training embedding, labels and class names.
"""

from __future__ import annotations

import numpy as np

from . import kernels as _kernels
from .lmnn.energy import energy_predict
from .neighbors import knn_predict, sqdist

KINDS = ("linear", "kernel", "multi_metric", "ssne", "bilinear", "result")
NAMED_KERNELS = ("rbf", "linear", "maurer")


def _classes(est):
    classes = np.asarray(est.classes_)
    if classes.dtype == object:
        classes = classes.astype(str)
    return classes


def _lmnn_classifier(est, rules):
    return {"k": int(est.predict_k_), "mu": float(est.mu), "rules": rules}


def describe(est):
    """``(kind, meta, arrays)`` of a fitted estimator; ValueError for what cannot be saved."""
    from .result import SolveResult

    name = type(est).__name__
    if isinstance(est, SolveResult):
        arrays = {"matrix": np.asarray(est.matrix, dtype=float)}
        for p, M in enumerate(est.matrices or ()):
            arrays[f"matrix{p}"] = np.asarray(M, dtype=float)
        return "result", {}, arrays
    from .formulations import FORMULATIONS, savers

    describe_one = next((f for cls, f in savers() if isinstance(est, cls)), None)
    if describe_one is None:
        names = [cls.rpartition(":")[2] for f in FORMULATIONS.values() for cls, _ in f.savers]
        raise ValueError(
            f"cannot save a {name}: supported are {', '.join(dict.fromkeys(names))} and "
            "SolveResult (MKPOE needs its users' kernels at transform time)."
        )
    fitted = ("W_", "components_", "coef_", "metrics_", "A_")
    if not any(getattr(est, a, None) is not None for a in fitted):
        raise ValueError(f"This {name} instance is not fitted yet; call fit before saving it.")
    return describe_one(est)


def describe_ssne(est):
    """SSNE: the tanh embedding's ``W``."""
    return "ssne", {}, {"W": np.asarray(est.W_, dtype=float)}


def describe_bilinear(est):
    """AROMA, OASIS: the bilinear similarity's ``W``."""
    return "bilinear", {}, {"W": np.asarray(est.W_, dtype=float)}


def describe_lmnn(est):
    """LMNN: its map, and the kNN and energy classifiers."""
    L = np.asarray(est.components_, dtype=float)
    arrays = {
        "components": L,
        "metric": np.asarray(est.metric_, dtype=float),
        "train_points": np.asarray(est.X_fit_, dtype=float),
        "train_embedding": est.X_fit_ @ L.T,
        "train_labels": np.asarray(est.y_fit_, dtype=np.int64),
        "classes": _classes(est),
        "targets": np.asarray(est.targets_, dtype=np.int64),
    }
    return "linear", {"classifier": _lmnn_classifier(est, ["knn", "energy"])}, arrays


def describe_kernel_lmnn(est):
    """KernelLMNN: its map over the kernel rows, and the kNN classifier."""
    L = np.asarray(est.components_, dtype=float)
    K = est.X_fit_ if est.kernel == "precomputed" else est.kernel_rows(est.X_fit_)
    arrays = {
        "components": L,
        "train_embedding": K @ L.T,
        "train_labels": np.asarray(est.y_fit_, dtype=np.int64),
        "classes": _classes(est),
    }
    meta = {"classifier": _lmnn_classifier(est, ["knn"])}
    if est.kernel == "precomputed":
        return "linear", meta, arrays
    arrays["kernel_points"] = np.asarray(est.X_fit_, dtype=float)
    meta["kernel"] = {"name": est.kernel, "gamma": float(est.gamma_)}
    return "kernel", meta, arrays


def describe_multi_metric(est):
    """MultiMetricLMNN: one map per cluster, and the classifiers."""
    arrays = {
        "components": np.asarray(est.components_, dtype=float),
        "train_points": np.asarray(est.X_fit_, dtype=float),
        "train_labels": np.asarray(est.y_fit_, dtype=np.int64),
        "classes": _classes(est),
        "targets": np.asarray(est.targets_, dtype=np.int64),
        "clusters": np.asarray(est.clusters_, dtype=np.int64),
    }
    if est.cluster_centers_ is not None:
        arrays["cluster_centers"] = np.asarray(est.cluster_centers_, dtype=float)
    return "multi_metric", {"classifier": _lmnn_classifier(est, ["knn", "energy"])}, arrays


def describe_poe(est):
    """POE: its map (linear or over a named kernel's rows)."""
    arrays = {"components": np.asarray(est.components_, dtype=float)}
    W = np.asarray(est.W_, dtype=float)
    arrays["W"] = np.diag(W) if W.ndim == 1 else W  # the diagonal LP's W_ is its diagonal
    if est.kernel in (None, "precomputed"):
        return "linear", {}, arrays
    arrays["kernel_points"] = np.asarray(est.X_fit_, dtype=float)
    return "kernel", {"kernel": {"name": est.kernel, "gamma": float(est.gamma_)}}, arrays


def describe_pairs(est):
    """OperatorSimilarity, HyperbolicPCA: the operator's map (linear or named kernel)."""
    arrays = {"components": np.asarray(est.coef_, dtype=float).T}
    arrays["singular_values"] = np.asarray(est.singular_values_, dtype=float)
    if est.kernel_fn_ is None:
        return "linear", {}, arrays
    if not isinstance(est.kernel, str) or est.kernel not in NAMED_KERNELS:
        raise ValueError(
            f"{type(est).__name__} with a callable kernel cannot be saved: only the named "
            f"kernels {', '.join(NAMED_KERNELS)} can be stored without pickling code."
        )
    arrays["kernel_points"] = np.asarray(est.points_, dtype=float)
    return "kernel", {"kernel": {"name": est.kernel, "gamma": None}}, arrays


def n_features(kind, arrays):
    """Columns a model of this kind expects from new points (None: not applicable)."""
    if kind == "linear":
        return int(arrays["components"].shape[1])
    if kind in ("kernel", "multi_metric"):
        key = "kernel_points" if kind == "kernel" else "train_points"
        return int(arrays[key].shape[1])
    if kind == "ssne":
        return int(arrays["W"].shape[0] - 1)
    return None


def required_arrays(kind, meta):
    """Names of the arrays a model of this kind must hold."""
    need = {
        "linear": ["components"],
        "kernel": ["components", "kernel_points"],
        "multi_metric": ["components", "train_points", "clusters"],
        "ssne": ["W"],
        "bilinear": ["W"],
        "result": ["matrix"],
    }[kind]
    clf = meta.get("classifier")
    if clf:
        need = [*need, "train_labels", "classes"]
        if kind != "multi_metric":
            need.append("train_embedding")
        if "energy" in clf.get("rules", ()):
            need += ["train_points", "targets"]
    return list(dict.fromkeys(need))


class SavedModel:
    """A model read back by :func:`~convexmetric.model_io.load_model`.

    Attributes
    ----------
    kind : str, one of :data:`KINDS`
    estimator : str, the class that was saved
    params : dict, its hyperparameters
    provenance : dict, package version, command, dataset, date, status, objective, bound
    arrays : dict of ndarray
    n_features_in : int or None, columns expected by ``transform`` / ``predict``
    """

    def __init__(self, kind, meta, arrays, directory=""):
        self.kind = kind
        self.meta = meta
        self.estimator = meta.get("estimator", "")
        self.params = meta.get("params", {})
        self.provenance = meta.get("provenance", {})
        self.arrays = arrays
        self.directory = directory
        self.n_features_in = meta.get("n_features_in")

    def _rows(self, X, name="X"):
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"'{name}' must be a real numeric array; got dtype {arr.dtype}.")
        arr = arr.astype(float)
        if arr.ndim != 2:
            raise ValueError(f"'{name}' must be a 2-dimensional array; got shape {arr.shape}.")
        if arr.shape[0] < 1:
            raise ValueError(f"'{name}' has no rows.")
        if self.n_features_in is not None and arr.shape[1] != self.n_features_in:
            raise ValueError(
                f"'{name}' has {arr.shape[1]} columns but the model in "
                f"{self.directory or 'memory'} expects {self.n_features_in} features."
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"'{name}' contains NaN or infinite values.")
        if self.meta.get("preprocessing") == "standardize":
            arr = (arr - self.arrays["input_mean"]) / self.arrays["input_scale"]
        return arr

    def _kernel_rows(self, X):
        k = self.meta["kernel"]
        Y = self.arrays["kernel_points"]
        if k["name"] == "linear":
            return _kernels.linear_kernel(X, Y)
        if k["name"] == "rbf":
            return _kernels.rbf_kernel(X, Y, gamma=k["gamma"])
        return _kernels.maurer_kernel(X, Y)

    def transform(self, X):
        """Map the rows of ``X`` into the learned space (linear, kernel and ssne kinds)."""
        if self.kind in ("multi_metric", "bilinear", "result"):
            why = {
                "multi_metric": "it holds one metric per cluster; use predict",
                "bilinear": "it is a bilinear similarity qᵀWp; use score_pairs",
                "result": "it holds a bare solver result",
            }[self.kind]
            raise ValueError(f"a {self.estimator or self.kind} model has no transform: {why}.")
        X = self._rows(X)
        if self.kind == "ssne":
            from .ssne.solver import embed, features

            return embed(features(X), self.arrays["W"])[2]
        if self.kind == "kernel":
            X = self._kernel_rows(X)
        return X @ self.arrays["components"].T

    def predict(self, X, rule="knn"):
        """Class labels of the rows of ``X`` by kNN or energy (eq. 15) under the metric."""
        clf = self.meta.get("classifier")
        if not clf:
            raise ValueError(
                f"a {self.estimator or self.kind} model is not a classifier; predict needs "
                "an LMNN model (LMNN, KernelLMNN, MultiMetricLMNN)."
            )
        if rule not in clf["rules"]:
            raise ValueError(
                f"The 'rule' parameter must be one of {clf['rules']} for a "
                f"{self.estimator} model. Got {rule!r} instead."
            )
        a, k = self.arrays, clf["k"]
        if self.kind == "multi_metric":
            pred = self._multi_predict(self._rows(X), rule, clf)
        elif rule == "energy":
            Xq = self._rows(X)
            L, mu = a["components"], clf["mu"]
            pred = energy_predict(a["train_points"], a["train_labels"], a["targets"], Xq, L, mu)
        else:
            pred = knn_predict(a["train_embedding"], a["train_labels"], self.transform(X), k)
        return a["classes"][pred]

    def _multi_predict(self, X, rule, clf):
        from .lmnn.base import knn_from_distances

        a = self.arrays
        Ls, Xt, g = a["components"], a["train_points"], a["clusters"]
        if rule == "energy":
            tc = None
            if "cluster_centers" in a:
                tc = sqdist(X, a["cluster_centers"]).argmin(axis=1)
            return energy_predict(
                Xt, a["train_labels"], a["targets"], X, Ls, clf["mu"], clusters=g, test_clusters=tc
            )
        D = np.empty((X.shape[0], Xt.shape[0]))
        for c, L in enumerate(Ls):
            idx = np.flatnonzero(g == c)
            D[:, idx] = sqdist(X @ L.T, Xt[idx] @ L.T)
        return knn_from_distances(D, a["train_labels"], clf["k"])

    def score_pairs(self, Q, P):
        """Bilinear scores ``q_iᵀ W p_i`` of paired rows (bilinear kind)."""
        if self.kind != "bilinear":
            raise ValueError(f"score_pairs needs a bilinear model (AROMA, OASIS); got {self.kind}.")
        W = self.arrays["W"]
        Q, P = np.asarray(Q, dtype=float), np.asarray(P, dtype=float)
        if Q.ndim != 2 or P.shape != (Q.shape[0], W.shape[1]) or Q.shape[1] != W.shape[0]:
            raise ValueError(
                f"'Q' and 'P' must pair rows with {W.shape[0]} and {W.shape[1]} columns; got "
                f"shapes {Q.shape} and {P.shape}."
            )
        return np.einsum("ij,ij->i", Q @ W, P)
