"""``import convexmetric`` does not import cvxpy: only building an exact problem does."""

import subprocess
import sys

LIGHT = """
import sys
import convexmetric, convexmetric.problems
import convexmetric.lmnn, convexmetric.lmnn.multi.solver, convexmetric.poe, convexmetric.maurer
import convexmetric.aroma, convexmetric.ssne, convexmetric.verifier, convexmetric.optim.stages
print("cvxpy" in sys.modules)
"""

EXACT = """
import sys
import numpy as np
from convexmetric.problems import maurer
U, r = np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([1.0, -1.0])
maurer.objective(np.eye(2), U, r, lam=0.1)  # the numpy half
print("cvxpy" in sys.modules)
maurer.build(U, r, lam=0.1)  # the exact half
print("cvxpy" in sys.modules)
"""


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_import_does_not_import_cvxpy():
    assert _run(LIGHT) == ["False"]


def test_only_building_a_problem_imports_cvxpy():
    assert _run(EXACT) == ["False", "True"]
