"""The taxonomy experiment of McFee & Lanckriet §5.1, rebuilt on scikit-learn's digits.

The paper sampled 20 images from each of 10 ALOI objects, placed the labels in a
hand-made taxonomy (its Fig. 4) and synthesised comparisons ``(i, j, i, k)`` through
least common ancestors: ``i`` is closer to ``j`` than to ``k`` when the labels of
``i`` and ``j`` meet deeper in the tree than those of ``i`` and ``k``. Features were
one linear kernel on intensities, four Gaussian kernels on colour histograms, and
five *noise* kernels (linear kernels of random points on the unit sphere in R³).

Here the ten digit classes play the objects (:data:`DIGIT_TAXONOMY`), and the
informative kernels are views of the 8×8 image: a linear kernel on the pixels and
Gaussian kernels on the row profile, the column profile, the 4×4 pooled image and the
intensity histogram. Every kernel is scaled to unit mean diagonal.

>>> T = make_taxonomy(n_per_class=5, n_train_comparisons=50, n_test_comparisons=20)
>>> len(T.kernels), T.kernel_names[:2], len(T.train_comparisons)
(10, ['pixels', 'rows'], 50)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from ..comparisons import Comparisons
from ..kernels import linear_kernel, noise_kernels, normalize_kernel, rbf_kernel

#: label -> path from the root (the taxonomy over the ten digits, cf. Fig. 4).
DIGIT_TAXONOMY = {
    0: ("curved", "closed", "ring"),
    6: ("curved", "closed", "ring"),
    8: ("curved", "closed", "double"),
    9: ("curved", "closed", "double"),
    2: ("curved", "open", "open"),
    3: ("curved", "open", "open"),
    5: ("curved", "open", "open"),
    1: ("straight", "stroke", "stroke"),
    7: ("straight", "stroke", "stroke"),
    4: ("straight", "cross", "cross"),
}


def lca_depth(a, b, taxonomy=DIGIT_TAXONOMY):
    """Depth of the least common ancestor of labels ``a`` and ``b`` (equal labels: the
    leaf, one deeper than any shared internal node)."""
    pa, pb = (*taxonomy[a], a), (*taxonomy[b], b)
    depth = 0
    for u, v in zip(pa, pb):
        if u != v:
            break
        depth += 1
    return depth


def lca_comparisons(y, items, n, *, taxonomy=DIGIT_TAXONOMY, queries=None, random_state=None):
    """``n`` triadic comparisons ``(i, j, i, k)`` among ``items`` with
    ``lca(y_i, y_j)`` strictly deeper than ``lca(y_i, y_k)``.

    ``queries`` (default ``items``) restricts the query item ``i``; ``j, k`` come from
    ``items``. Comparisons are drawn without replacement of the triple.
    """
    rng = np.random.default_rng(random_state)
    items = np.asarray(items)
    queries = items if queries is None else np.asarray(queries)
    labels = sorted(taxonomy)
    depth = np.array([[lca_depth(a, b, taxonomy) for b in labels] for a in labels])
    lab = {v: t for t, v in enumerate(labels)}
    code = np.array([lab[v] for v in np.asarray(y).tolist()])
    seen, out = set(), []
    for _ in range(200):
        i = rng.choice(queries, 4 * n)
        j, k = rng.choice(items, 4 * n), rng.choice(items, 4 * n)
        dj, dk = depth[code[i], code[j]], depth[code[i], code[k]]
        ok = (i != j) & (i != k) & (j != k) & (dj != dk)
        for a, b, c, s in zip(i[ok], j[ok], k[ok], (dj > dk)[ok]):
            b, c = (b, c) if s else (c, b)
            if (a, b, c) not in seen:
                seen.add((a, b, c))
                out.append((a, b, a, c))
                if len(out) == n:
                    return Comparisons.from_array(np.array(out), n_items=len(y))
    raise ValueError(f"could not draw {n} distinct comparisons from {len(items)} items.")


def digit_views(X):
    """Informative kernels on 8×8 digit images: ``{name: K}`` (unit mean diagonal)."""
    img = np.asarray(X, dtype=float).reshape(-1, 8, 8) / 16.0
    pooled = img.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(img), -1)
    hist = np.stack([np.histogram(x, bins=8, range=(0, 1))[0] for x in img]) / 64.0
    views = {
        "pixels": linear_kernel(img.reshape(len(img), -1)),
        "rows": rbf_kernel(img.sum(axis=2)),
        "columns": rbf_kernel(img.sum(axis=1)),
        "pooled": rbf_kernel(pooled),
        "histogram": rbf_kernel(hist),
    }
    return {k: normalize_kernel(K) for k, K in views.items()}


@dataclass
class TaxonomyProblem:
    """Items, kernels, the 80/20 split and the comparisons of the §5.1 protocol."""

    X: np.ndarray
    y: np.ndarray
    kernels: list
    kernel_names: list
    train: np.ndarray
    test: np.ndarray
    train_comparisons: Comparisons  #: over training positions 0..len(train)-1
    test_comparisons: Comparisons  #: (i, j, i, k), i held out, j, k training; global indices

    def train_kernels(self):
        """``Kᵖ[train, train]`` for every kernel."""
        return [K[np.ix_(self.train, self.train)] for K in self.kernels]

    def test_kernels(self):
        """``Kᵖ[test, train]`` (out-of-sample kernel values) for every kernel."""
        return [K[np.ix_(self.test, self.train)] for K in self.kernels]

    def embed(self, train_Z, test_Z):
        """A global embedding (row per item) from training and held-out embeddings."""
        Z = np.zeros((len(self.y), train_Z.shape[1]))
        Z[self.train], Z[self.test] = train_Z, test_Z
        return Z


def load_digit_subset(n_per_class=20, *, random_state=0):
    """``n_per_class`` digits of each class (``(X, y)``, seeded)."""
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(random_state)
    idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), n_per_class, replace=False) for c in range(10)]
    )
    return X[idx].astype(float), y[idx]


def make_taxonomy(
    n_per_class=20,
    *,
    n_noise=5,
    n_train_comparisons=2000,
    n_test_comparisons=2000,
    test_size=0.2,
    random_state=0,
):
    """Build the §5.1 problem on digits; see :class:`TaxonomyProblem`."""
    rng = np.random.default_rng(random_state)
    X, y = load_digit_subset(n_per_class, random_state=random_state)
    views = digit_views(X)
    names = list(views) + [f"noise{p + 1}" for p in range(n_noise)]
    kernels = list(views.values()) + noise_kernels(len(y), n_noise, random_state=rng)
    train, test = train_test_split(
        np.arange(len(y)), test_size=test_size, stratify=y, random_state=int(rng.integers(2**31))
    )
    train, test = np.sort(train), np.sort(test)
    C = lca_comparisons(y, train, n_train_comparisons, random_state=rng)
    pos = np.full(len(y), -1)
    pos[train] = np.arange(len(train))
    train_C = Comparisons(pos[C.i], pos[C.j], pos[C.k], pos[C.l], n_items=len(train))
    test_C = lca_comparisons(y, train, n_test_comparisons, queries=test, random_state=rng)
    return TaxonomyProblem(X, y, kernels, names, train, test, train_C, test_C)


def survey_comparisons(
    y, items, n_queries, n_candidates=8, *, taxonomy=DIGIT_TAXONOMY, random_state=None
):
    """Survey-style comparisons (cf. aset400, §5.2): each query ``i`` sees
    ``n_candidates`` items and every candidate pair with different LCA depths gives
    ``(i, closer, i, farther)``. Within one query the comparisons form chains, so the
    set is rich in transitive redundancy (the setting of §5.2.4).
    """
    rng = np.random.default_rng(random_state)
    items = np.asarray(items)
    rows = []
    for i in rng.choice(items, n_queries):
        cand = rng.choice(items[items != i], n_candidates, replace=False)
        depth = np.array([lca_depth(y[i], y[c], taxonomy) for c in cand])
        for a in range(n_candidates):
            for b in range(n_candidates):
                if depth[a] > depth[b]:
                    rows.append((i, cand[a], i, cand[b]))
    return Comparisons.from_array(np.array(rows).reshape(-1, 4), n_items=len(y))
