"""Maurer (JMLR 2008): eq. (5) in CVXPY and numpy, and the hand-written solvers."""

import numpy as np
import pytest
from scipy.optimize import check_grad
from test_verify_poe_maurer import verify_maurer_result

from convexmetric.maurer import solver as S
from convexmetric.maurer.pairs import balanced_pairs
from convexmetric.problems import maurer as P

VARIANTS = [("hs", None), ("trace", None), ("hs", 2.0), ("trace", 0.5)]


def instance(m=400, D=8, seed=0):
    """Synthetic reference instance: 4 Gaussian classes in R^D scaled to diameter ≤ 1,
    balanced pairs (§5.1)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((4, D)) * 1.5
    y = rng.integers(0, 4, 300)
    X = centers[y] + rng.standard_normal((300, D))
    X /= 2 * np.linalg.norm(X - X.mean(0), axis=1).max()
    pairs = balanced_pairs(X, y, m, random_state=seed)
    return pairs.differences, pairs.r


def test_hand_computed_objective():
    # u1 = (1, 0) similar: s = 1, h(0) = 1; u2 = (0, 2) dissimilar: s = 4, h(−1·(1−4)) = h(3) = 0
    U, r = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([1.0, -1.0])
    assert P.objective(np.eye(2), U, r, lam=0.0) == pytest.approx(0.5)
    # regulariser: λ‖I‖₂/√2 = 0.1·√2/√2 and λ tr I/√2 = 0.1·2/√2
    assert P.objective(np.eye(2), U, r, 0.1) == pytest.approx(0.5 + 0.1)
    assert P.objective(np.eye(2), U, r, 0.1, regularizer="trace") == pytest.approx(
        0.5 + 0.2 / 2**0.5
    )
    # asymmetric margins at A = I/8: s1 = 1/8, h_1(7/8) = 1/8; s2 = 1/2, h_4(−1/2) = 9/8
    assert P.objective(np.eye(2) / 8, U, r, 0.0, 1.0, 4.0) == pytest.approx((0.125 + 1.125) / 2)


@pytest.mark.parametrize(("reg", "gneg"), VARIANTS)
def test_numpy_objective_equals_cvxpy_value(reg, gneg):
    U, r = instance(m=200, D=5)
    A, val, status, _ = P.solve(U, r, 0.05, 1.0, gneg, reg)
    assert status == "optimal"
    assert P.objective(A, U, r, 0.05, 1.0, gneg, reg) == pytest.approx(val, rel=1e-6)


@pytest.mark.parametrize(("reg", "gneg"), VARIANTS)
def test_projected_subgradient_agrees_with_exact(reg, gneg):
    U, r = instance()
    _, val, _, _ = P.solve(U, r, 0.05, 1.0, gneg, reg)
    res = S.solve_projected(U, r, 0.05, 1.0, gneg, reg)
    assert res.status == "optimal"
    v = verify_maurer_result(res, U, r, 0.05, 1.0, gneg, reg)
    assert v.verified, v.reason
    # solve_projected's certified tol (1e-6) plus CLARABEL's accuracy (to 1e-6 here)
    assert abs(res.objective - val) / val <= 1e-6 + 1e-6
    assert np.linalg.eigvalsh(res.matrix)[0] >= -1e-10  # stays on the PSD cone


@pytest.mark.parametrize(("reg", "gneg"), [("hs", None), ("trace", 2.0)])
def test_sgd_agrees_with_exact_on_average(reg, gneg):
    U, r = instance(m=500, D=10)
    _, val, _, _ = P.solve(U, r, 0.05, 1.0, gneg, reg)
    runs = [
        S.sgd(S.LinearBackend(U), r, 0.05, 1.0, gneg, reg, max_iter=60_000, random_state=s)
        for s in range(3)
    ]
    gaps = [(res.objective - val) / val for res in runs]
    assert min(gaps) >= -1e-6  # never below CLARABEL's optimum (to its accuracy)
    assert np.mean(gaps) <= 1e-2  # a stochastic learner: no certified claim ("completed")
    for res in runs:  # ... unless it says "optimal": then the verifier agrees
        assert res.status in ("optimal", "completed")
        if res.status == "optimal":
            assert verify_maurer_result(res, U, r, 0.05, 1.0, gneg, reg).verified


def test_blocks_reproduce_the_sequential_table1_loop():
    U, r = instance(m=300, D=6)
    kw = {"max_iter": 3000, "eval_every": 3000, "reg_every": 100, "random_state": 3}
    seq = S.sgd(S.LinearBackend(U), r, 0.05, 1.0, 2.0, block_size=1, **kw)
    blk = S.sgd(S.LinearBackend(U), r, 0.05, 1.0, 2.0, block_size=50, **kw)
    assert seq.history[-1] < seq.history[0]
    np.testing.assert_allclose(blk.matrix, seq.matrix, rtol=1e-9, atol=1e-12)


def test_kernel_sgd_with_linear_kernel_equals_linear_sgd():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 5)) / 6
    y = rng.integers(0, 3, 40)
    pairs = balanced_pairs(X, y, 200, random_state=0)
    kw = {"max_iter": 2000, "eval_every": 2000, "random_state": 0, "n_components": 7}
    lin = S.sgd(S.LinearBackend(pairs.differences), pairs.r, 0.05, **kw)
    ker = S.sgd(S.KernelBackend(X @ X.T, pairs.i, pairs.j), pairs.r, 0.05, **kw)
    # v_i = Σ_p β_pi x_p
    np.testing.assert_allclose(ker.matrix.T @ X, lin.matrix, rtol=1e-8, atol=1e-12)
    assert ker.objective == pytest.approx(lin.objective, rel=1e-10)


@pytest.mark.parametrize(("reg", "gneg"), VARIANTS)
def test_gradient_at_a_smooth_point(reg, gneg):
    U, r = instance(m=60, D=3)
    o = S.HingeOracle(U, r, 0.1, 1.0, gneg, reg)
    rng = np.random.default_rng(0)
    B = rng.standard_normal((3, 3))
    A0 = B @ B.T / 10 + np.eye(3)

    def f(x):
        return o.objective(A0 + _sym(x))

    def g(x):
        return o(A0 + _sym(x))[1].ravel() @ _sym_jac()

    x0 = rng.standard_normal(9) * 1e-3
    assert check_grad(f, g, x0) <= 1e-5 * max(1.0, np.linalg.norm(g(x0)))


def _sym(x):
    X = x.reshape(3, 3)
    return 0.5 * (X + X.T)


def _sym_jac():
    J = np.zeros((9, 9))
    for k in range(9):
        e = np.zeros(9)
        e[k] = 1
        J[:, k] = _sym(e).ravel()
    return J


def test_smoothed_value_brackets_the_exact_value():
    U, r = instance(m=100, D=4)
    o = S.HingeOracle(U, r, 0.05, 1.0, 2.0)
    A = np.eye(4) * 3
    f = o.objective(A)
    for sigma in (1.0, 0.1, 1e-3):
        fs = o.smooth(A, sigma)[0]
        assert fs <= f + 1e-12
        assert f - fs <= sigma / 2 + 1e-12
