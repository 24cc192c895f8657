"""Retrieval with learned bilinear similarities: AROMA vs OASIS (Crammer & Chechik 2012, §5).
============================================================================================

A sparse bag-of-features data set (``convexmetric.datasets.bag_of_features``: 1000
codewords, about 27 non-zeros per item, correlated codeword groups, tf-idf) stands in
for the Caltech256 visterms. Under 5-fold cross-validation each learner sees the same
triplets drawn from the training labels; every test item is a query against the rest
of the test fold, ranked by ``qᵀ W p``. Printed: ``precision@k`` (k = 1…50) and mAP for
the identity ``W = I``, OASIS, d-AROMA and f-AROMA (Fig. 3 left), and ``precision@10``
traced over training on the first fold (Fig. 3 middle).

Run it as::

    python examples/aroma/aroma_retrieval.py           # the full run (minutes)
    python examples/aroma/aroma_retrieval.py --quick   # a small version (seconds)

``--plot DIR`` also writes ``DIR/aroma_precision_at_k.png``: ``precision@k`` (mean ± std
over folds) for each method and ``precision@10`` along training (Fig. 3 left and middle).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold

from convexmetric import bilinear
from convexmetric.aroma.estimators import OASIS, DiagonalAROMA, FactoredAROMA
from convexmetric.datasets import bag_of_features
from convexmetric.metrics import mean_average_precision, precision_at_k

# %%
# The learners
# ------------
# OASIS, d-AROMA and f-AROMA, each fed the same stream of triplets drawn from the
# training labels.


def learners(r, C):
    return {
        "OASIS": lambda: OASIS(C=C),
        "d-AROMA": lambda: DiagonalAROMA(r=r),
        "f-AROMA": lambda: FactoredAROMA(r=r),
    }


# %%
# Cross-validated retrieval
# -------------------------
# Every test item queries the rest of its test fold, ranked by the learned bilinear
# similarity; ``precision@k`` and mAP are averaged over the folds.


def run(X, y, *, n_iter, folds, trace_every, r, C, ks, seed=0):
    """Precision curves per method (mean over folds) and the P@10 trace on fold 0."""
    curves = {name: [] for name in ["identity", *learners(r, C)]}
    maps = {name: [] for name in curves}
    updates = {name: [] for name in curves}
    trace = {name: [] for name in learners(r, C)}
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    for fold, (tr, te) in enumerate(cv.split(X, y)):
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
        S = bilinear.similarity(np.eye(X.shape[1]), Xte)
        curves["identity"].append(precision_at_k(S, yte, ks))
        maps["identity"].append(mean_average_precision(S, yte))
        T = bilinear.sample_triplets(ytr, n_iter, random_state=seed + fold)
        for name, make in learners(r, C).items():
            model = make()
            for s in range(0, n_iter, trace_every):  # the same stream for every learner
                t = T[s : s + trace_every]
                model.partial_fit_triplets(Xtr[t[:, 0]], Xtr[t[:, 1]], Xtr[t[:, 2]])
                if fold == 0:
                    p10 = precision_at_k(model.similarity(Xte), yte, 10)
                    trace[name].append((model.n_rounds_, model.n_updates_, p10))
            S = model.similarity(Xte)
            curves[name].append(precision_at_k(S, yte, ks))
            maps[name].append(mean_average_precision(S, yte))
            updates[name].append(model.n_updates_)
    return curves, maps, updates, trace


# %%
# The table
# ---------
# As in Fig. 3 of the paper, the learned similarities beat the identity ``W = I`` at
# every ``k``, and AROMA is ahead of OASIS early in training (the trace). At the end
# of the full run AROMA leads at every ``k``; in the quick run shown on this site it
# leads at the top of the ranking (P\@1 to P\@10, and mAP) while OASIS is ahead by about
# one point at P\@20 and P\@30, within a fold's spread.


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small version (seconds)")
    ap.add_argument("--n-iter", type=int, default=None, help="triplets per fold")
    ap.add_argument("--r", type=float, default=1.0, help="AROMA's r")
    ap.add_argument("--C", type=float, default=0.1, help="OASIS's C")
    ap.add_argument("--plot", metavar="DIR", default=None, help="write the figure here")
    args = ap.parse_args(argv)
    if args.quick:
        X, y = bag_of_features(300, 200, 5, n_tokens=14, group_size=10, class_groups=4)
        n_iter, folds = args.n_iter or 3000, 2
    else:
        X, y = bag_of_features()
        n_iter, folds = args.n_iter or 20000, 5
    ks = np.array([1, 2, 5, 10, 20, 30, 50])
    t0 = time.perf_counter()
    curves, maps, updates, trace = run(
        X,
        y,
        n_iter=n_iter,
        folds=folds,
        trace_every=max(n_iter // 10, 1),
        r=args.r,
        C=args.C,
        ks=ks,
    )
    nnz = np.diff(X.indptr)
    print(
        f"bag of features: {X.shape[0]} items × {X.shape[1]} codewords, median {np.median(nnz):.0f}"
        f" non-zeros, {len(np.unique(y))} classes; {folds}-fold CV, {n_iter} triplets per fold,"
        f" r={args.r}, C={args.C}"
    )
    print("\nprecision@k on the test folds (mean ± std over folds)")
    print(
        f"{'method':10s}"
        + "".join(f"{'P@' + str(k):>14s}" for k in ks)
        + f"{'mAP':>14s}{'updates':>10s}"
    )
    for name, c in curves.items():
        c = np.array(c)
        cells = "".join(f"{m:8.4f}±{s:.3f}" for m, s in zip(c.mean(0), c.std(0)))
        upd = f"{np.mean(updates[name]):10.0f}" if updates[name] else f"{'-':>10s}"
        print(f"{name:10s}{cells}{np.mean(maps[name]):8.4f}±{np.std(maps[name]):.3f}{upd}")
    print("\nprecision@10 traced over training (fold 0): rounds, then updates / P@10 per method")
    names = list(trace)
    print(f"{'rounds':>8s}" + "".join(f"{n:>20s}" for n in names))
    for i in range(len(trace[names[0]])):
        row = "".join(f"{trace[n][i][1]:>10d} / {trace[n][i][2]:.4f}" for n in names)
        print(f"{trace[names[0]][i][0]:8d}{row}")
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    if args.plot:
        from convexmetric.plotting import plot_precision_at_k, save_figure

        fig = plot_precision_at_k(
            curves,
            ks,
            trace=trace,
            title=f"AROMA vs OASIS (Crammer & Chechik 2012, Fig. 3): {folds}-fold CV, "
            f"{n_iter} triplets per fold",
        )
        path = save_figure(fig, os.path.join(args.plot, "aroma_precision_at_k.png"))
        print(f"figure written to {path}")
    return curves, maps, trace


# %%
# Beside the paper
# ----------------
# The paper's data (Caltech256 visterms, 20 Newsgroups) are not available offline;
# the synthetic bag of features stands in. The full run (``python
# examples/aroma/aroma_retrieval.py``: 5 folds, 20,000 triplets per fold, r = 1,
# C = 0.1) gives:
#
# ================================  ======================  ================================
# measure                           paper                   ours
# ================================  ======================  ================================
# P\@1, OASIS → AROMA               22% → 33% (Caltech256)  66.2% → 66.5% (d), 66.3% (f)
# P\@10, OASIS → AROMA              Fig. 3, not tabled      52.4% → 54.7% (d), 55.3% (f)
# mAP, OASIS → AROMA                not given               46.2% → 48.4% (d), 48.5% (f)
# OASIS's rounds for AROMA's P\@10  10× (20 Newsgroups)     1.7× (12,000 against 20,000)
# P\@10 from r = 1 to r = 0.01      under 5% change         d 54.7% → 54.0%, f 55.3% → 39.1%
# ================================  ======================  ================================
#
# The direction is the paper's (AROMA learns faster and ranks better), the size is not:
# at the top of the ranking the gap that is 11 points on Caltech256 is within the
# folds' spread here, and the speed-up is 1.7× rather than 10×. On this data OASIS
# already retrieves a same-class item first two times in three, leaving less to gain at
# P\@1; whether Caltech256's strongly correlated visterms are what AROMA exploits there
# (the paper's own reading of where f-AROMA wins) cannot be checked without them.
#
# One difference in kind: the paper finds AROMA robust to r across three orders of
# magnitude, and runs Fig. 3 at r = 0.01. Here d-AROMA is (full run, P\@10: 0.547 at
# r = 1, 0.540 at r = 0.01, ``--r 0.01``), but f-AROMA falls from 0.553 to 0.391
# (OASIS 0.524, the identity 0.269; in the quick run to the identity's level, 0.438
# against 0.448) while still updating on almost every round. Its ``‖W‖`` grows
# twice as fast as at r = 1 (46 against 23 after 3,000 rounds): with r small against
# ``(qᵀΛq)(pᵀΩp)`` each round fits its triplet almost exactly, and the shared factors
# ``Λ``, ``Ω`` spread that step to every weight. The rounds are held against a
# literal implementation of Alg. 2 and the mean step against CVXPY's minimiser of
# eq. (3) in the tests, so we read this as a property of the factored update on these
# inputs rather than a defect; ``--r`` runs the comparison.

# %%
# Run
# ---
# On this site the script runs with ``--quick``; without it, the full run.

if __name__ == "__main__":
    main()
