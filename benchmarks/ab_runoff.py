"""Multi-metric LMNN from nearby starts, with and without the run-off back-off.

Run: ``python benchmarks/ab_runoff.py [NAME] [TOL] [STARTS] [REPEATS] [--table PATH]`` from
the repository root (defaults: ``digits 1e-3 90,100,109,120,130,140,159 2``). Each start is
the single-metric LMNN fit stopped after that many iterations (159: the estimator's own
start, certified to 1e-2), and the multi-metric solve from it runs with
``backoff=None`` and with the solver's :data:`~convexmetric.lmnn.constants.BACKOFF`,
alternating in one process (one BLAS thread), best of ``REPEATS``. Printed per start:
the iterations, back-offs, the largest active list any check built, the certified gap,
whether :func:`convexmetric.verify` accepts the result, the seconds of both and their
ratio; then the sums and the worst case of each. ``--table`` writes the rows as one
markdown table (``benchmarks/results/ab_runoff.md``).

The solve is sensitive to its start: the first list-only stage runs off on its stale
list, and the next check lists every term near the run-off's point (up to 10⁵ and more),
which the next stage pays for at every evaluation (``benchmarks/TUNING.md``).
"""

from __future__ import annotations

import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from convexmetric import LMNN, datasets, verify
from convexmetric.linalg import components_from_metric
from convexmetric.lmnn import MultiMetricLMNN
from convexmetric.lmnn.multi import oracle as multi_oracle
from convexmetric.lmnn.multi import solver as SM
from convexmetric.neighbors import target_neighbors


def _largest_list():
    """Track the largest list that ``MultiMetricOracle._set`` builds (a benchmark probe)."""
    seen = [0]
    original = multi_oracle.MultiMetricOracle._set

    def probe(self, keys):
        seen[0] = max(seen[0], len(keys))
        return original(self, keys)

    multi_oracle.MultiMetricOracle._set = probe
    return seen


def _verified(X, y, T, res, tol):
    """:func:`convexmetric.verify` of ``res`` as a fitted estimator of these data."""
    est = MultiMetricLMNN(k=T.shape[1], mu=0.5, tol=tol)
    est.metrics_, est.result_ = np.stack([0.5 * (M + M.T) for M in res.matrices]), res
    est.components_ = np.stack([components_from_metric(M) for M in est.metrics_])
    est.objective_, est.targets_, est.clusters_ = res.objective, T, y
    est.classes_ = np.unique(y)
    return bool(verify(est, X, y, targets=T, tol=tol).verified)


def main(name="digits", tol="1e-3", starts="90,100,109,120,130,140,159", repeats="2", table=None):
    tol, repeats = float(tol), int(repeats)
    X, _, y, _ = datasets.load_split(name)
    y = np.unique(y, return_inverse=True)[1]
    T = target_neighbors(X, y, 3)
    seen, total, worst, out = _largest_list(), {}, {}, []
    for m in (int(s) for s in starts.split(",")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            single = LMNN(k=3, mu=0.5, tol=max(tol, 1e-2), max_iter=m).fit(X, y, targets=T)
        row, best = {}, {}
        for _ in range(repeats):
            for label, backoff in (("without", None), ("with", SM.BACKOFF)):
                seen[0] = 0
                t = time.perf_counter()
                res = SM.solve(X, y, T, 0.5, y, int(y.max()) + 1, M0=single.metric_,
                               subgradient_iter=1, tol=tol,
                               refine_settings={"backoff": backoff})  # fmt: skip
                sec = time.perf_counter() - t
                best[label] = min(best.get(label, np.inf), sec)
                row[label] = (res, seen[0])
        cells = []
        for label in ("without", "with"):
            res, largest = row[label]
            gap = res.info["certified_gap"]
            ok = _verified(X, y, T, res, tol)
            backoffs = res.info.get("backoffs", 0)
            cells.append(f"{label}: {res.iterations} it, {backoffs} back-offs, list ≤ {largest}, "
                         f"gap {gap:.2e}, verified {ok}, {best[label]:.3f} s")  # fmt: skip
            total[label] = total.get(label, 0.0) + best[label]
            worst[label] = max(worst.get(label, 0.0), best[label])
        ratio = best["with"] / best["without"]
        out.append(
            {
                "start (iterations)": m,
                **{f"iterations {lab}": row[lab][0].iterations for lab in row},
                **{f"list ≤ {lab}": row[lab][1] for lab in row},
                "s without": best["without"],
                "s with": best["with"],
                "with/without": ratio,
            }
        )
        head = f"start {m} it ({single.objective_:.2f}): "
        print(head + "; ".join(cells) + f"; with/without {ratio:.2f}", flush=True)
    both = total["with"] / total["without"]
    print(f"sum of bests: with {total['with']:.2f} s, without {total['without']:.2f} s, "
          f"with/without {both:.2f}; worst: with {worst['with']:.2f} s, "
          f"without {worst['without']:.2f} s")  # fmt: skip
    if table:
        from results_table import write_table

        write_table(
            table,
            f"Run-off back-off, {name} to {tol:g} (ab_runoff.py)",
            list(out[0]),
            out,
            [
                f"Best of {repeats}, alternating in one process; sums of bests: "
                f"with {total['with']:.2f} s, without {total['without']:.2f} s."
            ],
        )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from results_table import table_argument

    args, table = table_argument(sys.argv[1:])
    main(*args, table=table)
