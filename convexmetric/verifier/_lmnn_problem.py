"""The ingredients of eq. (14) that a fit could misstate, recomputed or checked from the
user's data and settings (:mod:`convexmetric.verifier.lmnn` documents them): the
parameters' domains, the map the model applies, the target neighbours and the clusters.
Nothing here is taken from the fit on trust."""

from __future__ import annotations

import numpy as np

from ._lmnn_objective import Mapped, block_rows
from ._report import VerificationError
from ._rigor import UNIT, gamma

#: every stored copy of the map (``metric_``, ``A_``, ``metrics_``) equals ``LᵀL`` of the
#: map applied (``components_``) to this share of its largest entry: the copies are formed
#: from one another by a few products and a symmetric eigendecomposition
COPY_RTOL = 1e-8
#: k-means' own stop (scikit-learn's ``KMeans(tol=1e-4)``): its centres may differ from
#: their clusters' means by this share of the data's mean variance (squared, summed)
KMEANS_TOL = 1e-4


def problem_params(params):
    """``(k, mu)``, checked in their domains (eq. (14) is bounded below only for
    ``0 ≤ μ < 1``... and a certificate needs a pull term, ``μ < 1``)."""
    k, mu = params.get("k"), params.get("mu")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise VerificationError(f"the model's 'k' must be an int in [1, inf); got {k!r}.")
    real = isinstance(mu, (int, float, np.integer, np.floating)) and not isinstance(mu, bool)
    if not real or not (0.0 <= float(mu) < 1.0):
        raise VerificationError(
            f"the model's 'mu' must be a number in [0, 1) (eq. (14) weighs the pull by "
            f"1 − μ and is unbounded below for μ < 0); got {mu!r}."
        )
    return int(k), float(mu)


def applied_map(fitted, shape_in, copy=None):
    """The map the model applies, ``components_`` (``r × d``), checked finite; ``copy``
    (``"metric_"``, ``"A_"``): a stored copy that must equal ``LᵀL``."""
    L = fitted.attrs.get("components_")
    if L is None:
        raise VerificationError(
            f"the fitted {fitted.estimator} has no 'components_': the map it applies is "
            "what is verified."
        )
    L = np.asarray(L, dtype=np.float64)
    if L.ndim != 2 or L.shape[1] != shape_in:
        raise VerificationError(f"components_ has shape {L.shape}; the data need (r, {shape_in}).")
    if not np.isfinite(L).all():
        raise VerificationError("components_ holds NaN or infinite values.")
    if copy is not None and copy in fitted.attrs:
        same_copy(copy, fitted.attrs[copy], L)
    return L


def same_copy(name, M, L):
    """:class:`VerificationError` unless the stored ``M`` is ``LᵀL`` (:data:`COPY_RTOL`)."""
    M = np.asarray(M, dtype=np.float64)
    G = L.T @ L
    if M.shape != G.shape or not np.isfinite(M).all():
        raise VerificationError(f"{name} has shape {M.shape}; components_ gives {G.shape}.")
    scale = max(float(np.abs(G).max(initial=0.0)), float(np.abs(M).max(initial=0.0)))
    if float(np.abs(M - G).max(initial=0.0)) > COPY_RTOL * scale:
        raise VerificationError(
            f"{name} is not components_ᵀ components_: the model holds two different maps "
            "(the one applied, components_, is the one verified)."
        )


def targets(rows_dist, y, k, T, given=False):
    """The target neighbours of eq. (14): ``T`` checked to be, for each point, ``min(k,
    class size − 1)`` distinct same-class points other than itself (padding: the point
    itself; the point of a class of one has none) that are the nearest up to the
    rounding of their distances (``rows_dist(rows, cols) -> (D, E)``: computed squared
    distances and rigorous bounds on their errors).
    ``given``: the user's own targets (checked for shape and class only)."""
    n = len(y)
    classes, counts = np.unique(y, return_counts=True)
    if counts.max() < 2:
        raise VerificationError("no class has two points: no point has a target neighbour.")
    alone = (counts == 1)[np.searchsorted(classes, y)]  # one member: a row of padding only
    T = np.asarray(T)
    ok = T.shape == (n, k) and np.issubdtype(T.dtype, np.integer)
    if not ok or T.min(initial=0) < 0 or T.max(initial=0) >= n:
        raise VerificationError(f"targets must be ({n}, {k}) indices in range; got {T.shape}.")
    pad = T == np.arange(n)[:, None]  # i itself: padding, no target
    distinct = np.where(pad, -1 - np.arange(k), T)
    dup = k > 1 and np.any(np.diff(np.sort(distinct, axis=1), axis=1) == 0)
    if np.any(y[T] != y[:, None]) or dup or np.any(pad.all(axis=1) & ~alone):
        raise VerificationError(
            "targets must be distinct same-class points other than i "
            "(i itself: padding), at least one per row of a class of "
            "two points or more."
        )
    if given:
        return T
    own = np.minimum(k, counts - 1)[np.searchsorted(classes, y)]  # min(k, class − 1)
    if np.any(k - pad.sum(axis=1) != own):
        raise VerificationError("targets_ must give each point min(k, class size − 1) targets.")
    for c in classes:
        idx = np.flatnonzero(y == c)
        where = np.full(n, -1)
        where[idx] = np.arange(len(idx))
        step = block_rows(len(idx))
        for s in range(0, len(idx), step):
            rows = idx[s : s + step]
            D, E = rows_dist(rows, idx)
            chosen = np.zeros(D.shape, bool)
            chosen[np.arange(len(rows))[:, None], where[T[rows]]] = True
            chosen[np.arange(len(rows)), where[rows]] = False  # (padding)
            others = ~chosen
            others[np.arange(len(rows)), where[rows]] = False  # not its own neighbour
            far = np.where(chosen, D - E, -np.inf).max(axis=1)
            near = np.where(others, D + E, np.inf).min(axis=1)
            if np.any(far > near):
                raise VerificationError("targets_ are not the k nearest same-class points.")
    return T


def distances(mapped):
    """``rows_dist`` of :func:`targets` under a :class:`._lmnn_objective.Mapped` map: squared
    distances from the one-product formula and their rigorous errors."""

    def rows_dist(rows, cols):
        Z = mapped.Z
        D = Z[rows] @ (-2.0 * Z[cols]).T
        D += mapped.sq[None, cols]
        D += mapped.sq[rows, None]
        E = (mapped.tau[rows, None] + mapped.tau[None, cols]) ** 2
        return D, E

    return rows_dist


def kernel_distances(K):
    """``rows_dist`` of :func:`targets` in a kernel's feature space:
    ``K_aa + K_bb − 2K_ab`` and the rounding of that sum."""
    diag = np.diag(K).copy()

    def rows_dist(rows, cols):
        S = (
            np.abs(diag[rows, None])
            + np.abs(diag[None, cols])
            + 2.0 * np.abs(K[np.ix_(rows, cols)])
        )
        return diag[rows, None] + diag[None, cols] - 2.0 * K[np.ix_(rows, cols)], gamma(3) * S

    return rows_dist


def euclidean(X):
    """``rows_dist`` of :func:`targets` for the input distance (the first pass's)."""
    Xc = X - X.mean(axis=0)
    return distances(Mapped(Xc, np.eye(X.shape[1])))


def clusters(fitted, X, y):
    """The multi-metric clusters ``g`` and their number: the classes when ``n_clusters``
    is None (§5.2); else a k-means partition checked against its definition: exactly
    ``n_clusters`` non-empty clusters, each point in the cluster of its nearest centre,
    each centre its cluster's mean (to k-means' own stop, :data:`KMEANS_TOL`)."""
    classes = np.unique(y, return_inverse=True)[1].ravel()
    c = fitted.params.get("n_clusters")
    g = fitted.attrs.get("clusters_")
    if c is None:
        if g is not None and not np.array_equal(np.asarray(g), classes):
            raise VerificationError("with n_clusters=None the clusters are the classes (§5.2).")
        return classes, int(classes.max()) + 1
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= c <= len(y):
        raise VerificationError(f"n_clusters must be an int in [1, {len(y)}]; got {c!r}.")
    g = np.asarray(g) if g is not None else None
    if g is None or g.shape != y.shape or not np.issubdtype(g.dtype, np.integer):
        raise VerificationError("clusters_ must be one cluster index per training point.")
    if g.min() < 0 or g.max() >= c or len(np.unique(g)) != c:
        raise VerificationError(f"clusters_ must use each of the {c} clusters (n_clusters={c}).")
    centres = fitted.attrs.get("cluster_centers_")
    if centres is None or np.shape(centres) != (c, X.shape[1]):
        raise VerificationError(f"cluster_centers_ must be ({c}, {X.shape[1]}).")
    _check_kmeans(X, g, np.asarray(centres, dtype=np.float64))
    return g, int(c)


def _check_kmeans(X, g, centres):
    """Each point in the cluster of its nearest centre (ties within rounding) and each
    centre its cluster's mean (to :data:`KMEANS_TOL`)."""
    c, d = centres.shape
    means = np.stack([X[g == h].mean(axis=0) for h in range(c)])
    shift = float(((means - centres) ** 2).sum())
    if not np.isfinite(shift) or shift > KMEANS_TOL * float(X.var(axis=0).mean()) * 1.01:
        raise VerificationError("cluster_centers_ are not the means of their clusters.")
    sq = np.einsum("ij,ij->i", X, X)
    csq = np.einsum("ij,ij->i", centres, centres)
    for s in range(0, len(X), block_rows(c)):
        rows = np.arange(s, min(s + block_rows(c), len(X)))
        D = sq[rows, None] + csq[None] - 2.0 * X[rows] @ centres.T
        err = gamma(d + 3) * (np.sqrt(sq[rows, None]) + np.sqrt(csq[None])) ** 2 + UNIT
        own = D[np.arange(len(rows)), g[rows]] - err[np.arange(len(rows)), g[rows]]
        if np.any(own > (D + err).min(axis=1)):
            raise VerificationError(
                "clusters_ put a point in a cluster whose centre is not its nearest."
            )


def saved_arrays(fitted, X, y, base=None, L=None):
    """A saved model's own arrays checked against the data (:data:`._report.PREDICTS`):
    its training points are the user's ``X``, its labels ``y``, and the embedding it
    predicts with is ``base Lᵀ`` (``base``: the points, or their kernel rows) to the
    rounding of that product — else the model predicts with a map that is not the one
    verified."""
    a = fitted.attrs
    for name in ("saved:train_points", "saved:kernel_points"):
        if name in a and not _close(a[name], X, 1e-12):
            raise VerificationError(f"the saved model's {name[6:]} are not the data given.")
    if "saved:train_labels" in a:
        codes = np.unique(y, return_inverse=True)[1].ravel()
        if not np.array_equal(np.asarray(a["saved:train_labels"]), codes):
            raise VerificationError("the saved model's train_labels are not the labels given.")
    if "saved:train_embedding" in a and L is not None:
        E = np.asarray(a["saved:train_embedding"], dtype=np.float64)
        if E.shape != (base.shape[0], L.shape[0]):
            raise VerificationError(f"the saved train_embedding has shape {E.shape}.")
        err = 2 * gamma(base.shape[1] + 1) * (np.abs(base) @ np.abs(L).T) * 1.01 + 1e-300
        if not np.all(np.abs(E - base @ L.T) <= err):
            raise VerificationError(
                "the saved model predicts with a train_embedding that is not its training "
                "points under components: two different maps."
            )


def _close(A, B, rtol):
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    scale = max(float(np.abs(B).max(initial=0.0)), 1e-300)
    return A.shape == B.shape and float(np.abs(A - B).max(initial=0.0)) <= rtol * scale
