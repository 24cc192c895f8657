"""The row gathers of ``linalg.row_distances`` under two allocators, side by side.

Run from the repository root: ``python benchmarks/bench_gathers.py [--table PATH]``
(about a minute; ``--table benchmarks/results/bench_gathers.md`` writes the rows there).

``‖z_a − z_b‖²`` for 2,000,000 random pairs of a 30,000 × 164 matrix (a full check's
candidate pairs at the 60k rows' scale), two ways: *fresh*, a new array per chunk's
gather (the code before 2026-12-07), and *library*, ``row_distances`` today (each lane's
two chunk buffers allocated once per call). Each runs in a child interpreter with
glibc's defaults and with ``MALLOC_TRIM_THRESHOLD_=65536``, the setting Dask's nannies
give their workers (``distributed.nanny.pre-spawn-environ``): freed memory goes back to
the system at once, and a fresh 1 MiB chunk is paged in again each time. Best of three
calls; the values of both ways are checked equal bit for bit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, time
import numpy as np
from convexmetric.linalg import _chunk_rows, in_lanes, row_distances

def fresh(Z, a, b):
    out = np.empty(len(a))
    def body(s, e):
        diff = np.take(Z, a[s:e], axis=0)
        diff -= np.take(Z, b[s:e], axis=0)
        out[s:e] = np.einsum("ij,ij->i", diff, diff)
    in_lanes(len(a), _chunk_rows(Z, None), 1, body)
    return out

rng = np.random.default_rng(0)
Z = rng.standard_normal((30_000, 164))
a, b = rng.integers(0, 30_000, (2, 2_000_000))
row = {}
for name, fn in (("fresh", fresh), ("library", row_distances)):
    times = []
    for _ in range(3):
        t = time.perf_counter()
        out = fn(Z, a, b)
        times.append(time.perf_counter() - t)
    row[name] = min(times)
row["same"] = bool(np.array_equal(fresh(Z, a, b), row_distances(Z, a, b)))
print(json.dumps(row))
"""


COLUMNS = ["allocator", "fresh s", "library s", "library / fresh", "same values"]


def run(env):
    env = {**os.environ, **env}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.splitlines()[-1])


def main(table=None):
    print(f"{'allocator':34s} {'fresh s':>8s} {'library s':>9s} {'ratio':>6s} same")
    dask = {"MALLOC_TRIM_THRESHOLD_": "65536"}
    rows = []
    for label, env in (("glibc defaults", {}), ("MALLOC_TRIM_THRESHOLD_=65536 (Dask)", dask)):
        r = run({**env, "OMP_NUM_THREADS": "1"})
        ratio = r["library"] / r["fresh"]
        print(f"{label:34s} {r['fresh']:8.3f} {r['library']:9.3f} {ratio:6.2f} {r['same']}")
        cells = [label, r["fresh"], r["library"], ratio, r["same"]]
        rows.append(dict(zip(COLUMNS, cells)))
    if table:
        from results_table import write_table

        title = "Row gathers under two allocators (bench_gathers.py)"
        write_table(table, title, COLUMNS, rows, ["Best of 3 calls in each child."])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from results_table import table_argument

    args, table = table_argument(sys.argv[1:])
    main(table=table)
