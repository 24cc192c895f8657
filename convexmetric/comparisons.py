"""Relative comparisons: the supervision of partial order embedding.

A comparison ``(i, j, k, l)`` reads "``i`` and ``j`` are more similar than ``k`` and
``l``": an embedding ``g`` should satisfy ``d(i, j) + 1 ≤ d(k, l)`` with ``d`` the
squared Euclidean distance (McFee & Lanckriet 2011, eq. 1). The triadic form
``(i, j, i, k)`` ("is ``i`` closer to ``j`` or to ``k``?") is the common case.

Pairs are unordered (distances are symmetric), so ``(i, j)`` and ``(j, i)`` name the
same pair; :meth:`Comparisons.pair_keys` gives the canonical key ``min·n + max``.
The raw order is kept so that the query item ``i`` of a triadic comparison stays first.

>>> C = Comparisons([0, 0], [1, 2], [0, 0], [2, 3], n_items=4)
>>> len(C), C.is_triadic()
(2, True)
"""

from __future__ import annotations

import csv
import os

import numpy as np

_FIELDS = ("i", "j", "k", "l")


class Comparisons:
    """A validated set of relative comparisons ``d(i, j) + 1 ≤ d(k, l)``.

    Parameters
    ----------
    i, j, k, l : array-like of int
        The four index columns (equal lengths).
    n_items : int, optional
        Number of known items; every index must lie in ``[0, n_items)``. Default:
        ``1 + max index``.
    name : str
        The argument name used in error messages.

    Raises
    ------
    ValueError
        Non-integer or negative indices, indices ``≥ n_items``, a pair of an item with
        itself, or a comparison whose two sides are the same (unordered) pair.
    """

    def __init__(self, i, j, k, l, *, n_items=None, name="comparisons"):
        cols = [np.asarray(c).ravel() for c in (i, j, k, l)]
        if len({c.shape[0] for c in cols}) != 1:
            lens = [c.shape[0] for c in cols]
            raise ValueError(f"'{name}': the columns i, j, k, l have different lengths {lens}.")
        out = []
        for field, c in zip(_FIELDS, cols):
            if c.size and c.dtype.kind not in "iu":
                if c.dtype.kind == "f" and np.all(np.isfinite(c)) and np.all(c == np.round(c)):
                    c = c.astype(np.int64)
                else:
                    raise ValueError(
                        f"'{name}': column {field!r} must hold integer item indices; "
                        f"got dtype {c.dtype}."
                    )
            out.append(c.astype(np.int64, copy=False))
        self.i, self.j, self.k, self.l = out
        top = max((int(c.max()) for c in out if c.size), default=-1)
        if n_items is None:
            n_items = top + 1
        self.n_items = int(n_items)
        self.name = name
        for field, c in zip(_FIELDS, out):
            if c.size and (c.min() < 0 or c.max() >= self.n_items):
                bad = c[(c < 0) | (c >= self.n_items)][0]
                raise ValueError(
                    f"'{name}': column {field!r} holds item index {bad}, outside the range "
                    f"[0, {self.n_items})."
                )
        self_pair = (self.i == self.j) | (self.k == self.l)
        if self_pair.any():
            t = int(np.flatnonzero(self_pair)[0])
            raise ValueError(
                f"'{name}': comparison {t} {self.row(t)} pairs an item with itself; "
                "each side must name two different items."
            )
        a, b = self.pair_keys()
        same = a == b
        if same.any():
            t = int(np.flatnonzero(same)[0])
            raise ValueError(
                f"'{name}': comparison {t} {self.row(t)} compares a pair with itself "
                "(both sides are the same pair); it can never hold."
            )

    # -- constructors -------------------------------------------------------------
    @classmethod
    def from_array(cls, arr, *, n_items=None, name="comparisons"):
        """From an ``(m, 4)`` array (or ``(m, 3)`` triplets ``(i, j, k)`` → ``(i, j, i, k)``)."""
        arr = np.asarray(arr)
        if arr.ndim != 2 or arr.shape[1] not in (3, 4):
            raise ValueError(
                f"'{name}' must be an array of shape (m, 4) (or (m, 3) triplets); "
                f"got shape {arr.shape}."
            )
        if arr.shape[1] == 3:
            return cls(arr[:, 0], arr[:, 1], arr[:, 0], arr[:, 2], n_items=n_items, name=name)
        return cls(*arr.T, n_items=n_items, name=name)

    @classmethod
    def triadic(cls, i, j, k, *, n_items=None, name="comparisons"):
        """``(i, j, i, k)``: ``i`` is closer to ``j`` than to ``k``."""
        return cls(i, j, i, k, n_items=n_items, name=name)

    @classmethod
    def read_csv(cls, path, *, n_items=None):
        """Read a CSV file with the header row ``i,j,k,l`` (integer rows)."""
        with open(path, encoding="utf-8-sig") as fh:  # a spreadsheet's BOM is no cell
            lines = [ln.strip() for ln in fh if ln.strip()]
        if not lines or [h.strip() for h in lines[0].split(",")] != list(_FIELDS):
            raise ValueError(f"comparisons file {path!r} must start with the header row i,j,k,l.")
        rows = []
        for num, ln in enumerate(lines[1:], start=2):
            parts = ln.split(",")
            try:
                if len(parts) != 4:
                    raise ValueError(f"expected 4 fields, got {len(parts)}")
                rows.append([int(p) for p in parts])
            except ValueError as exc:
                raise ValueError(f"comparisons file {path!r}, line {num}: {exc}.") from None
        arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
        return cls.from_array(arr, n_items=n_items, name=os.path.basename(path))

    def to_csv(self, path):
        """Write the CSV format of :meth:`read_csv` (atomically: temp file, then rename)."""
        from ._atomic import atomic_file

        with atomic_file(path, "w") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(_FIELDS)
            writer.writerows([int(v) for v in row] for row in self.to_array())

    # -- views --------------------------------------------------------------------
    def __len__(self):
        return int(self.i.shape[0])

    def __repr__(self):
        return f"Comparisons({len(self)} comparisons over {self.n_items} items)"

    def __getitem__(self, idx):
        """The comparisons selected by an index array or boolean mask."""
        idx = np.asarray(idx)
        return Comparisons(
            self.i[idx], self.j[idx], self.k[idx], self.l[idx], n_items=self.n_items, name=self.name
        )

    def row(self, t):
        return tuple(int(c[t]) for c in (self.i, self.j, self.k, self.l))

    def to_array(self):
        """The ``(m, 4)`` int array ``[i, j, k, l]``."""
        return np.column_stack([self.i, self.j, self.k, self.l]).astype(np.int64)

    def pair_keys(self):
        """Canonical keys ``min·n + max`` of the left pairs ``(i, j)`` and right ones ``(k, l)``."""
        n = max(self.n_items, 1)
        left = np.minimum(self.i, self.j) * n + np.maximum(self.i, self.j)
        right = np.minimum(self.k, self.l) * n + np.maximum(self.k, self.l)
        return left, right

    def is_triadic(self):
        """Whether every comparison has the form ``(i, j, i, k)``."""
        return bool(np.all(self.i == self.k))

    def check_items(self, n, name="X"):
        """Raise unless every index names one of the ``n`` items (rows of ``name``)."""
        top = max((int(c.max()) for c in (self.i, self.j, self.k, self.l) if c.size), default=-1)
        if top >= n:
            raise ValueError(
                f"'{self.name}' refers to item {top}, but '{name}' has only {n} items "
                f"(indices must lie in [0, {n}))."
            )
        return self

    def margins(self, D):
        """``D[k, l] − D[i, j]`` for a matrix of (squared) distances ``D``."""
        return D[self.k, self.l] - D[self.i, self.j]


def check_comparisons(C, n=None, *, name="comparisons", owner=None):
    """Return ``C`` as non-empty :class:`Comparisons` naming items in ``[0, n)``.

    Accepts a :class:`Comparisons` or an ``(m, 4)``/``(m, 3)`` array.
    """
    if not isinstance(C, Comparisons):
        C = Comparisons.from_array(C, name=name)
        if n is not None:
            C.check_items(n)
            C.n_items = max(C.n_items, int(n))
    if len(C) == 0:
        who = f" of {owner}" if owner else ""
        raise ValueError(f"'{name}'{who} is empty; at least one comparison is needed.")
    if n is not None:
        C.check_items(n)
    return C


def split_comparisons(C, train):
    """The test protocol of §5.1: training comparisons and held-out queries.

    Parameters
    ----------
    C : Comparisons
        Comparisons over all items (global indices).
    train : array-like of int
        The training items; the others are held out.

    Returns
    -------
    train_C : Comparisons
        Comparisons with all four items in ``train``, re-indexed to positions in ``train``.
    test_C : Comparisons
        Triadic comparisons ``(i, j, i, k)`` with ``i`` held out and ``j, k`` in
        ``train`` (global indices).
    """
    train = np.asarray(train, dtype=np.int64)
    is_train = np.zeros(C.n_items, bool)
    is_train[train] = True
    pos = np.full(C.n_items, -1, np.int64)
    pos[train] = np.arange(len(train))
    cols = (C.i, C.j, C.k, C.l)
    keep = np.all([is_train[c] for c in cols], axis=0)
    train_C = Comparisons(*(pos[c[keep]] for c in cols), n_items=len(train), name=C.name)
    test = (C.i == C.k) & ~is_train[C.i] & is_train[C.j] & is_train[C.l]
    return train_C, C[np.flatnonzero(test)]
