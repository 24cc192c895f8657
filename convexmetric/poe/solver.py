"""The large-scale POE solver: projected subgradient per App. B, then a smoothed refinement.

The oracle (:mod:`.oracle`) gives the objective, App. B's subgradient (one sparse
signed Laplacian per gradient, shared by all kernels) and the Huber smoothing; the
diagonal case projects ``w ↦ max(w, 0)``, the full case onto the PSD cone.

Plain projected subgradient (the paper's solver) stalls at the kinks short of the
optimum; :func:`solve` therefore follows it with the
Huber-smoothed FISTA refinement of :mod:`convexmetric.optim.smoothing` (``refine=True``), whose
smoothed gradient uses the same single sparse Laplacian with weights ``clip(z/σ, 0, 1)``.

The diagonal LPs go by default (``method="lbfgs"``) to :mod:`.diagonal`: the same
Huber smoothing minimised by L-BFGS-B under ``w ≥ 0``, stopped by a certified duality gap;
``method="subgradient"`` keeps App. B's iteration for them too. The full SDPs go by
default (``method="factored"``) to :mod:`.factored`: low-rank factors ``W = LLᵀ``,
smoothed L-BFGS, escapes along negative curvature, stopped by the SDP dual bound of
:mod:`.certificate`. Whatever the method, the returned point carries a certified
``lower_bound`` and the status is "optimal" only when the certified gap is within ``tol``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np

from .._threads import one_blas_thread
from ..cones import NonnegativeDiagonal, ProductCone, PSDCone
from ..kernels import empirical_features
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.subgradient import SubgradientSettings, projected_subgradient
from ..result import SolveResult, certified_gap, certified_status
from . import constants as const
from .certificate import BestDual, certify_dual
from .diagonal import DiagonalSettings, crossover_bound, dual_bound, solve_diagonal
from .factored import FactoredSettings, solve_factored
from .oracle import POEOracle


def solve_kernels(kernels, C, beta, *, diagonal=False, **kw):
    """KPOE / MKPOE with the large-scale solver; ``Wᵖ`` in the paper's coordinates.

    Full ``Wᵖ`` are solved in the empirical feature space of each kernel
    (:func:`empirical_features`), where the problem is an LPOE with condition
    number ``κ(Kᵖ)`` instead of ``κ(Kᵖ)²``, and mapped back, ``Wᵖ = Tᵖ Ŵᵖ Tᵖᵀ``.
    Diagonal ``Wᵖ`` are not preserved by that change of basis and are solved
    directly over ``(Kᵖ, Kᵖ)`` as in App. B.
    """
    if diagonal:
        return solve([(K, K) for K in kernels], C, beta, diagonal=True, **kw)
    feats = [empirical_features(K) for K in kernels]
    res = solve([(Phi, np.eye(Phi.shape[1])) for Phi, _ in feats], C, beta, **kw)
    # the certificate of the feature problem is the kernel problem's: same values
    Ws = [T @ Wh @ T.T for (_, T), Wh in zip(feats, res.matrices)]
    res.info["features_W"] = res.matrices
    res.matrices, res.matrix = Ws, Ws[0]
    return res


def jacobi_scaling(blocks, C):
    """Per-feature scales ``s`` that equalise the loss's curvature: ``s_t = ‖A_{:t}‖^{-1/2}``.

    ``A_{ct} = (F_kt − F_lt)² − (F_it − F_jt)²`` is the coefficient of ``W_tt`` in
    comparison ``c``. The change of variables ``W = S W' S`` (``S = diag(s)``) maps the
    PSD cone (and the nonnegative diagonal) onto itself, with features ``F S`` and
    regulariser ``S R S``: a diagonal preconditioner that the projection respects.
    """
    out = []
    for F, _ in blocks:
        A = (F[C.k] - F[C.l]) ** 2 - (F[C.i] - F[C.j]) ** 2
        norm = np.sqrt((A * A).sum(0))
        top = norm.max() if norm.size and norm.max() > 0 else 1.0
        out.append(1.0 / np.sqrt(np.maximum(norm, 1e-12 * top) / top))
    return out


def solve(
    blocks,
    C,
    beta,
    *,
    diagonal=False,
    method=None,
    W0=None,
    refine=True,
    precondition=True,
    settings=None,
    callback=None,
):
    """Projected subgradient (App. B), then the smoothed refinement; a SolveResult.

    Parameters
    ----------
    blocks : list of (F, R)
        Feature blocks of :mod:`convexmetric.problems.poe`.
    C : Comparisons
    beta : float
    diagonal : bool
        Diagonal ``Wᵖ`` (vectors, projection ``max(·, 0)``) instead of PSD matrices.
    method : {"factored", "subgradient", "lbfgs"}, optional
        ``"factored"``: :func:`.factored.solve_factored` (full only; the default there);
        ``W0``, ``refine`` and ``precondition`` do not apply.
        ``"subgradient"``: App. B, then the smoothed refinement, certified at the end.
        ``"lbfgs"``: :func:`.diagonal.solve_diagonal` (diagonal only; the default there);
        ``W0``, ``refine`` and ``precondition`` do not apply (it always scales).
    W0 : list of arrays, optional
        Starting point (default all zeros).
    refine : bool
        Run :func:`smoothed_descent` from the subgradient result.
    precondition : bool
        Solve in the variables of :func:`jacobi_scaling` (the result is mapped back).
    settings : dict, optional
        Fields of the method's settings class, :data:`SETTINGS` ``[method]``
        (:class:`.factored.FactoredSettings`, :class:`.diagonal.DiagonalSettings` or
        :class:`SubgradientPathSettings`); each has ``tol``, ``max_iter`` and
        ``time_limit``. An unknown field is a ValueError.
    callback : callable, optional
        ``callback(evaluations, objective, sigma)``; True stops (status "user_limit").
    """
    method = method or ("lbfgs" if diagonal else "factored")
    if method not in SETTINGS:
        raise ValueError(f"method must be 'factored', 'subgradient' or 'lbfgs'; got {method!r}.")
    if method == "lbfgs" and not diagonal:
        raise ValueError("method='lbfgs' solves the diagonal LPs only; use diagonal=True.")
    if method == "factored" and diagonal:
        raise ValueError("method='factored' solves the full SDPs only; use diagonal=False.")
    st = method_settings(method, settings, callback)
    with one_blas_thread():  # small products: threads only cost
        if method == "lbfgs":
            return solve_diagonal(blocks, C, beta, st)
        if method == "factored":
            return solve_factored(blocks, POEOracle(blocks, C, beta), st)
        if not precondition:
            return _solve(blocks, C, beta, diagonal, W0, refine, st)
        scales = jacobi_scaling(blocks, C)
        scaled = [(F * s, R * s[:, None] * s[None, :]) for (F, R), s in zip(blocks, scales)]
        if W0 is not None:
            W0 = [W / s**2 if diagonal else W / np.outer(s, s) for W, s in zip(W0, scales)]
        res = _solve(scaled, C, beta, diagonal, W0, refine, st)
        Ws = [W * s**2 if diagonal else W * np.outer(s, s) for W, s in zip(res.matrices, scales)]
        res.matrices, res.matrix = Ws, Ws[0]
        return res


@dataclass(kw_only=True)
class SubgradientPathSettings(SubgradientSettings):
    """Settings of ``method="subgradient"``: App. B's steps (the fields of
    :class:`SubgradientSettings`, with this path's defaults) and ``tol``."""

    max_iter: int = const.SUBGRADIENT_MAX_ITER
    patience: int = const.SUBGRADIENT_PATIENCE
    rtol: float = const.SUBGRADIENT_RTOL
    tol: float = const.TOL  #: the certified relative gap that "optimal" means


#: the settings class of each ``method``: ``solve``'s ``settings`` are its fields
SETTINGS = {
    "factored": FactoredSettings,
    "lbfgs": DiagonalSettings,
    "subgradient": SubgradientPathSettings,
}


def method_settings(method, settings=None, callback=None):
    """The :data:`SETTINGS` ``[method]`` object from the dict ``settings`` of its fields,
    with ``callback`` unless the dict names one."""
    cls = SETTINGS[method]
    unknown = sorted(set(settings or {}) - {f.name for f in fields(cls)})
    if unknown:
        raise ValueError(
            f"'settings' of method={method!r} are fields of {cls.__name__}; got {unknown}."
        )
    return cls(**{"callback": callback, **(settings or {})})


def _solve(blocks, C, beta, diagonal, W0, refine, s):
    t0 = time.perf_counter()
    oracle = POEOracle(blocks, C, beta, diagonal=diagonal)
    if W0 is None:
        W0 = [np.zeros(F.shape[1]) if diagonal else np.zeros((F.shape[1],) * 2) for F, _ in blocks]
    cone = ProductCone([NonnegativeDiagonal() if diagonal else PSDCone() for _ in blocks])
    res = projected_subgradient(oracle, W0, cone, s, solver_name="subgradient")
    history, iterations, status = list(res.history), res.iterations, res.status
    if refine and status != "user_limit":
        sm = SmoothingSettings(
            sigma0=const.SIGMA0, stage_iter=const.REFINE_STAGE_ITER, callback=s.callback
        )
        res2 = smoothed_descent(oracle, res.matrices, cone, sm, solver_name="smoothed")
        history += res2.history
        iterations += res2.iterations
        status = res2.status
        if res2.objective <= res.objective:
            res = res2
    Ws = res.matrices
    f = oracle.objective(Ws)
    lower, dual = certify_point(blocks, C, beta, Ws, oracle)
    lower = lower if np.isfinite(lower) else None
    gap = certified_gap(f, lower)
    status = certified_status(f, lower, s.tol, "user_limit" if status == "user_limit" else None)
    return SolveResult(
        matrix=Ws[0],
        matrices=Ws,
        objective=f,
        lower_bound=lower,
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        solver="subgradient+smoothing" if refine else "subgradient",
        history=history,
        info={"violated": int(oracle.violated(Ws).sum()), "pairs": oracle.P, "certified_gap": gap},
        certificate=dual.dual_point("diagonal" if diagonal else "full", len(blocks)),
    )


def certify_point(blocks, C, beta, Ws, oracle=None):
    """A certified lower bound at ``Ws`` (full: :func:`.certificate.certify`; diagonal:
    :func:`.diagonal.dual_bound` and its crossover), ``-inf`` if none holds, and the
    :class:`.certificate.BestDual` that proves it."""
    if np.ndim(Ws[0]) == 2:
        return certify_dual(blocks, C, beta, Ws, oracle, const.CERT_SIGMAS)
    rec = BestDual()
    A = np.hstack([(F[C.k] - F[C.l]) ** 2 - (F[C.i] - F[C.j]) ** 2 for F, _ in blocks])
    r = np.concatenate([np.diag(R).astype(float) for _, R in blocks])
    if not np.all(r > 0):
        return -np.inf, rec
    w, s = np.concatenate(Ws), float(beta) / len(C)
    z = 1.0 - A @ w
    f = float(r @ w + s * np.maximum(z, 0.0).sum())
    best = max(
        dual_bound(A, r, s, s * (np.clip(z / sg, 0, 1) if sg else z > 0), f, rec)
        for sg in const.CERT_SIGMAS
    )
    return max(best, crossover_bound(A, r, s, w, z, const.CROSSOVER_SIGMA, f, rec)), rec
