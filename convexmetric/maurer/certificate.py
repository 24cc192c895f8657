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
square root of the primal gap (stages 1–2: relative gaps ~1e-4 at a primal gap of
2e-7); stage 3 removes that loss, and on small instances the certified gap equals the
true primal gap to ~1e-10.

**The certificate as data.** The bound is a function of ``α`` and ``f`` alone (the
data fix the rest): the solvers report the pair behind their best bound as
``result.certificate`` = ``{"kind": "maurer", "regularizer", "alpha": α, "radius": f}``
(:func:`maurer_certificate`; recomputed by :mod:`convexmetric.verifier.maurer`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.maurer import margins
from ..result import certified_gap

__all__ = ["AT_SOLUTION", "BestDual", "CertifySettings", "certify", "dual_bound"]


class BestDual:
    """The dual point ``α`` and value ``f`` behind the best bound offered so far."""

    def __init__(self, regularizer):
        self.regularizer, self.bound, self.alpha, self.radius = regularizer, -np.inf, None, None

    def offer(self, bound, alpha, radius):
        """Keep ``(α, f)`` if ``bound`` beats the best so far."""
        if alpha is not None and bound > self.bound:
            self.bound, self.alpha, self.radius = float(bound), np.array(alpha, float), radius

    def certificate(self):
        """``result.certificate`` (:mod:`convexmetric.verifier.maurer`), or ``None``."""
        if self.alpha is None or not np.isfinite(self.bound):
            return None
        return {"kind": "maurer", "regularizer": self.regularizer, "alpha": self.alpha,
                "radius": float(self.radius)}  # fmt: skip


def _data(r, lam, gamma, gamma_neg):
    c = r / margins(r, gamma, gamma_neg)
    return c, 1.0 - c, lam / np.sqrt(len(r))


def _violation(G, regularizer):
    """``ν``: ``‖[G]₋‖₂`` (HS) or ``max(0, −λ_min G)`` (trace), from the eigenvalues."""
    w = np.linalg.eigvalsh(0.5 * (G + G.T))
    if regularizer == "trace":
        return max(0.0, -float(w[0]))
    return float(np.sqrt(np.sum(np.minimum(w, 0.0) ** 2)))


def dual_bound(alpha, U, c, b, mu, regularizer, f_upper):
    """Certified lower bound from an ``α`` in ``[0, 1/m]^m`` (module doc, items 1 and 2).

    ``G(α)`` sums over the pairs with ``α_i ≠ 0`` only (a zero term adds nothing)."""
    on = np.flatnonzero(alpha)
    Uo = U[on]
    G = (Uo.T * (alpha[on] * c[on])) @ Uo
    nu = _violation(G, regularizer)
    val = float(b @ alpha)
    scaled = max(0.0, min(1.0, mu / nu) * val) if nu > 0 else max(0.0, val)
    restricted = val - (f_upper / mu) * max(0.0, nu - mu) if mu > 0 else -np.inf
    return max(scaled, restricted)


def _kkt_fit(z, A, U, c, b, mu, regularizer, f_upper, deltas, rank_tols):
    """Solve the stationarity condition for the near-kink pairs by bounded least squares.

    At an optimum ``G(α) = −μ ∂‖A‖ + S`` with ``S ⪰ 0``, ``SA = 0``: on the range of
    ``A = V Λ Vᵀ`` (rank ``k``) this reads ``Vᵀ G V = −μ Λ/‖Λ‖₂`` (HS) or ``−μ I_k`` (trace),
    linear in ``α``. Pairs with ``z_i > δ`` keep ``1/m``, those with ``z_i < −δ`` keep 0,
    the rest are fitted in ``[0, 1/m]`` (``scipy.optimize.lsq_linear``) and certified.
    """
    from scipy.optimize import lsq_linear

    m = len(z)
    w, E = np.linalg.eigh(0.5 * (A + A.T))
    top = float(w[-1])
    best, best_alpha = -np.inf, None
    if top <= 0:
        return best, best_alpha
    for rt in rank_tols:
        keep = w > rt * top
        k = int(keep.sum())
        B = np.concatenate([E[:, keep], E[:, ~keep]], axis=1)  # range first, then null space
        if regularizer == "trace":
            target = -mu * np.eye(k)
        else:
            target = -mu * np.diag(w[keep]) / float(np.linalg.norm(w[w > 0]))
        # equations: the range block (upper triangle) and the range × null block
        ri, ci = np.triu_indices(k)
        ri = np.concatenate([ri, np.repeat(np.arange(k), len(w) - k)])
        ci = np.concatenate([ci, np.tile(np.arange(k, len(w)), k)])
        scale = np.where(ri == ci, 1.0, np.sqrt(2.0))
        T = np.zeros((len(w), len(w)))
        T[:k, :k] = target
        P = U @ B  # (m, D): the pairs in the eigenbasis of A
        for delta in deltas:
            free = np.abs(z) <= delta
            if not free.any() or free.sum() > 5000:
                continue
            alpha = np.where(z > delta, 1.0 / m, 0.0)
            G0 = (P.T * (alpha * c)) @ P
            rhs = (T - G0)[ri, ci] * scale
            Pf = P[free]
            cols = (Pf[:, ri] * Pf[:, ci] * c[free, None]).T * scale[:, None]
            sol = lsq_linear(cols / m, rhs, bounds=(0.0, 1.0), method="bvls")
            alpha[free] = np.clip(sol.x, 0.0, 1.0) / m
            val = dual_bound(alpha, U, c, b, mu, regularizer, f_upper)
            if val > best:
                best, best_alpha = val, alpha
    return best, best_alpha


def _polish(alpha, free, U, c, b, mu, regularizer, f_upper, max_iter=100):
    """Maximise ``bᵀα`` over the free pairs s.t. ``ν(G(α)) ≤ μ`` (SLSQP; a small smooth dual).

    HS: the constraint ``μ² − ‖[G]₋‖₂² ≥ 0`` is differentiable. Trace: one constraint
    ``λ_j(G) + μ ≥ 0`` per smallest eigenvalue (gradient ``c_i (u_iᵀe_j)²``).
    """
    from scipy.optimize import minimize

    m = len(alpha)
    Uf, cf, bf = U[free], c[free] / m, b[free] / m
    base = alpha.copy()
    base[free] = 0.0
    G0 = (U.T * (base * c)) @ U
    n_eig = min(U.shape[1], 10)

    cache = {}

    def eig(x):  # SLSQP asks for the constraint and its Jacobian at the same x
        key = x.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = np.linalg.eigh(G0 + (Uf.T * (x * cf)) @ Uf)
        return cache[key]

    def cons(x):
        w, _ = eig(x)
        if regularizer == "trace":
            return w[:n_eig] + mu
        return np.array([mu**2 - float(np.sum(np.minimum(w, 0.0) ** 2))])

    def jac(x):
        w, E = eig(x)
        if regularizer == "trace":
            return ((Uf @ E[:, :n_eig]) ** 2 * cf[:, None]).T
        return -(2.0 * np.sum((Uf @ E) ** 2 * np.minimum(w, 0.0), axis=1) * cf)[None, :]

    res = minimize(
        lambda x: -float(bf @ x),
        alpha[free] * m,
        jac=lambda x: -bf,
        bounds=[(0.0, 1.0)] * len(free),
        constraints=[{"type": "ineq", "fun": cons, "jac": jac}],
        method="SLSQP",
        options={"maxiter": max_iter, "ftol": 1e-15},
    )
    out = base.copy()
    out[free] = np.clip(res.x, 0.0, 1.0) / m
    return dual_bound(out, U, c, b, mu, regularizer, f_upper), out


def _penalty_polish(alpha, free, U, c, b, mu, regularizer, f_upper, rounds=7):
    """The same small dual by a quadratic-penalty path (L-BFGS-B), for large free sets.

    Minimises ``−bᵀα + ρ p(α)`` with the C¹ penalty ``p = ‖[G + μI]₋‖₂²`` (trace) or
    ``((‖[G]₋‖₂² − μ²)₊)²`` (HS) for ``ρ`` growing by 10× per round, warm-started,
    certifying every round (``O(|F| D²)`` per evaluation, no ``|F|³`` QP as in SLSQP).
    """
    from scipy.optimize import minimize

    m, D = len(alpha), U.shape[1]
    Uf, cf, bf = U[free], c[free] / m, b[free] / m
    base = alpha.copy()
    base[free] = 0.0
    G0 = (U.T * (base * c)) @ U + (mu * np.eye(D) if regularizer == "trace" else 0.0)

    def fg(x, rho):
        w, E = np.linalg.eigh(G0 + (Uf.T * (x * cf)) @ Uf)
        neg = np.minimum(w, 0.0)
        nu2 = float(np.sum(neg**2))
        dnu2 = 2.0 * np.sum((Uf @ E) ** 2 * neg, axis=1) * cf
        if regularizer == "trace":
            return -float(bf @ x) + rho * nu2, -bf + rho * dnu2
        e = max(nu2 - mu**2, 0.0)
        return -float(bf @ x) + rho * e * e, -bf + rho * 2.0 * e * dnu2

    rho0 = f_upper / mu if regularizer == "trace" else f_upper / mu**4
    x, best, best_alpha = alpha[free] * m, -np.inf, alpha
    for rho in rho0 * 10.0 ** np.arange(rounds):
        x = minimize(
            fg, x, args=(rho,), jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * len(free),
            options={"maxiter": 300},
        ).x  # fmt: skip
        out = base.copy()
        out[free] = np.clip(x, 0.0, 1.0) / m
        val = dual_bound(out, U, c, b, mu, regularizer, f_upper)
        if val > best:
            best, best_alpha = val, out
    return best, best_alpha


@dataclass(kw_only=True)
class CertifySettings:
    """How hard :func:`certify` searches for a good dual point (documented defaults)."""

    sigmas: tuple = ()  #: extra smoothing widths to try (the smoothing solver's current σ)
    n_ladder: int = 12  #: smoothing widths of the ladder, geometric from max|z|
    #: largest number of near-kink pairs handed to the polish
    max_polish: int = 3000
    #: up to this many of them SLSQP (:func:`_polish`), beyond it the penalty path
    max_slsqp: int = 40
    #: SLSQP's iterations at most
    slsqp_iter: int = 100
    #: the polish frees the pairs with ``|z_i| ≤ δ`` for each ``δ`` (at most
    #: ``max_polish`` of them, the smallest ``|z_i|``); wide sets recover the dual at
    #: points far from optimal (an SGD iterate), narrow ones are cheap
    polish_widths: tuple = (1e-4, 1e-2, 0.1, 0.3)
    #: the stationarity fit and the polish run only when the ladder's certified relative
    #: gap is at most this (None: always). From SGD's end points the polish brings a gap
    #: of 0.10–0.13 down to 1e-4–2e-2, but one of 0.79 only to 0.73, and 0.975 and
    #: 0.995 not at all, for 20–46 s against the ladder's 3–4 s with a kernel of 901
    #: points (measurements: ``benchmarks/TUNING.md``)
    polish_gap: float | None = 0.5


#: The search at a returned point of the projected-subgradient route, whose status
#: "optimal" means a relative gap within 1e-6: narrow sets too (1e-6, 1e-3), SLSQP up to
#: 150 free pairs (the penalty path stops short of 1e-6) and for up to 300 iterations.
#: On the guide's data (iris and wine scaled to diameter ≤ 1, 2000 balanced pairs) the
#: defaults certify 3.5e-5 and 1.7e-8 at λ = 0.005, 1.3e-6 and 5.3e-6 at λ = 0.01, from
#: points whose objective is within 2e-7 of Clarabel's optimum; these settings certify
#: 7.0e-7, 1.7e-8, 1.7e-7 and 3.0e-8, in 0.2–3 s of CPU.
AT_SOLUTION = CertifySettings(
    polish_widths=(1e-6, 1e-4, 1e-3, 1e-2, 0.1, 0.3), max_slsqp=150, slsqp_iter=300
)


def certify(z, U, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs", *, f_upper, A=None,
            settings=None):  # fmt: skip
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
        deltas = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
        val, alpha = _kkt_fit(z, A, U, c, b, mu, regularizer, f_upper, deltas, (1e-8, 1e-5, 1e-3))
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
