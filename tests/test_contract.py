"""One estimator contract for every public estimator (issue 15, items 4 and 5).

scikit-learn's BaseEstimator (clone, get_params/set_params, GridSearchCV), keyword-only
hyperparameters, shared names (``max_iter``, ``random_state``, ``verbose``), fitted
attributes ending in ``_``, determinism under ``random_state``, pickling, logging
instead of printing, and metric-learn's interface on the Mahalanobis learners.
"""

from __future__ import annotations

import inspect
import logging
import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier

import convexmetric
from convexmetric import datasets
from convexmetric.kernels import linear_kernel, rbf_kernel
from convexmetric.poe.estimators import ItemComparisons

NOT_ESTIMATORS = ("SolveResult", "Verification", "datasets", "validate", "verify", "set_config",
                  "get_config", "config_context")  # fmt: skip
ESTIMATORS = [n for n in convexmetric.__all__ if n not in NOT_ESTIMATORS]


def _labelled():
    X, y = datasets.load("iris")
    idx = np.concatenate([np.flatnonzero(y == c)[:20] for c in range(3)])
    X = X[idx]
    return (X - X.mean(0)) / X.std(0), y[idx]


def _comparisons():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    T = [
        (i, j, i, k)
        for i in range(12)
        for j in range(12)
        for k in range(12)
        if len({i, j, k}) == 3 and D[i, j] < D[i, k]
    ]
    return np.array(T[::5]), X


X_LAB, Y_LAB = _labelled()
C_POE, X_POE = _comparisons()
STRAT = StratifiedKFold(3, shuffle=True, random_state=0)
PLAIN = KFold(3, shuffle=True, random_state=0)

# name -> (tiny instance, fit arguments, grid, cv, name of the learned array)
CASES = {
    "LMNN": (lambda: convexmetric.LMNN(k=2, max_iter=50), "lab", {"mu": [0.3, 0.6]}, "metric_"),
    "KernelLMNN": (
        lambda: convexmetric.KernelLMNN(k=2, kernel="linear", max_iter=50),
        "lab",
        {"mu": [0.3, 0.6]},
        "A_",
    ),
    "MultiMetricLMNN": (
        lambda: convexmetric.MultiMetricLMNN(k=2, max_iter=20),
        "lab",
        {"mu": [0.3, 0.6]},
        "metrics_",
    ),
    "POE": (lambda: convexmetric.POE(max_iter=30), "poe", {"beta": [1.0, 10.0]}, "W_"),
    "MKPOE": (
        lambda: convexmetric.MKPOE(diagonal=True),
        "mkpoe",
        {"beta": [1.0, 10.0]},
        "W_",
    ),
    "OASIS": (lambda: convexmetric.OASIS(max_iter=300), "lab", {"C": [0.01, 0.1]}, "W_"),
    "DiagonalAROMA": (
        lambda: convexmetric.DiagonalAROMA(max_iter=300),
        "lab",
        {"r": [0.1, 1.0]},
        "W_",
    ),
    "FactoredAROMA": (
        lambda: convexmetric.FactoredAROMA(max_iter=300),
        "lab",
        {"r": [0.1, 1.0]},
        "W_",
    ),
    "SSNE": (
        lambda: convexmetric.SSNE(n_components=3, max_iter=2),
        "lab",
        {"loss_weight": [10.0, 100.0]},
        "W_",
    ),
    "OperatorSimilarity": (
        lambda: convexmetric.OperatorSimilarity(reg_weight=0.05, max_iter=500, n_pairs=100),
        "lab",
        {"reg_weight": [0.01, 0.1]},
        "metric_",
    ),
    "HyperbolicPCA": (
        lambda: convexmetric.HyperbolicPCA(n_components=2, n_pairs=100),
        "lab",
        {"c": [1.5, 3.0]},
        "metric_",
    ),
}


def _data(kind):
    if kind == "lab":
        return (X_LAB, Y_LAB), STRAT
    if kind == "poe":
        return (ItemComparisons(C_POE, X_POE),), PLAIN
    kernels = [linear_kernel(X_POE), rbf_kernel(X_POE, X_POE, gamma=0.5)]
    return (ItemComparisons(C_POE, kernels),), PLAIN


def _make(name, **params):
    make, kind, grid, learned = CASES[name]
    est = make().set_params(random_state=0, **params)
    args, cv = _data(kind)
    return est, args, grid, cv, learned


def _learned(est, attr):
    value = getattr(est, attr)
    return [np.asarray(v) for v in value] if isinstance(value, list) else [np.asarray(value)]


def test_every_public_estimator_has_a_case():
    assert set(ESTIMATORS) == set(CASES)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_clone_and_params_round_trip(name):
    est, *_ = _make(name)
    assert isinstance(est, BaseEstimator)
    params = est.get_params()
    twin = clone(est)
    assert twin is not est and twin.get_params() == params
    fresh = type(est)().set_params(**params)
    assert fresh.get_params() == params
    # __init__ stores its arguments and nothing else
    assert set(vars(type(est)())) == set(type(est)().get_params())


@pytest.mark.parametrize("name", ESTIMATORS)
def test_hyperparameters_are_keyword_only(name):
    cls = getattr(convexmetric, name)
    sig = inspect.signature(cls.__init__)
    kinds = {p.kind for n, p in sig.parameters.items() if n != "self"}
    assert kinds == {inspect.Parameter.KEYWORD_ONLY}
    with pytest.raises(TypeError):
        cls(1.0)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_shared_names(name):
    params = getattr(convexmetric, name)().get_params()
    assert "random_state" in params and "verbose" in params
    assert "n_iter" not in params
    if name not in ("SSNE", "HyperbolicPCA"):  # SSNE counts epochs; HyperbolicPCA is closed form
        assert "max_iter" in params


@pytest.mark.parametrize("name", ESTIMATORS)
def test_fitted_attributes_end_in_underscore(name):
    est, args, _, _, learned = _make(name)
    before = set(vars(est))
    est.fit(*args)
    new = set(vars(est)) - before
    public = {a for a in new if not a.startswith("_")}
    assert public and all(a.endswith("_") for a in public), sorted(public)
    assert isinstance(est.result_, convexmetric.SolveResult)
    assert est.n_iter_ == est.result_.iterations
    if name not in ("OASIS", "DiagonalAROMA", "FactoredAROMA"):  # online: no objective
        assert np.isfinite(est.objective_)
    assert all(np.all(np.isfinite(v)) for v in _learned(est, learned))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_deterministic_under_random_state_and_pickles(name):
    a, args, _, _, learned = _make(name)
    b = clone(a)
    a.fit(*args)
    b.fit(*args)
    for u, v in zip(_learned(a, learned), _learned(b, learned)):
        np.testing.assert_array_equal(u, v)
    c = pickle.loads(pickle.dumps(a))
    for u, v in zip(_learned(a, learned), _learned(c, learned)):
        np.testing.assert_array_equal(u, v)
    assert c.score(*args) == a.score(*args)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_grid_search(name):
    est, args, grid, cv, _ = _make(name)
    search = GridSearchCV(est, grid, cv=cv).fit(*args)
    key = next(iter(grid))
    assert search.best_params_[key] in grid[key]
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_estimator_.get_params()[key] == search.best_params_[key]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_verbose_logs_and_never_prints(name, caplog, capsys):
    est, args, *_ = _make(name, verbose=1)
    with caplog.at_level(logging.INFO, logger="convexmetric"):
        est.fit(*args)
    assert any(r.name.startswith("convexmetric.") for r in caplog.records)
    assert capsys.readouterr().out == ""
    caplog.clear()
    quiet, *_ = _make(name)
    with caplog.at_level(logging.INFO, logger="convexmetric"):
        quiet.fit(*args)
    assert not caplog.records


@pytest.mark.parametrize(
    "params, match",
    [({"verbose": 2}, "'verbose'"), ({"tol": 0.0}, "'tol'"), ({"time_limit": -1.0}, "time_limit")],
)
def test_new_parameters_are_validated(params, match):
    with pytest.raises(ValueError, match=match):
        convexmetric.LMNN(**params).fit(X_LAB, Y_LAB)


# ---- metric-learn compatibility -----------------------------------------------------


def _pairs(X, n=6):
    return np.stack([X[:n], X[n : 2 * n]], axis=1)


def _mahalanobis_distances(P, M):
    D = P[:, 0] - P[:, 1]
    return np.sqrt(np.einsum("ij,jk,ik->i", D, M, D))


def test_lmnn_mahalanobis_matrix_is_metric():
    m = convexmetric.LMNN(k=3, max_iter=100).fit(X_LAB, Y_LAB)
    np.testing.assert_array_equal(m.get_mahalanobis_matrix(), m.metric_)
    P = _pairs(X_LAB)
    d = m.pair_distance(P)
    np.testing.assert_allclose(d, _mahalanobis_distances(P, m.metric_), rtol=1e-10)
    np.testing.assert_array_equal(m.pair_score(P), -d)
    f = m.get_metric()
    np.testing.assert_allclose([f(u, v) for u, v in P], d, rtol=1e-12)
    np.testing.assert_allclose([f(u, v, squared=True) for u, v in P], d**2, rtol=1e-12)


def test_get_metric_plugs_into_scikit_learn():
    m = convexmetric.LMNN(k=3, max_iter=100).fit(X_LAB, Y_LAB)
    knn = KNeighborsClassifier(n_neighbors=3, metric=m.get_metric()).fit(X_LAB, Y_LAB)
    ref = KNeighborsClassifier(n_neighbors=3).fit(m.transform(X_LAB), Y_LAB)
    Q = X_LAB[::4]
    np.testing.assert_array_equal(knn.predict(Q), ref.predict(m.transform(Q)))


def test_lmnn_with_reduction_keeps_the_semantics():
    m = convexmetric.LMNN(k=3, max_iter=100, n_components=2).fit(X_LAB, Y_LAB)
    P = _pairs(X_LAB)
    np.testing.assert_allclose(
        m.pair_distance(P), _mahalanobis_distances(P, m.get_mahalanobis_matrix()), rtol=1e-9
    )


@pytest.mark.parametrize("kernel", [None, "linear"])
@pytest.mark.parametrize("diagonal", [False, True])
def test_poe_linear_kinds_are_mahalanobis(kernel, diagonal):
    m = convexmetric.POE(kernel=kernel, diagonal=diagonal).fit(C_POE, X_POE)
    M = m.get_mahalanobis_matrix()
    assert M.shape == (3, 3)
    assert np.linalg.eigvalsh(M).min() > -1e-9 * max(1.0, np.abs(M).max())
    P = _pairs(X_POE, 4)
    np.testing.assert_allclose(m.pair_distance(P), _mahalanobis_distances(P, M), rtol=1e-8)


def test_kernel_lmnn_linear_is_mahalanobis_and_rbf_is_not():
    lin = convexmetric.KernelLMNN(k=2, kernel="linear", max_iter=50).fit(X_LAB, Y_LAB)
    P = _pairs(X_LAB)
    M = lin.get_mahalanobis_matrix()
    np.testing.assert_allclose(lin.pair_distance(P), _mahalanobis_distances(P, M), rtol=1e-8)
    rbf = convexmetric.KernelLMNN(k=2, kernel="rbf", max_iter=50).fit(X_LAB, Y_LAB)
    with pytest.raises(ValueError, match="no Mahalanobis matrix"):
        rbf.get_mahalanobis_matrix()
    Z = rbf.transform(P.reshape(-1, P.shape[2])).reshape(len(P), 2, -1)
    np.testing.assert_allclose(rbf.pair_distance(P), np.linalg.norm(Z[:, 0] - Z[:, 1], axis=1))


def test_pair_distance_rejects_bad_shapes():
    m = convexmetric.LMNN(k=3, max_iter=50).fit(X_LAB, Y_LAB)
    with pytest.raises(ValueError, match="pairs"):
        m.pair_distance(X_LAB[:4])
    with pytest.raises(ValueError, match=r"\(n_pairs, 2, n_features\)"):
        m.pair_distance(np.stack([X_LAB[:3]] * 3, axis=1))
    with pytest.raises(ValueError, match="1-dimensional"):
        m.get_metric()(X_LAB[:2], X_LAB[2:4])


def test_poe_needs_its_items():
    with pytest.raises(ValueError, match="ItemComparisons"):
        convexmetric.POE().fit(C_POE)
    m = convexmetric.POE().fit(ItemComparisons(C_POE, X_POE))
    assert m.score(C_POE) == m.score(C_POE, X_POE)


def test_docstring_examples():
    import doctest

    import convexmetric._mahalanobis as mahalanobis_module
    import convexmetric.poe.estimators as poe_module

    for mod in (mahalanobis_module, poe_module):
        assert doctest.testmod(mod).failed == 0


# every estimator, and the solver options that take another path (cheap instances)
SETTING_CASES = [(name, {}) for name in CASES] + [
    ("OperatorSimilarity", {"solver": "subgradient", "max_iter": 800}),
    ("LMNN", {"n_passes": 2}),
    ("LMNN", {"refine": False}),
    ("LMNN", {"solver": "exact"}),
    ("POE", {"diagonal": True}),
    ("MultiMetricLMNN", {"max_iter": 5}),
]


@pytest.mark.parametrize("setting", ["verbose", "time_limit"])
@pytest.mark.parametrize(
    "name, extra",
    SETTING_CASES,
    ids=[f"{n}-{'-'.join(map(str, e.values()))}" for n, e in SETTING_CASES],
)
def test_verbose_and_time_limit_do_not_change_the_result(name, extra, setting):
    """``verbose`` changes only logging and a generous ``time_limit`` only the stop: the
    same learned arrays, objective, iterations and status."""
    est, args, _, _, learned = _make(name, **({"max_iter": None} if name == "POE" else {}))
    est.set_params(**extra)
    if setting not in est.get_params():
        pytest.skip(f"{name} has no {setting}")
    other = clone(est).set_params(**{setting: 1 if setting == "verbose" else 1e6}).fit(*args)
    est.fit(*args)
    for u, v in zip(_learned(est, learned), _learned(other, learned)):
        np.testing.assert_array_equal(u, v)
    a, b = est.result_, other.result_
    assert (a.objective, a.iterations, a.status) == (b.objective, b.iterations, b.status)


def test_verbose_reaches_stderr_without_logging_configuration(capsys):
    from convexmetric._verbose import logging_to_stderr, progress_callback

    log = logging.getLogger("convexmetric.test_contract_unconfigured")
    log.propagate = False  # as in an application that configured no logging at all
    cb = progress_callback(log, 1, "Demo", every=0.0)
    with logging_to_stderr(log, 1):
        assert cb(3, 1.5, 0.1) is False  # never asks the solver to stop
    cb(4, 1.0, 0.1)  # outside the block: no handler left behind
    err = capsys.readouterr()
    assert err.out == ""
    assert "Demo: iteration 3, objective 1.5" in err.err and "iteration 4" not in err.err
    assert not log.handlers and log.level == logging.NOTSET
    assert progress_callback(log, 0, "Demo") is None
