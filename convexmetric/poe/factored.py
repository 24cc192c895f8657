r"""Full-matrix POE at scale: low-rank factors, smoothed L-BFGS, certified by the SDP dual.

In whitened coordinates (:func:`.poe_certify.whitening`; for kernels the empirical
kernel map ``Φ``) every block has ``R = I`` and features ``F̂ᵖ`` (``n × rᵖ``). With
``Ŵᵖ = LᵖLᵖᵀ`` (``Lᵖ`` is ``rᵖ × kᵖ``) the Huber-smoothed objective

.. math::

    φ_σ(L) = \sum_p \|L^p\|_F^2 + s \sum_c h_σ(z_c), \qquad
    z_c = 1 + \sum_p \|Z^p_i - Z^p_j\|^2 - \|Z^p_k - Z^p_l\|^2,\quad Z^p = \hat F^p L^p,

has the gradient ``2 Sᵖ(λ) Lᵖ = 2Lᵖ + 2s F̂ᵖᵀ L(w) Zᵖ`` with ``w = clip(z/σ, 0, 1)``
and ``L(w)`` the sparse signed Laplacian: one evaluation costs ``O(n r k)`` (no
``n × n`` eigendecomposition). L-BFGS minimises ``φ_σ`` for ``σ = σ₀, σ₀/10, …``.

The factorisation is not convex: a stationary ``L`` with ``Sᵖ(λ)Lᵖ = 0`` is optimal iff
every ``Sᵖ(λ) ⪰ 0``. After each stage the certificate of :mod:`.poe_certify` is computed
from the full eigendecomposition of the ``rᵖ × rᵖ`` matrices ``Sᵖ`` (once per stage,
not per step). If it does not close and some ``Sᵖ`` has a negative eigenvalue, its
eigenvectors ``v`` are descent directions ``W + t vvᵀ`` that stay PSD: they are appended
as new columns of ``Lᵖ`` (scaled by a line search on ``φ_σ``) and the stage is repeated
(the rank-increase step of low-rank SDP methods), so the iteration cannot stall at a
non-optimal factor point. Status "optimal" only when the certified relative gap is
within ``tol``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from scipy.optimize import minimize

from ..optim.linesearch import golden_section
from ..progress import notify
from ..result import SolveResult
from .certificate import Certificate

logger = logging.getLogger("convexmetric.poe")


class _Factored:
    """Smoothed objective of the factors, stacked into one vector."""

    def __init__(self, oracle, feats):
        self.o, self.feats = oracle, feats
        self.shapes = []

    def split(self, x):
        out, at = [], 0
        for r, k in self.shapes:
            out.append(x[at : at + r * k].reshape(r, k))
            at += r * k
        return out

    def z(self, Ls):
        o, d = self.o, np.zeros(self.o.P)
        for Fh, L in zip(self.feats, Ls):
            Z = Fh @ L
            D = Z[o.pa] - Z[o.pb]
            d += np.einsum("ij,ij->i", D, D)
        return 1.0 + d[o.left] - d[o.right]

    def objective(self, Ls, z=None):
        z = self.z(Ls) if z is None else z
        reg = sum(float(np.vdot(L, L)) for L in Ls)
        return reg + self.o.scale * float(np.maximum(z, 0.0).sum())

    def smooth(self, x, sigma, grad=True):
        """``φ_σ`` and its gradient, the hinge smoothed around the prox centre ``ū``:
        ``max_{u ∈ [0, 1]} uz − σ(u − ū)²/2``, maximised at ``u = clip(ū + z/σ, 0, 1)``."""
        Ls = self.split(x)
        z = self.z(Ls)
        w = np.clip(self.center + z / sigma, 0.0, 1.0)
        hub = w * z - 0.5 * sigma * (w - self.center) ** 2
        f = sum(float(np.vdot(L, L)) for L in Ls) + self.o.scale * float(hub.sum())
        if not grad:
            return f
        Lap = self.o.laplacian(w)
        g = [2 * L + 2 * self.o.scale * (Fh.T @ (Lap @ (Fh @ L))) for Fh, L in zip(self.feats, Ls)]
        return f, np.concatenate([gi.ravel() for gi in g])


def _line_search(fun, t_max, steps=25):
    """Golden-section minimum of a unimodal ``fun`` on ``[0, t_max]`` (``0`` if no decrease)."""
    t, ft = golden_section(fun, 0.0, t_max, steps)
    return (t, ft) if ft < fun(0.0) else (0.0, None)


def solve_factored(
    blocks,
    oracle,
    *,
    rank=8,
    tol=1e-4,
    sigma0=0.1,
    shrink=10.0,
    sigma_min=1e-2,
    mu_tol=1e-9,
    ftol=1e-15,
    stage_iter=500,
    max_stages=30,
    max_new=8,
    time_limit=None,
    callback=None,
    random_state=0,
):
    """Solve full-matrix POE over ``blocks`` (each ``(F, R)``, ``R ⪰ 0``); a SolveResult.

    Parameters
    ----------
    blocks : list of (F, R)
    oracle : :class:`.poe.POEOracle` over ``blocks`` (its pair structure and ``s``).
    rank : int
        Initial number of columns of each factor (grown by the escape steps).
    tol : float
        Stop when the certified relative gap is at most ``tol``.
    sigma0, shrink, sigma_min : float
        Smoothing widths ``σ₀, σ₀/shrink, …`` down to ``sigma_min``; between stages the
        prox centre ``ū`` moves to the stage's multipliers (an augmented Lagrangian /
        proximal point on the dual), so the multipliers converge at a fixed ``σ``.
    mu_tol : float
        Escape along negative curvature when ``λ_min(Sᵖ) < −mu_tol`` and the certificate's
        repair term ``F·|λ_min|`` is at least a quarter of the open gap (otherwise the gap
        is the multipliers', and the next stage moves them).
    ftol : float
        L-BFGS-B's relative-reduction tolerance within a stage.
    stage_iter, max_stages : int
        L-BFGS iterations per stage and stages (escapes included) at most.
    max_new : int
        Negative-curvature directions appended per block and escape, at most.
    time_limit : float, optional
        Seconds; the best point so far is returned with status ``"user_limit"``.
    callback : callable, optional
        ``callback(iteration, objective, sigma)`` after each L-BFGS iteration; a true
        return value stops the run.
    random_state : int
        Seed of the small random initial factors (``L = 0`` is a saddle).

    Returns
    -------
    SolveResult
        ``matrices`` are ``Wᵖ = TᵖŴᵖTᵖᵀ`` in the coordinates of ``blocks``;
        ``info`` holds ``relative_gap``, ``ranks``, ``escapes`` and ``sigma``.
    """
    t0 = time.perf_counter()
    cert = Certificate(blocks, oracle)
    if not cert.valid:
        raise ValueError(
            "method='factored' needs every block's features in the range of its regulariser "
            "R (true for LPOE with R = I and for kernel blocks); use method='subgradient'."
        )
    Ts = cert.T
    prob = _Factored(oracle, cert.feats)
    rng = np.random.default_rng(random_state)
    Ls = []
    for Fh in cert.feats:
        r = Fh.shape[1]
        k = min(rank, r)
        Ls.append(rng.standard_normal((r, k)) * (1e-2 / np.sqrt(r)))
    prob.shapes = [L.shape for L in Ls]
    x = np.concatenate([L.ravel() for L in Ls])
    prob.center = np.zeros(len(oracle.left))
    best_Ls, best_f = Ls, prob.objective(Ls)
    best_shapes, lower = list(prob.shapes), -np.inf
    sigma, iterations, escapes, stop, count = float(sigma0), 0, 0, [], [0]
    history, status = [best_f], "optimal_inaccurate"

    def watch(xk):
        count[0] += 1
        if callback is not None and callback(count[0], prob.objective(prob.split(xk)), sigma):
            stop.append("user")
            raise StopIteration
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            stop.append("time")
            raise StopIteration

    use_cb = callback is not None or time_limit is not None
    for _ in range(max_stages):
        res = minimize(prob.smooth, x, args=(sigma,), jac=True, method="L-BFGS-B",
                       callback=watch if use_cb else None,
                       options={"maxiter": stage_iter, "ftol": ftol, "gtol": 1e-12,
                                "maxcor": 20, "maxls": 50})  # fmt: skip
        x, iterations = res.x, iterations + res.nit
        if res.status == 2 and not stop:  # L-BFGS-B's line search failed at a sharp kink
            x = _armijo(prob, x, sigma)
        Ls = prob.split(x)
        z = prob.z(Ls)
        f = prob.objective(Ls, z)
        if f < best_f:
            best_Ls, best_f, best_shapes = Ls, f, list(prob.shapes)
        # certificate from the multipliers of the smoothed stage, then move the prox centre
        u = np.clip(prob.center + z / sigma, 0.0, 1.0)
        lb, mu, pairs = cert.bound(oracle.scale * u, best_f, eigvecs=True)
        lower = max(lower, lb)
        notify(iterations, best_f, lower_bound=lower)
        logger.debug(
            "stage sigma=%.1e f=%.10g lb=%.10g mu=%.2e nit=%d ranks=%s msg=%s",
            sigma,
            f,
            lb,
            mu,
            res.nit,
            [s[1] for s in prob.shapes],
            res.message,
        )
        history.append(best_f)
        if stop:
            status = "user_limit"
            break
        if best_f - lower <= tol * abs(best_f):
            status = "optimal"
            break
        curvature = -mu * best_f > 0.25 * (best_f - lb)  # the repair dominates the gap
        if mu < -mu_tol and curvature and _escape(prob, Ls, pairs, sigma, max_new):
            x = prob.last_x
            escapes += 1
            continue
        prob.center = u
        sigma = max(sigma / shrink, sigma_min)
    if best_f - lower > tol * abs(best_f) and status != "user_limit":  # fit the kinks
        lower = max(lower, cert.crossover([L @ L.T for L in best_Ls], prob.z(best_Ls), best_f))
        status = "optimal" if best_f - lower <= tol * abs(best_f) else status
    Ws = [T @ (L @ L.T) @ T.T for T, L in zip(Ts, best_Ls)]
    lower = min(lower, best_f)
    gap = (best_f - lower) / max(abs(best_f), 1e-300)
    return SolveResult(
        matrix=Ws[0],
        matrices=Ws,
        objective=best_f,
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        solver="factored L-BFGS",
        history=history,
        lower_bound=lower if np.isfinite(lower) else None,
        info={"relative_gap": gap, "ranks": [s[1] for s in best_shapes], "escapes": escapes,
              "sigma": sigma, "features_W": [L @ L.T for L in best_Ls]},
    )  # fmt: skip


def _armijo(prob, x, sigma, steps=50):
    """Gradient steps with backtracking on ``φ_σ`` (a restart after a failed line search)."""
    f, g = prob.smooth(x, sigma)
    t = 1.0 / max(float(np.linalg.norm(g)), 1e-300)
    for _ in range(steps):
        gg = float(g @ g)
        if gg == 0.0:
            break
        while t > 1e-20:
            xn = x - t * g
            fn = prob.smooth(xn, sigma, grad=False)
            if fn <= f - 0.5 * t * gg:
                break
            t *= 0.5
        else:
            break
        x = xn
        f, g = prob.smooth(x, sigma)
        t *= 2.0
    return x


def _escape(prob, Ls, pairs, sigma, max_new):
    """Append the negative-curvature eigenvectors of each ``Sᵖ`` as new factor columns,
    scaled by a line search on ``φ_σ``; sets ``prob.last_x``; False if nothing helps."""
    new_Ls, grew = [], False
    for L, (w, V) in zip(Ls, pairs):
        neg = np.flatnonzero(w < -1e-10 * max(1.0, float(np.abs(w).max())))[:max_new]
        if len(neg) == 0 or L.shape[1] >= L.shape[0]:
            new_Ls.append((L, None))
            continue
        neg = neg[: L.shape[0] - L.shape[1]]
        new_Ls.append((L, V[:, neg] * np.sqrt(-w[neg])))  # steeper directions weigh more
        grew = True
    if not grew:
        return False
    old_shapes = list(prob.shapes)
    prob.shapes = [(L.shape[0], L.shape[1] + (0 if D is None else D.shape[1])) for L, D in new_Ls]

    def stack(t):
        parts = [L if D is None else np.hstack([L, np.sqrt(t) * D]) for L, D in new_Ls]
        return np.concatenate([p.ravel() for p in parts])

    scale = max(float(sum(np.vdot(L, L) for L in Ls)), 1e-6)
    t, _ = _line_search(lambda t: prob.smooth(stack(t), sigma, grad=False), 10.0 * scale)
    if t <= 0.0:
        prob.shapes = old_shapes
        return False
    prob.last_x = stack(t)
    return True
