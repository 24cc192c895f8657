"""Throughput of the online bilinear learners, side by side.

Sparse 1000 × 1000 problem: the ``bow`` data set (1000 codewords, median ~27 non-zeros
per item, so ``p = p⁺ − p⁻`` has ~50), triplets drawn from its labels. Printed per
learner: rounds and updates per second of wall-clock time and of process CPU time
(the machine may be shared), and the ratio to the target (d-AROMA and OASIS ≥ 20,000
updates/s; f-AROMA ≥ 500 updates/s at m = n = 1000), beside the dense reference step
of ``convexmetric.aroma.steps`` (O(mn) per round) for scale.

Run:  python benchmarks/bench_aroma.py [--rounds 50000] [--factored-rounds 2000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from convexmetric import bilinear
from convexmetric.aroma.steps import daroma_step
from convexmetric.aroma.stream import DiagonalEngine, FactoredEngine, OasisEngine
from convexmetric.datasets import load


def timed(engine, Q, D):
    w0, c0 = time.perf_counter(), time.process_time()
    engine.run(Q, D)
    return time.perf_counter() - w0, time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50_000)
    ap.add_argument("--factored-rounds", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = ap.parse_args(argv)
    X, y = load("bow")
    d = X.shape[1]
    T = bilinear.sample_triplets(y, args.rounds, random_state=0)
    Q, D = bilinear.triplet_differences(X, X, T)
    print(
        f"bow: {X.shape[0]} items × {d} features, median nnz(q) = "
        f"{np.median(np.diff(X.indptr)):.0f}, median nnz(p⁺ − p⁻) = "
        f"{np.median(np.diff(D.indptr)):.0f}; load average {os.getloadavg()[0]:.2f}"
    )
    cases = [
        ("d-AROMA (sparse)", lambda: DiagonalEngine(d, d, 1.0), args.rounds, 20_000),
        ("OASIS (sparse)", lambda: OasisEngine(d, d, 0.1, W0=np.eye(d)), args.rounds, 20_000),
        ("f-AROMA (sparse in)", lambda: FactoredEngine(d, d, 1.0), args.factored_rounds, 500),
        ("f-AROMA (dense in)", lambda: FactoredEngine(d, d, 1.0), args.factored_rounds // 2, 500),
    ]
    head = f"{'learner':22s}{'rounds':>8s}{'updates':>9s}{'upd/s wall':>12s}{'upd/s CPU':>12s}"
    print(head + f"{'target':>9s}{'wall/tgt':>9s}{'CPU/tgt':>9s}")
    for name, make, n, target in cases:
        best = None
        for _ in range(args.repeats):
            eng = make()
            Qn, Dn = Q[:n], D[:n]
            if "dense" in name:
                Qn, Dn = Qn.toarray(), Dn.toarray()
            wall, cpu = timed(eng, Qn, Dn)
            if best is None or wall < best[0]:
                best = (wall, cpu, eng.updates)
        wall, cpu, upd = best
        rate, rate_cpu = upd / wall, upd / max(cpu, 1e-9)
        print(
            f"{name:22s}{n:8d}{upd:9d}{rate:12.0f}{rate_cpu:12.0f}{target:9d}"
            f"{rate / target:9.2f}{rate_cpu / target:9.2f}"
        )
    # the dense reference step, for scale (O(mn) per round)
    n_ref = 30
    W, S = np.zeros((d, d)), np.ones((d, d))
    Qd, Dd = Q[:n_ref].toarray(), D[:n_ref].toarray()
    w0 = time.perf_counter()
    for t in range(n_ref):
        W, S, _ = daroma_step(W, S, Qd[t], Dd[t], 1.0)
    rate = n_ref / (time.perf_counter() - w0)
    print(f"{'d-AROMA dense ref.':22s}{n_ref:8d}{n_ref:9d}{rate:12.0f}{'':>12s}{'':>9s}{'':>8s}")


if __name__ == "__main__":
    main()
