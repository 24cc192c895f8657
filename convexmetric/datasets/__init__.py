"""Built-in data: scikit-learn's shipped data sets and generators from the papers.

No network: every loader reads files shipped with scikit-learn or generates data
from a seed. ``load(name)`` returns ``(X, y)``; :func:`split` makes the standard
split of DESIGN.md (``train_test_split(test_size=0.3, random_state=0, stratify=y)``,
then a ``StandardScaler`` fitted on the training part).

>>> X, y = load("iris")
>>> X.shape
(150, 4)
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets as _skd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler


def _sk(loader):
    def load(random_state=None):
        d = loader()
        return np.asarray(d.data, dtype=float), np.asarray(d.target)

    return load


def zebra_stripes(
    n_samples=2000,
    *,
    n_stripes=20,
    offset=20.0,
    width=0.2,
    spread=6.0,
    fill=0.5,
    balance=0.6,
    random_state=0,
):
    """The zebra-stripes toy data of LMNN Fig. 2 (§3.2).

    Two classes in alternating horizontal stripes (``2 * n_stripes`` stripes of height
    ``width``; class = stripe index mod 2, so the label is a function of the vertical
    coordinate), drawn in two modes of half-width ``spread`` displaced by a large
    horizontal ``offset``: the within-class variance is largest horizontally, while the
    label is predicted by the vertical position of nearby points. Points fill the
    middle ``fill`` of their stripe (the rest is a gap); mode 0 holds class 0 with
    probability ``balance`` and mode 1 with probability ``1 - balance``.

    What the paper does not give, and why these defaults. Fig. 2 shows no scales.
    Stripes are thin relative to the horizontal point spacing (about 17 training points
    per stripe and mode), so Euclidean 1-NN makes real errors (about 12% on the
    standard split) that a vertical stretch repairs. ``balance`` differs from 1/2
    because LDA sees only class means: with balanced modes the means differ by one
    stripe *vertically*, so LDA would return the vertical axis, the best direction,
    contrary to Fig. 2; unbalanced modes move the mean difference horizontally.

    Returns ``(X, y)`` with ``X`` of shape ``(n_samples, 2)`` and ``y`` in {0, 1}.

    >>> X, y = zebra_stripes(200, random_state=0)
    >>> bool(((X[:, 1] + 4) // 0.2 % 2 == y).all())
    True
    """
    from .._validation import check_scalar

    check_scalar(n_stripes, "n_stripes", int, min_val=1, owner="zebra_stripes")
    check_scalar(fill, "fill", float, min_val=0, max_val=1, closed="right", owner="zebra_stripes")
    check_scalar(balance, "balance", float, min_val=0, max_val=1, owner="zebra_stripes")
    rng = np.random.default_rng(random_state)
    mode = rng.integers(0, 2, n_samples)
    x = rng.uniform(-spread, spread, n_samples) + offset * (mode - 0.5)
    y = (rng.random(n_samples) >= np.where(mode == 0, balance, 1.0 - balance)).astype(np.int64)
    band = 2 * rng.integers(0, n_stripes, n_samples) + y
    yv = (band + 0.5 + fill * rng.uniform(-0.5, 0.5, n_samples)) * width
    return np.column_stack([x, yv - n_stripes * width]), y


def synthetic_classes(n_samples=20000, n_features=20, n_classes=10, *, random_state=0):
    """Gaussian classes for scale tests (sklearn's ``make_classification``)."""
    X, y = _skd.make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=min(n_features, max(2, n_features // 2)),
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=2,
        class_sep=1.0,
        random_state=random_state,
    )
    return X, y


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
    """The built-in data set names."""
    return list(REGISTRY)


def describe():
    """``{name: description}`` for every built-in data set."""
    return {k: v[1] for k, v in REGISTRY.items()}


def load(name, *, random_state=0):
    """Load a built-in data set as ``(X, y)``."""
    key = ALIASES.get(name, name)
    if key not in REGISTRY:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {', '.join(REGISTRY)}.")
    return REGISTRY[key][0](random_state=random_state)


def split(X, y, *, test_size=0.3, random_state=0, scale=True):
    """The standard split: stratified 70/30, scaler fitted on the training part.

    Returns ``X_train, X_test, y_train, y_test``.
    """
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=test_size, random_state=random_state, stratify=y
    )
    if scale:
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    return Xtr, Xte, ytr, yte


def load_split(name, **kw):
    """``split(*load(name), **kw)``; by source item for the data sets of :data:`GROUPED`
    (:func:`split_by_source`: no source item on both sides)."""
    key = ALIASES.get(name, name)
    if key in GROUPED:
        return split_by_source(*GROUPED[key](), **kw)
    return split(*load(name), **kw)


def bag_of_features(
    n_samples=1000,
    n_features=1000,
    n_classes=10,
    *,
    n_tokens=14,
    group_size=10,
    class_groups=10,
    class_share=0.3,
    norm="l2",
    random_state=0,
):
    """Sparse bag-of-features retrieval data in the spirit of AROMA §5 (Caltech256 visterms).

    The codebook of ``n_features`` visterms is cut into groups of ``group_size`` that
    co-occur (correlated features, as neighbouring codewords do). Each class prefers
    ``class_groups`` random groups; the rest of the mass is a Zipf background shared by
    all classes (frequent, uninformative codewords). An item draws about ``n_tokens``
    tokens (Poisson); a token picks a group (its class's with probability
    ``class_share``, else the background) and emits two codewords of that group. Counts
    are tf-idf weighted and normalised by ``norm`` (scikit-learn's ``TfidfTransformer``). The
    defaults give a median of about 27 non-zeros per item, as in §5.1.

    Returns ``(X, y)``: ``X`` a CSR matrix of shape ``(n_samples, n_features)``.
    """
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(random_state)
    n_groups = n_features // group_size
    if not 1 <= class_groups <= n_groups:
        raise ValueError(
            f"'class_groups' must be in [1, {n_groups}] (n_features // group_size); "
            f"got {class_groups}."
        )
    members = rng.permutation(n_groups * group_size).reshape(n_groups, group_size)
    background = 1.0 / np.arange(1, n_groups + 1) ** 0.8
    background = background[rng.permutation(n_groups)] / background.sum()
    prefs = np.array([rng.choice(n_groups, class_groups, replace=False) for _ in range(n_classes)])
    y = np.arange(n_samples) % n_classes
    rng.shuffle(y)
    counts = rng.poisson(n_tokens, n_samples) + 1
    doc = np.repeat(np.arange(n_samples), counts)
    own = rng.random(doc.size) < class_share
    group = np.where(
        own,
        prefs[y[doc], rng.integers(0, class_groups, doc.size)],
        rng.choice(n_groups, doc.size, p=background),
    )
    within = rng.integers(0, group_size, (doc.size, 2))
    cols = members[group[:, None], within].ravel()
    rows = np.repeat(doc, 2)
    C = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_samples, n_features))
    C.sum_duplicates()
    X = TfidfTransformer(norm=norm).fit_transform(C).tocsr()
    return X, y


REGISTRY["bow"] = (
    lambda random_state=0: bag_of_features(random_state=random_state),
    "sparse bag-of-features retrieval of AROMA §5: 1000 × 1000 CSR, ~27 non-zeros, 10 classes",
)


# --- Maurer (2008) §6.2: randomly rotated and/or scaled digits for transfer --------------------


def transformed_digits(
    *,
    rotate=True,
    scale=True,
    size=16,
    copies=1,
    max_angle=180.0,
    scale_range=(0.75, 1.5),
    digits=None,
    random_state=0,
):
    """scikit-learn's 8×8 digits, each randomly rotated and/or scaled (scipy.ndimage).

    Every image is padded to 12×12, then resampled (bilinear, ``affine_transform``)
    onto a ``size × size`` grid under a random rotation (uniform in
    ``±max_angle`` degrees) and a random log-uniform scale in ``scale_range`` (a
    factor of 2 by default, as in the paper). ``copies`` transforms are drawn per
    image; ``digits`` keeps only those classes. Pixel vectors are not normalised
    (Maurer's kernel normalises them). Returns ``(X, y)``, X of shape
    ``(copies·n, size²)``.
    """
    from scipy import ndimage

    d = _skd.load_digits()
    imgs, y = d.images, np.asarray(d.target)
    if digits is not None:
        keep = np.isin(y, list(digits))
        imgs, y = imgs[keep], y[keep]
    rng = np.random.default_rng(random_state)
    canvas = np.pad(imgs, ((0, 0), (2, 2), (2, 2)))
    c_in, c_out = (12 - 1) / 2.0, (size - 1) / 2.0
    X = np.empty((copies * len(y), size * size))
    for k, (img, _) in enumerate((im, c) for c in range(copies) for im in canvas):
        theta = np.deg2rad(rng.uniform(-max_angle, max_angle)) if rotate else 0.0
        zoom = np.exp(rng.uniform(*np.log(scale_range))) if scale else 1.0
        zoom *= size / 12.0
        rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        mat = rot / zoom  # output → input coordinates
        offset = c_in - mat @ np.array([c_out, c_out])
        X[k] = ndimage.affine_transform(img, mat, offset, (size, size), order=1).ravel()
    return X, np.tile(y, copies)


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
    "noise kernels from convexmetric.taxonomy.make_taxonomy",
)


def concentric_circles(
    n_per_circle=36, *, n_arcs=3, arc=40.0, gap=0.75, jitter=0.1, r_inner=1.0, random_state=0
):
    """Arcs of two concentric circles, one class per circle: LMNN Fig. 7 (§5.2).

    Each circle keeps ``n_arcs`` arcs of ``arc`` degrees centred ``360 / n_arcs``
    degrees apart (``arc = 360 / n_arcs`` gives full circles). An arc is cut into
    ``m = n_per_circle / n_arcs`` equal cells with one inner and one outer point per
    cell at the same angle (the cell centre jittered by ``± jitter`` of a cell); the
    radial gap is ``gap`` times the inner angular spacing ``s_t``. The arcs are rotated
    copies of the first one. With ``gap < 1 - 2 jitter`` every point's Euclidean nearest
    neighbour is its twin on the other circle: leave-one-out 1-NN error 100%.

    What differs from Fig. 7, and why. Fig. 7 samples full circles and reports LOO
    error 100% (one metric), 21% (two k-means metrics), 0% (three). On full circles
    with Euclidean LOO 100% the last claim cannot hold. Write a metric as the quadratic
    form ``q(θ) = a + b cos(2θ − φ)``, ``0 ≤ b ≤ a``, of the unit direction ``θ``. A point
    at angle ``α`` beats its twin (radial, distance ``gap·s_t``) with its tangent
    neighbour (distance ``s_t``) only if ``q(tangent) < gap² q(radial)``, i.e.
    ``c = cos(2α − φ) > (1 − gap²)/(1 + gap²) > 0``: one metric serves an arc of at most
    ``arccos((1 − gap²)/(1 + gap²))`` degrees, always < 90° (74° here). A k-means
    third of a full circle spans 120°, so at least a quarter of its points (39% here)
    fail whatever the metrics. Three 40° arcs fit one metric each, while the 120°
    symmetry keeps one global metric useless: a symmetrised optimum is invariant under
    the rotation, hence a multiple of the identity, and errs like Euclidean (100%).
    With two metrics one is shared by two arcs 120° apart and cannot serve both.

    Returns ``(X, y)``, ``X`` of shape ``(2 * n_per_circle, 2)``, inner circle class 0.

    >>> X, y = concentric_circles(random_state=0)
    >>> X.shape, int(y.sum())
    ((72, 2), 36)
    """
    from .._validation import check_scalar

    own = "concentric_circles"
    n_arcs = check_scalar(n_arcs, "n_arcs", int, min_val=1, owner=own)
    check_scalar(n_per_circle, "n_per_circle", int, min_val=2 * n_arcs, owner=own)
    if n_per_circle % n_arcs:
        raise ValueError(
            f"'n_per_circle' ({n_per_circle}) must be a multiple of 'n_arcs' ({n_arcs})."
        )
    check_scalar(arc, "arc", float, min_val=0, max_val=360 / n_arcs, closed="right", owner=own)
    check_scalar(gap, "gap", float, min_val=0, closed="neither", owner=own)
    check_scalar(jitter, "jitter", float, min_val=0, max_val=0.5, closed="left", owner=own)
    m = n_per_circle // n_arcs
    rng = np.random.default_rng(random_state)
    u = (np.arange(m) + 0.5 + rng.uniform(-jitter, jitter, m)) / m - 0.5
    t = np.concatenate(
        [np.pi / 2 + 2 * np.pi * a / n_arcs + np.deg2rad(arc) * u for a in range(n_arcs)]
    )
    r_outer = r_inner * (1.0 + gap * np.deg2rad(arc) / m)
    X = np.concatenate([r * np.c_[np.cos(t), np.sin(t)] for r in (r_inner, r_outer)])
    return X, np.repeat([0, 1], n_per_circle)


REGISTRY["circles"] = (
    lambda random_state=0: concentric_circles(random_state=random_state),
    "concentric circles of LMNN Fig. 7: 72 × 2, 2 classes; three 40° arcs of each circle "
    "(full circles cannot give Fig. 7's 0% with three metrics; see concentric_circles)",
)


# --- LMNN at scale: overlapping Gaussian classes and augmented digits --------------------------


def overlapping_classes(n=20000, d=20, n_classes=10, *, random_state=0):
    """Heavily overlapping Gaussian classes, the scale test of the LMNN scale issue.

    Class centres are drawn from ``N(0, 2²)`` in ``d`` dimensions; every feature gets a
    noise scale drawn uniformly in ``[0.5, 2]`` (shared by all classes), and each point
    is its class centre plus Gaussian noise with those scales. Labels are balanced
    (``i mod n_classes``, shuffled). Returns ``(X, y)``, ``X`` of shape ``(n, d)``.

    >>> X, y = overlapping_classes(100, 5, 3, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((100, 5), [0, 1, 2])
    """
    from .._validation import check_scalar

    own = "overlapping_classes"
    check_scalar(n_classes, "n_classes", int, min_val=2, owner=own)
    check_scalar(n, "n", int, min_val=n_classes, owner=own)
    check_scalar(d, "d", int, min_val=1, owner=own)
    rng = np.random.default_rng(random_state)
    centres = rng.normal(0.0, 2.0, (n_classes, d))
    scales = rng.uniform(0.5, 2.0, d)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    X = centres[y] + rng.normal(size=(n, d)) * scales
    return X, y


#: the variants of :func:`augmented_digits`: rotations (degrees) and shifts (dy, dx), pixels
AUGMENT_ANGLES = (0.0, -6.0, 6.0, -12.0, 12.0)
AUGMENT_SHIFTS = tuple((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1))
AUGMENT_PER_IMAGE = 33  #: variants kept per source image (the identity always among them)


def _shift(imgs, dy, dx):
    """Shift a stack of images by whole pixels, filling with zeros."""
    out = np.zeros_like(imgs)
    h, w = imgs.shape[1:]
    out[:, max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)] = imgs[
        :, max(-dy, 0) : h + min(-dy, 0), max(-dx, 0) : w + min(-dx, 0)
    ]
    return out


def augmented_digits(random_state=0):
    """About 60,000 8×8 digits made from scikit-learn's 1,797 by small shifts and rotations.

    Every source image is rotated about its centre by each angle of
    :data:`AUGMENT_ANGLES` (``scipy.ndimage.rotate``, bilinear, same 8×8 frame, zero
    fill) and each rotation is shifted by every ``(dy, dx) ∈ {−1, 0, 1}²`` pixels (zero
    fill): 45 variants per image. Of these, the untransformed image and 32 others drawn
    with ``random_state`` are kept (:data:`AUGMENT_PER_IMAGE` = 33 per image, 59,301 in
    all); pixel values stay on the 0–16 scale. Returns ``(X, y, source)``: ``X`` of
    shape ``(59301, 64)``, the digit labels, and for each row the index of its source
    image in ``sklearn.datasets.load_digits()``. :func:`load_split` splits by source.

    >>> X, y, source = augmented_digits()
    >>> X.shape, int(source.max()) + 1
    ((59301, 64), 1797)
    """
    from scipy import ndimage

    d = _skd.load_digits()
    imgs, labels = np.asarray(d.images, dtype=float), np.asarray(d.target)
    n = len(labels)
    variants = []
    for angle in AUGMENT_ANGLES:
        rot = imgs if angle == 0 else ndimage.rotate(
            imgs, angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0
        )  # fmt: skip
        variants.extend(_shift(rot, dy, dx) for dy, dx in AUGMENT_SHIFTS)
    stack = np.stack(variants, axis=1)  # (n, 45, 8, 8); variant 4 is the identity
    identity = AUGMENT_SHIFTS.index((0, 0))
    others = np.delete(np.arange(len(variants)), identity)
    rng = np.random.default_rng(random_state)
    keep = np.array(
        [np.r_[identity, np.sort(rng.choice(others, AUGMENT_PER_IMAGE - 1, replace=False))]
         for _ in range(n)]
    )  # fmt: skip
    X = stack[np.arange(n)[:, None], keep].reshape(n * AUGMENT_PER_IMAGE, 64)
    source = np.repeat(np.arange(n), AUGMENT_PER_IMAGE)
    X = np.maximum(X, 0.0)  # bilinear rotation can undershoot by rounding
    return X, labels[source], source


def split_by_source(X, y, source, *, test_size=0.3, random_state=0, scale=True):
    """The standard split, drawn over *source* items: no source on both sides.

    The source ids are split 70/30, stratified by their (single) label; every row goes
    with its source. The scaler is fitted on the training part, as in :func:`split`.
    """
    ids, first = np.unique(source, return_index=True)
    tr_ids, _ = train_test_split(
        ids, test_size=test_size, random_state=random_state, stratify=np.asarray(y)[first]
    )
    tr = np.isin(source, tr_ids)
    Xtr, Xte, ytr, yte = X[tr], X[~tr], np.asarray(y)[tr], np.asarray(y)[~tr]
    if scale:
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    return Xtr, Xte, ytr, yte


REGISTRY["overlapping"] = (
    lambda random_state=0: overlapping_classes(random_state=random_state),
    "overlapping Gaussian classes of the LMNN scale issue: 20000 × 20, 10 classes (generated)",
)
REGISTRY["augmented_digits"] = (
    lambda random_state=0: augmented_digits(random_state=random_state)[:2],
    "digits shifted ±1 px and rotated ≤ 12°: 59301 × 64, 10 classes, 33 per source "
    "image; load_split splits by source image (41481 training points)",
)
#: data sets whose standard split is drawn over source items: name -> loader of (X, y, source)
GROUPED = {"augmented_digits": augmented_digits}
