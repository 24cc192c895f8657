"""SSNE (Batra & Shakhnarovich): objective, exact gradient, group sparsity, estimator."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad

from convexmetric import datasets
from convexmetric.ssne.estimator import SSNE, label_pairs
from convexmetric.ssne.solver import (
    SSNESettings,
    embed,
    features,
    group_norm,
    group_soft_threshold,
    loss_and_grad,
    objective,
    ssne_bcd,
)


@pytest.fixture(scope="module")
def iris_std():
    X, y = datasets.load("iris")
    return (X - X.mean(0)) / X.std(0), y


def test_hand_computed_objective():
    # x = 0, z = 1, W = [[0, 2], [2, 0]]: h(x) = (−t, 0), h(z) = (−t, −t), t = tanh(1),
    # so H(x) = (−1, 0), H(z) = −(1, 1)/√2, Ŝ = 1/√2; with s = 0, λ = 2:
    # J = 2·(1/√2)² + ‖(0, 2)‖ + ‖(2, 0)‖ = 1 + 4 = 5.
    X = np.array([[0.0], [1.0]])
    W = np.array([[0.0, 2.0], [2.0, 0.0]])
    _, _, H = embed(features(X), W)
    assert np.allclose(H, [[-1.0, 0.0], [-(2**-0.5), -(2**-0.5)]])
    assert objective(X, [0], [1], [0.0], W, 2.0) == pytest.approx(5.0)
    # M = 1: H = ±1, here opposite signs, so Ŝ = −1 and (1 − (−1))² = 4
    W1 = np.array([[2.0], [0.0]])
    assert objective(np.array([[1.0], [-1.0]]), [0], [1], [1.0], W1, 0.5) == pytest.approx(4.0)


def test_h_is_the_papers_formula():
    rng = np.random.default_rng(1)
    Phi, W = features(rng.normal(size=(5, 3))), rng.normal(size=(4, 6))
    h, r, H = embed(Phi, W)
    assert np.allclose(h, 2.0 / (1.0 + np.exp(Phi @ W)) - 1.0)
    assert np.allclose(np.linalg.norm(H, axis=1), 1.0) and np.allclose(r, np.linalg.norm(h, axis=1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_check(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(12, 3))
    I, J = np.triu_indices(12, 1)
    s = rng.uniform(-1, 1, len(I))
    Phi, shape = features(X), (4, 5)

    def f(w):
        return loss_and_grad(Phi, I, J, s, w.reshape(shape), 0.3)[0]

    def g(w):
        return loss_and_grad(Phi, I, J, s, w.reshape(shape), 0.3)[1].ravel()

    w0 = rng.normal(size=shape).ravel()
    assert check_grad(f, g, w0) < 1e-5 * max(1.0, np.linalg.norm(g(w0)))
    # a block of columns gets exactly the matching columns of the full gradient
    _, gb = loss_and_grad(Phi, I, J, s, w0.reshape(shape), 0.3, [3, 1])
    assert np.allclose(gb, g(w0).reshape(shape)[:, [3, 1]])
    # loss + group norm is eq. (3)
    assert f(w0) + group_norm(w0.reshape(shape)) == pytest.approx(
        objective(X, I, J, s, w0.reshape(shape), 0.3)
    )


def test_group_soft_threshold_is_the_prox():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, 6)) * np.array([0.1, 3, 0.2, 4, 1, 0.05])
    t = 0.8
    P = group_soft_threshold(W, t)
    for m in range(6):
        if np.linalg.norm(W[:, m]) <= t:
            assert np.all(P[:, m] == 0.0)  # exactly zero, not small
        else:  # optimality: (p − w)/t + p/‖p‖ = 0
            p = P[:, m]
            assert np.allclose((p - W[:, m]) / t + p / np.linalg.norm(p), 0.0)


def test_small_lam_zeroes_whole_columns(iris_std):
    X, y = iris_std
    kw = dict(n_components=12, max_iter=15, random_state=0)
    dense = SSNE(loss_weight=1000.0, **kw).fit(X, y)
    sparse = SSNE(loss_weight=10.0, **kw).fit(X, y)
    assert len(dense.active_components_) == 12
    assert 1 <= len(sparse.active_components_) < 12
    zero = np.setdiff1d(np.arange(12), sparse.active_components_)
    assert np.all(sparse.W_[:, zero] == 0.0)  # whole columns, bias row included
    Z = sparse.transform(X)
    assert np.all(Z[:, zero] == 0.0)  # the embedding uses fewer dimensions
    assert np.linalg.matrix_rank(Z) <= len(sparse.active_components_)
    assert np.allclose(np.linalg.norm(Z, axis=1), 1.0)
    with pytest.warns(UserWarning, match="Every column of W is zero"):
        none = SSNE(loss_weight=0.0, **kw).fit(X, y)
    assert np.all(none.W_ == 0.0) and np.all(none.transform(X) == 0.0)


def test_same_random_state_same_result(iris_std):
    X, y = iris_std
    a = SSNE(n_components=6, max_iter=4, n_restarts=2, random_state=3).fit(X, y)
    b = SSNE(n_components=6, max_iter=4, n_restarts=2, random_state=3).fit(X, y)
    c = SSNE(n_components=6, max_iter=4, n_restarts=2, random_state=4).fit(X, y)
    assert np.array_equal(a.W_, b.W_) and a.result_.history == b.result_.history
    assert not np.array_equal(a.W_, c.W_)
    objs = a.result_.info["restart_objectives"]
    assert len(objs) == 2 and a.objective_ == min(objs)
    assert len(a.result_.info["histories"]) == 2


def test_fit_lowers_the_objective_and_separates_classes(iris_std):
    X, y = iris_std
    m = SSNE(n_components=8, max_iter=20, random_state=0).fit(X, y)
    hist = m.result_.history
    assert m.objective_ == min(hist) < 0.6 * hist[0]  # the best iterate is returned
    S = m.similarity(X, X)
    same = y[:, None] == y[None, :]
    assert S[same].mean() > 0.75 and abs(S[~same].mean()) < 0.25  # targets +1 and 0
    assert m.result_.solver == "ssne-bcd" and m.result_.success


def test_block_coordinate_variant_runs(iris_std):
    X, y = iris_std
    m = SSNE(n_components=8, n_blocks=4, max_iter=5, random_state=0).fit(X, y)
    assert m.result_.history[-1] < m.result_.history[0]


def test_pair_inputs_agree():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    idx = np.array([[0, 1], [2, 3], [4, 5], [1, 7], [8, 9]])
    s = np.array([1.0, -1.0, 0.5, 0.0, -0.2])
    kw = dict(n_components=3, max_iter=5, batch_size=2, random_state=0)
    a = SSNE(**kw).fit(X, s, pairs=idx)
    b = SSNE(**kw).fit(X[idx], s)  # (Q, 2, d) pairs of points
    assert np.allclose(a.W_, b.W_)
    assert a.objective_ == pytest.approx(objective(X, idx[:, 0], idx[:, 1], s, a.W_, 1.0 * 100 / 5))


def test_label_pairs_sampled_are_distinct_upper_pairs():
    y = np.arange(40) % 3
    I, J, s = label_pairs(y, max_pairs=300, random_state=0)
    assert len(I) == 300 and np.all(I < J) and J.max() < 40
    assert len(set(zip(I.tolist(), J.tolist()))) == 300
    assert np.array_equal(s, np.where(y[I] == y[J], 1.0, 0.0))
    I2, _, s2 = label_pairs(y, dissimilar=-1.0)
    assert len(I2) == 40 * 39 // 2 and set(s2) == {1.0, -1.0}


def test_solver_callback_and_status():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 2))
    I, J = np.triu_indices(8, 1)
    s = np.where(X[I, 0] * X[J, 0] > 0, 1.0, 0.0)
    st_ = SSNESettings(max_iter=50, callback=lambda e, f, step: e >= 3)
    res = ssne_bcd(X, I, J, s, 1.0, rng.normal(size=(3, 2)), st_, random_state=0)
    assert res.status == "user_limit" and res.iterations == 3 and len(res.history) == 4


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_components": 0}, r"'n_components' parameter of SSNE must be an int in the range \[1"),
        (
            {"loss_weight": -1.0},
            r"'loss_weight' parameter of SSNE must be a float in the range \[0.0, inf\)",
        ),
        ({"loss_weight": float("nan")}, "'loss_weight' parameter"),
        ({"dissimilar": -2.0}, "'dissimilar' parameter"),
        ({"n_blocks": 9, "n_components": 4}, "'n_blocks' parameter of SSNE must not exceed"),
    ],
)
def test_bad_parameters(params, match):
    X, y = np.eye(4), np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match=match):
        SSNE(**params).fit(X, y)


def test_bad_data():
    X, y = np.eye(4), np.array([0, 0, 1, 1])
    Xn = X.copy()
    Xn[1, 2] = np.nan
    with pytest.raises(ValueError, match="'X' contains NaN or inf"):
        SSNE().fit(Xn, y)
    with pytest.raises(ValueError, match="'s' must lie in \\[-1, 1\\]"):
        SSNE().fit(X, [1.0, 1.5], pairs=[[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="'s' contains NaN or inf"):
        SSNE().fit(X, [1.0, np.inf], pairs=[[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="'pairs' holds index 7"):
        SSNE().fit(X, [1.0], pairs=[[0, 7]])
    with pytest.raises(ValueError, match="'pairs' contains NaN or inf"):
        SSNE().fit(np.full((2, 2, 3), np.inf), [0.0, 1.0])
    with pytest.raises(ValueError, match="'y' has 3 labels"):
        SSNE().fit(X, [0, 1, 0])
    with pytest.raises(ValueError, match="not fitted"):
        SSNE().transform(X)
    m = SSNE(max_iter=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="is expecting 4 features"):
        m.transform(np.eye(3))


@settings(max_examples=25, deadline=None)
@given(
    s=st.lists(
        st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=2, max_size=2
    ).filter(lambda v: not all(np.isfinite(x) and abs(x) <= 1 for x in v))
)
def test_targets_outside_the_range_are_rejected(s):
    with pytest.raises(ValueError, match="'s'"):
        SSNE(max_iter=1).fit(np.eye(3), s, pairs=[[0, 1], [1, 2]])


@settings(max_examples=25, deadline=None)
@given(M=st.one_of(st.integers(max_value=0), st.floats(), st.text(max_size=2)))
def test_bad_n_components_named(M):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="'n_components' parameter of SSNE"):
            SSNE(n_components=M).fit(np.eye(3), [0, 1, 1])


def test_table1_protocol_on_iris_one_repeat():
    """The example's protocol (examples/ssne/ssne_table1.py), cut to one 2-fold split."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "ssne" / "ssne_table1.py"
    spec = importlib.util.spec_from_file_location("ssne_table1", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    cols, chosen = example.run("iris", 1, [100.0], with_lmnn=False)
    assert chosen == [100.0, 100.0] and len(cols["SSNE"]) == 2
    assert np.mean(cols["SSNE"]) >= 94.0


def test_docstring_examples():
    import doctest

    import convexmetric.ssne.estimator as estimator_module
    import convexmetric.ssne.solver as solver_module

    for mod in (solver_module, estimator_module):
        assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0


def test_time_limit_bounds_all_restarts_together():
    X, y = datasets.load("iris")
    m = SSNE(n_components=3, max_iter=50, n_restarts=3, time_limit=1e-9, random_state=0)
    r = m.fit(X, y).result_
    assert len(r.info["restart_objectives"]) == 1 and r.status == "user_limit"
    free = SSNE(n_components=3, max_iter=3, n_restarts=3, random_state=0).fit(X, y).result_
    assert len(free.info["restart_objectives"]) == 3 and free.status == "iteration_limit"
