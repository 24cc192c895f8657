r"""Energy-based classification, §3.5 / eq. (15) of Weinberger & Saul (JMLR 2009).

A test point ``x_t`` is treated as an extra training point with a hypothetical label
``c``; its energy is eq. (14) restricted to the terms that involve it:

.. math::

    E_c(x_t) = (1-\mu)\sum_{j \rightsquigarrow t} D(x_t, x_j)
    + \mu \sum_{j \rightsquigarrow t,\ l:\,y_l \ne c} [1 + D(x_t, x_j) - D(x_t, x_l)]_+
    + \mu \sum_{i:\,y_i \ne c,\ j \rightsquigarrow i} [1 + D(x_i, x_j) - D(x_i, x_t)]_+ ,

and ``x_t`` gets the label of least energy. The target neighbours ``j ⇝ t`` are the
``k`` nearest training points of class ``c`` by Euclidean distance (the paper's
default, "as determined by Euclidean distance to x_t"; all of them when the class has
``k`` or fewer). A training point's padded target slots (its class has ``k`` members or
fewer: :func:`~convexmetric.neighbors.target_neighbors`) make no term. With several
metrics (§5.2) ``D`` is the asymmetric distance of eq. (16): ``D(x_a, x_b)`` uses the
metric of ``x_b``'s cluster; the test point's cluster is its hypothetical label
(clusters from labels) or a given cluster per test point.

Everything is vectorised over blocks of test points: no Python loop over the
training set; memory ``O(block · n · k)``.
"""

from __future__ import annotations

import numpy as np

from ..neighbors import mask_padding, sqdist


def _as_stack(components):
    L = np.asarray(components, dtype=float)
    return L[None] if L.ndim == 2 else L


def train_target_distances(X, targets, components, clusters=None):
    """``D̂(x_i, x_j)`` for every training point and its targets: an ``(n, k)`` array."""
    Ls = _as_stack(components)
    g = np.zeros(X.shape[0], np.int64) if clusters is None else np.asarray(clusters)
    diff = X[:, None, :] - X[targets]  # n × k × d
    gl = g[targets]
    out = np.empty(targets.shape)
    for c in range(len(Ls)):
        sel = gl == c
        if sel.any():
            Zd = diff[sel] @ Ls[c].T
            out[sel] = np.einsum("ij,ij->i", Zd, Zd)
    return out


def energy_scores(
    X_train,
    y_train,
    targets,
    X_test,
    components,
    mu,
    *,
    clusters=None,
    test_clusters=None,
    block_size=128,
):
    """Energies ``E_c(x_t)`` of eq. (15): an ``(n_test, n_classes)`` array.

    Parameters
    ----------
    X_train, y_train : training data; ``y_train`` encoded as ``0..C-1``.
    targets : int array (n, k), the training target neighbours.
    X_test : array (m, d).
    components : array (r, d), or (c, r, d) for one metric ``M_g = L_gᵀL_g`` per cluster.
    mu : float, the push weight of eq. (14).
    clusters : int array (n,), cluster of each training point (several metrics only).
    test_clusters : int array (m,), optional
        Cluster of each test point; default: its hypothetical label (clusters from labels).

    Examples
    --------
    >>> X = np.array([[0.], [1.], [3.], [4.]]); y = np.array([0, 0, 1, 1])
    >>> T = np.array([[1], [0], [3], [2]])
    >>> E = energy_scores(X, y, T, np.array([[0.5], [3.6]]), np.eye(1), 0.5)
    >>> E.argmin(axis=1).tolist()
    [0, 1]
    """
    Ls = _as_stack(components)
    n, k = targets.shape
    n_classes = int(y_train.max()) + 1
    multi = len(Ls) > 1
    g = np.zeros(n, np.int64) if clusters is None else np.asarray(clusters)
    Dtr = mask_padding(train_target_distances(X_train, targets, Ls, g), targets)  # no hinge
    Z = [X_train @ L.T for L in Ls]
    sq = [np.einsum("ij,ij->i", z, z) for z in Z]
    sq_x = np.einsum("ij,ij->i", X_train, X_train)
    onehot = np.eye(n_classes)[y_train]  # n × C
    members = [np.flatnonzero(y_train == c) for c in range(n_classes)]
    m = X_test.shape[0]
    E = np.empty((m, n_classes))
    for s in range(0, m, block_size):
        Xb = X_test[s : s + block_size]
        b = Xb.shape[0]
        Dc = [sqdist(Xb @ L.T, z, None, q) for L, z, q in zip(Ls, Z, sq)]  # per-metric
        D_to = Dc[0] if not multi else np.take_along_axis(np.stack(Dc), g[None, None, :], 0)[0]
        D_euc = sqdist(Xb, X_train, None, sq_x)
        tc = None if test_clusters is None else np.asarray(test_clusters)[s : s + block_size]
        for c in range(n_classes):
            idx = members[c]
            kk = min(k, len(idx))
            near = idx[np.argsort(D_euc[:, idx], axis=1, kind="stable")[:, :kk]]  # b × k
            dj = np.take_along_axis(D_to, near, 1)  # D̂(x_t, x_j)
            pull = dj.sum(1)
            other = y_train != c
            push_out = np.maximum(1.0 + dj[:, :, None] - D_to[:, None, other], 0.0).sum((1, 2))
            if not multi:
                D_from = D_to  # symmetric with one metric
            elif tc is None:
                D_from = Dc[c]  # the test point's cluster is its hypothetical label
            else:
                D_from = np.take_along_axis(np.stack(Dc), tc[None, :, None], 0)[0]
            S = np.maximum(1.0 + Dtr[None, :, :] - D_from[:, :, None], 0.0).sum(2)  # b × n
            push_in = S.sum(1) - S @ onehot[:, c]
            E[s : s + b, c] = (1.0 - mu) * pull + mu * (push_out + push_in)
    return E


def energy_predict(X_train, y_train, targets, X_test, components, mu, **kw):
    """Labels (``0..C-1``) of least energy, eq. (15); ties go to the smaller label."""
    return energy_scores(X_train, y_train, targets, X_test, components, mu, **kw).argmin(axis=1)
