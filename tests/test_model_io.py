"""Saved models: round trips per estimator, atomic writes, bad model directories."""

from __future__ import annotations

import inspect
import json
import os
import pickle

import joblib
import numpy as np
import pytest

from convexmetric import (
    LMNN,
    MKPOE,
    OASIS,
    POE,
    SSNE,
    DiagonalAROMA,
    FactoredAROMA,
    HyperbolicPCA,
    KernelLMNN,
    MultiMetricLMNN,
    OperatorSimilarity,
    datasets,
)
from convexmetric.model_io import atomic_directory, load_model, save_model, write_directory


@pytest.fixture(scope="module")
def iris():
    return datasets.load_split("iris")


@pytest.fixture(scope="module")
def lmnn(iris):
    Xtr, _, ytr, _ = iris
    return LMNN(max_iter=100).fit(Xtr, ytr)


def test_lmnn_round_trip(tmp_path, iris, lmnn):
    _, Xte, _, _ = iris
    save_model(lmnn, tmp_path / "m", provenance={"dataset": "iris", "command": "test"})
    m = load_model(tmp_path / "m")
    assert m.kind == "linear" and m.estimator == "LMNN" and m.n_features_in == 4
    np.testing.assert_allclose(m.transform(Xte), lmnn.transform(Xte))
    np.testing.assert_array_equal(m.predict(Xte), lmnn.predict(Xte))
    from convexmetric.lmnn.energy import energy_predict

    e = energy_predict(lmnn._X, lmnn._y, lmnn.targets_, Xte, lmnn.components_, lmnn.mu)
    np.testing.assert_array_equal(m.predict(Xte, rule="energy"), lmnn.classes_[e])
    np.testing.assert_allclose(m.arrays["metric"], lmnn.metric_)
    prov = m.provenance
    assert prov["dataset"] == "iris" and prov["status"] == lmnn.result_.status
    assert prov["objective"] == pytest.approx(lmnn.objective_, rel=1e-12)
    assert prov["version"] and prov["date"] and "lower_bound" in prov
    assert m.params["k"] == 3


def test_string_labels_round_trip(tmp_path, iris):
    Xtr, Xte, ytr, _ = iris
    names = np.array(["setosa", "versicolor", "virginica"], dtype=object)[ytr]
    est = LMNN(max_iter=50).fit(Xtr, names)
    save_model(est, tmp_path / "m")
    assert load_model(tmp_path / "m").predict(Xte).tolist() == est.predict(Xte).tolist()


@pytest.mark.parametrize(
    "make",
    [
        lambda: KernelLMNN(max_iter=50),
        lambda: MultiMetricLMNN(max_iter=50),
        lambda: SSNE(n_components=4, max_iter=2, random_state=0),
        lambda: HyperbolicPCA(n_components=2, random_state=0),
        lambda: HyperbolicPCA(n_components=2, kernel="maurer", random_state=0),
    ],
)
def test_other_estimators_round_trip(tmp_path, iris, make):
    Xtr, Xte, ytr, _ = iris
    est = make().fit(Xtr, ytr)
    save_model(est, tmp_path / "m")
    m = load_model(tmp_path / "m")
    if m.kind != "multi_metric":
        np.testing.assert_allclose(m.transform(Xte), est.transform(Xte), atol=1e-12)
    if hasattr(est, "predict"):
        np.testing.assert_array_equal(m.predict(Xte), est.predict(Xte))
    if m.kind == "multi_metric":
        np.testing.assert_array_equal(m.predict(Xte, rule="energy"), est.energy_predict(Xte))
        with pytest.raises(ValueError, match="no transform"):
            m.transform(Xte)
    _assert_pickles(tmp_path, est, Xte)


def _assert_pickles(tmp_path, est, X):
    """pickle and joblib give back an estimator that answers identically."""
    method = "transform" if hasattr(est, "transform") else "predict"
    if isinstance(est, MultiMetricLMNN):
        method = "predict"
    for back in (
        pickle.loads(pickle.dumps(est)),
        joblib.load(joblib.dump(est, tmp_path / "est.joblib")[0]),
    ):
        assert type(back) is type(est)
        np.testing.assert_array_equal(getattr(back, method)(X), getattr(est, method)(X))


def test_poe_linear_and_rbf_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    C = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [1, 2, 3, 4]])
    for kernel in (None, "rbf"):
        est = POE(kernel=kernel).fit(C, X)
        save_model(est, tmp_path / "p")
        m = load_model(tmp_path / "p")
        assert m.kind == ("linear" if kernel is None else "kernel")
        np.testing.assert_allclose(m.transform(X[:4]), est.transform(X[:4]), atol=1e-12)
        _assert_pickles(tmp_path, est, X[:4])
    mk = MKPOE().fit(C, [np.eye(12), X @ X.T])
    back = joblib.load(joblib.dump(mk, tmp_path / "mk.joblib")[0])
    np.testing.assert_array_equal(
        back.transform([np.eye(12), X @ X.T]), mk.transform([np.eye(12), X @ X.T])
    )
    with pytest.raises(ValueError, match="MKPOE"):
        save_model(mk, tmp_path / "mk")


def _online(cls, n, **kw):
    """AROMA/OASIS with ``n`` rounds (the iteration cap is ``n_iter`` or ``max_iter``)."""
    name = "max_iter" if "max_iter" in inspect.signature(cls).parameters else "n_iter"
    return cls(**{name: n}, random_state=0, **kw)


def test_bilinear_scores_pairs_and_has_no_transform(tmp_path, iris):
    Xtr, Xte, ytr, _ = iris
    est = _online(OASIS, 200).fit(Xtr, ytr)
    save_model(est, tmp_path / "b")
    m = load_model(tmp_path / "b")
    np.testing.assert_allclose(m.score_pairs(Xte, Xte[::-1]), est.score_pairs(Xte, Xte[::-1]))
    with pytest.raises(ValueError, match="bilinear"):
        m.transform(Xte)
    with pytest.raises(ValueError, match="not a classifier"):
        m.predict(Xte)
    for online in (
        est,
        _online(DiagonalAROMA, 100),
        _online(FactoredAROMA, 100),
    ):
        online.fit(Xtr, ytr)
        back = joblib.load(joblib.dump(online, tmp_path / "a.joblib")[0])
        np.testing.assert_array_equal(back.similarity(Xte), online.similarity(Xte))


def test_operator_similarity_round_trip_and_pickle(tmp_path, iris):
    Xtr, Xte, ytr, _ = iris
    est = OperatorSimilarity(n_pairs=100, random_state=0).fit(Xtr, ytr)
    save_model(est, tmp_path / "o")
    np.testing.assert_allclose(load_model(tmp_path / "o").transform(Xte), est.transform(Xte))
    _assert_pickles(tmp_path, est, Xte)


def test_solve_result_saved_as_arrays(tmp_path, lmnn):
    save_model(lmnn.result_, tmp_path / "r")
    m = load_model(tmp_path / "r")
    assert m.kind == "result"
    np.testing.assert_allclose(m.arrays["matrix"], lmnn.result_.matrix)
    assert m.provenance["objective"] == pytest.approx(lmnn.result_.objective)


def test_unfitted_and_unsupported_estimators_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(LMNN(), tmp_path / "u")
    with pytest.raises(ValueError, match="cannot save"):
        save_model(object(), tmp_path / "u")
    assert not os.path.exists(tmp_path / "u")


def test_wrong_dimension_input(tmp_path, iris, lmnn):
    save_model(lmnn, tmp_path / "m")
    m = load_model(tmp_path / "m")
    with pytest.raises(ValueError, match=r"3 columns but the model .* expects 4 features"):
        m.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        m.predict(np.full((1, 4), np.nan))
    with pytest.raises(ValueError, match="real numeric"):
        m.transform(np.ones((1, 4), dtype=complex))
    with pytest.raises(ValueError, match="'rule'"):
        m.predict(np.zeros((1, 4)), rule="vote")


# ---- bad model directories -----------------------------------------------------------


@pytest.fixture
def saved(tmp_path, lmnn):
    d = tmp_path / "m"
    save_model(lmnn, d)
    return d


def _edit_json(d, fn):
    meta = json.loads((d / "model.json").read_text())
    fn(meta)
    (d / "model.json").write_text(json.dumps(meta))


def test_missing_model_json(saved):
    (saved / "model.json").unlink()
    with pytest.raises(ValueError, match=r"model.json is missing"):
        load_model(saved)


def test_missing_array_file(saved):
    (saved / "components.npy").unlink()
    with pytest.raises(ValueError, match=r"components.npy is missing"):
        load_model(saved)


def test_not_a_directory(tmp_path):
    with pytest.raises(ValueError, match="no such directory"):
        load_model(tmp_path / "nope")


def test_tampered_json(saved):
    (saved / "model.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_model(saved)


def test_classifier_k_larger_than_the_training_set_is_refused(saved):
    _edit_json(saved, lambda m: m["classifier"].update(k=10_000))
    with pytest.raises(ValueError, match=r"classifier k = 10000 is larger than the \d+ training"):
        load_model(saved)


def test_wrong_format_version(saved):
    _edit_json(saved, lambda m: m.update(format_version=99))
    with pytest.raises(ValueError, match="format_version 99"):
        load_model(saved)


def test_unknown_kind(saved):
    _edit_json(saved, lambda m: m.update(kind="quantum"))
    with pytest.raises(ValueError, match="unknown model kind 'quantum'"):
        load_model(saved)


def test_recorded_shape_differs(saved):
    _edit_json(saved, lambda m: m["arrays"]["components"].update(shape=[2, 4]))
    with pytest.raises(ValueError, match=r"components.npy has shape \(4, 4\)"):
        load_model(saved)


def test_inconsistent_shapes(saved):
    np.save(saved / "components.npy", np.eye(3))
    _edit_json(saved, lambda m: m["arrays"]["components"].update(shape=[3, 3]))
    with pytest.raises(ValueError, match="input features"):
        load_model(saved)


def test_nan_array(saved):
    L = np.load(saved / "components.npy")
    L[0, 0] = np.nan
    np.save(saved / "components.npy", L)
    with pytest.raises(ValueError, match="NaN or infinite"):
        load_model(saved)


def test_pickled_npy_rejected(saved):
    np.save(saved / "components.npy", np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    _edit_json(saved, lambda m: m["arrays"]["components"].update(shape=[1]))
    with pytest.raises(ValueError, match="pickled"):
        load_model(saved)


def test_path_escape_rejected(saved):
    _edit_json(saved, lambda m: m["arrays"].update({"../x": {"file": "../x.npy", "shape": []}}))
    with pytest.raises(ValueError, match="not a plain file name"):
        load_model(saved)


def test_garbage_npy(saved):
    (saved / "targets.npy").write_bytes(b"definitely not numpy")
    with pytest.raises(ValueError, match=r"targets.npy is not a readable .npy"):
        load_model(saved)


# ---- atomic directories ----------------------------------------------------------------


def test_interrupted_write_keeps_previous_contents(tmp_path, lmnn):
    d = tmp_path / "m"
    save_model(lmnn, d, provenance={"tag": "first"})
    before = sorted(os.listdir(d))
    with pytest.raises(KeyboardInterrupt), atomic_directory(d) as tmp:
        (open(os.path.join(tmp, "model.json"), "w")).close()
        raise KeyboardInterrupt
    assert sorted(os.listdir(d)) == before
    assert load_model(d).provenance["tag"] == "first"
    assert sorted(os.listdir(tmp_path)) == ["m"]  # no temporary leftovers


def test_replaces_previous_output_but_not_foreign_directories(tmp_path, lmnn):
    d = tmp_path / "m"
    write_directory(d, {"stale.npy": np.zeros(1), "report.json": {}})
    save_model(lmnn, d)
    assert "stale.npy" not in os.listdir(d)  # a previous output: replaced as a whole
    lookalike = tmp_path / "mine"
    lookalike.mkdir()
    (lookalike / "stale.npy").write_bytes(b"x")
    (lookalike / "report.json").write_text("{}")  # one of our names, not ours
    with pytest.raises(ValueError, match="refusing to replace"):
        save_model(lmnn, lookalike)
    assert (lookalike / "report.json").read_text() == "{}"
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(ValueError, match="refusing to replace"):
        save_model(lmnn, foreign)
    assert (foreign / "thesis.tex").read_text() == "precious"


# ---- pickling --------------------------------------------------------------------------


def test_estimators_pickle_and_joblib(tmp_path, iris, lmnn):
    _, Xte, _, _ = iris
    again = pickle.loads(pickle.dumps(lmnn))
    np.testing.assert_array_equal(again.predict(Xte), lmnn.predict(Xte))
    joblib.dump(lmnn, tmp_path / "m.joblib")
    back = joblib.load(tmp_path / "m.joblib")
    np.testing.assert_allclose(back.transform(Xte), lmnn.transform(Xte))
    assert back.get_params() == lmnn.get_params()


def test_atomic_file_never_leaves_a_half_written_file(tmp_path):
    from convexmetric._atomic import atomic_file

    target = tmp_path / "emb.csv"
    target.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), atomic_file(target, "w") as fh:
        fh.write("1,2,3\n")
        raise KeyboardInterrupt
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["emb.csv"]
    with atomic_file(target, "w") as fh:
        fh.write("new\n")
    assert target.read_text() == "new\n"


# ---- any tampering of model.json: a ValueError or a working model, nothing else -------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def _paths(obj, prefix=()):
    """Every key path into a JSON document."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


_JUNK = [None, -1, 0, 2.5, "x", "rbf", [], {}, [1, 2], True, 1e308, "knn"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, lmnn):
    d = tmp_path_factory.mktemp("pristine") / "m"
    save_model(lmnn, d)
    return d, json.loads((d / "model.json").read_text())


@hypothesis.settings(max_examples=200, deadline=None, derandomize=True)
@hypothesis.given(data=st.data())
def test_tampered_model_json_never_escapes_as_another_exception(pristine, data):
    import shutil
    import tempfile

    d, meta = pristine
    paths = _paths(meta)
    path = data.draw(st.sampled_from(paths), label="path")
    junk = data.draw(st.sampled_from(_JUNK), label="value")
    bad = json.loads(json.dumps(meta))
    node = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = junk
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "m")
        shutil.copytree(d, target)
        with open(os.path.join(target, "model.json"), "w") as fh:
            json.dump(bad, fh)
        try:
            m = load_model(target)
        except ValueError:
            return
        X = np.zeros((2, 4))
        for apply in (m.transform, m.predict, lambda X: m.predict(X, rule="energy")):
            try:
                apply(X)
            except ValueError:
                pass


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("targets", lambda a: a + 1000, "targets.npy indexes outside"),
        ("train_labels", lambda a: a + 7, "must index into classes.npy"),
        ("train_embedding", lambda a: a[:, :2], "train_embedding.npy must be"),
        ("input_scale", lambda a: -a, "positive"),
        ("components", lambda a: a.astype(str), "non-empty 2-d numeric"),
    ],
)
def test_tampered_arrays(tmp_path, lmnn, name, value, message):
    d = tmp_path / "m"
    save_model(lmnn, d, preprocessing={"mean": np.zeros(4), "scale": np.ones(4)})
    arr = value(np.load(d / f"{name}.npy"))
    np.save(d / f"{name}.npy", arr)
    _edit_json(d, lambda m: m["arrays"][name].update(shape=list(arr.shape)))
    with pytest.raises(ValueError, match=message):
        load_model(d)
