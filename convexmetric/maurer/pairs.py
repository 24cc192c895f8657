"""Labelled pairs ``(x, x', r)`` and the pair oracles of Maurer (JMLR 2008).

A pair oracle returns triplets ``(x, x', r)`` with ``r = 1`` for *similar* and
``r = −1`` for *dissimilar* pairs (Assumption 1). Two oracles are derived from a
labelled sample (§5.1), both seeded:

* :func:`label_pairs`, eq. (10): two independent draws ``(x, y), (x', y')``;
  ``r = 1`` iff ``y = y'``. With many classes most pairs are dissimilar.
* :func:`balanced_pairs`, the balanced oracle ``ρ̄``: draw ``(x, y)``, flip a fair
  coin; on heads draw ``x'`` from class ``y`` (``r = 1``), on tails from the other
  classes (``r = −1``).

Draws are uniform over the rows of ``X`` (the empirical measure μ); as in the
paper, ``x'`` may coincide with ``x`` (a zero difference, which costs nothing for
``γ ≤ 1``).

A :class:`Pairs` object stores the points once and the pairs as index arrays, so
kernels are evaluated on ``n`` points rather than ``2m``:

>>> import numpy as np
>>> P = Pairs([[0.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]], [1, -1])
>>> P.differences.tolist(), P.r.tolist()
([[0.0, -1.0], [0.0, 0.0]], [1.0, -1.0])
"""

from __future__ import annotations

import numpy as np

from .._input_checks import check_indices, check_labels, check_matrix, check_scalar


def check_r(r, m, name="r"):
    """Return ``r`` as a float array of ±1 of length ``m``, or raise naming ``name``."""
    arr = np.asarray(r)
    if arr.ndim != 1 or arr.shape[0] != m:
        raise ValueError(
            f"'{name}' must be a 1-dimensional array of length {m}; got shape {arr.shape}."
        )
    try:
        arr = arr.astype(float)
    except (TypeError, ValueError):
        raise ValueError(f"'{name}' must hold the similarity values -1 and +1.") from None
    bad = ~np.isin(arr, (-1.0, 1.0))
    if bad.any():
        raise ValueError(
            f"'{name}' must hold only -1 (dissimilar) and +1 (similar); got {arr[bad][0]!r}."
        )
    return arr


class Pairs:
    """Labelled pairs ``(x_i, x'_i, r_i)``, stored as points plus index arrays.

    Parameters
    ----------
    x, x_prime : array-like of shape (m, D)
        The two members of every pair.
    r : array-like of shape (m,)
        ``+1`` (similar) or ``−1`` (dissimilar).

    Attributes
    ----------
    points : ndarray (n, D)
        The distinct storage of inputs; ``x = points[i]``, ``x' = points[j]``.
    i, j : ndarray of int (m,)
    r : ndarray of float (m,)
    """

    def __init__(self, x, x_prime, r):
        x = check_matrix(x, "x")
        x_prime = check_matrix(x_prime, "x_prime")
        if x.shape != x_prime.shape:
            raise ValueError(
                f"'x' and 'x_prime' must have the same shape; got {x.shape} and {x_prime.shape}."
            )
        m = x.shape[0]
        self.r = check_r(r, m)
        self.points = np.vstack([x, x_prime])
        self.i, self.j = np.arange(m), m + np.arange(m)

    @classmethod
    def from_indices(cls, X, i, j, r):
        """Pairs ``(X[i_t], X[j_t], r_t)`` sharing the rows of ``X`` (no copies per pair)."""
        X = check_matrix(X, "X")
        n = X.shape[0]
        i, j = check_indices(np.ravel(i), n, "i"), check_indices(np.ravel(j), n, "j")
        if len(i) != len(j) or len(i) == 0:
            raise ValueError(
                f"'i' and 'j' must be non-empty and of equal length; got {len(i)}, {len(j)}."
            )
        obj = cls.__new__(cls)
        obj.points, obj.i, obj.j = X, i, j
        obj.r = check_r(r, len(i))
        return obj

    def __len__(self):
        return len(self.r)

    def __repr__(self):
        return f"Pairs(m={len(self)}, similar={int((self.r > 0).sum())}, dim={self.dim})"

    @property
    def dim(self):
        return self.points.shape[1]

    @property
    def x(self):
        return self.points[self.i]

    @property
    def x_prime(self):
        return self.points[self.j]

    @property
    def differences(self):
        """``U`` with rows ``u_t = x_t − x'_t`` (shape ``(m, D)``)."""
        return self.points[self.i] - self.points[self.j]

    def require_both(self, name="pairs"):
        """Raise unless both similar and dissimilar pairs are present."""
        n_sim = int((self.r > 0).sum())
        if n_sim == 0 or n_sim == len(self):
            kind = "dissimilar" if n_sim == 0 else "similar"
            raise ValueError(
                f"'{name}' holds only {kind} pairs; the objective needs both similar (r=+1) "
                "and dissimilar (r=-1) pairs."
            )
        return self


def _labelled(X, y):
    X = check_matrix(X, "X")
    y = check_labels(y, X.shape[0])
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(
            f"'y' must hold at least 2 classes to form dissimilar pairs; got {len(classes)}."
        )
    return X, codes


def label_pairs(X, y, m, *, random_state=None):
    """``m`` draws of the label oracle ρ_τ of eq. (10).

    >>> X = np.arange(8.0).reshape(4, 2); y = [0, 0, 1, 1]
    >>> P = label_pairs(X, y, 5, random_state=0); len(P), P.dim
    (5, 2)
    """
    m = check_scalar(m, "m", int, min_val=1)
    X, codes = _labelled(X, y)
    rng = np.random.default_rng(random_state)
    i = rng.integers(0, X.shape[0], m)
    j = rng.integers(0, X.shape[0], m)
    r = np.where(codes[i] == codes[j], 1.0, -1.0)
    return Pairs.from_indices(X, i, j, r)


def balanced_pairs(X, y, m, *, random_state=None):
    """``m`` draws of the balanced oracle ρ̄_τ of §5.1 (a fair coin picks r).

    >>> X = np.arange(8.0).reshape(4, 2); y = [0, 0, 1, 1]
    >>> P = balanced_pairs(X, y, 6, random_state=0); sorted(set(P.r.tolist()))
    [-1.0, 1.0]
    """
    m = check_scalar(m, "m", int, min_val=1)
    X, codes = _labelled(X, y)
    rng = np.random.default_rng(random_state)
    n = X.shape[0]
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    i = rng.integers(0, n, m)
    c = codes[i]
    heads = rng.random(m) < 0.5
    # heads: uniform over class c; tails: uniform over the n − |c| rows of other classes
    k_same = (rng.random(m) * counts[c]).astype(np.int64)
    k_other = (rng.random(m) * (n - counts[c])).astype(np.int64)
    pos_other = np.where(k_other < start[c], k_other, k_other + counts[c])
    j = order[np.where(heads, start[c] + k_same, pos_other)]
    r = np.where(heads, 1.0, -1.0)
    return Pairs.from_indices(X, i, j, r)
