r"""An ascent on the trace bound of a semidefinite dual: multipliers that repair ``ν``.

The certificates of LMNN (one metric or one per cluster) bound the optimum, for every
``x ∈ [0, 1]^K`` of the multipliers left free, by the *trace bound*

.. math::

    B(x) = c + μ\textstyle\sum_t x_t + F \min\bigl(0, \min_g λ_{\min}(S_g(x)) / s\bigr),

``S_g(x) = S_g(0) + μ Σ_t x_t (a_t a_tᵀ [t \text{ adds to } g] − b_t b_tᵀ [t \text{
subtracts from } g])`` the blocks of the dual matrix in coordinates where the pull term
is ``s·I``, ``F`` an attained objective value and ``c`` the fixed multipliers' part.
``B`` is concave (``λ_min`` of an affine matrix function is), and ``∂λ_min/∂x_t =
μ((a_t·u)² − (b_t·u)²)`` for the eigenvector ``u``. Near convergence the stages'
multipliers have the right sum and ``B`` loses only through ``ν``, carried by a cluster
of nearly equal negative eigenvalues: a step along one eigenvector's supergradient only
makes the next one the smallest. :func:`ascend` steps along the average of the
supergradients over the cluster (eigenvalues within half of ``ν``; an ε-supergradient),
then, if that gains nothing, along the smallest eigenvector's, projected on the box,
with a doubling step. :func:`smooth_ascend` goes on from there where those steps stall:
L-BFGS-B on a smooth concave minorant of ``B`` (the soft minimum of all the blocks'
eigenvalues), with the smoothing narrowed over a few rounds. Both only propose
multipliers; the caller's bound certifies them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, minimize


def trace_bound(total, F, low, scale=1.0):
    """The trace bound ``total + F·min(0, ν)/s`` (module docstring) with ``total = c + μΣx``
    and ``ν`` the blocks' lowest eigenvalue ``low`` (or a minorant of ``min(0, λ_min)``).

    The one formula of LMNN's certificates and their ascents (the verifier keeps its own,
    with rounding bounds).

    >>> trace_bound(3.0, 10.0, -0.2, scale=2.0)
    2.0
    """
    return total + F * min(low, 0.0) / scale


@dataclass
class Block:
    """One block of the dual matrix: ``S`` at the starting multipliers (the free ones
    included), and the free terms' rows (single precision) with their multipliers'
    indices: ``A[k]`` adds ``μ x[ia[k]] A[k]A[k]ᵀ``, ``B[k]`` subtracts ``μ x[ib[k]] B[k]B[k]ᵀ``."""

    S: np.ndarray
    A: np.ndarray
    ia: np.ndarray
    B: np.ndarray
    ib: np.ndarray

    def scatter(self, v, mu, rows=None):
        """``μ Σ v_t (a_t a_tᵀ − b_t b_tᵀ)`` over this block's rows (``rows``: a mask over
        the multipliers, only those rows)."""
        A, ia, B, ib = self.A, self.ia, self.B, self.ib
        if rows is not None:
            ka, kb = rows[ia], rows[ib]
            A, ia, B, ib = A[ka], ia[ka], B[kb], ib[kb]
        va, vb = v[ia].astype(np.float32), v[ib].astype(np.float32)
        return mu * ((A.T * va) @ A - (B.T * vb) @ B).astype(float)


def ascend(blocks, x, mu, F, const, scale=1.0, iterations=40, tol=None):
    """Raise the trace bound ``B(x)`` from ``x`` (module docstring); returns a new ``x``.

    ``blocks``: :class:`Block` (their ``S`` at ``x``; not modified); ``const``: ``c``;
    ``scale``: ``s``. Stops after ``iterations`` steps, when no step gains, or once
    ``F − B ≤ tol·|F|``.
    """
    x = np.array(x, dtype=float)
    S = [blk.S for blk in blocks]

    def value(S, x):
        low = min((float(np.linalg.eigvalsh(Sg)[0]) for Sg in S), default=0.0)
        return trace_bound(const + mu * float(x.sum()), F, low / scale)

    b, step = value(S, x), 1e-3
    for _ in range(iterations):
        if tol is not None and F - b <= tol * abs(F):
            break
        eig = [np.linalg.eigh(Sg) for Sg in S]
        nu = min(float(w[0]) for w, _ in eig)
        moved = None
        for share in (0.5, 0.0):  # the cluster's average; then the smallest eigenvector
            g = np.full(len(x), mu)
            if nu < 0:
                g += (F * mu / scale) * _cluster_curvature(blocks, eig, share * nu, len(x))
            moved = _step(blocks, S, x, g, b, step, mu, value)
            if moved is not None:
                break
        if moved is None:
            break
        x, S, b, step = moved
    return x


def _cluster_curvature(blocks, eig, level, size):
    """``mean_u ((a_t·u)² − (b_t·u)²)`` per multiplier over the eigenvectors ``u`` of every
    block with eigenvalue at most ``level``."""
    total, count = np.zeros(size), 0
    for blk, (w, V) in zip(blocks, eig):
        U = V[:, w <= level].astype(np.float32)
        if U.shape[1] == 0:
            continue
        total += np.bincount(blk.ia, ((blk.A @ U) ** 2).sum(axis=1), size)
        total -= np.bincount(blk.ib, ((blk.B @ U) ** 2).sum(axis=1), size)
        count += U.shape[1]
    return total / max(count, 1)


def _step(blocks, S, x, g, b, step, mu, value):
    """The projected step along ``g`` with the best ``value``, by doubling from a quarter of
    the last step: ``(x, S, value, step)``, or ``None`` when no step gains. ``S(x + tg)``
    is ``S + t·scatter(g)`` (one product per block for the ray) corrected on the rows the
    box clips."""
    g = np.where(((x <= 0.0) & (g < 0)) | ((x >= 1.0) & (g > 0)), 0.0, g)
    top = float(np.abs(g).max())
    if top == 0.0:
        return None
    g = g / top
    D = [blk.scatter(g, mu) for blk in blocks]
    best, t = None, step / 4
    while 1e-9 < t <= 4.0:  # (t ≥ 1 moves every free multiplier to a bound)
        y = np.clip(x + t * g, 0.0, 1.0)
        fix = y - (x + t * g)
        clipped = fix != 0
        S_t = [Sg + t * Dg + blk.scatter(fix, mu, clipped) for Sg, Dg, blk in zip(S, D, blocks)]
        v = value(S_t, y)
        if v > (b if best is None else best[2]):
            best, t = (y, S_t, v, t), 2 * t
        elif best is not None:
            break
        else:
            t /= 8  # no gain at the first try: a shorter step
    return best


#: rounds of :func:`smooth_ascend` (``ε`` shrinks ×0.3 per round) and L-BFGS-B steps in each
SOFT_ROUNDS, SOFT_ITERATIONS = 4, 30

#: the first rounds of :func:`smooth_ascend` work in each block's eigen-directions below
#: ``SUBSPACE·s`` at the round's first point (:meth:`_SoftModel.restricted`). Near the
#: optimum those are a cluster about 0 (complementary slackness: ``S_g`` vanishes on the
#: range of ``M^g``), well apart from the rest: digits' ten blocks (47–53 directions)
#: keep 6–17, so a model evaluation is several times cheaper and the ascents reach the
#: same bound sooner. With 0.2·s a first proposal can fall far (to a relative gap of 2.6,
#: from 3e-3) where the directions left out turn negative (measurements:
#: ``benchmarks/TUNING.md``)
SUBSPACE = 0.4


def smooth_ascend(blocks, x, mu, F, const, scale=1.0, tol=None, start=None, window=None):
    r"""Raise the trace bound by L-BFGS-B on a smooth concave minorant; returns a new ``x``.

    :func:`ascend` follows one supergradient at a time, and stalls where the smallest
    eigenvalues of several blocks must rise together. Here ``min(0, λ_min)`` over all
    blocks is replaced by the soft minimum ``m_ε = −ε log(1 + Σ_{g,i} e^{−λ_{g,i}/ε})``,
    which is concave in ``x`` (a spectral function of an affine matrix function) and
    below ``min(0, λ_min)`` (the sum is at least each of its terms), so

    .. math::

        B_ε(x) = c + μ\textstyle\sum_t x_t + F m_ε(S(x))/s \le B(x)

    for ``F ≥ 0``; its gradient is ``μ + (Fμ/s) Σ p_{g,i}((a_t·u_{g,i})² − (b_t·u_{g,i})²)``
    with the softmax weights ``p``. :data:`SOFT_ROUNDS` maximisations over the box,
    :data:`SOFT_ITERATIONS` L-BFGS-B steps each, with ``ε`` from
    ``0.3·max(|λ_min|, (F − B)s/F)`` (the eigenvalue that would carry the whole gap)
    down by ×0.3 per round; after each round the exact ``B`` decides (the best ``x`` is
    kept), and the ascent stops once ``F − B ≤ tol·|F|``. The rounds run twice: first on
    the model restricted to the directions below :data:`SUBSPACE`·``s`` at each round's
    first point (the Ritz values on a subspace lie above the eigenvalues, so the
    restriction only proposes; a proposal that loses is cut back along its segment,
    :func:`_back`), then, if the gap is still above ``tol``, on the whole matrices.
    Arguments as in :func:`ascend` (the blocks' ``S`` at ``x``);
    ``start``: the first point (default ``x``; :func:`ascend`'s result, say);
    ``window``: return ``start`` as it is unless ``F − B(start) ≤ window·tol·|F|`` (a
    bound far from ``F`` is the stages' to close, not the certificate's).
    """
    x0 = np.array(x, dtype=float)
    if F <= 0 or len(x0) == 0:
        return x0
    model = _SoftModel.of(blocks, x0, mu, F, const, scale)
    best_x = x0 if start is None else np.clip(np.asarray(start, dtype=float), 0.0, 1.0)
    best = model.exact(best_x)
    if tol is not None and window is not None and F - best > window * tol * abs(F):
        return best_x
    for level in (SUBSPACE * scale, None):
        best_x, best = _rounds(model, best_x, best, tol, level)
    return best_x


def _rounds(model, best_x, best, tol, level):
    """:data:`SOFT_ROUNDS` rounds from ``best_x`` (``B`` = ``best``) on the model restricted
    below ``level`` (``None``: the whole model); the best point and its ``B``."""
    F, scale = model.F, model.scale
    eps = 0.3 * max(abs(model.lowest(best_x)), (F - best) * scale / F)
    for _ in range(SOFT_ROUNDS):
        if eps == 0.0 or (tol is not None and F - best <= tol * abs(F)):
            break
        m = model if level is None else model.restricted(best_x, level)
        x, value = _soft_round(m, model, best_x, eps)
        if value <= best and m is not None and m is not model:
            x, value = _back(model, best_x, x, best)
        if value > best:
            best_x, best = x, value
        eps *= 0.3
    return best_x, best


def _back(model, x0, x1, b0, tries=6):
    """The first of ``x0 + 2⁻ᵏ(x1 − x0)`` (k = 1, 2, …) where ``B`` exceeds ``b0 = B(x0)``,
    with ``B`` there; else ``(x1, −∞)``. ``B`` is concave, and a restricted round's
    direction ascends at ``x0`` (the subspace holds the lowest eigenvectors there): its
    full step can overshoot where the directions left out fall."""
    for k in range(1, tries + 1):
        x = x0 + (x1 - x0) / 2**k
        value = model.exact(x)
        if value > b0:
            return x, value
    return x1, -np.inf


def _soft_round(m, model, x, eps):
    """L-BFGS-B on ``m``'s minorant from ``x``: the point and ``model``'s exact ``B`` there."""
    if m is None:
        return x, -np.inf
    box = Bounds(0.0, 1.0)  # (not a list of pairs, which scipy converts at every round; a
    # fresh object: scipy broadcasts the bounds it is given to x's length in place)
    res = minimize(
        m.negative,
        x,
        args=(eps,),
        jac=True,
        method="L-BFGS-B",
        bounds=box,
        options={"maxiter": SOFT_ITERATIONS, "maxcor": 10},
    )
    return res.x, model.exact(res.x)


class _SoftModel:
    """The matrices ``S_g(x) = S0_g + μ C_gᵀ diag(sign_g·(x − x0)[idx_g]) C_g`` of
    :func:`smooth_ascend`: one stacked product per block."""

    def __init__(self, S0, C, idx, sign, x0, coefficients):
        self.S0, self.C, self.idx, self.sign, self.x0 = S0, C, idx, sign, x0
        self.mu, self.F, self.const, self.scale = coefficients

    @classmethod
    def of(cls, blocks, x0, mu, F, const, scale, dtype=np.float32):
        """The model of :class:`Block` s (their ``S`` at ``x0``); ``dtype``: of its stacked
        products (single precision, as the rows are: the model only proposes, the
        caller's bound is exact; double for a gradient checked by finite differences)."""
        C = [np.vstack([blk.A, blk.B]).astype(dtype) for blk in blocks]
        idx = [np.concatenate([blk.ia, blk.ib]) for blk in blocks]
        sign = [np.r_[np.ones(len(blk.ia)), -np.ones(len(blk.ib))] for blk in blocks]
        return cls([blk.S for blk in blocks], C, idx, sign, x0, (mu, F, const, scale))

    def restricted(self, x, level):
        """The model of ``QᵀS_g Q`` at points near ``x``, ``Q`` the eigenvectors of
        ``S_g(x)`` below ``level`` (blocks without any left out), or ``None``."""
        parts = []
        for S, C, idx, sign in zip(self.matrices(x), self.C, self.idx, self.sign):
            S = 0.5 * (S + S.T)  # (single-precision scatters are symmetric to rounding)
            w, V = np.linalg.eigh(S)
            Q = V[:, w < level]
            if Q.shape[1]:
                parts.append((Q.T @ S @ Q, C @ Q.astype(C.dtype), idx, sign))
        if not parts:
            return None
        coefficients = (self.mu, self.F, self.const, self.scale)
        return _SoftModel(*(list(p) for p in zip(*parts)), x, coefficients)

    def matrices(self, x):
        """``S_g(x)``: the stacked products in the model's precision (:meth:`of`)."""
        dv = x - self.x0
        out = []
        for S0, C, idx, sign in zip(self.S0, self.C, self.idx, self.sign):
            w = (sign * dv[idx]).astype(C.dtype)
            out.append(S0 + self.mu * ((C.T * w) @ C).astype(float))
        return out

    def lowest(self, x):
        return min(float(np.linalg.eigvalsh(S)[0]) for S in self.matrices(x))

    def exact(self, x):
        """The trace bound ``B(x)`` of the model's matrices."""
        total = self.const + self.mu * float(x.sum())
        return trace_bound(total, self.F, min(self.lowest(x), 0.0) / self.scale)

    def negative(self, x, eps):
        """``(−B_ε(x), −∇B_ε(x))``."""
        eig = [np.linalg.eigh(S) for S in self.matrices(x)]
        lo = min(0.0, min(float(w[0]) for w, _ in eig))
        e = [np.exp(-(w - lo) / eps) for w, _ in eig]
        total = np.exp(lo / eps) + sum(float(v.sum()) for v in e)  # the 1 of m_ε, shifted
        soft = lo - eps * np.log(total)
        curv = np.zeros(len(x))
        for (_w, V), v, C, idx, sign in zip(eig, e, self.C, self.idx, self.sign):
            p = v / total
            keep = p > 1e-10
            if keep.any():
                U = V[:, keep] * np.sqrt(p[keep])
                CU = C @ U.astype(C.dtype)
                curv += np.bincount(idx, sign * (CU * CU).sum(axis=1, dtype=float), len(x))
        value = trace_bound(self.const + self.mu * float(x.sum()), self.F, soft, self.scale)
        grad = self.mu + (self.F * self.mu / self.scale) * curv
        return -value, -grad
