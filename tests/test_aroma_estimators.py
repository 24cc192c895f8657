"""Estimators, triplet stream, retrieval metrics, bad input and the retrieval reproduction."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from convexmetric import bilinear
from convexmetric.aroma.estimators import OASIS, DiagonalAROMA, FactoredAROMA
from convexmetric.datasets import bag_of_features, load
from convexmetric.metrics import mean_average_precision, precision_at_k

ESTIMATORS = [DiagonalAROMA, FactoredAROMA, OASIS]


@pytest.fixture(scope="module")
def small():
    return bag_of_features(120, 40, 3, n_tokens=6, group_size=4, class_groups=3, random_state=1)


def test_sample_triplets_invariants_and_determinism():
    y = np.array([0, 0, 0, 1, 1, 2, 3, 3])  # class 2 has one member: never a query
    T = bilinear.sample_triplets(y, 500, random_state=3)
    q, p, n = T.T
    assert np.all(y[q] == y[p]) and np.all(q != p) and np.all(y[q] != y[n])
    assert not np.any(q == 5) and set(np.unique(n)) == set(range(8)) - set()
    np.testing.assert_array_equal(T, bilinear.sample_triplets(y, 500, random_state=3))
    with pytest.raises(ValueError, match="admits no triplet"):
        bilinear.sample_triplets([0, 1, 2], 5)


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_fit_deterministic_and_equal_to_the_stream(Est, small):
    X, y = small
    a = Est(max_iter=300, random_state=7).fit(X, y)
    b = Est(max_iter=300, random_state=7).fit(X.toarray(), y)  # dense path, same iterates
    np.testing.assert_allclose(a.W_, b.W_, atol=1e-12)
    T = bilinear.sample_triplets(y, 300, random_state=7)
    c = Est()
    for t in (T[:100], T[100:250]):  # blocks of rows ...
        c.partial_fit_triplets(X[t[:, 0]], X[t[:, 1]], X[t[:, 2]])
    for i, j, k in T[250:]:  # ... then one triplet at a time, mixing dense and sparse
        c.partial_fit_triplets(X[i].toarray().ravel(), X[j], X[k])
    np.testing.assert_allclose(a.W_, c.W_, atol=1e-12)
    assert a.n_rounds_ == c.n_rounds_ == 300 and a.n_updates_ == c.n_updates_ > 0
    assert a.result_.iterations == 300 and a.result_.matrix is a.W_


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_fit_does_not_depend_on_the_triplet_chunk(Est, small, monkeypatch):
    import convexmetric.aroma.base as base

    X, y = small
    whole = Est(max_iter=300, random_state=7).fit(X, y).W_
    monkeypatch.setattr(base, "TRIPLET_CHUNK", 37)  # 300 triplets in 9 chunks, one short
    chunked = Est(max_iter=300, random_state=7).fit(X, y).W_
    np.testing.assert_array_equal(whole, chunked)


def test_fitted_attributes(small):
    X, y = small
    f = FactoredAROMA(r=0.5, max_iter=200, random_state=0).fit(X, y)
    assert f.Lambda_.shape == (40, 40) and f.Omega_.shape == (40, 40)
    np.testing.assert_allclose(f.Lambda_, f.Lambda_.T)
    assert np.linalg.eigvalsh(f.Omega_).min() > 0
    d = DiagonalAROMA(r=0.5, max_iter=200, random_state=0).fit(X, y)
    assert np.all((d.Sigma_ > 0) & (d.Sigma_ <= 1))
    assert 0 <= d.n_mistakes_ <= d.n_updates_ <= 200 and d.average_loss_ > 0


def test_non_square_partial_fit_and_scoring():
    rng = np.random.default_rng(0)
    Q, Pp, Pn = rng.normal(size=(50, 3)), rng.normal(size=(50, 5)), rng.normal(size=(50, 5))
    for Est in ESTIMATORS:
        m = Est().partial_fit_triplets(Q, Pp, Pn)
        assert m.W_.shape == (3, 5)
        s = m.score_pairs(Q[:4], Pp[:4])
        np.testing.assert_allclose(s, [Q[i] @ m.W_ @ Pp[i] for i in range(4)])
        S = m.similarity(Q[:4], Pp)
        np.testing.assert_array_equal(m.rank(Q[0], Pp), np.argsort(-S[0], kind="stable"))
        with pytest.raises(ValueError, match=r"q has 5 features, but .* is expecting 3 features"):
            m.partial_fit_triplets(Pp[:2], Pp[:2], Pn[:2])
        with pytest.raises(ValueError, match="'P' has 3 features"):
            m.similarity(Q, Q)


def test_retrieval_metrics_hand_computed():
    S = np.array([[0.0, 2, 1, 3], [2, 0, 1, 0], [1, 1, 0, 2], [3, 0, 2, 0]])
    y = [0, 0, 1, 1]
    # rankings: q0 → 3,1,2 (rel F,T,F); q1 → 0,2,3 (T,F,F); q2 → 3,0,1 (T,F,F); q3 → 0,2,1
    np.testing.assert_allclose(precision_at_k(S, y, [1, 2, 3]), [0.5, 0.5, 1 / 3])
    assert mean_average_precision(S, y) == pytest.approx((0.5 + 1 + 1 + 0.5) / 4)
    with pytest.raises(ValueError, match="'k' must hold integers"):
        precision_at_k(S, y, 4)


@pytest.mark.parametrize("Est,name", [(DiagonalAROMA, "r"), (FactoredAROMA, "r"), (OASIS, "C")])
@given(bad=st.one_of(st.floats(max_value=0.0), st.just(float("nan")), st.just(float("inf"))))
@settings(max_examples=8, deadline=None)
def test_bad_regulariser(Est, name, bad):
    X, y = np.eye(4), [0, 0, 1, 1]
    msg = f"The '{name}' parameter of {Est.__name__} must be a float in the range \\(0, inf\\)"
    with pytest.raises(ValueError, match=msg):
        Est(**{name: bad}).fit(X, y)


@given(pos=st.integers(0, 2), bad=st.sampled_from([np.nan, np.inf, -np.inf]))
@settings(max_examples=12, deadline=None)
def test_nan_inf_named(pos, bad):
    args = [np.ones((2, 3)), np.ones((2, 4)), np.zeros((2, 4))]
    args[pos][1, 1] = bad
    name = ["q", "p_pos", "p_neg"][pos]
    with pytest.raises(ValueError, match=f"'{name}' contains NaN or inf"):
        DiagonalAROMA().partial_fit_triplets(*args)
    with pytest.raises(ValueError, match="'X' contains NaN or inf"):
        OASIS().fit(np.full((4, 2), bad), [0, 0, 1, 1])


def test_other_bad_input():
    with pytest.raises(ValueError, match="'max_iter' parameter of OASIS"):
        OASIS(max_iter=-1).fit(np.eye(4), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="'init' parameter of OASIS"):
        OASIS(init="random").fit(np.eye(4), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="'mistake_driven' parameter"):
        DiagonalAROMA(mistake_driven="yes").fit(np.eye(4), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="'y' has 3 labels but X has 4 rows"):
        FactoredAROMA().fit(np.eye(4), [0, 0, 1])
    with pytest.raises(ValueError, match="p_pos and p_neg of equal shape"):
        DiagonalAROMA().partial_fit_triplets(np.ones(3), np.ones(4), np.ones(5))
    with pytest.raises(NotFittedError):
        OASIS().similarity(np.eye(3))
    with pytest.raises(ValueError, match=r"'q' must be a 2-dimensional"):
        DiagonalAROMA().partial_fit_triplets(np.ones((2, 2, 2)), np.ones(2), np.ones(2))


def test_retrieval_reproduction_small():
    """§5 in miniature: every learner beats W = I; AROMA ≥ OASIS at equal rounds (2 folds)."""
    path = Path(__file__).resolve().parents[1] / "examples" / "aroma" / "aroma_retrieval.py"
    spec = importlib.util.spec_from_file_location("aroma_retrieval", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)  # the example's own driver
    X, y = bag_of_features(300, 200, 5, n_tokens=14, group_size=10, class_groups=4)
    ks = np.array([1, 10])
    curves, _maps, _updates, trace = example.run(
        X, y, n_iter=3000, folds=2, trace_every=1000, r=1.0, C=0.1, ks=ks
    )
    p10 = {k: np.mean(v, axis=0)[1] for k, v in curves.items()}
    assert min(p10["OASIS"], p10["d-AROMA"], p10["f-AROMA"]) > p10["identity"] + 0.1
    assert p10["d-AROMA"] >= p10["OASIS"] and p10["f-AROMA"] >= p10["OASIS"]
    assert len(trace["f-AROMA"]) == 3


def test_bow_dataset_registered():
    X, y = load("bow")
    assert sp.issparse(X) and X.shape == (1000, 1000)
    assert 20 <= np.median(np.diff(X.indptr)) <= 35 and len(np.unique(y)) == 10


def test_partial_fit_is_incremental_fit_on_labelled_batches():
    X, y = bag_of_features(120, 30, 3, group_size=5, class_groups=2, random_state=0)
    for Est in ESTIMATORS:
        m = Est(max_iter=100, random_state=0)
        m.partial_fit(X[:60], y[:60])
        assert m.n_rounds_ == 100 and m.n_features_in_ == 30
        W1 = m.W_.copy()
        m.partial_fit(X[60:], y[60:])
        assert m.n_rounds_ == 200 and not np.allclose(m.W_, W1)
        again = Est(max_iter=100, random_state=0)
        again.partial_fit(X[:60], y[:60]).partial_fit(X[60:], y[60:])
        np.testing.assert_allclose(again.W_, m.W_)  # seeded: the same stream
        with pytest.raises(ValueError, match="is expecting 30 features"):
            m.partial_fit(X[:, :-1], y)
        assert Est().__sklearn_tags__().input_tags.sparse
