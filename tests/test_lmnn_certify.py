"""Closing LMNN's certified gap (issue 14): saddles of the factor descent are escaped, the
convex fallback certifies, and "optimal" is said only with a closed certificate."""

from dataclasses import replace

import numpy as np
import pytest
from lmnn_verify import lmnn_report, verified_solve

from convexmetric import datasets, verify
from convexmetric.lmnn import solver as S
from convexmetric.lmnn.constants import MAX_ESCAPES
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.lmnn.phases import close_gap
from convexmetric.lmnn.refinement import refine, refine_settings
from convexmetric.lmnn.settings import LMNNSettings
from convexmetric.problems import lmnn as P


def certified_gap(res):
    """The certified relative gap of a result (its one definition, on SolveResult)."""
    return res.certified_gap


@pytest.fixture(scope="module")
def iris_exact(iris_instance):
    X, y, T = iris_instance
    value = P.solve(X, y, T, 0.5, solver="CLARABEL")[1]
    return X, y, T, value


def _rank_one_saddle(X, y, T, max_escapes=0):
    """A rank-1 factor stays rank 1 under descent in L (the gradient 2LG keeps L's row
    space): without escapes the refinement stops at an exact Burer–Monteiro saddle."""
    oracle = ActiveSetOracle(X, y, T, 0.5)
    L0 = np.zeros((X.shape[1], X.shape[1]))
    L0[0] = np.ones(X.shape[1])
    rs = replace(refine_settings(LMNNSettings(), None, tol=1e-6), max_escapes=max_escapes)
    return oracle, refine(oracle, L0, rs)


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


def test_refinement_escapes_a_rank_one_start_and_certifies(iris_exact):
    """The one escape path: the staged refinement itself escapes the saddle at its stall
    (StageHooks.escape, a factor row appended) and certifies the optimum of higher rank."""
    X, y, T, value = iris_exact
    oracle, res = _rank_one_saddle(X, y, T, max_escapes=MAX_ESCAPES)
    assert 1 <= res.info["escapes"] <= MAX_ESCAPES
    assert np.linalg.matrix_rank(res.matrix, tol=1e-9) > 1
    assert res.status == "optimal" and res.certified_gap <= 1e-6
    res.certificate = oracle.dual_point(res.lower_bound)
    verified_solve(res, X, y, T, tol=1e-6)
    assert abs(res.objective - value) <= (1e-6 + 1e-7) * value  # tol + CLARABEL's accuracy


def test_close_gap_escapes_and_certifies(iris_exact):
    X, y, T, value = iris_exact
    oracle, res = _rank_one_saddle(X, y, T)
    out = close_gap(oracle, res, tol=1e-6)
    assert out.info["escapes"] >= 1
    assert out.status == "optimal"
    verified_solve(out, X, y, T, tol=1e-6)
    assert out.lower_bound <= value * (1 + 1e-7)  # a valid bound: below CLARABEL's optimum
    assert abs(out.objective - value) <= (1e-6 + 1e-7) * value  # tol + CLARABEL's accuracy


def test_close_gap_reports_an_open_gap_honestly(iris_exact):
    X, y, T, _ = iris_exact
    oracle, res = _rank_one_saddle(X, y, T)
    out = close_gap(oracle, res, tol=1e-6, time_limit=0.0)  # no time to continue
    assert out.status == "user_limit" and out.objective == res.objective
    assert out.info["certified_gap"] > 1e-3 and not out.info["escapes"]
    stopped = close_gap(oracle, res, tol=1e-6, callback=lambda *a: True)  # user stops it
    assert stopped.status == "user_limit" and stopped.info["certified_gap"] > 1e-6


@pytest.mark.parametrize("tol", [1e-4, 1e-7])
def test_solve_status_follows_the_certificate(iris_exact, tol):
    X, y, T, value = iris_exact
    res = S.solve(X, y, T, 0.5, tol=tol)
    assert res.status == "optimal"
    verified_solve(res, X, y, T, tol=tol)
    assert res.info["certified_gap"] == pytest.approx(certified_gap(res))
    assert res.lower_bound <= value * (1 + 1e-7)
    # a solver stopped early never claims optimality with an open gap (the verifier's word)
    early = S.solve(X, y, T, 0.5, tol=tol, refine_settings={"stage_iter": 1, "stalls": 1})
    assert (early.status == "optimal") == lmnn_report(early, X, y, T, tol=tol).verified


def test_zero_objective_is_certified_by_the_trivial_bound():
    """No active triplet (an RBF kernel separates 10 iris points per class): eq. (14) ≥ 0."""
    from convexmetric.lmnn import KernelLMNN
    from convexmetric.result import FLOOR_SHARE

    Xtr, _, ytr, _ = datasets.load_split("iris")
    keep = np.concatenate([np.flatnonzero(ytr == c)[:10] for c in np.unique(ytr)])
    m = KernelLMNN(kernel="rbf").fit(Xtr[keep], ytr[keep])
    zero = m.result_.info["zero_value"]  # f(0): the problem's scale
    assert m.result_.lower_bound == 0.0 and m.objective_ <= 1e-4 * FLOOR_SHARE * zero
    assert m.result_.status == "optimal"
    # the certificate has no multipliers: the verifier recomputes the bound 0 from it, and
    # verifies the fit to the absolute gap an optimum of 0 allows; the stored objective is
    # that of the map applied (kernel rows through components_), which it recomputes
    report = verify(m, Xtr[keep], ytr[keep])
    assert len(m.result_.certificate["lam"]) == 0 and report.lower_bound == 0.0
    assert report.verified, report.reason


@pytest.fixture(scope="module")
def wine_instance():
    from convexmetric.neighbors import target_neighbors

    X, _, y, _ = datasets.load_split("wine")
    _, y = np.unique(y, return_inverse=True)
    return X, y, target_neighbors(X, y, 3)


def test_refinement_sheds_the_factor_rows_the_optimum_does_not_use(wine_instance):
    """wine's optimum has rank 7 of 13: with ``rank_tol`` the factor ends with fewer rows
    than ``d`` (each distance costs fewer products) and certifies the same optimum."""
    X, y, T = wine_instance
    L0 = np.eye(X.shape[1])
    out = {}
    for tol in (None, 1e-8, 1e-3):
        oracle = ActiveSetOracle(X, y, T, 0.5)
        oracle.active.tol = 1e-4
        rs = refine_settings(LMNNSettings(), None, tol=1e-4)
        out[tol] = refine(oracle, L0, rs, rank_tol=tol)
    assert out[None].info["components"].shape[0] == X.shape[1]
    assert out[1e-8].info["components"].shape[0] < X.shape[1]
    for res in out.values():
        assert res.certified_gap <= 1e-4
    assert out[1e-8].objective == pytest.approx(out[None].objective, rel=2e-4)
    assert out[1e-3].info["components"].shape[0] <= out[1e-8].info["components"].shape[0]
    assert out[1e-3].objective == pytest.approx(out[None].objective, rel=2e-4)


def test_phase1_hands_over_early_only_before_a_refinement(wine_instance):
    """App. A alone runs to its stall (relative gain 1e-4 over 20 iterations); before the
    refinement it hands over at 1% over 10, and the pipeline still certifies."""
    X, y, T = wine_instance
    alone = S.solve(X, y, T, 0.5, refine=False)
    piped = S.solve(X, y, T, 0.5)
    assert piped.info["phase1_iterations"] < alone.iterations
    assert piped.status == "optimal"
    verified_solve(piped, X, y, T)
    assert piped.objective <= alone.objective


def test_constant_features_are_solved_without_and_keep_the_start_block(iris_instance):
    """Features constant over the data carry no distance: the solve on the others is the
    solve (same objective, bound and metric block), ``M`` keeps ``M0`` there, and the
    objective of the padded metric on the padded data is the reported one."""
    X, y, T = iris_instance
    pad = np.hstack([np.full((len(X), 1), 3.0), X[:, :2], np.zeros((len(X), 2)), X[:, 2:]])
    keep = np.array([False, True, True, False, False, True, True])
    M0 = np.eye(7) + 0.1  # a start with cross terms
    res = S.solve(pad, y, T, 0.5, M0=M0)
    ref = S.solve(X, y, T, 0.5, M0=M0[np.ix_(keep, keep)])
    assert res.info["constant_features"] == 3 and res.status == "optimal"
    verified_solve(res, pad, y, T)  # the certificate of the reduced problem, on the padded data
    assert res.objective == ref.objective and res.lower_bound == ref.lower_bound
    np.testing.assert_array_equal(res.matrix[np.ix_(keep, keep)], ref.matrix)
    np.testing.assert_array_equal(res.matrix[np.ix_(~keep, ~keep)], M0[np.ix_(~keep, ~keep)])
    assert not res.matrix[np.ix_(keep, ~keep)].any()
    assert P.objective(res.matrix, pad, T, y, 0.5) == pytest.approx(res.objective, rel=1e-10)


def test_convex_fallback_closes_a_gap_the_refinement_left_open(iris_exact):
    """A refinement cut short (5 FISTA steps) leaves the gap open: the solver's last stage,
    the convex fallback (FISTA on M ⪰ 0, then the factor polish), certifies."""
    from convexmetric.optim.smoothing import SmoothingSettings

    X, y, T, value = iris_exact
    short = SmoothingSettings(max_evaluations=5, stage_iter=5)
    res = S.solve(X, y, T, 0.5, refine="fista", refine_settings=short, tol=1e-6)
    assert res.info["fallback"] and res.solver.endswith("+fista-fallback")
    assert res.status == "optimal"
    verified_solve(res, X, y, T, tol=1e-6)
    assert abs(res.objective - value) <= (1e-6 + 1e-7) * value


def test_solve_from_a_rank_one_start_escapes_in_its_refinement(iris_exact):
    """Phase 1 in ``L`` keeps a rank-1 start's row space: the solver's own refinement
    escapes (stage "escape") and certifies the optimum, which has higher rank."""
    X, y, T, value = iris_exact
    d = X.shape[1]
    res = S.solve(X, y, T, 0.5, M0=np.outer(np.ones(d), np.ones(d)), tol=1e-6)
    assert res.info["escapes"] >= 1 and "+escape" in res.solver
    assert res.status == "optimal" and np.linalg.matrix_rank(res.matrix, tol=1e-9) > 1
    verified_solve(res, X, y, T, tol=1e-6)
    assert abs(res.objective - value) <= (1e-6 + 1e-7) * value
