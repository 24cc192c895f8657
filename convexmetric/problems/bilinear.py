"""Bilinear similarity learning as convex programs (Crammer & Chechik, ICML 2012).

**Batch ranking problem** (the reference the online learners are held against):

    minimise_W   ½ ‖W‖²_F + C Σ_t max(0, 1 − q_tᵀ W (p⁺_t − p⁻_t))        (eq. 2 summed)

with ``W ∈ ℝ^{m×n}``. Each margin is linear in ``W``: ``qᵀ W p = ⟨vec W, q ⊗ p⟩``
(row-major ``vec``; the paper stacks columns and writes the same identity).

**AROW step problem** (eq. 3 with the covariance fixed at ``Σ_{i−1}``): the KL term
reduces, as a function of the mean, to ``½ (w − w_{i−1})ᵀ Σ_{i−1}⁻¹ (w − w_{i−1})``, so

    minimise_w   ½ (w − w₀)ᵀ Σ₀⁻¹ (w − w₀) + 1/(2r) · max(0, 1 − y xᵀ w)²

whose minimiser is the mean update of eq. (4). With ``x = vec(q pᵀ)``, ``y = 1`` and
``Σ₀ = diag(vec Σ)`` it is d-AROMA's W-step (eq. 5); with ``Σ₀ = Λ ⊗ Ω`` it is
f-AROMA's (eq. 12). **AROW covariance step**: over ``Σ ≻ 0``,

    ½ (log det Σ₀ − log det Σ) + ½ Tr(Σ₀⁻¹ Σ) + 1/(2r) · xᵀ Σ x

whose minimiser ``Σ⁻¹ = Σ₀⁻¹ + x xᵀ / r`` is, by Woodbury, the covariance update of eq. (4).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..bilinear import triplet_differences
from .common import cp, solve_problem

__all__ = [
    "arow_covariance_objective",
    "arow_step_objective",
    "build_arow_covariance_step",
    "build_arow_step",
    "build_batch",
    "design_matrix",
    "objective",
    "solve_batch",
]


def design_matrix(Q, P, triplets):
    """Rows ``vec(q_t (p⁺_t − p⁻_t)ᵀ) = q_t ⊗ (p⁺_t − p⁻_t)`` (T × mn), so margins = A vec W."""
    Qt, Dt = triplet_differences(Q, P, triplets)
    Qt, Dt = sp.csr_matrix(Qt), sp.csr_matrix(Dt)
    rows = [sp.kron(Qt[t], Dt[t], format="csr") for t in range(Qt.shape[0])]
    return sp.vstack(rows, format="csr") if rows else sp.csr_matrix((0, Qt.shape[1] * Dt.shape[1]))


def objective(W, Q, P, triplets, C):
    """``½ ‖W‖²_F + C Σ_t max(0, 1 − q_tᵀ W (p⁺_t − p⁻_t))`` in numpy."""
    W = np.asarray(W, dtype=float)
    margins = design_matrix(Q, P, triplets) @ W.ravel()
    return 0.5 * float(np.sum(W * W)) + C * float(np.maximum(0.0, 1.0 - margins).sum())


def build_batch(Q, P, triplets, C):
    """The batch ranking problem as CVXPY; returns ``(problem, W)``."""
    m, n = Q.shape[1], P.shape[1]
    A = design_matrix(Q, P, triplets)
    W = cp.Variable((m, n), name="W")
    slack = cp.pos(1 - A @ cp.vec(W, order="C"))
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C * cp.sum(slack)))
    return problem, W


def solve_batch(Q, P, triplets, C, solver="CLARABEL"):
    """Solve :func:`build_batch` with a named solver; returns ``(W, value, status, seconds)``."""
    problem, W = build_batch(Q, P, triplets, C)
    status, seconds = solve_problem(problem, solver)
    return W.value, float(problem.value), status, seconds


def arow_step_objective(w, w0, Sigma0, x, y, r):
    """The step objective of :func:`build_arow_step` in numpy."""
    d = np.asarray(w) - w0
    return 0.5 * float(d @ np.linalg.solve(Sigma0, d)) + max(0.0, 1 - y * float(x @ w)) ** 2 / (
        2 * r
    )


def build_arow_step(w0, Sigma0, x, y, r):
    """AROW's mean step (eq. 3 with Σ fixed) as CVXPY; returns ``(problem, w)``.

    ``Sigma0`` must be symmetric positive definite (a vector is read as a diagonal).
    """
    Sigma0 = np.diag(Sigma0) if np.ndim(Sigma0) == 1 else np.asarray(Sigma0, dtype=float)
    P = np.linalg.inv(Sigma0)
    P = 0.5 * (P + P.T)
    w = cp.Variable(len(w0), name="w")
    loss = cp.square(cp.pos(1 - y * (x @ w)))
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(w - w0, cp.psd_wrap(P)) + loss / (2 * r)))
    return problem, w


def arow_covariance_objective(Sigma, Sigma0, x, r):
    """The covariance step objective of :func:`build_arow_covariance_step` in numpy."""
    ld0, ld = np.linalg.slogdet(Sigma0)[1], np.linalg.slogdet(Sigma)[1]
    tr = float(np.trace(np.linalg.solve(Sigma0, Sigma)))
    return 0.5 * (ld0 - ld) + 0.5 * tr + float(x @ Sigma @ x) / (2 * r)


def build_arow_covariance_step(Sigma0, x, r):
    """AROW's covariance step (the Σ-part of eq. 3) as CVXPY; returns ``(problem, Sigma)``."""
    Sigma0 = np.asarray(Sigma0, dtype=float)
    P = np.linalg.inv(Sigma0)
    P = 0.5 * (P + P.T)
    S = cp.Variable(Sigma0.shape, symmetric=True, name="Sigma")
    ld0 = np.linalg.slogdet(Sigma0)[1]
    f = 0.5 * (ld0 - cp.log_det(S)) + 0.5 * cp.trace(P @ S) + (x @ S @ x) / (2 * r)
    return cp.Problem(cp.Minimize(f)), S
