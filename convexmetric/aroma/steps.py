"""One round of AROW, d-AROMA, f-AROMA and OASIS, written as in the papers (dense numpy).

These are the reference updates: short, literal, O(mn) (or O(d²)) per round. The fast
stream engines of :mod:`convexmetric.aroma.stream` must reproduce them
iterate for iterate; the tests hold the two against each other, and hold the mean
steps against CVXPY's argmin of the step problem (eq. 3 with Σ fixed).

Conventions (Crammer & Chechik, ICML 2012): a triplet ``(q, p⁺, p⁻)`` enters through
``p = p⁺ − p⁻``; the margin is ``qᵀ W p`` and the hinge ``ℓ = max(0, 1 − qᵀ W p)``
(eq. 2). A round updates when ``qᵀ W p < 1`` (Alg. 1–2) or, in the mistake-driven
variants, when ``qᵀ W p ≤ 0`` (a tie counts as a mistake: with ``W₀ = 0`` the strict
``< 0`` of the paper would never fire). A round whose direction ``q pᵀ`` is zero changes
nothing and is not counted as an update. ``vec`` is row-major here, so
``qᵀ W p = ⟨vec W, q ⊗ p⟩``.

>>> import numpy as np
>>> W, S = np.zeros((2, 2)), np.ones((2, 2))
>>> W, S, updated = daroma_step(W, S, np.array([1.0, 0]), np.array([0, 1.0]), r=1.0)
>>> W
array([[0. , 0.5],
       [0. , 0. ]])
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "arow_diagonal_step",
    "arow_step",
    "daroma_step",
    "faroma_step",
    "oasis_step",
    "should_update",
]


def should_update(margin, mistake_driven=False):
    """Whether a round with this margin updates (``< 1``, or ``≤ 0`` when mistake-driven)."""
    return margin <= 0.0 if mistake_driven else margin < 1.0


def arow_step(w, Sigma, x, y, r, *, mistake_driven=False):
    """AROW with a full covariance, eq. (4): returns ``(w, Sigma, updated)``.

    ``w ← w + max(0, 1 − y xᵀw) / (xᵀΣx + r) · Σ y x`` and
    ``Σ ← Σ − Σ x xᵀ Σ / (r + xᵀΣx)``.
    """
    margin = y * float(x @ w)
    if not should_update(margin, mistake_driven) or not x.any():
        return w, Sigma, False
    Sx = Sigma @ x
    beta = 1.0 / (float(x @ Sx) + r)
    return w + (1.0 - margin) * beta * y * Sx, Sigma - beta * np.outer(Sx, Sx), True


def arow_diagonal_step(w, sigma, x, y, r, *, mistake_driven=False):
    """AROW with a diagonal covariance ``σ`` (§4.1, first display): ``(w, σ, updated)``.

    ``σ ← σ − (σ ⊙ x ⊙ x ⊙ σ) / (r + sum(x ⊙ σ ⊙ x))``: the diagonal of the full update.
    """
    margin = y * float(x @ w)
    if not should_update(margin, mistake_driven) or not x.any():
        return w, sigma, False
    sx = sigma * x
    beta = 1.0 / (float(sx @ x) + r)
    return w + (1.0 - margin) * beta * y * sx, sigma - beta * sx * sx, True


def daroma_step(W, Sigma, q, p, r, *, mistake_driven=False):
    """d-AROMA, Alg. 1, eqs. (5)–(6): ``(W, Sigma, updated)`` (new arrays).

    With ``X = q pᵀ``: ``W ← W + α Σ ⊙ X``, ``α = ℓ / (sum(X ⊙ Σ ⊙ X) + r)`` and
    ``Σ ← Σ − Σ ⊙ X ⊙ X ⊙ Σ / (sum(X ⊙ Σ ⊙ X) + r)``.
    """
    X = np.outer(q, p)
    margin = float(np.vdot(W, X))
    if not should_update(margin, mistake_driven) or not X.any():
        return W, Sigma, False
    SX = Sigma * X
    beta = 1.0 / (float(np.vdot(SX, X)) + r)
    return W + (1.0 - margin) * beta * SX, Sigma - beta * SX * SX, True


def faroma_step(W, Lam, Om, q, p, r, *, mistake_driven=False):
    """f-AROMA, Alg. 2, eqs. (12)–(14): ``(W, Lam, Om, updated)`` (new arrays).

    With ``a = Λq``, ``b = Ωp``, ``u = qᵀΛq``, ``v = pᵀΩp`` (all at ``i − 1``):
    ``W ← W + ℓ/(r + u v) · a bᵀ``, ``Ω ← Ω − u/(m r + u v) · b bᵀ`` and
    ``Λ ← Λ − v/(n r + u v) · a aᵀ``.
    """
    m, n = W.shape
    margin = float(q @ W @ p)
    if not should_update(margin, mistake_driven) or not (q.any() and p.any()):
        return W, Lam, Om, False
    a, b = Lam @ q, Om @ p
    u, v = float(q @ a), float(p @ b)
    W = W + (1.0 - margin) / (r + u * v) * np.outer(a, b)
    Om_new = Om - u / (m * r + u * v) * np.outer(b, b)
    Lam_new = Lam - v / (n * r + u * v) * np.outer(a, a)
    return W, Lam_new, Om_new, True


def oasis_step(W, q, p, C, *, mistake_driven=False):
    """OASIS (Chechik et al. 2009), passive-aggressive: ``(W, updated)``.

    ``W ← W + τ q pᵀ`` with ``τ = min(C, ℓ / ‖q pᵀ‖²_F)`` and ``‖q pᵀ‖_F = ‖q‖ ‖p‖``.
    A zero ``q`` or ``p`` gives no direction and no update.
    """
    margin = float(q @ W @ p)
    norm2 = float(q @ q) * float(p @ p)
    if not should_update(margin, mistake_driven) or norm2 == 0.0:
        return W, False
    tau = min(C, (1.0 - margin) / norm2)
    return W + tau * np.outer(q, p), True
