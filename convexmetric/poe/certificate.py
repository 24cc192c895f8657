r"""Certified lower bounds for the full POE SDPs (LPOE, KPOE, MKPOE; Alg. 2–4).

**The dual.** Write comparison ``c`` as the linear form ``⟨W, B_c⟩ = d(i, j) − d(k, l)``
with ``B_cᵖ = Fᵖᵀ(E_ij − E_kl)Fᵖ`` in block ``p`` (``E_ij = (e_i − e_j)(e_i − e_j)ᵀ``)
and ``s = β/|C|``. Since ``s·max(0, z) = max_{0 ≤ λ ≤ s} λz``, the slack-free objective of
:mod:`convexmetric.problems.poe` is

.. math::

    f(W) = \max_{0 \le \lambda \le s}\ \sum_c \lambda_c
        + \sum_p \langle W^p, S^p(\lambda) \rangle, \qquad
    S^p(\lambda) = R^p + \sum_c \lambda_c B^p_c = R^p + F^{p\top} L(\lambda) F^p,

``L(λ) = Σ λ_c (E_ij − E_kl)`` the signed Laplacian of :meth:`.poe.POEOracle.laplacian`.
Minimising over ``Wᵖ ⪰ 0`` first gives the SDP dual (eq. (7) of McFee & Lanckriet after
eliminating the slack): ``max Σ λ_c`` over ``0 ≤ λ ≤ s`` with every ``Sᵖ(λ) ⪰ 0``. Strong
duality holds (``W = εI`` with large slacks is strictly feasible).

**A bound from any λ ∈ [0, s].** Multipliers read off a smoothed solve are only nearly
dual feasible. Let ``μ = min_p λ_min(Sᵖ, Rᵖ)`` (the smallest generalised eigenvalue,
``Rᵖ ≻ 0`` on the range that matters) and ``F`` any attained objective value. Two repairs:

* *trace*: an optimal ``W*`` has ``Σ tr(RᵖW*ᵖ) ≤ f* ≤ F`` (the hinge is ≥ 0), and
  ``⟨Wᵖ, Sᵖ⟩ ≥ μ tr(RᵖWᵖ)``, so ``f* ≥ Σλ + F·min(0, μ)``;
* *scaling* (as :func:`convexmetric.linalg.psd_scaling`): ``Sᵖ(θλ) = (1 − θ)Rᵖ +
  θSᵖ(λ) ⪰ 0`` for ``θ = 1/(1 − μ)`` (``μ < 0``; ``θ = 1`` otherwise), so
  ``θλ`` is dual feasible and ``f* ≥ θ Σλ``. Here ``R`` commutes with itself, so no
  bisection is needed: ``θ`` is exact.

Both are valid for *every* ``λ ∈ [0, s]``; the larger is returned.

**Multipliers at an arbitrary point** (:meth:`Certificate.crossover`). At a point that is
not a smoothed minimiser (App. B's subgradient result, say) the smoothed multipliers can
be far from optimal on the comparisons at the kink ``z ≈ 0``. Complementary slackness
asks ``λ_c = s`` for ``z_c > 0``, ``λ_c = 0`` for ``z_c < 0`` and ``Sᵖ(λ)Wᵖ = 0``; with
``Wᵖ = NᵖNᵖᵀ`` the last is linear in the kink multipliers,
``RᵖNᵖ + Σ_c λ_c Fᵖᵀ[(e_i − e_j)(Y_i − Y_j)ᵀ − (e_k − e_l)(Y_k − Y_l)ᵀ] = 0`` with
``Yᵖ = FᵖNᵖ``, and is fitted by bounded least squares on ``[0, s]`` (an LP/SDP
crossover). Whatever the fit, the bound above keeps it valid. At the smoothed
optimum ``W_σ`` the multipliers ``λ = s·clip(z/σ, 0, 1)`` satisfy the KKT conditions of
the smoothed problem, so ``S(λ) ⪰ 0`` and the gap is at most ``sσ/4`` per comparison
with ``0 < z < σ``: the bound is tight as ``σ → 0``.

A singular ``Rᵖ`` (a kernel block ``(K, K)``) is handled on the range of ``Rᵖ``: ``W``'s
component on the null space changes neither term when the rows of ``Fᵖ`` lie in the
range (true for kernel blocks); otherwise the bound is ``-inf`` (not certified).

**The certificate as data.** Every bound above is a function of the multipliers ``λ``
and of the attained value ``F`` alone (the data fix everything else), so the solvers
keep the pair behind their best bound (:class:`BestDual`) and report it as
``result.certificate``: ``{"kind": "poe", "form": "full" | "diagonal", "blocks": m,
"lam": λ, "radius": F}`` (documented in :mod:`convexmetric.verifier.poe`, which
recomputes the bound from it).
"""

from __future__ import annotations

import numpy as np

from ..linalg import whitening
from . import constants as const
from .oracle import POEOracle


class BestDual:
    """The multipliers ``λ`` and value ``F`` behind the best bound offered so far."""

    def __init__(self):
        self.bound, self.lam, self.radius = -np.inf, None, None

    def offer(self, bound, lam, radius):
        """Keep ``(λ, F)`` if ``bound`` beats the best so far; returns ``bound``."""
        if bound > self.bound:
            self.bound, self.lam, self.radius = float(bound), np.array(lam, float), float(radius)
        return bound

    def dual_point(self, form, blocks):
        """``result.certificate`` of :mod:`convexmetric.verifier.poe`, or ``None``."""
        if self.lam is None or not np.isfinite(self.bound):
            return None
        return {
            "kind": "poe",
            "form": form,
            "blocks": int(blocks),
            "lam": self.lam,
            "radius": self.radius,
        }


class Certificate:
    """The dual bound above for feature blocks ``[(F, R)]`` and comparisons ``C``.

    Whitens each block once (``F̂ = F T``, so ``R̂ = I``); :meth:`bound` then needs one
    ``r × r`` symmetric eigenvalue problem per block and multiplier vector. ``best``
    (:class:`BestDual`) keeps the multipliers of the best bound computed.
    """

    def __init__(self, blocks, oracle):
        self.oracle, self.feats, self.valid, self.T, self.Tinv = oracle, [], True, [], []
        self.best = BestDual()
        for F, R in blocks:
            T, null, Tinv = whitening(R)
            if null.shape[1] and np.abs(F @ null).max() > 1e-8 * max(np.abs(F).max(), 1e-300):
                self.valid = False  # W is free off the range of R: no trace bound
            self.feats.append(F @ T)
            self.T.append(T)
            self.Tinv.append(Tinv)

    def dual_matrices(self, lam):
        """``Ŝᵖ(λ) = I + F̂ᵖᵀ L(λ) F̂ᵖ`` for every block."""
        L = self.oracle.laplacian(lam)
        out = []
        for Fh in self.feats:
            S = Fh.T @ (L @ Fh)
            S = 0.5 * (S + S.T)
            S[np.diag_indices_from(S)] += 1.0
            out.append(S)
        return out

    def bound(self, lam, F, *, eigvecs=False):
        """``(lower bound, μ)``, and the eigenpairs ``[(w, V)]`` when ``eigvecs``.

        ``lam`` is clipped to ``[0, s]``; ``F`` is an attained objective value.
        """
        s = self.oracle.scale
        lam = np.clip(np.asarray(lam, dtype=float), 0.0, s)
        if not self.valid:
            return -np.inf, -np.inf, None
        pairs, mu = [], np.inf
        for S in self.dual_matrices(lam):
            if eigvecs:
                w, V = np.linalg.eigh(S)
                pairs.append((w, V))
            else:
                w = np.linalg.eigvalsh(S)
            mu = min(mu, float(w[0]))
        total = float(lam.sum())
        lb = total if mu >= 0 else max(total + F * mu, total / (1.0 - mu))
        self.best.offer(lb, lam, F)
        return lb, mu, pairs

    def best_bound(self, z, F, sigmas):
        """The best bound over the smoothed multipliers ``s·clip(z/σ, 0, 1)``, ``σ ∈ sigmas``
        (and the hard ones ``s·[z > 0]``)."""
        s, best = self.oracle.scale, -np.inf
        for sigma in sigmas:
            lam = s * (np.clip(z / sigma, 0.0, 1.0) if sigma > 0 else (z > 0))
            best = max(best, self.bound(lam, F)[0])
        return best

    def whiten(self, Ws):
        """``Ŵᵖ = T⁺WᵖT⁺ᵀ`` (the coordinates of :attr:`feats`)."""
        return [Ti @ W @ Ti.T for Ti, W in zip(self.Tinv, Ws)]

    def crossover(
        self, Whs, z, F, taus=const.FULL_CROSSOVER_TAUS, max_kinks=const.FULL_CROSSOVER_MAX_KINKS
    ):
        """The best bound over kink multipliers fitted to ``Sᵖ(λ)Wᵖ = 0`` (see above) for
        kink widths ``|z| < τ``, ``τ ∈ taus``; ``Whs`` in whitened coordinates."""
        from scipy.optimize import lsq_linear

        o, s, best = self.oracle, self.oracle.scale, -np.inf
        C = o.comparisons
        Ns = []
        if not self.valid:
            return best
        for W in Whs:
            w, V = np.linalg.eigh(0.5 * (W + W.T))
            keep = w > 1e-10 * max(float(w[-1]), 1e-300)
            Ns.append(V[:, keep] * np.sqrt(w[keep]))
        if sum(N.shape[1] for N in Ns) == 0:
            return best
        for tau in taus:
            pos, kink = z >= tau, np.abs(z) < tau
            lam = np.where(pos, s, 0.0)
            kidx = np.flatnonzero(kink)
            if 0 < len(kidx) <= max_kinks:
                Lap = o.laplacian(lam)
                cols, rhs = [], []
                for Fb, N in zip(self.feats, Ns):
                    if N.shape[1] == 0:
                        continue
                    Y = Fb @ N
                    rhs.append(-(N + Fb.T @ (Lap @ Y)).ravel())
                    i, j, k, l = C.i[kidx], C.j[kidx], C.k[kidx], C.l[kidx]
                    U, Vd = Fb[i] - Fb[j], Fb[k] - Fb[l]
                    Yu, Yv = Y[i] - Y[j], Y[k] - Y[l]
                    cols.append(
                        (U[:, :, None] * Yu[:, None, :] - Vd[:, :, None] * Yv[:, None, :]).reshape(
                            len(kidx), -1
                        )
                    )
                A = np.hstack(cols).T
                fit = lsq_linear(
                    A,
                    np.concatenate(rhs),
                    bounds=(0.0, s),
                    method="bvls" if len(kidx) <= const.BVLS_MAX_KINKS else "trf",
                )
                lam[kidx] = fit.x
            best = max(best, self.bound(lam, F)[0])
        return best


def certify(blocks, C, beta, Ws, oracle=None, sigmas=const.CERT_SIGMAS):
    """A certified lower bound for full ``Ws`` over ``blocks`` (the returned point of any
    full-matrix POE solver); ``-inf`` when it cannot be certified."""
    return certify_dual(blocks, C, beta, Ws, oracle, sigmas)[0]


def certify_dual(blocks, C, beta, Ws, oracle=None, sigmas=const.CERT_SIGMAS):
    """:func:`certify` and the :class:`BestDual` that proves the bound."""
    oracle = oracle or POEOracle(blocks, C, beta)
    z = oracle.hinge_arguments(Ws)
    F = oracle.objective(Ws)
    cert = Certificate(blocks, oracle)
    lb = max(cert.best_bound(z, F, sigmas), cert.crossover(cert.whiten(Ws), z, F))
    return lb, cert.best
