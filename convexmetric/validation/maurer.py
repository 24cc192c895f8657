"""Validation of Maurer's operator-valued similarity (JMLR 2008): eq. (5) over the PSD
cone exactly and with the projected subgradient (with and without the smoothed
refinement) and the SGD of Table 1, in one report."""

from __future__ import annotations

from .report import Recorder, ValidationReport, exact_entry, instance, settings_of

#: the exact problem has D² unknowns: refused above this many features
MAX_EXACT_FEATURES = 40


def default_data(random_state=0):
    """The default instance: the iris data (its pairs are drawn by the oracle)."""
    from .. import datasets

    X, y = datasets.load("iris")
    return X, y, "iris"


def draw_pairs(X, y, n_pairs, oracle="balanced", random_state=0):
    """Pairs of the points scaled to diameter 1 (:class:`~convexmetric.preprocessing.
    DiameterScaler`), drawn by Maurer's balanced (§5.1) or label (eq. 10) oracle."""
    from ..maurer.base import ORACLES
    from ..preprocessing import DiameterScaler

    if oracle not in ORACLES:
        raise ValueError(
            f"The 'oracle' parameter must be one of {sorted(ORACLES)}. Got {oracle!r} instead."
        )
    Xs = DiameterScaler().fit_transform(X)
    return ORACLES[oracle](Xs, y, n_pairs, random_state=random_state)


#: the settings of :func:`validate` and their defaults
DEFAULTS = {
    "reg_weight": 0.005,
    "margin": 1.0,
    "margin_neg": None,
    "regularizer": "hs",
    "max_iter": 100_000,
}


def validate(pairs, *, name, conic_solver=None, exact=True, random_state=0, callback=None, **given):
    """Maurer both ways; see :func:`convexmetric.validate` for the arguments."""
    from ..maurer import solver as solvers
    from ..problems import maurer as problem

    s = settings_of("maurer", given, DEFAULTS)
    # eq. (5): λ the regulariser's weight, γ₁ and γ₋₁ the margins
    lam, gamma, gamma_neg = s["reg_weight"], s["margin"], s["margin_neg"]
    regularizer = s["regularizer"]
    max_iter = s["max_iter"]

    pairs.require_both()
    U, r = pairs.differences, pairs.r
    conic = (conic_solver or "CLARABEL") if exact else None
    if U.shape[1] > MAX_EXACT_FEATURES and exact:
        raise ValueError(
            f"the exact problem has {U.shape[1]} features; validate instances with at most "
            f"{MAX_EXACT_FEATURES} (A has D² entries), or skip the exact solve."
        )
    settings = {**s, "conic_solver": conic, "random_state": random_state}
    inst = instance(
        name, f"{name} ({len(r)} pairs, {U.shape[1]} features)", None, U.shape[1], len(r), "pairs"
    )
    report = ValidationReport("maurer", inst, settings, None)
    args = (U, r, lam, gamma, gamma_neg, regularizer)
    if exact:
        from ..problems.common import SOLVER_OPTIONS

        A, val, status, sec = problem.solve(*args, solver=conic)
        report.exact = exact_entry(
            conic,
            status,
            val,
            sec,
            SOLVER_OPTIONS[conic],
            numpy_objective=problem.objective(A, *args),
        )
    report.add("subgradient", solvers.solve_projected(*args, refine=False))
    report.add("subgradient+smoothing", solvers.solve_projected(*args))
    trace = Recorder(callback)
    sgd = solvers.sgd(
        solvers.LinearBackend(U),
        *args[1:],
        max_iter=max_iter,
        random_state=random_state,
        callback=trace,
    )
    report.add("sgd", sgd, trace=trace)
    return report


def run(data, *, name=None, random_state=0, callback=None, **given):
    """:func:`convexmetric.validate`'s entry: ``data`` is ``(X, y)`` (``n_pairs`` pairs
    drawn by ``oracle``), a :class:`~convexmetric.maurer.pairs.Pairs`, or None (iris)."""
    from ..maurer.pairs import Pairs

    n_pairs, oracle = given.pop("n_pairs", 300), given.pop("oracle", "balanced")
    if isinstance(data, Pairs):
        pairs, default = data, "pairs"
    else:
        X, y, default = default_data() if data is None else (*data, "data")
        pairs = draw_pairs(X, y, n_pairs, oracle, random_state)
    return validate(
        pairs, name=name or default, random_state=random_state, callback=callback, **given
    )
