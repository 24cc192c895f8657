"""The figures of the house rules: import cycles, module sizes, function sizes.

Run from the repository root: ``python tools/house.py`` (``--strict``: exit 1 when a rule
is broken). It reads the package's own sources (``convexmetric/``, the CVXPY formulations and
the command line included) and prints

* import cycles between modules (from ``import``/``from … import`` statements anywhere in
  a module, functions included; a package's ``__init__`` counts as a module);
* modules over 400 lines;
* functions over 80 lines, and functions with more than 10 parameters (``self``/``cls``
  not counted; an estimator's ``__init__``, which lists scikit-learn hyperparameters,
  excepted);
* totals: modules, lines, and the lines of the solver code (oracles, solvers,
  certificates and the engine).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

ROOTS = {"convexmetric": "convexmetric"}
MAX_MODULE, MAX_FUNCTION, MAX_PARAMS = 400, 80, 10
#: the solver code: the engine, and each paper's oracles, solvers and certificates
SOLVER_PARTS = ("optim/", "active_list", "oracle", "solver", "certificate", "stream",
                "factored", "diagonal", "sgd", "exact", "dask_", "steps", "_ascent")  # fmt: skip


def modules(top="."):
    out = {}
    for d, pkg in ROOTS.items():
        for dp, _, files in os.walk(os.path.join(top, d)):
            for f in sorted(files):
                if f.endswith(".py"):
                    path = os.path.join(dp, f)
                    rel = os.path.relpath(path, os.path.join(top, d))[:-3].replace(os.sep, ".")
                    name = pkg if rel == "__init__" else f"{pkg}.{rel.removesuffix('.__init__')}"
                    out[name] = path
    return out


def imports(name, path, known):
    tree = ast.parse(open(path, encoding="utf-8").read())
    is_pkg = path.endswith("__init__.py")
    deps = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = name.split(".") if is_pkg else name.split(".")[:-1]
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                full = f"{mod}.{a.name}"
                deps.add(full if full in known else mod)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names)
    return {d for d in deps if d in known and d != name}


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def functions(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    estimator_init = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            getattr(b, "id", getattr(b, "attr", "")).endswith(("BaseEstimator", "Mixin"))
            or getattr(b, "id", "").startswith("_")
            for b in node.bases
        ):
            estimator_init.update(
                id(f) for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"
            )
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs
                      if p.arg not in ("self", "cls")]  # fmt: skip
            params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
            yield (
                node.name,
                node.lineno,
                node.end_lineno - node.lineno + 1,
                len(params),
                (id(node) in estimator_init),
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a rule is broken")
    args = ap.parse_args()
    mods = modules()
    graph = {m: imports(m, p, mods) for m, p in mods.items()}
    broken = 0
    loops = cycles(graph)
    print(f"import cycles: {len(loops)}")
    for c in loops:
        print("  " + " <-> ".join(c))
    broken += len(loops)
    lines = {m: sum(1 for _ in open(p, encoding="utf-8")) for m, p in mods.items()}
    big = {m: n for m, n in lines.items() if n > MAX_MODULE}
    print(f"modules over {MAX_MODULE} lines: {len(big)}")
    for m, n in sorted(big.items(), key=lambda kv: -kv[1]):
        print(f"  {mods[m]} {n}")
    broken += len(big)
    long_f, many_p = [], []
    for p in mods.values():
        for name, line, length, n_params, est_init in functions(p):
            if length > MAX_FUNCTION:
                long_f.append(f"{p}:{line} {name} ({length} lines)")
            if n_params > MAX_PARAMS and not est_init:
                many_p.append(f"{p}:{line} {name} ({n_params} parameters)")
    print(f"functions over {MAX_FUNCTION} lines: {len(long_f)}")
    for s in long_f:
        print("  " + s)
    print(f"functions with more than {MAX_PARAMS} parameters (estimators' __init__ excepted): "
          f"{len(many_p)}")  # fmt: skip
    for s in many_p:
        print("  " + s)
    broken += len(long_f) + len(many_p)
    solver = sum(n for m, n in lines.items()
                 if m.startswith("convexmetric.") and not m.startswith(("convexmetric.cli",
                                                                         "convexmetric.problems"))
                 and any(part in mods[m] for part in SOLVER_PARTS))  # fmt: skip
    print(f"modules: {len(mods)}, lines: {sum(lines.values())}, solver code lines: {solver}")
    return 1 if (args.strict and broken) else 0


if __name__ == "__main__":
    sys.exit(main())
