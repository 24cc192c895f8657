"""CVXPY formulations, one module per paper (importable as ``convexmetric.problems``).

Each module gives a builder returning the ``cp.Problem`` with its variables, and a
numpy ``objective(...)`` of the very same function; the tests hold the two against
each other at the CVXPY solution.
"""

from .common import solve_problem

__all__ = ["solve_problem"]
