"""metric-learn's documented LMNN usage, with only the import changed (issue 37)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.neighbors import KNeighborsClassifier

import convexmetric
from convexmetric.metric_learn import LMNN


def test_the_documented_snippet_runs_with_only_the_import_changed():
    # metric-learn's doc/supervised.rst, "LMNN", Example Code; the import changed
    iris_data = load_iris()
    X = iris_data["data"]
    Y = iris_data["target"]

    lmnn = LMNN(n_neighbors=5, learn_rate=1e-6, verbose=False)
    lmnn.fit(X, Y)

    # what it means: convexmetric's LMNN with k=5 target neighbours and mu = 1 − 0.5
    assert lmnn.lmnn_.k_ == 5 and lmnn.lmnn_.mu == 0.5
    assert lmnn.lmnn_.targets_.shape == (150, 5)
    assert lmnn.components_.shape == (4, 4)
    M = lmnn.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, lmnn.components_.T @ lmnn.components_)
    np.testing.assert_allclose(lmnn.transform(X), X @ lmnn.components_.T)


def test_the_general_api_of_the_docs():
    # doc/supervised.rst, "Fit, transform, and so on", with LMNN for NCA
    X = np.array([[2.3, 3.6], [0.2, 0.5], [6.7, 2.1], [2.0, 3.0], [0.3, 0.9], [6.0, 2.5]])
    y = np.array(["dog", "cat", "dog", "dog", "cat", "dog"])
    lmnn = LMNN(n_neighbors=1).fit(X, y)
    pairs = [[[3.5, 3.6], [5.6, 2.4]], [[1.2, 4.2], [2.1, 6.4]], [[3.3, 7.8], [10.9, 0.1]]]
    d = lmnn.pair_distance(pairs)
    metric_fun = lmnn.get_metric()
    assert metric_fun([3.5, 3.6], [5.6, 2.4]) == pytest.approx(d[0])
    np.testing.assert_allclose(lmnn.pair_score(pairs), -d)
    with pytest.warns(FutureWarning, match="score_pairs"):
        np.testing.assert_allclose(lmnn.score_pairs(pairs), d)
    assert lmnn.get_mahalanobis_matrix().shape == (2, 2)


def test_regularization_is_one_minus_mu_and_convergence_tol_is_tol():
    X, y = load_iris(return_X_y=True)
    ml = LMNN(n_neighbors=3, regularization=0.3, convergence_tol=1e-3, max_iter=500).fit(X, y)
    ref = convexmetric.LMNN(k=3, mu=0.7, tol=1e-3, max_iter=500).fit(X, y)
    np.testing.assert_allclose(ml.components_, ref.components_)
    assert ml.n_iter_ == ref.n_iter_


def test_no_equivalent_raises_naming_the_equivalent():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=r"min_iter=10 has no equivalent.*convergence_tol"):
        LMNN(min_iter=10).fit(X, y)
    with pytest.raises(ValueError, match="'regularization'"):
        LMNN(regularization=1.5).fit(X, y)


def test_preprocessor_and_deprecated_k():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(FutureWarning, match="'k' was renamed 'n_neighbors'"):
        a = LMNN(k=2, preprocessor=X).fit(np.arange(len(X)), y)
    b = LMNN(n_neighbors=2).fit(X, y)
    np.testing.assert_allclose(a.components_, b.components_)
    np.testing.assert_allclose(a.transform(np.arange(3)), b.transform(X[:3]))
    np.testing.assert_allclose(a.pair_distance(np.array([[0, 1], [2, 3]])),
                               b.pair_distance(np.stack([X[[0, 2]], X[[1, 3]]], axis=1)))


def test_main_lmnn_n_neighbors_is_not_silent():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(FutureWarning, match="never the target neighbours: those are 'k'"):
        m = convexmetric.LMNN(n_neighbors=5).fit(X, y)
    assert m.k_ == 3 and m.predict_k_ == 5


def test_get_metric_is_a_snapshot_and_getters_return_copies():
    X, y = load_iris(return_X_y=True)
    for est in (LMNN(), convexmetric.LMNN(), convexmetric.KernelLMNN(kernel="linear")):
        est.fit(X, y)
        f = est.get_metric()
        before = f(X[0], X[60])
        M = est.get_mahalanobis_matrix()
        M[:] = 0.0
        assert not np.allclose(est.get_mahalanobis_matrix(), 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(3.0 * X, y)
        assert f(X[0], X[60]) == before
        assert est.get_metric()(X[0], X[60]) != pytest.approx(before)


def test_get_metric_plugs_into_knn_and_agrees_with_transform():
    X, y = load_iris(return_X_y=True)
    for est in (convexmetric.LMNN(k=3), convexmetric.KernelLMNN(k=3)):
        est.fit(X, y)
        knn = KNeighborsClassifier(n_neighbors=3, metric=est.get_metric()).fit(X, y)
        ref = KNeighborsClassifier(n_neighbors=3).fit(est.transform(X), y)
        np.testing.assert_array_equal(knn.predict(X), ref.predict(est.transform(X)))
