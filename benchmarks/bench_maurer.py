"""Maurer (JMLR 2008) side by side: speed of Table 1's SGD and accuracy of every solver.

1. Scale: m = 100,000 balanced pairs of the 64-dimensional digits (scaled to diameter
   ≤ 1), d = 100, θ = 0.01, λ = 0.005, γ = 1: a 10⁶-step SGD run, timed, beside the
   textbook one-pair-at-a-time Python loop of Table 1 (timed on 20,000 steps and
   extrapolated). The two compute the same iterates (tests/test_maurer.py).
2. Accuracy: on a small instance (D = 10, m = 1,000) the exact optimum (CLARABEL),
   plain projected subgradient, projected subgradient + smoothed refinement, and SGD
   (mean over 3 seeds), with relative gaps and time ratios.

Run:  python benchmarks/bench_maurer.py
"""

from __future__ import annotations

import time

import numpy as np

from convexmetric.datasets import load
from convexmetric.maurer import solver as S
from convexmetric.maurer.pairs import balanced_pairs
from convexmetric.problems import maurer as P


def naive_table1(U, r, lam, steps, d=100, theta=0.01, gamma=1.0, reg_every=500, seed=0):
    """One pair per Python iteration, as Table 1 is written (HS regulariser)."""
    rng = np.random.default_rng(seed)
    m = len(r)
    V = rng.standard_normal((d, U.shape[1])) * 0.01
    lam_m = lam / np.sqrt(m)
    for t in range(steps):
        if t % reg_every == 0:
            VV = V @ V.T
            W = 2.0 / np.linalg.norm(VV) * VV @ V
        k = rng.integers(m)
        u, rk = U[k], r[k]
        a = V @ u
        if rk * (1.0 - a @ a) < gamma:
            V -= theta * ((2 * rk / gamma) * np.outer(a, u) + lam_m * W)
        else:
            V -= theta * lam_m * W
    return V


def scale_run():
    X, y = load("digits")
    X = X / (2 * np.linalg.norm(X - X.mean(0), axis=1).max())
    pairs = balanced_pairs(X, y, 100_000, random_state=0)
    U, r = pairs.differences, pairs.r
    t0 = time.perf_counter()
    res = S.sgd(S.LinearBackend(U), r, 0.005, max_iter=1_000_000, random_state=0)
    t_block = time.perf_counter() - t0
    n_naive = 20_000
    t0 = time.perf_counter()
    naive_table1(U, r, 0.005, n_naive)
    t_naive = (time.perf_counter() - t0) * 1_000_000 / n_naive
    print("1. SGD of Table 1, m = 100,000 pairs, D = 64, d = 100, 10⁶ steps")
    print(
        f"   blocked (exact) : {t_block:7.2f} s   objective {res.objective:.5f}  "
        f"status {res.status}  flag corrections {res.info['flag_corrections']}"
    )
    print(f"   naive loop      : {t_naive:7.2f} s   (extrapolated from {n_naive} steps)")
    print(f"   speed-up        : {t_naive / t_block:7.1f}×   under a minute: {t_block < 60}")


def accuracy_run():
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((5, 10)) * 1.5
    y = rng.integers(0, 5, 500)
    X = centers[y] + rng.standard_normal((500, 10))
    X /= 2 * np.linalg.norm(X - X.mean(0), axis=1).max()
    pairs = balanced_pairs(X, y, 1000, random_state=0)
    U, r = pairs.differences, pairs.r
    print("2. Accuracy on D = 10, m = 1,000 balanced pairs, λ = 0.05")
    print(
        f"   {'variant':14s} {'solver':24s} {'objective':>12s} {'rel. gap':>10s} "
        f"{'seconds':>8s} {'× exact':>8s}"
    )
    for reg, gneg in (("hs", None), ("trace", None), ("hs", 2.0)):
        args = (U, r, 0.05, 1.0, gneg, reg)
        _, val, status, t_ex = P.solve(*args)
        rows = [("CLARABEL " + status, val, t_ex)]
        for name, refine in (("subgradient", False), ("subgradient+smoothing", True)):
            res = S.solve_projected(*args, refine=refine)
            rows.append((name, res.objective, res.seconds))
        sg = [
            S.sgd(S.LinearBackend(U), *args[1:], max_iter=100_000, random_state=s) for s in range(3)
        ]
        rows.append(
            (
                "sgd (3 seeds, 10⁵ st.)",
                np.mean([s.objective for s in sg]),
                np.mean([s.seconds for s in sg]),
            )
        )
        label = f"{reg}, γ₋₁={gneg or 1.0}"
        for name, obj, sec in rows:
            print(
                f"   {label:14s} {name:24s} {obj:12.7f} {(obj - val) / val:10.2e} "
                f"{sec:8.2f} {sec / t_ex:8.1f}"
            )


if __name__ == "__main__":
    scale_run()
    accuracy_run()
