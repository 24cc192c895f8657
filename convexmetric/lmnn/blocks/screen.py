"""The search coordinates of LMNN's candidate steps: a contraction of ``Z`` on a few axes.

The full check (:mod:`.full_check`) and the streamed sums (:mod:`.stream`) find the
differently labelled pairs within a radius by one float32 product per block, whose cost is
``block_rows × n × (columns + 2)``. They run it on ``W = [(Z − z̄) V, ρ]``: the centred
``Z`` on its ``s`` leading principal axes ``V`` and ``ρ``, the norm of what those axes
leave out. For every pair ``‖w_a − w_b‖² = ‖V ᵀ(z_a − z_b)‖² + (ρ_a − ρ_b)² ≤ ‖z_a −
z_b‖²`` (the residuals' norms differ by at most the norm of their difference), so the
pairs within a radius in ``W`` are a superset of those within it in ``Z``, and every
candidate is then decided in double precision from ``Z`` itself: the triplets are the
same. A learned metric puts nearly all of ``Z``'s spread on a few axes (the 60,000-point
MNIST fit: 30-40 of 164 carry 95% of it, where about 3 candidates in 10⁴ pairs pass the
bound against 1 in 10⁴ within the radius), and the product then costs ``s + 3`` columns
instead of ``r + 2``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..constants import SCREEN_RESIDUAL, SCREEN_ROWS
from .xp import device_of, is_numpy, namespace, take, to_device, to_numpy


class Screen(NamedTuple):
    """Search coordinates ``W`` (n × c) with ``‖w_a − w_b‖ ≤ ‖z_a − z_b‖`` for every pair;
    ``sq = ‖w‖²``; ``B`` the float32 search matrix ``[w_l, −‖w_l‖²/2, 1]`` with rows sorted
    by class (the projection's ``order``); ``scale``: the float32 rounding band's
    ``max(‖w‖², ‖z‖²) + 1``."""

    W: object
    sq: object
    B: object
    scale: float


def screen(P, residual=None):
    """The :class:`Screen` of the projection ``P`` (:class:`~.data.Projection`).

    ``s`` is the fewest principal axes leaving at most ``residual`` (default
    :data:`SCREEN_RESIDUAL`) of the spread ``Σ ‖z − z̄‖²`` out; where ``s + 1 ≥ r``,
    ``W = Z``."""
    residual = SCREEN_RESIDUAL if residual is None else residual
    xp, Z, n, r = namespace(P.Z), P.Z, P.Z.shape[0], P.Z.shape[1]
    if n == 0 or r <= 2 or residual <= 0:
        return _of(xp, Z, P.sq, P)
    mean = xp.mean(Z, axis=0)
    chunks = [slice(a, min(a + SCREEN_ROWS, n)) for a in range(0, n, SCREEN_ROWS)]  # (in bounds)
    C = sum(_gram(xp, Z[c, :] - mean) for c in chunks)
    w, V = np.linalg.eigh(to_numpy(C))
    spread = np.cumsum(np.maximum(w, 0.0))  # of the trailing axes, ascending
    s = r - int(np.searchsorted(spread, residual * spread[-1], side="right"))
    if s + 1 >= r:
        return _of(xp, Z, P.sq, P)
    Vs = to_device(np.ascontiguousarray(V[:, r - s :]), Z)
    W = xp.concat([_coordinates(xp, Z[c, :] - mean, Vs) for c in chunks], axis=0)
    return _of(xp, W, xp.sum(W * W, axis=1), P)


def _gram(xp, Zc):
    return xp.matrix_transpose(Zc) @ Zc if not is_numpy(xp) else Zc.T @ Zc


def _coordinates(xp, Zc, Vs):
    """``[Zc Vs, ρ]`` for centred rows ``Zc``: ``ρ² = ‖z − z̄‖² − ‖Vsᵀ(z − z̄)‖²`` (≥ 0)."""
    Ws = Zc @ Vs
    r2 = xp.sum(Zc * Zc, axis=1) - xp.sum(Ws * Ws, axis=1)
    rho = xp.sqrt(xp.where(r2 > 0.0, r2, xp.zeros_like(r2)))  # (NumPy < 2.1: no clip(min=))
    return xp.concat([Ws, rho[:, None]], axis=1)


def _of(xp, W, sq, P):
    Wo, so = take(xp, W, P.order), take(xp, sq, P.order)
    scale = max(float(xp.max(sq)) + 1.0 if sq.shape[0] else 1.0, P.scale)
    return Screen(W, sq, search_matrix(xp, Wo, so), scale)


def search_matrix(xp, Wo, so):
    """float32 ``[w, −‖w‖²/2, 1]`` (NumPy: written in place, no concatenated temporaries)."""
    if not is_numpy(xp):
        ones = xp.ones((so.shape[0], 1), dtype=xp.float32, device=device_of(Wo))
        return xp.concat([xp.astype(Wo, xp.float32), xp.astype(-0.5 * so[:, None], xp.float32),
                          ones], axis=1)  # fmt: skip
    c = Wo.shape[1]
    B = np.empty((len(so), c + 2), np.float32)
    B[:, :c] = Wo
    B[:, c] = -0.5 * so
    B[:, c + 1] = 1.0
    return B
