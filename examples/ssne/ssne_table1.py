"""Batra & Shakhnarovich, Table 1: kNN accuracy after 5 × repeated 2-fold CV.
============================================================================

Methods: Euclidean, Euclidean on standardised features, LMNN (Weinberger & Saul,
``LMNN(k=3, mu=0.5, solver="subgradient")``) and SSNE, on the UCI data shipped with
scikit-learn (iris, wine, wdbc = breast_cancer). Prints mean ± std of the accuracy
(%) over the 10 test folds, next to the paper's SSNE column; a second line gives the
standard deviation of the 5 per-repeat means.

Protocol (nothing is chosen on a test fold):

* outer folds: ``RepeatedStratifiedKFold(n_splits=2, n_repeats=5, random_state=0)``
  (``--seed`` changes the random_state, a check that the table is not one lucky split);
* standardisation (for all but plain Euclidean) is fitted on the training fold;
* kNN with k = 3 for every method (LMNN's convention; the paper does not state k);
* SSNE: M = 16 coordinates; ``loss_weight`` picked from ``--grid`` by an inner
  stratified 2-fold CV on the training fold only (mean inner kNN accuracy; ties go to
  the smaller ``loss_weight``, the stronger penalty); then refitted on the whole
  training fold.

Run: ``python examples/ssne/ssne_table1.py`` (the full run takes minutes, most of it LMNN
on wdbc; ``--no-lmnn`` leaves LMNN out);
``--datasets iris --repeats 1`` (or ``--quick``) for a quick look.

``--plot DIR`` also writes ``DIR/ssne_table1.png`` (bars: mean kNN accuracy ± std per
method and data set) and ``DIR/ssne_embedding_<data>.png`` (the test fold of the first
outer split: standardised input and the SSNE embedding, each on its first two
principal axes).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler

from convexmetric import LMNN, datasets
from convexmetric.neighbors import knn_error
from convexmetric.ssne.estimator import SSNE

#: the paper's SSNE column (mean, std) and the target mean − 2 std
PAPER = {"iris": (96.22, 1.00), "wine": (98.46, 0.38), "breast_cancer": (97.12, 0.33)}
#: the paper's scaled-Euclidean column: the baseline of the same folds
PAPER_SCALED = {"iris": 96.22, "wine": 96.15, "breast_cancer": 96.71}
K = 3
M = 16
MAX_ITER = 150  # epochs: the small inner folds take few steps per epoch


# %%
# The protocol
# ------------
# Repeated 2-fold cross-validation, kNN accuracy in each space; SSNE's ``loss_weight``
# is chosen by an inner cross-validation on the training fold.
#
# A fit at the largest ``loss_weight`` of the grid (1000) usually ends at its
# iteration limit: eq. (3) has no minimiser in the direction W -> 0 (the embedding is
# nearly scale-free there, see the user guide), and with a weak penalty the objective
# keeps falling slowly towards its infimum. Those fits are counted and reported (their
# ``result_.status`` is "iteration_limit"); the ``ConvergenceWarning`` they raise, and
# only it, is not repeated for each of them.


def fit_ssne(X, y, loss_weight, seed, limits):
    """SSNE on ``X, y``; a fit ending at its iteration limit is counted in ``limits``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # counted below instead
        model = SSNE(n_components=M, loss_weight=loss_weight, max_iter=MAX_ITER, random_state=seed)
        model.fit(X, y)
    if model.result_.status == "iteration_limit":
        limits[loss_weight] = limits.get(loss_weight, 0) + 1
    return model


def knn_acc(Ztr, ytr, Zte, yte, k=K):
    return 100.0 * (1.0 - knn_error(Ztr, ytr, Zte, yte, k))


def choose_loss_weight(X, y, grid, seed, limits):
    """Inner stratified 2-fold CV on the training fold: the best mean kNN accuracy."""
    inner = StratifiedKFold(n_splits=2, shuffle=True, random_state=seed)
    scores = []
    for weight in grid:
        acc = []
        for tr, va in inner.split(X, y):
            sc = StandardScaler().fit(X[tr])
            model = fit_ssne(sc.transform(X[tr]), y[tr], weight, seed, limits)
            acc.append(
                knn_acc(
                    model.transform(sc.transform(X[tr])),
                    y[tr],
                    model.transform(sc.transform(X[va])),
                    y[va],
                )
            )
        scores.append(np.mean(acc))
    return grid[int(np.argmax(scores))]  # first maximum: grid is sorted ascending


def run(name, repeats, grid, with_lmnn, seed=0, keep=None, limits=None):
    """The accuracy columns and the chosen ``loss_weight`` per fold; ``keep`` (a dict),
    when given, receives the first fold's test points, labels and SSNE embedding;
    ``limits`` (a dict), the number of SSNE fits per ``loss_weight`` that ended at
    their iteration limit."""
    limits = {} if limits is None else limits
    X, y = datasets.load(name)
    cols = {"Euc.": [], "Euc. (scaled)": [], "LMNN": [], "SSNE": []}
    chosen = []
    outer = RepeatedStratifiedKFold(n_splits=2, n_repeats=repeats, random_state=seed)
    for fold, (tr, te) in enumerate(outer.split(X, y)):
        cols["Euc."].append(knn_acc(X[tr], y[tr], X[te], y[te]))
        sc = StandardScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        cols["Euc. (scaled)"].append(knn_acc(Xtr, y[tr], Xte, y[te]))
        if with_lmnn:
            lm = LMNN(k=K, mu=0.5, solver="subgradient").fit(Xtr, y[tr])
            cols["LMNN"].append(knn_acc(lm.transform(Xtr), y[tr], lm.transform(Xte), y[te]))
        weight = choose_loss_weight(X[tr], y[tr], grid, fold, limits)
        chosen.append(weight)
        model = fit_ssne(Xtr, y[tr], weight, fold, limits)
        cols["SSNE"].append(knn_acc(model.transform(Xtr), y[tr], model.transform(Xte), y[te]))
        if keep is not None and fold == 0:
            keep.update(X=Xte, y=y[te], Z=model.transform(Xte), loss_weight=weight)
    return cols, chosen


# %%
# The figures
# -----------
# Bars of Table 1, and an embedding of a test fold.


def figures(folder, rows, kept, repeats):
    from convexmetric.plotting import plot_bars, plot_embeddings, save_figure

    means = {n: {c: np.mean(v) for c, v in cols.items() if v} for n, cols in rows.items()}
    stds = {n: {c: np.std(v) for c, v in cols.items() if v} for n, cols in rows.items()}
    fig = plot_bars(
        means,
        errors=stds,
        ylabel="kNN accuracy (%)",
        title=f"SSNE (Batra & Shakhnarovich) Table 1: {repeats} × 2-fold CV, k = {K}",
    )
    fig.axes[0].set_ylim(max(0.0, min(min(m.values()) for m in means.values()) - 10), 100.5)
    print("figure written to", save_figure(fig, os.path.join(folder, "ssne_table1.png")))
    for name, k in kept.items():
        fig = plot_embeddings(
            {
                "standardised input": k["X"],
                f"SSNE embedding (M = {M}, loss_weight = {k['loss_weight']:g})": k["Z"],
            },
            k["y"],
            title=f"SSNE on {name}: test fold of the first split (first two principal axes)",
        )
        path = os.path.join(folder, f"ssne_embedding_{name}.png")
        print("figure written to", save_figure(fig, path))


# %%
# The table, beside the paper's
# -----------------------------
# The last columns give the paper's SSNE accuracy (mean ± std) and the target this
# implementation aims at (the paper's mean minus two standard deviations).


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["iris", "wine", "breast_cancer"])
    ap.add_argument("--repeats", type=int, default=5, help="Repetitions of 2-fold CV.")
    ap.add_argument(
        "--grid",
        type=float,
        nargs="+",
        default=[10.0, 100.0, 1000.0],
        help="Candidate values of SSNE's loss_weight (inner CV).",
    )
    ap.add_argument("--seed", type=int, default=0, help="random_state of the outer folds.")
    ap.add_argument("--no-lmnn", action="store_true", help="Leave out the LMNN column.")
    ap.add_argument("--plot", metavar="DIR", default=None, help="Write the figures here.")
    ap.add_argument("--quick", action="store_true", help="Same as --datasets iris --repeats 1.")
    args = ap.parse_args(argv)
    if args.quick:
        args.datasets, args.repeats = ["iris"], 1
    kept, limits = {}, {}
    with_lmnn = not args.no_lmnn
    grid = sorted(args.grid)
    header = f"{'data':14s}" + "".join(
        f"{c:>17s}" for c in ["Euc.", "Euc. (scaled)", "LMNN", "SSNE"]
    )
    print(
        header + f"{'paper SSNE':>17s}{'target':>8s}{'paper Euc.(sc.)':>16s}   loss_weight chosen"
    )
    rows = {}
    for name in args.datasets:
        t0 = time.perf_counter()
        kept[name] = {}
        cols, chosen = run(name, args.repeats, grid, with_lmnn, args.seed, kept[name], limits)
        cells = "".join(
            f"{np.mean(v):9.2f} ± {np.std(v):4.2f}" if v else f"{'—':>17s}" for v in cols.values()
        )
        pm, ps = PAPER.get(name, (np.nan, np.nan))
        chosen_text = ",".join(f"{g:g}" for g in chosen)
        target = np.floor(10 * (pm - 2 * ps) + 1e-6) / 10  # mean − 2 std, rounded down
        print(
            f"{name:14s}{cells}{pm:9.2f} ± {ps:4.2f}{target:8.1f}"
            f"{PAPER_SCALED.get(name, np.nan):16.2f}   {chosen_text}"
            f"  ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        rows[name] = cols
        # the paper's ± are smaller than a 10-fold spread; the spread of the per-repeat
        # means (each the mean of one 2-fold split) is shown as well for comparison
        reps = "".join(
            f"{'':9s}   {np.std(np.reshape(v, (-1, 2)).mean(1)):4.2f}" if v else f"{'':17s}"
            for v in cols.values()
        )
        print(f"{'  std of means':14s}{reps}")
    if limits:
        print(
            "SSNE fits that ended at max_iter (objective still falling; see the guide): "
            + ", ".join(f"{n} at loss_weight={w:g}" for w, n in sorted(limits.items()))
        )
    if args.plot:
        figures(args.plot, rows, kept, args.repeats)
    return rows


# %%
# Beside the paper
# ----------------
# The full run (``python examples/ssne/ssne_table1.py``, 5 × 2-fold CV) gives, in %:
#
# ====  ============  ============  ===================  ====================
# data  SSNE, ours    SSNE, paper   Euc. (scaled), ours  Euc. (scaled), paper
# ====  ============  ============  ===================  ====================
# iris  93.47 ± 2.89  96.22 ± 1.00  93.60 ± 2.72         96.22 ± 0.81
# wine  97.98 ± 0.84  98.46 ± 0.38  95.62 ± 1.06         96.15 ± 0.76
# wdbc  96.56 ± 0.77  97.12 ± 0.33  96.10 ± 0.64         96.71 ± 0.31
# ====  ============  ============  ===================  ====================
#
# On wine and wdbc SSNE lands within two of the paper's standard deviations and
# above the scaled Euclidean baseline, as in the paper. On iris it is 2.8 points
# below the paper's number, and the baseline of the same folds 2.6 points: in the paper
# SSNE equals scaled Euclidean on iris (96.22 and 96.22), here too (93.47 and 93.60).
# The gap is in the folds (the paper's are not published; with 75 test points per
# fold one point is 1.3 points of accuracy), not in the method: SSNE gives no gain over
# scaled Euclidean on iris, in the paper or here. The paper's unscaled Euclidean on wdbc,
# 63.29%, is the share of its majority class (357 of 569 = 62.7%), which suggests its
# inputs kept the UCI file's ID column, whose large numbers swamp the distances;
# scikit-learn's copy has no ID column and gives 92.27% here.

# %%
# Run
# ---
# On this site the script runs with ``--quick``; without it, the full run.

if __name__ == "__main__":
    main()
