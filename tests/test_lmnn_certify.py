"""Closing LMNN's certified gap (issue 14): saddles of the factor descent are escaped, the
convex fallback certifies, and "optimal" is said only with a closed certificate."""

import numpy as np
import pytest

from convexmetric import datasets
from convexmetric.lmnn import solver as S
from convexmetric.problems import lmnn as P


def certified_gap(res):
    """The certified relative gap of a result (its one definition, on SolveResult)."""
    return res.certified_gap


@pytest.fixture(scope="module")
def iris_exact(iris_instance):
    X, y, T = iris_instance
    value = P.solve(X, y, T, 0.5, solver="CLARABEL")[1]
    return X, y, T, value


def _rank_one_saddle(X, y, T):
    """A rank-1 factor stays rank 1 under descent in L (the gradient 2LG keeps L's row
    space): the refinement stops at an exact Burer–Monteiro saddle."""
    oracle = S.ActiveSetOracle(X, y, T, 0.5)
    L0 = np.zeros((X.shape[1], X.shape[1]))
    L0[0] = np.ones(X.shape[1])
    return oracle, S.refine(oracle, L0, S.refine_settings(S.LMNNSettings(), None))


def test_rank_one_saddle_is_exposed_by_the_certificate(iris_exact):
    X, y, T, value = iris_exact
    oracle, res = _rank_one_saddle(X, y, T)
    assert np.linalg.matrix_rank(res.matrix, tol=1e-9) == 1
    assert res.objective > value * (1 + 1e-3)  # stuck well above the optimum
    assert res.lower_bound <= value * (1 + 1e-9)
    assert certified_gap(res) > 1e-3
    # negative curvature of the Lagrangian's gradient in M: the escape direction
    w = np.linalg.eigvalsh(oracle.dual_matrix(res.matrix, res.info["final_sigma"]))
    assert w[0] < 0


def test_close_gap_escapes_and_certifies(iris_exact):
    X, y, T, value = iris_exact
    oracle, res = _rank_one_saddle(X, y, T)
    out = S.close_gap(oracle, res, tol=1e-6)
    assert out.info["escapes"] >= 1
    assert out.status == "optimal" and out.info["certified_gap"] <= 1e-6
    assert out.lower_bound <= value * (1 + 1e-7)  # a valid bound: below CLARABEL's optimum
    assert abs(out.objective - value) <= 1e-5 * value


def test_close_gap_reports_an_open_gap_honestly(iris_exact):
    X, y, T, _ = iris_exact
    oracle, res = _rank_one_saddle(X, y, T)
    out = S.close_gap(oracle, res, tol=1e-6, time_limit=0.0)  # no time to continue
    assert out.status == "user_limit" and out.objective == res.objective
    assert out.info["certified_gap"] > 1e-3 and not out.info["escapes"]
    stopped = S.close_gap(oracle, res, tol=1e-6, callback=lambda *a: True)  # user stops it
    assert stopped.status == "user_limit" and stopped.info["certified_gap"] > 1e-6


@pytest.mark.parametrize("tol", [1e-4, 1e-7])
def test_solve_status_follows_the_certificate(iris_exact, tol):
    X, y, T, value = iris_exact
    res = S.solve(X, y, T, 0.5, tol=tol)
    assert res.status == "optimal"
    assert res.info["certified_gap"] == pytest.approx(certified_gap(res))
    assert certified_gap(res) <= tol
    assert res.lower_bound <= value * (1 + 1e-7)
    # a solver stopped early never claims optimality with an open gap
    early = S.solve(X, y, T, 0.5, tol=tol, refine_settings={"stage_iter": 1, "stalls": 1})
    assert early.status == ("optimal" if certified_gap(early) <= tol else "optimal_inaccurate")


def test_zero_objective_is_certified_by_the_trivial_bound():
    """No active triplet (an RBF kernel separates 10 iris points per class): eq. (14) ≥ 0."""
    from convexmetric.lmnn.extensions import KernelLMNN

    Xtr, _, ytr, _ = datasets.load_split("iris")
    keep = np.concatenate([np.flatnonzero(ytr == c)[:10] for c in np.unique(ytr)])
    m = KernelLMNN(kernel="rbf").fit(Xtr[keep], ytr[keep])
    assert m.result_.lower_bound == 0.0 and m.objective_ < 1e-12
    assert m.result_.status == "optimal"
