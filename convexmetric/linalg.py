"""Formulation-free linear algebra shared by the oracles and certificates.

Sums of outer products of differences (``Σ w (x_a − x_b)(x_a − x_b)ᵀ`` as one sparse
product), factors of PSD matrices, whitening by a PSD matrix, and the exact PSD scaling
used to repair dual points. Nothing here knows which paper it serves.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp


def components_from_metric(M):
    """``L`` with ``M = LᵀL`` (eigen-square-root; negative eigenvalues clipped)."""
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    return (V * np.sqrt(np.maximum(w, 0.0))).T


#: bytes of one chunk's gathered rows in :func:`row_distances` and :func:`target_distances`
#: (at 8 bytes an entry). 1 MiB over 256 KiB: a chunk's NumPy calls hold the GIL, and with
#: 256 KiB two lanes ran slower than one (measurements: ``benchmarks/TUNING.md``)
CHUNK_BYTES = 1 << 20


def _chunk_rows(Z, chunk):
    """Rows per chunk: ``chunk``, or as many as fill :data:`CHUNK_BYTES` (at least 64)."""
    return chunk if chunk is not None else max(64, CHUNK_BYTES // (8 * max(Z.shape[1], 1)))


def in_lanes(n, step, threads, body):
    """``body(s, e)`` over ``[0, n)`` in chunks of ``step``: in this thread, or with
    ``threads > 1`` in that many threads, each a contiguous run of the same chunks
    (NumPy releases the GIL in each chunk's work)."""
    chunks = -(-n // step)
    if threads <= 1 or chunks < 2:
        for s in range(0, n, step):
            body(s, min(s + step, n))
        return
    lanes = min(threads, chunks)
    per = -(-chunks // lanes)

    def run(t):
        for c in range(t * per, min((t + 1) * per, chunks)):
            body(c * step, min((c + 1) * step, n))

    with ThreadPoolExecutor(lanes) as pool:
        list(pool.map(run, range(lanes)))


def target_distances(Z, T, chunk=None, threads=1):
    """``D[i, s] = ‖z_i − z_{T[i, s]}‖²`` (n × k), the values of :func:`row_distances`
    over the pairs ``(i, T[i, s])``, without gathering the rows ``i`` themselves (a
    chunk of them is a slice of ``Z``); chunks and ``threads`` as in :func:`row_distances`."""
    n, k = T.shape
    out = np.empty((n, k))
    step = _chunk_rows(Z, chunk)
    lane = threading.local()

    def body(s, e):
        diff = _lane_rows(lane, 1, min(step, n), Z)[0, : e - s]
        for q in range(k):
            _gather(Z, T[s:e, q], diff)
            np.subtract(diff, Z[s:e], out=diff)  # the negated difference: the same squares
            out[s:e, q] = np.einsum("ij,ij->i", diff, diff)

    in_lanes(n, step, threads, body)
    return out


def row_distances(Z, a, b, chunk=None, threads=1, scratch=None):
    """``‖z_a − z_b‖²`` for every pair ``(a_t, b_t)`` of rows of ``Z``, in chunks.

    A chunk's gathered rows fill :data:`CHUNK_BYTES` (1 MiB: they stay in the core's
    cache, and the temporaries stay small at any list length). Every value is the same
    whatever the chunk, and whatever the ``threads`` sharing the chunks (:func:`in_lanes`).
    ``scratch`` (one thread's, ``threads=1``: a block workspace's
    :meth:`~convexmetric.lmnn.blocks.data.Workspace.scratch`) keeps the gather buffers
    from call to call."""
    out = np.empty(len(a))
    step = _chunk_rows(Z, chunk)
    lane = threading.local()

    def body(s, e):
        if scratch is not None:
            buffers = scratch("rows", (2, min(step, len(a)), Z.shape[1]), Z.dtype)
        else:
            buffers = _lane_rows(lane, 2, min(step, len(a)), Z)
        diff, other = buffers[:, : e - s]
        _gather(Z, a[s:e], diff)
        _gather(Z, b[s:e], other)
        np.subtract(diff, other, out=diff)
        out[s:e] = np.einsum("ij,ij->i", diff, diff)  # (in Z's precision)

    in_lanes(len(a), step, threads, body)
    return out


def _lane_rows(lane, count, rows, Z):
    """``count`` buffers of ``rows`` rows of ``Z``, allocated once per lane (thread) and
    call. A fresh chunk per gather costs its page faults wherever the allocator returns
    freed memory at once, as under ``MALLOC_TRIM_THRESHOLD_=65536``, the setting Dask's
    workers start with (``benchmarks/TUNING.md``)."""
    buf = getattr(lane, "rows", None)
    if buf is None:
        buf = lane.rows = np.empty((count, rows, Z.shape[1]), Z.dtype)
    return buf


def _gather(Z, index, out):
    """``Z[index]`` into ``out`` (``np.take`` is faster than fancy indexing; ``clip``: no
    bounds-checking copy of the result, the callers' indices are rows of ``Z``)."""
    np.take(Z, index, axis=0, out=out, mode="clip")


#: touched rows per chunk of :func:`pair_scatter`'s product (fixed: the same sums in one
#: thread or in lanes)
SCATTER_ROWS = 4096


def pair_scatter(X, a, b, w, left=None, threads=1):
    """``Σ_t w_t (x_{a_t} − x_{b_t})(x_{a_t} − x_{b_t})ᵀ`` as ``Xᵀ (D − S) X``.

    ``S`` is the symmetrised sparse matrix of pair weights and ``D`` its degree
    matrix. For a handful of pairs the outer products are summed directly.
    ``left``: ``Z = X Lᵀ`` (``n × r``) for ``L`` times the sum, ``Zᵀ (D − S) X``
    (``r × d``), without the ``d × d`` matrix: ``nrd`` flops instead of ``nd²``. The sum
    is in the precision of ``X`` and ``left`` (float32 when both are).

    Only the rows the pairs touch enter. Past :data:`SCATTER_ROWS` of them the product
    runs over fixed chunks of them, in ``threads`` lanes (:func:`in_lanes`): the same sum
    whatever the lanes.
    """
    n, d = X.shape
    Zl = X if left is None else left
    if len(a) == 0:
        return np.zeros((Zl.shape[1], d))
    w = np.asarray(w, dtype=np.result_type(X.dtype, Zl.dtype))  # (float32: all of it)
    if len(a) * d * Zl.shape[1] <= 400_000:  # few pairs: a direct sum beats a sparse matrix
        U = X[a] - X[b]
        return ((Zl[a] - Zl[b]).T * w) @ U
    touched = np.zeros(n, bool)
    touched[a] = touched[b] = True
    m = int(touched.sum())
    if m > SCATTER_ROWS:
        return _scatter_in_chunks(X, Zl, (a, b, w), touched, threads)
    Xr, Zr = X, Zl
    if m < 0.8 * n:
        pos = _positions(touched)
        Xr, a, b = X[touched], pos[a], pos[b]
        Zr = Xr if left is None else Zl[touched]
    else:
        m = n
    W = sp.csr_matrix((w, (a, b)), shape=(m, m))
    deg = np.bincount(a, weights=w, minlength=m) + np.bincount(b, weights=w, minlength=m)
    deg = deg.astype(w.dtype, copy=False)
    # D − S is symmetric: the sparse products take the narrower side (Z: r columns)
    SZ = W @ Zr + W.T @ Zr  # S Z with S = W + Wᵀ
    return (Zr * deg[:, None] - SZ).T @ Xr  # one GEMM: ((D − S)Z)ᵀX


def _scatter_in_chunks(X, Zl, pairs, touched, threads):
    """:func:`pair_scatter` over more than :data:`SCATTER_ROWS` touched rows: ``S``'s
    touched rows as ``W`` and ``Wᵀ`` (built one after the other: no copies of the pairs),
    ``((D − S)Z)ᵀX`` by fixed chunks of those rows in ``threads`` lanes, the chunks'
    ``r × d`` sums added in order."""
    a, b, w = pairs
    n, d = X.shape
    rows = np.flatnonzero(touched)
    m = len(rows)
    pos = _positions(touched)
    deg = np.zeros(m)
    halves = []
    for u, v in ((a, b), (b, a)):
        pu = pos[u]
        deg += np.bincount(pu, weights=w, minlength=m)
        halves.append(sp.csr_matrix((w, (pu, v)), shape=(m, n)))
        del pu
    deg = deg.astype(w.dtype, copy=False)
    out = np.empty((-(-m // SCATTER_ROWS), Zl.shape[1], d), w.dtype)

    def body(s, e):  # ((D − S)Z)ᵀX over touched rows s:e
        Y = Zl[rows[s:e]] * deg[s:e, None]
        for W in halves:
            Y -= _csr_rows(W, s, e) @ Zl
        np.matmul(Y.T, X[rows[s:e]], out=out[s // SCATTER_ROWS])

    in_lanes(m, SCATTER_ROWS, threads, body)
    return out.sum(axis=0)


def _positions(touched):
    """Each row's index among the touched rows (int32 while it fits)."""
    return np.cumsum(touched, dtype=np.int32 if len(touched) < 2**31 else np.intp) - 1


def _csr_rows(W, s, e):
    """Rows ``s:e`` of the CSR matrix ``W``, a view of its arrays (a slice copies them)."""
    if s == 0 and e == W.shape[0]:
        return W
    p, q = W.indptr[s], W.indptr[e]
    return sp.csr_matrix(
        (W.data[p:q], W.indices[p:q], W.indptr[s : e + 1] - p), shape=(e - s, W.shape[1])
    )


def triplet_scatter(X, I, J, L, w, left=None, threads=1):
    """``Σ_t w_t (C_{i_t j_t} − C_{i_t l_t})`` through one sparse weight matrix
    (``left``: ``Z = X Lᵀ``, for ``L`` times the sum; ``threads``: see :func:`pair_scatter`)."""
    a, b = np.concatenate([I, I]), np.concatenate([J, L])
    return pair_scatter(X, a, b, np.concatenate([w, -w]), left, threads)


def psd_scaling(S0s, S1s, steps=40):
    """The largest ``θ ∈ [0, 1]`` with every ``(1 − θ)S0 + θS1`` PSD (each ``S0`` is PSD).

    Bisection with a rounding tolerance of ``1e-12·max|S1|``; used by the dual bounds.
    """
    scale = max(1.0, max(float(np.abs(S).max()) for S in S1s))

    def psd(theta):
        return all(
            np.linalg.eigvalsh((1 - theta) * a + theta * b)[0] >= -1e-12 * scale
            for a, b in zip(S0s, S1s)
        )

    if psd(1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if psd(mid) else (lo, mid)
    return lo


def whitening(R, rtol=1e-10, *, floor=False):
    """``T = V Λ^{-1/2}`` over the positive eigenspace of ``R`` (``TᵀRT = I``), the
    null-space basis and ``T⁺ = Λ^{1/2}Vᵀ``; ``tr(RW) = tr Ŵ`` for ``W = T Ŵ Tᵀ``,
    ``Ŵ = T⁺ W T⁺ᵀ``.

    ``floor=True``: the eigenvalues below ``rtol·λ_max`` are raised to it instead of
    dropped, so ``T`` is square and ``T⁺ = T⁻¹`` (an exact change of variables, as the
    LMNN solvers' preconditioning needs; no null space; an ``R`` without a positive
    eigenvalue gives ``T = V``), in ``eigh``'s order of the eigenvalues.

    >>> T, null, T_inv = whitening(np.array([[4.0, 0.0], [0.0, 0.0]]), floor=True)
    >>> T.shape, null.shape, bool(np.allclose(T @ T_inv, np.eye(2)))
    ((2, 2), (2, 0), True)
    """
    d = np.diag(R)
    if not floor and np.count_nonzero(R - np.diag(d)) == 0:  # diagonal (feature blocks)
        return _diagonal_whitening(d, rtol)
    lam, V = np.linalg.eigh(0.5 * (R + R.T))
    if floor:
        return _floored_whitening(lam, V, rtol)
    keep = lam > rtol * max(float(lam[-1]), 1e-300)
    Vk = V[:, keep]
    return Vk / np.sqrt(lam[keep]), V[:, ~keep], (Vk * np.sqrt(lam[keep])).T


def _floored_whitening(lam, V, rtol):
    """:func:`whitening` with ``floor=True`` from ``R``'s eigendecomposition."""
    if not lam[-1] > 0:  # nothing to equalise (a pull matrix of a class of one point)
        lam = np.ones_like(lam)
    lam = np.maximum(lam, rtol * float(lam[-1]))
    return V / np.sqrt(lam), V[:, :0], (V * np.sqrt(lam)).T


def _diagonal_whitening(d, rtol):
    """:func:`whitening` of ``diag(d)`` without an eigendecomposition."""
    keep = d > rtol * max(float(d.max()), 1e-300)
    E = np.eye(len(d))
    return E[:, keep] / np.sqrt(d[keep]), E[:, ~keep], (E[:, keep] * np.sqrt(d[keep])).T


class Spread:
    """The data's mean ``c`` and covariance ``Σ``, and ``‖Bᵀ(x_i − c)‖²`` for every point.

    For ``P = BBᵀ ⪰ 0`` and points ``x_a, x_b``, ``(x_a − x_b)ᵀP(x_a − x_b) ≤ (√p_a + √p_b)²``
    with ``p = ‖Bᵀ(x − c)‖²`` (the triangle inequality in ``P``'s seminorm): how far a change of
    metric can move a pair's distance, from the data alone (:mod:`convexmetric.lmnn.memo`).
    The mean of ``p`` is ``tr(PΣ)``, an ``O(d²·rank P)`` estimate before the ``O(n·d·rank P)``
    values."""

    ROWS = 8192  #: rows projected at once (no centred copy of the data)

    def __init__(self, X):
        self.X, self.mean = X, X.mean(axis=0)
        n, d = X.shape
        self.cov = np.zeros((d, d))
        for s in range(0, n, self.ROWS):
            C = X[s : s + self.ROWS] - self.mean
            self.cov += C.T @ C
        self.cov /= max(n, 1)

    def rows(self, B):
        """``‖Bᵀ(x_i − c)‖²`` for every point ``i`` (by chunks of :attr:`ROWS`)."""
        out, off = np.empty(self.X.shape[0]), self.mean @ B
        for s in range(0, self.X.shape[0], self.ROWS):
            Y = self.X[s : s + self.ROWS] @ B - off
            out[s : s + self.ROWS] = np.einsum("ij,ij->i", Y, Y)
        return out
