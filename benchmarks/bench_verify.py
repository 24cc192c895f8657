"""The independent verifier against the fit it checks, side by side in one run.

Run from the repository root (the MNIST rows need ``pip install -e ".[mnist]"``):

    python benchmarks/bench_verify.py                       # every row
    python benchmarks/bench_verify.py --rows wine,digits    # chosen rows

For each row: our default ``LMNN().fit`` (one BLAS thread, as the solver runs), then
``convexmetric.verify`` on the same data (brute force over row blocks in float64, the
bound recomputed from the certificate); the table gives both times, their ratio, the
recomputed objective against the stored one and whether the certificate verified.
The target at 60,000 × 164 (``augmented``): the verification in at most a quarter of
the fit's time. ``--table benchmarks/results/bench_verify.md`` writes the rows as the
one markdown table of this benchmark.
"""

from __future__ import annotations

import argparse
import json
import time

from threadpoolctl import threadpool_limits

from convexmetric import LMNN, datasets, verify

ROWS = {
    "wine": lambda: datasets.load_split("wine"),
    "digits": lambda: datasets.load_split("digits"),
    "mnist": lambda: datasets.load_split("mnist"),
    "augmented": lambda: datasets.augmented_mnist()[:4],
}


def row(name):
    Xtr, _, ytr, _ = ROWS[name]()
    with threadpool_limits(1, user_api="blas"):
        t0 = time.perf_counter()
        model = LMNN().fit(Xtr, ytr)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        v = verify(model, Xtr, ytr)
        check = time.perf_counter() - t0
    return {"row": name, "shape": list(Xtr.shape), "fit_seconds": fit,
            "verify_seconds": check, "ratio": check / fit, "status": model.result_.status,
            "objective": v.objective, "stored": v.reported_objective,
            "certified_gap": v.certified_gap, "verified": v.verified}  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    ap.add_argument("--table", default=None, help="also write the rows as a markdown table")
    args = ap.parse_args(argv)
    out = []
    print(f"{'row':10s} {'n × d':>12s} {'fit s':>8s} {'verify s':>9s} {'ratio':>6s} "
          f"{'gap':>8s} verified")  # fmt: skip
    for name in args.rows.split(","):
        r = row(name)
        out.append(r)
        shape = f"{r['shape'][0]} × {r['shape'][1]}"
        print(f"{name:10s} {shape:>12s} {r['fit_seconds']:8.2f} {r['verify_seconds']:9.2f} "
              f"{r['ratio']:6.3f} {r['certified_gap']:8.1e} {r['verified']}",
              flush=True)  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    if args.table:
        from results_table import write_table

        for r in out:
            r["n × d"] = f"{r['shape'][0]} × {r['shape'][1]}"
            r["objective"], r["stored"] = f"{r['objective']:.10g}", f"{r['stored']:.10g}"
        columns = [
            "row",
            "n × d",
            "fit_seconds",
            "verify_seconds",
            "ratio",
            "status",
            "objective",
            "stored",
            "certified_gap",
            "verified",
        ]
        write_table(
            args.table,
            "The verifier against the fit (bench_verify.py)",
            columns,
            out,
            ["One BLAS thread; `LMNN().fit`, then `convexmetric.verify` on the same data."],
        )


if __name__ == "__main__":
    main()
