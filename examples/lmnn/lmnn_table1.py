"""LMNN Table 1: LMNN vs Euclidean kNN on the small UCI data sets
=================================================================

In the spirit of Table 1 of Weinberger & Saul (2009): 3-NN test error averaged over
random 70/30 splits (k = 3 target neighbours, mu = 0.5, as in the paper), plus the
energy of the learned metric from both solvers on the first split.

Run: ``python examples/lmnn/lmnn_table1.py [--splits 5]``.
``--plot DIR`` also writes ``DIR/lmnn_table1.png`` (bars: mean test error ± std);
``--splits 1 --datasets iris`` (or ``--quick``) is a quick run.
"""

import argparse
import os

import numpy as np

from convexmetric import LMNN, datasets
from convexmetric.neighbors import knn_error

NAMES = ("iris", "wine", "breast_cancer")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=5, help="random 70/30 splits per data set")
    ap.add_argument("--datasets", nargs="+", default=list(NAMES), choices=NAMES)
    ap.add_argument("--plot", metavar="DIR", default=None, help="write the figure here")
    ap.add_argument("--quick", action="store_true", help="same as --splits 1 --datasets iris")
    args = ap.parse_args(argv)
    if args.quick:
        args.splits, args.datasets = 1, ["iris"]
    print(f"{'data':14s} {'Euclidean':>12s} {'LMNN':>12s}   eq.14 exact / subgradient (split 0)")
    means, stds = {}, {}
    for name in args.datasets:
        X, y = datasets.load(name)
        e0, e1 = [], []
        for seed in range(args.splits):
            Xtr, Xte, ytr, yte = datasets.split(X, y, random_state=seed)
            m = LMNN(k=3, mu=0.5).fit(Xtr, ytr)
            e0.append(knn_error(Xtr, ytr, Xte, yte, 3))
            e1.append(1.0 - m.score(Xte, yte))
            if seed == 0:
                exact = LMNN(k=3, mu=0.5, solver="exact").fit(Xtr, ytr).objective_
                energies = f"{exact:.4f} / {m.objective_:.4f}"
        print(
            f"{name:14s} {100 * np.mean(e0):5.2f} ± {100 * np.std(e0):4.2f} "
            f"{100 * np.mean(e1):5.2f} ± {100 * np.std(e1):4.2f}   {energies}"
        )
        means[name] = {"Euclidean 3-NN": np.mean(e0), "LMNN 3-NN": np.mean(e1)}
        stds[name] = {"Euclidean 3-NN": np.std(e0), "LMNN 3-NN": np.std(e1)}
    if args.plot:
        from convexmetric.plotting import plot_bars, save_figure

        fig = plot_bars(
            means,
            errors=stds,
            ylabel="test error",
            percent=True,
            title=f"LMNN Table 1 (small UCI sets): mean ± std over {args.splits} splits",
        )
        path = save_figure(fig, os.path.join(args.plot, "lmnn_table1.png"))
        print(f"figure written to {path}")
    return means


if __name__ == "__main__":
    main()
