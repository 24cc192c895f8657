"""A/B of two source trees on multi-metric LMNN: digits to 1e-3 against the single-metric fit.

Run: ``python benchmarks/ab_multi.py OTHER_TREE [CASES] [REPEATS] [--table PATH]`` from the
repository root, ``OTHER_TREE`` a checkout of the baseline (``git worktree add --detach /tmp/base
main``). Every run is a fresh process with ``PYTHONPATH`` set to one tree (one BLAS
thread), the two trees alternating and every case run once per round, so that a loaded
machine loads both trees and all cases alike. Prints each
case's deterministic counts (iterations, full checks, stages), whether
:func:`convexmetric.verify` accepts the result, the best-of-N times and the ratio this
tree over the other; for ``multi:digits:1e-3`` also the ratio to ``single:digits`` of the
same tree (the target: at most 2). ``--table`` writes the rows as one markdown table
(``benchmarks/results/ab_multi.md``). Cases (comma-separated; default all):

* ``single:digits``: ``LMNN(k=3, mu=0.5).fit`` (the default fit, tol 1e-4);
* ``multi:NAME:TOL[:C]``: ``MultiMetricLMNN(k=3, mu=0.5, tol=TOL)`` on a standard split
  (clusters = classes, or ``C`` k-means clusters with ``random_state=0``); ``seven`` is
  the seven instances of ``benchmarks/TUNING.md``; ``all`` the default list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

SEVEN = ("multi:iris:1e-4,multi:wine:1e-4,multi:breast_cancer:1e-4,multi:digits:1e-3,"
         "multi:digits:1e-4,multi:digits:1e-4:5,multi:wine:1e-4:3")  # fmt: skip
DEFAULT = "single:digits,multi:digits:1e-3," + SEVEN


def one(case):
    """One case in this process: a JSON line of its time, counts and verification."""
    from convexmetric import LMNN, MultiMetricLMNN, datasets, verify

    kind, name, *rest = case.split(":")
    X, _, y, _ = datasets.load_split(name)
    if kind == "single":
        est = LMNN(k=3, mu=0.5)
    else:
        c = int(rest[1]) if len(rest) > 1 else None
        est = MultiMetricLMNN(k=3, mu=0.5, tol=float(rest[0]), n_clusters=c, random_state=0)
    t = time.perf_counter()
    r = est.fit(X, y).result_
    sec = time.perf_counter() - t
    v = verify(est, X, y, tol=est.tol)  # the tolerance the case was fitted to
    print(json.dumps({"seconds": sec, "objective": r.objective, "lower": r.lower_bound,
                      "status": r.status, "iterations": r.iterations,
                      "full_checks": r.info.get("full_checks"),
                      "stages": r.info.get("stages"), "verified": bool(v.verified)}))  # fmt: skip


def main(other, cases=DEFAULT, repeats=3, table=None):
    trees = {"other": os.path.abspath(other), "this": os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))}  # fmt: skip
    cases = list(dict.fromkeys((DEFAULT if cases == "all" else cases).replace("seven", SEVEN)
                               .split(",")))  # fmt: skip
    rows = {case: {k: [] for k in trees} for case in cases}
    for _ in range(int(repeats)):  # cases within each round: a machine whose speed drifts
        for case in cases:  # over minutes moves every case of a round alike (the ratios)
            for k, tree in trees.items():
                env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
                cmd = [sys.executable, os.path.abspath(__file__), "--one", case]
                out = subprocess.check_output(cmd, env=env, cwd=tree, text=True)
                rows[case][k].append(json.loads(out.strip().splitlines()[-1]))
    best = {}
    for case in cases:
        for k in trees:
            print(case, k, {key: v for key, v in rows[case][k][-1].items() if key != "seconds"})
        best[case] = {k: min(o["seconds"] for o in rows[case][k]) for k in trees}
        b = best[case]
        print(
            f"{case}: best of {repeats}, this {b['this']:.3f} s, other {b['other']:.3f} s, "
            f"this/other {b['this'] / b['other']:.3f}",
            flush=True,
        )
    seven = [c for c in SEVEN.split(",") if c in best]
    if len(seven) == 7:
        tot = {k: sum(best[c][k] for c in seven) for k in trees}
        best["seven (sum of bests)"] = tot
        print(
            f"seven instances (sum of bests): this {tot['this']:.2f} s, other "
            f"{tot['other']:.2f} s, this/other {tot['this'] / tot['other']:.3f}"
        )
    ratios = {}
    if "single:digits" in best and "multi:digits:1e-3" in best:
        for k in trees:
            ratios[k] = best["multi:digits:1e-3"][k] / best["single:digits"][k]
            print(f"{k}: multi digits 1e-3 / single-metric default fit = {ratios[k]:.2f}")
    if table:
        _table(table, rows, best, ratios, repeats)


def _table(path, rows, best, ratios, repeats):
    from results_table import write_table

    out = []
    for case, b in best.items():
        last = rows.get(case, {}).get("this", [{}])[-1]
        out.append(
            {
                "case": case,
                "iterations": last.get("iterations", ""),
                "full checks": last.get("full_checks", ""),
                "verified": last.get("verified", ""),
                "this s": b["this"],
                "other s": b["other"],
                "this/other": b["this"] / b["other"],
            }
        )
    notes = [f"Best of {repeats} fresh processes per tree, alternating; counts of this tree."]
    notes += [
        f"{k}: multi-metric digits 1e-3 / single-metric default fit = {r:.2f}"
        for k, r in ratios.items()
    ]
    write_table(
        path,
        "A/B: multi-metric LMNN (ab_multi.py)",
        ["case", "iterations", "full checks", "verified", "this s", "other s", "this/other"],
        out,
        notes,
    )


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one(sys.argv[2])
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from results_table import table_argument

        args, table = table_argument(sys.argv[1:])
        main(*args, table=table)
