"""LMNN's fit stopped by its time limit in a step outside the engine's drivers.

The drivers stop on :class:`convexmetric.optim.deadline.TimeUp` as on an interrupt
(their best point, status "user_limit"). Between them (the refinement's start, the
escapes, the final objective of phase 1) the solver catches it and returns
:func:`stopped`: the best point whose exact objective the oracle computed.
"""

from __future__ import annotations

import time

from ..result import SolveResult


def stopped(oracle, M0, t0):
    """The :class:`SolveResult` of a fit stopped at ``time.perf_counter() = t0 + time_limit``:
    the least exact objective the oracle computed (:attr:`.ActiveList.best_seen`; else
    ``M0``'s, computed now: the alarm rings once), status "user_limit"; the solver adds the
    best bound so far (:meth:`.ActiveSetOracle.bound_at`)."""
    best = oracle.best_seen
    if best is None:
        oracle.objective(M0, bound=True)
        best = oracle.best_seen
    f, M = best
    info = {"stop": "time_limit", "active_list": len(oracle), "full_checks": oracle.full_checks,
            **oracle.mode_info()}  # fmt: skip
    return SolveResult(matrix=M, objective=f, status="user_limit", iterations=0,
                       seconds=time.perf_counter() - t0, solver="time_limit", history=[f],
                       lower_bound=None, info=info)  # fmt: skip
