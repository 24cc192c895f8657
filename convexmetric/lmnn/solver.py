"""LMNN's large-scale solver: the entry point, its exact reductions, the certified status.

:func:`solve` checks its settings and the memory budget, makes the exact reductions below and
runs the three phases of :mod:`.phases` (App. A's subgradient phase, the smoothed
refinement, the convex fallback) on the active-set oracle of :mod:`.oracle`.

Features constant over the data are left out first (:func:`_on_varying`: an exact
reduction; ``M`` keeps the start's block there). ``precondition=True`` solves in
coordinates where the pull term is ``tr M``
(:func:`pull_whitening`): eq. (14) depends on ``M`` only through distances, so
``x ↦ Sᵀx`` with ``M = S M' Sᵀ`` is an exact change of variables, and it equalises the
curvature that badly scaled features give the factor ``L`` (breast_cancer: the solver
ended 3.2e-3 above the optimum without it). The status is "optimal" only when the
certified relative gap ``(objective − lower_bound)/|objective|`` is within ``tol``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._input_checks import check_memory_limit
from .._threads import one_blas_thread
from ..neighbors import unit_scale
from ..result import SolveResult
from .blocks.data import check_budget, data_share
from .phases import solve_phases
from .proof import prove
from .settings import LMNNSettings
from .terms import all_triplets, dual_point, pull_matrix


def pull_whitening(X, targets, rtol=1e-8):
    """``S`` (and ``S⁻¹``) with ``Sᵀ P S = I``, ``P`` the pull matrix of :func:`pull_matrix`.

    ``P = Σ (x_i − x_j)(x_i − x_j)ᵀ`` over target pairs; eigenvalues of ``P`` below
    ``rtol·λ_max`` are raised to that floor (directions in which no target pair differs).
    """
    P = pull_matrix(X, targets)
    w, V = np.linalg.eigh(0.5 * (P + P.T))
    w = np.maximum(w, rtol * max(float(w[-1]), 1e-300))
    return V / np.sqrt(w), (V * np.sqrt(w)).T


def solve(X, y, targets, mu, settings=None, *, M0=None, **overrides):
    """Minimise eq. (14) with the large-scale solver; return a :class:`SolveResult`.

    Parameters
    ----------
    X : ndarray (n, d)
    y : int ndarray (n,), encoded labels
    targets : int ndarray (n, k), target neighbours
    mu : float
    settings : LMNNSettings, optional
    M0 : ndarray (d, d), optional
        Starting metric (default the identity), in the original coordinates.
    **overrides
        Fields of :class:`LMNNSettings` (``solve(..., tol=1e-6)``).

    Returns
    -------
    SolveResult
        ``matrix`` is ``M``; ``lower_bound`` the certificate; ``info`` has
        ``certified_gap``, ``mode`` ("active_set" or "streaming"), phase counts,
        ``escapes`` (the refinement's, when it escaped) and ``fallback`` (whether
        the convex fallback ran, when the refinement left the gap open).

    Examples
    --------
    >>> from convexmetric import datasets
    >>> from convexmetric.neighbors import target_neighbors
    >>> X, _, y, _ = datasets.load_split("iris")
    >>> res = solve(X, y, target_neighbors(X, y, 3), 0.5)
    >>> res.status, res.certified_gap <= 1e-4
    ('optimal', True)
    """
    s = replace(settings or LMNNSettings(), **overrides)
    s.memory_limit = check_memory_limit(s.memory_limit, owner="solve")
    (n, d), k = X.shape, targets.shape[1]
    local = getattr(s.executor, "name", "local") == "local"  # (lanes share its blocks' budget)
    check_budget(s.memory_limit, n, d, k, getattr(s.executor, "threads", 1) if local else 1)
    res = _dispatch(X, y, targets, mu, s, M0)
    if s.memory_limit is not None:  # what the fit allocates, at most
        res.info["memory_bound"] = s.memory_limit + data_share(n, d, k)
    return res


def _dispatch(X, y, targets, mu, s, M0):
    """:func:`solve` on checked settings: at unit scale, on the varying features."""
    scale = unit_scale(X)
    if not 2.0**-20 <= scale <= 2.0**20:  # far from 1: solved exactly at unit scale
        M0 = None if M0 is None else np.asarray(M0, dtype=float) / scale**2
        return rescaled(solve(X * scale, y, targets, mu, s, M0=M0), scale)
    varying = np.ptp(X, axis=0) > 0
    if not varying.any():
        return prove(constant(y, targets, mu, X.shape[1], M0), X, y, targets, mu, s.tol)
    if varying.any() and not varying.all():
        return _on_varying(X, y, targets, mu, s, M0, varying)
    with one_blas_thread():  # d×d and gather-sized products: threads only cost
        if not s.precondition:
            res = solve_phases(X, y, targets, mu, M0, s)
        else:
            S, S_inv = pull_whitening(X, targets)
            M0 = np.eye(X.shape[1]) if M0 is None else np.asarray(M0, dtype=float)
            res = solve_phases(X @ S, y, targets, mu, S_inv @ M0 @ S_inv.T, s)
            res.matrix = S @ res.matrix @ S.T
            res.matrices = [res.matrix]
            res.info["preconditioned"] = True
        return prove(res, X, y, targets, mu, s.tol)


def rescaled(res, scale):
    """A result on ``X·scale`` as one on ``X``: the metric ``M·scale²`` (eq. (14) is
    scale-covariant: the same objective, bound and dual point)."""
    res.matrix = res.matrix * scale**2
    res.matrices = [res.matrix]
    if res.info.get("components") is not None:
        res.info["components"] = res.info["components"] * scale
    res.info["rescaled"] = float(scale)
    return res


def constant(y, targets, mu, d, M0=None):
    """Every point equal: every distance is 0 whatever ``M``, so eq. (14) is ``μ`` times
    the number of hinge terms at every ``M`` and ``M0`` (default ``I``) is optimal; the
    certificate puts every multiplier at 1 (``S(λ) = 0``), proving that value."""
    I, J, L = all_triplets(y, targets)
    f = float(mu) * len(I)
    cert = dual_point("lmnn", len(y), (I, J, L), np.ones(len(I)), f)
    M = np.eye(d) if M0 is None else np.asarray(M0, dtype=float)
    return SolveResult(
        matrix=M,
        matrices=[M],
        objective=f,
        status="optimal",
        solver="constant",
        lower_bound=f,
        certificate=cert,
        info={"constant_features": d},
    )


def _on_varying(X, y, targets, mu, s, M0, keep):
    """Solve without the features that are constant over ``X`` (an exact reduction).

    No distance between two of the points has a component there, so eq. (14) and its
    certificate are those of the problem on the other features; a raw MNIST sample has
    127 such pixels of 784 (every distance, search and scatter then costs ``(d − 127)``
    columns, every factor product ``(d − 127)²``). ``M`` keeps ``M0``'s block on them
    (the identity by default: no evidence moves it) and no cross terms."""
    d = X.shape[1]
    M0 = np.eye(d) if M0 is None else np.asarray(M0, dtype=float)
    res = solve(X[:, keep], y, targets, mu, s, M0=M0[np.ix_(keep, keep)])
    M = np.zeros((d, d))
    M[np.ix_(keep, keep)] = res.matrix
    M[np.ix_(~keep, ~keep)] = M0[np.ix_(~keep, ~keep)]
    res.matrix, res.matrices = M, [M]
    res.info["constant_features"] = int(d - keep.sum())
    return res
