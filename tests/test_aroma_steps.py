"""AROW / d-AROMA / f-AROMA / OASIS single steps: hand-computed, exact (CVXPY), invariants."""

import numpy as np
import pytest

from convexmetric.aroma.steps import (
    arow_diagonal_step,
    arow_step,
    daroma_step,
    faroma_step,
    oasis_step,
)
from convexmetric.problems.bilinear import (
    arow_covariance_objective,
    arow_step_objective,
    build_arow_covariance_step,
    build_arow_step,
)
from convexmetric.problems.common import solve_problem


def _stream(rng, m, n, T):
    return [(rng.normal(size=m), rng.normal(size=n) * (rng.random(n) < 0.6)) for _ in range(T)]


def test_hand_computed_one_by_one():
    # m = n = 1, q = p = 1, r = 1: margin 0, loss 1, u = v = 1.
    W, L, O, up = faroma_step(np.zeros((1, 1)), np.eye(1), np.eye(1), np.ones(1), np.ones(1), 1.0)
    assert up and W[0, 0] == 0.5 and L[0, 0] == 0.5 and O[0, 0] == 0.5  # 1/(1+1), 1 − 1/(1+1)
    W, S, up = daroma_step(np.zeros((1, 1)), np.ones((1, 1)), np.ones(1), np.ones(1), 1.0)
    assert W[0, 0] == 0.5 and S[0, 0] == 0.5


def test_hand_computed_oasis():
    # W = I, q = e1, p = p⁺ − p⁻ = e2 − e1: margin −1, loss 2, ‖q‖²‖p‖² = 2, τ = min(C, 1).
    q, p = np.array([1.0, 0.0]), np.array([-1.0, 1.0])
    W, _up = oasis_step(np.eye(2), q, p, C=0.5)
    np.testing.assert_allclose(W, [[0.5, 0.5], [0.0, 1.0]])
    W, _ = oasis_step(np.eye(2), q, p, C=10.0)
    np.testing.assert_allclose(W, [[0.0, 1.0], [0.0, 1.0]])
    assert float(q @ W @ p) == pytest.approx(1.0)  # the passive-aggressive step lands on the margin


def test_passive_and_mistake_driven():
    q, p = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    W = np.array([[0.0, 0.5], [0.0, 0.0]])  # margin 0.5: inside the margin, not a mistake
    assert daroma_step(W, np.ones((2, 2)), q, p, 1.0)[2]
    assert not daroma_step(W, np.ones((2, 2)), q, p, 1.0, mistake_driven=True)[2]
    assert not faroma_step(W, np.eye(2), np.eye(2), q, p, 1.0, mistake_driven=True)[3]
    assert not oasis_step(W, q, p, 1.0, mistake_driven=True)[1]
    W2 = np.array([[0.0, 2.0], [0.0, 0.0]])  # margin 2: passive
    assert not daroma_step(W2, np.ones((2, 2)), q, p, 1.0)[2]
    assert daroma_step(np.zeros((2, 2)), np.ones((2, 2)), q, p, 1.0, mistake_driven=True)[2]


@pytest.mark.parametrize("d", [3, 6])
def test_arow_mean_step_is_argmin_of_eq3(d):
    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d))
    Sigma0 = A @ A.T / d + 0.3 * np.eye(d)
    w0, x, y, r = 0.1 * rng.normal(size=d), rng.normal(size=d), -1.0, 0.7
    problem, w = build_arow_step(w0, Sigma0, x, y, r)
    solve_problem(problem, "CLARABEL")
    w1, _, updated = arow_step(w0, Sigma0, x, y, r)
    assert updated
    np.testing.assert_allclose(w.value, w1, atol=1e-6)
    assert arow_step_objective(w.value, w0, Sigma0, x, y, r) == pytest.approx(
        problem.value, abs=1e-7
    )


def test_arow_covariance_step_is_argmin():
    rng = np.random.default_rng(1)
    d = 4
    A = rng.normal(size=(d, d))
    Sigma0, x, r = A @ A.T / d + 0.5 * np.eye(d), rng.normal(size=d), 0.5
    problem, S = build_arow_covariance_step(Sigma0, x, r)
    solve_problem(problem, "SCS")  # Clarabel's exp-cone log det stops ~1e-4 off in Σ here
    _, S1, _ = arow_step(np.zeros(d), Sigma0, x, 1.0, r)
    np.testing.assert_allclose(S.value, S1, atol=1e-6)
    assert arow_covariance_objective(S.value, Sigma0, x, r) == pytest.approx(
        problem.value, abs=1e-6
    )


def _diagonal_state(rng, m, n, r):
    W, S = np.zeros((m, n)), np.ones((m, n))
    for q, p in _stream(rng, m, n, 5):
        W, S, _ = daroma_step(W, S, q, p, r)
    return W, S


def test_daroma_w_step_vectorised_is_arow_argmin():
    rng = np.random.default_rng(2)
    m, n, r = 3, 4, 0.5
    W, S = _diagonal_state(rng, m, n, r)  # a non-trivial Σ (not all ones)
    q, p = rng.normal(size=m), rng.normal(size=n)
    W1, _, updated = daroma_step(W, S, q, p, r)
    assert updated
    problem, w = build_arow_step(W.ravel(), S.ravel(), np.kron(q, p), 1.0, r)
    solve_problem(problem, "CLARABEL")
    np.testing.assert_allclose(w.value.reshape(m, n), W1, atol=1e-6)


def test_faroma_w_step_is_arow_argmin_with_kronecker_covariance():
    rng = np.random.default_rng(3)
    m, n, r = 3, 2, 0.8
    W, L, O = np.zeros((m, n)), np.eye(m), np.eye(n)
    for q, p in _stream(rng, m, n, 4):
        W, L, O, _ = faroma_step(W, L, O, q, p, r)
    q, p = rng.normal(size=m), rng.normal(size=n)
    W1, _, _, updated = faroma_step(W, L, O, q, p, r)
    assert updated
    # row-major vec: Cov(vec W) = Λ ⊗ Ω and x = q ⊗ p (eq. 10 in this orientation)
    problem, w = build_arow_step(W.ravel(), np.kron(L, O), np.kron(q, p), 1.0, r)
    solve_problem(problem, "CLARABEL")
    np.testing.assert_allclose(w.value.reshape(m, n), W1, atol=1e-6)


@pytest.mark.parametrize("mistake_driven", [False, True])
def test_daroma_equals_diagonal_arow_on_vec(mistake_driven):
    rng = np.random.default_rng(4)
    m, n, r = 4, 3, 0.3
    W, S = np.zeros((m, n)), np.ones((m, n))
    w, s = np.zeros(m * n), np.ones(m * n)
    for q, p in _stream(rng, m, n, 30):
        W, S, u1 = daroma_step(W, S, q, p, r, mistake_driven=mistake_driven)
        w, s, u2 = arow_diagonal_step(w, s, np.kron(q, p), 1.0, r, mistake_driven=mistake_driven)
        assert u1 == u2
        np.testing.assert_allclose(W.ravel(), w, rtol=0, atol=1e-13)
        np.testing.assert_allclose(S.ravel(), s, rtol=0, atol=1e-13)


def test_covariances_shrink_and_stay_positive():
    rng = np.random.default_rng(5)
    m, n, r = 4, 5, 0.1
    W, S, L, O = np.zeros((m, n)), np.ones((m, n)), np.eye(m), np.eye(n)
    Wf = np.zeros((m, n))
    for q, p in _stream(rng, m, n, 40):
        S_prev, L_prev, O_prev = S, L, O
        W, S, _ = daroma_step(W, S, q, p, r)
        Wf, L, O, _ = faroma_step(Wf, L, O, q, p, r)
        assert np.all(S > 0) and np.all(S <= S_prev)
        assert np.linalg.eigvalsh(L).min() > 0 and np.linalg.eigvalsh(O).min() > 0
        assert np.linalg.eigvalsh(L_prev - L).min() > -1e-12  # Λ decreases in the PSD order
        assert np.linalg.eigvalsh(O_prev - O).min() > -1e-12
