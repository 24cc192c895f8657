r"""Certified lower bounds for eq. (14) from any multipliers, and a crossover to fit them.

**The dual.** With ``C_t = C_ij − C_il`` for triplet ``t = (i, j, l)`` and
``μ max(0, z) = max_{0≤λ≤1} μλz``, every ``λ ∈ [0, 1]^T`` gives, for every ``M ⪰ 0``,

.. math::

    f(M) \ge \mu \textstyle\sum_t \lambda_t + \langle S(\lambda), M\rangle, \qquad
    S(\lambda) = S_0 + \mu \textstyle\sum_t \lambda_t C_t, \quad S_0 = (1 − \mu) P,

``P`` the pull matrix. Let ``ν = λ_min(S(λ), S_0)``, the smallest generalised
eigenvalue (``S(λ) − νS_0 ⪰ 0``). Then ``⟨S(λ), M*⟩ ≥ ν⟨S_0, M*⟩`` and
``⟨S_0, M*⟩ ≤ f*`` (the hinge terms are ≥ 0), so for ``ν < 0``

* *scaling*: ``f* ≥ μΣλ + ν f*``, i.e. ``f* ≥ μΣλ / (1 − ν)`` (``θ = 1/(1 − ν)`` is the
  exact largest ``θ`` with ``S(θλ) ⪰ 0``: no bisection), and
* *trace*: ``f* ≥ μΣλ + νF`` for any attained value ``F ≥ f*``.

The larger is returned; for ``ν ≥ 0`` the bound is ``μΣλ``. ``S_0`` may be singular
(pixels that never vary): the eigenvalue problem is solved on its range, which is
valid when no triplet difference leaves that range (checked once; otherwise the
bound falls back to :func:`convexmetric.linalg.psd_scaling`, bisection on the
whole space).

**Ascent** (:meth:`DualCertificate.ascend`). Near convergence the augmented Lagrangian's
multipliers already have the right sum (on the MNIST sample ``μΣλ`` is within 3e-6 of
``F``); the gap is all ``ν``, a few times 1e-4 and carried by a cluster of about 30
negative eigenvalues. The trace bound ``μΣλ + F·min(0, ν(λ))`` is concave in ``λ``; the
engine's ascent (:mod:`convexmetric.lmnn.trace_ascent`) raises it over the multipliers
of the triplets near the kink. From stage multipliers 6e-4 from ``F``, five steps gave
6e-5 and twenty 2e-5 (the products in single precision, the bound itself exact).

**Crossover** (:meth:`DualCertificate.crossover`). The multipliers read off a smoothed
solve, ``clip(λ̄ + z/σ, 0, 1)``, are poor on the triplets at the kink ``z ≈ 0``, where
the optimal ``λ*`` is strictly inside ``[0, 1]``; complementary slackness asks
``S(λ*) M* = 0``. With the other multipliers fixed, ``‖S(λ)N‖_F²`` (``M = NNᵀ``) is a
convex quadratic in the kink multipliers ``λ_K``,

.. math::

    H_{st} = μ^2 \operatorname{tr}(C_s C_t M), \qquad
    g_t = μ \operatorname{tr}(C_t S_{\rm fix} M),

and ``tr(C_s C_t M) = (a_s·a_t)(a_tᵀMa_s) − (a_s·b_t)(b_tᵀMa_s) − (b_s·a_t)(a_tᵀMb_s)
+ (b_s·b_t)(b_tᵀMb_s)`` (``a = x_i − x_j``, ``b = x_i − x_l``): three ``K × d × K``
products and three ``K × r × K`` ones (``aᵀMb = (Na)·(Nb)``, ``M = NᵀN`` of rank ``r``;
the third term is the second's transpose), in single precision, never the ``d² × K``
design matrix. It is minimised over ``[0, 1]^K`` by L-BFGS-B with a small ridge towards the
smoothed multipliers (the system can be under-determined), started from the previous
fit's multipliers of the triplets still at the kink (consecutive stages share most).
Whatever the fit, the bound above keeps it valid; the better of the two bounds is
returned.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..linalg import components_from_metric, psd_scaling, triplet_scatter, whitening
from ..optim.factor import trimmed
from . import trace_ascent
from .constants import SOFT_WINDOW


class DualCertificate:
    """Lower bounds for eq. (14) on the data of an :class:`~.lmnn.ActiveSetOracle`.

    ``X`` are the oracle's (possibly whitened) inputs, ``P`` its pull matrix, ``threads``
    the lanes of its scatters (:func:`~convexmetric.linalg.pair_scatter`).
    """

    _warm = None  #: (triplet keys, multipliers) of the last crossover fit

    def __init__(self, X, P, mu, threads=1):
        self.X, self.mu, self.threads = X, mu, threads
        self.S0 = (1 - mu) * P
        self.T, null, _ = whitening(self.S0)
        # a triplet difference off the range of S0 would make ⟨S, M⟩ unbounded below there
        scale = max(float(np.abs(X).max()), 1e-300)
        self.valid = null.shape[1] == 0 or float(np.ptp(X @ null, axis=0).max()) <= 1e-10 * scale
        self.best = None  #: the best bound so far and its dual point (:meth:`record`)

    def scatter(self, I, J, L, lam):
        nz = np.flatnonzero(lam > 0)
        G = triplet_scatter(self.X, I[nz], J[nz], L[nz], lam[nz], threads=self.threads)
        return self.S0 + self.mu * G

    def bound(self, S, lam_sum, F=None):
        """The bound from ``S = S(λ)`` and ``Σλ`` (``F``: an attained objective value)."""
        total = self.mu * float(lam_sum)
        if not self.valid:
            return psd_scaling([self.S0], [S]) * total
        Sh = self.T.T @ S @ self.T
        nu = float(np.linalg.eigvalsh(0.5 * (Sh + Sh.T))[0])
        if nu >= 0:
            return total
        return max(
            total / (1.0 - nu), -np.inf if F is None else trace_ascent.trace_bound(total, F, nu)
        )

    def certified(self, I, J, L, lam, F=None):
        """The bound of the multipliers ``lam`` of the triplets ``(I, J, L)``, kept as the
        best dual point when it is the best bound so far (:meth:`record`)."""
        nz = np.flatnonzero(lam > 0)
        b = self.bound(self.scatter(I, J, L, lam), lam.sum(), F)
        self.record(b, F, triplets=(I[nz], J[nz], L[nz], lam[nz]))
        return b

    def record(self, bound, F, **point):
        """Record ``bound`` with the dual point that gives it if it is the best so far:
        ``triplets=(I, J, L, λ)`` (the nonzero multipliers), or ``stream=(L, σ)`` (the
        streaming mode's ``λ = clip(z/σ, 0, 1)`` at ``M = LᵀL``, listed at the end,
        :meth:`.ActiveSetOracle.dual_point`). ``F``: the attained value of the trace
        bound (``None``: not used)."""
        if np.isfinite(bound) and (self.best is None or bound > self.best["bound"]):
            self.best = {"bound": float(bound), "F": F, **point}

    def crossover(self, M, I, J, L, z, lam_s, F, taus=(0.03,), ridge=1e-4, max_kinks=3000):
        """The best bound over kink multipliers fitted to ``S(λ)M = 0`` (module docstring).

        ``z``: hinge arguments of the listed triplets ``(I, J, L)`` at ``M``; ``lam_s``: the
        smoothed multipliers (kept off the kink and as the ridge's centre); ``taus``: kink
        widths ``|z| < τ`` tried, at most ``max_kinks`` triplets (the nearest the kink).
        """
        best = -np.inf
        for tau in taus:
            K = np.flatnonzero(np.abs(z) < tau)
            if len(K) > max_kinks:  # the K×K programme stays small: the nearest the kink
                K = K[np.argsort(np.abs(z[K]), kind="stable")[:max_kinks]]
            if len(K) == 0:
                continue
            lam = lam_s.copy()
            lam[K] = 0.0
            S_fix = self.scatter(I, J, L, lam)
            keys = self._keys(I[K], J[K], L[K])
            start = self._warm_start(keys, lam_s[K])
            lam[K] = self._fit(
                M,
                self.X[I[K]] - self.X[J[K]],
                self.X[I[K]] - self.X[L[K]],
                S_fix,
                lam_s[K],
                ridge,
                start=start,
            )
            self._warm = (keys, lam[K].copy())
            best = max(best, self.certified(I, J, L, lam, F))
        return best

    def ascend(self, I, J, L, z, lam, F, tau=0.03, iterations=10, tol=None, max_kinks=50_000):
        """Multipliers raising the trace bound ``μΣλ + F·ν(λ)`` from ``lam`` (a copy).

        The ascent of :func:`convexmetric.lmnn.trace_ascent.ascend` over the multipliers
        of the triplets near the kink (``|z| < τ``, at most ``max_kinks``, the nearest),
        in the coordinates where ``S_0`` is the identity; the others stay. It stops
        after ``iterations`` steps, when no step gains, or once ``F − B ≤ tol·F``; given
        ``tol``, the smooth ascent (:func:`~convexmetric.lmnn.trace_ascent.smooth_ascend`)
        goes on from there when ``F − B ≤`` :data:`SOFT_WINDOW` ``· tol·F`` (where the
        supergradient steps stall on a cluster of eigenvalues). :meth:`bound` then
        certifies the result exactly.
        """
        K = np.flatnonzero(np.abs(z) < tau)
        if len(K) > max_kinks:
            K = K[np.argsort(np.abs(z[K]), kind="stable")[:max_kinks]]
        lam = np.array(lam, dtype=float)
        if len(K) == 0 or not self.valid:
            return lam
        x = lam[K].copy()
        lam[K] = 0.0
        T, rows = self.T, np.arange(len(K))
        A, B = self._differences(I[K], J[K], L[K])
        blk = trace_ascent.Block(None, A, rows, B, rows)
        blk.S = T.T @ self.scatter(I, J, L, lam) @ T + blk.scatter(x, self.mu)
        const = self.mu * float(lam.sum())
        first = trace_ascent.ascend([blk], x, self.mu, F, const, iterations=iterations, tol=tol)
        lam[K] = (
            first
            if tol is None
            else trace_ascent.smooth_ascend(
                [blk], x, self.mu, F, const, tol=tol, start=first, window=SOFT_WINDOW
            )
        )
        return lam

    def _differences(self, I, J, L, chunk=8192):
        """``(x_i − x_j)T`` and ``(x_i − x_l)T`` in single precision, built in chunks (no
        double-precision temporaries of the whole kink: 50,000 rows at n = 60,000)."""
        A = np.empty((len(I), self.T.shape[1]), np.float32)
        B = np.empty_like(A)
        for s in range(0, len(I), chunk):
            e = s + chunk
            A[s:e] = (self.X[I[s:e]] - self.X[J[s:e]]) @ self.T
            B[s:e] = (self.X[I[s:e]] - self.X[L[s:e]]) @ self.T
        return A, B

    def _keys(self, I, J, L):
        n = self.X.shape[0]
        return (np.asarray(I, np.int64) * n + J) * n + L

    def _warm_start(self, keys, default):
        """The last fit's multipliers where the kink holds the same triplets, else
        ``default``: consecutive stages fit nearly the same kink (a warm start)."""
        start = np.array(default, dtype=float)
        if self._warm is None:
            return start
        old_keys, old_lam = self._warm
        order = np.argsort(old_keys, kind="stable")
        pos = np.searchsorted(old_keys, keys, sorter=order)
        pos = np.minimum(pos, len(order) - 1)
        hit = old_keys[order[pos]] == keys if len(order) else np.zeros(len(keys), bool)
        start[hit] = old_lam[order[pos[hit]]]
        return start

    def _fit(self, M, A, B, S_fix, x0, ridge, start=None):
        mu = self.mu
        # aᵀMb = (Na)·(Nb) with M = NᵀN of M's rank: the K×K products cost K²(d + r), not
        # 2K²d; single precision (the fit only proposes multipliers: the bound is exact)
        N = trimmed(components_from_metric(M), 1e-10)
        A32, B32 = A.astype(np.float32), B.astype(np.float32)
        AN, BN = A32 @ N.T.astype(np.float32), B32 @ N.T.astype(np.float32)
        cross = (A32 @ B32.T) * (AN @ BN.T)  # the (b_s·a_t)(a_tᵀMb_s) term is its transpose
        H = (A32 @ A32.T) * (AN @ AN.T) + (B32 @ B32.T) * (BN @ BN.T) - cross - cross.T
        H = mu * mu * 0.5 * (H + H.T).astype(float)
        Q = S_fix @ M
        g = mu * (np.einsum("ij,ij->i", A @ Q, A) - np.einsum("ij,ij->i", B @ Q, B))
        scale = max(float(np.abs(H).max()), 1e-300)
        H, g = H / scale, g / scale
        H[np.diag_indices_from(H)] += ridge
        g = g - ridge * x0

        def fun(x):
            Hx = H @ x
            return 0.5 * float(x @ Hx) + float(g @ x), Hx + g

        x_start = x0 if start is None else start
        res = minimize(
            fun,
            np.clip(x_start, 0.0, 1.0),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, 1.0)] * len(x0),
            options={"maxiter": 400, "gtol": 1e-12, "ftol": 1e-10},
        )
        return np.clip(res.x, 0.0, 1.0)
