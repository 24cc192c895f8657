"""LMNN on a GPU: certified fits at 60,000, 240,000 and 10⁶ points, verified on the CPU.

One command on a machine with a CUDA GPU and PyTorch or CuPy (the MNIST rows need
``pip install -e ".[gpu,mnist]"``):

    python benchmarks/bench_gpu.py                         # rows 60k,240k,check1m on "cuda"
    python benchmarks/bench_gpu.py --rows 60k,240k,1m      # the 10⁶-point fit too
    python benchmarks/bench_gpu.py --device torch:cpu --rows 60k --max-n 3000   # a dry run
    python benchmarks/bench_gpu.py --device cpu --n-jobs 1 --rows 60k,240k      # one thread
    python benchmarks/bench_gpu.py --device cpu --scheduler local:2 --rows 240k  # on Dask

Rows:

- ``60k``: augmented MNIST as in :func:`convexmetric.datasets.augmented_mnist` (each of the
  4,000 training images of the MNIST sample and 14 moves of it), PCA-164;
- ``240k``: the same with 59 moves (24 shifts of up to two pixels, 35 rotations of
  ±1° … ±17° and 18°): 60 versions of each image, PCA-164 fitted on them;
- ``1m``: 10⁶ × 164 Gaussian classes (:func:`convexmetric.datasets.synthetic_classes`,
  10 classes), 10,000 more points as the test part;
- ``check1m``: no fit; one full check and one streamed evaluation at 10⁶ points of the
  ``1m`` row, at the Euclidean metric (LMNN's start).

Each fit row runs ``LMNN(device=..., time_limit=...)`` (default settings otherwise, the
solver's own one BLAS thread on the host), then :func:`convexmetric.verify` on the CPU
in float64 (all BLAS threads), and reports: the fit's seconds, the block work's seconds
(``result_.info["block_seconds"]``: full checks and streamed sums, on the device) and
its share, status, certified gap, eq. (14) objective, the verification's seconds and
verdict, 3-NN test error against Euclidean, peak host RSS (after the fit, with the data:
``fit_peak_rss_gib``; after the verification too: ``peak_rss_gib``) and peak device memory.
JSON rows go to ``--json``. ``--scheduler`` (``local:N`` or an address) fits with
``backend="dask"`` on that cluster instead and adds each worker's peak RSS
(``worker_peak_rss_gib``) and the solver's own clock (``solver_seconds``). The issue's
targets on one H100: 60,000 certified ≤ 1e-4 in ≤ 10 s, 240,000 in ≤ 60 s, 10⁶ in
≤ 15 min, each verified on the CPU.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import numpy as np

from convexmetric import LMNN, datasets, verify
from convexmetric.datasets.mnist import augmented_mnist
from convexmetric.neighbors import knn_error, target_neighbors

#: the 59 moves of the 240,000-point row
MOVES_240K = tuple(
    [("shift", (dy, dx)) for dy in range(-2, 3) for dx in range(-2, 3) if (dy, dx) != (0, 0)]
    + [("rotate", float(a)) for a in range(-17, 18) if a != 0]
    + [("rotate", 18.0)]
)


def _mnist(moves):
    def load():
        Xtr, Xte, ytr, yte, _ = augmented_mnist(moves=moves) if moves else augmented_mnist()
        return Xtr.astype(np.float64), Xte.astype(np.float64), ytr, yte

    return load


def _synthetic(n=1_000_000, test=10_000):
    X, y = datasets.synthetic_classes(n + test, 164, 10, random_state=0)
    return X[:n], X[n:], y[:n], y[n:]


ROWS = {"60k": _mnist(None), "240k": _mnist(MOVES_240K), "1m": _synthetic}


def _subsample(data, max_n, seed=0):
    Xtr, Xte, ytr, yte = data
    if max_n is None or len(ytr) <= max_n:
        return data
    keep = np.sort(np.random.default_rng(seed).choice(len(ytr), max_n, replace=False))
    return Xtr[keep], Xte, ytr[keep], yte


def _device_peak():
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
        return sys.modules["torch"].cuda.max_memory_allocated() / 2**30
    return None


def _peak_rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _fit(Xtr, ytr, device, time_limit, n_jobs, scheduler):
    """``(model, seconds, workers' peak RSS or None)``."""
    if scheduler is None:
        t0 = time.perf_counter()
        model = LMNN(device=device, time_limit=time_limit, n_jobs=n_jobs).fit(Xtr, ytr)
        return model, time.perf_counter() - t0, None
    from convexmetric.lmnn.blocks.dask_executor import dask_client

    with dask_client(scheduler) as client:
        t0 = time.perf_counter()
        model = LMNN(backend="dask", time_limit=time_limit, n_jobs=n_jobs).fit(Xtr, ytr)
        fit = time.perf_counter() - t0
        workers = sorted(client.run(_peak_rss_gib).values())
    return model, fit, workers


def fit_row(name, device, time_limit, max_n, n_jobs=None, scheduler=None, check=True):
    t0 = time.perf_counter()
    Xtr, Xte, ytr, yte = _subsample(ROWS[name](), max_n)
    built = time.perf_counter() - t0
    model, fit, workers = _fit(Xtr, ytr, device, time_limit, n_jobs, scheduler)
    fit_rss = _peak_rss_gib()  # data and fit
    res = model.result_
    t0 = time.perf_counter()
    v = verify(model, Xtr, ytr) if check else None
    check = time.perf_counter() - t0
    L = model.components_
    block = res.info.get("block_seconds", 0.0)
    return {"row": name, "shape": list(Xtr.shape), "device": device, "n_jobs": n_jobs,
            "threads": res.info.get("threads"), "scheduler": scheduler, "data_seconds": built,
            "fit_seconds": fit, "solver_seconds": res.seconds,
            "block_seconds": block, "block_share": block / fit,
            "block_seconds_by_map": res.info.get("block_seconds_by_map"),
            "searches": res.info.get("searches"), "partial_checks": res.info.get("partial_checks"),
            "status": res.status, "certified_gap": res.certified_gap,
            "objective": model.objective_, "mode": res.info.get("mode"),
            "verify_seconds": check, "verified": v and v.verified,
            "verify_reason": v and v.reason, "verified_objective": v and v.objective,
            "knn_error": knn_error(Xtr @ L.T, ytr, Xte @ L.T, yte, 3),
            "euclidean_error": knn_error(Xtr, ytr, Xte, yte, 3),
            "fit_peak_rss_gib": fit_rss, "worker_peak_rss_gib": workers,
            "peak_rss_gib": _peak_rss_gib(),
            "device_peak_gib": _device_peak()}  # fmt: skip


def check_row(device, max_n):
    """One full check and one streamed evaluation at 10⁶ points (no fit)."""
    from convexmetric.lmnn.blocks.device import DeviceExecutor
    from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
    from convexmetric.lmnn.terms import pull_matrix

    Xtr, _, ytr, _ = _subsample(_synthetic(), max_n)
    ex = DeviceExecutor(device)
    t0 = time.perf_counter()
    T = target_neighbors(Xtr, ytr, 3, screen=ex.screen_targets)  # the screen on the device
    targets = time.perf_counter() - t0
    S = StreamingEvaluator(Xtr, ytr, T, 0.5, pull_matrix(Xtr, T), executor=ex)
    L = np.eye(Xtr.shape[1])  # the Euclidean metric, LMNN's start
    out = {"row": "check1m", "shape": list(Xtr.shape), "device": device,
           "targets_seconds": targets, "block_rows": S.block_rows}  # fmt: skip
    for key, call in (("check", lambda: S.terms(L)), ("evaluation", lambda: S.sums(L, None))):
        call()  # warm-up: the data's transfer, the library's kernels
        t0 = time.perf_counter()
        got = call()
        out[f"{key}_seconds"] = time.perf_counter() - t0
        out[f"{key}_terms"] = len(got[0]) if key == "check" else got["count"]
    out["device_peak_gib"] = _device_peak()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="60k,240k,check1m", help="comma-separated rows")
    ap.add_argument("--device", default="cuda", help="LMNN's device (default: cuda)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per fit")
    ap.add_argument("--max-n", type=int, default=None, help="subsample the training part")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    ap.add_argument("--n-jobs", type=int, default=None, help="LMNN's n_jobs (with --device cpu)")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the verification (a rerun of a verified fit)")  # fmt: skip
    ap.add_argument("--scheduler", default=None,
                    help="fit on Dask: local:N (N worker processes) or an address")  # fmt: skip
    args = ap.parse_args(argv)
    out = []
    for name in args.rows.split(","):
        fit = (name, args.device, args.time_limit, args.max_n, args.n_jobs, args.scheduler,
               not args.no_verify)  # fmt: skip
        row = check_row(args.device, args.max_n) if name == "check1m" else fit_row(*fit)
        out.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    print(f"\n{'row':8s} {'n × d':>14s} {'fit s':>7s} {'block s':>8s} {'share':>6s} "
          f"{'gap':>8s} {'verify s':>8s} ok  {'3-NN':>6s} {'eucl.':>6s}")  # fmt: skip
    verdict = {True: "yes", False: "NO ", None: " - "}
    for r in out:
        if r["row"] == "check1m":
            print(f"check1m {r['shape'][0]:>8d} × {r['shape'][1]}: full check "
                  f"{r['check_seconds']:.2f} s ({r['check_terms']} triplets), evaluation "
                  f"{r['evaluation_seconds']:.2f} s")  # fmt: skip
            continue
        print(f"{r['row']:8s} {r['shape'][0]:>8d} × {r['shape'][1]:<3d} {r['fit_seconds']:7.1f} "
              f"{r['block_seconds']:8.1f} {r['block_share']:6.2f} {r['certified_gap']:8.1e} "
              f"{r['verify_seconds']:8.1f} {verdict[r['verified']]} "
              f"{r['knn_error']:6.3f} {r['euclidean_error']:6.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
