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
``KernelLMNN``, in the feature distance ``K_ii + K_jj − 2K_ij``), ties by index; a class
of at most ``k`` points cannot be fitted. The fitted ``targets_`` must be those up to
ties (distances within rounding); with ``n_passes > 1`` or targets given to ``fit``
(§5.1: re-selected under the previous metric) they are checked to be distinct
same-class points other than ``i`` only.

Fitted attributes read: ``metric_`` (``LMNN``), ``metrics_`` and ``clusters_``
(``MultiMetricLMNN``; with ``n_clusters=None`` the clusters must be the classes),
``A_`` (``KernelLMNN``) and ``targets_``; parameters: ``k``, ``mu``, ``tol``,
``n_passes``, ``pca``, ``n_components``, ``n_clusters``, ``kernel``, ``gamma``.
Cost: ``O(n²(d + k))`` for the objective (row blocks of :data:`BLOCK_BYTES`), ``O(mr²)``
for the bound's scatter of the ``m`` multipliers (``r`` the features).
"""

from __future__ import annotations

import time

import numpy as np

from ._report import VerificationError, report

#: bytes of one float64 row block of the brute-force evaluations
BLOCK_BYTES = 64 << 20
#: eigenvalues of the pull matrix (or of ``K``) below this fraction of the largest are
#: its null space
RANGE_RTOL = 1e-10
#: the multi-metric certificate's range test (its oracle's): an impostor difference ``u``
#: with a multiplier must have ``‖u‖·MULTI_RANGE_RTOL`` at most off ``range(P_{g(l)})``
MULTI_RANGE_RTOL = 1e-6
#: relative rounding allowed on the distances that order target neighbours
TIE_RTOL = 1e-9


class Infeasible(Exception):
    """The fitted point or the certificate's dual point is outside its domain."""


def check_lmnn(fitted, X, y, targets=None):
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
    sq = np.einsum("ij,ij->i", X, X)
    T = _targets(fitted, lambda rows: _sqdist(X, sq, rows), y, targets)
    M = _attr(fitted, "metric_", (X.shape[1],) * 2)
    return _check("lmnn", fitted, X, y, T, [M], np.zeros(len(y), np.int64), t0)


def check_kernel(fitted, X, y):
    """Verify a ``KernelLMNN`` fit (kind ``"lmnn_kernel"``) from its training data."""
    t0 = time.perf_counter()
    X, y = _data(X, y)
    K = _kernel(fitted.params, X)
    diag = np.diag(K).copy()
    T = _targets(fitted, lambda rows: diag[rows, None] + diag[None] - 2.0 * K[rows], y)
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    keep = w > RANGE_RTOL * max(float(w[-1]), 1e-300)
    Phi = V[:, keep] * np.sqrt(w[keep])  # the empirical kernel map, K = ΦΦᵀ
    # D(i, j) = (k_i − k_j)ᵀA(k_i − k_j) = (φ_i − φ_j)ᵀΦᵀAΦ(φ_i − φ_j): the metric on
    # the rows of Φ (in the eigenbasis: no product with K's small eigenvalues' inverses)
    A = _attr(fitted, "A_", K.shape)
    M = V[:, keep].T @ (0.5 * (A + A.T)) @ V[:, keep]
    M = np.sqrt(w[keep])[:, None] * M * np.sqrt(w[keep])[None]
    M = 0.5 * (M + M.T)
    # (A_ = T M̂ Tᵀ, T = VΛ^{-1/2}, holds the solver's M̂ only to rounding times κ(K): an
    # ill-conditioned kernel's stored objective may differ from A_'s beyond OBJECTIVE_RTOL)
    zero = np.zeros(len(y), np.int64)
    return _check("lmnn_kernel", fitted, Phi, y, T, [M], zero, t0)


def check_multi(fitted, X, y, targets=None):
    """Verify a ``MultiMetricLMNN`` fit (kind ``"lmnn_multi"``) from its training data
    (``targets``: given ones, as to ``LMNN.fit``)."""
    t0 = time.perf_counter()
    X, y = _data(X, y)
    sq = np.einsum("ij,ij->i", X, X)
    T = _targets(fitted, lambda rows: _sqdist(X, sq, rows), y, targets)
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
    return _check("lmnn_multi", fitted, X, y, T, list(Ms), g, t0, MULTI_RANGE_RTOL)


def _check(kind, fitted, X, y, T, Ms, g, t0, range_rtol=None):
    """Eq. (14) at the metrics ``Ms`` (pair ``(a, b)`` under ``Ms[g[b]]``) over the features
    ``X``, and the certificate's bound."""
    mu, tol = float(fitted.params["mu"]), float(fitted.params.get("tol", 1e-4))
    try:
        objective = _objective([X @ _factor(M).T for M in Ms], g, y, T, mu)
    except Infeasible as exc:
        return _refused(kind, np.inf, tol, fitted.objective, t0, str(exc))
    try:
        bound = _bound(X, y, T, mu, fitted.certificate, objective, g, len(Ms), range_rtol)
    except Infeasible as exc:
        return _refused(kind, objective, tol, fitted.objective, t0, str(exc))
    return report(kind, objective, bound, tol, fitted.objective, t0)


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


def _sqdist(X, sq, rows):
    return np.maximum(sq[rows, None] + sq[None] - 2.0 * X[rows] @ X.T, 0.0)


def _block_rows(n):
    return max(1, BLOCK_BYTES // (8 * max(n, 1)))


def _factor(M):
    """``L`` with ``M = LᵀL``; :class:`Infeasible` unless ``M`` is finite, symmetric, PSD."""
    scale = max(float(np.abs(M).max()), 1e-300) if M.size else 1.0
    if not np.isfinite(M).all() or np.abs(M - M.T).max() > 1e-10 * scale:
        raise Infeasible("the fitted matrix is not finite and symmetric")
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    if w[0] < -1e-10 * max(float(np.abs(w).max()), 1e-300):
        raise Infeasible(f"the fitted matrix is not PSD (eigenvalue {w[0]:.3g})")
    return (V * np.sqrt(np.maximum(w, 0.0))).T


def _targets(fitted, dist, y, given=None):
    """The target neighbours the objective uses: the fitted ``targets_``, checked."""
    n, k = len(y), int(fitted.params["k"])
    T = fitted.attrs.get("targets_") if given is None else given
    T = None if T is None else np.asarray(T)
    counts = np.unique(y, return_counts=True)[1]
    if counts.min() <= k:
        raise VerificationError(f"a class has {counts.min()} points; k={k} needs k + 1.")
    if T is None:
        return _nearest(dist, y, k)[0]
    if T.shape != (n, k) or not np.issubdtype(T.dtype, np.integer) or T.min() < 0 or T.max() >= n:
        raise VerificationError(f"targets must be ({n}, {k}) indices in range; got {T.shape}.")
    rows = np.arange(n)[:, None]
    dup = np.any(np.diff(np.sort(T, axis=1), axis=1) == 0) if k > 1 else False
    if np.any(y[T] != y[:, None]) or np.any(T == rows) or dup:
        raise VerificationError("targets must be distinct same-class points other than i.")
    if given is None and int(fitted.params.get("n_passes", 1) or 1) == 1:
        _, kth, Dt = _nearest(dist, y, k, T)
        if np.any(Dt > kth[:, None] + TIE_RTOL * np.maximum(kth, 1.0)[:, None]):
            raise VerificationError("targets_ are not the k nearest same-class points.")
    return T


def _nearest(dist, y, k, T=None):
    """``(targets, k-th distance, distances of T)``: the ``k`` nearest same-class points
    (ties by index: a stable sort where the ``k``-th distance ties the next), by row
    blocks of ``dist(rows)`` (squared distances); with ``T``, its distances only."""
    n = len(y)
    out, kth = np.empty((n, k), np.int64), np.empty(n)
    Dt = None if T is None else np.empty(T.shape)
    step = _block_rows(n)
    for s in range(0, n, step):
        rows = np.arange(s, min(s + step, n))
        D = dist(rows)
        D[y[rows, None] != y[None]] = np.inf
        D[np.arange(len(rows)), rows] = np.inf
        part = np.partition(D, (k - 1, k), axis=1)
        kth[rows] = part[:, k - 1]
        if T is not None:
            Dt[rows] = np.take_along_axis(D, T[rows], axis=1)
            continue
        order = np.argpartition(D, k - 1, axis=1)[:, :k]
        tied = ~(part[:, k] > part[:, k - 1])  # the k-th ties the next: a stable sort
        if tied.any():
            order[tied] = np.argsort(D[tied], axis=1, kind="stable")[:, :k]
        vals = np.take_along_axis(D, order, axis=1)
        out[rows] = np.take_along_axis(order, np.lexsort((order, vals), axis=1), axis=1)
    return out, kth, Dt


def _objective(Zs, g, y, T, mu):
    """Eq. (14) from ``Zs[c] = X L_cᵀ`` (``M_c = L_cᵀL_c``; the pair ``(a, b)`` under
    ``M_{g[b]}``), by float64 row blocks over all triplets."""
    n, c = len(y), len(Zs)
    sq = [np.einsum("ij,ij->i", Z, Z) for Z in Zs]
    cols = [np.flatnonzero(g == h) for h in range(c)]
    pull = push = 0.0
    step = _block_rows(n)
    for s in range(0, n, step):
        rows = np.arange(s, min(s + step, n))
        Dt = np.empty((len(rows), T.shape[1]))
        for q in range(T.shape[1]):  # exact target distances, each under its own metric
            j = T[rows, q]
            for h in np.unique(g[j]):
                at = g[j] == h
                Dt[at, q] = ((Zs[h][rows[at]] - Zs[h][j[at]]) ** 2).sum(axis=1)
        pull += float(Dt.sum())
        D = np.empty((len(rows), n))
        for h in range(c):
            D[:, cols[h]] = (
                sq[h][rows, None] + sq[h][None, cols[h]] - 2.0 * Zs[h][rows] @ Zs[h][cols[h]].T
            )
        D[y[rows, None] == y[None]] = np.inf  # impostors: the other classes only
        for q in range(T.shape[1]):
            H = 1.0 + Dt[:, q, None] - D
            push += float(H[H > 0].sum())
    return (1 - mu) * pull + mu * push


def _dual_point(cert, n, y, T):
    """The certificate's triplets and multipliers, checked feasible (else :class:`Infeasible`)."""
    try:
        I, J, L, lam = (np.asarray(cert[key]) for key in ("i", "j", "l", "lam"))
    except KeyError as exc:
        raise Infeasible(f"the certificate lacks {exc}") from None
    m = len(lam)
    if any(a.ndim != 1 or len(a) != m for a in (I, J, L, lam)):
        raise Infeasible("the certificate's arrays i, j, l, lam differ in shape")
    if not all(np.issubdtype(a.dtype, np.integer) for a in (I, J, L)):
        raise Infeasible("the certificate's indices i, j, l are not integers")
    if m and (min(a.min() for a in (I, J, L)) < 0 or max(a.max() for a in (I, J, L)) >= n):
        raise Infeasible(f"the certificate's indices are outside [0, {n})")
    lam = lam.astype(np.float64)
    if not np.all((lam >= 0) & (lam <= 1)):  # (NaN fails too)
        raise Infeasible("multipliers outside their box [0, 1]")
    if np.any(~(T[I] == J[:, None]).any(axis=1)):
        raise Infeasible("a certificate triplet (i, j, l) has j not a target neighbour of i")
    if np.any(y[L] == y[I]):
        raise Infeasible("a certificate triplet (i, j, l) has l of i's class")
    if len(np.unique(np.stack([I, J, L], axis=1), axis=0)) != m:
        raise Infeasible("a triplet appears twice in the certificate")
    return I, J, L, lam


def _scatter(X, A, B, w):
    """``Σ_t w_t (x_{A_t} − x_{B_t})(x_{A_t} − x_{B_t})ᵀ``, by blocks of pairs."""
    out = np.zeros((X.shape[1], X.shape[1]))
    step = _block_rows(X.shape[1])
    for s in range(0, len(A), step):
        U = X[A[s : s + step]] - X[B[s : s + step]]
        out += (U.T * w[s : s + step]) @ U
    return out


def _bound(X, y, T, mu, cert, objective, g, c, range_rtol=None):
    """The lower bound that the certificate's dual point proves (module docstring), with
    ``ν`` the least over the clusters' blocks (one block for a single metric)."""
    n, k = T.shape
    I, J, L, lam = _dual_point(cert, n, y, T)
    if mu >= 1.0:
        raise Infeasible("mu = 1: no pull term to bound the hinge multipliers' matrix by")
    total = mu * float(lam.sum())
    pi, pj = np.repeat(np.arange(n), k), T.ravel()
    rtol = RANGE_RTOL if range_rtol is None else range_rtol
    nu = min(_block_nu(X, mu, (pi[g[pj] == h], pj[g[pj] == h]),
                       (I[g[J] == h], J[g[J] == h], lam[g[J] == h]),
                       (I[g[L] == h], L[g[L] == h], lam[g[L] == h]), rtol)
             for h in range(c))  # fmt: skip
    if nu >= 0:
        return total
    bound = total / (1.0 - nu)
    F = float(cert.get("F", np.nan))
    if np.isfinite(F):
        bound = max(bound, total + nu * max(F, objective))
    return bound


def _block_nu(X, mu, pull, plus, minus, rtol):
    """``λ_min`` of ``S_h = (1 − μ)P_h + μΣλ C_ij − μΣλ C_il`` (``plus``, ``minus``: the
    triplets whose target, impostor is of this block) relative to ``(1 − μ)P_h``, on the
    range of ``P_h`` (:class:`Infeasible` when an impostor difference leaves it)."""
    P = _scatter(X, *pull, np.ones(len(pull[0])))
    w, V = np.linalg.eigh(0.5 * (P + P.T))
    keep = w > RANGE_RTOL * max(float(w[-1]), 1e-300) if len(w) and w[-1] > 0 else w > np.inf
    U = X[minus[0]] - X[minus[1]]
    off = np.sqrt(((U @ V[:, ~keep]) ** 2).sum(axis=1))
    if len(U) and np.any(off > rtol * np.sqrt((U**2).sum(axis=1))):
        raise Infeasible("an impostor difference with a multiplier leaves the pull range")
    if not keep.any():
        return np.inf  # no pull, no multiplier: S_h = 0
    Xw = X @ (V[:, keep] / np.sqrt(w[keep]))  # the pull term's whitened coordinates
    S0 = (1 - mu) * _scatter(Xw, *pull, np.ones(len(pull[0])))
    S = S0 + mu * (_scatter(Xw, *plus) - _scatter(Xw, *minus))
    w0, V0 = np.linalg.eigh(0.5 * (S0 + S0.T))
    W0 = V0 / np.sqrt(w0)
    return float(np.linalg.eigvalsh(0.5 * (W0.T @ (S + S.T) @ W0))[0])


KINDS = {"lmnn": check_lmnn, "lmnn_multi": check_multi, "lmnn_kernel": check_kernel}

__all__ = ["KINDS", "check_kernel", "check_lmnn", "check_multi"]
