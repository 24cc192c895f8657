"""The map a saved POE or OperatorSimilarity model applies, as the verifier reads it.

A saved model keeps its map twice: the arrays ``transform`` applies (``components``,
POE's ``W``, the ``kernel_points`` and the ``kernel`` settings of ``model.json``) and the
``fitted__*`` copies of the estimator's attributes that the verification section holds.
:func:`applied_attrs` takes the applied arrays as the attributes to verify and refuses a
model whose copies differ from them (bit for bit: they were written from the same
arrays), so the verified map is the one the model applies.
"""

from __future__ import annotations

import numpy as np

from ._report import VerificationError


def _same(applied, copy, what):
    if copy is not None and not np.array_equal(np.asarray(copy), applied):
        raise VerificationError(
            f"the saved model applies {what}, which differs from its stored copy: its "
            "arrays were edited after the fit, not the fitted map."
        )


def _kernel_settings(fitted, meta, arrays, attrs):
    """The kernel the model applies must be the fit's (``kernel`` parameter); its points
    and width become ``X_fit_``/``points_`` and ``gamma_``."""
    kernel = fitted.params.get("kernel")
    if meta.get("kind") == "kernel":
        applied = (meta.get("kernel") or {}).get("name")
        if applied != kernel:
            raise VerificationError(
                f"the saved model applies the kernel {applied!r}, but it was fitted with "
                f"kernel={kernel!r}."
            )
        points = np.asarray(arrays["kernel_points"], dtype=float)
        attrs["points_" if fitted.estimator == "OperatorSimilarity" else "X_fit_"] = points
        if kernel == "rbf":
            attrs["gamma_"] = meta["kernel"].get("gamma")
        return
    plain = "linear" if fitted.estimator == "OperatorSimilarity" else "precomputed"
    if kernel not in (None, plain):  # a model of kind "linear" applies components alone
        raise VerificationError(f"the saved model applies no kernel, but kernel={kernel!r}.")


def applied_attrs(fitted, meta, arrays):
    """``fitted.attrs`` with the map the saved model applies (module docstring)."""
    attrs = dict(fitted.attrs)
    if "components" not in arrays:
        raise VerificationError("the saved model holds no components: nothing it applies.")
    comp = np.asarray(arrays["components"], dtype=float)
    if fitted.estimator == "OperatorSimilarity":
        _same(comp.T, attrs.get("coef_"), "components.npy (coef_ᵀ)")
        attrs["coef_"] = comp.T
        attrs.pop("components_", None)
        if meta.get("kind") != "kernel":
            attrs["components_"] = comp
    else:
        _same(comp, attrs.get("components_"), "components.npy")
        attrs["components_"] = comp
        if "W" in arrays:
            W = np.asarray(arrays["W"], dtype=float)
            if fitted.params.get("diagonal"):
                if np.count_nonzero(W - np.diag(np.diag(W))):
                    raise VerificationError("W.npy of a diagonal POE must be a diagonal matrix.")
                W = np.diag(W).copy()
            _same(W, attrs.get("W_"), "W.npy")
            attrs["W_"] = W
    _kernel_settings(fitted, meta, arrays, attrs)
    return attrs
