"""Generated data sets of the papers: zebra stripes (LMNN Fig. 2), concentric circles
(LMNN Fig. 7), overlapping Gaussian classes (the LMNN scale test), Gaussian classes for
scale tests, and sparse bag-of-features retrieval data (AROMA §5).

Every generator takes ``random_state`` and returns ``(X, y)``.
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets as _skd


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

    Parameters
    ----------
    n_samples : int, default=2000
        Number of points.
    n_stripes : int, default=20
        Stripes per class (``2 * n_stripes`` in all).
    offset : float, default=20.0
        Horizontal distance between the two modes.
    width : float, default=0.2
        Height of a stripe.
    spread : float, default=6.0
        Half-width of a mode.
    fill : float, default=0.5
        Fraction of its stripe that a point may fill (the rest is a gap).
    balance : float, default=0.6
        Probability that mode 0 holds class 0.
    random_state : int, Generator or None
        Seeds the generator.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
        The points.
    y : ndarray of shape (n_samples,)
        Their classes, 0 or 1.

    Examples
    --------
    >>> X, y = zebra_stripes(200, random_state=0)
    >>> bool(((X[:, 1] + 4) // 0.2 % 2 == y).all())
    True
    """
    from .._input_checks import check_scalar

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
    """Gaussian classes for scale tests (sklearn's ``make_classification``).

    Parameters
    ----------
    n_samples, n_features, n_classes : int
        Sizes, as in ``make_classification``.
    random_state : int, Generator or None
        Seeds the generator.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The points.
    y : ndarray of shape (n_samples,)
        Their classes.
    """
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

    Parameters
    ----------
    n_samples, n_features, n_classes : int, default=1000, 1000 and 10
        Items, codewords and classes.
    n_tokens : float, default=14
        Mean number of tokens an item draws (Poisson).
    group_size : int, default=10
        Codewords per group of co-occurring codewords.
    class_groups : int, default=10
        Groups each class prefers.
    class_share : float, default=0.3
        Probability that a token comes from its class's groups.
    norm : {"l2", "l1", None}, default="l2"
        Normalisation of the tf-idf rows.
    random_state : int, Generator or None
        Seeds the generator.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        The tf-idf rows.
    y : ndarray of shape (n_samples,)
        Their classes.
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


def concentric_circles(
    n_per_circle=36, *, n_arcs=3, arc=40.0, gap=0.75, jitter=0.1, r_inner=1.0, random_state=0
):
    """Generate arcs of two concentric circles, one class per circle: LMNN Fig. 7 (§5.2).

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

    Parameters
    ----------
    n_per_circle : int, default=36
        Points per circle.
    n_arcs : int, default=3
        Arcs per circle.
    arc : float, default=40.0
        Degrees of each arc.
    gap : float, default=0.75
        Radial gap, in units of the inner angular spacing.
    jitter : float, default=0.1
        Angular jitter, as a fraction of a cell.
    r_inner : float, default=1.0
        Radius of the inner circle.
    random_state : int, Generator or None
        Seeds the generator.

    Returns
    -------
    X : ndarray of shape (2 * n_per_circle, 2)
        The points.
    y : ndarray of shape (2 * n_per_circle,)
        0 on the inner circle, 1 on the outer.

    Examples
    --------
    >>> X, y = concentric_circles(random_state=0)
    >>> X.shape, int(y.sum())
    ((72, 2), 36)
    """
    from .._input_checks import check_scalar

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


def overlapping_classes(n=20000, d=20, n_classes=10, *, random_state=0):
    """Heavily overlapping Gaussian classes: a scale test of LMNN (many points, hard classes).

    Class centres are drawn from ``N(0, 2²)`` in ``d`` dimensions; every feature gets a
    noise scale drawn uniformly in ``[0.5, 2]`` (shared by all classes), and each point
    is its class centre plus Gaussian noise with those scales. Labels are balanced
    (``i mod n_classes``, shuffled).

    Parameters
    ----------
    n, d, n_classes : int, default=20000, 20 and 10
        Points, dimensions and classes.
    random_state : int, Generator or None
        Seeds the generator.

    Returns
    -------
    X : ndarray of shape (n, d)
        The points.
    y : ndarray of shape (n,)
        Their classes.

    Examples
    --------
    >>> X, y = overlapping_classes(100, 5, 3, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((100, 5), [0, 1, 2])
    """
    from .._input_checks import check_scalar

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
