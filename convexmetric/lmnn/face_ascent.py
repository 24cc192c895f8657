r"""Newton-type steps on the trace bound of a semidefinite dual, towards its optimal face.

The bound and the blocks are those of :mod:`.trace_ascent`: for multipliers ``x ∈ [0,
1]^K``, ``B(x) = c + μΣx + F min(0, min_g λ_min(S_g(x)) / s)``, with ``S_g(x)`` affine in
``x`` (one rank-one term per multiplier and side, :class:`.trace_ascent.Block`). At a dual
optimum complementary slackness makes every ``S_g`` singular on the range of the
primal's ``M^g``, so near the optimum each block has a cluster of eigenvalues about 0
(some negative: they are what ``B`` loses) well apart from the rest. The supergradient
steps of :func:`.trace_ascent.ascend` lift one eigenvalue of the cluster at a time, and
the smooth ascent takes many first-order steps to move them together.

:func:`face_ascend` moves the whole cluster at once. With ``Q_g`` the eigenvectors of
``S_g(x)`` below ``level·s`` (eigenvalues ``w_g``), the step ``d`` solves

.. math::

    \max_d\ μ\mathbf 1^\top d - \tfrac{ρ}{2}\|d\|^2
    \quad\text{s.t.}\quad Q_g^\top S_g(x + d) Q_g = η s I\ \ (\text{every } g),
    \qquad 0 \le x + d \le 1,

a linear equality in ``d`` (``Q_gᵀS_g(x)Q_g = diag(w_g)``, and each term adds
``±μ d_t (Q_gᵀa_t)(Q_gᵀa_t)ᵀ``): every eigenvalue of the cluster is set to the small
``η s`` to first order, and the multipliers' sum grows as far as the proximal weight
``ρ`` lets it. Its solution is ``d = (μ1 + Rᵀy)/ρ`` on the terms not held at a bound,
``y`` from the Gram system ``RRᵀy = ρr − μR1`` of the cluster's size
(``Σ_g m_g(m_g + 1)/2`` rows, factored once per point); terms whose step leaves the box
are held at the bound they cross, and the equality's residual is corrected on the others
with the same factor (a proposal needs no exact solve). A step that raises ``B`` (the
blocks' own eigenvalues, not the linear model) is taken and ``ρ`` halved; one that does
not is dropped and ``ρ`` quadrupled. Like the ascents of :mod:`.trace_ascent` it only
proposes multipliers: the caller's bound certifies them.

Setting the whole cluster to ``η s`` asks for more than complementary slackness does
(only ``rank M^g`` eigenvalues vanish at the optimum), so the steps stall short of the
dual optimum: on digits' multi-metric certificates 1–2e-4 (relative) below it, where they
certify a gap of 1e-3 in 5–8 steps, and a gap of 1e-4 is left to the ascents of
:mod:`.trace_ascent` (measurements: ``benchmarks/TUNING.md``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .trace_ascent import per_term, trace_bound

#: the cluster: eigenvalues below ``LEVEL·s``; its eigenvalues are set to ``ETA·s``.
#: Digits' ten blocks at the end of a multi-metric stage: 3–15 directions a block of 47–53
#: (measurements: ``benchmarks/TUNING.md``)
LEVEL, ETA = 0.01, 1e-4
#: the first proximal weight, relative to ``μ``: a free multiplier's own step is at most
#: ``1/RHO0`` beyond what the cluster asks of it
RHO0 = 64.0
#: the ascent ends after this many steps in a row that do not raise ``B`` (``ρ`` grown
#: ``4^STALL``-fold: the linear model no longer predicts the blocks)
STALL = 3
#: the ascent ends after two steps in a row that each gained less than ``1/SLOW`` of the
#: gap still to close (to ``tol``): the steps converge linearly, and that slowly they will
#: not get there (one such step alone can be followed by a long one)
SLOW = 8.0
#: rounds of holding terms at a bound and correcting the others, per step (then clipped)
BOX_ROUNDS = 3
#: a block's cluster holds at most its ``MAX_CLUSTER`` lowest directions, and the model
#: at most ``MAX_ROWS`` rows (one Cholesky factorisation of that size a point); past it
#: no step is tried
MAX_CLUSTER, MAX_ROWS = 24, 2000


def face_ascend(blocks, x, mu, F, const, scale=1.0, tol=None, iterations=30):
    """Raise the trace bound from ``x`` by the steps of the module docstring:
    ``(x, B(x))``, a new ``x`` and its bound (of the blocks' matrices, as
    :func:`.trace_ascent.ascend` computes them; the caller certifies).

    ``blocks``: :class:`.trace_ascent.Block` (their ``S`` at ``x``; not modified);
    ``const``: ``c``; ``scale``: ``s``. Stops after ``iterations`` steps (taken or not),
    once ``F − B ≤ tol·|F|``, after :data:`STALL` steps in a row that were not taken, or
    (with ``tol``) after two taken steps in a row that were slow (:data:`SLOW`).
    """
    x = np.clip(np.array(x, dtype=float), 0.0, 1.0)
    S = [np.array(blk.S, dtype=float) for blk in blocks]
    eig = spectra(S)
    b = value(eig, x, mu, F, const, scale)
    if F <= 0 or len(x) == 0:
        return x, b
    rho, model, missed, slow = RHO0 * mu, None, 0, 0
    for _ in range(iterations):
        if (tol is not None and F - b <= tol * abs(F)) or missed >= STALL:
            break
        model = _Cluster.of(blocks, eig, len(x), mu, scale) if model is None else model
        if model is None:
            break
        y = np.clip(x + model.step(x, rho), 0.0, 1.0)
        S_y = [Sg + blk.scatter(y - x, mu) for Sg, blk in zip(S, blocks)]
        eig_y = spectra(S_y)
        v = value(eig_y, y, mu, F, const, scale)
        if v <= b:
            rho, missed = 4 * rho, missed + 1
            continue
        slow = slow + 1 if tol is not None and v - b < (F - tol * abs(F) - v) / SLOW else 0
        x, S, eig, b, rho, model, missed = y, S_y, eig_y, v, rho / 2, None, 0
        if slow >= 2:
            break
    return x, b


def spectra(S):
    """``(w, V)`` of every block (symmetrised)."""
    return [np.linalg.eigh(0.5 * (Sg + Sg.T)) for Sg in S]


def value(eig, x, mu, F, const, scale):
    """``B(x)`` from the blocks' spectra ``eig`` (:func:`spectra`) at ``x``:
    ``c + μΣx + F min(0, λ_min)/s``."""
    low = min(0.0, min(float(w[0]) for w, _ in eig))
    return trace_bound(const + mu * float(x.sum()), F, low, scale)


class _Cluster:
    """The linear model ``R d = r`` of the clusters of ``S`` (module docstring), kept by
    block: block ``g``'s rows of ``R`` are ``C_gᵀ`` over the terms ``u_g`` it touches (each
    term touches the blocks of its two sides, so ``R`` is never formed), with the Gram
    matrix ``G = RRᵀ``."""

    def __init__(self, parts, r, size, mu):
        self.parts, self.r, self.size, self.mu = parts, r, size, mu
        self.G, self._factor = self._gram(), None

    @classmethod
    def of(cls, blocks, eig, size, mu, scale):
        """The model at the blocks' spectra ``eig``; ``None`` when no block has an
        eigenvalue below the level, or the clusters ask for more than :data:`MAX_ROWS`
        rows."""
        sizes = [min(int(np.sum(w < LEVEL * scale)), MAX_CLUSTER) for w, _ in eig]
        if not any(sizes) or sum(m * (m + 1) // 2 for m in sizes) > MAX_ROWS:
            return None
        parts, rhs, start = [], [], 0
        for blk, (w, V), m in zip(blocks, eig, sizes):
            if m == 0:
                continue
            u, C, p, q = _coefficients(blk, V[:, :m].astype(blk.A.dtype), mu)
            target = np.where(p == q, ETA * scale - w[:m][p], 0.0)
            rhs.append(target * np.where(p == q, 1.0, np.sqrt(2.0)))
            parts.append((u, C, slice(start, start + len(p))))
            start += len(p)
        return cls(parts, np.concatenate(rhs), size, mu)

    def _gram(self):
        """``RRᵀ``: block ``(g, h)`` from the terms that touch both."""
        G = np.zeros((len(self.r), len(self.r)))
        for a, (ua, Ca, ra) in enumerate(self.parts):
            G[ra, ra] = Ca.T @ Ca
            for ub, Cb, rb in self.parts[a + 1 :]:
                _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
                if len(ia):
                    G[ra, rb] = Ca[ia].T @ Cb[ib]
                    G[rb, ra] = G[ra, rb].T
        return G

    def times(self, v):
        """``R v``."""
        return np.concatenate([C.T @ v[u] for u, C, _ in self.parts])

    def transposed(self, y):
        """``Rᵀ y``."""
        out = np.zeros(self.size)
        for u, C, rows in self.parts:
            out[u] += C @ y[rows]
        return out

    def step(self, x, rho):
        """The step ``d`` at proximal weight ``rho`` (module docstring), inside the box:
        the terms that leave it are held at the bound they cross, and the equality's
        residual is corrected on the others with ``G`` itself (the Gram matrix of all the
        terms, factored once per model: a proposal needs no exact solve)."""
        mu, lo, hi = self.mu, -x, 1.0 - x
        y = self.solve(rho * self.r - mu * self.times(np.ones(len(x))))
        held = np.zeros(len(x), bool)
        d = (mu + self.transposed(y)) / rho
        for _ in range(BOX_ROUNDS):
            out = ~held & ((d < lo) | (d > hi))
            if not out.any():
                return d
            held |= out
            d = np.clip(d, lo, hi)
            y = y + rho * self.solve(self.r - self.times(d))
            d = np.where(held, d, (mu + self.transposed(y)) / rho)
        return np.clip(d, lo, hi)

    def solve(self, rhs):
        """``G⁻¹ rhs`` (least squares where ``G`` is singular)."""
        if self._factor is None:
            G = self.G.copy()
            G.flat[:: len(G) + 1] += 1e-12 * max(float(np.trace(G)), 1e-300)  # a ridge
            try:
                self._factor = sla.cho_factor(G, check_finite=False)
            except np.linalg.LinAlgError:
                self._factor = False
        if self._factor is False:
            return np.linalg.lstsq(self.G, rhs, rcond=None)[0]
        return sla.cho_solve(self._factor, rhs, check_finite=False)


def _coefficients(blk, Q, mu):
    """Block ``blk``'s rows of the model in the directions ``Q``: the terms ``u`` it touches
    (sorted), their coefficients ``C`` (``len(u) × m(m+1)/2``: ``±μ w_pq (Qᵀa)_p (Qᵀa)_q``
    over the upper triangle, ``w`` 1 on the diagonal and √2 off it, duplicates summed) and
    the triangle's indices ``p, q``."""
    p, q = np.triu_indices(Q.shape[1])
    weight = np.where(p == q, 1.0, np.sqrt(2.0)) * mu  # ‖·‖_F in the upper triangle
    terms, coef = [], []
    for M, idx, term_rows, sign in ((blk.A, blk.ia, blk.ra, 1.0), (blk.B, blk.ib, blk.rb, -1.0)):
        MQ = per_term(M @ Q, term_rows).astype(float)
        terms.append(idx)
        coef.append(sign * weight * (MQ[:, p] * MQ[:, q]))
    terms, coef = np.concatenate(terms), np.concatenate(coef)
    if len(terms) == 0:  # (a block that no free term touches: its rows stay zero)
        return terms, coef, p, q
    order = np.argsort(terms, kind="stable")
    terms, coef = terms[order], coef[order]
    first = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
    return terms[first], np.add.reduceat(coef, first, axis=0), p, q
