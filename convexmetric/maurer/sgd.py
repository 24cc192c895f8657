"""SGD of Table 1 of Maurer (JMLR 2008) for eq. (5), linear and kernelised.

**SGD of Table 1** in the v-parametrisation ``A = Σ_i Q_{v_i} = VᵀV`` with ``d``
rows ``v_i`` (default ``d = min(m, 100)``, the paper's acceleration). Every step
fetches a random pair ``(x, x', r)``, computes ``a = V(x − x')``, ``b = ‖a‖²`` and,
if ``r(1 − b) < γ_r``, moves ``V ← V − θ((2r/γ_r) a (x − x')ᵀ + λ'W)``, else
``V ← V − θλ'W``; ``λ' = λ/√m``; ``W`` is the regulariser's gradient
``2 ‖A‖₂⁻¹ (VVᵀ) V`` (HS) or ``2V`` (trace), refreshed every ``reg_every`` steps.

The steps are *evaluated in blocks* of ``block_size`` consecutive draws without
changing them: with ``V_s`` the iterate at the start of a block, step ``k`` of the
block sees ``V_{s+k} = V_s − kθλ'W − θ Σ_{τ<k} c_τ a_τ u_τᵀ`` (``c_τ = 2r_τ/γ`` if
the pair was active, else 0), hence

    a_k + θ Σ_{τ<k} c_τ ⟨u_k, u_τ⟩ a_τ = V_s u_k − kθλ' W u_k,

a unit lower-triangular system in the block's ``a``'s (one triangular solve). The
activity flags are guessed, the system solved, and the first flag that disagrees
with its exact ``b_k`` is corrected and the rest re-solved (each pass fixes one more
position, so this ends; flips are rare). The iterates are those of the sequential
loop up to rounding, at the cost of a few matrix products per block.

In the kernel version ``v_i = Σ_p β_{pi} φ(x_p)`` over the training points (the
differences' coefficients ``α`` of §3.3 aggregated through the pair incidence
matrix, so that ``v_i`` stays in the span ``M`` of the differences); ``Kβ`` is kept
up to date so that ``a = (Kβ)[x] − (Kβ)[x']`` costs ``O(d)`` per pair.

The returned point is certified by the dual of eq. (5) (:mod:`.maurer_dual`): in the
kernel case through an empirical kernel map ``K = LLᵀ`` (one eigendecomposition of
``K``), in which ``A = (Lᵀβ)(Lᵀβ)ᵀ``. The status is "optimal" when the certified
relative gap is ≤ ``tol``, "optimal_inaccurate" otherwise.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import solve_triangular

from .._threads import one_blas_thread
from ..problems.maurer import margins
from ..progress import notify
from ..result import SolveResult
from .certificate import certify as _certify


class LinearBackend:
    """``V`` (d×D) acting on the rows of ``U`` (pair differences)."""

    def __init__(self, U):
        self.U = U

    def init(self, alpha_idx, alpha):
        return np.einsum("ik,ikl->il", alpha, self.U[alpha_idx])  # v_i = Σ_k α_ik u_{j_ik}

    def inner(self, P, idx):
        return self.U[idx] @ P.T

    def gram(self, idx):
        Ub = self.U[idx]
        return Ub @ Ub.T

    def add(self, P, idx, C):
        P -= C.T @ self.U[idx]

    def vvt(self, P):
        return P @ P.T

    def matmul(self, P, M):  # the parameter of the vectors Σ_j M_ij v_j
        return M @ P

    def axpy(self, P, a, W):
        P += a * W

    def all_inner(self, P):
        return self.U @ P.T

    def certificate_data(self, P):
        """``(U, A)``: pair differences and ``A = VᵀV`` in feature coordinates."""
        return self.U, P.T @ P


class KernelBackend:
    """``v_i = Σ_p β_pi φ(x_p)``; the state is ``(β, Kβ)`` with ``β`` of shape (n, d)."""

    def __init__(self, K, i, j):
        self.K, self.i, self.j = K, i, j

    def init(self, alpha_idx, alpha):
        n, (d, k0) = self.K.shape[0], alpha.shape
        beta = np.zeros((n, d))
        cols = np.repeat(np.arange(d), k0)
        np.add.at(beta, (self.i[alpha_idx].ravel(), cols), alpha.ravel())
        np.subtract.at(beta, (self.j[alpha_idx].ravel(), cols), alpha.ravel())
        return [beta, self.K @ beta]

    def inner(self, P, idx):
        KB = P[1]
        return KB[self.i[idx]] - KB[self.j[idx]]

    def gram(self, idx):
        K, a, b = self.K, self.i[idx], self.j[idx]
        return K[np.ix_(a, a)] - K[np.ix_(a, b)] - K[np.ix_(b, a)] + K[np.ix_(b, b)]

    def add(self, P, idx, C):
        a, b = self.i[idx], self.j[idx]
        np.subtract.at(P[0], a, C)
        np.add.at(P[0], b, C)
        P[1] -= (self.K[:, a] - self.K[:, b]) @ C

    def vvt(self, P):
        G = P[0].T @ P[1]
        return 0.5 * (G + G.T)

    def matmul(self, P, M):
        return [P[0] @ M.T, P[1] @ M.T]

    def axpy(self, P, a, W):
        P[0] += a * W[0]
        P[1] += a * W[1]

    def all_inner(self, P):
        return P[1][self.i] - P[1][self.j]

    def certificate_data(self, P):
        """``(U, A)`` through the empirical kernel map ``K = LLᵀ``: ``A = (Lᵀβ)(Lᵀβ)ᵀ``."""
        w, E = np.linalg.eigh(0.5 * (self.K + self.K.T))
        keep = w > 1e-10 * max(float(w[-1]), 1e-300)
        L = E[:, keep] * np.sqrt(w[keep])
        C = L.T @ P[0]
        return L[self.i] - L[self.j], C @ C.T


def _reg_matrix(VV, regularizer):
    """``M`` with the regulariser's gradient ``W = M V`` (HS: 2‖A‖⁻¹VVᵀ; trace: 2I)."""
    if regularizer == "trace":
        return 2.0 * np.eye(VV.shape[0])
    nrm = float(np.linalg.norm(VV))
    return 2.0 * VV / nrm if nrm > 0 else np.zeros_like(VV)


def _objective(backend, P, r, g, lam_m, regularizer):
    a = backend.all_inner(P)
    z = 1.0 - r * (1.0 - np.einsum("ij,ij->i", a, a)) / g
    VV = backend.vvt(P)
    reg = float(np.trace(VV)) if regularizer == "trace" else float(np.linalg.norm(VV))
    return float(np.maximum(z, 0).mean() + lam_m * reg)


def _copy(P):
    return [p.copy() for p in P] if isinstance(P, list) else P.copy()


def sgd(backend, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs", **kw):
    """Table 1 (see module doc). Returns a SolveResult whose ``matrix`` is the best
    evaluated iterate's parameter ``V`` (linear, d×D) or ``β`` (kernel, n×d).

    Keyword arguments: ``n_components`` (d), ``learning_rate`` (θ, 0.01),
    ``max_iter`` (steps, 100,000), ``block_size`` (50), ``reg_every`` (500),
    ``eval_every``, ``init_scale`` (mean ``b`` at the start, 0.1), ``time_limit``,
    ``callback(step, f, θ) -> bool``, ``random_state``, ``tol`` (certified relative
    gap for status "optimal", 1e-4) and ``certify`` (compute the dual certificate
    ``lower_bound`` at the returned point, True). The full objective is
    evaluated every ``eval_every`` steps (default: every ``m`` steps, at least 10
    times per run) and the best evaluated iterate is returned.

    The block's small products and triangular solves run with one BLAS thread: a
    multi-threaded BLAS spends orders of magnitude longer synchronising on a 50×50
    solve than computing it.
    """
    with one_blas_thread():
        return _sgd(backend, r, lam, gamma, gamma_neg, regularizer, **kw)


def _sgd(
    backend,
    r,
    lam,
    gamma,
    gamma_neg,
    regularizer,
    *,
    n_components=None,
    learning_rate=0.01,
    max_iter=100_000,
    block_size=50,
    reg_every=500,
    eval_every=None,
    init_scale=0.1,
    time_limit=None,
    callback=None,
    random_state=None,
    tol=1e-4,
    certify=True,
):
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    m = len(r)
    d = min(m, 100) if n_components is None else n_components
    g = margins(r, gamma, gamma_neg)
    lam_m, theta = lam / np.sqrt(m), learning_rate
    reg_every = max(block_size, reg_every // block_size * block_size)
    eval_every = eval_every or min(max(m, block_size), max(max_iter // 10, block_size))
    # random start in M^d: every v_i a random combination of a few training differences
    k0 = min(m, 10)
    alpha_idx = rng.integers(0, m, (d, k0))
    P = backend.init(alpha_idx, rng.standard_normal((d, k0)))
    sample = rng.integers(0, m, min(m, 2000))
    b0 = float(np.mean(np.sum(backend.inner(P, sample) ** 2, axis=1)))
    P = backend.matmul(P, np.eye(d) * np.sqrt(init_scale / max(b0, 1e-300)))
    best_f = _objective(backend, P, r, g, lam_m, regularizer)
    best_P, history, status, step, flips = _copy(P), [best_f], "optimal_inaccurate", 0, 0
    next_eval, W = eval_every, None
    steps_k = np.arange(block_size, dtype=float)
    try:
        while step < max_iter:
            B = min(block_size, max_iter - step)
            if step % reg_every == 0 or W is None:
                W = backend.matmul(P, _reg_matrix(backend.vvt(P), regularizer))
            idx = rng.integers(0, m, B)
            rb, gb = r[idx], g[idx]
            rhs = backend.inner(P, idx) - (theta * lam_m * steps_k[:B])[:, None] * backend.inner(
                W, idx
            )
            Lg = theta * np.tril(backend.gram(idx), -1)
            act = rb * (1.0 - np.sum(rhs**2, axis=1)) < gb
            for _ in range(B + 1):
                c = np.where(act, 2.0 * rb / gb, 0.0)
                a = solve_triangular(
                    Lg * c, rhs, lower=True, unit_diagonal=True, check_finite=False
                )
                new = rb * (1.0 - np.sum(a**2, axis=1)) < gb
                wrong = np.flatnonzero(new != act)
                if len(wrong) == 0:
                    break
                flips += 1
                act[wrong[0] :] = new[wrong[0] :]
            backend.add(P, idx, (theta * c)[:, None] * a)
            backend.axpy(P, -theta * lam_m * B, W)
            step += B
            if step >= next_eval or step >= max_iter:
                next_eval += eval_every
                f = _objective(backend, P, r, g, lam_m, regularizer)
                if not np.isfinite(f):
                    status = "solver_error"
                    break
                history.append(f)
                if f < best_f:
                    best_f, best_P = f, _copy(P)
                notify(step, f)
                if callback is not None and callback(step, f, theta):
                    status = "user_limit"
                    break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                status = "user_limit"
                break
    except KeyboardInterrupt:
        status = "user_limit"
    out = best_P[0] if isinstance(best_P, list) else best_P
    lower, info = None, {}
    if certify and status != "solver_error":
        t_cert = time.perf_counter()
        Uf, A = backend.certificate_data(best_P)
        a = backend.all_inner(best_P)
        z = 1.0 - r * (1.0 - np.einsum("ij,ij->i", a, a)) / g
        lower, _ = _certify(z, Uf, r, lam, gamma, gamma_neg, regularizer, f_upper=best_f, A=A)
        info["certified_gap"] = (best_f - lower) / max(abs(best_f), 1e-300)
        info["certificate_seconds"] = time.perf_counter() - t_cert
        if status == "optimal_inaccurate" and info["certified_gap"] <= tol:
            status = "optimal"
    return SolveResult(
        matrix=out,
        objective=best_f,
        status=status,
        iterations=step,
        seconds=time.perf_counter() - t0,
        solver="sgd",
        history=history,
        lower_bound=lower,
        info={
            **info,
            "n_components": d,
            "learning_rate": theta,
            "block_size": block_size,
            "reg_every": reg_every,
            "flag_corrections": flips,
        },
    )


def factor_to_metric(V):
    """``A = VᵀV`` for the linear parametrisation."""
    return V.T @ V
