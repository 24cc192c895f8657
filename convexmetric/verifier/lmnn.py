r"""The LMNN family's checks: eq. (14) of Weinberger & Saul (2009) and its dual bound,
recomputed from the data.

**Eq. (14).** With target neighbours ``j ⇝ i`` (the ``k`` nearest points of ``i``'s class)
and ``D(i, j) = (x_i − x_j)ᵀM(x_i − x_j)``,

.. math::

    f(M) = (1 − μ)\sum_{i, j⇝i} D(i, j)
         + μ \sum_{i, j⇝i} \sum_{l: y_l ≠ y_i} [1 + D(i, j) − D(i, l)]_+ .

Every ``λ ∈ [0, 1]`` per triplet ``t = (i, j, l)`` gives ``f(M) ≥ μΣλ + ⟨S(λ), M⟩`` for
all ``M ⪰ 0``, with ``S(λ) = (1 − μ)P + μΣλ_t(C_ij − C_il)``, ``P = Σ C_ij`` the pull
matrix and ``C_ab = (x_a − x_b)(x_a − x_b)ᵀ``. Let ``ν`` be the smallest generalised
eigenvalue of ``(S(λ), (1 − μ)P)`` on the range of ``P`` (valid when the impostor
differences of the triplets with ``λ_t > 0`` lie in that range). Since
``(1 − μ)⟨P, M*⟩ ≤ f*``, for ``ν < 0`` both ``f* ≥ μΣλ/(1 − ν)`` and
``f* ≥ μΣλ + νF`` (any ``F ≥ f*``) hold; for ``ν ≥ 0``, ``f* ≥ μΣλ``. The verifier
takes ``F = max(F_certificate, f(M_fitted))`` (an upper bound on ``f*`` whatever the
certificate says) and the larger of the two bounds.

**Resolution.** The objective is recomputed on centred points (distances do not move)
with :data:`._eq14.RESOLUTION_UNITS` bounding each distance's float64 error by
``‖M‖₂(‖x̃_a‖ + ‖x̃_b‖)²`` times ``(d + 2)`` unit roundoffs. Their sum over the target
distances and the hinges within their error of positive is the report's ``resolution``.
It decides where the relative gap cannot: at an optimum of 0 (a metric separating the
classes with no target distance left, reached by a metric of large norm) the objective
of any stored matrix is rounding, and the model is verified when ``f − bound`` and the
stored objective's difference are within that resolution.

**Certificates** (``result_.certificate``; indices int32, or int64 past 2³¹ points):

============  ==========  ===============================================================
kind          key         meaning
============  ==========  ===============================================================
lmnn          ``i``       (m,) int: the triplets' points, with ``λ_t > 0`` only
              ``j``       (m,) int: a target neighbour of ``i``
              ``l``       (m,) int: an impostor candidate, ``y_l ≠ y_i``
              ``lam``     (m,) float64 in ``[0, 1]``: the multipliers ``λ_t``
              ``F``       float: the attained value of the trace bound (NaN: not used)
lmnn_multi    (same)      the same keys, for the multi-metric objective (§5.2): pair
                          ``(a, b)`` under the metric ``M^{g(b)}`` of ``b``'s cluster;
                          ``S_h(λ) = (1 − μ)P_h + μΣλ(C_ij[g(j)=h] − C_il[g(l)=h])`` per
                          cluster, ``ν`` the least over the blocks relative to ``(1 − μ)P_h``
lmnn_kernel   (same)      the same dual point of eq. (14) over the kernel's empirical
                          features ``Φ`` (``K = ΦΦᵀ``, eigenvalues below 1e-10·λ_max
                          dropped), where ``D(i, j) = (k_i − k_j)ᵀA(k_i − k_j)``
============  ==========  ===============================================================

Target neighbours: the ``k`` nearest same-class points in Euclidean input distance (for
``KernelLMNN``, in the feature distance ``K_ii + K_jj − 2K_ij``), ties by index; a point
of a class with ``m ≤ k`` points has the ``m − 1`` others (the sums of eq. (14) run over
each point's own targets), and a class of one point cannot be fitted. ``targets_`` is
``(n, k)``: a slot holding ``i`` itself is padding, no target (zero pull, no hinge term,
and no certificate triplet ``(i, i, l)``). The fitted ``targets_`` must be those up to
ties (distances within rounding); with ``n_passes > 1`` or targets given to ``fit``
(§5.1: re-selected under the previous metric) they are checked to be distinct
same-class points other than ``i`` (plus padding) only.

Fitted attributes read: ``metric_`` (``LMNN``), ``metrics_`` and ``clusters_``
(``MultiMetricLMNN``; with ``n_clusters=None`` the clusters must be the classes),
``A_`` (``KernelLMNN``) and ``targets_``; parameters: ``k``, ``mu``, ``tol``,
``n_passes``, ``pca``, ``n_components``, ``n_clusters``, ``kernel``, ``gamma``.
Cost: ``O(n²(d + k))`` for the targets and the objective (float64 row blocks of
:data:`._eq14.BLOCK_BYTES`; under one metric each differently labelled pair is formed
once, for the hinges of both its orientations), ``O(pr²)`` for the bound's scatter over
the ``p`` distinct pairs of the certificate's triplets (``r`` features; the multipliers
of a pair summed first).
"""

from __future__ import annotations

import time

import numpy as np

from . import _eq14 as E
from ._eq14 import RANGE_RTOL, Infeasible
from ._report import OBJECTIVE_RTOL, VerificationError, check_tol, model_tol, report

#: the multi-metric certificate's range test (its oracle's): an impostor difference ``u``
#: with a multiplier must have ``‖u‖·MULTI_RANGE_RTOL`` at most off ``range(P_{g(l)})``
MULTI_RANGE_RTOL = 1e-6
#: the certified gap verified when the caller gives no ``tol`` (the estimators' default)
DEFAULT_TOL = 1e-4
#: relative rounding allowed on the distances that order target neighbours
TIE_RTOL = 1e-9
#: kernel LMNN: the stored objective agrees with the recomputed one to this share of tol
#: (its stored A_ holds the solver's metric only to rounding times the kernel's condition)
KERNEL_OBJECTIVE_SHARE = 1e-2


def check_lmnn(fitted, X, y, targets=None, *, tol=None):
    """Verify an ``LMNN`` fit (kind ``"lmnn"``) from its training data."""
    t0 = time.perf_counter()
    p = fitted.params
    for name in ("pca", "n_components"):
        if p.get(name) is not None:
            raise VerificationError(
                f"LMNN with {name}={p[name]!r}: the certificate is that of the reduced "
                "problem; only full-dimensional fits are verified."
            )
    X, y = _data(X, y)
    M = _attr(fitted, "metric_", (X.shape[1],) * 2)
    sq = np.einsum("ij,ij->i", X, X)
    T = _targets(fitted, lambda rows, cols: _sqdist(X, sq, rows, cols), y, targets)
    return _check("lmnn", fitted, X, y, T, [M], np.zeros(len(y), np.int64), t0, tol=tol)


def check_kernel(fitted, X, y, *, tol=None):
    """Verify a ``KernelLMNN`` fit (kind ``"lmnn_kernel"``) from its training data."""
    t0 = time.perf_counter()
    X, y = _data(X, y)
    K = _kernel(fitted.params, X)
    diag = np.diag(K).copy()
    T = _targets(fitted, lambda r, c: diag[r, None] + diag[None, c] - 2.0 * K[np.ix_(r, c)], y)
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    keep = w > RANGE_RTOL * max(float(w[-1]), 1e-300)
    Phi = V[:, keep] * np.sqrt(w[keep])  # the empirical kernel map, K = ΦΦᵀ
    # D(i, j) = (k_i − k_j)ᵀA(k_i − k_j) = (φ_i − φ_j)ᵀΦᵀAΦ(φ_i − φ_j): the metric on
    # the rows of Φ (in the eigenbasis: no product with K's small eigenvalues' inverses)
    A = _attr(fitted, "A_", K.shape)
    M = V[:, keep].T @ (0.5 * (A + A.T)) @ V[:, keep]
    M = np.sqrt(w[keep])[:, None] * M * np.sqrt(w[keep])[None]
    M = 0.5 * (M + M.T)
    # A_ = T M̂ Tᵀ (T = VΛ^{-1/2}) holds the solver's M̂ only to rounding times κ(K): an
    # ill-conditioned kernel's stored objective may differ from A_'s by more than
    # OBJECTIVE_RTOL; it must agree to KERNEL_OBJECTIVE_SHARE of tol (the gap, recomputed
    # here at A_'s own objective, is what certifies)
    zero = np.zeros(len(y), np.int64)
    return _check("lmnn_kernel", fitted, Phi, y, T, [M], zero, t0, kernel=True, tol=tol)


def check_multi(fitted, X, y, targets=None, *, tol=None):
    """Verify a ``MultiMetricLMNN`` fit (kind ``"lmnn_multi"``) from its training data
    (``targets``: given ones, as to ``LMNN.fit``)."""
    t0 = time.perf_counter()
    X, y = _data(X, y)
    sq = np.einsum("ij,ij->i", X, X)
    T = _targets(fitted, lambda rows, cols: _sqdist(X, sq, rows, cols), y, targets)
    Ms = fitted.attrs.get("metrics_")
    Ms = None if Ms is None else np.asarray(Ms, dtype=np.float64)
    if Ms is None or Ms.ndim != 3 or Ms.shape[1:] != (X.shape[1],) * 2:
        raise VerificationError(f"metrics_ must be (c, {X.shape[1]}, {X.shape[1]}).")
    g = np.asarray(fitted.attrs.get("clusters_", np.unique(y, return_inverse=True)[1]))
    if g.shape != y.shape or not np.issubdtype(g.dtype, np.integer) or g.min() < 0:
        raise VerificationError("clusters_ must be one cluster index per training point.")
    if g.max() >= len(Ms):
        raise VerificationError(f"clusters_ name {g.max() + 1} clusters; metrics_ has {len(Ms)}.")
    if fitted.params.get("n_clusters") is None and np.any(
        g != np.unique(y, return_inverse=True)[1]
    ):
        raise VerificationError("with n_clusters=None the clusters are the classes (§5.2).")
    return _check("lmnn_multi", fitted, X, y, T, list(Ms), g, t0, MULTI_RANGE_RTOL, tol=tol)


def _check(kind, fitted, X, y, T, Ms, g, t0, range_rtol=None, kernel=False, tol=None):
    """Eq. (14) at the metrics ``Ms`` (pair ``(a, b)`` under ``Ms[g[b]]``) over the features
    ``X``, and the certificate's bound."""
    mu, tol = float(fitted.params["mu"]), check_tol(tol, DEFAULT_TOL)
    try:
        Ls = [E.factor(M) for M in Ms]
    except Infeasible as exc:
        return _refused(kind, np.inf, tol, fitted.objective, t0, str(exc))
    norms = [float((L**2).sum(axis=1).max(initial=0.0)) for L in Ls]  # ‖M‖₂ = λ_max
    Xc = X - X.mean(axis=0)  # distances do not move; their rounding shrinks to the spread's
    xn = np.sqrt(np.einsum("ij,ij->i", Xc, Xc))
    objective, resolution = E.objective([Xc @ L.T for L in Ls], g, y, T, mu, xn, norms)
    try:
        bound = E.bound(X, y, T, mu, fitted.certificate, objective, g, len(Ms), range_rtol)
    except Infeasible as exc:
        return _refused(kind, objective, tol, fitted.objective, t0, str(exc))
    rtol = KERNEL_OBJECTIVE_SHARE * tol if kernel else OBJECTIVE_RTOL
    return report(kind, objective, bound, tol, fitted.objective, t0,
                  objective_rtol=max(rtol, OBJECTIVE_RTOL), resolution=resolution,
                  model_tol=model_tol(fitted.params))  # fmt: skip


def _refused(kind, objective, tol, reported, t0, why):
    out = report(kind, objective, -np.inf, tol, reported, t0)
    out.verified, out.reason = False, f"{why}; {out.reason}"
    return out


def _data(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    if X.ndim != 2 or len(y) != X.shape[0]:
        raise VerificationError(f"X must be (n, d) with n labels; got {X.shape} and {y.shape}.")
    return X, y


def _attr(fitted, name, shape):
    M = fitted.attrs.get(name)
    if M is None:
        raise VerificationError(f"the fitted {fitted.estimator} has no {name!r} to verify.")
    M = np.asarray(M, dtype=np.float64)
    if M.shape != tuple(shape):
        raise VerificationError(f"{name} has shape {M.shape}; the data need {tuple(shape)}.")
    return M


def _kernel(params, X):
    """The training kernel as :class:`KernelLMNN` defines it."""
    kind = params.get("kernel", "rbf")
    if kind == "precomputed":
        return X
    if kind == "linear":
        return X @ X.T
    if kind != "rbf":
        raise VerificationError(f"unknown kernel {kind!r}.")
    var = float(X.var())
    gamma = params.get("gamma") or (1.0 / (X.shape[1] * var) if var > 0 else 1.0)
    sq = np.einsum("ij,ij->i", X, X)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None] - 2.0 * X @ X.T, 0.0))


def _sqdist(X, sq, rows, cols):
    """``max(0, ‖x_r‖² + ‖x_c‖² − 2x_rᵀx_c)``, in place in one block: the −2 goes into
    the columns' copy (a power of two: ``x_rᵀ(−2x_c)`` is ``−2x_rᵀx_c`` bit for bit), so
    the block takes its product, two additions and the clip, and no temporaries."""
    D = X[rows] @ (-2.0 * X[cols]).T
    D += sq[None, cols]
    D += sq[rows, None]
    return np.maximum(D, 0.0, out=D)


def _targets(fitted, dist, y, given=None):
    """The target neighbours the objective uses: the fitted ``targets_``, checked."""
    n, k = len(y), int(fitted.params["k"])
    T = fitted.attrs.get("targets_") if given is None else given
    T = None if T is None else np.asarray(T)
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        raise VerificationError("a class has a single point: it has no target neighbour.")
    if T is None:
        return _nearest(dist, y, k)[0]
    if T.shape != (n, k) or not np.issubdtype(T.dtype, np.integer) or T.min() < 0 or T.max() >= n:
        raise VerificationError(f"targets must be ({n}, {k}) indices in range; got {T.shape}.")
    pad = T == np.arange(n)[:, None]  # i itself: padding, no target
    distinct = np.where(pad, -1 - np.arange(k), T)
    dup = np.any(np.diff(np.sort(distinct, axis=1), axis=1) == 0) if k > 1 else False
    if np.any(y[T] != y[:, None]) or dup or np.any(pad.all(axis=1)):
        raise VerificationError("targets must be distinct same-class points other than i "
                                "(i itself: padding), at least one per row.")  # fmt: skip
    if given is None and int(fitted.params.get("n_passes", 1) or 1) == 1:
        own = np.minimum(k, counts - 1)[np.searchsorted(classes, y)]  # min(k, class − 1)
        if np.any(k - pad.sum(axis=1) != own):
            raise VerificationError("targets_ must give each point min(k, class size − 1) "
                                    "targets.")  # fmt: skip
        _, kth, Dt = _nearest(dist, y, k, T)
        Dt[pad] = -np.inf
        if np.any(Dt > kth[:, None] + TIE_RTOL * np.maximum(kth, 1.0)[:, None]):
            raise VerificationError("targets_ are not the k nearest same-class points.")
    return T


def _nearest(dist, y, k, T=None):
    """``(targets, k-th distance, distances of T)``: the ``k`` nearest same-class points
    (``m − 1`` in a class of ``m ≤ k``, the row padded with ``i`` itself; ties by index:
    a stable sort where the last target's distance ties the next), by row blocks of each
    class against the class (``dist(rows, cols)``: squared distances); with ``T``, its
    distances only (``inf`` at padding)."""
    n = len(y)
    out, kth = np.empty((n, k), np.int64), np.empty(n)
    Dt = None if T is None else np.empty(T.shape)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        kc = min(k, len(idx) - 1)
        where = np.full(n, -1)
        where[idx] = np.arange(len(idx))
        step = E.block_rows(len(idx))
        for s in range(0, len(idx), step):
            rows = idx[s : s + step]
            D = dist(rows, idx)
            D[np.arange(len(rows)), where[rows]] = np.inf  # not its own neighbour
            part = np.partition(D, (kc - 1, kc), axis=1)
            kth[rows] = part[:, kc - 1]
            if T is not None:
                Dt[rows] = np.take_along_axis(D, where[T[rows]], axis=1)
                continue
            order = np.argpartition(D, kc - 1, axis=1)[:, :kc]
            tied = ~(part[:, kc] > part[:, kc - 1])  # the last ties the next: a stable sort
            if tied.any():
                order[tied] = np.argsort(D[tied], axis=1, kind="stable")[:, :kc]
            vals = np.take_along_axis(D, order, axis=1)
            order = np.take_along_axis(order, np.lexsort((order, vals), axis=1), axis=1)
            out[rows, :kc] = idx[order]
            out[rows, kc:] = rows[:, None]  # padding: no target
    return out, kth, Dt


KINDS = {"lmnn": check_lmnn, "lmnn_multi": check_multi, "lmnn_kernel": check_kernel}

__all__ = ["KINDS", "check_kernel", "check_lmnn", "check_multi"]
