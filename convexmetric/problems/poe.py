r"""Partial order embedding: LPOE, KPOE, MKPOE and their diagonal LPs.

McFee & Lanckriet, "Learning Multi-modal Similarity", JMLR 12 (2011), Algorithms 2–4
and §4.4. With comparisons :math:`\mathcal{C}` of the form "``d(i, j) + 1 ≤ d(k, l)``",

.. math::

    \min_{W^p \succeq 0,\ \xi \ge 0}\ \sum_{p=1}^m \operatorname{tr}(W^p R^p)
        + \frac{\beta}{|\mathcal{C}|} \sum_{\mathcal{C}} \xi_{ijkl}
    \quad\text{s.t.}\quad d(i, j) + 1 \le d(k, l) + \xi_{ijkl},

    d(i, j) = \sum_{p=1}^m (F^p_i - F^p_j)^\top W^p (F^p_i - F^p_j),

where ``F_i`` is the ``i``-th row of a *feature block* ``F`` and ``R`` its regulariser:

* LPOE (Alg. 2): one block ``F = X`` (``n × D``, rows are items), ``R = I`` (``tr W``);
* KPOE (Alg. 3): one block ``F = K`` (columns ``K_i`` = rows, K symmetric), ``R = K``
  (``tr(WK)``); ``K = I`` is GNMDS (§3.3);
* MKPOE (Alg. 4): one block ``(Kᵖ, Kᵖ)`` per kernel, one ``Wᵖ`` each.

The diagonal variants (§4.4) restrict ``Wᵖ = diag(wᵖ)``, ``wᵖ ≥ 0``: linear programs.
Eliminating the slack gives ``f(W) = Σ tr(WᵖRᵖ) + β/|C| Σ h(1 + d(i,j) − d(k,l))`` with
the hinge ``h(z) = max(z, 0)`` (App. B), evaluated in numpy by :func:`objective`.
Diagonal matrices are passed as the vectors of their diagonals.
"""

from __future__ import annotations

import numpy as np

from .common import cp, solve_problem


def lpoe_blocks(X):
    """The feature blocks of LPOE: ``[(X, I)]``."""
    return [(X, np.eye(X.shape[1]))]


def kernel_blocks(kernels):
    """The feature blocks of KPOE / MKPOE: ``[(Kᵖ, Kᵖ)]``."""
    return [(K, K) for K in kernels]


def pair_differences(F, C):
    """``U = F[i] − F[j]`` and ``V = F[k] − F[l]`` (one row per comparison)."""
    return F[C.i] - F[C.j], F[C.k] - F[C.l]


def hinge_args(Ws, blocks, C):
    """``z = 1 + d(i, j) − d(k, l)`` for every comparison (numpy)."""
    z = np.ones(len(C))
    for W, (F, _) in zip(Ws, blocks):
        if np.ndim(W) == 1:
            U, V = pair_differences(F, C)
            z += (U * U) @ W - (V * V) @ W
        elif F.shape[0] <= len(C):  # through the items' Gram matrix: n²D, not |C|·D²
            G = F @ W @ F.T
            g = np.diag(G)
            z += g[C.i] + g[C.j] - G[C.i, C.j] - G[C.j, C.i]
            z -= g[C.k] + g[C.l] - G[C.k, C.l] - G[C.l, C.k]
        else:
            U, V = pair_differences(F, C)
            z += np.sum((U @ W) * U, axis=1) - np.sum((V @ W) * V, axis=1)
    return z


def regulariser(Ws, blocks):
    """``Σ_p tr(Wᵖ Rᵖ)`` (diagonal ``Wᵖ`` given as vectors)."""
    total = 0.0
    for W, (_, R) in zip(Ws, blocks):
        total += float(np.diag(R) @ W) if np.ndim(W) == 1 else float(np.sum(W * R.T))
    return total


def objective(Ws, blocks, C, beta):
    """The slack-free objective ``Σ tr(WᵖRᵖ) + β/|C| Σ max(0, 1 + d(i,j) − d(k,l))``."""
    z = hinge_args(Ws, blocks, C)
    return regulariser(Ws, blocks) + beta / len(C) * float(np.maximum(z, 0.0).sum())


def build(blocks, C, beta, *, diagonal=False):
    """The SDP (or LP when ``diagonal``) over ``blocks`` as a CVXPY problem.

    Returns ``(problem, Ws, slack)`` with one variable per block: a PSD matrix, or the
    nonnegative vector of the diagonal.
    """
    m = len(C)
    slack = cp.Variable(m, nonneg=True, name="slack")
    Ws, reg, lhs = [], 0, 0  # lhs = d(k, l) − d(i, j), affine in the Wᵖ
    for p, (F, R) in enumerate(blocks):
        U, V = pair_differences(F, C)
        D = F.shape[1]
        name = f"W{p}" if len(blocks) > 1 else "W"
        if diagonal:
            W = cp.Variable(D, nonneg=True, name=name)
            reg = reg + np.diag(R) @ W
            lhs = lhs + (V * V - U * U) @ W
        else:
            W = cp.Variable((D, D), PSD=True, name=name)
            reg = reg + cp.trace(R @ W)
            # vec(v vᵀ − u uᵀ) is symmetric, so row- and column-major vec agree
            A = (V[:, :, None] * V[:, None, :] - U[:, :, None] * U[:, None, :]).reshape(m, D * D)
            lhs = lhs + A @ cp.vec(W, order="F")
        Ws.append(W)
    constraints = [lhs >= 1 - slack]
    problem = cp.Problem(cp.Minimize(reg + (beta / m) * cp.sum(slack)), constraints)
    return problem, Ws, slack


def lpoe(X, C, beta, *, diagonal=False):
    """Algorithm 2 (LPOE) over the data matrix ``X`` (``n × D``): ``(problem, [W], slack)``."""
    return build(lpoe_blocks(X), C, beta, diagonal=diagonal)


def kpoe(K, C, beta, *, diagonal=False):
    """Algorithm 3 (KPOE) over the kernel ``K`` (``n × n``): ``(problem, [W], slack)``."""
    return build(kernel_blocks([K]), C, beta, diagonal=diagonal)


def mkpoe(kernels, C, beta, *, diagonal=False):
    """Algorithm 4 (MKPOE) over ``kernels``: ``(problem, [W¹, …, Wᵐ], slack)``."""
    return build(kernel_blocks(kernels), C, beta, diagonal=diagonal)


#: POE's exact tolerances. Kernel SDPs are poorly conditioned (``KWK`` squares κ(K)):
#: CLARABEL at 1e-9 often ends "optimal_inaccurate" with the same value to 1e-9, at
#: 1e-8 it certifies "optimal". SCS keeps the tight defaults of ``problems.common``.
EXACT_OPTIONS = {"CLARABEL": {"tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8}}


def solve(blocks, C, beta, *, diagonal=False, solver="CLARABEL", **solver_opts):
    """Solve exactly with a named conic solver; the status is checked.

    With a rank-deficient kernel the optimal set is unbounded (``Wᵖ`` is free on the
    null space of ``Kᵖ``, where it changes neither term); interior-point solvers then
    tend to report "optimal_inaccurate" although the value is exact.

    Returns ``(Ws, value, status, seconds)``: full ``Wᵖ`` symmetrised and projected onto
    the PSD cone, diagonal ones as nonnegative vectors.
    """
    problem, Ws, _ = build(blocks, C, beta, diagonal=diagonal)
    opts = {**EXACT_OPTIONS.get(solver.upper(), {}), **solver_opts}
    status, seconds = solve_problem(problem, solver, **opts)
    out = []
    for W in Ws:
        Wv = np.asarray(W.value, dtype=float)
        if diagonal:
            out.append(np.maximum(Wv, 0.0))
        else:
            w, V = np.linalg.eigh(0.5 * (Wv + Wv.T))
            out.append((V * np.maximum(w, 0.0)) @ V.T)
    return out, float(problem.value), status, seconds
