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
(``X``, labels, targets), ``L`` and σ, returning small partial sums; :mod:`.evaluator` maps
it (and the full check's :func:`~.full_check.terms_block`) over the blocks through an
executor (:mod:`.executor`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._sets import unique
from .data import Workspace
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


def hinge_block(
    rows,
    data,
    L,
    sigma=None,
    *,
    grad=True,
    chunk=1 << 18,
    rtol=1e-5,
    cap=None,
    ws=None,
    triplets=False,
):
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
        Give up (``value = inf``) once the block's ``Σ φ`` exceeds ``cap`` (a trial point
        rejected anyway; at a collapsed metric the exact sum would cost ``O(n² k d)``).
    ws : Workspace or None
        The calling thread's workspace (its projection is reused); a fresh one if None.
    triplets : bool
        Also return the triplets with ``λ > 0`` and their ``λ`` (``"triplets"``: int64
        ``I, J, L`` and float64 ``λ``; a certificate's dual point).

    Returns
    -------
    dict with ``value`` (Σ φ), ``lam`` (Σ λ), ``count`` (terms with z > 0) and ``G``.

    >>> from convexmetric.lmnn.blocks.data import StreamData
    >>> rng = np.random.default_rng(0)
    >>> X, y, T = rng.normal(size=(20, 2)), np.arange(20) % 2, (np.arange(20)[:, None] + 2) % 20
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
        lam, value = _hinge(xp, H, sigma)
        out["count"] += int(xp.count_nonzero(H > 0))
        out["value"] += value
        out["lam"] += float(xp.sum(lam))
        if triplets:
            listed.append(_listed(xp, take(xp, rd, ic), take(xp, T, take(xp, rd, ic)), lc, lam))
        if cap is not None and out["value"] > cap:
            return {"value": np.inf, "lam": np.inf, "count": out["count"], "G": out["G"]}
        if not grad:
            continue
        pull_w += _row_sums(xp, ic, lam, len(rows))
        out["G"] -= _push(xp, X, rd, ic, lc, lam)
    if grad:
        for part in _pull_parts(xp, X, rd, take(xp, T, rd), pull_w):
            out["G"] += part
    if triplets:
        e = [np.empty(0, np.int64)] * 3 + [np.empty(0)]
        out["triplets"] = tuple(np.concatenate(p) for p in zip(e, *listed))
    return out


def _hinge(xp, H, sigma):
    """``(λ, Σ φ)`` of the hinge arguments ``H``: the hinge with ``λ = 1[z > 0]`` (``sigma``
    None), or its smoothing ``φ_σ`` with ``λ = clip(z/σ, 0, 1)``."""
    if sigma is None:
        pos = H > 0
        return astype(xp, pos, xp.float64), float(xp.sum(H[pos]))
    lam = xp.clip(H / sigma, 0.0, 1.0)
    # λ·max(z, 0): λ = 0 where z ≤ 0 (and a padded slot's z = −inf gives no NaN)
    return lam, float(xp.sum(lam * xp.clip(H, 0.0, None) - 0.5 * sigma * lam**2))


def _push(xp, X, rd, ic, lc, lam):
    """3. The push part ``Σ w_il (x_i − x_l)(x_i − x_l)ᵀ = Xᵀ(D − W)X`` of a chunk's pairs
    ``(rd[ic], lc)`` with weights ``w = Σ_j λ`` (``W`` sparse, b × n); 0 without one."""
    w = xp.sum(lam, axis=1)
    keep = w > 0
    if not bool(xp.any(keep)):
        return 0.0
    return _pair_block(xp, X, rd, ic[keep], lc[keep], w[keep])


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
