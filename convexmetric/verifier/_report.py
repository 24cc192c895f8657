"""The verifier's report (:class:`Verification`)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from ._gap import FLOOR_SHARE
from ._rigor import SAFETY

#: the stored objective may differ from the recomputed one by this much (relative),
#: beyond the recomputation's resolution: the solvers evaluate the same sums in another
#: order and precision
OBJECTIVE_RTOL = 1e-8


@dataclass
class Fitted:
    """What the verifier reads of a fitted model: public parameters and fitted
    attributes, the certificate and the stored objective; from an estimator
    (:meth:`from_estimator`) or a saved model (the CLI's ``verify --model``).

    Attributes
    ----------
    estimator : str
        The class name (``"LMNN"``, ``"POE"``, ...).
    params : dict
        ``get_params(deep=False)``.
    attrs : dict
        Public fitted attributes (names ending in ``_``) that are arrays or numbers.
    certificate : dict
        ``result_.certificate``: ``"kind"`` and the dual point.
    objective : float
        ``result_.objective`` as stored.
    previous : Fitted or None
        The pass before this one (multi-pass LMNN, §5.1): its map chose this pass's
        target neighbours, so it is verified first.
    """

    estimator: str
    params: dict
    attrs: dict
    certificate: dict
    objective: float
    previous: Fitted | None = None

    @classmethod
    def from_estimator(cls, est):
        result = getattr(est, "result_", None)
        if result is None:
            raise VerificationError(f"{type(est).__name__} is not fitted: call fit first.")
        cert = getattr(result, "certificate", None)
        if not cert:
            raise VerificationError(
                f"{type(est).__name__}'s result carries no certificate (solver "
                f"{result.solver!r}, status {result.status!r}): nothing to verify."
            )
        kinds = (np.ndarray, int, float, list, tuple)
        attrs = {
            k: v
            for k, v in vars(est).items()
            if k.endswith("_") and not k.startswith("_") and k != "passes_" and isinstance(v, kinds)
        }
        name, params = type(est).__name__, est.get_params(deep=False)
        previous = None
        for e in getattr(est, "passes_", None) or ():
            if not e.get("certificate"):
                raise VerificationError(
                    f"an earlier pass of this {name} carries no certificate: nothing to verify."
                )
            pass_attrs = {"components_": e["components"], "targets_": e["targets"]}
            previous = cls(
                name, params, pass_attrs, dict(e["certificate"]), float(e["objective"]), previous
            )
        return cls(name, params, attrs, dict(cert), float(result.objective), previous)

    @classmethod
    def from_saved(cls, meta, arrays):
        """From a saved model's ``model.json`` (``meta``) and arrays (``name -> ndarray``):
        the ``verification`` section and its ``certificate__*``, ``fitted__*`` arrays (and
        ``pass<p>__*`` for the earlier passes of a multi-pass fit)."""
        proof = meta.get("verification")
        if not proof:
            raise VerificationError(
                f"the saved {meta.get('estimator', 'model')} carries no certificate: "
                "nothing to verify (only certified fits keep one)."
            )
        if meta.get("preprocessing") not in ("none", "standardize"):
            raise VerificationError(
                "the saved model does not say how new points are preprocessed (model.json "
                'has no \'preprocessing\' "none" or "standardize"): what it applies is '
                "unknown; save it again with this version."
            )
        name, params = meta.get("estimator", ""), dict(proof["params"])
        previous = None
        for p, record in enumerate(proof.get("passes", ())):
            cert, attrs = _saved_parts(record, arrays, f"pass{p}__")
            previous = cls(name, params, attrs, cert, float(record["objective"]), previous)
        cert, attrs = _saved_parts(proof, arrays, "")
        attrs.update(_applied(meta, arrays, attrs))
        return cls(name, params, attrs, cert, float(proof["objective"]), previous)


#: a saved model's arrays that it applies, and the fitted attribute each must equal
APPLIED = {
    "components": "components_",
    "metric": "metric_",
    "targets": "targets_",
    "clusters": "clusters_",
    "cluster_centers": "cluster_centers_",
}
#: the arrays a saved classifier predicts with: checked against the data by the verifier
PREDICTS = ("train_points", "kernel_points", "train_embedding", "train_labels")


def _applied(meta, arrays, attrs):
    """What a saved model applies (``components.npy``, ...), as the attributes the verifier
    checks: each must equal its verified copy (``fitted__*``) exactly, and the arrays it
    predicts with are handed on (``saved:<name>``) to be checked against the data."""
    out = {}
    for name, attr in APPLIED.items():
        if name not in arrays:
            continue
        copy = attrs.get(attr)
        if copy is not None and not np.array_equal(np.asarray(copy), arrays[name]):
            raise VerificationError(
                f"the saved model applies {name}.npy, which differs from the certified "
                f"fit's {attr}: two different maps (the one applied is the one verified)."
            )
        out[attr] = arrays[name]
    for name in PREDICTS:
        if name in arrays:
            out[f"saved:{name}"] = arrays[name]
    kernel = meta.get("kernel")
    if isinstance(kernel, dict) and kernel.get("gamma") is not None:
        out["saved:kernel_gamma"] = float(kernel["gamma"])
    return out


def _saved_parts(record, arrays, prefix):
    """``(certificate, attrs)`` of one saved pass: JSON scalars and the arrays named
    ``<prefix>certificate__<key>`` and ``<prefix>fitted__<name>``."""
    cert, attrs = dict(record["certificate"]), dict(record.get("attrs", {}))
    for name, a in arrays.items():
        if not name.startswith(prefix) or (prefix == "" and name.startswith("pass")):
            continue
        head, _, key = name[len(prefix) :].partition("__")
        if head == "certificate" and key:
            cert[key] = a
        elif head == "fitted" and key:
            attrs[key] = a
    return cert, attrs


class VerificationError(ValueError):
    """Nothing to verify: no certificate, an unknown kind, or data that do not fit it."""


def check_finite(name, arg):
    """Raise :class:`VerificationError` naming ``name`` if ``arg`` (a numeric array, or a
    list of them) holds NaN or infinite values; other objects pass."""
    parts = arg if isinstance(arg, (list, tuple)) else [arg]
    for part in parts:
        if isinstance(part, np.ndarray) or (isinstance(part, (list, tuple)) and part):
            a = np.asarray(part)
            if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
                raise VerificationError(f"'{name}' contains NaN or infinite values.")


@dataclass
class Verification:
    """What the verifier recomputed.

    Parameters
    ----------
    kind : str
        The certificate's formulation.
    objective : float
        The objective at the fitted map, recomputed from the data (float64).
    lower_bound : float
        The bound the certificate's dual point proves, recomputed (never read), rigorous:
        its own float64 rounding is accounted for; ``-inf`` when the dual point is
        refused (``reason`` says why), ``0`` when nothing better can be proved.
    certified_gap : float
        ``(objective − lower_bound)/max(|objective|, FLOOR_SHARE·zero_value)``
        (:func:`convexmetric.result.certified_gap`); ``inf`` without a bound.
    tol : float
        The tolerance verified against: the caller's (``verify(..., tol=)``), else the
        formulation's documented default; never the model's own.
    reported_objective : float
        The objective the fit stored (compared, never trusted).
    verified : bool
        The claim holds: with the objective known to ``± resolution``,
        ``objective + resolution − lower_bound ≤ tol·max(objective − resolution,``
        ``FLOOR_SHARE · zero_value)``, and the stored objective equal to the
        recomputed one (to ``OBJECTIVE_RTOL`` and the resolution).
    reason : str
        Why not verified ("" when verified).
    seconds : float
        Time of the verification.
    resolution : float
        A rigorous bound on the recomputed objective's float64 error (absolute), from
        the quantities actually computed (distances in the data's span, never a norm of
        the map alone).
    zero_value : float
        The objective at the zero point (every hinge at its margin): the problem's own
        scale. An optimum at 0 (a separable problem) has a relative gap of 1 at any
        positive objective; it is verified when the absolute gap is within
        ``tol·FLOOR_SHARE·zero_value``.
    model_tol : float or None
        The tolerance the model was fitted with (reported, never used).
    """

    kind: str
    objective: float
    lower_bound: float
    certified_gap: float
    tol: float
    reported_objective: float
    verified: bool
    reason: str = ""
    seconds: float = 0.0
    resolution: float = 0.0
    zero_value: float = 0.0
    model_tol: float | None = None

    def summary(self) -> dict:
        """The report as a JSON-ready dict.

        Returns
        -------
        dict
            Every field above, floats as Python floats.
        """
        return {k: (float(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def check_tol(tol, default):
    """The tolerance to verify against: the caller's ``tol`` (a number in ``(0, 1)``), or
    ``default`` when ``None``; :class:`VerificationError` naming ``tol`` otherwise."""
    if tol is None:
        return float(default)
    ok = isinstance(tol, (int, float, np.integer, np.floating)) and not isinstance(tol, bool)
    if not ok or not (0.0 < float(tol) < 1.0):
        raise VerificationError(f"'tol' must be a number in (0, 1); got {tol!r}.")
    return float(tol)


def model_tol(params):
    """The fitted model's own ``tol`` (reported beside the verdict, never used)."""
    value = params.get("tol")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def report(
    kind,
    objective,
    lower_bound,
    tol,
    reported,
    t0,
    *,
    resolution=0.0,
    zero_value=0.0,
    model_tol=None,
    objective_rtol=OBJECTIVE_RTOL,
):
    """A :class:`Verification` from the recomputed numbers (``t0``: ``perf_counter`` at
    start; ``resolution``: the objective's rigorous absolute error; ``zero_value``: the
    objective at the zero point; ``objective_rtol``: how far the stored objective may be
    from the recomputed one, beyond the resolution)."""
    f, b, res = float(objective), float(lower_bound), float(resolution)
    reasons = []
    if not np.isfinite(f):
        reasons.append(f"the objective is not finite ({f!r})")
    if np.isfinite(b) and b > (f + res) * SAFETY + res:
        # a rigorous bound lies below f* ≤ f(map) ≤ objective + resolution
        reasons.append(f"broken certificate: lower bound {b!r} exceeds the objective {f!r}")
    floor = max(FLOOR_SHARE * float(zero_value), 1e-12)
    gap = (f - b) / max(abs(f), floor) if np.isfinite(b) and np.isfinite(f) else float("inf")
    allowed = tol * max(f - res, floor)
    if not reasons and not (f + res - b <= allowed):
        hint = ""
        if model_tol is not None and tol < model_tol < 1 and gap <= model_tol:
            hint = f" (the model was fitted with tol={model_tol:g}: pass tol= to verify that)"
        known = f", the objective known to ±{res:.3g}" if res > 1e-3 * abs(f - b) else ""
        reasons.append(f"certified gap {gap:.3g} above tol {tol:g}{known}{hint}")
    stored = float(reported)
    if not abs(stored - f) <= objective_rtol * max(abs(f), floor) + res:
        reasons.append(f"stored objective {stored!r} differs from the data's {f!r}")
    return Verification(
        kind,
        f,
        b,
        gap,
        float(tol),
        stored,
        not reasons,
        "; ".join(reasons),
        time.perf_counter() - t0,
        res,
        float(zero_value),
        model_tol,
    )


def refused(kind, objective, tol, reported, t0, why, **numbers):
    """The report of a refused claim: ``why`` first, the bound ``-inf``."""
    out = report(kind, objective, -np.inf, tol, reported, t0, **numbers)
    out.verified = False
    out.reason = "; ".join(x for x in (why, out.reason) if x)
    return out
