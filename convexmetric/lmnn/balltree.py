"""Impostor search and kNN queries through metric trees (§6 of Weinberger & Saul 2009).

One tree per class (the paper: "we build one ball tree data structure per class and
perform a separate search for impostors in each class"): the points of every other
class query the tree of class ``c`` with their own radius (the largest target
distance plus the unit margin, eq. 10). scikit-learn's ``BallTree``/``KDTree`` do the
depth-first search with the pruning bound of eq. (17).

Both searches return a *superset* of the pairs within the radius (radius widened by
``rtol``, as the float32 brute-force search does); callers recompute the distances in
double precision and filter, so the hinge terms and active sets found through a tree
are exactly those found by brute force.

:class:`ImpostorSearch` picks tree or brute force by measuring, as the original LMNN
code does: it times both on its first calls and keeps the faster one.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.neighbors import BallTree, KDTree

from ..neighbors import DEFAULT_BLOCK, impostor_pairs

TREES = {"balltree": BallTree, "kdtree": KDTree}


def impostor_pairs_tree(Z, y, radius, *, tree="balltree", leaf_size=30, rtol=1e-5, **_):
    """Differently labelled pairs ``(i, l)`` with ``‖z_i − z_l‖² < radius[i]`` (a superset).

    Returns ``(I, L)`` sorted by ``i`` then ``l``.

    >>> Z = np.array([[0.], [1.], [1.5], [5.]]); y = np.array([0, 0, 1, 1])
    >>> I, L = impostor_pairs_tree(Z, y, np.array([1.0, 1.0, 1.0, 1.0]))
    >>> list(zip(I.tolist(), L.tolist()))
    [(1, 2), (2, 1)]
    """
    n = Z.shape[0]
    Tree = TREES[tree]
    scale = float(np.einsum("ij,ij->i", Z, Z).max(initial=0.0)) + 1.0
    r = np.sqrt(np.maximum(radius * (1 + rtol) + rtol * scale, 0.0))
    I_out, L_out = [], []
    for c in np.unique(y):
        inside = np.flatnonzero(y == c)
        outside = np.flatnonzero(y != c)
        if len(outside) == 0:
            continue
        t = Tree(Z[inside], leaf_size=leaf_size)
        hits = t.query_radius(Z[outside], r[outside])
        counts = np.fromiter((len(h) for h in hits), np.int64, len(hits))
        if counts.sum() == 0:
            continue
        I_out.append(np.repeat(outside, counts))
        L_out.append(inside[np.concatenate(hits).astype(np.int64)])
    if not I_out:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    I, L = np.concatenate(I_out), np.concatenate(L_out)
    order = np.argsort(I * n + L, kind="stable")
    return I[order], L[order]


class ImpostorSearch:
    """A callable impostor search: ``"brute"``, ``"balltree"``, ``"kdtree"`` or ``"auto"``.

    With ``"auto"`` the first ``trials`` calls alternate brute force and ball tree and
    time them; afterwards the faster one is used (``choice`` says which, ``timings``
    holds the measurements).
    """

    def __init__(self, method="auto", *, trials=2, leaf_size=30):
        if method not in ("auto", "brute", "balltree", "kdtree"):
            raise ValueError(
                f"'search' must be one of 'auto', 'brute', 'balltree', 'kdtree'; got {method!r}."
            )
        self.method = method
        self.trials = trials
        self.leaf_size = leaf_size
        self.timings = {"brute": [], "balltree": []}
        self.choice = None if method == "auto" else method

    def _run(self, method, Z, y, radius, block_size):
        if method == "brute":
            return impostor_pairs(Z, y, radius, block_size=block_size)
        return impostor_pairs_tree(Z, y, radius, tree=method, leaf_size=self.leaf_size)

    def __call__(self, Z, y, radius, *, block_size=DEFAULT_BLOCK):
        if self.choice is not None:
            return self._run(self.choice, Z, y, radius, block_size)
        done = sum(len(v) for v in self.timings.values())
        method = ("brute", "balltree")[done % 2]
        t0 = time.perf_counter()
        out = self._run(method, Z, y, radius, block_size)
        self.timings[method].append(time.perf_counter() - t0)
        if done + 1 >= 2 * self.trials:
            self.choice = min(self.timings, key=lambda m: min(self.timings[m]))
        return out
