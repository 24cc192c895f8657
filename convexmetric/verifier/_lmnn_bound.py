r"""The lower bound on eq. (14)'s optimum that a certificate's dual point proves, with its
rounding accounted for (the derivation is :mod:`convexmetric.verifier.lmnn`'s).

For each block ``h`` (one per metric) the bound needs the least ``κ ≥ 1`` with

.. math::

    H_h(κ) = κ(1 − μ)P_h + μ\textstyle\sum_t λ_t (C_{ij}[g(j)=h] − C_{il}[g(l)=h]) ⪰ 0

on the whole space (``ν = 1 − κ``), ``P_h`` the pull matrix of the block's target pairs,
``C_ab = (x_a − x_b)(x_a − x_b)ᵀ`` over the user's points. No direction is set aside
as a "null space" by a tolerance: a direction in which the pull is small but not 0 is
one that a metric of large norm may exploit, and it weakens the bound as it should.
Only exact structure is used: a coordinate in which no target pair of the block differs
(``x_a − x_b`` is exactly 0 there, tested exactly) carries no pull, and ``H_h`` is PSD
there only if no impostor difference with a multiplier is nonzero in it — else the dual
point proves nothing and the bound is the trivial 0. A block with no impostor of its own
carrying a multiplier needs nothing: ``H_h(1)`` is then a sum of Gram matrices with
weights ``≥ 0``, PSD whatever its pull (a k-means cluster with fewer target pairs than
varying coordinates).

Where the pull is singular on those coordinates, one more exact structure is used:
columns whose differences are exactly proportional over every target pair of the block
(a duplicated feature; pixels that only one point of the block lights, each pair's
differences there ``±c`` for one vector ``c``). With ``u_q = (c_q/c_p)u_p`` for every
pair, ``v = e_q − (c_q/c_p)e_p`` is an exact null vector of ``P_h``; if every impostor
difference with a multiplier satisfies the same relation exactly (tested by error-free
products: Dekker's splitting), ``H_h(κ)v = 0`` and ``H_h(κ) ⪰ 0`` iff its submatrix
without row and column ``q`` is — so ``q`` is dropped, exactly. A pull still singular
after that proves nothing (bound 0).

On the other coordinates the pull is whitened by any nonsingular ``W`` from the
computed ``P_h`` (``WᵀP̂_hW ≈ I``), the whitened differences ``z = ũW`` (``ũ = fl(x_a −
x_b)``, exact to ``u`` componentwise) are scattered in float64 with a rigorous error
bound (:class:`._rigor.Scatter`; ``‖z − z*‖ ≤ γ_{d+2}‖ũ‖‖W‖_F``), ``κ`` is estimated
from the generalised eigenvalue problem and raised by a small factor until
:func:`._rigor.certainly_psd` proves ``WᵀH_h(κ)W ⪰ 0`` (``W`` nonsingular, so
``H_h(κ) ⪰ 0``). The bound ``max(μΣλ/κ, μΣλ − (κ − 1)F)`` is then evaluated rounding
downwards, ``F`` an upper bound on ``f*``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from ._rigor import BLOCK, SAFETY, UNIT, Scatter, certainly_psd, gamma, sum_lower

#: a pull matrix with eigenvalues below this share of the largest is looked at for exact
#: structure (proportional columns) before it is whitened; a share, not a tolerance: the
#: proof's own test decides, this only chooses when to look
SINGULAR = 1e-12
#: relative raises of the estimated ``κ`` tried, in order, until the PSD test succeeds
#: (each costs one Cholesky factorisation of the block's size; the first that passes
#: loses that share of the bound's hinge part, the last ones only on ill-conditioned data)
RAISES = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)


class Infeasible(Exception):
    """The fitted point or the certificate's dual point is outside its domain."""


def dual_point(cert, n, y, T):
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
    if not np.issubdtype(lam.dtype, np.floating):
        raise Infeasible("the certificate's multipliers lam are not floats")
    lam = lam.astype(np.float64)
    if not np.all((lam >= 0) & (lam <= 1)):  # (NaN fails too)
        raise Infeasible("multipliers outside their box [0, 1]")
    if np.any(~(T[I] == J[:, None]).any(axis=1)) or np.any(J == I):
        raise Infeasible("a certificate triplet (i, j, l) has j not a target neighbour of i")
    if np.any(y[L] == y[I]):
        raise Infeasible("a certificate triplet (i, j, l) has l of i's class")
    if len(np.unique(np.stack([I, J, L], axis=1), axis=0)) != m:
        raise Infeasible("a triplet appears twice in the certificate")
    return I, J, L, lam


def bound(X, y, T, mu, cert, f_upper, g, c):
    """The rigorous lower bound of the certificate's dual point (module docstring);
    ``f_upper ≥ f*`` (the fitted map's objective, rounded up); ``g``: each point's block
    of ``c``. :class:`Infeasible` for a dual point outside its domain."""
    n, k = T.shape
    I, J, L, lam = dual_point(cert, n, y, T)
    if mu >= 1.0:
        raise Infeasible("mu = 1: no pull term to bound the hinge multipliers' matrix by")
    total = float(mu) * sum_lower(lam.sum(), len(lam)) * (1 - 2 * UNIT)
    if total <= 0:
        return 0.0
    pi, pj = np.repeat(np.arange(n), k), T.ravel()
    real = pi != pj  # a padded slot is no target pair
    pi, pj = pi[real], pj[real]
    kappa = 1.0
    for h in range(c):
        pull = (pi[g[pj] == h], pj[g[pj] == h])
        plus = (I[g[J] == h], J[g[J] == h], lam[g[J] == h])
        minus = (I[g[L] == h], L[g[L] == h], lam[g[L] == h])
        kappa = max(kappa, block_kappa(X, mu, pull, plus, minus))
        if not np.isfinite(kappa):
            return 0.0  # nothing better than f ≥ 0 is proved
    F = max(_finite(cert.get("F")), f_upper)
    scaled = total / kappa * (1 - 2 * UNIT)
    trace = total - (kappa - 1.0) * F * (1 + 4 * UNIT) - 4 * UNIT * total
    return max(scaled, trace, 0.0) * (1 - 4 * UNIT)


def _finite(value):
    """A certificate's scalar as a float, 0 when absent or not a finite number."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 0.0
    return value if np.isfinite(value) else 0.0


def _pairs(n, *terms):
    """The distinct pairs ``(a, b)`` of ``(A, B, w)`` terms with their summed weights and
    a bound on each sum's rounding: ``(a, b, w, ω)``."""
    A = np.concatenate([np.asarray(t[0], np.int64) for t in terms])
    B = np.concatenate([np.asarray(t[1], np.int64) for t in terms])
    w = np.concatenate([np.asarray(t[2], np.float64) for t in terms])
    keys, inv = np.unique(A * n + B, return_inverse=True)
    inv = inv.ravel()
    total = np.bincount(inv, w, len(keys))
    size = np.bincount(inv, minlength=len(keys))
    absolute = np.bincount(inv, np.abs(w), len(keys))
    omega = gamma(int(size.max(initial=1)) + 1) * absolute * SAFETY
    return keys // n, keys % n, total, omega


def _varying(X, a, b):
    """The coordinates in which some difference ``x_a − x_b`` is nonzero (exactly)."""
    out = np.zeros(X.shape[1], bool)
    for s in range(0, len(a), BLOCK):
        U = X[a[s : s + BLOCK]] - X[b[s : s + BLOCK]]
        out |= (U != 0).any(axis=0)
    return out


def block_kappa(X, mu, pull, plus, minus):
    """The least ``κ ≥ 1`` proved to make ``H_h(κ) ⪰ 0`` (module docstring), ``inf``
    when none is; ``pull``: the block's target pairs; ``plus``, ``minus``: the
    certificate's triplets whose target, impostor is of this block."""
    n = len(X)
    keep = lambda t: t[2] > 0  # noqa: E731 (only multipliers > 0 enter S(λ))
    plus = tuple(a[keep(plus)] for a in plus)
    minus = tuple(a[keep(minus)] for a in minus)
    if len(minus[0]) == 0:
        return 1.0  # H_h(1) a sum of Gram matrices with weights ≥ 0: PSD, exactly
    pa, pb, count, _ = _pairs(n, (*pull, np.ones(len(pull[0]))))
    if len(pa) == 0:
        return np.inf
    active = _varying(X, pa, pb)
    if (_varying(X, minus[0], minus[1]) & ~active).any():
        return np.inf  # an impostor direction that no target pair of the block spans
    if not active.any():
        return 1.0  # every difference is exactly 0: H_h(κ) = 0, PSD
    w, V = _pull_spectrum(X[:, active], pa, pb, count)
    if not (np.isfinite(w).all() and w[0] > SINGULAR * w[-1]):
        kept = _proportional(X, np.flatnonzero(active), (pa, pb), (minus[0], minus[1]))
        if kept is None:
            return np.inf
        active = np.zeros(X.shape[1], bool)
        active[kept] = True
        w, V = _pull_spectrum(X[:, active], pa, pb, count)
    if not (np.isfinite(w).all() and w[0] > 0):
        return np.inf  # the pull is singular on the varying coordinates
    Xa = X[:, active]
    W = V / np.sqrt(w)
    shrink = gamma(Xa.shape[1] + 2) * float(np.sqrt((W * W).sum())) * SAFETY
    H0 = _whitened(Xa, W, pa, pb, (1 - mu) * count, gamma(3) * (1 - mu) * count, shrink)
    ca, cb, cw, comega = _pairs(n, plus, (minus[0], minus[1], -minus[2]))
    G = _whitened(Xa, W, ca, cb, mu * cw, mu * comega + gamma(2) * mu * np.abs(cw), shrink)
    return _least_kappa(H0, G)


def _pull_spectrum(Xa, a, b, count):
    """Eigenvalues and vectors of the pull ``Σ count·(x_a − x_b)(x_a − x_b)ᵀ`` on ``Xa``."""
    P = np.zeros((Xa.shape[1],) * 2)
    for s in range(0, len(a), BLOCK):
        U = Xa[a[s : s + BLOCK]] - Xa[b[s : s + BLOCK]]
        P += (U.T * count[s : s + BLOCK]) @ U
    return np.linalg.eigh(0.5 * (P + P.T))


def _proportional(X, cols, pull, others):
    """The coordinates ``cols`` less those whose differences are exactly proportional to
    an earlier kept one's over every pair of ``pull`` and of ``others`` (module
    docstring); ``None`` when ``others`` break a relation the pull pairs hold."""
    pa, pb = pull
    U = X[np.ix_(pa, cols)] - X[np.ix_(pb, cols)]
    first = np.argmax(U != 0, axis=0)  # each column's first nonzero row (active: one exists)
    ref = U[first, np.arange(len(cols))]
    dropped = np.zeros(len(cols), bool)
    groups = {}
    for q in range(len(cols)):
        key = (int(first[q]), np.round(U[:, q] / ref[q], 12).tobytes())
        groups.setdefault(key, []).append(q)
    Uo = X[np.ix_(others[0], cols)] - X[np.ix_(others[1], cols)]
    for members in groups.values():
        p = members[0]
        for q in members[1:]:
            if not _same_products(U[:, q], ref[p], U[:, p], ref[q]):
                continue  # proportional to twelve digits only: not an exact relation
            if not _same_products(Uo[:, q], ref[p], Uo[:, p], ref[q]):
                return None  # an impostor leaves the exact null direction
            dropped[q] = True
    return cols[~dropped]


def _same_products(a, s, b, t):
    """Whether ``a·s == b·t`` exactly, elementwise, for float64 ``a, b`` and scalars
    ``s, t`` (Dekker's error-free products: equal products have equal rounded parts and
    equal errors); ``False`` where that cannot be decided (overflow, underflow)."""
    hi1, lo1 = _two_product(a, s)
    hi2, lo2 = _two_product(b, t)
    big = np.abs(np.r_[hi1, hi2])
    if not np.isfinite(big).all() or np.any((big > 0) & (big < 2.0**-900)):
        return False
    return bool(np.all(hi1 == hi2) and np.all(lo1 == lo2))


def _two_product(a, s):
    """``(fl(a·s), a·s − fl(a·s))``, the second exact (Dekker 1971, Veltkamp's split)."""
    hi = a * s
    a1, a2 = _split(np.asarray(a, dtype=np.float64))
    s1, s2 = _split(np.float64(s))
    return hi, ((a1 * s1 - hi) + a1 * s2 + a2 * s1) + a2 * s2


def _split(a):
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _whitened(Xa, W, a, b, weights, omega, shrink):
    """:class:`._rigor.Scatter` of the whitened differences ``fl(x_a − x_b)W``."""
    out = Scatter(W.shape[1])
    for s in range(0, len(a), BLOCK):
        U = Xa[a[s : s + BLOCK]] - Xa[b[s : s + BLOCK]]
        eta = shrink * np.sqrt(np.einsum("ij,ij->i", U, U))
        out.add(U @ W, weights[s : s + BLOCK], eta, omega[s : s + BLOCK])
    return out


def _least_kappa(H0, G):
    """The first raise of the estimated ``κ`` that :func:`certainly_psd` proves."""
    try:
        least = float(
            eigh(G.S, 0.5 * (H0.S + H0.S.T), eigvals_only=True, subset_by_index=[0, 0])[0]
        )
    except (np.linalg.LinAlgError, ValueError):
        return np.inf
    estimate = max(1.0, -least)
    e0, eG = H0.error(), G.error()
    norms = float(np.sqrt((H0.S**2).sum())), float(np.sqrt((G.S**2).sum()))
    for raise_ in RAISES:
        kappa = estimate * (1.0 + raise_) + raise_
        H = kappa * H0.S + G.S
        err = kappa * e0 * (1 + UNIT) + eG + 3 * UNIT * (kappa * norms[0] + norms[1])
        if certainly_psd(H, err * SAFETY):
            return kappa
    return np.inf
