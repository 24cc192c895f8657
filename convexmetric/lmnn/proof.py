"""The bound a fit reports, and the status it may claim, as the verifier proves them.

The solvers' own bounds steer them (when to stop, where to ascend); the bound a result
reports and the "optimal" it may claim are those of its certificate's dual point as
:mod:`convexmetric.verifier` proves it from the data, its rounding accounted for
(:mod:`convexmetric.verifier._lmnn_bound`: the matrix inequality on the whole space, no
tolerance that could set a direction aside). One rule for the solver and the verifier,
so that no fit says "optimal" at a bound the verifier refuses (data nearly collinear,
or features that one class never varies in). The verifier imports nothing of the
solvers; they use its proof.
"""

from __future__ import annotations

import numpy as np

from ..result import certified_status
from ..verifier._lmnn_bound import Infeasible, bound
from ..verifier._lmnn_objective import zero_value
from .constants import OBJECTIVE_SLACK
from .terms import hinge_terms


def prove(res, X, y, targets, mu, tol, clusters=None, n_clusters=1):
    """Set ``res.lower_bound`` to the bound its certificate proves on ``X`` (the points
    the solver's problem is on), ``info["zero_value"]`` (the objective at the zero point,
    the floor of the gap's denominator) and the status that bound allows; ``res``."""
    res.info["zero_value"] = zero_value(y, targets, mu)
    if not res.certificate or res.lower_bound is None or not np.isfinite(res.objective):
        return res
    g = np.zeros(len(y), np.int64) if clusters is None else np.asarray(clusters)
    # an attained value F ≥ f* for the trace bound: the result's, or an exact one the solver
    # computed when the result's may count listed terms only (a stopped fit)
    attained = max(abs(float(res.objective)), float(res.info.get("attained_value", 0.0)))
    F = attained * (1 + OBJECTIVE_SLACK)
    try:
        res.lower_bound = bound(X, y, targets, mu, res.certificate, F, g, n_clusters)
    except Infeasible as exc:  # a solver's dual point outside its box: a bug, never "optimal"
        res.lower_bound = None
        res.info["certificate_refused"] = str(exc)
    if res.status in ("optimal", "optimal_inaccurate"):
        res.status = certified_status(
            res.objective, res.lower_bound, tol, zero_value=res.info["zero_value"]
        )
    res.info["certified_gap"] = res.certified_gap
    return res


def applied(res, X, y, targets, mu, tol, L):
    """Where the map a model applies, ``L`` (the eigen-factor of ``res.matrix``), may
    differ in objective from the matrix the solver evaluated — a metric of large norm,
    whose factor rounds by ``u‖M‖₂`` in every direction (an optimum at 0, approached at
    infinity) — its objective, evaluated from the differences, replaces the solver's and
    the status is the one it allows; ``res``."""
    Xc = X - X.mean(axis=0)
    lam = float((L * L).sum(axis=1).max(initial=0.0))  # ‖M‖₂
    rounding = np.finfo(np.float64).eps * X.shape[1] * lam * float(np.einsum("ij,ij->", Xc, Xc))
    zero = zero_value(y, targets, mu)
    if rounding * targets.shape[1] <= 1e-9 * max(abs(float(res.objective)), 1e-6 * zero):
        return res
    res.objective = applied_objective(X, L, targets, y, mu)
    if res.status in ("optimal", "optimal_inaccurate") and res.lower_bound is not None:
        res.status = certified_status(res.objective, res.lower_bound, tol, zero_value=zero)
    res.info["certified_gap"] = res.certified_gap
    return res


def applied_objective(X, L, targets, y, mu):
    """Eq. (14) at the map ``L`` (``M = LᵀL``) from the differences ``L(x_i − x_j)``:
    accurate for a map of any norm (the pull as ``Σ P∘M`` loses ``u‖M‖``)."""
    Z = X @ L.T
    diff = Z[:, None, :] - Z[targets]
    pull = float(np.einsum("ijk,ijk->", diff, diff))  # a padded slot adds D(i, i) = 0
    _, _, _, h = hinge_terms(None, X, targets, y, components=L)
    return (1.0 - mu) * pull + mu * float(h.sum())
