"""POE certificates: every large-scale solver's lower bound lies below the exact optimum
(CLARABEL, tolerances 1e-8, status checked), closes to 1e-6 at convergence, and the
status says "optimal" only when the independent verifier recomputes, from the result's
certificate and the data, a certified gap within the tolerance."""

import numpy as np
import pytest
from conftest import poe_instance

from convexmetric.comparisons import Comparisons
from convexmetric.kernels import linear_kernel, noise_kernels, rbf_kernel
from convexmetric.poe import solver as S
from convexmetric.poe.certificate import Certificate, certify
from convexmetric.problems import poe as P
from convexmetric.verifier import Fitted, verify_fitted

X, C = poe_instance(12, 80, seed=1, flip=0.1)
NOISE = noise_kernels(len(X), 1, random_state=0)[0] + 0.1 * np.eye(len(X))
KERNELS = [rbf_kernel(X, gamma=0.3), linear_kernel(X) / 4 + 0.1 * np.eye(len(X)), NOISE]
BETA = 20.0
CASES = {
    "lpoe": (P.lpoe_blocks(X), None),
    "kpoe": (P.kernel_blocks(KERNELS[:1]), KERNELS[:1]),
    "mkpoe": (P.kernel_blocks(KERNELS), KERNELS),
}


@pytest.fixture(scope="module")
def exact():
    out = {}
    for name, (blocks, _) in CASES.items():
        for diagonal in (False, True):
            Ws, value, status, _ = P.solve(blocks, C, BETA, diagonal=diagonal, solver="CLARABEL")
            assert status == "optimal" or (status == "optimal_inaccurate" and not diagonal)
            assert abs(P.objective(Ws, blocks, C, BETA) - value) <= 1e-6 * value
            out[name, diagonal] = value
    return out


#: CLARABEL's accuracy on these SDPs (its value agrees with the numpy objective to 1e-6)
CONIC = 1e-6


def verification(res, name, diagonal, tol=1e-4):
    """The verifier's report on a solver result, as a POE / MKPOE fitted on the case."""
    est, kernel, items = {
        "lpoe": ("POE", None, X),
        "kpoe": ("POE", "precomputed", KERNELS[0]),
        "mkpoe": ("MKPOE", None, KERNELS),
    }[name]
    params = {
        "beta": BETA,
        "diagonal": diagonal,
        "kernel": kernel,
        "tol": tol,
        "filter_graph": False,
    }
    W = res.matrices if est == "MKPOE" else res.matrix
    v = verify_fitted(
        Fitted(est, params, {"W_": W}, res.certificate, res.objective), C, items, tol=tol
    )
    assert v.lower_bound == pytest.approx(res.lower_bound, rel=1e-9)  # the reported bound's
    return v


def run(name, diagonal, **kw):
    blocks, kernels = CASES[name]
    if kernels is None:
        return S.solve(blocks, C, BETA, diagonal=diagonal, **kw)
    return S.solve_kernels(kernels, C, BETA, diagonal=diagonal, **kw)


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("name", list(CASES))
def test_bound_below_optimum_and_tight(exact, name, diagonal):
    value = exact[name, diagonal]
    blocks, _ = CASES[name]
    for tol in (1e-3, 1e-6):
        res = run(name, diagonal, settings={"tol": tol})
        assert res.status == "optimal"
        v = verification(res, name, diagonal, tol)
        assert v.verified, v.reason
        f = P.objective(res.matrices, blocks, C, BETA)
        assert f == pytest.approx(v.objective, rel=1e-9)
        assert res.lower_bound <= value * (1 + CONIC)
        assert -CONIC <= (f - value) / value <= tol + CONIC


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("name", list(CASES))
def test_subgradient_path_is_certified_at_its_returned_point(exact, name, diagonal):
    """App. B's solver: the bound holds at whatever point it returns, and its status is
    "optimal" only when that bound certifies the tolerance."""
    value = exact[name, diagonal]
    res = run(name, diagonal, method="subgradient")
    assert res.lower_bound is not None and res.lower_bound <= value * (1 + CONIC)
    v = verification(res, name, diagonal)  # solve()'s default tol
    assert v.verified == (res.status == "optimal"), v.reason
    if v.verified:
        assert (res.objective - value) / value <= 1e-4 + CONIC
    # the caller's tol decides (settings as a dict, as for the other methods)
    strict = run(name, diagonal, method="subgradient", settings={"tol": 1e-14})
    assert strict.status == "optimal_inaccurate" and strict.certified_gap > 1e-14


def test_status_honest_when_stopped_early(exact):
    """A factored run cut short is not "optimal", and its bound still holds."""
    value = exact["mkpoe", False]
    res = run("mkpoe", False, settings={"tol": 1e-8, "max_stages": 1, "stage_iter": 5})
    assert res.status == "optimal_inaccurate"
    assert res.lower_bound is None or res.lower_bound <= value * (1 + 1e-7)
    assert res.info["certified_gap"] > 1e-8


@pytest.mark.parametrize("name", ["lpoe", "kpoe"])
def test_rank_one_start_is_escaped_and_certified(exact, name):
    """The optimum has rank 2: a rank-1 factor start stalls at a saddle, which the staged
    driver escapes (StageHooks.escape, new factor columns, the engine's one escape path);
    the run then certifies, and the verifier agrees."""
    res = run(name, False, settings={"rank": 1, "tol": 1e-6})
    assert res.info["escapes"] >= 1 and max(res.info["ranks"]) >= 2
    assert res.status == "optimal" and verification(res, name, False, tol=1e-6).verified
    assert abs(res.objective - exact[name, False]) <= (1e-6 + CONIC) * exact[name, False]


def test_bound_valid_for_any_multipliers(exact):
    """The repaired bound holds for arbitrary λ ∈ [0, s], however infeasible."""
    blocks, _ = CASES["lpoe"]
    value = exact["lpoe", False]
    oracle = S.POEOracle(blocks, C, BETA)
    cert = Certificate(blocks, oracle)
    rng = np.random.default_rng(0)
    for _ in range(5):
        lam = rng.uniform(0, oracle.scale, len(C))
        lb = cert.bound(lam, value * 1.5)[0]
        assert lb <= value * (1 + 1e-9)
    # at W = 0 every hinge is 1: the bound is β·(something) ≤ β
    Ws = [np.zeros((X.shape[1],) * 2)]
    assert certify(blocks, C, BETA, Ws) <= value * (1 + 1e-9)


def test_hand_computed_bound():
    """1-d LPOE, one comparison: min W + β·max(0, 1 − 8W), optimum 1/8 (β > 1/8); the dual
    is max λ s.t. 1 − 8λ ≥ 0, λ ≤ β: λ* = 1/8, so the bound is exact."""
    Xh = np.array([[0.0], [1.0], [3.0]])
    Ch = Comparisons.triadic([0], [1], [2])
    res = S.solve(P.lpoe_blocks(Xh), Ch, 10.0, settings={"tol": 1e-8})
    assert res.status == "optimal"
    params = {"beta": 10.0, "diagonal": False, "kernel": None, "tol": 1e-8, "filter_graph": False}
    v = verify_fitted(
        Fitted("POE", params, {"W_": res.matrix}, res.certificate, res.objective), Ch, Xh
    )
    assert v.verified, v.reason
    assert res.lower_bound == pytest.approx(0.125, rel=1e-8)
    assert res.lower_bound <= 0.125 + 1e-15
    # the certificate is the dual optimum λ* = 1/8 (in [0, β/|C| = 10])
    assert res.certificate["lam"] == pytest.approx([0.125], rel=1e-8)


def test_diagonal_lp_bound_exact_at_the_optimum(exact):
    """The HiGHS LP over the near-kink multipliers at CLARABEL's solution: a valid bound,
    within 1e-6 of the optimum."""
    from convexmetric.poe.diagonal import lp_bound

    blocks, _ = CASES["mkpoe"]
    Ws, value, status, _ = P.solve(blocks, C, BETA, diagonal=True, solver="CLARABEL")
    assert status == "optimal"
    A = np.hstack([(F[C.k] - F[C.l]) ** 2 - (F[C.i] - F[C.j]) ** 2 for F, _ in blocks])
    r = np.concatenate([np.diag(R) for _, R in blocks])
    z = 1.0 - A @ np.concatenate(Ws)
    lb = lp_bound(A, r, BETA / len(C), z, value)
    assert lb <= value * (1 + 1e-7)
    assert (value - lb) / value <= 1e-6


def test_factored_rejects_features_off_the_range_of_R():
    F = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 3.0]])
    blocks = [(F, np.diag([1.0, 0.0]))]
    Ch = Comparisons.triadic([0], [1], [2])
    with pytest.raises(ValueError, match="range of its regulariser"):
        S.solve(blocks, Ch, 10.0)


def test_settings_are_one_shape_the_fields_of_the_methods_class():
    """``solve``'s ``settings`` is always a dict of the fields of ``SETTINGS[method]``;
    a field of another method's class is refused, naming the argument and the class."""
    assert set(S.SETTINGS) == {"factored", "lbfgs", "subgradient"}
    for method, cls in S.SETTINGS.items():
        st = S.method_settings(method, {"tol": 1e-3, "max_iter": 7, "time_limit": 5.0})
        assert isinstance(st, cls) and (st.tol, st.max_iter, st.time_limit) == (1e-3, 7, 5.0)
    assert S.method_settings("subgradient").tol == S.method_settings("factored").tol
    X, C = poe_instance(8, 30)
    with pytest.raises(ValueError, match=r"'settings' of method='lbfgs'.*DiagonalSettings.*rank"):
        S.solve(P.lpoe_blocks(X), C, 1.0, diagonal=True, settings={"rank": 2})
