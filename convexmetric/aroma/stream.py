"""Fast stream engines for d-AROMA, f-AROMA and OASIS (same iterates as the reference steps).

An engine owns the state (``W`` and its confidence) and runs a block of rounds given
the queries ``Q`` (T×m) and the differences ``D = P⁺ − P⁻`` (T×n), dense or CSR.

* **d-AROMA and OASIS on sparse inputs** touch only the ``k_q × k_p`` block of ``W``
  (and ``Σ``) addressed by the non-zeros of ``q`` and ``p``: flat indices
  ``i·n + j`` gathered with ``take`` and written back, so a round costs
  O(k_q·k_p), not O(mn).
* **f-AROMA** is O(m² + n² + mn) per update by nature (eqs. 12–14 are rank-one updates
  of dense matrices). The updates are in-place BLAS calls: ``dger`` for ``W`` and
  ``dsyr`` for ``Λ`` and ``Ω`` (symmetric, so only the upper triangle is stored and
  updated; ``dsymv`` reads it). No inverse is ever formed.

>>> import numpy as np
>>> eng = DiagonalEngine(2, 2, r=1.0)
>>> margins = eng.run(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))
>>> eng.W
array([[0. , 0.5],
       [0. , 0. ]])
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from .._threads import one_blas_thread

__all__ = ["DiagonalEngine", "FactoredEngine", "OasisEngine", "as_rows"]


def as_rows(Q, D):
    """Both CSR (canonical, float64) when both are sparse, else both dense float64."""
    if sp.issparse(Q) and sp.issparse(D):
        Q, D = sp.csr_matrix(Q, dtype=float), sp.csr_matrix(D, dtype=float)
        for M in (Q, D):
            M.sum_duplicates()
            M.eliminate_zeros()
        return Q, D, True
    Q = Q.toarray() if sp.issparse(Q) else np.asarray(Q, dtype=float)
    D = D.toarray() if sp.issparse(D) else np.asarray(D, dtype=float)
    return Q, D, False


def _csr_parts(M, scale=1):
    return M.indices.astype(np.intp) * scale, M.data, M.indptr.tolist()


class _Engine:
    def __init__(self, m, n, mistake_driven=False):
        self.m, self.n = int(m), int(n)
        self.mistake_driven = bool(mistake_driven)
        self.updates = 0

    def run(self, Q, D):
        """Run one round per row of ``Q`` and ``D``; return the margins before each update."""
        Q, D, sparse = as_rows(Q, D)
        return self._run_sparse(Q, D) if sparse else self._run_dense(Q, D)

    def _skip(self, mg):
        return mg > 0.0 if self.mistake_driven else mg >= 1.0


class DiagonalEngine(_Engine):
    """d-AROMA (Alg. 1): ``W`` and ``Σ`` are dense m×n arrays, ``Σ₀ = 1``, ``W₀ = 0``."""

    def __init__(self, m, n, r, mistake_driven=False, W0=None):
        super().__init__(m, n, mistake_driven)
        self.r = float(r)
        self.W = np.zeros((m, n)) if W0 is None else np.array(W0, dtype=float, order="C")
        self.Sigma = np.ones((m, n))

    def _run_sparse(self, Q, D):
        Wf, Sf, r = self.W.reshape(-1), self.Sigma.reshape(-1), self.r
        qi, qd, qp = _csr_parts(Q, self.n)
        di, dd, dp = _csr_parts(D)
        margins = np.zeros(Q.shape[0])
        take_w, take_s, add, mul, vdot = Wf.take, Sf.take, np.add.outer, np.multiply.outer, np.vdot
        skip, upd = self._skip, 0
        for t in range(Q.shape[0]):
            a, b, c, e = qp[t], qp[t + 1], dp[t], dp[t + 1]
            if a == b or c == e:
                continue  # zero direction: margin 0, nothing to update
            idx = add(qi[a:b], di[c:e])
            x = mul(qd[a:b], dd[c:e])
            w = take_w(idx)
            mg = float(vdot(w, x))
            margins[t] = mg
            if skip(mg):
                continue
            s = take_s(idx)
            sx = s * x
            beta = 1.0 / (float(vdot(sx, x)) + r)
            Wf[idx] = w + ((1.0 - mg) * beta) * sx
            sx *= sx
            sx *= beta
            Sf[idx] = s - sx
            upd += 1
        self.updates += upd
        return margins

    def _run_dense(self, Q, D):
        W, S, r = self.W, self.Sigma, self.r
        margins = np.zeros(Q.shape[0])
        for t in range(Q.shape[0]):
            q, p = Q[t], D[t]
            X = np.outer(q, p)
            mg = margins[t] = float(np.vdot(W, X))
            if self._skip(mg) or not X.any():
                continue
            SX = S * X
            beta = 1.0 / (float(np.vdot(SX, X)) + r)
            W += ((1.0 - mg) * beta) * SX
            SX *= SX
            SX *= beta
            S -= SX
            self.updates += 1
        return margins


class OasisEngine(_Engine):
    """OASIS: ``W ← W + τ q pᵀ``, ``τ = min(C, ℓ / (‖q‖² ‖p‖²))``."""

    def __init__(self, m, n, C, mistake_driven=False, W0=None):
        super().__init__(m, n, mistake_driven)
        self.C = float(C)
        self.W = np.zeros((m, n)) if W0 is None else np.array(W0, dtype=float, order="C")

    def _run_sparse(self, Q, D):
        Wf, C = self.W.reshape(-1), self.C
        qi, qd, qp = _csr_parts(Q, self.n)
        di, dd, dp = _csr_parts(D)
        qn2 = np.asarray(Q.multiply(Q).sum(axis=1)).ravel().tolist()
        dn2 = np.asarray(D.multiply(D).sum(axis=1)).ravel().tolist()
        margins = np.zeros(Q.shape[0])
        take, add, mul, vdot, skip, upd = (
            Wf.take,
            np.add.outer,
            np.multiply.outer,
            np.vdot,
            self._skip,
            0,
        )
        for t in range(Q.shape[0]):
            a, b, c, e = qp[t], qp[t + 1], dp[t], dp[t + 1]
            if a == b or c == e:
                continue
            idx = add(qi[a:b], di[c:e])
            x = mul(qd[a:b], dd[c:e])
            w = take(idx)
            mg = float(vdot(w, x))
            margins[t] = mg
            if skip(mg):
                continue
            tau = min(C, (1.0 - mg) / (qn2[t] * dn2[t]))
            x *= tau
            Wf[idx] = w + x
            upd += 1
        self.updates += upd
        return margins

    def _run_dense(self, Q, D):
        W, C = self.W, self.C
        margins = np.zeros(Q.shape[0])
        for t in range(Q.shape[0]):
            q, p = Q[t], D[t]
            mg = margins[t] = float(q @ W @ p)
            norm2 = float(q @ q) * float(p @ p)
            if self._skip(mg) or norm2 == 0.0:
                continue
            W += min(C, (1.0 - mg) / norm2) * np.outer(q, p)
            self.updates += 1
        return margins


class FactoredEngine(_Engine):
    """f-AROMA (Alg. 2): ``W₀ = 0``, ``Λ₀ = I_m``, ``Ω₀ = I_n``; in-place BLAS updates.

    ``Lam`` and ``Om`` hold valid upper triangles only; :attr:`Lambda` and
    :attr:`Omega` return the full symmetric matrices.
    """

    def __init__(self, m, n, r, mistake_driven=False, W0=None):
        super().__init__(m, n, mistake_driven)
        self.r = float(r)
        self.W = np.zeros((m, n), order="F") if W0 is None else np.array(W0, float, order="F")
        self.Lam = np.asfortranarray(np.eye(m))
        self.Om = np.asfortranarray(np.eye(n))

    def run(self, Q, D):
        with one_blas_thread():
            return super().run(Q, D)

    @staticmethod
    def _full(U):
        return np.triu(U) + np.triu(U, 1).T

    @property
    def Lambda(self):
        return self._full(self.Lam)

    @property
    def Omega(self):
        return self._full(self.Om)

    def _update(self, q, p, mg):
        m, n, r = self.m, self.n, self.r
        a = blas.dsymv(1.0, self.Lam, q)
        b = blas.dsymv(1.0, self.Om, p)
        u, v = float(q @ a), float(p @ b)
        self.W = blas.dger((1.0 - mg) / (r + u * v), a, b, a=self.W, overwrite_a=1)
        self.Om = blas.dsyr(-u / (m * r + u * v), b, a=self.Om, overwrite_a=1)
        self.Lam = blas.dsyr(-v / (n * r + u * v), a, a=self.Lam, overwrite_a=1)
        self.updates += 1

    def _run_sparse(self, Q, D):
        m, n = self.m, self.n
        qi, qd, qp = _csr_parts(Q)
        di, dd, dp = _csr_parts(D)
        margins = np.zeros(Q.shape[0])
        q, p = np.zeros(m), np.zeros(n)
        for t in range(Q.shape[0]):
            a, b, c, e = qp[t], qp[t + 1], dp[t], dp[t + 1]
            if a == b or c == e:
                continue
            iq, ip = qi[a:b], di[c:e]
            Wf = self.W.reshape(-1, order="F")  # column-major view: W[i, j] at j·m + i
            mg = float(
                np.vdot(Wf.take(np.add.outer(ip * m, iq)), np.multiply.outer(dd[c:e], qd[a:b]))
            )
            margins[t] = mg
            if self._skip(mg):
                continue
            q[iq], p[ip] = qd[a:b], dd[c:e]
            self._update(q, p, mg)
            q[iq], p[ip] = 0.0, 0.0
        return margins

    def _run_dense(self, Q, D):
        margins = np.zeros(Q.shape[0])
        for t in range(Q.shape[0]):
            q, p = Q[t], D[t]
            mg = margins[t] = float(q @ (self.W @ p))
            if self._skip(mg) or not (q.any() and p.any()):
                continue
            self._update(np.ascontiguousarray(q), np.ascontiguousarray(p), mg)
        return margins
