"""Streaming evaluation of LMNN's eq. (14): exact objective and (sub)gradient by row blocks.

When the active list of :class:`~convexmetric.lmnn.oracle.ActiveSetOracle` (or one full
check) would outgrow the memory budget, the solver evaluates eq. (14) over *all*
triplets instead, one block of rows ``i`` at a time, never materialising the triplet
list. For a block of rows and ``Z = X Lᵀ`` (``M = LᵀL``):

1. candidate impostors ``l`` (other class, ``‖z_i − z_l‖² < max_j ‖z_i − z_j‖² + 1``)
   come from a float32 GEMM with a widened radius (a superset);
2. for the candidates the hinge arguments ``z_ijl = 1 + ‖z_i − z_j‖² − ‖z_i − z_l‖²`` are
   recomputed exactly in double precision from the differences, as the active-set
   oracle computes them, and processed in chunks of bounded size;
3. the block returns its partial sums: ``Σ φ(z)`` (the hinge, or its smoothed version
   ``φ_σ(z) = max_{λ∈[0,1]} λz − (σ/2)λ²``), ``Σ λ``, the number of positive terms, and
   the d×d matrix ``Σ λ_ijl (C_ij − C_il)`` (``λ = 1[z > 0]`` for the hinge,
   ``clip(z/σ, 0, 1)`` smoothed), accumulated as ``Xᵀ(D − W)X`` through a sparse weight
   matrix per chunk.

Summing the blocks gives the objective ``(1 − μ)⟨P, M⟩ + μ Σ φ``, its (sub)gradient
``(1 − μ)P + μ Σ λ (C_ij − C_il)``, and the dual matrix ``S(λ)`` and ``Σ λ`` of the
certificate (:meth:`~convexmetric.lmnn.oracle.ActiveSetOracle.lower_bound`).

The block function :func:`hinge_block` is pure: a function of the row indices, the data
(``X``, labels, targets), ``L`` and σ, returning small partial sums. So is
:func:`~.full_check.terms_block`, the full check of the active-set mode, returning violated
triplets ``(i, j, l)`` (each differently labelled pair once, by symmetry:
:mod:`.full_check`). An *executor* maps them over the blocks: :class:`~.local.LocalExecutor`
runs in this process (in one thread or several lanes); a distributed executor (Dask,
:mod:`.dask_executor`) ships the data once (``scatter``) and runs ``map_blocks`` /
``map_terms`` on its workers. Every block of one evaluation shares ``Z = X Lᵀ`` and the
float32 search matrix, computed once per process (:func:`~.data.project`).

Memory: one block holds ``O(block_rows · n)`` floats and one chunk ``O(chunk · (d + k))``;
:func:`plan_blocks` sizes both from the budget.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..._sets import unique
from ...problems.lmnn import TooManyTerms  # noqa: F401 (what the executors' map_terms raises)
from .data import (  # noqa: F401 (the block helpers, importable from here as before)
    BYTES_PER_BLOCK_CELL,
    Projection,
    StreamData,
    Workspace,
    plan_blocks,
    project,
    row_blocks,
)
from .full_check import terms_block
from .local import LocalExecutor
from .xp import (
    astype,
    concat,
    device_of,
    is_numpy,
    mask_padding,
    namespace,
    row_distances,
    take,
    to_device,
    to_numpy,
)


def _candidates(rows, data, L, rtol, ws):
    """Step 1 of the module docstring for one block: ``(Z, D_target, ii, ll)``.

    ``(rows[ii], ll)`` are candidate impostor pairs (a superset of those with a positive
    hinge term); ``D_target`` are the exact target distances of the rows. ``rows`` is a
    host index array; the others are of the data's namespace (:mod:`.xp`)."""
    T = data.targets
    P = ws.project(data, L)
    xp, Z = namespace(P.Z), P.Z
    rd = to_device(rows, Z)
    Tr = take(xp, T, rd)
    Dt = xp.stack([row_distances(xp, Z, rd, Tr[:, s]) for s in range(T.shape[1])], axis=1)
    Dt = mask_padding(xp, Dt, Tr, rd)  # padded slots: no hinge term, no radius
    radius = xp.max(Dt, axis=1) + 1.0
    # ‖w_i − w_l‖² < r_i  ⟺  w_i·w_l − ‖w_l‖²/2 > (‖w_i‖² − r_i)/2 on the search coordinates
    # (.screen: ‖w_i − w_l‖ ≤ ‖z_i − z_l‖, a superset), the ‖w_l‖²/2 column folded into one
    # float32 GEMM, r_i widened (relative rtol, absolute rtol·max(‖w‖², ‖z‖²))
    S = ws.screen(P)
    G = _row_matrix(xp, take(xp, S.W, rd)) @ S.B.T
    c0, c1 = P.ranges[P.labels[rows[0]].item()]
    G[:, c0:c1] = -float("inf")  # the block's own class: never an impostor
    thr = 0.5 * (take(xp, S.sq, rd) - radius * (1 + rtol) - rtol * S.scale)
    ii, ll = xp.nonzero(G > astype(xp, thr[:, None], xp.float32))
    del G
    return Z, Dt, ii, take(xp, P.order, ll)


def _row_matrix(xp, Zb):
    """float32 ``[z_i, 1, 0]``: times ``B``'s rows, ``z_i·z_l − ‖z_l‖²/2``."""
    if is_numpy(xp):
        A = np.zeros((len(Zb), Zb.shape[1] + 2), np.float32)
        A[:, :-2] = Zb
        A[:, -2] = 1.0
        return A
    dev = device_of(Zb)
    one = xp.ones((Zb.shape[0], 1), dtype=xp.float32, device=dev)
    return concat(xp, [astype(xp, Zb, xp.float32), one, xp.zeros_like(one)], axis=1)


def hinge_block(rows, data, L, sigma=None, *, grad=True, chunk=1 << 18, rtol=1e-5, cap=None,
                ws=None, triplets=False):  # fmt: skip
    """Partial sums of eq. (14)'s push term over the triplets ``(i, j, l)`` with ``i ∈ rows``.

    Parameters
    ----------
    rows : int array
        The block's row indices ``i``, all of one class (:func:`row_blocks`).
    data : StreamData
    L : ndarray (r, d)
        Components, ``M = LᵀL``.
    sigma : float or None
        ``None``: the hinge ``max(z, 0)`` with ``λ = 1[z > 0]``; otherwise the smoothed
        hinge ``φ_σ`` with ``λ = clip(z/σ, 0, 1)``.
    grad : bool
        Also return ``Σ λ (C_ij − C_il)`` (else ``None``).
    cap : float or None
        Give up (``value = inf``) once the block's ``Σ φ`` exceeds ``cap``: a trial
        point whose objective is that large is rejected anyway, and at a collapsed
        metric (every pair an impostor) the exact sum would cost ``O(n² k d)``.
    ws : Workspace or None
        The calling thread's workspace (its projection is reused); a fresh one if None.
    triplets : bool
        Also return the triplets with ``λ > 0`` and their ``λ`` (``"triplets"``: int64
        ``I, J, L`` and float64 ``λ``; a certificate's dual point).

    Returns
    -------
    dict with ``value`` (Σ φ), ``lam`` (Σ λ), ``count`` (terms with z > 0) and ``G``.

    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2)), np.arange(20) % 2
    >>> T = np.array([[(i + 2) % 20] for i in range(20)])
    >>> out = hinge_block(np.arange(0, 20, 2), StreamData(X, y, T), np.eye(2))
    >>> out["G"].shape, out["count"] > 0
    ((2, 2), True)
    """
    X, _, T = data
    d = X.shape[1]
    ws = ws if ws is not None else Workspace()
    Z, Dt, ii, ll = _candidates(rows, data, L, rtol, ws)
    xp = namespace(Z)
    rd = to_device(rows, Z)
    out = {"value": 0.0, "lam": 0.0, "count": 0, "G": np.zeros((d, d)) if grad else None}
    pull_w = xp.zeros((len(rows), T.shape[1]), dtype=xp.float64, device=device_of(Z))
    listed = []
    for s in range(0, ii.shape[0], chunk):
        # 2. exact hinge arguments in double precision, from the differences
        e = min(s + chunk, ii.shape[0])  # (in bounds: the standard leaves the rest open)
        ic, lc = ii[s:e], ll[s:e]
        H = 1.0 + take(xp, Dt, ic) - row_distances(xp, Z, take(xp, rd, ic), lc)[:, None]  # (c, k)
        pos = H > 0
        out["count"] += int(xp.count_nonzero(pos))
        if sigma is None:
            lam = astype(xp, pos, xp.float64)
            out["value"] += float(xp.sum(H[pos]))
        else:
            lam = xp.clip(H / sigma, 0.0, 1.0)
            # λ·max(z, 0): λ = 0 where z ≤ 0 (and a padded slot's z = −inf gives no NaN)
            out["value"] += float(xp.sum(lam * xp.clip(H, 0.0, None) - 0.5 * sigma * lam**2))
        out["lam"] += float(xp.sum(lam))
        if triplets:
            listed.append(_listed(xp, take(xp, rd, ic), take(xp, T, take(xp, rd, ic)), lc, lam))
        if cap is not None and out["value"] > cap:
            return {"value": np.inf, "lam": np.inf, "count": out["count"], "G": out["G"]}
        if not grad:
            continue
        pull_w += _row_sums(xp, ic, lam, len(rows))
        # 3. push part Σ w_il (x_i − x_l)(x_i − x_l)ᵀ = Xᵀ(D − W)X, W sparse (b × n)
        w = xp.sum(lam, axis=1)
        keep = w > 0
        if bool(xp.any(keep)):
            out["G"] -= _pair_block(xp, X, rd, ic[keep], lc[keep], w[keep])
    if grad:
        for part in _pull_parts(xp, X, rd, take(xp, T, rd), pull_w):
            out["G"] += part
    if triplets:
        e = [np.empty(0, np.int64)] * 3 + [np.empty(0)]
        out["triplets"] = tuple(np.concatenate(p) for p in zip(e, *listed))
    return out


def _listed(xp, i, targets, l, lam):
    """The triplets ``(i, targets[:, q], l)`` with ``λ > 0`` and their ``λ`` (c × k), on
    the host: int64 ``I, J, L`` and float64 ``λ``."""
    c, q = xp.nonzero(lam > 0)
    if is_numpy(xp):
        return i[c], targets[c, q], l[c], lam[c, q]
    k = lam.shape[1]
    flat = c * k + q
    J = xp.take(xp.reshape(targets, (-1,)), flat)
    lam_cq = xp.take(xp.reshape(lam, (-1,)), flat)
    return tuple(to_numpy(v) for v in (take(xp, i, c), J, take(xp, l, c), lam_cq))


def _row_sums(xp, ic, lam, b):
    """``(b, k)``: the rows of ``lam`` added up by block row ``ic`` (sorted ascending)."""
    if is_numpy(xp):
        return np.stack([np.bincount(ic, lam[:, q], b) for q in range(lam.shape[1])], 1)
    # no scatter-add in the standard: ``ic`` is sorted (row-major nonzero), so a row's
    # entries are one run, its sum a difference of cumulative sums
    zero = xp.zeros((1, lam.shape[1]), dtype=lam.dtype, device=device_of(lam))
    cs = concat(xp, [zero, xp.cumulative_sum(lam, axis=0)])
    edges = xp.searchsorted(ic, xp.arange(b + 1, dtype=ic.dtype, device=device_of(ic)))
    return take(xp, cs, edges[1:]) - take(xp, cs, edges[:-1])


def _pull_parts(xp, X, rd, targets, pull_w):
    """``Σ_i pull_w[i, q] (x_i − x_{t_iq})(…)ᵀ`` for each target slot ``q`` (host d × d)."""
    if is_numpy(xp):
        U = X[rd][:, None, :] - X[targets]  # (b, k, d): the target differences
        for q in range(targets.shape[1]):
            yield (U[:, q].T * pull_w[:, q]) @ U[:, q]
        return
    Xb = take(xp, X, rd)
    for q in range(targets.shape[1]):
        U = Xb - take(xp, X, targets[:, q])
        yield to_numpy((xp.matrix_transpose(U) * pull_w[:, q]) @ U)


def _pair_block(xp, X, rd, ic, lc, w):
    """``Σ_t w_t (x_{rows[ic_t]} − x_{lc_t})(…)ᵀ`` (host d × d): on NumPy through one
    sparse ``b × n`` matrix, elsewhere as one product of the differences."""
    n, d = X.shape
    if not is_numpy(xp):
        U = take(xp, X, take(xp, rd, ic)) - take(xp, X, lc)
        return to_numpy((xp.matrix_transpose(U) * w) @ U)
    rows = rd
    if len(ic) * d <= 20_000:
        U = X[rows[ic]] - X[lc]
        return (U.T * w) @ U
    W = sp.csr_matrix((w, (ic, lc)), shape=(len(rows), n))
    Xb = X[rows]
    WX = W @ X
    r = np.bincount(ic, w, len(rows))
    cols = unique(lc)
    c = np.bincount(lc, w, n)[cols]
    Xc = X[cols]
    cross = Xb.T @ WX
    return (Xb.T * r) @ Xb + (Xc.T * c) @ Xc - cross - cross.T


def _add_sums(total, part):
    """``total`` plus one block's :func:`hinge_block` sums (in place: ``total`` is the
    fold's own)."""
    for key in ("value", "lam", "count"):
        total[key] += part[key]
    if part["G"] is not None:
        total["G"] = part["G"] if total["G"] is None else total["G"] + part["G"]
    return total


class StreamingEvaluator:
    """Eq. (14) over all triplets, streamed by row blocks through an executor.

    Parameters
    ----------
    X, y, targets : arrays
        Inputs (n, d), encoded labels and target neighbours (n, k).
    mu : float
    pull : ndarray (d, d)
        ``Σ C_ij`` over target pairs (:func:`~convexmetric.problems.lmnn.pull_matrix`).
    memory_limit : int or None
        Bytes of working memory; sizes the blocks (:func:`plan_blocks`).
    executor : Executor, default :class:`LocalExecutor`
        Runs the block maps (the contract: :mod:`.executor`).
    """

    def __init__(self, X, y, targets, mu, pull, *, memory_limit=None, executor=None):
        self.mu, self.pull = mu, pull
        n, d = X.shape
        self.n = n
        self.executor = executor if executor is not None else LocalExecutor()
        # an executor sizes its blocks itself (a device: its own memory; lanes: their share)
        self.block_rows, self.chunk = self.executor.plan_blocks(
            n, d, targets.shape[1], memory_limit
        )
        self.y, self.blocks = y, row_blocks(y, self.block_rows)
        self.data = self.executor.scatter(StreamData(X, y, targets))
        self.evaluations = self.checks = self.partial_checks = 0
        self.seconds = 0.0  #: wall time spent in the block functions (all calls)

    def terms(self, L, max_terms=None, margin=0.0):
        """The violated triplets at ``M = LᵀL``: int arrays ``(I, J, L)`` (int32 while ``n <
        2³¹``, as the blocks return them; a full check
        of the active-set mode, by blocks); with ``margin``, those with ``z > −margin``.
        Past ``max_terms`` raises :class:`TooManyTerms`."""
        self.checks += 1
        return self._terms(self.blocks, L, max_terms, {"margin": margin} if margin else {})

    def partial_terms(self, L, stale, max_terms=None):
        """The violated triplets of the pairs with an end in ``stale`` (a bool mask over
        the points), each pair once: a full check's block work over the stale rows alone
        (:func:`~.full_check.terms_block`). For the executors that map the blocks given
        (:attr:`partial`): not Dask's, whose tasks keep their own groups of blocks."""
        self.partial_checks += 1
        rows = np.flatnonzero(stale)
        blocks = [rows[b] for b in row_blocks(self.y[rows], self.block_rows)]
        return self._terms(blocks, L, max_terms, {"stale": stale})

    @property
    def partial(self):
        """Whether :meth:`partial_terms` runs here (the executor maps the blocks given)."""
        return isinstance(self.executor, LocalExecutor)

    def _terms(self, blocks, L, max_terms, kw):
        start = time.perf_counter()
        try:
            parts = self.executor.map_terms(terms_block, blocks, self.data, L,
                                            max_terms=max_terms, chunk=self.chunk,
                                            **kw)  # fmt: skip
        finally:
            self.executor.release()
            self.seconds += time.perf_counter() - start
        if not parts:
            e = np.empty(0, np.int32 if self.n < 2**31 else np.int64)
            return e, e, e
        return tuple(np.concatenate([p[key] for p in parts]) for key in ("I", "J", "L"))

    def sums(self, L, sigma=None, grad=True, cap=None):
        """Block partial sums added up: ``value``, ``lam``, ``count`` and ``G``.

        ``cap``: give up once ``Σ φ`` is known to exceed it (``value = inf``)."""
        self.evaluations += 1
        start = time.perf_counter()
        total = self.executor.fold_blocks(
            _add_sums, {"value": 0.0, "lam": 0.0, "count": 0, "G": None},
            hinge_block, self.blocks, self.data, L, sigma, grad=grad, chunk=self.chunk, cap=cap,
        )  # fmt: skip
        self.seconds += time.perf_counter() - start
        if grad and total["G"] is None:
            total["G"] = np.zeros_like(self.pull)
        return total

    def evaluate(self, M, L, sigma=None, cap=None):
        """``(f, G)``: eq. (14) (or its smoothing with width σ, prox centre 0) and gradient.

        With ``cap``, a point whose value exceeds it returns ``(inf, 0)`` early (a
        trial point the descent rejects anyway)."""
        f_pull = (1 - self.mu) * float(np.sum(self.pull * M))
        push_cap = None if cap is None else max((cap - f_pull) / self.mu, 0.0)
        if push_cap is not None and f_pull > cap:
            return np.inf, np.zeros_like(M)
        t = self.sums(L, sigma, cap=push_cap)
        if not np.isfinite(t["value"]):
            return np.inf, np.zeros_like(M)
        return f_pull + self.mu * t["value"], (1 - self.mu) * self.pull + self.mu * t["G"]

    def objective(self, M, L, dual=False):
        """Eq. (14) at ``M = LᵀL`` over all triplets (exact); with ``dual``, ``(f, S(λ), Σ λ)``
        at ``λ = 1[z > 0]`` from the same pass (a certificate's dual point, as :meth:`dual`)."""
        t = self.sums(L, None, grad=dual)
        f = (1 - self.mu) * float(np.sum(self.pull * M)) + self.mu * t["value"]
        return (f, (1 - self.mu) * self.pull + self.mu * t["G"], t["lam"]) if dual else f

    def dual(self, L, sigma):
        """``(S(λ), Σ λ)`` with ``λ = clip(z/σ, 0, 1)`` at ``M = LᵀL`` (the certificate's)."""
        t = self.sums(L, sigma)
        return (1 - self.mu) * self.pull + self.mu * t["G"], t["lam"]

    def multipliers(self, L, sigma):
        """The triplets with ``λ = clip(z/σ, 0, 1) > 0`` at ``M = LᵀL`` and their ``λ``
        (the dual point of :meth:`dual`): int64 ``I, J, L`` and float64 ``λ``."""
        start = time.perf_counter()
        parts = self.executor.map_blocks(hinge_block, self.blocks, self.data, L, sigma,
                                         grad=False, chunk=self.chunk, triplets=True)  # fmt: skip
        self.seconds += time.perf_counter() - start
        # (a Dask task adds its blocks' dicts up: their tuples come concatenated)
        listed = [q["triplets"][s : s + 4] for q in parts for s in range(0, len(q["triplets"]), 4)]
        e = [np.empty(0, np.int64)] * 3 + [np.empty(0)]
        return tuple(np.concatenate(p) for p in zip(e, *listed))
