"""Preprocessing in the library, saved with the model (issue 37): a Pipeline of scalers
and an estimator round-trips through save_model/load_model, and saved models are built
from public fitted attributes only."""

import ast
import inspect

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from convexmetric import (
    LMNN,
    POE,
    KernelLMNN,
    MultiMetricLMNN,
    OperatorSimilarity,
    datasets,
    model_kinds,
)
from convexmetric.model_io import load_model, save_model
from convexmetric.preprocessing import DiameterScaler, affine

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def iris():
    return datasets.load("iris")


def test_diameter_scaler_scales_to_diameter_one(iris):
    X = iris[0]
    Z = DiameterScaler().fit_transform(X)
    r = np.linalg.norm(Z - Z.mean(0), axis=1).max()
    assert 2 * r == pytest.approx(1.0, rel=1e-12)
    assert DiameterScaler().fit(np.ones((3, 2))).diameter_ == 1.0  # coinciding points
    with pytest.raises(ValueError, match="fitted on 3"):
        DiameterScaler().fit(X[:, :3]).transform(X)


def test_affine_composes_the_steps_in_order(iris):
    X = iris[0]
    sc = StandardScaler().fit(X)
    ds = DiameterScaler().fit(sc.transform(X))
    mean, scale = affine([sc, ds], X.shape[1])
    np.testing.assert_allclose((X - mean) / scale, ds.transform(sc.transform(X)), atol=1e-12)
    with pytest.raises(ValueError, match="per-feature affine"):
        affine([object()], 4)


@pytest.mark.parametrize(
    "est",
    [LMNN(max_iter=30), KernelLMNN(max_iter=20), MultiMetricLMNN(max_iter=5),
     OperatorSimilarity(n_pairs=200, max_iter=500, random_state=0)],
    ids=["lmnn", "kernel", "multi", "maurer"],
)  # fmt: skip
def test_a_pipeline_round_trips_with_its_preprocessing(tmp_path, iris, est):
    X, y = iris
    pipe = make_pipeline(StandardScaler(), DiameterScaler(), est)
    pipe.fit(X, y)
    save_model(pipe, tmp_path / "m")
    m = load_model(tmp_path / "m")
    assert m.meta["preprocessing_steps"] == ["StandardScaler", "DiameterScaler"]
    if m.kind != "multi_metric":  # raw points in, the pipeline's output out
        np.testing.assert_allclose(m.transform(X), pipe.transform(X), rtol=1e-7, atol=1e-7)
    if hasattr(est, "predict"):
        assert np.mean(m.predict(X) == pipe.predict(X)) >= 0.99


def test_preprocessing_given_as_steps_or_twice(tmp_path, iris):
    X, y = iris
    sc = StandardScaler().fit(X)
    est = LMNN(max_iter=30).fit(sc.transform(X), y)
    save_model(est, tmp_path / "a", preprocessing=sc)
    np.testing.assert_allclose(
        load_model(tmp_path / "a").transform(X), est.transform(sc.transform(X))
    )
    with pytest.raises(ValueError, match="once"):
        save_model(make_pipeline(StandardScaler(), est), tmp_path / "b", preprocessing=sc)


def test_saved_models_read_no_private_state():
    """model_kinds reads public fitted attributes and public classes only (no ``est._X``,
    no ``_PairOperator``)."""
    tree = ast.parse(inspect.getsource(model_kinds))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "est":
                assert not node.attr.startswith("_"), node.attr
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            for alias in node.names:
                assert not alias.name.startswith("_"), alias.name


def test_fitted_training_data_are_public(iris):
    X, y = iris
    for est in (LMNN(max_iter=5), KernelLMNN(max_iter=5), MultiMetricLMNN(max_iter=2)):
        est.fit(X, y)
        assert est.X_fit_.shape == X.shape
        assert np.array_equal(est.classes_[est.y_fit_], y)
    poe = POE(kernel=None)
    assert "X_fit_" not in vars(poe)  # set by fit only
