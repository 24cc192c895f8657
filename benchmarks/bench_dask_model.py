"""A cost model of LMNN's fit on Dask, fitted to measured runs and checked on one it was not.

Run from the repository root (needs ``pip install -e ".[test,mnist]"`` for dask.distributed
and the MNIST sample): ``python benchmarks/bench_dask_model.py [--table PATH]``.

Measured, all on augmented MNIST (``datasets.augmented_mnist``, PCA-164, k = 3, μ = 0.5,
the default ``LMNN``): in this process (``backend="local"``) at n = 16,000, 32,000 and
60,000 points, and on a ``LocalCluster(n_workers=w, threads_per_worker=1)`` with w = 1 and
2 at 16,000 points and w = 2 at 32,000 points. Each fit reports its wall time, the block
work's wall time as the client saw it (``info["block_seconds"]``: full checks, exact
objectives, streamed sums), its full checks and the Dask payload per check
(``info["bytes_received_per_check"]``).

The model. A fit's time is its host part (the active list's evaluations, L-BFGS, the
certificate: one thread in the client, whatever the cluster) plus its block work spread
over ``w`` workers plus a cost per full check on a cluster (task round trips, the
payload):

    T(n, w) = H(n) + B(n)/w + c(n)·τ,

``H = T_local − B_local`` and ``B`` the local block seconds (one thread), each fitted as a
power of ``n`` over the three local runs; ``c(n)`` the full checks of the local run; ``τ``
the per-check overhead fitted to the two 16,000-point Dask runs. The check: the 32,000
point 2-worker run, predicted from the local 32,000 run and τ before it is measured. The
prediction at 10⁶ points extrapolates ``H``, ``B`` and ``c`` by their fitted powers (an
assumption the table states). It models today's design, whose host part does not shrink
with workers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from convexmetric import LMNN, datasets
from convexmetric.datasets.mnist import AUGMENT_MOVES

SIZES = {16_000: 3, 32_000: 7, 60_000: 14}  # points: moves per image (4,000 images)


def data(n):
    X, _, y, _, _ = datasets.augmented_mnist(moves=AUGMENT_MOVES[: SIZES[n]])
    return X, y


def fit(X, y, backend="local"):
    start = time.perf_counter()
    res = LMNN(backend=backend).fit(X, y).result_
    info = res.info
    return {
        "seconds": time.perf_counter() - start,
        "block": float(info.get("block_seconds", 0.0)),
        "checks": int(info.get("full_checks", 0)),
        "bytes_per_check": info.get("bytes_received_per_check"),
        "status": res.status,
        "gap": res.certified_gap,
    }


def on_cluster(X, y, workers):
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster),
    ):
        return fit(X, y, backend="dask")


def power(ns, values):
    """``(a, p)`` with ``values ≈ a·nᵖ`` (least squares in logs)."""
    p, log_a = np.polyfit(np.log(ns), np.log(np.maximum(values, 1e-9)), 1)
    return float(np.exp(log_a)), float(p)


def model(local, dask16):
    """The fitted pieces: H(n), B(n), c(n) as powers, and τ per full check."""
    ns = sorted(local)
    H = power(ns, [local[n]["seconds"] - local[n]["block"] for n in ns])
    B = power(ns, [local[n]["block"] for n in ns])
    C = power(ns, [local[n]["checks"] for n in ns])
    # τ from the 1- and 2-worker runs at 16k: T_w - H - B/w over the checks, averaged
    h, b, c = (
        local[16_000]["seconds"] - local[16_000]["block"],
        local[16_000]["block"],
        dask16[1]["checks"],
    )
    tau = float(np.mean([(dask16[w]["seconds"] - h - b / w) / max(c, 1) for w in (1, 2)]))
    return {"H": H, "B": B, "C": C, "tau": tau}


def predict(m, n, w, measured=None):
    """``T(n, w)``; the pieces of a measured local run when given, else the fitted powers."""
    if measured is not None:
        h, b, c = measured["seconds"] - measured["block"], measured["block"], measured["checks"]
    else:
        h, b, c = (a * n**p for a, p in (m["H"], m["B"], m["C"]))
    return h + b / w + c * m["tau"], h, b, c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="write the table (Markdown) to this path")
    a = ap.parse_args(argv)
    local = {n: fit(*data(n)) for n in SIZES}
    for n, r in local.items():
        print(f"local {n:>7,}: {r}", flush=True)
    X, y = data(16_000)
    dask16 = {w: on_cluster(X, y, w) for w in (1, 2)}
    for w, r in dask16.items():
        print(f"dask {w} worker(s) 16,000: {r}", flush=True)
    m = model(local, dask16)
    print("fitted:", m)
    guess = predict(m, 32_000, 2, local[32_000])[0]
    held = on_cluster(*data(32_000), 2)
    print(
        f"held-out: 32,000 on 2 workers predicted {guess:.1f} s, measured {held['seconds']:.1f}"
        f" s (ratio {held['seconds'] / guess:.2f}); {held}"
    )
    rows = []
    for w in (1, 8, 32, 128):
        t, h, b, c = predict(m, 1_000_000, w)
        rows.append(
            {
                "workers": w,
                "predicted s": t,
                "host s": h,
                "block s / w": b / w,
                "checks × τ": c * m["tau"],
            }
        )
        print(
            f"10⁶ × 164 on {w:>3} workers: {t:,.0f} s (host {h:,.0f}, blocks {b / w:,.0f},"
            f" check overhead {c * m['tau']:,.0f})"
        )
    if a.table:
        from results_table import write_table

        notes = [
            f"local runs: {local}",
            f"Dask at 16,000: {dask16}",
            f"fitted: {m}",
            f"held-out 32,000 on 2 workers: predicted {guess:.1f} s, measured "
            f"{held['seconds']:.1f} s",
        ]
        write_table(
            a.table,
            "LMNN on Dask: the cost model (bench_dask_model.py)",
            list(rows[0]),
            rows,
            notes,
        )


if __name__ == "__main__":
    main()
