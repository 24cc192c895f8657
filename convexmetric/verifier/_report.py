"""The verifier's report (:class:`Verification`)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from ..result import CertificateError, certified_gap

#: the stored objective may differ from the recomputed one by this much (relative)
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
    """

    estimator: str
    params: dict
    attrs: dict
    certificate: dict
    objective: float

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
        attrs = {k: v for k, v in vars(est).items()
                 if k.endswith("_") and not k.startswith("_")
                 and isinstance(v, (np.ndarray, int, float, list, tuple))}  # fmt: skip
        return cls(type(est).__name__, est.get_params(deep=False), attrs, dict(cert),
                   float(result.objective))  # fmt: skip

    @classmethod
    def from_saved(cls, meta, arrays):
        """From a saved model's ``model.json`` (``meta``) and arrays (``name -> ndarray``):
        the ``verification`` section and the ``certificate__*``/``fitted__*`` arrays."""
        proof = meta.get("verification")
        if not proof:
            raise VerificationError(
                f"the saved {meta.get('estimator', 'model')} carries no certificate: "
                "nothing to verify (only certified fits keep one)."
            )
        cert = dict(proof["certificate"])
        attrs = dict(proof["attrs"])
        for name, a in arrays.items():
            head, _, key = name.partition("__")
            if head == "certificate" and key:
                cert[key] = a
            elif head == "fitted" and key:
                attrs[key] = a
        return cls(meta.get("estimator", ""), dict(proof["params"]), attrs, cert,
                   float(proof["objective"]))  # fmt: skip


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
        The objective at the fitted matrix, recomputed from the data (float64).
    lower_bound : float
        The bound the certificate's dual point proves, recomputed (never read).
    certified_gap : float
        ``(objective − lower_bound)/|objective|`` (:func:`convexmetric.result.certified_gap`);
        ``inf`` when the bound is broken (``reason`` says why).
    tol : float
        The estimator's tolerance.
    reported_objective : float
        The objective the fit stored (compared, never trusted).
    verified : bool
        The gap within ``tol`` and the reported objective equal to the recomputed one
        (to a relative tolerance); where the objective is within ``resolution`` of the
        bound, both to that resolution instead.
    reason : str
        Why not verified ("" when verified).
    seconds : float
        Time of the verification.
    resolution : float
        The recomputed objective's own float64 error bound (absolute; 0 where the
        formulation does not estimate it; a worst-case bound, far above the usual
        error). It decides only where a relative gap says nothing: an optimum at 0 (a
        separable problem) has ``certified_gap`` 1 at any positive rounding of its
        objective, and is verified when ``objective − lower_bound ≤ resolution``.
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

    def summary(self) -> dict:
        """The report as a JSON-ready dict.

        Returns
        -------
        dict
            Every field above, floats as Python floats.
        """
        return {k: (float(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def report(kind, objective, lower_bound, tol, reported, t0, objective_rtol=OBJECTIVE_RTOL,
           resolution=0.0):  # fmt: skip
    """A :class:`Verification` from the recomputed numbers (``t0``: ``perf_counter`` at
    start; ``objective_rtol``: how far the stored objective may be from the recomputed one,
    :data:`OBJECTIVE_RTOL` unless the formulation says why its recomputation is coarser;
    ``resolution``: the recomputed objective's absolute float64 error bound)."""
    objective, lower_bound, resolution = float(objective), float(lower_bound), float(resolution)
    reasons = []
    try:
        gap = certified_gap(objective, lower_bound)
    except CertificateError as exc:
        gap, reasons = float("inf"), [f"broken certificate: {exc}"]
    # within its resolution of the bound (an optimum at 0), the objective is known to
    # that resolution only: neither the relative gap nor a relative comparison decides
    near = not reasons and objective - lower_bound <= resolution
    if not reasons and not (gap <= tol or near):
        reasons.append(f"certified gap {gap:.3g} above tol {tol:g}")
    scale = max(abs(objective), 1e-12)
    if abs(float(reported) - objective) > objective_rtol * scale + (resolution if near else 0.0):
        stored = float(reported)
        reasons.append(f"stored objective {stored!r} differs from the data's {objective!r}")
    return Verification(kind, objective, lower_bound, gap, float(tol), float(reported),
                        not reasons, "; ".join(reasons), time.perf_counter() - t0,
                        resolution)  # fmt: skip
