"""Multi-metric LMNN (§5.2): an exact repaired dual bound, and the escape directions.

**The bound.** With ``λ_t ∈ [0, 1]`` per listed triplet (0 elsewhere) the Lagrangian gives,
for every ``M ⪰ 0``,

    f(M) ≥ μ Σ λ + Σ_g ⟨S_g(λ), M^g⟩,
    S_g(λ) = (1 − μ)P_g + μ Σ λ_t (C_ij[g(j)=g] − C_il[g(l)=g]).

Triplets whose impostor difference leaves ``range(P_{g(l)})`` get ``λ_t = 0`` (see
:meth:`.oracle.MultiMetricOracle.lower_bound`); then every ``S_g`` lives on
``range(P_g)``, and in the coordinates ``B_g = V_r Λ_r^{-1/2}`` (``B_gᵀP_gB_g = I``)
``S'_g = B_gᵀ S_g B_g = (1 − μ)I + …``. Let ``ν = min_g λ_min(S'_g)/(1 − μ)``, so that
``S_g ⪰ ν(1 − μ)P_g`` and ``Σ_g ⟨S_g, M^g⟩ ≥ ν·pull(M)``. At an optimum ``M*``,
``pull(M*) ≤ f* ≤ F`` (any attained objective value ``F``), hence for ``ν < 0``

* *scaling*: ``f* ≥ μΣλ + ν f*``, i.e. ``f* ≥ μΣλ / (1 − ν)`` (the same value as the
  bisection of :func:`convexmetric.linalg.psd_scaling` on ``(1 − θ)S(0) + θS(λ)``,
  here exact);
* *trace*: ``f* ≥ μΣλ + ν F``.

Both hold for every ``λ ∈ [0, 1]``; the larger is returned. One ``r_g × r_g``
``eigvalsh`` per block, no bisection.

**Escape directions.** The factor refinement descends in ``M^g = L_gᵀL_g``, where the
problem is not convex: a factor point can be stationary while some ``S_g(λ)`` has
negative eigenvalues in directions that ``M^g`` does not use (a Burer–Monteiro
saddle). ``D_g = −min(S_g, 0)`` (:func:`negative_parts`) keeps ``M^g + tD_g ⪰ 0`` for all
``t ≥ 0`` and has directional derivative ``−Σ_g ‖min(S_g, 0)‖²_F < 0``. The solver's
convex polish (FISTA on the ``M^g``, :func:`.solver.solve`) cannot stall at such
a point, so it needs no escape; the direction is kept as a diagnostic.
"""

from __future__ import annotations

import numpy as np

from .. import terms, trace_ascent
from ..constants import MULTI_TAU, SOFT_WINDOW


class RangeCertificate:
    """The repaired bound above for a :class:`~.oracle.MultiMetricOracle` ``base``."""

    def __init__(self, base, rtol=1e-10):
        self.base, self.B, self.V = base, [], []
        for P in base.P:
            w, V = np.linalg.eigh(0.5 * (P + P.T))
            r = w > rtol * max(float(w[-1]), 1e-300)
            self.B.append(V[:, r] / np.sqrt(w[r]))
            self.V.append(V[:, r])

    best = None  #: the best bound so far and its dual point (:meth:`record`)

    def record(self, bound, lam, F=None):
        """Record ``bound`` with the multipliers ``lam`` of the listed triplets (as
        :meth:`bound` used them) if it is the best so far; returns ``bound``."""
        if np.isfinite(bound) and (self.best is None or bound > self.best["bound"]):
            base = self.base
            lam = np.clip(np.asarray(lam, dtype=float), 0.0, 1.0)
            lam[base.outside_range()] = 0.0
            nz = np.flatnonzero(lam > 0)
            self.best = {
                "bound": float(bound),
                "F": F,
                "i": base.I[nz],
                "j": base.J[nz],
                "l": base.L[nz],
                "lam": lam[nz],
            }
        return bound

    def dual_point(self, lower_bound):
        """``SolveResult.certificate`` (kind ``"lmnn_multi"``; documented in
        :mod:`convexmetric.verifier.lmnn`) of ``lower_bound``, the best bound recorded
        (no multipliers for a bound of 0), or ``None``."""
        best = self.best
        if lower_bound is None or not np.isfinite(lower_bound):
            return None
        if best is None or best["bound"] < lower_bound:
            if lower_bound > 0:
                return None
            e = np.empty(0, np.int64)
            best = {"F": None, "i": e, "j": e, "l": e, "lam": np.empty(0)}
        triplets = (best["i"], best["j"], best["l"])
        return terms.dual_point("lmnn_multi", self.base.n, triplets, best["lam"], best["F"])

    def multipliers(self, Ms, sigma):
        """``(λ, z)``: the smoothed dual estimate ``clip(λ̄ + z/σ, 0, 1)`` at ``Ms``
        (original coordinates) and the hinge arguments there."""
        z = self.base.hinge_arguments(Ms)
        return np.clip(self.base.lam_bar + z / sigma, 0.0, 1.0), z

    def ascend(self, lam, z, F, tau=MULTI_TAU, iterations=40, tol=None):
        """Multipliers raising the trace bound from ``lam`` (a copy): the trace-bound ascents
        over the triplets near the kink (``|z| < τ``, impostor difference in range), all
        blocks at once in the coordinates ``B_g`` (where the pull term is ``(1 − μ)I``: the
        scale of ``ν``).

        With ``tol``, the supergradient ascent
        (:func:`convexmetric.lmnn.trace_ascent.ascend`) runs from ``lam``, then the smooth
        ascent (:func:`convexmetric.lmnn.trace_ascent.smooth_ascend`) from its result when
        that is within :data:`SOFT_WINDOW`·``tol``. Without ``tol``, the supergradient
        ascent alone."""
        base, mu = self.base, self.base.mu
        lam = np.clip(np.asarray(lam, dtype=float), 0.0, 1.0)
        out = base.outside_range()
        lam[out] = 0.0
        K = np.flatnonzero((np.abs(z) < tau) & ~out)
        if len(K) == 0 or mu >= 1.0:
            return lam
        x = lam[K].copy()
        lam[K] = 0.0
        I, J, L = base.I[K], base.J[K], base.L[K]
        gj, gl = base.g[J], base.g[L]
        blocks = []
        for g, (B, G) in enumerate(zip(self.B, base.gradient(lam))):
            if not B.shape[1]:  # an empty range (no pull: a class of one): S_g = 0 there
                continue
            ia, ib = np.flatnonzero(gj == g), np.flatnonzero(gl == g)
            A_g = ((base.X[I[ia]] - base.X[J[ia]]) @ B).astype(np.float32)
            B_g = ((base.X[I[ib]] - base.X[L[ib]]) @ B).astype(np.float32)
            blk = trace_ascent.Block(None, A_g, ia, B_g, ib)
            blk.S = B.T @ (0.5 * (G + G.T)) @ B + blk.scatter(x, mu)
            blocks.append(blk)
        lam[K] = self._climb(blocks, x, F, mu * float(lam.sum()), tol, iterations)
        return lam

    def _climb(self, blocks, x, F, const, tol, iterations):
        """The multipliers of :meth:`ascend` over the free terms, from ``x``."""
        mu = self.base.mu
        scale = 1.0 - mu
        first = trace_ascent.ascend(
            blocks, x, mu, F, const, scale=scale, iterations=iterations, tol=tol
        )
        if tol is None:
            return first
        return trace_ascent.smooth_ascend(
            blocks, x, mu, F, const, scale=scale, tol=tol, start=first, window=SOFT_WINDOW
        )

    def bound(self, lam, F=None):
        """``(lower bound, ν)`` for multipliers ``lam`` over the listed triplets.

        ``F``: an attained objective value (enables the trace repair); ``None``: scaling only.
        """
        base, mu = self.base, self.base.mu
        lam = np.clip(np.asarray(lam, dtype=float), 0.0, 1.0)
        lam[base.outside_range()] = 0.0
        total = mu * float(lam.sum())
        if mu >= 1.0:  # no pull term: S(0) = 0, no interior to repair towards
            ok = all(np.linalg.eigvalsh(0.5 * (G + G.T))[0] >= 0 for G in base.gradient(lam))
            return (total if ok else -np.inf), 0.0
        nu = np.inf
        for B, V, G in zip(self.B, self.V, base.gradient(lam)):
            G = 0.5 * (G + G.T)
            S = B.T @ G @ B
            # S_g must vanish off range(P_g) (targets span it; impostors off it have λ = 0):
            # checked to rounding (the range test of outside_range is relative 1e-6)
            off = G - V @ (V.T @ G @ V) @ V.T
            if np.abs(off).max() > 1e-6 * max(np.abs(G).max(), 1e-300):
                return -np.inf, -np.inf  # not certified
            if S.size:  # (an empty range, a block without pull: S_g = 0 there)
                nu = min(nu, float(np.linalg.eigvalsh(0.5 * (S + S.T))[0]) / (1.0 - mu))
        if nu >= 0.0:
            return total, nu
        lb = total / (1.0 - nu)
        if F is not None and np.isfinite(F):
            lb = max(lb, trace_ascent.trace_bound(total, float(F), nu))
        return lb, nu


def exact_certificate(oracle, triplets, duals, F):
    """``(lower bound or None, certificate)`` of an exact solve's hinge multipliers.

    ``duals`` are the conic solver's multipliers of the hinge constraints over
    ``triplets`` (in ``[0, μ]``); ``λ = duals/μ ∈ [0, 1]`` is a dual point of the full
    problem (0 on every other triplet), evaluated by the repaired bound above on a fresh
    ``oracle`` (:class:`~.oracle.MultiMetricOracle`) listing the triplets with
    ``λ > 0``; ``F``: the attained objective (the trace repair)."""
    if oracle.mu <= 0:
        return None, None
    I, J, L = triplets
    lam = np.clip(np.asarray(duals, dtype=float) / oracle.mu, 0.0, 1.0)
    nz = np.flatnonzero(lam > 0)
    keys = (I[nz].astype(np.int64) * oracle.n + J[nz]) * oracle.n + L[nz]
    order = np.argsort(keys, kind="stable")
    oracle.list_terms(keys[order])
    cert = RangeCertificate(oracle)
    lower = cert.record(cert.bound(lam[nz][order], F)[0], lam[nz][order], F)
    lower = float(lower) if np.isfinite(lower) else None
    return lower, cert.dual_point(lower)


def negative_parts(oracle, Ms, sigma):
    """``[−min(S_g(λ), 0)]`` at ``Ms`` (original coordinates; ``oracle`` the base oracle)."""
    z = oracle.hinge_arguments(Ms)
    lam = np.clip(oracle.lam_bar + z / sigma, 0.0, 1.0)
    lam[oracle.outside_range()] = 0.0
    out, worst = [], 0.0
    for S in oracle.gradient(lam):
        w, V = np.linalg.eigh(0.5 * (S + S.T))
        neg = np.minimum(w, 0.0)
        neg[neg > -1e-10 * max(1.0, float(np.abs(w).max()))] = 0.0
        worst = min(worst, float(neg.min()))
        out.append((V * -neg) @ V.T)
    return out, worst
