"""Ball-tree vs brute-force impostor search (§6), and energy classification on digits.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_lmnn_ext.py [multi] [--table PATH]``.
Prints the side-by-side times of one full impostor search (all hinge terms of eq. 14 at
M = I) on a 20,000 × 5 problem, checks the searches return the same terms, and times
eq. (15) on the digits test set; then ``MultiMetricLMNN(k=3, mu=0.5)`` (§5.2) on the
digits standard split at tol 1e-3 and 1e-4: fit time, objective, lower bound, certified
gap, and the ratio to the single-metric default fit of the same run (``multi`` runs
only these). ``--table benchmarks/results/bench_lmnn_ext.md`` writes every row as one
markdown table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import make_classification

from convexmetric import LMNN, datasets
from convexmetric.lmnn.energy import energy_predict
from convexmetric.neighbors import target_neighbors
from convexmetric.problems import lmnn as P


def best_of(f, repeat=3):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def impostor_benchmark(n=20_000, d=5, repeat=3, table=None):
    X, y = make_classification(
        n_samples=n,
        n_features=d,
        n_informative=d,
        n_redundant=0,
        n_classes=4,
        n_clusters_per_class=1,
        class_sep=2.0,
        random_state=0,
    )
    T = target_neighbors(X, y, 3)
    M = np.eye(d)
    rows = {}
    for search in ("brute", "balltree", "kdtree"):
        rows[search] = best_of(lambda s=search: P.hinge_terms(M, X, T, y, search=s), repeat)
    ref = rows["brute"][1]
    key = np.sort((ref[0] * n + ref[1]) * n + ref[2])
    print(f"impostor search, {n} × {d}, k = 3, {len(key)} active hinge terms (best of {repeat})")
    for search, (t, out) in rows.items():
        same = np.array_equal(np.sort((out[0] * n + out[1]) * n + out[2]), key)
        if table is not None:
            table.append(
                {
                    "row": f"impostor search {n} × {d}, {search}",
                    "seconds": t,
                    "result": f"×{rows['brute'][0] / t:.1f} of brute; same terms: {same}",
                }
            )
        print(
            f"  {search:9s} {t:7.3f} s   speed-up ×{rows['brute'][0] / t:5.1f}   "
            f"same active set: {same}"
        )


def energy_benchmark(table=None):
    Xtr, Xte, ytr, yte = datasets.load_split("digits")
    m = LMNN(k=3, max_iter=300, refine=False).fit(Xtr, ytr)
    t, pred = best_of(lambda: energy_predict(m._X, m._y, m.targets_, Xte, m.components_, 0.5))
    err, knn = np.mean(m.classes_[pred] != yte), np.mean(m.predict(Xte) != yte)
    print(
        f"energy classification, digits test set ({len(yte)} × {Xte.shape[1]}): {t:.2f} s, "
        f"error {err:.2%} (kNN {knn:.2%})"
    )
    if table is not None:
        table.append(
            {
                "row": f"energy classification, digits test ({len(yte)})",
                "seconds": t,
                "result": f"error {err:.2%} (kNN {knn:.2%})",
            }
        )


def multi_metric_benchmark(name="digits", tols=(1e-3, 1e-4), time_limit=600.0, table=None):
    """``MultiMetricLMNN(k=3, mu=0.5)`` end to end (single-metric start included), per tol."""
    from convexmetric import MultiMetricLMNN

    Xtr, _, ytr, _ = datasets.load_split(name)
    print(f"multi-metric LMNN on {name} ({Xtr.shape[0]} x {Xtr.shape[1]}, "
          f"{len(np.unique(ytr))} metrics), MultiMetricLMNN(k=3, mu=0.5)")  # fmt: skip
    t = time.perf_counter()
    LMNN(k=3, mu=0.5).fit(Xtr, ytr)
    single = time.perf_counter() - t
    print(f"  single-metric default fit (tol 1e-4), same run: {single:6.2f} s")
    if table is not None:
        table.append({"row": f"LMNN(k=3, mu=0.5) on {name}", "seconds": single})
    for tol in tols:
        t, cpu = time.perf_counter(), time.process_time()
        m = MultiMetricLMNN(k=3, mu=0.5, tol=tol, time_limit=time_limit).fit(Xtr, ytr)
        sec, cpu = time.perf_counter() - t, time.process_time() - cpu
        r, s = m.result_, m.single_.result_
        gap = r.info.get("certified_gap", float("nan"))
        print(f"  tol {tol:.0e}: fit {sec:6.1f} s, CPU {cpu:6.1f} s "
              f"(single-metric start {s.seconds:5.1f} s, "
              f"multi-metric solver {r.seconds:5.1f} s)  objective {r.objective:.4f}  "
              f"lower bound {r.lower_bound:.4f}  certified gap {gap:.2e}  status {r.status}  "
              f"evals {r.iterations} (polish {r.info.get('polish_evaluations')})")  # fmt: skip
        print(f"           multi fit / single-metric default fit: {sec / single:5.2f}")
        if table is not None:
            table.append(
                {
                    "row": f"MultiMetricLMNN on {name}, tol {tol:.0e}",
                    "seconds": sec,
                    "result": f"{sec / single:.2f}× the single fit; {r.iterations} "
                    f"evaluations, objective {r.objective:.4f}, gap {gap:.2e}, {r.status}",
                }
            )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="?", choices=["multi"], help="the multi-metric rows only")
    ap.add_argument("--table", default=None, help="also write the rows as a markdown table")
    args = ap.parse_args(argv)
    rows = []
    if args.only != "multi":
        impostor_benchmark(table=rows)
        energy_benchmark(table=rows)
    multi_metric_benchmark(table=rows)
    if args.table:
        from results_table import write_table

        write_table(
            args.table,
            "LMNN extensions: ball tree, energy, multi-metric (bench_lmnn_ext.py)",
            ["row", "seconds", "result"],
            rows,
            ["Best of 3 for the search and the energy rows; one fit each for the LMNN rows."],
        )


if __name__ == "__main__":
    main()
