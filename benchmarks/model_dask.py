"""A cost model of LMNN's fit on Dask, fitted on measured runs and checked on one it was not
fitted to; then its prediction for 10⁶ × 164 on 8, 32 and 128 workers.

    python benchmarks/model_dask.py --table benchmarks/results/model_dask.md
    python benchmarks/model_dask.py --sizes 3000,6000 --held-out 1500,12000   # a dry run

Every run is ``LMNN(backend="dask", n_jobs=1)`` (k = 3, μ = 0.5, default tolerance; the
client's list work in one thread, as ``a`` and ``b`` below assume) on a
``LocalCluster`` of ``w`` single-threaded worker processes, on a subsample of the
augmented-MNIST row of ``bench_gpu.py`` (``--row``). A fit's wall time is modelled from
its work counts and four unit costs:

    T = a·Λ + b·E·n + R·ℓ + κ·n·N/min(w, t)

* the client's own seconds ``T − B`` (``B``: the seconds it waited for the cluster,
  ``result_.info["block_seconds"]``) are ``a·Λ + b·E·n``: ``Λ`` the listed terms its
  evaluations went through (``info["list_terms_evaluated"]``: the list's length summed
  over the evaluations and bounds: it follows the data, not ``n`` alone; the 15,000- and
  60,000-point fits went through about as many), ``E`` its evaluations (phase 1's and
  the refinement's), each projecting the ``n`` points (``Z = X Lᵀ``); target neighbours
  and the certificate's other work are folded in;
* the workers' compute ``W`` (the sum of the tasks' compute intervals in Dask's task
  stream) is ``κ·n·N``: ``N`` the rows the searches took (``info["rows_searched"]``:
  ``n`` a full search, the stale rows a partial one), each against the ``n`` points,
  split over the workers a check keeps busy: ``w``, but no more than its ``t`` tasks
  (``info["tasks_per_check"]``; a task holds at least
  :data:`~convexmetric.lmnn.constants.TASK_CELLS` cells, so up to about 16,000 points a
  check is one task, and a second worker cannot help it);
* the rest of the wait, ``B − W/min(w, t)``, is ``R·ℓ``: ``R`` the round trips to the cluster
  (``info["cluster_evaluations"]``, ``["cluster_checks"]``, ``["cluster_partial_checks"]``)
  and ``ℓ`` what each costs beyond the compute: task latency and payload (the bytes per
  round trip are in the table), the workers' imbalance, and on a machine the workers
  share with the client, the client's own work competing for the cores.

``a`` and ``b`` are a non-negative least-squares fit of the client seconds of the fitted
runs (two sizes, each on 1 and 2 workers), ``κ`` and ``ℓ`` the ratios of their sums. A
held-out run (``--held-out`` points on 2 workers, between or outside the fitted sizes) is
predicted from those costs and its own counts: the counts follow the solver's
convergence, not a law in ``n``. The rows for 10⁶ points take the fitted runs' mean ``E``
and ``R``, the largest fitted size's ``Λ/(E·n)`` and ``N/(R·n)``, and the tasks the
default blocks give (:func:`tasks_per_check`), and assume data as
hard as the row's: a model, not a measurement, and the table says so.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import ROWS, _subsample
from distributed import get_task_stream
from results_table import write_table
from scipy.optimize import nnls

from convexmetric import LMNN
from convexmetric.lmnn.blocks.dask_executor import dask_client
from convexmetric.lmnn.blocks.data import plan_blocks
from convexmetric.lmnn.constants import DEFAULT_MEMORY_LIMIT, MAX_TASKS, TASK_CELLS

COLUMNS = (
    "run n workers fit_s client_s cluster_s worker_s evaluations list_terms rows_searched "
    "round_trips tasks bytes_per_evaluation bytes_per_check status certified_gap predicted_s "
    "measured/predicted"
).split()


def measure(X, y, workers):
    """One Dask fit: its wall time and the model's inputs from ``result_.info``."""
    with dask_client(f"local:{workers}") as client:
        client.wait_for_workers(workers)
        with get_task_stream(client) as stream:
            t0 = time.perf_counter()
            res = LMNN(backend="dask", n_jobs=1).fit(X, y).result_  # the client: one thread
            fit = time.perf_counter() - t0
    computed = sum(
        part["stop"] - part["start"]
        for task in stream.data
        for part in task["startstops"]
        if part["action"] == "compute"
    )
    info = res.info
    block = info.get("block_seconds", 0.0)
    return {
        "n": len(y),
        "workers": workers,
        "fit_s": fit,
        "client_s": fit - block,
        "cluster_s": block,
        "worker_s": computed,
        "round_trips": sum(
            info.get(f"cluster_{kind}s", 0) for kind in ("evaluation", "check", "partial_check")
        ),
        "bytes_per_evaluation": info.get("bytes_sent_per_evaluation", 0.0)
        + info.get("bytes_received_per_evaluation", 0.0),
        "bytes_per_check": info.get("bytes_sent_per_check", 0.0)
        + info.get("bytes_received_per_check", 0.0),
        "evaluations": evaluations(info),
        "list_terms": info["list_terms_evaluated"],
        "rows_searched": info.get("rows_searched", 0),
        "tasks": info.get("tasks_per_check", 1.0),
        "status": res.status,
        "certified_gap": res.certified_gap,
    }


def evaluations(info):
    """The client's evaluations over the active list (phase 1's and the refinement's)."""
    return info.get("phase1_iterations", 0) + info.get("refine_evaluations", 0)


class Model:
    """``T = a·Λ + b·E·n + R·ℓ + κ·n·N/min(w, t)`` fitted on ``runs`` (module docstring)."""

    def __init__(self, runs):
        A = np.array([[r["list_terms"], r["evaluations"] * r["n"]] for r in runs], float)
        self.a, self.b = nnls(A, np.array([r["client_s"] for r in runs]))[0]
        cells = sum(r["n"] * r["rows_searched"] for r in runs)
        self.kappa = sum(r["worker_s"] for r in runs) / cells
        rest = sum(r["cluster_s"] - r["worker_s"] / busy(r, r["workers"]) for r in runs)
        self.latency = rest / sum(r["round_trips"] for r in runs)
        largest = [r for r in runs if r["n"] == max(r["n"] for r in runs)]
        self.E, self.R = (
            float(np.mean([r[k] for r in runs])) for k in ("evaluations", "round_trips")
        )
        self.per_eval = np.mean([r["list_terms"] / (r["evaluations"] * r["n"]) for r in largest])
        self.per_trip = np.mean([r["rows_searched"] / (r["round_trips"] * r["n"]) for r in largest])

    def seconds(self, run, workers):
        """``(client seconds, cluster seconds, worker seconds)`` of a run's counts."""
        n = run["n"]
        client = self.a * run["list_terms"] + self.b * run["evaluations"] * n
        work = self.kappa * n * run["rows_searched"]
        return client, run["round_trips"] * self.latency + work / busy(run, workers), work

    def counts(self, n):
        """The counts assumed for ``n`` points (module docstring)."""
        return {
            "n": n,
            "evaluations": self.E,
            "round_trips": self.R,
            "list_terms": self.per_eval * self.E * n,
            "rows_searched": self.per_trip * self.R * n,
            "tasks": tasks_per_check(n),
        }


def busy(run, workers):
    """The workers a run's round trips keep busy: no more than a check's tasks."""
    return max(min(workers, run["tasks"]), 1.0)


def tasks_per_check(n, d=164, k=3):
    """A full check's tasks for ``n`` points (:class:`.DaskExecutor`'s grouping of the
    blocks planned under the default memory limit)."""
    rows = plan_blocks(n, d, k, DEFAULT_MEMORY_LIMIT)[0]
    blocks = -(-n // rows)
    size = max(-(-blocks // MAX_TASKS), TASK_CELLS // (rows * n), 1)
    return -(-blocks // size)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", default="60k", choices=["60k", "240k"])
    ap.add_argument("--sizes", default="15000,60000", help="the fitted sizes")
    ap.add_argument("--held-out", default="7500,40000", help="points of the held-out runs")
    ap.add_argument("--table", default=None, help="write the markdown table here")
    a = ap.parse_args(argv)
    a.sizes = [int(v) for v in a.sizes.split(",")]
    a.held_out = [int(v) for v in a.held_out.split(",")]
    if len(set(a.sizes)) < 2:
        ap.error("--sizes: at least two sizes")
    return a


def main(argv=None):
    a = parse(argv)
    data = ROWS[a.row]()
    runs = []
    for n in a.sizes:
        Xtr, _, ytr, _ = _subsample(data, n)
        pair = [dict(measure(Xtr, ytr, w), run="fitted") for w in (1, 2)]
        runs += pair
        print(*pair, sep="\n", flush=True)
    model = Model(runs)
    for n in a.held_out:
        Xtr, _, ytr, _ = _subsample(data, n)
        held = dict(measure(Xtr, ytr, 2), run="held out")
        held["predicted_s"] = sum(model.seconds(held, 2)[:2])
        held["measured/predicted"] = held["fit_s"] / held["predicted_s"]
        runs.append(held)
        print(held, flush=True)
    for w in (8, 32, 128):
        row = dict(model.counts(10**6), run="model (not measured)", workers=w)
        row["client_s"], row["cluster_s"], row["worker_s"] = model.seconds(row, w)
        row["predicted_s"] = row["client_s"] + row["cluster_s"]
        runs.append(row)
    notes = [
        f"Row {a.row} of bench_gpu.py (augmented MNIST, PCA-164), subsampled; LocalCluster of "
        "single-threaded worker processes; the fitted runs at the two --sizes on 1 and 2 "
        "workers.",
        f"Fitted: client a = {model.a * 1e9:.3g} ns per listed term evaluated and "
        f"b = {model.b * 1e9:.3g} ns per evaluation and point; workers κ = "
        f"{model.kappa * 1e9:.3g} ns per searched row and point; ℓ = {model.latency:.3g} s per "
        "round trip beyond the compute.",
        "Held out: predicted from the fitted costs and the run's own counts; the 10⁶ rows "
        f"take E = {model.E:.0f}, R = {model.R:.1f} (the fitted runs' means), "
        f"Λ = {model.per_eval:.3g}·E·n and N = {model.per_trip:.3g}·R·n (the largest size's).",
        "client_s: the client's own seconds (fit − cluster wait); cluster_s: its wait for the "
        "workers; worker_s: the workers' compute (the task stream's compute intervals); bytes: "
        "payload sent plus gathered per round trip (info).",
    ]
    if a.table:
        write_table(a.table, "A cost model of LMNN on Dask (model_dask.py)", COLUMNS, runs, notes)
    for r in runs:
        print({k: r.get(k) for k in COLUMNS if k in r})
    print("\n".join(notes))


if __name__ == "__main__":
    main()
