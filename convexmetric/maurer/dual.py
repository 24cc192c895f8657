"""The dual of eq. (5) at work: the certified bound of a dual point ``α`` and the
searches for a better one near the kinks (:mod:`.certificate`'s stages 2 and 3).

:func:`dual_bound` is valid for any ``α ∈ [0, 1/m]^m``; :func:`_kkt_fit` fits the
near-kink ``α_i`` to the stationarity condition at a known ``A``, :func:`_polish` (SLSQP)
and :func:`_penalty_polish` (a quadratic-penalty path) maximise the dual over them.
"""

from __future__ import annotations

import numpy as np

from ..problems.maurer import margins
from . import constants as const


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
    """Certified lower bound from an ``α`` in ``[0, 1/m]^m`` (:mod:`.certificate`, items 1 and 2).

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
            if not free.any() or free.sum() > const.KKT_MAX_FREE:
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


def _polish(alpha, free, U, c, b, mu, regularizer, f_upper, max_iter=const.SLSQP_ITER):
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
    n_eig = min(U.shape[1], const.TRACE_EIGS)

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
        options={"maxiter": max_iter, "ftol": const.SLSQP_FTOL},
    )
    out = base.copy()
    out[free] = np.clip(res.x, 0.0, 1.0) / m
    return dual_bound(out, U, c, b, mu, regularizer, f_upper), out


def _penalty_polish(alpha, free, U, c, b, mu, regularizer, f_upper, rounds=const.PENALTY_ROUNDS):
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
            fg,
            x,
            args=(rho,),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, 1.0)] * len(free),
            options={"maxiter": const.PENALTY_ITER},
        ).x
        out = base.copy()
        out[free] = np.clip(x, 0.0, 1.0) / m
        val = dual_bound(out, U, c, b, mu, regularizer, f_upper)
        if val > best:
            best, best_alpha = val, out
    return best, best_alpha
