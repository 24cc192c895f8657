"""Large-scale multi-metric LMNN (§5.2): one PSD block per cluster, active-list subgradient.

The variable is a list ``[M^0, …, M^{c−1}]`` projected block by block onto the PSD
cone. As in App. A the oracle keeps an *active list* of triplets found near violation
(``margin``) at full checks (every ``check_every`` calls and at apparent convergence);
between checks only the list is evaluated. The subgradient of block ``g`` is

    G_g = (1 − μ) Σ_{g(j)=g} C_ij + μ Σ_{active, g(j)=g} C_ij − μ Σ_{active, g(l)=g} C_il,

one sparse product for all blocks. Phase 1 (projected subgradient from
the single-metric solution, the paper's initialisation; short by default) is followed by
L-BFGS on the factors ``M^g = L_gᵀL_g`` at a fixed σ with dual recentring
(:func:`.lmnn_multi_refine.refine_factors`, in per-block whitened coordinates) until the
certified gap is within ``5·tol``, then by the convex polish of :mod:`.lmnn_multi_polish`
(FISTA on the ``M^g`` at a large fixed σ, a proximal method of multipliers) until it is
within ``tol``. ``refine="fista"`` runs the first-order stage of :mod:`.smoothing` instead.

Where the time goes (digits standard split, 10 blocks of 64 × 64, about 31,000 listed
triplets on 15,000 distinct pairs): block ``g`` touches only the points of its pairs
(about 230 of 1,257), so distances are ``Y = U_g M^g`` over those rows followed by
``(Y_a − Y_b)·(u_a − u_b)`` per pair (2.3k × 64 × 64 per evaluation instead of
15k × 64 × 64), and the gradients ``U_gᵀ(deg U_g − W U_g)`` likewise. The first factor
stages leave the phase-1 list behind (objectives of 10⁴–10⁵ on the true problem and lists
of 10⁵–10⁶ terms at the next check) unless they search all triplets at every evaluation.
The factor stages close the certified gap faster than the polish (tol 1e-4 on digits:
1,420 evaluations handing over at 5e-4, 5,578 at 2e-2); the polish finishes the last
factor of a few.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..cones import ProductCone, PSDCone
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.subgradient import SubgradientSettings, projected_subgradient
from ..problems import lmnn_multi as PM
from ..result import SolveResult
from .multi_polish import RangeCertificate, polish
from .multi_refine import WhitenedOracle, refine_factors


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
        # a pair's metric is that of its second point's cluster; block g touches only the
        # points of its pairs (digits: about 230 of 1,257), so distances and gradients are
        # products with those rows: U_g = X[rows_g], local pair ends a_g, b_g
        blk = self.g[self.pb]
        self.prow, pts, a, b, off = [], [], [], [], [0]
        for g in range(self.c):
            r = np.flatnonzero(blk == g)
            p, loc = np.unique(np.concatenate([self.pa[r], self.pb[r]]), return_inverse=True)
            self.prow.append(r)
            pts.append(p)
            a.append(loc[: len(r)] + off[-1])
            b.append(loc[len(r) :] + off[-1])
            off.append(off[-1] + len(p))
        # stacked block rows; pair p of block g joins rows a, b of U (in order of prow)
        self.off, self.perm = off, np.concatenate(self.prow)
        self.U = self.X[np.concatenate(pts)]
        self.a, self.b = np.concatenate(a), np.concatenate(b)
        self.Dp = self.U[self.a] - self.U[self.b]
        # the symmetrised pair-weight matrix's entries (a, b) and (b, a), for _grad
        self.sym = (np.concatenate([self.a, self.b]), np.concatenate([self.b, self.a]))

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
        Y = np.empty_like(self.U)
        for g, (s, e) in enumerate(zip(self.off, self.off[1:])):
            Y[s:e] = self.U[s:e] @ Ms[g]
        # (u_a − u_b)ᵀM(u_a − u_b) = (Y_a − Y_b)·(u_a − u_b), Y = U M
        d = np.empty(len(self.pa))
        d[self.perm] = np.einsum("ij,ij->i", Y[self.a] - Y[self.b], self.Dp)
        return 1.0 + d[self.inv_j] - d[self.inv_l]

    def _grad(self, w):
        """Per-block gradient for hinge weights ``w`` over the active list.

        Block ``g`` is ``Σ_pairs ω_p (u_a − u_b)(u_a − u_b)ᵀ = U_gᵀ(deg_g U_g − W_g U_g)``
        with ``W_g`` the symmetrised pair weights on the block's own rows: all blocks
        through one block-diagonal sparse product, then one small GEMM per block.
        """
        P, n_rows = len(self.pa), len(self.U)
        pw = np.bincount(self.inv_j, w, P) - np.bincount(self.inv_l, w, P)
        ww = pw[self.perm]
        rows, cols = self.sym
        vals = np.concatenate([ww, ww])
        W = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_rows))
        R = np.bincount(rows, vals, n_rows)[:, None] * self.U - W @ self.U
        out = []
        for g, (s, e) in enumerate(zip(self.off, self.off[1:])):
            H = self.U[s:e].T @ R[s:e]
            out.append((1 - self.mu) * self.P[g] + self.mu * 0.5 * (H + H.T))
        return out

    def _pull(self, Ms):
        return (1 - self.mu) * float(sum(np.sum(self.P[g] * Ms[g]) for g in range(self.c)))

    def __call__(self, Ms):
        z = self._z(Ms)
        act = z > 0
        return self._pull(Ms) + self.mu * float(z[act].sum()), self._grad(act.astype(float))

    def smooth(self, Ms, sigma, grad=True):
        """Smoothed objective: each hinge becomes ``max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²``.

        ``grad=False``: the value only (a line search's trial point)."""
        z = self._z(Ms)
        lam = np.clip(self.lam_bar + z / sigma, 0.0, 1.0)
        phi = lam * z - 0.5 * sigma * (lam - self.lam_bar) ** 2
        f = self._pull(Ms) + self.mu * float(phi.sum())
        return (f, self._grad(lam)) if grad else f

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
    at a certified gap of ``switch_gap`` (default ``min(0.02, 5·tol)``);
    :func:`.lmnn_multi_polish.polish` (convex, in the ``M^g``, fixed σ = ``polish_sigma``)
    continues until the certified relative gap is within ``tol``; the status is
    "optimal" only then.
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
            # the factor stages close the gap faster than the polish (digits, tol 1e-4:
            # 1,420 evaluations when they hand over at 5e-4, 5,578 at 2e-2)
            kw = {"switch_gap": min(0.02, 5 * tol), "exact_stages": 3}
            kw.update(refine_settings or {})
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
