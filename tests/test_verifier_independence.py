"""The verifier shares no code with the oracles, solvers or engine (issues 36 and 63):
its modules import numpy, scipy, the standard library and each other, nothing else —
read from their source, and run: a fresh interpreter with every other
``convexmetric.*`` module blocked verifies a fit of each kind."""

import ast
import json
import pathlib
import pickle
import subprocess
import sys
import types

import numpy as np

import convexmetric.verifier as V

ALLOWED = {"numpy", "scipy", "__future__"}


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, 0) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield (node.module or "", node.level)


def test_verifier_imports_nothing_of_the_solvers():
    root = pathlib.Path(V.__file__).parent
    files = sorted(root.glob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "lmnn.py", "poe.py", "maurer.py"}
    for f in files:
        for name, level in _imports(f):
            top = name.split(".")[0]
            if level == 0:
                ok = top in ALLOWED or top in sys.stdlib_module_names
            elif level == 1:  # the verifier's own modules
                ok = True
            else:  # convexmetric.<x>: nothing
                ok = False
            assert ok, f"{f.name} imports {'.' * level}{name}"


def test_verifier_has_no_dynamic_import():
    # importlib, __import__ or sys.modules would reach modules the import statements hide
    root = pathlib.Path(V.__file__).parent
    for f in sorted(root.glob("*.py")):
        text = f.read_text(encoding="utf-8")
        for word in ("importlib", "__import__", "sys.modules", "exec(", "eval("):
            assert word not in text, f"{f.name} uses {word}"


BLOCKED = """
import importlib.abc, json, pickle, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith("convexmetric.") and not name.startswith("convexmetric.verifier"):
            raise ImportError("blocked: " + name)
        return None

sys.meta_path.insert(0, Block())
from convexmetric.verifier import verify_fitted

with open(sys.argv[1], "rb") as fh:
    cases = pickle.load(fh)
out = {name: verify_fitted(fitted, *args, tol=tol).verified
       for name, (fitted, args, tol) in cases.items()}
loaded = sorted(m for m in sys.modules if m.startswith("convexmetric"))
print(json.dumps({"verified": out, "loaded": loaded}))
"""


def _cases():
    """A certified fit of every kind, as the verifier reads it, with its data in plain
    numpy arrays and namespaces (nothing of the library needed to read them)."""
    from conftest import poe_instance

    from convexmetric import LMNN, MKPOE, POE, KernelLMNN, MultiMetricLMNN, datasets
    from convexmetric.maurer.estimators import OperatorSimilarity
    from convexmetric.maurer.pairs import balanced_pairs
    from convexmetric.verifier import Fitted

    X, _, y, _ = datasets.load_split("iris")
    fits = {"lmnn": (LMNN(), (X, y)), "lmnn_multi": (MultiMetricLMNN(), (X, y)),
            "lmnn_kernel": (KernelLMNN(kernel="rbf"), (X, y))}  # fmt: skip
    Xp, C = poe_instance(25, 200, flip=0.1)
    Cs = np.column_stack([np.asarray(getattr(C, a)) for a in "ijkl"])
    D2 = ((Xp[:, None] - Xp[None]) ** 2).sum(-1)
    fits["poe"] = (POE(beta=10.0), (Cs, Xp))
    fits["mkpoe"] = (MKPOE(beta=10.0), (Cs, [Xp @ Xp.T, np.exp(-D2 / 4.0)]))
    rng = np.random.default_rng(0)
    ym = rng.integers(0, 4, 40)
    Xm = rng.standard_normal((4, 3))[ym] * 1.5 + rng.standard_normal((40, 3))
    Xm /= 2 * np.linalg.norm(Xm - Xm.mean(0), axis=1).max()
    pairs = balanced_pairs(Xm, ym, 120, random_state=2)
    plain = types.SimpleNamespace(points=pairs.points, i=pairs.i, j=pairs.j, r=pairs.r)
    fits["maurer"] = (OperatorSimilarity(reg_weight=0.05, solver="subgradient"), (plain,))
    cases = {}
    for name, (est, args) in fits.items():
        fit_args = (pairs,) if name == "maurer" else args
        est.fit(*fit_args)
        assert est.result_.status == "optimal", name
        cases[name] = (Fitted.from_estimator(est), args, getattr(est, "tol", None))
    return cases


def test_verifies_every_kind_with_the_rest_of_the_library_blocked(tmp_path):
    path = tmp_path / "cases.pkl"
    cases = _cases()
    with open(path, "wb") as fh:
        pickle.dump(cases, fh)
    run = subprocess.run([sys.executable, "-c", BLOCKED, str(path)], capture_output=True,
                         text=True, check=True)  # fmt: skip
    out = json.loads(run.stdout)
    assert out["verified"] == {name: True for name in cases}, out
    assert all(m == "convexmetric" or m.startswith("convexmetric.verifier")
               for m in out["loaded"]), out["loaded"]  # fmt: skip


def test_importing_the_verifier_loads_no_solver():
    code = "import json, sys, convexmetric.verifier; print(json.dumps(sorted(sys.modules)))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mods = json.loads(run.stdout)
    loaded = [m for m in mods if m.startswith("convexmetric")]
    assert all(m == "convexmetric" or m.startswith("convexmetric.verifier") for m in loaded)
    assert not any(m in mods for m in ("sklearn", "cvxpy", "networkx"))
