"""A cost model of LMNN's fit on Dask, fitted on measured runs and checked on one it was not
fitted to; then its prediction for 10⁶ × 164 on 8, 32 and 128 workers.

    python benchmarks/model_dask.py --table benchmarks/results/model_dask.md
    python benchmarks/model_dask.py --sizes 3000,6000 --held-out 12000   # a dry run

Every run is ``LMNN(backend="dask")`` (k = 3, μ = 0.5, default tolerance) on a
``LocalCluster`` of ``w`` single-threaded worker processes, on a subsample of the
augmented-MNIST row of ``bench_gpu.py`` (``--row``). A fit's wall time is modelled from
its counts and three unit costs:

    T(n, w) = a·E·n + R·(ℓ + c(n)/w),    c(n) = c₀·(n/n₀)^p

* ``a·E·n``: the client's own seconds, ``T − B`` with ``B`` the seconds it waited for
  the cluster (``result_.info["block_seconds"]``); ``E`` its evaluations over the active
  list (phase 1's and the refinement's), each costing ``a`` per point (the list grows with
  ``n``); target neighbours and the certificate are folded into ``a``;
* ``R``: round trips to the cluster (``info["cluster_evaluations"]``,
  ``info["cluster_checks"]``: every search over all triplets, and
  ``info["cluster_partial_checks"]``: searches of the stale rows), ``ℓ`` what each costs
  beyond its compute (task latency, payload: the bytes per round trip are in the table);
* ``c(n)``: a search's compute in worker-seconds, split over the ``w`` workers.

At each fitted size the runs on 1 and 2 workers give ``B_w = R_w·(ℓ + c/w)``, two
equations for ``ℓ`` and ``c``; ``p`` comes from the two sizes, ``a`` and ``ℓ`` are
means. The held-out run (``--held-out`` points on 2 workers, outside or between the fitted
sizes) is predicted from those constants and its own counts ``E`` and ``R`` (the counts
follow the solver's convergence, not a law in ``n``). The rows for 10⁶ points take the
fitted runs' mean counts and assume data as hard as the row's: a model, not a
measurement, and the table says so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import ROWS, _subsample
from results_table import write_table

from convexmetric import LMNN
from convexmetric.lmnn.blocks.dask_executor import dask_client

COLUMNS = ["run", "n", "workers", "fit_s", "client_s", "cluster_s", "evaluations", "round_trips",
           "bytes_per_evaluation", "bytes_per_check", "status", "certified_gap",
           "predicted_s", "measured/predicted"]  # fmt: skip


def measure(X, y, workers):
    """One Dask fit: its wall time and the model's inputs from ``result_.info``."""
    with dask_client(f"local:{workers}") as client:
        client.wait_for_workers(workers)
        t0 = time.perf_counter()
        res = LMNN(backend="dask").fit(X, y).result_
        fit = time.perf_counter() - t0
    info = res.info
    block = info.get("block_seconds", 0.0)
    return {
        "n": len(y), "workers": workers, "fit_s": fit, "client_s": fit - block,
        "cluster_s": block,
        "round_trips": sum(info.get(f"cluster_{kind}s", 0)
                           for kind in ("evaluation", "check", "partial_check")),
        "bytes_per_evaluation": info.get("bytes_sent_per_evaluation", 0.0)
        + info.get("bytes_received_per_evaluation", 0.0),
        "bytes_per_check": info.get("bytes_sent_per_check", 0.0)
        + info.get("bytes_received_per_check", 0.0),
        "evaluations": evaluations(info), "status": res.status,
        "certified_gap": res.certified_gap,
    }  # fmt: skip


def evaluations(info):
    """The client's evaluations over the active list (phase 1's and the refinement's)."""
    return info.get("phase1_iterations", 0) + info.get("refine_evaluations", 0)


def at_size(one, two):
    """``(n, a, ℓ, per-search work)`` at one size from its runs on 1 and 2 workers:
    ``B_w = R_w·ℓ + R_w·c/w`` gives ``ℓ`` and ``c`` (a search's worker-seconds)."""
    A = np.array(
        [[one["round_trips"], one["round_trips"]], [two["round_trips"], 0.5 * two["round_trips"]]]
    )
    latency, work = (float(v) for v in np.linalg.solve(A, [one["cluster_s"], two["cluster_s"]]))
    per_eval = [r["client_s"] / (r["evaluations"] * r["n"]) for r in (one, two)]
    return one["n"], float(np.mean(per_eval)), latency, work


class Model:
    """``T = a·E·n + R·(ℓ + c(n)/w)``, ``c(n) = c₀(n/n₀)^p`` (module docstring)."""

    def __init__(self, small, large, counts):
        (self.n0, a0, l0, self.c0), (n1, a1, l1, c1) = small, large
        self.a, self.latency = 0.5 * (a0 + a1), 0.5 * (l0 + l1)
        self.p = math.log(max(c1, 1e-9) / max(self.c0, 1e-9)) / math.log(n1 / self.n0)
        self.E, self.R = (
            float(np.mean([r[k] for r in counts])) for k in ("evaluations", "round_trips")
        )

    def seconds(self, n, workers, E=None, R=None):
        """``(client seconds, cluster seconds)``; ``E``, ``R`` default to the fitted means."""
        E, R = self.E if E is None else E, self.R if R is None else R
        return self.a * E * n, R * (self.latency + self.c0 * (n / self.n0) ** self.p / workers)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", default="60k", choices=["60k", "240k"])
    ap.add_argument("--sizes", default="15000,30000", help="the two fitted sizes")
    ap.add_argument("--held-out", type=int, default=60000, help="points of the held-out run")
    ap.add_argument("--table", default=None, help="write the markdown table here")
    a = ap.parse_args(argv)
    a.sizes = [int(v) for v in a.sizes.split(",")]
    if len(a.sizes) != 2 or not a.sizes[0] < a.sizes[1]:
        ap.error("--sizes: two sizes, smaller first")
    return a


def main(argv=None):
    a = parse(argv)
    data = ROWS[a.row]()
    runs, fitted = [], []
    for n in a.sizes:
        Xtr, _, ytr, _ = _subsample(data, n)
        pair = [measure(Xtr, ytr, w) for w in (1, 2)]
        runs += [dict(r, run="fitted") for r in pair]
        fitted.append(at_size(*pair))
        print(*pair, sep="\n", flush=True)
    model = Model(*fitted, runs)
    Xtr, _, ytr, _ = _subsample(data, a.held_out)
    held = measure(Xtr, ytr, 2)
    predicted = sum(model.seconds(held["n"], 2, held["evaluations"], held["round_trips"]))
    runs.append(dict(held, run="held out", predicted_s=predicted))
    runs[-1]["measured/predicted"] = held["fit_s"] / predicted
    print(runs[-1], flush=True)
    for w in (8, 32, 128):
        S, B = model.seconds(10**6, w)
        runs.append({"run": "model (not measured)", "n": 10**6, "workers": w, "client_s": S,
                     "cluster_s": B, "round_trips": model.R, "evaluations": model.E,
                     "predicted_s": S + B})  # fmt: skip
    notes = [
        f"Row {a.row} of bench_gpu.py (augmented MNIST, PCA-164), subsampled; LocalCluster of "
        "single-threaded worker processes; the fitted runs at the two --sizes on 1 and 2 "
        "workers.",
        f"Fitted: client a = {model.a * 1e6:.3f} µs per evaluation and point; a search "
        f"c(n) = {model.c0:.2f} worker-s at n = {model.n0}, ∝ n^{model.p:.2f}; "
        f"ℓ = {model.latency * 1e3:.0f} ms per round trip.",
        "Held out: predicted from the fitted constants and the run's own counts (evaluations "
        "E, round trips R); the 10⁶ rows take the fitted runs' mean counts "
        f"(E = {model.E:.0f}, R = {model.R:.1f}).",
        "client_s: the client's own seconds (fit − cluster wait); cluster_s: its wait for the "
        "workers; bytes: payload sent plus gathered per round trip (info).",
    ]
    if a.table:
        write_table(a.table, "A cost model of LMNN on Dask (model_dask.py)", COLUMNS, runs, notes)
    for r in runs:
        print({k: r.get(k) for k in COLUMNS if k in r})
    print("\n".join(notes))


if __name__ == "__main__":
    main()
