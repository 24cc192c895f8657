"""A/B of two source trees on the solvers the escape path and the check schedule touch.

Run: ``python benchmarks/ab_escape.py OTHER_TREE [CASES] [REPEATS] [--table PATH]`` from the
repository root, ``OTHER_TREE`` a checkout of the baseline (``git worktree add --detach /tmp/base
main``). Each run is a fresh process with ``PYTHONPATH`` set to one tree, the two trees
alternating; prints each case's results (which should agree) and the ratio of the best
times, this tree over the other (``--table``: one markdown table,
``benchmarks/results/ab_escape.md``). Cases (comma-separated; default all but ``mkpoe``):

* ``multi:TOL``: ``MultiMetricLMNN(k=3, mu=0.5, tol=TOL)`` on digits (the check schedule);
* ``lmnn:NAME``: ``LMNN(k=3, mu=0.5)`` on a standard split;
* ``saddle:NAME``: LMNN's ``close_gap`` from a rank-1 factor saddle (the escape path);
* ``poe``: full POE from a rank-1 factor start (its escape); ``mkpoe``: bench_poe's MKPOE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

DEFAULT = "multi:1e-3,multi:1e-4,lmnn:iris,lmnn:digits,saddle:iris,saddle:wine,poe"


def _split(name):
    from convexmetric import datasets
    from convexmetric.neighbors import target_neighbors

    X, _, y, _ = datasets.load_split(name)
    _, y = np.unique(y, return_inverse=True)
    return X, y, target_neighbors(X, y, 3)


def _multi(tol):
    from convexmetric import MultiMetricLMNN, datasets

    X, _, y, _ = datasets.load_split("digits")
    t = time.perf_counter()
    r = MultiMetricLMNN(k=3, mu=0.5, tol=float(tol)).fit(X, y).result_
    return time.perf_counter() - t, r, {"full_checks": r.info.get("full_checks")}


def _lmnn(name):
    from convexmetric import LMNN, datasets

    X, _, y, _ = datasets.load_split(name)
    t = time.perf_counter()
    r = LMNN(k=3, mu=0.5).fit(X, y).result_
    return time.perf_counter() - t, r, {"solver": r.solver}


def _saddle(name):
    from dataclasses import fields, replace

    from convexmetric.lmnn import solver as S

    try:  # (a tree from before the solver's phases had their own modules: all in S)
        from convexmetric.lmnn import oracle, phases, refinement, settings
    except ImportError:
        oracle = phases = refinement = settings = S

    X, y, T = _split(name)
    o = oracle.ActiveSetOracle(X, y, T, 0.5)
    L0 = np.zeros((X.shape[1],) * 2)
    L0[0] = 1.0
    rs = refinement.refine_settings(settings.LMNNSettings(), None)
    if "max_escapes" in {f.name for f in fields(rs)}:
        rs = replace(rs, max_escapes=0)  # the saddle itself
    res = refinement.refine(o, L0, rs)
    t = time.perf_counter()
    r = phases.close_gap(o, res, tol=1e-6)
    return time.perf_counter() - t, r, {"escapes": r.info["escapes"]}


def _poe(tree, kind):
    from convexmetric.poe import solver as S

    if kind == "mkpoe":
        sys.path.insert(0, os.path.join(tree, "benchmarks"))
        from bench_poe import aset_scale

        kernels, _, C = aset_scale()
        t = time.perf_counter()
        r = S.solve_kernels(kernels, C, 100.0, settings={"tol": 1e-3, "time_limit": 600})
    else:
        sys.path.insert(0, os.path.join(tree, "tests"))
        from conftest import poe_instance

        from convexmetric.problems import poe as P

        X, C = poe_instance(12, 80, seed=1, flip=0.1)
        t = time.perf_counter()
        r = S.solve(P.lpoe_blocks(X), C, 20.0, settings={"rank": 1, "tol": 1e-6})
    return time.perf_counter() - t, r, {"escapes": r.info["escapes"], "ranks": r.info["ranks"]}


def one(case, tree):
    """One case in this process: a JSON line of its time and results."""
    kind, _, arg = case.partition(":")
    runs = {"multi": _multi, "lmnn": _lmnn, "saddle": _saddle}
    sec, r, extra = _poe(tree, kind) if kind in ("poe", "mkpoe") else runs[kind](arg)
    print(json.dumps({"seconds": sec, "objective": r.objective, "lower": r.lower_bound,
                      "status": r.status, "iterations": r.iterations, **extra}))  # fmt: skip


def main(other, cases=DEFAULT, repeats=3, table=None):
    trees = {"other": os.path.abspath(other), "this": os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))}  # fmt: skip
    table_rows = []
    for case in cases.split(","):
        rows = {k: [] for k in trees}
        for _ in range(int(repeats)):
            for k, tree in trees.items():
                env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
                cmd = [sys.executable, os.path.abspath(__file__), "--one", case, tree]
                out = subprocess.check_output(cmd, env=env, cwd=tree, text=True)
                rows[k].append(json.loads(out.strip().splitlines()[-1]))
        for k in trees:
            print(case, k, {key: v for key, v in rows[k][-1].items() if key != "seconds"})
        best = {k: min(o["seconds"] for o in rows[k]) for k in trees}
        print(
            f"{case}: best of {repeats}, this {best['this']:.3f} s, other "
            f"{best['other']:.3f} s, this/other {best['this'] / best['other']:.3f}",
            flush=True,
        )
        last = rows["this"][-1]
        table_rows.append(
            {
                "case": case,
                "status": last["status"],
                "iterations": last["iterations"],
                "objective": f"{last['objective']:.10g}",
                "same objective": last["objective"] == rows["other"][-1]["objective"],
                "this s": best["this"],
                "other s": best["other"],
                "this/other": best["this"] / best["other"],
            }
        )
    if table:
        from results_table import write_table

        write_table(
            table,
            "A/B: escapes and the check schedule (ab_escape.py)",
            list(table_rows[0]),
            table_rows,
            [f"Best of {repeats} fresh processes per tree, alternating; counts of this tree."],
        )


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one(sys.argv[2], sys.argv[3])
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from results_table import table_argument

        args, table = table_argument(sys.argv[1:])
        main(*args, table=table)
