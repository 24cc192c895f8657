"""Exact LMNN by a working set of hinge terms: small SDPs that reach the full optimum.

Most hinge terms of eq. (14) are inactive at the optimum (on wine, about 300 of
30,318), so the SDP restricted to a *working set* of terms has the same optimum once
the set contains every term active there. The scheme:

1. start from the terms active (or nearly active, within ``margin``) at a warm start
   (a short run of the large-scale solver, or the Euclidean metric);
2. solve the SDP on the working set with a named conic solver (CVXPY);
3. check all terms at the solution (blocked impostor search); add the violated ones;
4. repeat until no term outside the set is violated (beyond ``tol``).

The value of each restricted SDP is a lower bound on the full optimum (it drops
nonnegative terms), and at the end it equals the full objective. The reported bound is
not the conic solver's number but the one its hinge multipliers prove: the last SDP's
duals ``λ/μ ∈ [0, 1]`` of the working-set terms are a dual point of the full eq. (14)
(every other term's multiplier 0), evaluated by :class:`.certificate.DualCertificate`
and carried as ``result.certificate`` (kind ``"lmnn"``) for the verifier, which proves
the reported bound and the status it allows (:func:`.proof.prove`: the multipliers'
bound with its rounding; the conic solver's duals are accurate only to its tolerance).
"""

from __future__ import annotations

import time

import numpy as np

from ..problems import lmnn as P
from ..problems.common import psd_value, solve_problem
from ..result import SolveResult
from .certificate import DualCertificate
from .proof import prove
from .settings import LMNNSettings
from .terms import dual_point


def _keys(n, I, J, L):
    return (I * n + J) * n + L


def solve_working_set(
    X,
    y,
    targets,
    mu,
    *,
    solver="CLARABEL",
    warm_start="subgradient",
    margin=0.2,
    tol=1e-7,
    max_rounds=30,
    time_limit=None,
):
    """Solve eq. (14) exactly through working-set SDPs; return a :class:`SolveResult`.

    Parameters
    ----------
    solver : {"CLARABEL", "SCS"}
        The conic solver for each restricted SDP (tight tolerances, status checked).
    warm_start : {"subgradient", "identity"}
        Where the first working set comes from: terms with hinge argument above
        ``-margin`` at a short large-scale run, or at ``M = I``.
    tol : float
        A term outside the set counts as violated when its hinge exceeds ``tol``.
    """
    t0 = time.perf_counter()
    n, d = X.shape
    if warm_start == "subgradient":
        from .solver import solve as large_scale

        M_init = large_scale(X, y, targets, mu, refine=False, max_iter=300).matrix
    elif warm_start == "identity":
        M_init = np.eye(d)
    else:
        raise ValueError(f"warm_start must be 'subgradient' or 'identity'; got {warm_start!r}.")
    # terms near activity at the warm start: shift the margin by `margin`
    I, J, L, h = P.hinge_terms(M_init, X, targets, y, margin=margin)
    keys = np.unique(_keys(n, I, J, L))
    history, status, rounds, lower, M = [], "optimal", 0, None, M_init
    solver_name = f"working-set/{solver.upper()}"
    while rounds < max_rounds:
        rounds += 1
        trip = (keys // (n * n), (keys // n) % n, keys % n)
        problem, Mv, _ = P.build(X, targets, mu, trip)
        status, _ = solve_problem(problem, solver)
        M, duals = psd_value(Mv), _duals(problem, mu, len(keys))
        I, J, L, h = P.hinge_terms(M, X, targets, y)
        new = np.setdiff1d(_keys(n, I[h > tol], J[h > tol], L[h > tol]), keys)
        full = (1 - mu) * float(np.sum(P.pull_matrix(X, targets) * M)) + mu * float(h.sum())
        history.append(full)
        if len(new) == 0:
            break
        keys = np.union1d(keys, new)
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            status = "user_limit"
            break
    else:
        status = "optimal_inaccurate"
    cert = DualCertificate(X, P.pull_matrix(X, targets), mu)
    lower = cert.certified(*trip, duals, F=history[-1])
    lower = float(lower) if np.isfinite(lower) else None
    res = SolveResult(
        matrix=M,
        objective=history[-1],
        status=status,
        iterations=rounds,
        seconds=time.perf_counter() - t0,
        solver=solver_name,
        history=history,
        lower_bound=lower,
        info={"working_set": len(keys), "active": int(np.count_nonzero(h > tol))},
        certificate=_certificate(cert, n),
    )
    return prove(res, X, y, targets, mu, LMNNSettings.tol)  # the bound the verifier proves


def _duals(problem, mu, m):
    """The hinge terms' multipliers ``λ ∈ [0, 1]`` (the constraints' duals over ``μ``)."""
    if m == 0 or not problem.constraints:
        return np.zeros(m)
    return np.clip(np.asarray(problem.constraints[0].dual_value, dtype=float) / mu, 0.0, 1.0)


def _certificate(cert, n):
    """``result.certificate`` (kind ``"lmnn"``) of the bound :meth:`~.DualCertificate.certified`
    kept."""
    if cert.best is None:
        return None
    I, J, L, lam = cert.best["triplets"]
    return dual_point("lmnn", n, (I, J, L), lam, cert.best["F"])
