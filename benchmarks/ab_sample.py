"""A/B on the MNIST sample: this tree, another tree and pylmnn, alternating, one script.

Run: ``python benchmarks/ab_sample.py OTHER_TREE [REPEATS] [--table PATH]`` from the
repository root,
``OTHER_TREE`` a checkout of the baseline (``git worktree add --detach /tmp/base main``).
Each of our fits is a fresh process with ``PYTHONPATH`` set to one tree and one BLAS
thread, ``LMNN(k=3, mu=0.5).fit`` on the 4,000 × 164 PCA training part of
``datasets.load_split("mnist")`` (``bench_mnist.py``'s ``sample`` row), verified with
:func:`convexmetric.verify`; pylmnn 1.6.4's default fit runs in its own venv as in
``bench_mnist.py`` (``$PYLMNN_PYTHON``, else ``/work/peers/pylmnn/bin/python``; skipped
when absent), its map scored with our eq. (14). The three alternate ``REPEATS`` times
(default 3), so a loaded machine loads them alike; the table gives every time, the
best-of ratios this/pylmnn and this/other, and the objectives. ``--table`` writes them
as one markdown table (``benchmarks/results/ab_sample.md``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def one():
    """Our fit in this process: a JSON line (seconds, objective, gap, verified)."""
    import time

    sys.path.insert(0, HERE)
    import bench_mnist as B

    from convexmetric import LMNN, datasets, verify

    X, y = B.prepared(*datasets.load_split("mnist"))[:2]
    t = time.perf_counter()
    est = LMNN(k=3, mu=0.5).fit(X, y)
    sec = time.perf_counter() - t
    r = est.result_
    print(json.dumps({"seconds": sec, "objective": r.objective, "gap": r.certified_gap,
                      "verified": bool(verify(est, X, y).verified)}))  # fmt: skip


def pylmnn():
    sys.path.insert(0, HERE)
    import bench_mnist as B

    from convexmetric import datasets

    python = B.default_python("PYLMNN_PYTHON", "/work/peers/pylmnn/bin/python")
    out = B.peer("pylmnn", python, B.prepared(*datasets.load_split("mnist")))
    print(json.dumps(out and {"seconds": out["seconds"], "objective": out["objective"]}))


def main(other, repeats=3, table=None):
    this = os.path.dirname(HERE)
    runs = {"this": [], "other": [], "pylmnn": []}
    for _ in range(int(repeats)):
        for name, tree, arg in (("this", this, "--one"), ("other", os.path.abspath(other),
                                "--one"), ("pylmnn", this, "--pylmnn")):  # fmt: skip
            env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1",
                       OPENBLAS_NUM_THREADS="1")  # fmt: skip
            script = os.path.join(tree, "benchmarks", "ab_sample.py")
            if not os.path.exists(script):
                script = os.path.abspath(__file__)  # (an older tree: this script, its code)
            out = subprocess.check_output([sys.executable, script, arg], env=env, cwd=tree,
                                          text=True)  # fmt: skip
            row = json.loads(out.strip().splitlines()[-1])
            if row is not None:
                runs[name].append(row)
                print(name, row, flush=True)
    best = {k: min(r["seconds"] for r in v) for k, v in runs.items() if v}
    print("best of", repeats, {k: round(v, 2) for k, v in best.items()})
    for k in ("pylmnn", "other"):
        if k in best:
            print(f"this/{k} = {best['this'] / best[k]:.2f}")
    if table:
        _table(table, runs, best, repeats)


def _table(path, runs, best, repeats):
    from results_table import write_table

    rows = [
        {
            "fit": k,
            "times s": ", ".join(f"{r['seconds']:.2f}" for r in v),
            "best s": best[k],
            "this/it": best["this"] / best[k],
            "objective": f"{v[-1]['objective']:.10g}",
            "gap": v[-1].get("gap", ""),
            "verified": v[-1].get("verified", ""),
        }
        for k, v in runs.items()
        if v
    ]
    write_table(
        path,
        "A/B on the MNIST sample, 4,000 × 164 (ab_sample.py)",
        ["fit", "times s", "best s", "this/it", "objective", "gap", "verified"],
        rows,
        [
            f"Best of {repeats}, alternating fresh processes, one BLAS thread; "
            "pylmnn's objective is its map scored with eq. (14)."
        ],
    )


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one()
    elif sys.argv[1] == "--pylmnn":
        pylmnn()
    else:
        sys.path.insert(0, HERE)
        from results_table import table_argument

        args, table = table_argument(sys.argv[1:])
        main(*args, table=table)
