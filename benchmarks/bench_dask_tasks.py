"""LMNN's full check on a Dask cluster: seconds and CPU seconds by the size of its tasks.

Run from the repository root: ``python benchmarks/bench_dask_tasks.py [--table PATH]``
(about four minutes, the fit included; ``--table benchmarks/results/bench_dask_tasks.md``
writes the rows there).

A full check (:meth:`~convexmetric.lmnn.blocks.evaluator.StreamingEvaluator.terms`) of
the 60k row of ``bench_gpu.py`` (``--max-n`` subsamples it) at the metric ``LMNN()``
learns there (a fit's checks are mostly near its end), on a ``LocalCluster`` of two
single-threaded worker processes, with the blocks grouped into tasks of at least
``TASK_CELLS`` cells (rows × n; 0: a task per block, as before). For each setting: the
best wall seconds of three checks, and the CPU seconds of that check in the client
process (the client, the scheduler and the nannies of a LocalCluster) and in each
worker. In this process: the same check in one lane, as the yardstick. Every
setting's triplets are checked equal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import ROWS, _subsample
from results_table import write_table

from convexmetric import LMNN
from convexmetric.lmnn.blocks import dask_executor
from convexmetric.lmnn.blocks import data as block_data
from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
from convexmetric.neighbors import target_neighbors
from convexmetric.problems.lmnn import pull_matrix

COLUMNS = ["where", "TASK_CELLS", "tasks", "check s", "client CPU s", "worker CPU s", "ratio"]
SETTINGS = (0, 1 << 27, 1 << 28, 1 << 29)
MEMORY = 2 << 30  # LMNN's default memory_limit: its blocks


def cpu_seconds(process):
    t = process.cpu_times()
    return t.user + t.system


def best_check(ev, L, processes=()):
    """The best of three checks: ``(seconds, CPU seconds per process, triplets)``."""
    best = None
    for rep in range(3):
        before = [cpu_seconds(p) for p in processes]
        start = time.perf_counter()
        terms = ev.terms(L * (1 + 1e-6 * rep))  # (a new metric: no reuse of the last)
        seconds = time.perf_counter() - start
        used = [cpu_seconds(p) - b for p, b in zip(processes, before)]
        if best is None or seconds < best[0]:
            best = (seconds, used, terms)
    return best


def key(terms, n):
    I, J, L = (np.asarray(a, np.int64) for a in terms)
    return np.sort((I * n + J) * n + L)


def on_cluster(X, y, T, L, pull):
    import psutil

    rows = []
    with dask_executor.dask_client("local:2") as client:
        client.wait_for_workers(2)
        workers = [psutil.Process(pid) for pid in client.run(os.getpid).values()]
        processes = [psutil.Process(), *workers]
        for cells in SETTINGS:
            block_data.TASK_CELLS = cells
            ex = dask_executor.DaskExecutor(client)
            ev = StreamingEvaluator(X, y, T, 0.5, pull, memory_limit=MEMORY, executor=ex)
            ev.terms(L)  # the data on the workers, the grouping set
            seconds, used, terms = best_check(ev, L, processes)
            row = {"where": "local:2", "TASK_CELLS": cells, "tasks": len(ex._groups)}
            row.update({"check s": seconds, "client CPU s": used[0], "_terms": terms})
            row["worker CPU s"] = " + ".join(f"{u:.2f}" for u in used[1:])
            rows.append(row)
            ex.close(ev.data)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=None, help="subsample the 60k row")
    ap.add_argument("--table", default=None, help="write the markdown table here")
    args = ap.parse_args(argv)
    Xtr, _, ytr, _ = _subsample(ROWS["60k"](), args.max_n)
    _, y = np.unique(ytr, return_inverse=True)
    L = LMNN().fit(Xtr, ytr).components_
    T = target_neighbors(Xtr, y, 3)
    pull = pull_matrix(Xtr, T)
    one = StreamingEvaluator(Xtr, y, T, 0.5, pull, memory_limit=MEMORY)
    seconds, _, want = best_check(one, L)
    rows = [{"where": "this process, one lane", "tasks": "", "check s": seconds, "_terms": want}]
    rows += on_cluster(Xtr, y, T, L, pull)
    base = rows[1]["check s"]
    n = len(y)
    for r in rows:
        assert np.array_equal(key(r.pop("_terms"), n), key(want, n)), r
        r["ratio"] = r["check s"] / base
    print(f"{len(want[0])} violated triplets, {n} points")
    for r in rows:
        print("  ".join(f"{c}={r.get(c, '')}" for c in COLUMNS))
    if args.table:
        notes = [
            f"{n} × {Xtr.shape[1]}, {len(want[0])} violated triplets; ratio: check seconds "
            "over those of a task per block (TASK_CELLS = 0).",
            "CPU seconds of the check: the client process (with the scheduler and nannies "
            "of the LocalCluster) and each worker.",
        ]
        title = "LMNN's full check on Dask by task size (bench_dask_tasks.py)"
        write_table(args.table, title, COLUMNS, rows, notes)
        print(f"table written to {args.table}")


if __name__ == "__main__":
    main()
