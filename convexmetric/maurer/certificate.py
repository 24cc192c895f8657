r"""A certified lower bound on the optimum of Maurer's eq. (5) (Maurer, JMLR 2008).

**The dual.** Write ``μ = λ/√m``, ``c_i = r_i/γ_{r_i}`` and ``b_i = 1 − c_i``; the hinge
argument of eq. (5) is affine in ``A``: ``z_i(A) = b_i + c_i ⟨Q_i, A⟩`` with
``Q_i = u_i u_iᵀ``, ``u_i = x_i − x'_i``. With ``max(0, z) = max_{a∈[0,1]} a z`` and
``α_i = a_i/m``,

.. math::

    \Omega^\star = \min_{A\succeq 0}\max_{\alpha\in[0,1/m]^m}
        \sum_i \alpha_i b_i + \langle G(\alpha), A\rangle + \mu\|A\|,
    \qquad G(\alpha) = \sum_i \alpha_i c_i Q_i = U^\top \mathrm{diag}(\alpha c)\, U .

Swapping min and max (Sion; strong duality holds, ``A = εI`` is strictly feasible)
gives the dual function ``g(α) = bᵀα + inf_{A⪰0} ⟨G, A⟩ + μ‖A‖``. The infimum is of a
positively homogeneous function, so it is 0 or −∞; it is 0 exactly when ``μ`` dominates
the conjugate of the regulariser restricted to the PSD cone:

* Hilbert–Schmidt: ``sup_{A⪰0, ‖A‖₂≤1} ⟨−G, A⟩ = ‖[G]₋‖₂`` (the Frobenius norm of the
  negative eigenvalues of ``G``), so the dual is
  ``max bᵀα  s.t. 0 ≤ α ≤ 1/m, ‖[G(α)]₋‖₂ ≤ μ``;
* trace: ``⟨G + μI, A⟩ ≥ 0`` for all ``A ⪰ 0``, i.e. ``λ_min(G(α)) ≥ −μ``.

Any feasible ``α`` gives ``bᵀα ≤ Ω⋆``. With ``ν(α) = ‖[G]₋‖₂`` (HS) or
``max(0, −λ_min G)`` (trace), two ways turn an arbitrary ``α`` in the box into a bound:

1. *best feasible scaling*: ``tα`` is feasible for ``t ≤ μ/ν`` and stays in the box for
   ``t ≤ 1``, so ``max(0, min(1, μ/ν)·bᵀα) ≤ Ω⋆`` (``α = 0`` is feasible: the bound is ≥ 0);
2. *restricted domain*: every minimiser has ``μ‖A⋆‖ ≤ Ω⋆ ≤ f`` for the objective ``f`` at
   any feasible point (the loss is ≥ 0), so minimising the Lagrangian over
   ``{A ⪰ 0, ‖A‖ ≤ R = f/μ}`` instead of the cone still bounds ``Ω⋆`` from below:
   ``bᵀα − R·max(0, ν(α) − μ) ≤ Ω⋆``.

The larger of the two is reported.

**The dual point.** At a point ``A`` the hinge subgradient gives ``α_i = 1/m`` where
``z_i > 0`` and ``0`` where ``z_i < 0``; pairs on the kink (``z_i ≈ 0``, the "support
pairs") may take any value in ``[0, 1/m]``, and the subgradient alone leaves them
undetermined. The Huber-smoothed hinge with width ``σ`` has the exact dual
``α_i = clip(z_i/σ, 0, 1)/m`` (``h_σ(z) = max_{a∈[0,1]} az − σa²/2``), which is dual
optimal for the smoothed problem at its minimiser and therefore within ``σ/2`` of
optimal for eq. (5). Three stages, each certified exactly and the best kept (the
second and third only when the first leaves a certified gap within
``CertifySettings.polish_gap``: far from the optimum they cost many eigendecompositions
and gain next to nothing):

1. *ladder*: ``α_σ`` for a geometric ladder of widths spanning the spread of ``|z|``
   (plus the smoothing solver's own ``σ``) and the plain subgradient ``σ → 0``;
2. *stationarity fit* (when ``A`` is known): at an optimum ``G(α) = −μ ∂‖A‖ + S`` with
   ``S ⪰ 0``, ``SA = 0``. In the eigenbasis of ``A`` (range of rank ``k`` first) the
   range block of ``G`` must equal ``−μΛ/‖Λ‖₂`` (HS) or ``−μI_k`` (trace) and the
   range × null block must vanish: linear equations in the near-kink ``α_i``
   (``|z_i| ≤ δ``; the others keep their subgradient values), solved by bounded least
   squares for a few ``δ`` and rank thresholds;
3. *polish*: the dual restricted to the near-kink pairs is small and smooth enough
   for SLSQP: ``max bᵀα`` over ``α_F ∈ [0, 1/m]^F`` s.t. ``μ² − ‖[G]₋‖₂² ≥ 0`` (HS) or
   ``λ_j(G) + μ ≥ 0`` for the smallest eigenvalues (trace), started from stage 2; for
   larger free sets (a point far from optimal, where many pairs sit within ``δ`` of
   the kink) a quadratic-penalty path with L-BFGS-B instead.

The dual point recovered from an approximate primal is only accurate to about the
square root of the primal gap (stages 1–2); stage 3 removes that loss.

**The certificate as data.** The bound is a function of ``α`` and ``f`` alone (the
data fix the rest): the solvers report the pair behind their best bound as
``result.certificate`` = ``{"kind": "maurer", "regularizer", "alpha": α, "radius": f}``
(:meth:`BestDual.dual_point`; recomputed by :mod:`convexmetric.verifier.maurer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..result import certified_gap
from . import constants as const
from .dual import _data, _kkt_fit, _penalty_polish, _polish, dual_bound

__all__ = ["AT_SOLUTION", "BestDual", "CertifySettings", "certify", "dual_bound"]


class BestDual:
    """The dual point ``α`` and value ``f`` behind the best bound offered so far."""

    def __init__(self, regularizer):
        self.regularizer, self.bound, self.alpha, self.radius = regularizer, -np.inf, None, None

    def offer(self, bound, alpha, radius):
        """Keep ``(α, f)`` if ``bound`` beats the best so far."""
        if alpha is not None and bound > self.bound:
            self.bound, self.alpha, self.radius = float(bound), np.array(alpha, float), radius

    def dual_point(self):
        """``result.certificate`` (:mod:`convexmetric.verifier.maurer`), or ``None``."""
        if self.alpha is None or not np.isfinite(self.bound):
            return None
        return {
            "kind": "maurer",
            "regularizer": self.regularizer,
            "alpha": self.alpha,
            "radius": float(self.radius),
        }


@dataclass(kw_only=True)
class CertifySettings:
    """How hard :func:`certify` searches for a good dual point (documented defaults)."""

    sigmas: tuple = ()  #: extra smoothing widths to try (the smoothing solver's current σ)
    n_ladder: int = const.N_LADDER  #: smoothing widths of the ladder, geometric from max|z|
    #: largest number of near-kink pairs handed to the polish
    max_polish: int = const.MAX_POLISH
    #: up to this many of them SLSQP (:func:`_polish`), beyond it the penalty path
    max_slsqp: int = const.MAX_SLSQP
    #: SLSQP's iterations at most
    slsqp_iter: int = const.SLSQP_ITER
    #: the polish frees the pairs with ``|z_i| ≤ δ`` for each ``δ`` (at most
    #: ``max_polish`` of them, the smallest ``|z_i|``); wide sets recover the dual at
    #: points far from optimal (an SGD iterate), narrow ones are cheap
    polish_widths: tuple = const.POLISH_WIDTHS
    #: the stationarity fit and the polish run only when the ladder's certified relative
    #: gap is at most this (None: always): far from the optimum they gain next to nothing
    polish_gap: float | None = const.POLISH_GAP


#: The search at a returned point of the projected-subgradient route, whose status
#: "optimal" means a gap within ``TOL_SUBGRADIENT``: narrow sets too, and SLSQP on more
#: free pairs for more iterations (the penalty path stops short of that gap).
AT_SOLUTION = CertifySettings(
    polish_widths=const.AT_SOLUTION_POLISH_WIDTHS,
    max_slsqp=const.AT_SOLUTION_MAX_SLSQP,
    slsqp_iter=const.AT_SOLUTION_SLSQP_ITER,
)


def certify(
    z, U, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs", *, f_upper, A=None, settings=None
):
    """Best certified lower bound on min eq. (5) from the point with hinge arguments ``z``.

    Parameters
    ----------
    z : ndarray (m,)
        Hinge arguments ``z_i`` at the point (any point: the bound is valid regardless).
    U : ndarray (m, D)
        Pair differences in feature coordinates (for a kernel: an empirical kernel map).
    f_upper : float
        The objective at a feasible point (bounds ``μ‖A⋆‖``).
    A : ndarray (D, D), optional
        The point itself; enables the stationarity fit (:func:`_kkt_fit`).
    settings : CertifySettings, optional
        The widths tried and the polish's sizes (defaults: :class:`CertifySettings`).

    Returns
    -------
    bound : float
    info : dict
        How the best candidate was found (``"method"``: ``"zero"``, ``"ladder"``,
        ``"kkt"`` or ``"polish"``) and its dual point ``"alpha"`` (``bound`` is
        :func:`dual_bound` of it with ``f_upper``).

    Examples
    --------
    >>> from convexmetric.problems.maurer import hinge_arguments, quadratic_forms
    >>> U = np.array([[1.0, 0.0], [0.0, 2.0]]); r = np.array([1.0, -1.0])
    >>> z = hinge_arguments(quadratic_forms(np.zeros((2, 2)), U), r, 1.0)
    >>> lb, _ = certify(z, U, r, lam=0.1, f_upper=0.5)  # Ω(0) = 1/2
    >>> bool(0.0 <= lb <= 0.5)
    True
    """
    s = settings or CertifySettings()
    c, b, mu = _data(r, lam, gamma, gamma_neg)
    dual = (U, c, b, mu, regularizer, f_upper)
    best, how, best_alpha = _ladder(z, dual, s)
    far = s.polish_gap is not None and certified_gap(f_upper, best) > s.polish_gap
    if mu <= 0 or far:
        return best, {"method": how, "alpha": best_alpha}
    if A is not None:
        val, alpha = _kkt_fit(
            z, A, U, c, b, mu, regularizer, f_upper, const.KKT_DELTAS, const.KKT_RANK_TOLS
        )
        if val > best:
            best, how, best_alpha = val, "kkt", alpha
    val, alpha = _polish_sets(z, dual, s, best, best_alpha)
    if val > best:
        best, how, best_alpha = val, "polish", alpha
    return best, {"method": how, "alpha": best_alpha}


def _ladder(z, dual, s):
    """The subgradient's and the smoothed duals' best bound: ``(bound, how, α)``."""
    m = len(z)
    az = np.abs(z[np.abs(z) > 0])
    hi = float(az.max()) if az.size else 1.0
    ladder = list(np.geomspace(hi, max(hi * 1e-10, 1e-14), s.n_ladder))
    best, how, best_alpha = 0.0, "zero", np.zeros(m)
    for sigma in [0.0, *ladder, *(float(x) for x in s.sigmas)]:
        alpha = (z >= 0).astype(float) / m if sigma == 0 else np.clip(z / sigma, 0.0, 1.0) / m
        val = dual_bound(alpha, *dual)
        if val > best:
            best, how, best_alpha = val, "ladder", alpha
    return best, how, best_alpha


def _polish_sets(z, dual, s, best, best_alpha):
    """The polish over the near-kink pairs of each width, each started from the best
    point so far (``best``, ``best_alpha``); ``(bound, α)`` of the best."""
    m = len(z)
    order = np.argsort(np.abs(z), kind="stable")
    tried = set()
    for delta in s.polish_widths:
        n_free = min(int(np.sum(np.abs(z) <= delta)), s.max_polish)
        if n_free == 0 or n_free in tried:
            continue
        tried.add(n_free)
        free = np.sort(order[:n_free])
        # outside the free set: the subgradient values; inside: the best point so far
        start = (z > 0).astype(float) / m
        start[free] = best_alpha[free]
        if n_free <= s.max_slsqp:
            val, alpha = _polish(start, free, *dual, max_iter=s.slsqp_iter)
        else:
            val, alpha = _penalty_polish(start, free, *dual)
        if val > best:
            best, best_alpha = val, alpha
    return best, best_alpha
