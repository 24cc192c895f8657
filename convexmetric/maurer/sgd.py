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

**The step.** Table 1's constant θ (0.01 in §6) is a step for inputs of diameter at
most 1 (Assumption 2; the paper's pixel vectors are normalised to unity). Along ``u``,
an active similar pair multiplies ``a`` by ``1 − 2θ‖u‖²/γ``, so a step is stable only
while ``θ‖u‖² < γ``: on standardised data (digits: mean ``‖u‖² ≈ 105``) θ = 0.01
overshoots every such pair and the iterates blow up. The step taken is therefore
``θ / s²`` with ``s² = max(1, mean ‖u‖²)`` over the pairs: on data of the paper's scale
it is θ itself, and on larger data the iterates are exactly Table 1's on the inputs
divided by ``s`` (``V`` scaled by ``s``) for the same objective, eq. (5) being
covariant under ``x ↦ x/s``, ``A ↦ s²A``, ``λ ↦ λ/s²``. A run whose objective still
overflows (a ``learning_rate`` set too large) stops at once with status
"solver_error" and ``info["diverged_at"]``, the step at which it was seen.

The returned point is certified by the dual of eq. (5) (:mod:`.certificate`): in the
kernel case through an empirical kernel map ``K = LLᵀ`` (one eigendecomposition of
``K``), in which ``A = (Lᵀβ)(Lᵀβ)ᵀ``. SGD is a stochastic learner: the status is
"optimal" only when the certified relative gap is ≤ ``tol`` and the result carries the
dual point that proves it (``result.certificate``); otherwise "completed" (all steps
made), "user_limit" or "solver_error" (diverged).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from .._threads import one_blas_thread
from ..problems.maurer import margins
from ..progress import notify
from ..result import SolveResult, certified_gap
from . import constants as const
from .certificate import BestDual
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

    def sq_norms(self):
        """``‖x − x'‖²`` of every pair."""
        return np.einsum("ij,ij->i", self.U, self.U)

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

    def sq_norms(self):
        """``‖φ(x) − φ(x')‖²`` of every pair."""
        K, i, j = self.K, self.i, self.j
        return K[i, i] + K[j, j] - 2.0 * K[i, j]

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


@dataclass(kw_only=True)
class SGDSettings:
    """Settings of :func:`sgd` (documented defaults)."""

    n_components: int | None = None  #: rows ``d`` of ``V`` (default ``min(m, 100)``)
    #: θ, for inputs of diameter 1 (module doc: the step)
    learning_rate: float = const.LEARNING_RATE
    max_iter: int = const.SGD_MAX_ITER  #: steps (pair draws) at most
    block_size: int = const.BLOCK_SIZE  #: consecutive draws evaluated together (module doc)
    reg_every: int = const.REG_EVERY  #: steps between refreshes of the regulariser's gradient
    eval_every: int | None = None  #: steps between full objectives (default: every m)
    init_scale: float = const.INIT_SCALE  #: mean ``b = ‖a‖²`` at the start
    time_limit: float | None = None  #: seconds (status "user_limit")
    callback: object = None  #: ``callback(step, f, θ)``; True stops
    random_state: object = None  #: seeds the start and the draws
    tol: float = const.TOL_SGD  #: certified relative gap for status "optimal"
    certify: bool = True  #: compute the dual certificate at the returned point


@dataclass
class _Problem:
    """Eq. (5)'s data as the SGD sees them."""

    backend: object
    r: np.ndarray
    lam: float
    gamma: float
    gamma_neg: float | None
    regularizer: str

    def __post_init__(self):
        self.g = margins(self.r, self.gamma, self.gamma_neg)
        self.lam_m = self.lam / np.sqrt(len(self.r))
        #: s² of the module doc: θ is divided by it
        self.scale = max(1.0, float(np.mean(self.backend.sq_norms())))

    def objective(self, P):
        return _objective(self.backend, P, self.r, self.g, self.lam_m, self.regularizer)


def sgd(backend, r, lam, gamma=1.0, gamma_neg=None, regularizer="hs", **kw):
    """Table 1 (see module doc). Returns a SolveResult whose ``matrix`` is the best
    evaluated iterate's parameter ``V`` (linear, d×D) or ``β`` (kernel, n×d).

    Keyword arguments: the fields of :class:`SGDSettings`. The full objective is
    evaluated every ``eval_every`` steps (default: every ``m`` steps, at least 10 times
    per run) and the best evaluated iterate is returned.

    The block's small products and triangular solves run with one BLAS thread: on a
    block-sized solve a multi-threaded BLAS synchronises longer than it computes.
    """
    s = SGDSettings(**kw)
    prob = _Problem(backend, r, lam, gamma, gamma_neg, regularizer)
    with one_blas_thread():
        t0 = time.perf_counter()
        run = _Run(prob, s)
        with np.errstate(over="ignore", invalid="ignore"):  # divergence is reported, below
            status = run.loop()
        lower, info, cert = None, {}, None
        if s.certify and status != "solver_error":
            lower, info, cert = _certify_best(prob, run.best_P, run.best_f)
            if status == "completed" and cert is not None and info["certified_gap"] <= s.tol:
                status = "optimal"
    best = run.best_P
    return SolveResult(
        matrix=best[0] if isinstance(best, list) else best,
        objective=run.best_f,
        status=status,
        iterations=run.step,
        seconds=time.perf_counter() - t0,
        solver="sgd",
        history=run.history,
        lower_bound=lower,
        certificate=cert,
        info={
            **info,
            "n_components": run.d,
            "learning_rate": s.learning_rate,
            "step_size": run.theta,
            "data_scale": prob.scale,
            "diverged_at": run.diverged_at,
            "block_size": s.block_size,
            "reg_every": run.reg_every,
            "flag_corrections": run.flips,
        },
    )


def _certify_best(prob, P, f):
    """The dual certificate of eq. (5) at ``P``: ``(lower, info, certificate)``."""
    t_cert = time.perf_counter()
    Uf, A = prob.backend.certificate_data(P)
    a = prob.backend.all_inner(P)
    z = 1.0 - prob.r * (1.0 - np.einsum("ij,ij->i", a, a)) / prob.g
    lower, found = _certify(
        z, Uf, prob.r, prob.lam, prob.gamma, prob.gamma_neg, prob.regularizer, f_upper=f, A=A
    )
    best = BestDual(prob.regularizer)
    best.offer(lower, found["alpha"], f)
    info = {
        "certified_gap": certified_gap(f, lower),
        "certificate_seconds": time.perf_counter() - t_cert,
    }
    return lower, info, best.dual_point()


class _Run:
    """One run of Table 1: the iterate, the best evaluated iterate, the counters."""

    def __init__(self, prob, s):
        self.prob, self.s = prob, s
        self.rng = np.random.default_rng(s.random_state)
        m = len(prob.r)
        self.d = min(m, const.MAX_COMPONENTS) if s.n_components is None else s.n_components
        self.reg_every = max(s.block_size, s.reg_every // s.block_size * s.block_size)
        self.eval_every = s.eval_every or min(
            max(m, s.block_size), max(s.max_iter // const.MIN_EVALUATIONS, s.block_size)
        )
        self.P = self._start(m)
        self.best_f = prob.objective(self.P)
        self.best_P, self.history = _copy(self.P), [self.best_f]
        self.step, self.flips, self.W = 0, 0, None
        self.theta, self.diverged_at = s.learning_rate / prob.scale, None
        self.steps_k = np.arange(s.block_size, dtype=float)

    def _start(self, m):
        """A random start in M^d: every v_i a random combination of a few differences."""
        backend, k0 = self.prob.backend, min(m, const.START_TERMS)
        alpha_idx = self.rng.integers(0, m, (self.d, k0))
        P = backend.init(alpha_idx, self.rng.standard_normal((self.d, k0)))
        sample = self.rng.integers(0, m, min(m, const.START_SAMPLE))
        b0 = float(np.mean(np.sum(backend.inner(P, sample) ** 2, axis=1)))
        return backend.matmul(P, np.eye(self.d) * np.sqrt(self.s.init_scale / max(b0, 1e-300)))

    def loop(self):
        """Blocks of steps until ``max_iter``, the time limit or the callback; the status."""
        s, t0 = self.s, time.perf_counter()
        next_eval = self.eval_every
        while self.step < s.max_iter:
            self._block(min(s.block_size, s.max_iter - self.step))
            if self.step >= next_eval or self.step >= s.max_iter:
                next_eval += self.eval_every
                status = self._evaluate()
                if status is not None:
                    return status
            if s.time_limit is not None and time.perf_counter() - t0 > s.time_limit:
                return "user_limit"
        return "completed"

    def _block(self, B):
        """``B`` consecutive steps evaluated together (the module doc's triangular system)."""
        prob, P, theta = self.prob, self.P, self.theta
        backend = prob.backend
        if self.step % self.reg_every == 0 or self.W is None:
            self.W = backend.matmul(P, _reg_matrix(backend.vvt(P), prob.regularizer))
        idx = self.rng.integers(0, len(prob.r), B)
        rb, gb = prob.r[idx], prob.g[idx]
        shift = (theta * prob.lam_m * self.steps_k[:B])[:, None]
        rhs = backend.inner(P, idx) - shift * backend.inner(self.W, idx)
        Lg = theta * np.tril(backend.gram(idx), -1)
        act = rb * (1.0 - np.sum(rhs**2, axis=1)) < gb
        for _ in range(B + 1):
            c = np.where(act, 2.0 * rb / gb, 0.0)
            a = solve_triangular(Lg * c, rhs, lower=True, unit_diagonal=True, check_finite=False)
            new = rb * (1.0 - np.sum(a**2, axis=1)) < gb
            wrong = np.flatnonzero(new != act)
            if len(wrong) == 0:
                break
            self.flips += 1
            act[wrong[0] :] = new[wrong[0] :]
        backend.add(P, idx, (theta * c)[:, None] * a)
        backend.axpy(P, -theta * prob.lam_m * B, self.W)
        self.step += B

    def _evaluate(self):
        """The full objective at the iterate; a status if the run must end."""
        f = self.prob.objective(self.P)
        # far above the start's objective: blowing up, not learning
        if not np.isfinite(f) or f > const.DIVERGENCE * max(self.history[0], 1.0):
            self.diverged_at = self.step
            return "solver_error"
        self.history.append(f)
        if f < self.best_f:
            self.best_f, self.best_P = f, _copy(self.P)
        notify(self.step, f)
        cb = self.s.callback
        if cb is not None and cb(self.step, f, self.theta):
            return "user_limit"
        return None


def factor_to_metric(V):
    """``A = VᵀV`` for the linear parametrisation."""
    return V.T @ V
