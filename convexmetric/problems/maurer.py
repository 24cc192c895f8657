r"""Maurer's regularised large-margin objective over the PSD cone, eq. (5) of
Maurer, "Learning Similarity with Operator-valued Large-margin Classifiers", JMLR 2008.

.. math::

    \Omega_{\psi,\lambda}(A) = \frac1m \sum_{i=1}^m
        h_{\gamma_{r_i}}\bigl(r_i\,(1 - \langle Q_{x_i - x_i'}, A\rangle_2)\bigr)
        + \frac{\lambda\,\|A\|}{\sqrt m}, \qquad A \succeq 0,

with ``⟨Q_u, A⟩₂ = uᵀAu`` (Lemma 3 iii), the hinge ``h_γ(t) = max(0, 1 − t/γ)``
(§3.2), an inside margin ``γ₁`` for similar and an outside margin ``γ₋₁`` for
dissimilar pairs (§3.2), and ``‖A‖`` either the Hilbert–Schmidt (Frobenius) norm
``‖A‖₂`` (the paper's choice) or the trace norm ``‖T*T‖₁ = tr A`` (its variant).
``Λ(T) = Ω(TᵀT)``, so a minimiser ``A`` gives the representation ``T = A^{1/2}``.

The numpy :func:`objective` evaluates the very same function; the tests hold it
against the CVXPY optimal value at CVXPY's solution.
"""

from __future__ import annotations

import numpy as np

from .common import cp, psd_value, solve_problem

REGULARIZERS = ("hs", "trace")


def margins(r, gamma, gamma_neg=None):
    """Per-pair margin ``γ_{r_i}`` (``gamma`` for r = 1, ``gamma_neg`` for r = −1)."""
    g_neg = gamma if gamma_neg is None else gamma_neg
    return np.where(np.asarray(r) > 0, float(gamma), float(g_neg))


def quadratic_forms(A, U):
    """``s_i = u_iᵀ A u_i`` for the rows of ``U``."""
    return np.einsum("ij,ij->i", U @ A, U)


def hinge_arguments(s, r, gamma, gamma_neg=None):
    """``z_i = 1 − r_i (1 − s_i)/γ_{r_i}``; the hinge term is ``max(0, z_i)``."""
    return 1.0 - r * (1.0 - s) / margins(r, gamma, gamma_neg)


def regularizer_value(A, regularizer="hs"):
    """``‖A‖₂`` (Frobenius) or ``tr A``."""
    return float(np.linalg.norm(A)) if regularizer == "hs" else float(np.trace(A))


def objective(A, U, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs"):
    """Eq. (5) at ``A`` for differences ``U`` (rows ``x_i − x'_i``) and labels ``r``.

    >>> U = np.array([[1.0, 0.0], [0.0, 2.0]]); r = np.array([1.0, -1.0])
    >>> float(objective(np.eye(2), U, r, lam=0.0))  # h(0) = 1 and h(3) = 0
    0.5
    """
    z = hinge_arguments(quadratic_forms(A, U), r, gamma, gamma_neg)
    m = len(r)
    return float(np.maximum(z, 0.0).mean() + lam * regularizer_value(A, regularizer) / np.sqrt(m))


def empirical_risk(A, U, r):
    """``R̂(T)``: the fraction of pairs with ``r_i (1 − u_iᵀAu_i) ≤ 0`` (eq. 1 with 1_{(−∞,0]})."""
    return float(np.mean(r * (1.0 - quadratic_forms(A, U)) <= 0))


def build(U, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs"):
    """Eq. (5) as a CVXPY problem; returns ``(problem, A)``.

    The hinge is written ``pos(1 − r_i(1 − ⟨Q_{u_i}, A⟩)/γ_{r_i})`` and
    ``⟨Q_{u_i}, A⟩ = Σ_k (U A)_{ik} U_{ik}`` (affine in A, no ``m × D²`` matrix).
    """
    U = np.asarray(U, dtype=float)
    m, D = U.shape
    A = cp.Variable((D, D), PSD=True, name="A")
    s = cp.sum(cp.multiply(U @ A, U), axis=1)
    g = margins(r, gamma, gamma_neg)
    loss = cp.sum(cp.pos(1.0 - cp.multiply(r / g, 1.0 - s))) / m
    reg = cp.norm(A, "fro") if regularizer == "hs" else cp.trace(A)
    problem = cp.Problem(cp.Minimize(loss + lam * reg / np.sqrt(m)))
    return problem, A


def solve(U, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs", *, solver="CLARABEL", **opts):
    """Solve eq. (5) exactly; returns ``(A, value, status, seconds)``, ``A`` symmetrised."""
    problem, A = build(U, r, lam, gamma, gamma_neg, regularizer)
    status, seconds = solve_problem(problem, solver, **opts)
    Av = psd_value(A)
    return Av, float(problem.value), status, seconds
