"""Result type, cone projections, the subgradient and smoothing drivers, validation, data."""

import numpy as np
import pytest

from convexmetric import datasets
from convexmetric._input_checks import check_indices, check_matrix, check_scalar
from convexmetric.cones import (
    FullSpace,
    NonnegativeDiagonal,
    NonnegativeOrthant,
    ProductCone,
    PSDCone,
    is_psd,
)
from convexmetric.optim.subgradient import SubgradientSettings, projected_subgradient
from convexmetric.result import SolveResult, relative_gap


def test_psd_projection_is_the_nearest_psd_matrix():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    A = A + A.T
    P = PSDCone().project(A)
    assert is_psd(P)
    # the projection error is the negative part of the spectrum (eq. 20)
    w = np.linalg.eigvalsh(A)
    assert np.isclose(np.linalg.norm(A - P), np.linalg.norm(np.minimum(w, 0)))
    # idempotent, and any other PSD matrix is no closer
    assert np.allclose(PSDCone().project(P), P)
    B = rng.normal(size=(6, 6))
    B = B @ B.T
    assert np.linalg.norm(A - B) >= np.linalg.norm(A - P) - 1e-12


def test_other_cones():
    X = np.array([[1.0, 2.0], [3.0, -4.0]])
    assert np.array_equal(NonnegativeDiagonal().project(X), np.diag([1.0, 0.0]))
    assert np.array_equal(NonnegativeDiagonal().project(np.array([-1.0, 2.0])), [0.0, 2.0])
    assert np.array_equal(NonnegativeOrthant().project(X), np.maximum(X, 0))
    assert np.array_equal(FullSpace().project(X), X)
    prod = ProductCone([PSDCone(), NonnegativeOrthant()])
    out = prod.project([-np.eye(2), X])
    assert np.allclose(out[0], 0) and np.array_equal(out[1], np.maximum(X, 0))
    assert prod.contains(out)


def test_result_gap_and_summary():
    r = SolveResult(matrix=np.eye(2), objective=2.0, status="optimal", lower_bound=1.5)
    assert r.gap == 0.5 and r.success and r.matrices[0] is r.matrix
    assert set(r.summary()) >= {"objective", "status", "iterations", "seconds", "solver", "gap"}
    assert relative_gap(1.01, 1.0) == pytest.approx(0.01)


def _l1(x):
    return float(np.abs(x - 2).sum()), np.sign(x - 2)


@pytest.mark.parametrize("rule", ["adaptive", "diminishing"])
def test_subgradient_driver_minimises_a_nonsmooth_function(rule):
    res = projected_subgradient(
        _l1, np.zeros(3), NonnegativeOrthant(), step_rule=rule, max_iter=20000, step=0.5
    )
    assert res.objective < 1e-2
    assert res.history[0] == 6.0 and min(res.history) <= res.objective + 1e-12


def test_subgradient_driver_respects_the_cone():
    # minimum of |x + 1| over x >= 0 is at 0
    res = projected_subgradient(
        lambda x: (float(np.abs(x + 1).sum()), np.sign(x + 1)), np.ones(2), NonnegativeOrthant()
    )
    assert np.all(res.matrix >= 0) and res.objective == pytest.approx(2.0, abs=1e-6)


def test_time_up_returns_best_iterate_and_ctrl_c_propagates():
    from convexmetric.optim.deadline import TimeUp

    def oracle_raising(exc):
        calls = []

        def oracle(x):
            calls.append(1)
            if len(calls) > 5:
                raise exc
            return _l1(x)

        return oracle

    res = projected_subgradient(oracle_raising(TimeUp("limit")), np.zeros(3), NonnegativeOrthant())
    assert res.status == "user_limit" and res.objective <= 6.0
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C is no time limit: the caller gets it
        projected_subgradient(oracle_raising(KeyboardInterrupt), np.zeros(3), NonnegativeOrthant())


def test_time_limit_and_callback_stop():
    res = projected_subgradient(_l1, np.zeros(3), NonnegativeOrthant(), time_limit=0.0)
    assert res.status == "user_limit"
    res = projected_subgradient(_l1, np.zeros(3), FullSpace(), callback=lambda i, f, a: i >= 3)
    assert res.status == "user_limit" and res.iterations == 3


def test_max_iter_gives_optimal_inaccurate():
    s = SubgradientSettings(max_iter=2, step=1e-6)
    assert projected_subgradient(_l1, np.zeros(3), FullSpace(), s).status == "optimal_inaccurate"


def test_check_scalar_messages():
    with pytest.raises(ValueError, match=r"The 'k' parameter of LMNN must be an int in the range"):
        check_scalar(0, "k", int, min_val=1, owner="LMNN")
    with pytest.raises(ValueError, match=r"\(0, inf\)\. Got -1"):
        check_scalar(-1, "C", float, min_val=0, closed="neither")
    with pytest.raises(ValueError):
        check_scalar(True, "k", int)
    with pytest.raises(ValueError):
        check_scalar(float("nan"), "mu", float)
    assert check_scalar(2, "mu", float) == 2.0


def test_check_matrix_and_indices():
    with pytest.raises(ValueError, match="'X' contains NaN or inf"):
        check_matrix([[1.0, np.inf]], "X")
    with pytest.raises(ValueError, match="2-dimensional"):
        check_matrix([1.0, 2.0], "X")
    with pytest.raises(ValueError, match=r"'pairs' holds index 5, outside the range \[0, 5\)"):
        check_indices([0, 5], 5, "pairs")


def test_datasets_and_standard_split():
    X, y = datasets.load("wine")
    assert X.shape == (178, 13)
    Xtr, Xte, ytr, _yte = datasets.split(X, y)
    assert Xtr.shape[0] == 124 and Xte.shape[0] == 54
    assert np.allclose(Xtr.mean(axis=0), 0, atol=1e-12)
    # stratified: class proportions preserved
    assert np.allclose(np.bincount(ytr) / len(ytr), np.bincount(y) / len(y), atol=0.02)
    with pytest.raises(ValueError, match="Unknown dataset"):
        datasets.load("nope")


def test_zebra_is_seeded_and_striped():
    X1, y1 = datasets.zebra_stripes(random_state=3)
    X2, y2 = datasets.zebra_stripes(random_state=3)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    # horizontal spread dominates; labels follow the vertical bands
    assert X1[:, 0].std() > 3 * X1[:, 1].std()
    band = np.floor((X1[:, 1] + 4) / 0.2).astype(int)  # 40 stripes of height 0.2
    assert np.array_equal(band % 2, y1)


@pytest.mark.parametrize("pairs", [3, 40, 400])  # direct sum, touched rows, all rows
def test_pair_scatter_times_a_factor(pairs):
    """``pair_scatter(..., left=X Lᵀ)`` is ``L`` times the ``d × d`` scatter."""
    from convexmetric.linalg import pair_scatter

    rng = np.random.default_rng(pairs)
    X, L = rng.standard_normal((60, 9)), rng.standard_normal((4, 9))
    a, b = rng.integers(0, 60, pairs), rng.integers(0, 60, pairs)
    w = rng.standard_normal(pairs)
    full = pair_scatter(X, a, b, w)
    np.testing.assert_allclose(pair_scatter(X, a, b, w, left=X @ L.T), L @ full, atol=1e-10)
    assert pair_scatter(X, a[:0], b[:0], w[:0], left=X @ L.T).shape == (4, 9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pair_scatter_in_chunks_and_lanes(monkeypatch, dtype):
    """The touched rows in chunks of ``SCATTER_ROWS``, in one thread or two: the same sum
    bit for bit, and the outer products' sum to rounding (repeated pairs, a row paired
    with itself, untouched rows)."""
    from convexmetric import linalg

    monkeypatch.setattr(linalg, "SCATTER_ROWS", 7)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 8)).astype(dtype)
    L = rng.standard_normal((4, 8)).astype(dtype)
    a, b = rng.integers(0, 200, 15_000), rng.integers(0, 200, 15_000)  # (not a direct sum)
    b[:10] = a[:10]  # self-pairs (zero differences); repeated pairs abound
    w = rng.standard_normal(15_000)
    U = (X[a] - X[b]).astype(float)
    direct = (U.T * w) @ U
    for left, want in ((None, direct), (X @ L.T, L.astype(float) @ direct)):
        one = linalg.pair_scatter(X, a, b, w, left)
        assert one.dtype == dtype
        assert np.array_equal(one, linalg.pair_scatter(X, a, b, w, left, threads=2))
        rtol = 1e-4 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(one, want, rtol=rtol, atol=rtol * np.abs(want).max())


def test_row_distances_in_chunks():
    from convexmetric.linalg import row_distances

    rng = np.random.default_rng(1)
    Z = rng.standard_normal((30, 4))
    a, b = rng.integers(0, 30, 50), rng.integers(0, 30, 50)
    want = ((Z[a] - Z[b]) ** 2).sum(1)
    np.testing.assert_allclose(row_distances(Z, a, b, chunk=7), want, rtol=1e-13)
    assert row_distances(Z, a[:0], b[:0]).shape == (0,)


def test_distances_do_not_depend_on_the_chunk():
    """The default chunk (by bytes: 64 rows or more) gives the same values, bit for bit,
    as one chunk or chunks of 7, for pairs and for targets."""
    from convexmetric.linalg import row_distances, target_distances

    rng = np.random.default_rng(2)
    Z = rng.standard_normal((3000, 300)) * 1e3
    a, b = rng.integers(0, 3000, 5000), rng.integers(0, 3000, 5000)
    T = rng.integers(0, 3000, (3000, 3))
    one = row_distances(Z, a, b, chunk=len(a))
    assert np.array_equal(row_distances(Z, a, b), one)
    assert np.array_equal(row_distances(Z, a, b, chunk=7), one)
    Dt = target_distances(Z, T, chunk=len(Z))
    assert np.array_equal(target_distances(Z, T), Dt)
    assert np.array_equal(target_distances(Z, T, chunk=7), Dt)
    assert np.array_equal(Dt[:, 1], row_distances(Z, np.arange(3000), T[:, 1]))
