"""Large-scale kernel LMNN (§5.3): the App. A solver on the empirical kernel map.

By :mod:`convexmetric.problems.lmnn_kernel`, eq. (14) in ``A ⪰ 0`` (n×n) is linear LMNN
on the rows of ``Φ`` (``K = ΦΦᵀ``, ``Φ`` n×r) with metric ``M̂ = ΦᵀAΦ`` (r×r), and
``A = T M̂ Tᵀ``. The active-set subgradient solver with its smoothed refinement (or the
working-set exact solver) therefore applies verbatim, with ``O(r²)`` unknowns instead of
the ``O(n²)`` the paper warns about.
"""

from __future__ import annotations

from ..kernels import empirical_features
from .exact import solve_working_set
from .solver import solve as _solve_linear


def solve(K, y, targets, mu, *, exact=False, rtol=1e-10, **options):
    """Minimise eq. (14) over ``A ⪰ 0`` (n×n); ``result.matrix`` is ``A``.

    ``exact`` selects :func:`~convexmetric.lmnn.exact.solve_working_set` (exact
    SDPs on a working set) instead of :func:`convexmetric.lmnn.solver.solve`; ``options``
    are that function's. ``result.info`` gains ``"rank"`` (r) and ``"features_M"`` (``M̂``).
    """
    Phi, T = empirical_features(K, rtol)
    res = (solve_working_set if exact else _solve_linear)(Phi, y, targets, mu, **options)
    M = res.matrix
    res.info.update(rank=Phi.shape[1], features_M=M)
    res.matrix = T @ M @ T.T
    res.matrices = [res.matrix]
    res.solver = ("kernel-" + res.solver) if res.solver else "kernel"
    if res.certificate is not None:  # the same dual point, over the rows of Φ
        res.certificate = {**res.certificate, "kind": "lmnn_kernel"}
    return res
