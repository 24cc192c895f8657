"""Stream engines (sparse and dense) reproduce the reference steps; the batch problem."""

import numpy as np
import pytest
import scipy.sparse as sp

from convexmetric import bilinear
from convexmetric.aroma.steps import daroma_step, faroma_step, oasis_step
from convexmetric.aroma.stream import DiagonalEngine, FactoredEngine, OasisEngine
from convexmetric.problems.bilinear import design_matrix, objective, solve_batch


def _rows(T, m, n, seed):
    Q = sp.random(T, m, density=0.5, format="csr", random_state=seed)
    D = sp.random(T, n, density=0.4, format="csr", random_state=seed + 1) - sp.random(
        T, n, density=0.3, format="csr", random_state=seed + 2
    )
    return Q, D


def _reference(kind, Q, D, m, n, md):
    W, S, L, O, count = np.zeros((m, n)), np.ones((m, n)), np.eye(m), np.eye(n), 0
    if kind == "oasis":
        W = np.eye(m, n)
    for t in range(Q.shape[0]):
        q, p = Q[t].toarray().ravel(), D[t].toarray().ravel()
        if kind == "diagonal":
            W, S, up = daroma_step(W, S, q, p, 0.5, mistake_driven=md)
        elif kind == "factored":
            W, L, O, up = faroma_step(W, L, O, q, p, 0.5, mistake_driven=md)
        else:
            W, up = oasis_step(W, q, p, 0.3, mistake_driven=md)
        count += up
    return W, S, L, O, count


@pytest.mark.parametrize("kind", ["diagonal", "factored", "oasis"])
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("md", [False, True])
def test_engine_matches_reference(kind, sparse, md):
    m, n, T = 6, 5, 40
    Q, D = _rows(T, m, n, 3)
    if kind == "diagonal":
        eng = DiagonalEngine(m, n, 0.5, md)
    elif kind == "factored":
        eng = FactoredEngine(m, n, 0.5, md)
    else:
        eng = OasisEngine(m, n, 0.3, md, W0=np.eye(m, n))
    eng.run(Q, D) if sparse else eng.run(Q.toarray(), D.toarray())
    W, S, L, O, count = _reference(kind, Q, D, m, n, md)
    assert eng.updates == count > 0
    np.testing.assert_allclose(eng.W, W, atol=1e-12)
    if kind == "diagonal":
        np.testing.assert_allclose(eng.Sigma, S, atol=1e-12)
    if kind == "factored":
        np.testing.assert_allclose(eng.Lambda, L, atol=1e-12)
        np.testing.assert_allclose(eng.Omega, O, atol=1e-12)


def test_sparse_round_touches_only_the_block():
    m, n = 30, 40
    eng = DiagonalEngine(m, n, 1.0)
    q = sp.csr_matrix(([1.0, 2.0], ([0, 0], [3, 17])), shape=(1, m))
    p = sp.csr_matrix(([1.0, -1.0, 0.5], ([0, 0, 0], [1, 8, 39])), shape=(1, n))
    eng.run(q, p)
    changed = np.argwhere(eng.Sigma != 1.0)
    assert set(map(tuple, changed)) == {(i, j) for i in (3, 17) for j in (1, 8, 39)}
    assert set(map(tuple, np.argwhere(eng.W != 0))) == set(map(tuple, changed))


def test_factored_blas_updates_in_place():
    eng = FactoredEngine(4, 3, 1.0)
    W, Lam, Om = eng.W, eng.Lam, eng.Om
    eng.run(np.ones((3, 4)), np.eye(3))
    assert eng.W is W and eng.Lam is Lam and eng.Om is Om and eng.updates == 3


def test_batch_numpy_objective_equals_cvxpy_value():
    rng = np.random.default_rng(0)
    Q, P = rng.normal(size=(10, 3)), rng.normal(size=(10, 4))
    T = rng.integers(0, 10, (25, 3))
    W, value, status, _ = solve_batch(Q, P, T, C=0.7, solver="CLARABEL")
    assert status == "optimal"
    assert objective(W, Q, P, T, 0.7) == pytest.approx(value, rel=1e-7)
    _W2, value2, _, _ = solve_batch(Q, P, T, C=0.7, solver="SCS")
    assert value2 == pytest.approx(value, rel=1e-5)
    # any other W (an online learner's) is no better than the optimum
    eng = DiagonalEngine(3, 4, 1.0)
    eng.run(*bilinear.triplet_differences(Q, P, np.tile(T, (5, 1))))
    assert objective(eng.W, Q, P, T, 0.7) >= value - 1e-8


def test_design_matrix_gives_the_margins():
    rng = np.random.default_rng(1)
    Q = sp.random(8, 5, density=0.4, format="csr", random_state=1)
    P = sp.random(8, 6, density=0.4, format="csr", random_state=2)
    T = rng.integers(0, 8, (12, 3))
    W = rng.normal(size=(5, 6))
    np.testing.assert_allclose(
        design_matrix(Q, P, T) @ W.ravel(), bilinear.triplet_margins(W, Q, P, T), atol=1e-12
    )
    Qd, Pd = Q.toarray(), P.toarray()
    direct = [Qd[a] @ W @ (Pd[b] - Pd[c]) for a, b, c in T]
    np.testing.assert_allclose(bilinear.triplet_margins(W, Qd, Pd, T), direct, atol=1e-12)
