r"""The diagonal POE linear programs (§4.4) at scale: smoothed L-BFGS-B with a certificate.

With ``Wᵖ = diag(wᵖ)``, ``wᵖ ≥ 0``, every distance is linear in the stacked weights
``w``: the hinge argument of comparison ``c`` is ``z_c = 1 − a_cᵀw`` with
``a_c = (F_k − F_l)² − (F_i − F_j)²`` (squares taken entrywise, blocks stacked), and

.. math::

    f(w) = r^\top w + s \sum_c \max(0, z_c), \qquad s = \beta / |\mathcal C|,\quad
    r = (\operatorname{diag} R^1, \dots, \operatorname{diag} R^m).

The projected subgradient of App. B needs many tiny steps here. This solver instead
minimises the Huber smoothing ``f_σ`` (hinge replaced by ``z²/2σ`` on ``[0, σ]``) with
scipy's L-BFGS-B under the bounds ``w ≥ 0`` (the engine's staged driver,
:mod:`convexmetric.optim.stages`), with columns scaled to unit norm, for
``σ = σ₀, σ₀/10, …``, warm-started.

**Certificate.** The LP's dual is ``max Σ λ_c`` over ``0 ≤ λ ≤ s`` with
``g(λ) = r − Aᵀλ ≥ 0``. At a stage's end the smoothed multipliers
``λ = s·clip(z/σ, 0, 1)`` are nearly dual feasible; every optimal ``w*`` lies in
``{w ≥ 0, rᵀw ≤ F}`` for any attained objective ``F`` (the hinge sum is ≥ 0), so

.. math:: f^\star \ \ge\ \sum_c \lambda_c + F \cdot \min\bigl(0, \min_j g_j(\lambda)/r_j\bigr),

valid for *any* ``λ ∈ [0, s]`` (it needs ``r > 0``). A second candidate ``λ`` comes from
the active structure at the best point (:func:`crossover_bound`), a third from the exact
LP dual restricted to the near-kink multipliers, solved by HiGHS (:func:`lp_bound`: the
smoothed multipliers alone stall short of ``tol`` where hundreds of comparisons sit at
the kink, as on the §5.1 problem at β = 1000); the best bound is kept.
The solver stops once ``(F − bound)/|F| ≤ tol``: its gap is certified, not estimated.
The ``λ`` and ``F`` of the best bound are the result's ``certificate`` (form
``"diagonal"``, :class:`.certificate.BestDual`); the bound is invariant under the
column scaling, so they are the unscaled problem's too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import lsq_linear

from ..optim.lbfgs import LBFGS
from ..optim.oracle import Oracle
from ..optim.stages import StageSettings, run_stages
from . import constants as const
from .certificate import BestDual


def _huber(w, A, r, s, sigma):
    z = 1.0 - A @ w
    lam = np.clip(z / sigma, 0.0, 1.0)
    hub = np.where(z >= sigma, z - sigma / 2, np.where(z > 0, z * z / (2 * sigma), 0.0))
    return float(r @ w + s * hub.sum()), r - s * (lam @ A)


def dual_bound(A, r, s, lam, F, best=None):
    """The certified lower bound above for multipliers ``lam`` (clipped to ``[0, s]``);
    ``best`` (a :class:`.certificate.BestDual`) keeps them if the bound is its best."""
    lam = np.clip(lam, 0.0, s)
    g = r - lam @ A
    lb = float(lam.sum() + F * min(0.0, float((g / r).min())))
    return lb if best is None else best.offer(lb, lam, F)


def crossover_bound(A, r, s, w, z, sigma, F, best=None):
    """A sharper bound from multipliers fitted to the active structure at ``w``.

    Terms with ``z ≥ τ`` get ``λ = s``, those with ``z ≤ −τ`` get 0, and the near-kink
    ones ``|z| < τ`` are fitted, within ``[0, s]``, to zero reduced cost on the support
    of ``w`` (bounded least squares, as in an LP crossover); the best :func:`dual_bound`
    over ``τ = c·σ``, ``c ∈`` :data:`.constants.CROSSOVER_WIDTHS`, is returned (still a
    valid bound whatever the fit).
    """
    record, best, support = best, -np.inf, w > 1e-9 * max(float(w.max()), 1e-300)
    for tau in (c * sigma for c in const.CROSSOVER_WIDTHS):
        pos, kink = z >= tau, np.abs(z) < tau
        lam = np.where(pos, s, 0.0)
        if kink.any() and support.any():
            rhs = r[support] - s * A[np.ix_(pos, support)].sum(0)
            fit = lsq_linear(A[np.ix_(kink, support)].T, rhs, bounds=(0.0, s), method="bvls")
            lam[kink] = fit.x
        best = max(best, dual_bound(A, r, s, lam, F, record))
    return best


def lp_bound(A, r, s, z, F, taus=const.LP_TAUS, max_free=const.LP_MAX_FREE, best=None):
    """The exact LP dual over the near-kink multipliers (HiGHS), the rest fixed.

    ``λ_c = s`` for ``z_c ≥ τ`` and ``0`` for ``z_c ≤ −τ``; the free ones solve
    ``max Σ λ_K`` s.t. ``A_Kᵀλ_K ≤ r − s A_posᵀ1``, ``0 ≤ λ_K ≤ s`` with
    :func:`scipy.optimize.linprog` (``method="highs"``). HiGHS's answer is feasible only to
    its tolerance, so the result goes through :func:`dual_bound`, which keeps it valid.
    A larger free set can only raise the restricted optimum; the first ``τ`` with at most
    ``max_free`` free multipliers that certifies is kept, else the best.
    """
    from scipy.optimize import linprog

    record, best = best, -np.inf
    for tau in taus:
        pos, kink = z >= tau, np.abs(z) < tau
        n_free = int(kink.sum())
        if n_free == 0 or n_free > max_free:
            continue
        rhs = r - s * A[pos].sum(0)
        res = linprog(-np.ones(n_free), A_ub=A[kink].T, b_ub=rhs, bounds=(0.0, s), method="highs")
        if res.status != 0:
            continue
        lam = np.where(pos, s, 0.0)
        lam[kink] = res.x
        best = max(best, dual_bound(A, r, s, lam, F, record))
    return best


@dataclass(kw_only=True)
class DiagonalSettings:
    """Settings of :func:`solve_diagonal` (documented defaults)."""

    tol: float = const.TOL  #: stop when the certified relative gap is at most this
    sigma0: float = const.SIGMA0  #: first smoothing width (the margin is 1)
    sigma_factor: float = const.SIGMA_FACTOR  #: σ ← σ·factor per stage
    #: L-BFGS-B's projected-gradient tolerance, relative to ``min r``
    gtol: float = const.DIAGONAL_GTOL
    stage_iter: int = const.DIAGONAL_STAGE_ITER  #: L-BFGS-B iterations per stage
    max_stages: int = const.DIAGONAL_MAX_STAGES  #: stages at most
    max_iter: int | None = None  #: L-BFGS iterations at most, over all stages
    #: from this width on, an uncertified stage also tries lp_bound
    lp_sigma: float = const.LP_SIGMA
    time_limit: float | None = None  #: seconds (status "user_limit")
    callback: object = None  #: ``callback(evaluations, objective, sigma)``; True stops


class DiagonalLP(Oracle):
    """The Huber-smoothed LP in scaled weights ``w ≥ 0`` (the engine's protocol; its points
    are vectors, so :class:`~convexmetric.optim.factor.Factored` does not apply)."""

    psd = False

    def __init__(self, A, r, s, settings):
        self.A, self.r, self.s, self.settings = A, r, s, settings
        self.bounds = [(0.0, None)] * A.shape[1]
        self.best = BestDual()  #: the multipliers of the best bound (the certificate)

    def smooth(self, w, sigma, grad=True, components=None):
        f, g = _huber(w, self.A, self.r, self.s, sigma)
        return (f, g) if grad else f

    def objective(self, w, components=None):
        return float(self.r @ w + self.s * np.maximum(1.0 - self.A @ w, 0.0).sum())

    def bound(self, stage):
        """The smoothed multipliers' bound, then (while uncertified) the crossover and,
        from ``lp_sigma`` on, the exact LP over the near-kink multipliers, at the best point."""
        A, r, s, F, tol = self.A, self.r, self.s, stage.best_f, self.settings.tol
        rec, z = self.best, 1.0 - A @ stage.x
        lam = s * np.clip(z / stage.sigma, 0.0, 1.0)
        lower = max(stage.lower, dual_bound(A, r, s, lam, F, rec))
        z_best = 1.0 - A @ stage.best_x
        if F - lower > tol * abs(F):  # the sharper bound costs a few BVLS fits
            lower = max(lower, crossover_bound(A, r, s, stage.best_x, z_best, stage.sigma, F, rec))
        if F - lower > tol * abs(F) and stage.sigma <= self.settings.lp_sigma:
            lower = max(lower, lp_bound(A, r, s, z_best, F, best=rec))  # an exact LP on the kinks
        return lower


def solve_diagonal(blocks, C, beta, settings=None, **overrides):
    """Diagonal LPOE / KPOE / MKPOE by smoothed L-BFGS-B; a :class:`SolveResult`.

    Parameters
    ----------
    blocks : list of (F, R)
        Feature blocks of :mod:`convexmetric.problems.poe` (only ``diag R`` is used; it
        must be positive for the certificate).
    C : Comparisons
    beta : float
    settings : DiagonalSettings, optional
    **overrides
        Fields of :class:`DiagonalSettings`.

    Returns
    -------
    SolveResult
        ``matrices`` are the weight vectors ``wᵖ`` (one per block); ``lower_bound`` and
        ``info["certified_gap"]`` give the certificate; status ``"optimal"`` when it holds.

    Examples
    --------
    >>> from convexmetric.comparisons import Comparisons
    >>> from convexmetric.problems.poe import lpoe_blocks
    >>> X = np.array([[0.0, 0.0], [1.0, 0.1], [0.0, 2.0]])
    >>> C = Comparisons.triadic([0], [1], [2], n_items=3)
    >>> res = solve_diagonal(lpoe_blocks(X), C, 10.0)
    >>> res.status, round(res.objective, 3), res.info["certified_gap"] <= 1e-4
    ('optimal', 0.251, True)
    """
    st = replace(settings or DiagonalSettings(), **overrides)
    sizes = [F.shape[1] for F, _ in blocks]
    A = np.hstack([(F[C.k] - F[C.l]) ** 2 - (F[C.i] - F[C.j]) ** 2 for F, _ in blocks])
    r = np.concatenate([np.diag(R).astype(float) for _, R in blocks])
    if not np.all(r > 0):
        raise ValueError("diag(R) of every block must be positive (a kernel with a zero row?).")
    scale = 1.0 / np.sqrt(np.maximum(np.linalg.norm(A, axis=0), 1e-12 * max(np.abs(A).max(), 1)))
    A, r = A * scale, r * scale
    stages = StageSettings(
        sigma0=st.sigma0,
        sigma_factor=st.sigma_factor,
        sigma_min=0.0,
        stage_iter=st.stage_iter,
        stalls=None,
        tol=st.tol,
        max_stages=st.max_stages,
        max_iter=st.max_iter,
        recenter=False,
        time_limit=st.time_limit,
        callback=st.callback,
        name="smoothed L-BFGS-B",
    )
    inner = LBFGS(maxcor=const.DIAGONAL_MAXCOR, gtol=st.gtol * r.min(), ftol=0.0)
    lp = DiagonalLP(A, r, float(beta) / len(C), st)
    res = run_stages(lp, np.zeros(A.shape[1]), inner, stages)
    Ws = np.split(res.matrix * scale, np.cumsum(sizes)[:-1])
    res.info.update(sigma=res.info["final_sigma"])
    res.matrix, res.matrices = Ws[0], Ws
    res.certificate = lp.best.dual_point("diagonal", len(blocks))
    return res
