"""Large-scale kernel LMNN (§5.3): the App. A solver on the rows of the kernel matrix.

By :mod:`convexmetric.problems.lmnn_kernel`, eq. (14) in ``A ⪰ 0`` is linear LMNN with
features ``k_i`` (rows of ``K``) and metric ``A``; the active-set subgradient solver
with its smoothed refinement therefore applies verbatim, with ``O(n²)`` unknowns
instead of ``O(d²)`` (the cost the paper warns about).
"""

from __future__ import annotations

from .lmnn import solve as _solve_linear


def solve(K, y, targets, mu, **options):
    """Minimise eq. (14) over ``A ⪰ 0`` (n×n); ``result.matrix`` is ``A``.

    ``options`` are those of :func:`convexmetric.solvers.lmnn.solve`.
    """
    res = _solve_linear(K, y, targets, mu, **options)
    res.solver = "kernel-subgradient"
    return res
