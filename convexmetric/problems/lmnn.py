r"""LMNN's semidefinite program, eq. (14) of Weinberger & Saul (JMLR 2009).

.. math::

    \min_{M \succeq 0,\ \xi \ge 0}\ (1-\mu)\sum_{i,\,j\rightsquigarrow i} (x_i-x_j)^\top M (x_i-x_j)
    + \mu \sum_{i,\,j\rightsquigarrow i,\,l} (1-y_{il})\,\xi_{ijl}

    \text{s.t.}\quad (x_i-x_l)^\top M (x_i-x_l) - (x_i-x_j)^\top M (x_i-x_j) \ge 1 - \xi_{ijl}.

Eliminating the slack gives the loss ε(M) of eq. (14), evaluated in numpy by
:func:`objective`. A *triplet* ``(i, j, l)`` is one hinge term: ``j`` a target
neighbour of ``i`` and ``l`` any point of another class. Note (misprint in the paper):
§2.1 writes ``M = LᵀL`` while §2.3 writes ``M = LLᵀ``; with the transformation
``x → Lx`` of eq. (1) only ``M = LᵀL`` is consistent, and that is what we use.
"""

from __future__ import annotations

from ..linalg import components_from_metric  # noqa: F401 (P.components_from_metric, as before)
from ..lmnn.terms import TooManyTerms, all_triplets, hinge_terms, objective, pull_matrix
from .common import cp, psd_value, solve_problem

# the numpy halves live in the library (convexmetric.lmnn.terms), shared with the solvers;
# this module is the conic program, and its page lists both
__all__ = [
    "TooManyTerms",
    "all_triplets",
    "build",
    "hinge_terms",
    "objective",
    "pull_matrix",
    "solve",
]


def build(X, targets, mu, triplets):
    """Eq. (14) as a CVXPY problem restricted to the hinge terms ``triplets``.

    Returns ``(problem, M, slack)``. With ``triplets = all_triplets(y, targets)`` this
    is the full SDP; a subset gives the working-set subproblems.
    """
    I, J, L = triplets
    d = X.shape[1]
    M = cp.Variable((d, d), PSD=True, name="M")
    pull = (1.0 - mu) * cp.sum(cp.multiply(pull_matrix(X, targets), M))
    if len(I) == 0:
        return cp.Problem(cp.Minimize(pull)), M, None
    U, V = X[I] - X[J], X[I] - X[L]
    # (x_i − x_l)ᵀM(x_i − x_l) − (x_i − x_j)ᵀM(x_i − x_j) = A vec(M), column-major vec.
    # A[t] = vec(C_il − C_ij) is symmetric, so row- and column-major vec agree.
    A = (V[:, :, None] * V[:, None, :] - U[:, :, None] * U[:, None, :]).reshape(len(I), d * d)
    slack = cp.Variable(len(I), nonneg=True, name="slack")
    constraints = [A @ cp.vec(M, order="F") >= 1 - slack]
    problem = cp.Problem(cp.Minimize(pull + mu * cp.sum(slack)), constraints)
    return problem, M, slack


def solve(X, y, targets, mu, *, triplets=None, solver="CLARABEL", **solver_opts):
    """Solve eq. (14) exactly (all hinge terms unless ``triplets`` is given).

    Returns ``(M, value, status, seconds)`` with ``M`` projected onto the PSD cone.
    """
    if triplets is None:
        triplets = all_triplets(y, targets)
    problem, M, _ = build(X, targets, mu, triplets)
    status, seconds = solve_problem(problem, solver, **solver_opts)
    Mv = psd_value(M)
    return Mv, float(problem.value), status, seconds
