"""Large-scale solvers for Maurer's objective Ω_{ψ,λ} (eq. 5 of Maurer, JMLR 2008).

Two routes, both reporting through :class:`~convexmetric.result.SolveResult`:

**Projected subgradient on A** (the alternative of §3.3, after Xing et al.): a
subgradient step on ``A`` followed by eigenvalue clipping (``PSDCone``), then the
smoothed refinement of :mod:`convexmetric.optim.smoothing` (FISTA on the
Huber-smoothed hinge), which goes on where the plain method stalls at the kinks.
:class:`HingeOracle` serves both.

Every result carries a certified ``lower_bound`` from the dual of eq. (5)
(:mod:`.certificate`), the best of those computed along the run and at the returned
point, and the dual point that proves it (``result.certificate``, recomputed by
:mod:`convexmetric.verifier.maurer`); the status is "optimal" only
when the certified relative gap ``(objective − lower_bound)/|objective|`` is within
``tol``, "optimal_inaccurate" otherwise, and "user_limit" after a time limit.

The SGD of Table 1 lives in :mod:`.sgd` (re-exported here).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..cones import PSDCone
from ..optim.oracle import Oracle
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.subgradient import SubgradientSettings, projected_subgradient
from ..problems.maurer import hinge_arguments, margins, quadratic_forms, regularizer_value
from ..result import certified_status
from . import constants as const
from .certificate import AT_SOLUTION, BestDual, CertifySettings, certify
from .sgd import KernelBackend, LinearBackend, SGDSettings, factor_to_metric, sgd

__all__ = [
    "TOL",
    "HingeOracle",
    "KernelBackend",
    "LinearBackend",
    "SGDSettings",
    "factor_to_metric",
    "first_stage",
    "refinement",
    "sgd",
    "solve_projected",
]


class HingeOracle(Oracle):
    """Value, subgradient, Huber-smoothed value/gradient and exact value of eq. (5) in ``A``."""

    def __init__(self, U, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs"):
        self.U, self.r, self.lam, self.regularizer = U, r, lam, regularizer
        self.gamma, self.gamma_neg = gamma, gamma_neg
        self.m = len(r)
        self.coef = r / margins(r, gamma, gamma_neg)  # d z_i / d s_i
        self.lam_m = lam / np.sqrt(self.m)
        self.best = BestDual(regularizer)  #: the dual point of the best bound (the certificate)

    def _reg(self, A):
        if self.regularizer == "trace":
            return float(np.trace(A)), np.eye(A.shape[0])
        nrm = float(np.linalg.norm(A))
        return nrm, (A / nrm if nrm > 0 else np.zeros_like(A))

    def _z(self, A):
        return hinge_arguments(quadratic_forms(A, self.U), self.r, self.gamma, self.gamma_neg)

    def _assemble(self, A, loss, w):
        reg, g_reg = self._reg(A)
        G = (self.U.T * w) @ self.U / self.m
        return loss / self.m + self.lam_m * reg, 0.5 * (G + G.T) + self.lam_m * g_reg

    def __call__(self, A, components=None):
        z = self._z(A)
        act = z > 0
        return self._assemble(A, float(z[act].sum()), np.where(act, self.coef, 0.0))

    def smooth(self, A, sigma, grad=True, components=None):
        """The Huber-smoothed eq. (5) and its gradient (``grad=False``: the value only)."""
        z = self._z(A)
        sat = z >= sigma
        kink = (z > 0) & ~sat
        loss = float((z[sat] - sigma / 2).sum() + (z[kink] ** 2).sum() / (2 * sigma))
        if not grad:
            return loss / self.m + self.lam_m * self._reg(A)[0]
        w = self.coef * np.clip(z / sigma, 0.0, 1.0)
        return self._assemble(A, loss, w)

    def objective(self, A, components=None):
        z = self._z(A)
        return float(np.maximum(z, 0).mean() + self.lam_m * regularizer_value(A, self.regularizer))

    def bound(self, stage):
        """:meth:`lower_bound` at the stage's point (the engine's protocol)."""
        return self.lower_bound(stage.x, stage.sigma)

    def lower_bound(self, A, sigma=None):
        """Certified lower bound on the optimum from the dual point at ``A``.

        With ``sigma`` (a call between smoothing stages) the cheap version: no
        stationarity fit, and only the pairs within ``BOUND_SIGMA`` of the kink are
        polished; for ``sigma > BOUND_SIGMA`` none at all (``-inf``): the smoothed iterate
        is then still ~σ away from the optimum and the bound could not end the run.
        """
        if sigma is not None and sigma > const.BOUND_SIGMA:
            return -np.inf
        f_upper = self.objective(A)
        lb, info = certify(
            self._z(A),
            self.U,
            self.r,
            self.lam,
            self.gamma,
            self.gamma_neg,
            self.regularizer,
            f_upper=f_upper,
            A=A if sigma is None else None,
            settings=AT_SOLUTION
            if sigma is None
            else CertifySettings(sigmas=(sigma,), polish_widths=(const.BOUND_SIGMA,)),
        )
        self.best.offer(lb, info["alpha"], f_upper)
        return lb


def _finish(res, oracle, tol):
    """Certify the returned point (its time counts in ``seconds``); the status follows."""
    t0 = time.perf_counter()
    lb = oracle.lower_bound(res.matrix)
    res.info["certificate_seconds"] = time.perf_counter() - t0
    res.seconds += res.info["certificate_seconds"]
    res.lower_bound = lb if res.lower_bound is None else max(lb, res.lower_bound)
    res.certificate = oracle.best.dual_point()  # the dual point of that maximum
    res.info["certified_gap"] = res.certified_gap
    if res.status != "user_limit":
        res.status = certified_status(res.objective, res.lower_bound, tol)
    return res


#: the certified relative gap that status "optimal" means, per route (the estimator's
#: ``tol=None``): the projected-subgradient route runs until it; SGD only certifies its end
TOL = {"subgradient": const.TOL_SUBGRADIENT, "sgd": const.TOL_SGD}


def first_stage(**changes):
    """The plain projected-subgradient stage's settings (``FIRST_STAGE_MAX_ITER`` steps
    at most), with ``changes`` (``max_iter``, ``time_limit``, ``callback``) applied."""
    base = SubgradientSettings(
        max_iter=const.FIRST_STAGE_MAX_ITER, patience=const.FIRST_STAGE_PATIENCE
    )
    return replace(base, **changes)


def refinement(**changes):
    """The smoothed refinement's settings (:mod:`.constants`); the run ends early once
    the certificate closes (``tol``, default ``TOL["subgradient"]``), so easy
    instances do not pay for the hard ones' long stages."""
    base = SmoothingSettings(
        sigma0=const.REFINE_SIGMA0,
        sigma_min=const.REFINE_SIGMA_MIN,
        stage_iter=const.REFINE_STAGE_ITER,
        stalls=const.REFINE_STALLS,
        tol=TOL["subgradient"],
    )
    return replace(base, **changes)


def solve_projected(
    U,
    r,
    lam,
    gamma=1.0,
    gamma_neg=None,
    regularizer="hs",
    *,
    A0=None,
    refine=True,
    settings=None,
    tol=TOL["subgradient"],
):
    """Projected subgradient on A (eigenvalue clipping), then the smoothed refinement.

    ``settings``: the :class:`SubgradientSettings` of the first stage; ``refine``: run the
    refinement (``True``: its defaults, or a :class:`SmoothingSettings`), or not.

    Returns the :class:`SolveResult` of the last stage; ``info["subgradient"]`` holds
    the summary of the plain projected-subgradient stage. ``lower_bound`` is the dual
    certificate at the returned point; status "optimal" iff the certified relative gap
    is ≤ ``tol`` (``info["certified_gap"]``).
    """
    oracle = HingeOracle(U, r, lam, gamma, gamma_neg, regularizer)
    D = U.shape[1]
    if A0 is None:  # scale the identity so that the mean squared pair distance is 1
        A0 = np.eye(D) / max(float(np.mean(np.einsum("ij,ij->i", U, U))), 1e-12)
    settings = settings or first_stage()
    res = projected_subgradient(oracle, A0, PSDCone(), settings, solver_name="subgradient")
    if not refine:
        return _finish(res, oracle, tol)
    smoothing = refine if isinstance(refine, SmoothingSettings) else refinement(tol=tol)
    ref = smoothed_descent(
        oracle, res.matrix, PSDCone(), smoothing, solver_name="subgradient+smoothing"
    )
    if ref.objective > res.objective:  # never worse than the first stage
        ref.matrix, ref.matrices, ref.objective = res.matrix, [res.matrix], res.objective
    ref.iterations += res.iterations
    ref.seconds += res.seconds
    ref.history = res.history + ref.history
    ref.info["subgradient"] = res.summary()
    if res.status == "user_limit":
        ref.status = "user_limit"
    return _finish(ref, oracle, tol)
