"""Bytes per listed triplet of LMNN's active list (``active_list.BYTES_PER_TERM``), measured.

Run from the repository root: ``python benchmarks/bench_list_memory.py [--data mnist]
[--table benchmarks/results/bench_list_memory.md]``.

On the MNIST sample (PCA-164, 4,000 points, k = 3; ``--data digits`` for a quick run) the
oracle is built at a scaled identity metric (three times the inverse median squared
distance: a long list, as phase 1's early iterates see) and each of its list operations
runs under :mod:`tracemalloc` (numpy reports its arrays to it; tracing starts before the
full check). Per listed term it prints the list's own arrays (``nbytes``) and the peak
of all traced memory while each operation runs (the list, the search's memo, and the
operation's temporaries): the full check's search, a merge into an empty list, a merge of
1% new terms into the full list (old and new list side by side), an evaluation (every
term new to the incremental gradient), a smoothed evaluation (and its factor form) and a
certificate bound (with its kept dual point). The largest peak is what one listed term
may cost; ``BYTES_PER_TERM`` is set from it, rounded up to a multiple of 64. The peaks
also hold data-sized arrays (``Z = X Lᵀ``, the search's block buffers: about
``(8·n·d + 20·512·n) / terms`` bytes here, a few per term).
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np

from convexmetric import datasets
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.neighbors import target_neighbors


def _peak(fn):
    """``(result, peak of traced memory while it ran)``: everything traced, the list's
    and the search's arrays included."""
    tracemalloc.reset_peak()
    out = fn()
    return out, tracemalloc.get_traced_memory()[1]


def _list_bytes(o):
    arrays = [vars(o).get(a) for a in ("keys", "I", "J", "L", "slot", "_pair_of",
                                       "_pair_I", "_pair_L")]  # fmt: skip
    arrays += list(o.active.terms.mask.values())
    return sum(a.nbytes for a in arrays if a is not None)


def _merges(o, M, L):
    """Peaks of a merge into the empty list and of 1% more terms into the full one (the
    candidates are dropped on return, as a full check drops them after its merge)."""
    I, J, Lx = o.active.search(M, L, None)  # (remembered: no second search)
    late = np.random.default_rng(0).random(len(I)) < 0.01  # 1% come at a later check
    return {
        "merge from empty": _peak(lambda: o.active.terms.merge(I[~late], J[~late], Lx[~late]))[1],
        "merge 1% into the list": _peak(lambda: o.active.terms.merge(I[late], J[late], Lx[late]))[
            1
        ],
    }


def measure(X, y, k=3, mu=0.5):
    """Per-term bytes of the list and of each operation's peak (a dict)."""
    T = target_neighbors(X, y, k)
    o = ActiveSetOracle(X, y, T, mu, memory_limit=None, prune=None)
    d = X.shape[1]
    # a scaled identity with a long list (MNIST sample: 1.7 million terms), so that the
    # list, not the data-sized arrays, dominates every peak
    sub = X[:200]
    med = float(np.median(((sub[:, None] - sub[None]) ** 2).sum(-1)))
    L = np.sqrt(3.0 / med) * np.eye(d)
    M = L.T @ L
    tracemalloc.start()
    try:
        # a full check's candidates (the search's memo keeps its own)
        out = {"search": _peak(lambda: o.active.search(M, L, None))[1]}
        out.update(_merges(o, M, L))
        m = len(o.active.terms.I)
        o.active.schedule.next = o.active.calls + 10**9  # no full check inside the evaluations
        out["evaluation"] = _peak(lambda: o(M, L))[1]
        o.active.terms.mask["lam"] = np.full(m, 0.5)
        out["smoothed evaluation"] = _peak(lambda: o.smooth(M, 0.03, components=L))[1]
        out["smoothed, factor form"] = _peak(lambda: o.smooth_factor(M, 0.03, L))[1]
        o.active.tol = 1e-4
        out["bound"] = _peak(lambda: o.lower_bound(M, 0.03, F=None))[1]
    finally:
        tracemalloc.stop()
    return {"terms": m, "list's own arrays": _list_bytes(o), **out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="mnist", help="a data set of convexmetric.datasets")
    ap.add_argument("--table", default=None, help="also write the rows as a markdown table")
    args = ap.parse_args()
    X, _, y, _ = datasets.load_split(args.data)
    out = measure(X, y)
    m = out.pop("terms")
    print(f"{args.data}: n = {len(X)}, d = {X.shape[1]}, {m} listed terms at a scaled identity")
    for name, b in out.items():
        print(f"  {name:26s} {b / m:7.1f} bytes per term")
    print(f"  largest peak              {max(out.values()) / m:7.1f} bytes per term")
    if args.table:
        from results_table import write_table

        rows = [{"operation": k, "bytes per term": round(b / m, 1)} for k, b in out.items()]
        rows.append(
            {"operation": "largest peak", "bytes per term": round(max(out.values()) / m, 1)}
        )
        write_table(
            args.table,
            "Bytes per listed term of LMNN's active list (bench_list_memory.py)",
            ["operation", "bytes per term"],
            rows,
            [
                f"{args.data}: n = {len(X)}, d = {X.shape[1]}, {m} listed terms at a scaled "
                "identity; peaks of all traced memory (tracemalloc) per listed term."
            ],
        )


if __name__ == "__main__":
    main()
