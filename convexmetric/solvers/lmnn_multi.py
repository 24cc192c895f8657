"""Large-scale multi-metric LMNN (§5.2): one PSD block per cluster, active-list subgradient.

The variable is a list ``[M^0, …, M^{c−1}]`` projected block by block onto the PSD
cone. As in App. A the oracle keeps an *active list* of triplets found near violation
(``margin``) at full checks (every ``check_every`` calls and at apparent convergence);
between checks only the list is evaluated. The subgradient of block ``g`` is

    G_g = (1 − μ) Σ_{g(j)=g} C_ij + μ Σ_{active, g(j)=g} C_ij − μ Σ_{active, g(l)=g} C_il,

one sparse product ``Xᵀ(D − S)X`` for all blocks. Phase 1 (projected subgradient from
the single-metric solution, the paper's initialisation; short by default) is followed by
L-BFGS on the factors ``M^g = L_gᵀL_g`` at a fixed σ with dual recentring
(:func:`.lmnn_multi_refine.refine_factors`, in per-block whitened coordinates) until the
certified gap is about 2%, then by the convex polish of :mod:`.lmnn_multi_polish` (FISTA
on the ``M^g`` at a large fixed σ, a proximal method of multipliers) until it is within
``tol``. ``refine="fista"`` runs the first-order stage of :mod:`.smoothing` instead.

Where the time goes (digits standard split, 10 blocks of 64 × 64, about 31,000 listed
triplets on 15,000 distinct pairs): an evaluation is about two thirds distances
(``(D M) ∘ D`` over the pairs) and one third the block gradients; the first factor stages
leave the phase-1 list behind (objectives of 10⁴–10⁵ on the true problem and lists of
10⁵–10⁶ terms at the next check) unless they search all triplets at every evaluation.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..cones import ProductCone, PSDCone
from ..problems import lmnn_multi as PM
from ..result import SolveResult
from .lmnn_multi_polish import RangeCertificate, polish
from .lmnn_multi_refine import WhitenedOracle, refine_factors
from .smoothing import SmoothingSettings, smoothed_descent
from .subgradient import SubgradientSettings, projected_subgradient


class MultiMetricOracle:
    """Objective, subgradient and smoothed gradient of the multi-metric objective."""

    def __init__(self, X, y, targets, mu, clusters, n_clusters, *, check_every=10, margin=0.3,
                 prune=True):  # fmt: skip
        self.X, self.y, self.T, self.mu = X, y, targets, mu
        self.g, self.c = clusters, n_clusters
        self.n = X.shape[0]
        self.P = PM.pull_matrices(X, targets, clusters, n_clusters)
        self.check_every, self.margin, self.prune = check_every, margin, prune
        self._null = self._cert = None
        self.keys = np.empty(0, np.int64)
        self.lam_bar = np.zeros(0)  # dual prox centre of the smoothed stage, aligned with keys
        self._set(self.keys)
        self.calls, self.full_checks, self.version = 0, 0, 0

    def _set(self, keys):
        n = self.n
        lam = np.zeros(len(keys))
        pos = np.minimum(np.searchsorted(keys, self.keys), max(len(keys) - 1, 0))
        kept = (keys[pos] == self.keys) if len(keys) else np.zeros(len(self.keys), bool)
        lam[pos[kept]] = self.lam_bar[kept]  # the centre of terms that stay listed
        self.keys, self.lam_bar = keys, lam
        self.I, self.J, self.L = keys // (n * n), (keys // n) % n, keys % n
        # distances are needed per distinct pair (i, j) / (i, l), far fewer than triplets
        # (each impostor pair serves up to k targets, each target pair many impostors)
        m = len(keys)
        pairs, inv = np.unique(np.concatenate([self.I * n + self.J, self.I * n + self.L]),
                               return_inverse=True)  # fmt: skip
        self.inv_j, self.inv_l = inv[:m], inv[m:]
        self.pa, self.pb = pairs // n, pairs % n
        blk = self.g[self.pb]  # a pair's metric is that of its second point's cluster
        self.prow = [np.flatnonzero(blk == g) for g in range(self.c)]
        D = self.X[self.pa] - self.X[self.pb]
        self.PD = [D[r] for r in self.prow]

    def full_check(self, Ms, margin=None):
        """Search all triplets; merge near-violations; True if no new *violated* ones."""
        m = self.margin if margin is None else margin
        I, J, L, H = PM.hinge_terms(Ms, self.X, self.T, self.y, self.g, margin=m)
        self.full_checks += 1
        keys = (I * self.n + J) * self.n + L
        new = ~np.isin(keys, self.keys)
        if self.prune:  # keep the found terms and those the dual centre still weighs
            merged = np.union1d(keys, self.keys[self.lam_bar > 0])
            if len(merged) != len(self.keys) or new.any():
                self._set(merged)
        elif new.any():
            self._set(np.union1d(self.keys, keys[new]))
        grew = bool(np.any(new & (H > 0)))
        self.version += grew
        return not grew

    def check(self, Ms):
        return self.full_check(Ms, margin=self.margin)

    def _z(self, Ms):
        if self.calls % self.check_every == 0:
            self.full_check(Ms)
        self.calls += 1
        d = np.zeros(len(self.pa))
        for g in range(self.c):  # (D M) ∘ D summed by rows: one GEMM, not a 3-operand einsum
            D = self.PD[g]
            d[self.prow[g]] = ((D @ Ms[g]) * D).sum(1)
        return 1.0 + d[self.inv_j] - d[self.inv_l]

    def _grad(self, w):
        """Per-block gradient for hinge weights ``w`` over the active list.

        All blocks through one sparse product: with ``W`` the ``(c·n) × n`` matrix of
        the symmetrised pair weights of every block stacked by rows and ``deg`` its row
        sums, block ``g`` is ``Xᵀ(deg_g X − (WX)_g)`` (one batched GEMM); building one
        sparse matrix per block cost more than the products (digits: 10 blocks).
        """
        P, (n, d), c = len(self.pa), self.X.shape, self.c
        pw = np.bincount(self.inv_j, w, P) - np.bincount(self.inv_l, w, P)
        nz = np.flatnonzero(pw)
        a, b, blk, ww = self.pa[nz], self.pb[nz], self.g[self.pb[nz]], pw[nz]
        rows = np.concatenate([blk * n + a, blk * n + b])
        vals = np.concatenate([ww, ww])
        W = sp.csr_matrix((vals, (rows, np.concatenate([b, a]))), shape=(c * n, n))
        deg = np.bincount(rows, vals, c * n).reshape(c, n, 1)
        R = deg * self.X[None] - (W @ self.X).reshape(c, n, d)
        H = np.matmul(self.X.T[None], R)
        return [(1 - self.mu) * self.P[g] + self.mu * 0.5 * (H[g] + H[g].T) for g in range(c)]

    def _pull(self, Ms):
        return (1 - self.mu) * float(sum(np.sum(self.P[g] * Ms[g]) for g in range(self.c)))

    def __call__(self, Ms):
        z = self._z(Ms)
        act = z > 0
        return self._pull(Ms) + self.mu * float(z[act].sum()), self._grad(act.astype(float))

    def smooth(self, Ms, sigma):
        """Smoothed objective: each hinge becomes ``max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²``."""
        z = self._z(Ms)
        lam = np.clip(self.lam_bar + z / sigma, 0.0, 1.0)
        phi = lam * z - 0.5 * sigma * (lam - self.lam_bar) ** 2
        return self._pull(Ms) + self.mu * float(phi.sum()), self._grad(lam)

    def recenter(self, Ms, sigma):
        """Move the prox centre to the current dual estimate (augmented-Lagrangian step)."""
        z = self._z(Ms)
        self.lam_bar = np.clip(self.lam_bar + z / sigma, 0.0, 1.0)

    def objective(self, Ms):
        return PM.objective(Ms, self.X, self.T, self.y, self.g, self.mu)

    def lower_bound(self, Ms, sigma):
        """A certified lower bound on the optimum from the dual estimate at ``Ms``.

        Lagrange duality with ``λ ∈ [0, 1]`` per triplet (0 off the list): the dual
        function is ``μ Σ λ`` when every block
        ``S_g(λ) = (1 − μ)P_g + μ Σ λ_t (C_ij[g(j)=g] − C_il[g(l)=g])`` is PSD (``S_g(λ)``
        is exactly :meth:`_grad`'s block) and ``−∞`` otherwise.

        *Range restriction.* The target differences of block ``g`` span ``range(P_g)``,
        so on ``null(P_g)`` the block is ``−μ Σ λ_t C_il`` (impostors ``l`` of cluster
        ``g``), which is PSD only if every such triplet with an impostor difference
        outside ``range(P_g)`` has ``λ_t = 0``. The optimal multipliers satisfy this
        (such a hinge can be switched off for free, by growing ``M^g`` along the
        null space, where the pull term does not see it), so the estimate is
        projected onto it: those ``λ_t`` are set to 0. Without it one such triplet
        makes every ``θ > 0`` infeasible (digits: constant pixels within a class; the
        bound was 1.2e-5 against an optimum of 211). The remaining ``λ`` is repaired
        exactly by :class:`.lmnn_multi_polish.RangeCertificate`
        (scaling by ``1/(1 − ν)``, ``ν`` the smallest generalised eigenvalue of
        ``(S_g(λ), (1 − μ)P_g)`` over the blocks), so the bound is valid for any estimate.
        """
        if self._cert is None:
            self._cert = RangeCertificate(self)
        return self._cert.bound(self._cert.multipliers(Ms, sigma))[0]

    def _outside_range(self, rtol=1e-10, atol=1e-12):
        """Listed triplets whose impostor difference leaves ``range(P_{g(l)})``.

        Cached for the current list (``_set`` replaces ``keys``)."""
        cached = getattr(self, "_out_cache", None)
        if cached is not None and cached[0] is self.keys:
            return cached[1].copy()
        if self._null is None:
            self._null = []
            for P in self.P:
                w, V = np.linalg.eigh(0.5 * (P + P.T))
                self._null.append(V[:, w <= rtol * max(float(w[-1]), 1e-300)])
        out = np.zeros(len(self.keys), bool)
        gl = self.g[self.L]
        for g, N in enumerate(self._null):
            rows = np.flatnonzero(gl == g)
            if N.shape[1] == 0 or len(rows) == 0:
                continue
            U = self.X[self.I[rows]] - self.X[self.L[rows]]
            out[rows] = ((U @ N) ** 2).sum(1) > atol * np.maximum((U**2).sum(1), 1e-300)
        self._out_cache = (self.keys, out.copy())
        return out


def solve(
    X,
    y,
    targets,
    mu,
    clusters,
    n_clusters=None,
    *,
    M0=None,
    max_iter=20,
    refine=True,
    time_limit=None,
    refine_settings=None,
    precondition=True,
    tol=1e-4,
    polish_sigma=1.0,
):
    """Minimise the multi-metric objective; return a :class:`SolveResult`.

    ``M0`` (one matrix, or one per cluster) is the starting point; the paper starts
    every block at the single-metric LMNN solution. ``result.matrix`` is ``(c, d, d)``.
    ``max_iter``: projected subgradient iterations before the refinement (on digits 300
    of them lowered the objective from 1726 to 1707 of an optimum near 210, at the cost
    of 300 evaluations; 20 by default).
    ``refine``: True (L-BFGS in the factors, :func:`refine_factors`; ``refine_settings``
    its keyword arguments), ``"fista"`` (``refine_settings`` a ``SmoothingSettings``), or
    False. ``precondition=True`` solves in per-block whitened coordinates
    (:class:`WhitenedOracle`, an exact change of variables); ``M0``, the result and the
    lower bound are in the original coordinates either way. The L-BFGS refinement stops
    at a certified gap of ``switch_gap`` (default 0.02); :func:`.lmnn_multi_polish.polish`
    (convex, in the ``M^g``, fixed σ = ``polish_sigma``) continues until the certified
    relative gap is within ``tol``; the status is "optimal" only then.
    """
    t0 = time.perf_counter()
    c = int(clusters.max()) + 1 if n_clusters is None else n_clusters
    d = X.shape[1]
    M0 = np.eye(d) if M0 is None else np.asarray(M0, dtype=float)
    x0 = [M0.copy() for _ in range(c)] if M0.ndim == 2 else [m.copy() for m in M0]
    base = MultiMetricOracle(X, y, targets, mu, clusters, c)
    oracle = WhitenedOracle(base) if precondition else base
    if precondition:
        x0 = oracle.from_original(x0)
    cone = ProductCone([PSDCone() for _ in range(c)])
    ps = SubgradientSettings(max_iter=max_iter, rtol=1e-5, patience=30, step_scale=0.1)
    ps.time_limit = time_limit
    res = projected_subgradient(oracle, x0, cone, ps)
    best, best_f, status, lower = res.matrices, res.objective, res.status, None
    history, iterations, extra = list(res.history), res.iterations, {}
    remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)
    if refine and status != "user_limit" and (remaining is None or remaining > 0):
        if refine == "fista":
            rs = refine_settings or SmoothingSettings(max_iter=20000, stage_iter=2000)
            rs.time_limit = remaining
            res2 = smoothed_descent(oracle, res.matrices, cone, rs)
        else:
            kw = dict({"switch_gap": 0.02, "exact_stages": 3}, **(refine_settings or {}))
            kw["time_limit"] = remaining
            res2 = refine_factors(oracle, res.matrices, **kw)
            if res2.status != "user_limit":
                left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                res3 = polish(oracle, res2.matrices, best_f=res2.objective,
                              lower=res2.lower_bound, sigma=polish_sigma, tol=tol,
                              time_limit=left)  # fmt: skip
                extra.update(res3.info, polish_evaluations=res3.iterations)
                res2.status, res2.lower_bound = res3.status, res3.lower_bound
                res2.history += res3.history
                res2.iterations += res3.iterations
                if res3.matrices is not None and res3.objective < res2.objective:
                    res2.matrices, res2.objective = res3.matrices, res3.objective
        history += res2.history
        iterations += res2.iterations
        status, lower = res2.status, res2.lower_bound
        if res2.objective < best_f:
            best, best_f = res2.matrices, res2.objective
    if precondition:
        best = oracle.to_original(best)
    if status != "user_limit":  # every path: "optimal" only with a certified gap ≤ tol
        gap = np.inf if lower is None else max(best_f - lower, 0.0) / max(abs(best_f), 1e-300)
        status = "optimal" if gap <= tol else "optimal_inaccurate"
    return SolveResult(
        matrix=np.stack(best),
        matrices=list(best),
        objective=float(best_f),
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        solver="multi-subgradient",
        history=history,
        lower_bound=lower,
        info={
            "active_list": len(base.keys),
            "full_checks": base.full_checks,
            "preconditioned": bool(precondition),
            **extra,
        },
    )
