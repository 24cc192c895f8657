"""POE benchmarks: graph filtering at scale; large-scale solver against the exact optimum.

1. Filtering 100,000 random triadic comparisons over 500 items (each stage timed).
2. For each of the six formulations on a small instance (kernel forms: 40 training
   digits of the §5.1 taxonomy, 500 comparisons; LPOE: 16-d pooled digit features,
   2,000 comparisons): the exact CLARABEL solve (gap/feasibility tolerances 1e-8,
   status checked) against the projected-subgradient + smoothing solver — seconds,
   time ratio and final relative gap, and the time (and ratio) at which the solver's
   reported objective first came within 1e-3 of the optimum, side by side.

    python benchmarks/bench_poe.py
"""

import time

import numpy as np

from convexmetric import graph
from convexmetric.comparisons import Comparisons
from convexmetric.problems import poe as P
from convexmetric.result import relative_gap
from convexmetric.solvers import poe as S
from convexmetric.taxonomy import make_taxonomy


def bench_filter(n=500, m=100_000, seed=0):
    rng = np.random.default_rng(seed)
    i, j, k = rng.integers(0, n, (3, int(m * 1.02)))
    ok = (i != j) & (i != k) & (j != k)
    C = Comparisons.triadic(i[ok][:m], j[ok][:m], k[ok][:m], n_items=n)
    t0 = time.perf_counter()
    rep = graph.filter_comparisons(C, random_state=0)
    total = time.perf_counter() - t0
    print(f"filtering {len(C)} random comparisons over {n} items: {total:.2f} s")
    for s in rep.summary()["stages"]:
        print(f"  {s['stage']:22s} removed {s['removed']:6d}")
    t0 = time.perf_counter()
    Z = graph.total_order_embedding(rep.comparisons)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    worst = rep.comparisons.margins(D).min()
    secs = time.perf_counter() - t0
    print(f"App. A embedding of the {len(rep.comparisons)} kept comparisons: {secs:.2f} s, "
          f"dim {Z.shape[1]}, smallest margin {worst:.6f}")  # fmt: skip


def instances():
    T = make_taxonomy(5, n_train_comparisons=500, n_test_comparisons=10, random_state=0)
    Ks = T.train_kernels()
    mk = [Ks[0], Ks[1], Ks[5]]  # pixels, rows, one noise kernel
    T2 = make_taxonomy(10, n_train_comparisons=2000, n_test_comparisons=10, random_state=0)
    img = T2.X[T2.train].reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(T2.train), -1)
    yield "LPOE  (D=16, m=2000)", P.lpoe_blocks(img / 16.0), None, T2.train_comparisons
    yield "KPOE  (n=40, m=500) ", P.kernel_blocks(Ks[:1]), Ks[:1], T.train_comparisons
    yield "MKPOE (n=40, m=500, 3 kernels)", P.kernel_blocks(mk), mk, T.train_comparisons


def bench_solvers(beta=100.0):
    print(f"\nexact (CLARABEL) vs large-scale solver, beta={beta}")
    print(f"{'instance':32s} {'diag':>5s} {'exact s':>8s} {'status':>18s} {'ours s':>7s} "
          f"{'ratio':>6s} {'rel gap':>9s} {'t(1e-3)':>8s} {'ratio':>6s}")  # fmt: skip
    for name, blocks, kernels, C in instances():
        for diagonal in (False, True):
            _, value, status, t_exact = P.solve(blocks, C, beta, diagonal=diagonal)
            hit = []  # first time the reported objective is within 1e-3 of the optimum
            t0 = time.perf_counter()

            def cb(it, f, step, hit=hit, value=value, t0=t0):
                if not hit and (f - value) <= 1e-3 * abs(value):
                    hit.append(time.perf_counter() - t0)
                return False

            if kernels is None:
                res = S.solve(blocks, C, beta, diagonal=diagonal, callback=cb)
            else:
                res = S.solve_kernels(kernels, C, beta, diagonal=diagonal, callback=cb)
            t_ours = time.perf_counter() - t0
            t_hit = hit[0] if hit else float("nan")
            gap = relative_gap(P.objective(res.matrices, blocks, C, beta), value)
            print(f"{name:32s} {diagonal!s:>5s} {t_exact:8.2f} {status:>18s} {t_ours:7.2f} "
                  f"{t_ours / t_exact:6.3f} {gap:9.2e} {t_hit:8.2f} "
                  f"{t_hit / t_exact:6.3f}")  # fmt: skip


if __name__ == "__main__":
    bench_filter()
    bench_solvers()
