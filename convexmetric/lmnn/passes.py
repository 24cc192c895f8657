"""Multi-pass LMNN (§5.1) under one budget: ``max_iter`` and ``time_limit`` bound the fit.

After each pass the target neighbours are re-selected under the learned metric and the
next pass starts from it. The passes share the estimator's ``max_iter`` and
``time_limit``: each pass gets what the earlier ones left, and a pass that would start
with nothing left is not run (the settings bound the whole fit, never one pass).
"""

from __future__ import annotations

from ..linalg import components_from_metric
from ..neighbors import target_neighbors
from ..optim.deadline import Deadline


def run_passes(solve_pass, X, y_enc, T, n_passes, max_iter, time_limit):
    """Run up to ``n_passes`` passes; return the last pass's result and its targets.

    Parameters
    ----------
    solve_pass : callable
        ``solve_pass(T, M0, max_iter, time_limit) -> SolveResult``: one pass on targets
        ``T`` from ``M0`` (``None``: the identity) with what is left of the budget.
    X, y_enc : ndarray
        The (reduced) inputs and the encoded labels.
    T : int ndarray (n, k)
        The first pass's target neighbours (each pass re-selects ``k`` per point).
    n_passes : int
    max_iter : int
        Iterations of all passes together.
    time_limit : float or None
        Seconds for all passes together.

    Returns
    -------
    (SolveResult, ndarray, list)
        The last pass's result, with ``iterations`` and ``seconds`` over all passes,
        ``info["pass_iterations"]`` per pass and ``info["passes"]`` the passes run (a
        budget spent before ``n_passes`` makes the status "user_limit" for the time,
        "optimal_inaccurate" for ``max_iter``; an earlier pass left uncertified makes it
        "optimal_inaccurate": the last pass's targets come from that pass's metric);
        the targets the result is for; and the earlier passes, oldest first, each a dict
        ``components`` (the map whose nearest neighbours are the next pass's targets),
        ``targets``, ``certificate``, ``objective`` and ``status``: the chain the
        verifier checks in turn.
    """
    clock, res, counts, earlier = Deadline(time_limit), None, [], []
    for p in range(n_passes):
        left, remaining = max_iter - sum(counts), clock.remaining()
        if p > 0 and (left <= 0 or (remaining is not None and remaining <= 0)):
            res.status = "optimal_inaccurate" if left <= 0 else "user_limit"
            break
        if p > 0:  # §5.1: re-select targets under the metric of the previous pass
            L = components_from_metric(0.5 * (res.matrix + res.matrix.T))
            earlier.append(
                {
                    "components": L,
                    "targets": T,
                    "certificate": res.certificate,
                    "objective": float(res.objective),
                    "status": res.status,
                }
            )
            T = target_neighbors(X @ L.T, y_enc, T.shape[1])
        res = solve_pass(T, None if res is None else res.matrix, left, remaining)
        counts.append(int(res.iterations))
        if res.status == "user_limit":
            break
    res.iterations, res.seconds = sum(counts), clock.elapsed()
    res.info.update(pass_iterations=counts, passes=len(counts))
    if res.status == "optimal" and any(e["status"] != "optimal" for e in earlier):
        res.status = "optimal_inaccurate"
    return res, T, earlier
