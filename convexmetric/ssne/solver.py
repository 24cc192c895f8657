"""SSNE's objective, its exact gradient, and batch-stochastic block-coordinate descent.

Batra & Shakhnarovich, "Similarity Sensitive Nonlinear Embeddings" (extended abstract).
With ``φ(x) = [x; 1]`` and ``W = [w_1, …, w_M]`` of size ``(d+1)×M``:

    h_m(x) = 2 / (1 + exp(w_mᵀ φ(x))) − 1 = −tanh(w_mᵀ φ(x) / 2)      ∈ (−1, 1)
    H(x)   = H̃(x) / ‖H̃(x)‖₂,   H̃ = [h_1, …, h_M]ᵀ                  (eq. 1)
    Ŝ(x,z) = H(x)ᵀ H(z)                                               (eq. 2)
    J(W)   = λ Σ_q (s_q − Ŝ(x_{q,1}, x_{q,2}))² + Σ_m ‖w_m‖₂           (eq. 3)

The problem is **not convex**: there is no exact (CVXPY) counterpart; the gradient
is checked with ``scipy.optimize.check_grad`` instead, and the solver keeps an
objective history and supports restarts (in the estimator).

Gradient (chain rule, row-wise for every point): with ``E_q = Ŝ_q − s_q``,
``∂/∂H_i = 2λ Σ_q E_q H_j``; ``∂/∂H̃ = (I − H Hᵀ) ∂/∂H / ‖H̃‖``;
``∂h_m/∂a_m = −(1 − h_m²)/2`` with ``a = Wᵀφ``; ``∂/∂W = Φᵀ ∂/∂a``.

Convention: where ``H̃(x) = 0`` (only when every column of W is zero) ``H(x) := 0``,
so ``Ŝ = 0`` and the gradient of the loss is taken as zero there.

The penalty ``R(W) = Σ_m ‖w_m‖₂`` (whole columns, bias row included) is handled by its
proximal map, group soft-thresholding ``w_m ← w_m · max(0, 1 − t/‖w_m‖)``, so a
column that does not pay for itself becomes exactly zero and ``h_m ≡ 0``: that
embedding dimension is switched off.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..progress import notify
from ..result import SolveResult


def features(X):
    """``Φ = [X, 1]``: the feature map ``φ(x) = [x; 1]`` applied to every row."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def embed(Phi, W):
    """Return ``(h, r, H)``: unnormalised embedding, its row norms, and ``H = h / r``."""
    h = -np.tanh(0.5 * (Phi @ W))  # = 2 / (1 + exp(a)) − 1, without overflow
    r = np.sqrt(np.einsum("ij,ij->i", h, h))
    safe = np.where(r > 0, r, 1.0)
    H = h / safe[:, None]
    return h, r, H


def group_norm(W):
    """The L1,2 group norm ``Σ_m ‖w_m‖₂`` over the columns of ``W``."""
    return float(np.sqrt((W * W).sum(axis=0)).sum())


def group_soft_threshold(W, t):
    """Proximal map of ``t · Σ_m ‖w_m‖₂``: shrink every column, zero the small ones.

    >>> group_soft_threshold(np.array([[3.0, 0.3], [4.0, 0.4]]), 1.0)
    array([[2.4, 0. ],
           [3.2, 0. ]])
    """
    norms = np.sqrt((W * W).sum(axis=0))
    scale = np.maximum(0.0, 1.0 - t / np.where(norms > 0, norms, 1.0))
    return W * scale


def loss_and_grad(Phi, I, J, s, W, lam, cols=None):
    """Loss ``λ Σ_q (s_q − H_iᵀH_j)²`` and its exact gradient with respect to ``W``.

    ``cols`` restricts the returned gradient to a block of columns (block-coordinate
    descent); the loss is always the full one. Only the rows of ``Φ`` named in ``I``
    and ``J`` are embedded, so a minibatch costs ``O(|batch| · d · M)``.
    """
    Pa, Pb = Phi[I], Phi[J]
    ha, ra, Ha = embed(Pa, W)
    hb, rb, Hb = embed(Pb, W)
    E = np.einsum("ij,ij->i", Ha, Hb) - s
    loss = lam * float(E @ E)
    coef = (2.0 * lam * E)[:, None]
    if cols is None:
        cols = slice(None)
    return loss, _pull_back(Pa, coef * Hb, Ha, ha, ra, cols) + _pull_back(
        Pb, coef * Ha, Hb, hb, rb, cols
    )


def _pull_back(P, GH, H, h, r, cols):
    """``∂/∂W[:, cols]`` from ``∂/∂H`` through ``H = h/‖h‖`` and ``h = −tanh(Φ W / 2)``."""
    proj = np.einsum("ij,ij->i", GH, H)  # (I − H Hᵀ) g / r, row by row (zero where r = 0)
    inv_r = np.where(r > 0, 1.0 / np.where(r > 0, r, 1.0), 0.0)
    hc = h[:, cols]
    Ga = (GH[:, cols] - proj[:, None] * H[:, cols]) * inv_r[:, None] * (-0.5 * (1.0 - hc * hc))
    return P.T @ Ga


def objective(X, I, J, s, W, lam):
    """Eq. (3) in numpy: ``λ Σ_q (s_q − H(x_{I_q})ᵀH(x_{J_q}))² + Σ_m ‖w_m‖₂``.

    >>> X = np.array([[0.0], [1.0]]); W = np.array([[1.0], [0.0]])
    >>> round(objective(X, [0], [1], [1.0], W, 1.0), 6)  # H(0)=0 (r=0), so loss 1, R 1
    2.0
    """
    _, _, H = embed(features(X), W)
    I, J = np.asarray(I), np.asarray(J)
    E = np.einsum("ij,ij->i", H[I], H[J]) - np.asarray(s, dtype=float)
    return lam * float(E @ E) + group_norm(W)


@dataclass(kw_only=True)
class SSNESettings:
    """Settings of :func:`ssne_bcd` (documented defaults).

    The step is taken on the *mean* loss, ``η_t = learning_rate / (1 + decay·epoch)``,
    so it does not depend on λ or the number of pairs Q; on eq. (3) itself the step
    is ``η_t / (λQ)`` and the group threshold is ``η_t / (λQ)`` too.
    """

    max_iter: int = 60  #: epochs at most
    batch_size: int = 128  #: pairs per minibatch
    n_blocks: int = 1  #: column blocks visited in turn on every minibatch (1: all at once)
    learning_rate: float = 0.5
    decay: float = 0.05
    tol: float = 1e-5  #: least relative improvement of the best objective that counts
    patience: int = 5  #: epochs in a row without such an improvement end the run
    time_limit: float | None = None
    callback: object = None  #: callback(epoch, objective, step) -> True stops


def ssne_bcd(X, I, J, s, lam, W0, settings=None, *, random_state=None):
    """Minimise eq. (3) by batch-stochastic block-coordinate descent.

    Every epoch shuffles the pairs (seeded); on every minibatch the column blocks are
    visited in a seeded random order and each takes a proximal-gradient step: a
    gradient step on the minibatch loss (scaled to the whole sum) and group
    soft-thresholding of its columns. The objective is evaluated on all pairs after
    every epoch (``history``); the best iterate is returned.

    The stop (status ``"converged"``): ``patience`` epochs in a row in which the best
    objective did not improve by more than ``tol`` (relative), the rule of
    scikit-learn's ``SGDClassifier`` (``n_iter_no_change``). A rule on the change
    between consecutive epochs cannot fire here: near ``W = 0`` the embedding is
    nearly scale-free (tanh is linear there and ``H`` divides the scale out), the
    gradient of the loss grows like ``1/‖W‖`` and the epoch-to-epoch objective moves
    by a few per cent however long the run.

    Returns a :class:`~convexmetric.result.SolveResult` with ``matrix = W``.

    >>> rng = np.random.default_rng(0); X = rng.normal(size=(20, 2))
    >>> I, J = np.triu_indices(20, 1); s = np.where((X[I, 0] > 0) == (X[J, 0] > 0), 1.0, -1.0)
    >>> W0 = rng.normal(size=(3, 4))
    >>> res = ssne_bcd(X, I, J, s, 0.1, W0, SSNESettings(max_iter=10), random_state=0)
    >>> bool(res.objective < objective(X, I, J, s, W0, 0.1)), len(res.history)
    (True, 11)
    """
    st = settings or SSNESettings()
    rng = np.random.default_rng(random_state)
    t0 = time.perf_counter()
    Phi = features(X)
    I, J, s = np.asarray(I), np.asarray(J), np.asarray(s, dtype=float)
    Q, M = len(I), W0.shape[1]
    W = np.array(W0, dtype=float)
    scale = 1.0 / (lam * Q) if lam > 0 else np.inf  # eq. (3) → mean-loss units

    def full(W):
        return objective(X, I, J, s, W, lam)

    best_f = f = full(W)
    best_W, history = W.copy(), [f]
    status, quiet, epoch = "iteration_limit", 0, 0
    for epoch in range(1, st.max_iter + 1):
        eta = st.learning_rate / (1.0 + st.decay * (epoch - 1))
        order = rng.permutation(Q)
        for start in range(0, Q, st.batch_size):
            batch = order[start : start + st.batch_size]
            blocks = np.array_split(rng.permutation(M), st.n_blocks)
            for cols in blocks:
                _, g = loss_and_grad(Phi, I[batch], J[batch], s[batch], W, 1.0, cols)
                W[:, cols] = group_soft_threshold(W[:, cols] - (eta / len(batch)) * g, eta * scale)
        f_new = full(W)
        history.append(f_new)
        quiet = quiet + 1 if f_new > best_f - st.tol * max(1.0, abs(best_f)) else 0
        if f_new < best_f:
            best_f, best_W = f_new, W.copy()
        f = f_new
        notify(epoch, f)
        if st.callback is not None and st.callback(epoch, f, eta):
            status = "user_limit"
            break
        if quiet >= st.patience:  # no new best: a plateau, no optimality claimed (not convex)
            status = "converged"
            break
        if st.time_limit is not None and time.perf_counter() - t0 > st.time_limit:
            status = "user_limit"
            break
    return SolveResult(
        matrix=best_W,
        objective=best_f,
        status=status,
        iterations=epoch,
        seconds=time.perf_counter() - t0,
        solver="ssne-bcd",
        history=history,
        info={"active_columns": int(np.count_nonzero(np.any(best_W != 0, axis=0)))},
    )
