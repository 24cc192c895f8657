"""Every method's reference rows, through the public API only: objective, certificate, time.

Each row is one fit of a public estimator (or one ``convexmetric validate … --json``)
on built-in data, reporting its objective, certified lower bound and gap, status and
seconds. The rows use nothing but ``from convexmetric import …``, ``datasets`` and the
command line, so the same script measures two checkouts side by side:

    python benchmarks/bench_rows.py                      # every row, this checkout
    python benchmarks/bench_rows.py --rows lmnn poe      # rows whose name starts so
    python benchmarks/bench_rows.py --json out.json      # also write the rows as JSON
    python benchmarks/bench_rows.py --against OTHER/.venv/bin/python
        # each row in a child process of each interpreter, alternating, then a table:
        # objectives (relative difference), certified gaps, seconds and time ratio
    python benchmarks/bench_rows.py --check ref.json     # objectives vs saved rows

``--scale`` adds the two large LMNN rows (overlapping 20,000 × 20, augmented digits;
several minutes each). A row that a checkout cannot run (an option it lacks) is shown
as ``error`` with the message's first line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROWS = {}


def row(name, scale=False):
    def deco(f):
        ROWS[name] = (f, scale)
        return f

    return deco


def _result(est, **extra):
    r = est.result_
    out = {
        "objective": float(est.objective_ if hasattr(est, "objective_") else r.objective),
        "status": r.status,
        "iterations": int(r.iterations),
        "lower_bound": None if r.lower_bound is None else float(r.lower_bound),
    }
    out.update(extra)
    return out


def _split(name):
    from convexmetric import datasets

    return datasets.load_split(name)


def _lmnn(name, **kw):
    from convexmetric import LMNN

    Xtr, _, ytr, _ = _split(name)
    return _result(LMNN(**kw).fit(Xtr, ytr))


for _name in ("iris", "wine", "breast_cancer", "digits"):
    row(f"lmnn/{_name}")(lambda _n=_name: _lmnn(_n))
row("lmnn/wine-streaming")(lambda: _lmnn("wine", memory_limit=2**20))
row("lmnn/wine-metric-phase")(lambda: _lmnn("wine", refine=False))
row("lmnn/wine-passes-reduction")(lambda: _lmnn("wine", n_passes=2, n_components=5, reduction="R"))
row("lmnn/wine-exact")(lambda: _lmnn("wine", solver="exact"))
row("lmnn/digits-balltree")(lambda: _lmnn("digits", search="balltree"))


@row("lmnn/kernel-wine")
def _kernel_lmnn():
    from convexmetric import KernelLMNN

    Xtr, _, ytr, _ = _split("wine")
    return _result(KernelLMNN(kernel="rbf").fit(Xtr, ytr))


@row("lmnn/multi-iris")
def _multi_iris():
    from convexmetric import MultiMetricLMNN

    Xtr, _, ytr, _ = _split("iris")
    return _result(MultiMetricLMNN().fit(Xtr, ytr))


@row("lmnn/multi-digits-1e-3")
def _multi_digits():
    from convexmetric import MultiMetricLMNN

    Xtr, _, ytr, _ = _split("digits")
    return _result(MultiMetricLMNN(tol=1e-3).fit(Xtr, ytr))


def _taxonomy(*args, **kw):
    try:
        from convexmetric.datasets.taxonomy import make_taxonomy
    except ImportError:  # a checkout before the package per paper
        from convexmetric.taxonomy import make_taxonomy
    return make_taxonomy(*args, **kw)


def _poe_instances():
    T = _taxonomy(5, n_train_comparisons=500, n_test_comparisons=10, random_state=0)
    Ks = T.train_kernels()
    T2 = _taxonomy(10, n_train_comparisons=2000, n_test_comparisons=10, random_state=0)
    img = T2.X[T2.train].reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(T2.train), -1)
    return T, Ks, T2, img / 16.0


def _poe(kind, **kw):
    from convexmetric import MKPOE, POE

    T, Ks, T2, img = _poe_instances()
    if kind == "lpoe":
        return _result(POE(beta=100.0, **kw).fit(T2.train_comparisons, img))
    if kind == "kpoe":
        return _result(POE(beta=100.0, kernel="precomputed", **kw).fit(T.train_comparisons, Ks[0]))
    kernels = [Ks[0], Ks[1], Ks[5]]
    return _result(MKPOE(beta=100.0, **kw).fit(T.train_comparisons, kernels))


for _kind in ("lpoe", "kpoe", "mkpoe"):
    row(f"poe/{_kind}-full")(lambda _k=_kind: _poe(_k))
    row(f"poe/{_kind}-diagonal")(lambda _k=_kind: _poe(_k, diagonal=True))
row("poe/lpoe-full-tol")(lambda: _poe("lpoe", tol=1e-3))
row("poe/lpoe-diagonal-tol")(lambda: _poe("lpoe", diagonal=True, tol=1e-3))


@row("poe/mkpoe-aset330")
def _mkpoe_aset():
    from convexmetric import MKPOE

    T = _taxonomy(42, n_noise=1, n_train_comparisons=4400, n_test_comparisons=10,
                  test_size=90 / 420, random_state=0)  # fmt: skip
    Ks, names = T.train_kernels(), T.kernel_names
    keep = [0, 1, 2, 3, names.index("noise1")]
    return _result(MKPOE(beta=100.0, tol=1e-3).fit(T.train_comparisons, [Ks[p] for p in keep]))


def _maurer_data():
    Xtr, _, ytr, _ = _split("wine")
    return Xtr / np.linalg.norm(Xtr, axis=1).max(), ytr


@row("maurer/sgd-wine")
def _maurer_sgd():
    from convexmetric import OperatorSimilarity

    X, y = _maurer_data()
    m = OperatorSimilarity(reg_weight=0.01, max_iter=20000, random_state=0).fit(X, y)
    return _result(m)


@row("maurer/subgradient-wine")
def _maurer_sub():
    from convexmetric import OperatorSimilarity

    X, y = _maurer_data()
    m = OperatorSimilarity(reg_weight=0.01, solver="subgradient", n_pairs=500, random_state=0)
    m.fit(X, y)
    return _result(m)


@row("maurer/hyperbolic-pca-wine")
def _hpca():
    from convexmetric import HyperbolicPCA

    X, y = _maurer_data()
    return _result(HyperbolicPCA(n_components=3, random_state=0).fit(X, y))


def _bow():
    from convexmetric import datasets

    return datasets.load("bow")


@row("aroma/diagonal-bow")
def _daroma():
    from convexmetric import DiagonalAROMA

    X, y = _bow()
    m = DiagonalAROMA(max_iter=20000, random_state=0).fit(X, y)
    return {"objective": float(m.average_loss_), "status": "n/a", "iterations": m.n_rounds_,
            "lower_bound": None, "score": float(m.score(X, y))}  # fmt: skip


@row("aroma/factored-bow")
def _faroma():
    from convexmetric import FactoredAROMA

    X, y = _bow()
    m = FactoredAROMA(max_iter=2000, random_state=0).fit(X, y)
    return {"objective": float(m.average_loss_), "status": "n/a", "iterations": m.n_rounds_,
            "lower_bound": None, "score": float(m.score(X, y))}  # fmt: skip


@row("aroma/oasis-bow")
def _oasis():
    from convexmetric import OASIS

    X, y = _bow()
    m = OASIS(max_iter=20000, random_state=0).fit(X, y)
    return {"objective": float(m.average_loss_), "status": "n/a", "iterations": m.n_rounds_,
            "lower_bound": None, "score": float(m.score(X, y))}  # fmt: skip


@row("ssne/wine")
def _ssne():
    from convexmetric import SSNE

    Xtr, _, ytr, _ = _split("wine")
    return _result(SSNE(random_state=0).fit(Xtr, ytr))


def _validate(*args):
    """``convexmetric validate …`` in this interpreter; one row per solver of the report."""
    exe = os.path.join(os.path.dirname(sys.executable), "convexmetric")
    out = subprocess.run([exe, "validate", *args, "--json"], check=True, capture_output=True,
                         text=True)  # fmt: skip
    rep = json.loads(out.stdout)
    solvers = rep.get("solvers", {})
    first = next(iter(solvers.values()))
    return {
        "objective": float(first["objective"]),
        "status": first.get("status"),
        "iterations": None,
        "lower_bound": first.get("lower_bound"),
        "exact": rep.get("exact", {}).get("objective"),
        "solvers": {k: v.get("objective") for k, v in solvers.items()},
    }


row("validate/lmnn")(lambda: _validate("lmnn"))
row("validate/lmnn-wine")(lambda: _validate("lmnn", "--dataset", "wine"))
row("validate/poe")(lambda: _validate("poe"))
row("validate/maurer")(lambda: _validate("maurer"))
row("validate/aroma")(lambda: _validate("aroma"))


def _scale(name):
    import resource

    from convexmetric import LMNN, datasets

    if name == "overlapping":
        X, y = datasets.overlapping_classes(20000, 20, 10, random_state=0)
    else:
        X, _, y, _ = datasets.load_split("augmented_digits")
    out = _result(LMNN(k=3, mu=0.5).fit(X, y))
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return out


row("scale/overlapping", scale=True)(lambda: _scale("overlapping"))
row("scale/augmented_digits", scale=True)(lambda: _scale("augmented_digits"))


def run_row(name):
    import convexmetric  # noqa: F401  (the package's import is not the row's time)

    t0 = time.perf_counter()
    try:
        out = ROWS[name][0]()
    except Exception as exc:  # a checkout without the option: reported, not fatal
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        return {"name": name, "error": lines[-1][:200]}
    out["seconds"] = time.perf_counter() - t0
    lb, f = out.get("lower_bound"), out.get("objective")
    out["certified_gap"] = None if lb is None else max(f - lb, 0.0) / max(abs(f), 1e-12)
    out["name"] = name
    return out


def in_child(python, name):
    proc = subprocess.run([python, os.path.abspath(__file__), "--child", name],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode:
        return {"name": name, "error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(v, spec):
    return "—" if v is None else format(v, spec)


def table(pairs):
    print(f"{'row':30s} {'objective (after)':>20s} {'rel. diff':>9s} {'gap before':>10s} "
          f"{'gap after':>9s} {'s before':>8s} {'s after':>8s} {'ratio':>6s}")  # fmt: skip
    for a, b in pairs:
        if "error" in a or "error" in b:
            print(f"{b['name']:30s} error: {a.get('error') or b.get('error')}")
            continue
        diff = (b["objective"] - a["objective"]) / max(abs(a["objective"]), 1e-300)
        print(f"{b['name']:30s} {b['objective']:20.12g} {diff:9.1e} "
              f"{_fmt(a['certified_gap'], '10.1e')} {_fmt(b['certified_gap'], '9.1e')} "
              f"{a['seconds']:8.2f} {b['seconds']:8.2f} "
              f"{b['seconds'] / max(a['seconds'], 1e-9):6.2f}")  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", nargs="*", default=None, help="row-name prefixes (default: all)")
    ap.add_argument("--scale", action="store_true", help="add the large LMNN rows")
    ap.add_argument("--json", default=None, help="write the rows to this JSON file")
    ap.add_argument("--against", default=None, help="the other checkout's python interpreter")
    ap.add_argument("--check", default=None, help="compare objectives with a saved JSON file")
    ap.add_argument("--rtol", type=float, default=1e-8, help="--check's relative tolerance")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_row(args.child)))
        return 0
    names = [n for n, (_, sc) in ROWS.items() if (args.scale or not sc)
             and (not args.rows or any(n.startswith(p) for p in args.rows))]  # fmt: skip
    if args.against:
        pairs = []
        for n in names:  # alternate the two checkouts row by row (drift hits both alike)
            pairs.append((in_child(args.against, n), in_child(sys.executable, n)))
            print(json.dumps({"before": pairs[-1][0], "after": pairs[-1][1]}), flush=True)
        print()
        table(pairs)
        rows = [{"before": a, "after": b} for a, b in pairs]
    else:
        rows = []
        for n in names:
            rows.append(run_row(n))
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if args.check:
        with open(args.check) as fh:
            ref = {r["name"]: r for r in json.load(fh)}
        bad = 0
        for r in rows:
            old = ref.get(r["name"])
            if old is None or "error" in r or "error" in old:
                continue
            diff = abs(r["objective"] - old["objective"]) / max(abs(old["objective"]), 1e-300)
            flag = "" if diff <= args.rtol else "   <-- differs"
            bad += bool(flag)
            print(f"{r['name']:30s} {old['objective']:.12g} -> {r['objective']:.12g} "
                  f"({diff:.1e}){flag}")  # fmt: skip
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
