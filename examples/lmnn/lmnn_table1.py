"""LMNN Table 1: LMNN vs Euclidean kNN on the small UCI data sets
=================================================================

In the spirit of Table 1 of Weinberger & Saul (2009): the 3-NN test error averaged over
random 70/30 splits (k = 3 target neighbours, mu = 0.5, as in the paper), next to the
paper's numbers, plus the energy (eq. 14) of the learned metric from the exact and the
large-scale solver on the first split.

Run: ``python examples/lmnn/lmnn_table1.py [--splits 5] [--raw]`` (``--raw``: the inputs
left unstandardised, as in the paper).
``--plot DIR`` also writes ``DIR/lmnn_table1.png`` (bars: mean test error ± std);
``--splits 1 --datasets iris`` (or ``--quick``) is a quick run.
"""

import argparse
import os

import numpy as np

from convexmetric import LMNN, datasets
from convexmetric.neighbors import knn_error

NAMES = ("iris", "wine", "breast_cancer")

# %%
# The paper's numbers
# -------------------
# Table 1 of the paper gives the 3-NN test error (%) over 100 random 70/30 splits,
# with the Euclidean metric and after LMNN (the "LMNN / PCA" row: on these small sets
# PCA keeps every dimension). The paper does not report breast_cancer. Its inputs are
# not standardised, which is why its Euclidean error on wine (features on very
# different scales) is 25%; ``--raw`` runs the same way. The default split
# standardises them, so the Euclidean column is lower and the gain LMNN has left to
# make is smaller.
#
# Beside the paper (100 splits; ``--splits 100 --datasets iris wine``, with and
# without ``--raw``), 3-NN test error in %:
#
# ====  ==============  ============  ===========  ============  ===========
# data  inputs          Euclidean     LMNN         paper: Eucl.  paper: LMNN
# ====  ==============  ============  ===========  ============  ===========
# iris  unstandardised  3.98 ± 2.48   4.09 ± 2.51  4.87          4.37
# iris  standardised    5.27 ± 3.12   3.93 ± 2.22  —             —
# wine  unstandardised  28.50 ± 5.36  3.59 ± 2.22  25.00         8.72
# wine  standardised    4.37 ± 2.56   2.35 ± 1.61  —             —
# ====  ==============  ============  ===========  ============  ===========
#
# On wine, as in the paper, LMNN cuts the Euclidean error of the raw inputs several
# times over; ours ends lower (3.59% against 8.72%). On iris the paper's gain (0.5
# points) is within the spread of a split (± 2.5; the mean of 100 splits moves by
# about 0.25) and we see none on the raw inputs. What differs: the data (the paper's
# Table 1 lists 128 iris points, 90/38, and 152 wine points, 106/46, where the UCI
# files and scikit-learn's copies have 150 and 178; which points it kept is not
# said), its protocol on iris (30% of the training part held out for validation), and
# the solver: ours reaches eq. (14)'s certified optimum (the exact and the large-scale
# solver agree to 1e-5, last column), while the paper's subgradient solver stops
# without a bound, so its metric may be short of the optimum. We cannot tell these
# apart without the paper's splits.

PAPER = {"iris": (4.87, 4.37), "wine": (25.00, 8.72)}

# %%
# One data set over several splits
# --------------------------------
# Each split standardises on its training part (``datasets.split``), learns the metric
# with the large-scale solver (its certificate makes the status "optimal"), and
# measures the 3-NN test error with and without it. On the first split the exact
# working-set solver is run too: its objective and the large-scale one agree to the
# solvers' tolerance.


def errors(name, splits, scale=True):
    """Test errors (Euclidean, LMNN) over the splits, and the two solvers' energies."""
    X, y = datasets.load(name)
    euclidean, learned, energies = [], [], (np.nan, np.nan)
    for seed in range(splits):
        Xtr, Xte, ytr, yte = datasets.split(X, y, random_state=seed, scale=scale)
        m = LMNN(k=3, mu=0.5).fit(Xtr, ytr)
        euclidean.append(knn_error(Xtr, ytr, Xte, yte, 3))
        learned.append(1.0 - m.score(Xte, yte))
        if seed == 0:
            exact = LMNN(k=3, mu=0.5, solver="exact").fit(Xtr, ytr).objective_
            energies = (exact, m.objective_)
    return np.array(euclidean), np.array(learned), energies


# %%
# The table, beside the paper's
# -----------------------------


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=5, help="random 70/30 splits per data set")
    ap.add_argument("--datasets", nargs="+", default=list(NAMES), choices=NAMES)
    ap.add_argument("--plot", metavar="DIR", default=None, help="write the figure here")
    ap.add_argument("--quick", action="store_true", help="same as --splits 1 --datasets iris")
    ap.add_argument("--raw", action="store_true", help="unstandardised inputs, as in the paper")
    args = ap.parse_args(argv)
    if args.quick:
        args.splits, args.datasets = 1, ["iris"]
    inputs = "unstandardised" if args.raw else "standardised"
    print(f"3-NN test error (%) over {args.splits} split(s), {inputs}; the paper: 100 splits")
    print(
        f"{'data':14s} {'Euclidean':>13s} {'LMNN':>13s} {'paper: Eucl.':>13s} "
        f"{'paper: LMNN':>12s}   eq.14 exact / subgradient (split 0)"
    )
    means, stds = {}, {}
    for name in args.datasets:
        e0, e1, energies = errors(name, args.splits, scale=not args.raw)
        paper = PAPER.get(name)
        theirs = f"{paper[0]:13.2f} {paper[1]:12.2f}" if paper else f"{'—':>13s} {'—':>12s}"
        print(
            f"{name:14s} {100 * e0.mean():6.2f} ± {100 * e0.std():4.2f} "
            f"{100 * e1.mean():6.2f} ± {100 * e1.std():4.2f} {theirs}   "
            f"{energies[0]:.4f} / {energies[1]:.4f}"
        )
        means[name] = {"Euclidean 3-NN": e0.mean(), "LMNN 3-NN": e1.mean()}
        stds[name] = {"Euclidean 3-NN": e0.std(), "LMNN 3-NN": e1.std()}
    if args.plot:
        from convexmetric.plotting import plot_bars, save_figure

        fig = plot_bars(
            means,
            errors=stds,
            ylabel="test error",
            percent=True,
            title=f"LMNN Table 1 (small UCI sets, {inputs}): mean ± std over {args.splits} splits",
        )
        path = save_figure(fig, os.path.join(args.plot, "lmnn_table1.png"))
        print(f"figure written to {path}")
    return means


# %%
# Run
# ---
# On this site the script runs with ``--quick`` (iris, one split); without it, five
# splits of the three data sets.

if __name__ == "__main__":
    main()
