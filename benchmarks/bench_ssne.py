"""SSNE fit time per epoch against n (pairs) and M, printed as ratios (one run).

An epoch is one pass of batch-stochastic block-coordinate descent over the Q pairs
plus one evaluation of eq. (3) on all of them, so its cost should grow like
``Q · M · d`` (and like ``n_blocks`` for the block-coordinate variant, which embeds
the minibatch again before every block). From labels, Q = n(n−1)/2 up to
``max_pairs``, so the n sweep sets ``max_pairs`` above n(n−1)/2.

Run: ``python benchmarks/bench_ssne.py`` (about a minute).
"""

from __future__ import annotations

import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from convexmetric.datasets import synthetic_classes
from convexmetric.ssne.estimator import SSNE

D = 20
EPOCHS = 3


def per_epoch(n, M, n_blocks=1):
    X, y = synthetic_classes(n_samples=n, n_features=D, n_classes=4, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    model = SSNE(
        n_components=M, max_iter=EPOCHS, n_blocks=n_blocks, max_pairs=10**7, random_state=0
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # a fixed number of epochs is the point: a time per epoch
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = model.fit(X, y)
    wall = time.perf_counter() - t0
    return m.result_.seconds / m.result_.iterations, wall, m.result_.info["n_pairs"]


def table(title, rows, base):
    print(f"\n{title}")
    print(f"{'setting':>22s} {'pairs Q':>9s} {'s/epoch':>9s} {'ratio':>7s} {'Q·M ratio':>10s}")
    t0, qm0 = base
    for label, (t, _, Q), qm in rows:
        print(f"{label:>22s} {Q:9d} {t:9.3f} {t / t0:7.2f} {qm / qm0:10.2f}")


def main():
    rows = []
    for n in (250, 500, 1000, 2000):
        r = per_epoch(n, 16)
        rows.append((f"n={n}, M=16", r, r[2] * 16))
    table("time per epoch against n (d=20, M=16)", rows, (rows[0][1][0], rows[0][2]))
    rows = []
    for M in (4, 16, 64, 128):
        r = per_epoch(500, M)
        rows.append((f"n=500, M={M}", r, r[2] * M))
    table("time per epoch against M (d=20, n=500)", rows, (rows[0][1][0], rows[0][2]))
    rows = []
    for b in (1, 2, 4, 8):
        r = per_epoch(500, 16, n_blocks=b)
        rows.append((f"n_blocks={b}", r, r[2] * 16 * b))
    table(
        "block-coordinate variant (n=500, M=16); last column: Q·M·blocks",
        rows,
        (rows[0][1][0], rows[0][2]),
    )


if __name__ == "__main__":
    main()
