"""The one base of the LMNN estimators (``convexmetric.lmnn.base``): small classes,
``predict_k``, and prediction written once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import check_fit2d_1feature

from convexmetric import LMNN, KernelLMNN, MultiMetricLMNN
from convexmetric.lmnn.base import LMNNBaseEstimator, SmallClassWarning

THREE = (LMNN, KernelLMNN, MultiMetricLMNN)


def _small_class():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(8, 2)), rng.normal(size=(8, 2)) + 3, rng.normal(size=(3, 2)) - 3]
    return X, np.repeat([0, 1, 2], [8, 8, 3])


@pytest.mark.parametrize("cls", THREE)
def test_a_small_class_takes_fewer_target_neighbours_with_a_warning(cls):
    X, y = _small_class()
    with pytest.warns(SmallClassWarning, match="class 2 of 'y' has 3 members.*get 2 target"):
        m = cls(k=3).fit(X, y)
    assert issubclass(cls, LMNNBaseEstimator)
    assert m.k_ == 3 and m.targets_.shape == (len(y), 3) and m.predict_k_ == 3
    # only class 2's points have fewer (two), their third slot padded with themselves
    own = (m.targets_ == np.arange(len(y))[:, None]).sum(axis=1)
    assert own.tolist() == [0] * 16 + [1] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallClassWarning)
        ref = cls(k=2, predict_k=3).fit(X, y)  # the former rule: every point at k = 2
    assert abs(m.objective_ - ref.objective_) > 1e-3 * ref.objective_


@pytest.mark.parametrize("cls", THREE)
def test_a_class_of_one_point_has_no_target_and_only_classes_of_one_are_refused(cls):
    X, y = _small_class()
    with pytest.warns(SmallClassWarning, match="class 2 of 'y' has a single member: it has"):
        m = cls(k=1).fit(X[:17], y[:17])
    assert m.targets_[16].tolist() == [16]  # padding only (tests/test_lmnn_single_member.py)
    with pytest.raises(ValueError, match="no class of 'y' has two members"):
        cls(k=1).fit(X[[0, 8, 16]], y[[0, 8, 16]])


@pytest.mark.parametrize("cls", THREE)
def test_one_feature_at_the_default_k(cls):
    check_fit2d_1feature(cls.__name__, cls())


@pytest.mark.parametrize("cls", (LMNN, KernelLMNN))
def test_predict_and_loo_error_are_knn_in_the_learned_coordinates(cls):
    X, y = _small_class()
    X, y = X[:16], y[:16]
    m = cls(k=2, predict_k=3).fit(X, y)
    Z = m.transform(X)
    ref = KNeighborsClassifier(n_neighbors=3).fit(Z, y)
    np.testing.assert_array_equal(m.predict(X), ref.predict(Z))
    loo = np.mean([
        KNeighborsClassifier(n_neighbors=3).fit(np.delete(Z, i, 0), np.delete(y, i))
        .predict(Z[i : i + 1])[0] != y[i]
        for i in range(len(y))
    ])  # fmt: skip
    assert m.loo_error() == pytest.approx(loo)


def test_the_three_share_energy_predict_and_loo_error():
    X, y = _small_class()
    X, y = X[:16], y[:16]
    for cls in THREE:
        m = cls(k=2).fit(X, y)
        assert m.energy_predict(X).shape == y.shape
        assert 0.0 <= m.loo_error() <= 1.0 and 0.0 <= m.loo_error(k=1) <= 1.0
    lin = KernelLMNN(k=2, kernel="linear").fit(X, y)
    np.testing.assert_array_equal(lin.energy_predict(X), LMNN(k=2).fit(X, y).energy_predict(X))


def test_the_verifier_follows_the_small_class_rule():
    from convexmetric import verify

    X, y = _small_class()
    with pytest.warns(SmallClassWarning):
        m = LMNN(k=3).fit(X, y)
    v = verify(m, X, y)
    assert v.verified, v.reason
