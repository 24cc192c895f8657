"""POE's oracle (McFee & Lanckriet, App. B): objective, subgradient and smoothing over blocks.

For the slack-free objective of :mod:`convexmetric.problems.poe`,

    f(W) = Σ_p tr(WᵖRᵖ) + β/|C| Σ_C h(1 + d(i, j) − d(k, l)),

a subgradient with respect to ``Wᵖ`` is ``Rᵖ + β/|C| · Fᵖᵀ (Σ_{C̄} E_ij − E_kl) Fᵖ``
over the violated set ``C̄``, ``E_ij = (e_i − e_j)(e_i − e_j)ᵀ`` (for kernels,
``K + K(Σ E_ij − E_kl)K``; the paper's App. B omits the factor β/|C|). The sum of
``E`` matrices is collected into **one** sparse signed graph Laplacian ``L = D − S``
per gradient, shared by all kernels, and each block costs one product ``Fᵀ(LF)``.
The diagonal case uses ``diag(FᵀLF) = Σ_rows (LF) ∘ F`` (no n³ product).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp

from ..optim.oracle import Oracle


class POEOracle(Oracle):
    """Objective, subgradient and smoothed gradient of POE over feature blocks.

    Distances are computed once per distinct (unordered) pair appearing in the
    comparisons. Iterates are lists with one entry per block: a matrix, or the
    diagonal vector when ``diagonal``.
    """

    def __init__(self, blocks, C, beta, *, diagonal=False):
        self.blocks, self.beta, self.diagonal = blocks, float(beta), diagonal
        self.comparisons = C
        self.n = blocks[0][0].shape[0]
        self.scale = self.beta / len(C)
        left, right = C.pair_keys()
        keys, inv = np.unique(np.concatenate([left, right]), return_inverse=True)
        m, nn = len(C), max(C.n_items, 1)
        self.left, self.right = inv[:m], inv[m:]
        self.pa, self.pb = keys // nn, keys % nn
        self.P = len(keys)
        self.reg_grad = [np.diag(R).copy() if diagonal else R for _, R in blocks]
        self.psd = not diagonal  #: the diagonal's points are vectors: no factor form

    @functools.cached_property
    def diffs(self):
        """Per block, the pair differences ``F_a − F_b`` (squared for ``diagonal``): built on
        first use (``P × r`` each; the factored solver never needs them)."""
        out = []
        for F, _ in self.blocks:
            U = F[self.pa] - F[self.pb]
            out.append(U * U if self.diagonal else U)
        return out

    def hinge_arguments(self, Ws):
        d = np.zeros(self.P)
        for W, U in zip(Ws, self.diffs):
            d += U @ W if self.diagonal else np.einsum("ij,ij->i", U @ W, U)
        return 1.0 + d[self.left] - d[self.right]

    def _reg(self, Ws):
        return float(sum(np.vdot(G, W) for G, W in zip(self.reg_grad, Ws)))

    def _laplacian_structure(self):
        """The fixed CSR pattern of ``D − S`` over all pairs; only its values change."""
        n, P = self.n, self.P
        rows = np.concatenate([self.pa, self.pb, np.arange(n)])
        cols = np.concatenate([self.pb, self.pa, np.arange(n)])
        pattern = sp.csr_matrix((np.arange(1, 2 * P + n + 1, dtype=float), (rows, cols)), (n, n))
        slot = pattern.data.astype(np.int64) - 1  # data position -> entry of (rows, cols)
        where = np.empty_like(slot)
        where[slot] = np.arange(len(slot))
        self._L = sp.csr_matrix((np.zeros(len(slot)), pattern.indices, pattern.indptr), (n, n))
        self._off_a, self._off_b, self._diag = where[:P], where[P : 2 * P], where[2 * P :]

    def laplacian(self, w):
        """``Σ_c w_c (E_{i_c j_c} − E_{k_c l_c})`` as one sparse matrix ``D − S``.

        The pair weights are collected with two ``bincount`` calls and written into a
        CSR matrix whose pattern (all pairs and the diagonal) is built once.
        """
        if not hasattr(self, "_L"):
            self._laplacian_structure()
        pw = np.bincount(self.left, w, self.P) - np.bincount(self.right, w, self.P)
        data = self._L.data
        data[self._off_a] = -pw
        data[self._off_b] = -pw
        data[self._diag] = np.bincount(self.pa, pw, self.n) + np.bincount(self.pb, pw, self.n)
        return self._L

    def _grad(self, w):
        L = self.laplacian(w)
        grads = []
        for (F, _), G in zip(self.blocks, self.reg_grad):
            LF = L @ F
            H = np.einsum("ij,ij->j", LF, F) if self.diagonal else F.T @ LF
            grads.append(G + self.scale * H)
        return grads

    def __call__(self, Ws, components=None):
        """``(f(W), subgradient)``; the hinge's subgradient is 0 at the kink."""
        z = self.hinge_arguments(Ws)
        act = z > 0
        f = self._reg(Ws) + self.scale * float(z[act].sum())
        return f, self._grad(act.astype(float))

    def smooth(self, Ws, sigma, grad=True, components=None):
        """Huber-smoothed objective and its gradient (see :mod:`convexmetric.optim.smoothing`);
        ``grad=False``: the value only."""
        z = self.hinge_arguments(Ws)
        hub = np.where(z >= sigma, z - sigma / 2, np.where(z > 0, z * z / (2 * sigma), 0.0))
        f = self._reg(Ws) + self.scale * float(hub.sum())
        return (f, self._grad(np.clip(z / sigma, 0.0, 1.0))) if grad else f

    def objective(self, Ws, components=None):
        """The exact objective."""
        z = self.hinge_arguments(Ws)
        return self._reg(Ws) + self.scale * float(np.maximum(z, 0.0).sum())

    def violated(self, Ws):
        """Boolean mask of comparisons with a positive hinge at ``Ws``."""
        return self.hinge_arguments(Ws) > 0
