"""Transformed and augmented versions of scikit-learn's 8×8 digits, and the split by source.

:func:`transformed_digits`: Maurer (2008) §6.2's randomly rotated and/or scaled digits.
:func:`augmented_digits`: about 60,000 shifted and rotated digits for LMNN at scale,
split by source image (:func:`split_by_source`: no source image on both sides).
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets as _skd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler


def transformed_digits(
    *,
    rotate=True,
    scale=True,
    size=16,
    copies=1,
    max_angle=180.0,
    scale_range=(0.75, 1.5),
    digits=None,
    images=None,
    random_state=0,
):
    """Rotate and scale scikit-learn's 8×8 digits, each at random (scipy.ndimage).

    Every image is padded to 12×12, then resampled (bilinear, ``affine_transform``)
    onto a ``size × size`` grid under a random rotation (uniform in
    ``±max_angle`` degrees) and a random log-uniform scale in ``scale_range`` (a
    factor of 2 by default, as in the paper). ``copies`` transforms are drawn per
    image; ``digits`` keeps only those classes. Pixel vectors are not normalised
    (Maurer's kernel normalises them).

    Parameters
    ----------
    rotate, scale : bool, default=True
        Apply the random rotation, the random scale.
    size : int, default=16
        Side of the output grid.
    copies : int, default=1
        Transformed copies per image.
    max_angle : float, default=180.0
        Rotations are uniform in ``±max_angle`` degrees.
    scale_range : (float, float), default=(0.75, 1.5)
        Scales are log-uniform in this range.
    digits : sequence of int or None
        Keep only these classes.
    images : sequence of int or None
        Keep only these images (row numbers of ``sklearn.datasets.load_digits()``, in
        this order), before ``digits`` selects classes among them.
    random_state : int, Generator or None
        Seeds the generator.

    Returns
    -------
    X : ndarray of shape (copies·n, size²)
        The images, one row each.
    y : ndarray of shape (copies·n,)
        Their digits.
    """
    from scipy import ndimage

    d = _skd.load_digits()
    imgs, y = d.images, np.asarray(d.target)
    if images is not None:
        rows = np.asarray(images)
        if (
            rows.ndim != 1
            or not np.issubdtype(rows.dtype, np.integer)
            or (len(rows) and (rows.min() < 0 or rows.max() >= len(y)))
        ):
            raise ValueError(f"'images' must be row numbers in [0, {len(y)}) of load_digits().")
        imgs, y = imgs[rows], y[rows]
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
    """Make about 60,000 8×8 digits from scikit-learn's 1,797 by small shifts and rotations.

    Every source image is rotated about its centre by each angle of
    :data:`AUGMENT_ANGLES` (``scipy.ndimage.rotate``, bilinear, same 8×8 frame, zero
    fill) and each rotation is shifted by every ``(dy, dx) ∈ {−1, 0, 1}²`` pixels (zero
    fill): 45 variants per image. Of these, the untransformed image and 32 others drawn
    with ``random_state`` are kept (:data:`AUGMENT_PER_IMAGE` = 33 per image, 59,301 in
    all); pixel values stay on the 0–16 scale.  :func:`load_split` splits by source.

    Parameters
    ----------
    random_state : int, Generator or None
        Seeds the choice of the kept variants.

    Returns
    -------
    X : ndarray of shape (59301, 64)
        The images.
    y : ndarray of shape (59301,)
        Their digits.
    source : ndarray of shape (59301,)
        For each row, the index of its source image in ``sklearn.datasets.load_digits()``.

    Examples
    --------
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
        rot = (
            imgs
            if angle == 0
            else ndimage.rotate(
                imgs, angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0
            )
        )
        variants.extend(_shift(rot, dy, dx) for dy, dx in AUGMENT_SHIFTS)
    stack = np.stack(variants, axis=1)  # (n, 45, 8, 8); variant 4 is the identity
    identity = AUGMENT_SHIFTS.index((0, 0))
    others = np.delete(np.arange(len(variants)), identity)
    rng = np.random.default_rng(random_state)
    keep = np.array(
        [
            np.r_[identity, np.sort(rng.choice(others, AUGMENT_PER_IMAGE - 1, replace=False))]
            for _ in range(n)
        ]
    )
    X = stack[np.arange(n)[:, None], keep].reshape(n * AUGMENT_PER_IMAGE, 64)
    source = np.repeat(np.arange(n), AUGMENT_PER_IMAGE)
    X = np.maximum(X, 0.0)  # bilinear rotation can undershoot by rounding
    return X, labels[source], source


def split_by_source(X, y, source, *, test_size=0.3, random_state=0, scale=True):
    """The standard split, drawn over *source* items: no source on both sides.

    The source ids are split 70/30, stratified by their (single) label; every row goes
    with its source. The scaler is fitted on the training part, as in :func:`split`.

    Parameters
    ----------
    X : array of shape (n, d)
        The points.
    y : array of shape (n,)
        Their labels (one label per source).
    source : array of shape (n,)
        The source item of each row.
    test_size, random_state, scale : float, int, bool
        As in :func:`split`.

    Returns
    -------
    X_train, X_test : ndarray
        The training and test points.
    y_train, y_test : ndarray
        Their labels.
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
