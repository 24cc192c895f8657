"""LMNN's block map on Dask: 1 vs 2 local worker processes, side by side.

Run from the repository root: ``python benchmarks/bench_lmnn_dask.py`` (digits and
``augmented_digits``, a few minutes; ``--quick``: digits only; ``--fit``: also a full
``LMNN(backend="dask", tol=1e-3)`` fit on digits per cluster size). Standard split,
k = 3, mu = 0.5.

Two kinds of evaluation, at ``L`` learned by the local ``LMNN()`` on digits (near the
optimum, where most evaluations are): a *full check* of the active-set mode (the
violated triplets, gathered into the client's active list; the only cluster work of
that mode besides exact objectives) and a *streaming* evaluation (one pass over all
triplets: objective and gradient sums). Wall time in this process (``LocalExecutor``)
and on a
``LocalCluster(processes=True, threads_per_worker=1)`` of
1 and 2 workers; the data each worker holds (``dask.sizeof`` of its store, sent once
per fit) and the bytes moved per evaluation from Dask's own counter, the workers'
``transfer_outgoing_bytes_total`` (every ``get_data`` a worker serves: the gathered
partial sums and any worker-to-worker copy). The task messages carry ``L`` inline
(``tasks × d² × 8`` bytes, printed as "on paper"). Timings on a shared
machine are "under load".
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from convexmetric import datasets
from convexmetric.lmnn.blocks.dask_executor import DaskExecutor
from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
from convexmetric.lmnn.blocks.local import LocalExecutor
from convexmetric.lmnn.constants import BYTES_PER_TERM, DEFAULT_MEMORY_LIMIT, MAX_TASKS
from convexmetric.lmnn.terms import pull_matrix
from convexmetric.neighbors import target_neighbors


def instance(name):
    Xtr, _, ytr, _ = datasets.load_split(name)
    _, y = np.unique(ytr, return_inverse=True)
    return Xtr, y, target_neighbors(Xtr, y, 3)


def per_check(ev, L, evals):
    ev.terms(L)  # warm-up
    t = time.perf_counter()
    for _ in range(evals):
        I, _, _ = ev.terms(L)
    return (time.perf_counter() - t) / evals, len(I)


def per_eval(ev, L, evals):
    ev.sums(L)  # warm-up (and the first scatter of the row blocks on Dask)
    t = time.perf_counter()
    for _ in range(evals):
        out = ev.sums(L)
    return (time.perf_counter() - t) / evals, out


def _held():
    from dask.sizeof import sizeof

    from convexmetric.lmnn.blocks.dask_worker import STORE

    return sizeof(list(STORE.values()))


def outgoing(client):
    return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values())


def run(name, evals, fit, L):
    import distributed

    X, y, T = instance(name)
    n, d = X.shape
    P = pull_matrix(X, T)
    ev = StreamingEvaluator(X, y, T, 0.5, P, executor=LocalExecutor())
    t_local, ref = per_eval(ev, L, evals)
    # full checks only where the solver would run them: the violated triplets fit the
    # default budget (else it streams)
    checks = ref["count"] <= DEFAULT_MEMORY_LIMIT // BYTES_PER_TERM
    c_local, violated = per_check(ev, L, evals) if checks else (np.nan, ref["count"])
    blocks = len(ev.blocks)
    print(f"\n{name}: n={n}, d={d}, {blocks} row blocks of ≤{ev.block_rows} rows, "
          f"{ref['count']} positive hinge terms at L")  # fmt: skip
    print(f"  local (this process): {t_local * 1e3:8.1f} ms / streaming evaluation, "
          f"{c_local * 1e3:8.1f} ms / full check")  # fmt: skip
    rows = []
    for workers in (1, 2):
        with (
            distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                                     dashboard_address=":0") as cluster,
            distributed.Client(cluster) as client,
        ):  # fmt: skip
            t0 = time.perf_counter()
            ex = DaskExecutor(client)
            dev = StreamingEvaluator(X, y, T, 0.5, P, executor=ex)
            t_scatter = time.perf_counter() - t0
            t_eval, out = per_eval(dev, L, 1)  # includes scattering the row blocks
            scattered = max(client.run(_held).values())
            b0 = outgoing(client)
            t_eval, out = per_eval(dev, L, evals)
            moved = (outgoing(client) - b0) / (evals + 1)  # per_eval warms up once
            same = out["value"] == ref["value"] and np.array_equal(out["G"], ref["G"])
            row = dict(workers=workers, ms=t_eval * 1e3, scatter_s=t_scatter,
                       scattered_MB=scattered / 1e6, moved_kB=moved / 1e3, same=same)  # fmt: skip
            rows.append(row)
            if not checks:
                continue
            # a full check's traffic: the first (every task sends its whole set), then at
            # a nearby point (each task sends what changed since its last report)
            b0 = outgoing(client)
            dev.terms(L)
            b1 = outgoing(client)
            nearby = len(dev.terms(L * 1.01)[0])
            b2 = outgoing(client)
            check_moved, delta_moved = b1 - b0, b2 - b1
            t_check, found = per_check(dev, L, evals)
            row.update(check_ms=t_check * 1e3, check_kB=check_moved / 1e3,
                       delta_kB=delta_moved / 1e3, nearby=nearby,
                       same_check=found == violated)  # fmt: skip
            if fit:
                from convexmetric import LMNN

                Xtr, _, ytr, _ = datasets.load_split(name)
                t = time.perf_counter()
                m = LMNN(backend="dask", tol=1e-3).fit(Xtr, ytr)
                info = m.result_.info
                row.update(fit_s=time.perf_counter() - t, fit_obj=m.objective_,
                           fit_status=m.result_.status, fit_mode=info["mode"],
                           fit_evals=info.get("stream_evaluations"),
                           fit_checks=info["full_checks"])  # fmt: skip
    on_paper = min(blocks, MAX_TASKS) * d * d * 8 / 1e3
    for r in rows:
        line = (f"  dask, {r['workers']} worker(s): {r['ms']:8.1f} ms / evaluation "
                f"(x{r['ms'] / (t_local * 1e3):.2f} of local); "
                f"scatter once {r['scatter_s']:.2f} s, "
                f"{r['scattered_MB']:.2f} MB held per worker; "
                f"moved per evaluation {r['moved_kB']:.1f} kB "
                f"(workers' outgoing) + L in task messages {on_paper:.1f} kB on paper; "
                f"identical sums: {r['same']}")  # fmt: skip
        if "check_ms" not in r:
            line += (f"\n      no full checks: {violated} violated triplets exceed the default "
                     "budget, the solver streams here")  # fmt: skip
        else:
            line += (f"\n      full check: {r['check_ms']:8.1f} ms "
                     f"(x{r['check_ms'] / (c_local * 1e3):.2f} of local); moved: first check "
                     f"{r['check_kB']:.1f} kB ({violated} violated triplets, as int64 keys "
                     f"{violated * 8 / 1e3:.1f} kB on paper), next at 1.01·L "
                     f"{r['delta_kB']:.1f} kB (the change; {r['nearby']} violated there); "
                     f"same: {r['same_check']}")  # fmt: skip
        if "fit_s" in r:
            line += (f"\n      fit tol=1e-3: {r['fit_s']:.1f} s, objective {r['fit_obj']:.6f}, "
                     f"{r['fit_status']}, mode {r['fit_mode']}, {r['fit_checks']} full checks, "
                     f"{r['fit_evals']} exact/streaming evaluations")  # fmt: skip
        print(line)
    if len(rows) == 2:
        sp_eval = rows[0]["ms"] / rows[1]["ms"]
        sp_check = rows[0].get("check_ms", np.nan) / rows[1].get("check_ms", np.nan)
        print(f"  2 vs 1 worker: x{sp_eval:.2f} speed-up per streaming evaluation, "
              f"x{sp_check:.2f} per full check")  # fmt: skip


def on_paper(n=1_000_000, d=64, k=3, workers=32, memory_limit=1 << 30):
    """Cost of one evaluation of a 1M-point fit on 32 workers (no measurement)."""
    from convexmetric.lmnn.blocks.data import plan_blocks

    block_rows = plan_blocks(n, d, k, memory_limit)[0]
    blocks = -(-n // block_rows)
    gemm = 2.0 * n * n * (d + 1)  # the float32 candidate GEMMs over all blocks
    z = 2.0 * n * d * d * workers  # Z = X Lᵀ, once per worker and evaluation (project)
    mem = n * d * 8 + n * k * 8 + block_rows * n * 16  # data replica + one block's distances
    tasks = min(blocks, MAX_TASKS)  # consecutive blocks share a task beyond MAX_TASKS
    traffic = tasks * (d * d * 8 + d * d * 8 + 64)  # L in, G and scalars out, per task
    print(f"\nOn paper, 1M points × {d}, k={k}, {workers} workers, {block_rows}-row blocks "
          f"(memory_limit {memory_limit >> 20} MiB) in {tasks} tasks:")  # fmt: skip
    print(f"  flops per evaluation: {gemm:.2e} (candidate GEMMs) + {z:.2e} (Z = X Lᵀ once "
          f"per worker) -> {(gemm + z) / workers:.2e} per worker")  # fmt: skip
    print(f"  memory per worker: {mem / 1e9:.2f} GB (a full replica of X, targets; one block)")
    data = n * (d + k + 1) * 8 / 1e9 * workers
    print(f"  traffic per evaluation: {traffic / 1e6:.1f} MB in all (L in, d×d partial sums "
          f"out); once per fit {data:.1f} GB to broadcast the data")  # fmt: skip
    print(
        "  (the exact recheck of candidate triplets adds O(candidates · d) per block; not counted)"
    )
    print("  a full check of the active-set mode: the same flops; it gathers the change of "
          "the violated set since the last check, 8 bytes a triplet (the first: all)")  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="digits only")
    ap.add_argument("--fit", action="store_true", help="also a full fit on digits")
    ap.add_argument("--evals", type=int, default=5)
    a = ap.parse_args()
    print("LMNN block map, local vs Dask LocalCluster (timings under load)")
    from convexmetric import LMNN

    Xtr, _, ytr, _ = datasets.load_split("digits")
    L = LMNN().fit(Xtr, ytr).components_  # a metric near the optimum, as most evaluations
    run("digits", a.evals, a.fit, L)
    if not a.quick:
        run("augmented_digits", a.evals, False, L)
    on_paper()


if __name__ == "__main__":
    main()
