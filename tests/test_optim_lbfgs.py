"""The engine's own L-BFGS and its Moré–Thuente line search (``optim.lbfgs``,
``optim.wolfe``): the same steps as scipy's L-BFGS-B on problems without bounds, the
strong Wolfe conditions, and the null step where the objective changes under a search."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

from convexmetric.optim.deadline import Deadline
from convexmetric.optim.lbfgs import LBFGS, Memory
from convexmetric.optim.wolfe import wolfe_step


class Smooth:
    """An engine oracle of a smooth function (no bounds), counting its calls."""

    bounds = None

    def __init__(self, f, g):
        self.f, self.g, self.calls = f, g, 0

    def smooth(self, x, sigma, grad=True):
        self.calls += 1
        return (self.f(x), self.g(x)) if grad else self.f(x)


class Counts:
    iterations = evaluations = 0


RNG = np.random.default_rng(1)
A = RNG.normal(size=(60, 60))
Q, B = A @ A.T + 0.1 * np.eye(60), RNG.normal(size=60)
PROBLEMS = {
    "rosenbrock": (rosen, rosen_der, np.full(30, -1.2)),
    "quadratic": (lambda x: 0.5 * x @ Q @ x - B @ x, lambda x: Q @ x - B, np.zeros(60)),
    "softplus": (
        lambda x: float(np.logaddexp(0, 5 * (A @ x - 1)).sum() / 5 + 0.05 * x @ x),
        lambda x: A.T @ (1 / (1 + np.exp(-5 * (A @ x - 1)))) + 0.1 * x,
        np.ones(60),
    ),
}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("budget", [5, 40])
def test_the_same_steps_as_scipy_lbfgsb(name, budget):
    """Iterates, iteration and evaluation counts as scipy's L-BFGS-B without bounds
    (the line searches with several trials included: Rosenbrock's take 24 evaluations
    in 20 iterations)."""
    f, g, x0 = PROBLEMS[name]
    counts, oracle = Counts(), Smooth(f, g)
    x, stopped = LBFGS(maxcor=10).run(oracle, x0.copy(), 1.0, budget, Deadline(None), counts)
    opts = {"maxiter": budget, "maxcor": 10, "gtol": 1e-12, "ftol": 1e-15}
    ref = minimize(lambda v: (f(v), g(v)), x0.copy(), jac=True, method="L-BFGS-B", options=opts)
    assert not stopped
    assert (counts.iterations, counts.evaluations) == (ref.nit, ref.nfev)
    assert np.allclose(x, ref.x, rtol=0, atol=1e-6)  # rounding: two-loop against compact form
    assert oracle.calls == counts.evaluations


@pytest.mark.parametrize("b", [0.01, 5.0, 400.0])
@pytest.mark.parametrize("first", [1e-4, 1.0, 50.0])
def test_an_accepted_step_meets_both_wolfe_conditions(b, first):
    """From trials far too short (extrapolation) or far too long (interpolation)."""
    slope0 = -2.0

    def phi(t):
        value = 1.0 + slope0 * t + b * t * t + 0.3 * np.sin(t) ** 2
        return value, slope0 + 2 * b * t + 0.3 * np.sin(2 * t), t

    t, f, data = wolfe_step(phi, 1.0, slope0, first)
    assert data == t > 0
    assert f <= 1.0 + 1e-3 * t * slope0
    assert abs(phi(t)[1]) <= 0.9 * abs(slope0)


def test_a_jump_under_the_search_ends_in_a_null_step():
    """An active list that grew between the start and the first trial: every trial lies
    above ``φ(0)``; the search shrinks to ``t = 0`` and returns the new value there, as
    L-BFGS-B does (the stage then ends by its relative-reduction test)."""

    def phi(t):
        return (0.0 if t == 0 else 0.5) - 0.1 * t + 0.03 * t * t, -0.1 + 0.06 * t, None

    t, f, _ = wolfe_step(phi, 0.0, -0.113, 1.0)
    assert t == 0.0 and f == 0.0  # the re-evaluation at 0 (here the old value)
    seen = []
    wolfe_step(lambda t: seen.append(t) or phi(t), 0.0, -0.113, 1.0, max_evals=3)
    assert len(seen) == 3  # the budget bounds the trials


def test_memory_keeps_curvature_pairs_only():
    memory = Memory(2)
    g = np.array([1.0, -2.0])
    assert np.array_equal(memory.direction(g), -g)
    memory.push(np.array([1.0, 0.0]), np.array([-1.0, 0.0]))  # sᵀy < 0: dropped
    assert not memory
    for k in range(3):
        memory.push(np.array([1.0, k]), np.array([2.0, k + 1.0]))
    assert len(memory.pairs) == 2  # the oldest left
    s, y, _ = memory.pairs[-1]
    assert np.allclose(memory.direction(y), -s)  # the secant equation H y = s


class Rounded(Smooth):
    """Values rounded by a relative ``δ(x) ∈ [−ROUNDING, ROUNDING]``, a fixed function of
    the point (as single-precision trials are); gradients exact."""

    def smooth(self, x, sigma, grad=True):
        out = super().smooth(x, sigma, grad)
        u = np.random.default_rng(list(np.frombuffer(x.tobytes(), np.uint32))).uniform(-1, 1)
        f = (out[0] if grad else out) * (1.0 + ROUNDING * u)
        return (f, out[1]) if grad else f


ROUNDING = 1e-5


def test_a_stage_ends_at_a_long_search_within_the_values_rounding():
    """An oracle that declares its values' rounding (``trial_rtol``: LMNN's
    single-precision trials) ends the stage at a step that searched more than two trials
    for a gain within ``NOISY_GAIN`` times it: at the same floor as the run that searches
    on in the rounding until its searches fail, in far fewer evaluations."""
    f, g, x0 = PROBLEMS["quadratic"]
    fmin = f(np.linalg.solve(Q, B))
    runs = {}
    for declared in (False, True):
        oracle, counts = Rounded(f, g), Counts()
        oracle.trial_rtol = ROUNDING if declared else 0.0
        x, _ = LBFGS(maxcor=10).run(oracle, x0.copy(), 1.0, 400, Deadline(None), counts)
        runs[declared] = (counts.iterations, counts.evaluations, (f(x) - fmin) / abs(fmin))
    assert all(gap <= 10 * ROUNDING for _, _, gap in runs.values())  # at the floor
    assert runs[True][1] < 0.8 * runs[False][1]  # (105 evaluations against 151)
    assert runs[True][1] > runs[True][0]  # it ended after a search, not a first trial
