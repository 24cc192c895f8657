"""LMNN side by side: plain CVXPY vs working set vs the large-scale solver, digits, scale.

Run from the repository root: ``python benchmarks/bench_lmnn.py`` (about 3–4 minutes;
``--quick`` skips the plain CVXPY solves; ``--scale`` runs only the rows of the scale
issue: the 20,000 × 20 overlapping classes and ``augmented_digits``, each in a child
process that reports its own peak resident memory).

Measured quiet on this 2-core machine (2026-11-23), ``--scale``: overlapping 20,000 × 20
(the scale issue's recipe): streaming mode, objective 14450.3, certified gap 1.6e-6,
152–171 s, peak RSS 0.64 GiB (was 826 s under load; before that, ``TooManyTerms``).
``augmented_digits`` (41,481 × 64 training split): active-set mode, objective 85849.5,
certified gap 6.0e-5, 120–128 s, peak RSS 0.62–0.63 GiB (163–185 s before the refinement kept σ
fixed); 3-NN test error 1.63% vs Euclidean 2.26%. ``--versus`` (digits default fit vs
metric-learn 0.7.0, side by side): ours 3.19 s (best of 3: 3.69, 3.34, 3.19; objective
1726.1229, certified 7.2e-5) vs metric-learn 11.07 s (objective 1742.78), time ratio 0.29
(0.33 before the fixed σ); this machine's timings vary by ±15% between identical runs.
The digits fit spends about a third of its time in the crossover of :mod:`.lmnn_dual`
(three calls of 0.3 s), a third in phase 1 (200 subgradient steps).
Everything runs in this one process except the
memory measurement of the 20,000-point problem, which runs in a child process so that
its peak resident memory is its own. Prints ratios: ours vs exact, ours vs plain CVXPY.
Standard split (``datasets.load_split``, see ARCHITECTURE.md), k = 3, mu = 0.5.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

from convexmetric import datasets
from convexmetric.lmnn import solver as S
from convexmetric.lmnn.exact import solve_working_set
from convexmetric.neighbors import knn_error, target_neighbors
from convexmetric.problems import lmnn as P

METRIC_LEARN_DIGITS = 1742.0  # eq. (14) reached by metric-learn 0.7.0's LMNN on this split
METRIC_LEARN_SECONDS = 7.6  # ... in this many seconds on this machine


def instance(name):
    Xtr, Xte, ytr, yte = datasets.load_split(name)
    _, y = np.unique(ytr, return_inverse=True)
    _, yt = np.unique(yte, return_inverse=True)
    return Xtr, y, Xte, yt, target_neighbors(Xtr, y, 3)


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def small(name, plain):
    X, y, _, _, T = instance(name)
    n_terms = len(P.all_triplets(y, T)[0])
    print(f"\n== {name}: {X.shape[0]} × {X.shape[1]}, {n_terms} hinge terms")
    ref = None
    if plain:
        (_, value, status, _), t_plain = timed(lambda: P.solve(X, y, T, 0.5, solver="SCS"))
        ref = value
        print(f"plain CVXPY+SCS (eps 1e-7): {value:.8f} [{status}] in {t_plain:.2f} s")
    ws = solve_working_set(X, y, T, 0.5)
    ref = ws.objective if ref is None else ref
    print(
        f"working set ({ws.solver}): {ws.objective:.8f} [{ws.status}] in {ws.seconds:.2f} s, "
        f"{ws.iterations} round(s), {ws.info['working_set']} of {n_terms} terms; "
        f"gap to plain {(ws.objective - ref) / ref:+.1e}"
        + (f"; {t_plain / ws.seconds:.1f}× faster than plain" if plain else "")
    )
    sg = S.solve(X, y, T, 0.5)
    print(
        f"subgradient (App. A, then smoothed L-BFGS): {sg.objective:.8f} [{sg.status}] "
        f"in {sg.seconds:.2f} s; "
        f"relative gap {(sg.objective - ws.objective) / ws.objective:.1e}; "
        f"certified lower bound {sg.lower_bound:.6f}"
        + (f"; time = 1/{t_plain / sg.seconds:.0f} of plain" if plain else "")
    )
    s0 = S.solve(X, y, T, 0.5, precondition=False)
    print(
        f"  same without the pull whitening: {s0.objective:.8f} [{s0.status}] in "
        f"{s0.seconds:.2f} s; relative gap {(s0.objective - ws.objective) / ws.objective:.1e}"
    )
    p1 = S.solve(X, y, T, 0.5, refine=False)
    print(
        f"  App. A phase alone: {p1.objective:.6f} in {p1.seconds:.2f} s "
        f"(relative gap {(p1.objective - ws.objective) / ws.objective:.1e})"
    )


def digits():
    X, y, Xte, yte, T = instance("digits")
    print(f"\n== digits: {X.shape[0]} × {X.shape[1]}")
    p1 = S.solve(X, y, T, 0.5, refine=False, max_iter=400)
    L = P.components_from_metric(p1.matrix)
    print(
        f"subgradient, App. A phase (400 iterations): objective {p1.objective:.1f} in "
        f"{p1.seconds:.2f} s  (metric-learn 0.7.0: {METRIC_LEARN_DIGITS:.0f} in "
        f"{METRIC_LEARN_SECONDS} s; time ratio {p1.seconds / METRIC_LEARN_SECONDS:.2f}, "
        f"{'reached' if p1.objective <= METRIC_LEARN_DIGITS else 'NOT reached'})"
    )
    err, err0 = knn_error(X @ L.T, y, Xte @ L.T, yte, 3), knn_error(X, y, Xte, yte, 3)
    print(f"3-NN test error: LMNN {err:.2%} vs Euclidean {err0:.2%}")
    full = S.solve(X, y, T, 0.5, time_limit=60)
    print(
        f"subgradient with refinement: objective {full.objective:.2f} [{full.status}] in "
        f"{full.seconds:.1f} s, certified lower bound {full.lower_bound:.1f}"
    )


def synthetic_child():
    X, y = datasets.synthetic_classes(n_samples=20000, n_features=20, n_classes=10)
    X = (X - X.mean(0)) / X.std(0)
    T = target_neighbors(X, y, 3)
    res = S.solve(X, y, T, 0.5, max_iter=200, refine=False)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(
        f"synthetic 20,000 × 20, 10 classes: objective {res.objective:.1f} after "
        f"{res.iterations} iterations in {res.seconds:.1f} s, active list "
        f"{res.info['active_list']}, peak memory {rss:.2f} GiB (limit 2 GiB)"
    )


ML_SCRIPT = """
import sys, time, numpy as np
from metric_learn import LMNN
X, y = np.load(sys.argv[1] + "/X.npy"), np.load(sys.argv[1] + "/y.npy")
t0 = time.perf_counter()
m = LMNN(n_neighbors=3, regularization=0.5, random_state=0).fit(X, y)
print(time.perf_counter() - t0)
np.save(sys.argv[1] + "/L.npy", m.components_)
"""


def versus_metric_learn():
    """Default ``LMNN().fit`` on the digits standard split vs metric-learn 0.7.0's LMNN,
    side by side: metric-learn runs in the interpreter named by ``METRIC_LEARN_PYTHON``
    (a separate venv with numpy<1.25, scipy<1.11, scikit-learn<1.3, metric-learn==0.7.0;
    it does not install next to today's scikit-learn), both on this machine now."""
    import os
    import tempfile

    from convexmetric import LMNN

    X, y, Xte, yte, T = instance("digits")
    print(f"\n== digits default fit vs metric-learn 0.7.0: {X.shape[0]} × {X.shape[1]}")
    times, model = [], None
    for _ in range(3):
        t0 = time.perf_counter()
        model = LMNN(k=3, mu=0.5).fit(X, y)
        times.append(time.perf_counter() - t0)
    r, ours = model.result_, min(times)
    print(
        f"convexmetric LMNN().fit: {ours:.2f} s (best of 3: "
        f"{', '.join(f'{t:.2f}' for t in times)}), objective {r.objective:.4f}, certified "
        f"gap {r.info['certified_gap']:.1e} [{r.status}], 3-NN test error "
        f"{knn_error(model.transform(X), y, model.transform(Xte), yte, 3):.2%}"
    )
    python = os.environ.get("METRIC_LEARN_PYTHON")
    if not python:
        print(
            f"  (METRIC_LEARN_PYTHON unset: metric-learn's recorded {METRIC_LEARN_SECONDS} s; "
            f"time ratio {ours / METRIC_LEARN_SECONDS:.2f}, target ≤ 0.33)"
        )
        return
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/X.npy", X)
        np.save(f"{tmp}/y.npy", y)
        out = subprocess.run([python, "-c", ML_SCRIPT, tmp], check=True, capture_output=True,
                             text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))  # fmt: skip
        ml_seconds = float(out.stdout.split()[-1])
        L = np.load(f"{tmp}/L.npy")
    ml_obj = P.objective(L.T @ L, X, T, y, 0.5)
    print(
        f"metric-learn 0.7.0 LMNN: {ml_seconds:.2f} s, objective {ml_obj:.4f} (eq. (14) at "
        f"its metric), 3-NN test error {knn_error(X @ L.T, y, Xte @ L.T, yte, 3):.2%}\n"
        f"  time ratio ours / metric-learn {ours / ml_seconds:.2f} (target ≤ 0.33); "
        f"objective ratio {r.objective / ml_obj:.4f}"
    )


def scale_child(name):
    """One default ``LMNN().fit`` of the scale issue; prints one JSON line."""
    from convexmetric import LMNN

    if name == "overlapping":  # the recipe, raw features, LMNN(k=3, mu=0.5).fit(X, y)
        X, y = datasets.overlapping_classes(20000, 20, 10, random_state=0)
        Xte = yte = None
    else:  # training split of augmented_digits (by source image), default LMNN()
        X, Xte, y, yte = datasets.load_split("augmented_digits")
    t0 = time.perf_counter()
    model = LMNN(k=3, mu=0.5).fit(X, y)
    seconds = time.perf_counter() - t0
    r = model.result_
    out = {
        "name": name,
        "n": int(X.shape[0]),
        "d": int(X.shape[1]),
        "seconds": seconds,
        "objective": r.objective,
        "lower_bound": r.lower_bound,
        "certified_gap": (r.objective - r.lower_bound) / abs(r.objective),
        "status": r.status,
        "mode": r.info["mode"],
        "full_checks": r.info.get("full_checks"),
        "stream_evaluations": r.info.get("stream_evaluations"),
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }
    if Xte is not None:
        Z, Zte = model.transform(X), model.transform(Xte)
        out["knn_test_error"] = knn_error(Z, y, Zte, yte, 3)
        out["euclidean_knn_test_error"] = knn_error(X, y, Xte, yte, 3)
    print(json.dumps(out))


def scale():
    """The must-show rows of the scale issue, each in its own process (peak RSS its own)."""
    print("\n== LMNN at scale (default LMNN(k=3, mu=0.5), memory_limit 1 GiB)")
    for name in ("overlapping", "augmented_digits"):
        proc = subprocess.run(
            [sys.executable, __file__, "--scale-child", name],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"{name}: {r['n']} × {r['d']}, mode {r['mode']}, objective {r['objective']:.6g}, "
            f"lower bound {r['lower_bound']:.6g}, certified gap {r['certified_gap']:.1e} "
            f"(target 1e-3: ratio {r['certified_gap'] / 1e-3:.2f}) [{r['status']}], "
            f"{r['seconds']:.0f} s (ratio to 600 s: {r['seconds'] / 600:.2f}), peak RSS "
            f"{r['peak_rss_gib']:.2f} GiB (ratio to 2 GiB: {r['peak_rss_gib'] / 2:.2f})"
        )
        if "knn_test_error" in r:
            print(
                f"  3-NN test error: LMNN {r['knn_test_error']:.2%} vs Euclidean "
                f"{r['euclidean_knn_test_error']:.2%} (ratio "
                f"{r['knn_test_error'] / max(r['euclidean_knn_test_error'], 1e-12):.2f})"
            )
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="skip the plain CVXPY solves")
    ap.add_argument("--scale", action="store_true", help="only the rows of the scale issue")
    ap.add_argument(
        "--versus",
        action="store_true",
        help="only the digits default fit vs metric-learn (METRIC_LEARN_PYTHON)",
    )
    ap.add_argument("--synthetic-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scale-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.synthetic_child:
        synthetic_child()
        return
    if args.scale_child:
        scale_child(args.scale_child)
        return
    if args.scale:
        scale()
        return
    if args.versus:
        versus_metric_learn()
        return
    for name in ("iris", "wine", "breast_cancer"):  # plain CVXPY on breast_cancer: too slow
        small(name, plain=not args.quick and name != "breast_cancer")
    digits()
    versus_metric_learn()
    print()
    sys.stdout.flush()
    subprocess.run([sys.executable, __file__, "--synthetic-child"], check=True)
    scale()


if __name__ == "__main__":
    main()
