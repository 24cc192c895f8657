"""The verifier shares no code with the oracles, solvers or engine (issue 36): its
modules import numpy, scipy, the standard library, ``convexmetric.result`` (the one
definition of the certified gap) and each other, nothing else."""

import ast
import pathlib
import sys

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
            else:  # convexmetric.<x>: only result
                ok = level == 2 and name == "result"
            assert ok, f"{f.name} imports {'.' * level}{name}"
