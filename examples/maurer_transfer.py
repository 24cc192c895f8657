"""Transfer of a learned similarity, in the spirit of Table 2 of Maurer (JMLR 2008).

Randomly rotated (and scaled) scikit-learn digits stand in for the paper's rotated
characters: ``T`` is trained on the digits 0–4 (SGD of Table 1, Maurer's kernel,
λ = 0.005, γ = 1, θ = 0.01, balanced pairs) and applied to the disjoint classes 5–8
(9 is omitted under rotation, as the paper omits it: a rotated 6 is a 9). For the
normalised raw input and for ``T`` the script prints the ROC area of the distance
as a detector of class equality and the 1-shot 1-NN error (one random prototype per
class, averaged over 100 draws), plus the risk of the elementary verifier on
balanced test pairs and the sparsity of ``T`` (singular values above 2% of the
largest). Hyperbolic PCA (§4.2) with the same kernel is shown for comparison.

Run:  python examples/maurer_transfer.py            (about two minutes)
      python examples/maurer_transfer.py --steps 30000   (a quick look)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from convexmetric import metrics
from convexmetric.datasets import transformed_digits
from convexmetric.maurer import HyperbolicPCA, OperatorSimilarity
from convexmetric.pairs import balanced_pairs

TRAIN, TEST = [0, 1, 2, 3, 4], [5, 6, 7, 8]


def experiment(rotate, scale, steps, n_pairs=20000, seed=0, copies=2):
    """Train on rotated/scaled 0–4, evaluate on rotated/scaled 5–8; return a dict of numbers."""
    Xtr, ytr = transformed_digits(
        rotate=rotate, scale=scale, copies=copies, digits=TRAIN, random_state=seed
    )
    Xte, yte = transformed_digits(rotate=rotate, scale=scale, digits=TEST, random_state=seed + 1)
    pairs = balanced_pairs(Xtr, ytr, n_pairs, random_state=seed)
    t0 = time.perf_counter()
    model = OperatorSimilarity(
        kernel="maurer", lam=0.005, gamma=1.0, learning_rate=0.01, max_iter=steps, random_state=seed
    ).fit(pairs)
    seconds = time.perf_counter() - t0
    hpca = HyperbolicPCA(n_components=10, c=2.0, kernel="maurer").fit(pairs)
    test_pairs = balanced_pairs(Xte, yte, 5000, random_state=seed + 1)
    Xn = Xte / np.linalg.norm(Xte, axis=1, keepdims=True)
    out = {
        "train images": len(ytr),
        "train pairs": len(pairs),
        "seconds": seconds,
        "objective": model.objective_,
        "train risk": model.train_risk_,
        "sparsity": metrics.sparsity(model.singular_values_),
        "test images": len(yte),
    }
    d2 = model.pair_distances(test_pairs)
    out["test risk"] = metrics.pair_risk(d2, test_pairs.r)
    out["balanced error"] = metrics.balanced_pair_error(d2, test_pairs.r)
    for name, Z in (("input", Xn), ("T", model.transform(Xte)), ("hPCA", hpca.transform(Xte))):
        out[f"ROC area {name}"] = metrics.distance_roc_auc(Z, yte)
        out[f"1-shot error {name}"] = metrics.one_shot_error(Z, yte, n_draws=100, random_state=seed)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="SGD steps (paper: 10⁶)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    columns = {"rotation": (True, False), "rot.+scale": (True, True)}
    results = {k: experiment(*v, steps=args.steps, seed=args.seed) for k, v in columns.items()}
    keys = list(next(iter(results.values())))
    print(f"{'':22s}" + "".join(f"{k:>14s}" for k in results))
    for key in keys:
        vals = [results[c][key] for c in results]
        fmt = "{:>14d}" if isinstance(vals[0], int) else "{:>14.3f}"
        print(f"{key:22s}" + "".join(fmt.format(v) for v in vals))
    return results


if __name__ == "__main__":
    main()
