"""``validate``: one instance solved exactly (CVXPY) and with the large-scale solvers,
reported in one schema for every paper.

The report (a ``ValidationReport``; ``as_dict()`` is what ``convexmetric validate
METHOD --json`` prints) has the same keys for every paper::

    {"schema": "convexmetric.validate/1",
     "paper": "lmnn" | "poe" | "maurer" | "aroma",
     "instance": {"name", "description", "n_points", "n_features", "n_terms", "terms"},
     "settings": {the formulation's hyperparameters, by the paper's names},
     "exact": null | {"solver", "status", "objective", "seconds", "tolerances",
                      "lower_bound", "measures"},
     "solvers": {"<name>": {"status", "objective", "lower_bound", "certified_gap",
                            "gap_to_exact", "seconds", "measures"}}}

``gap_to_exact`` is ``(objective − exact objective) / |exact objective|`` (None without
the exact side); ``certified_gap`` is :func:`convexmetric.result.certified_gap` of the
solver's own dual lower bound (None without one: the online learners, SGD without a
certificate). ``tolerances`` are the conic solver's options. ``measures`` holds what only
one paper reports (``cvxpy_value``, ``numpy_objective``, ``mean_hinge``); it is always
present, possibly empty. Numbers that are NaN or infinite are written as null.

The command adds ``"inputs"`` (the files read) and ``"split"`` (the rows used), null
when it read none. SSNE is not convex: it has no exact side, and ``validate("ssne")``
raises.
"""

from __future__ import annotations

from .report import (
    EXACT_KEYS,
    INSTANCE_KEYS,
    SCHEMA,
    SOLVER_KEYS,
    TOP_KEYS,
    ValidationReport,
)


def __getattr__(name):
    if name == "PAPERS":  # the formulations that can be validated, read when asked
        from ..formulations import FORMULATIONS

        return tuple(n for n, f in FORMULATIONS.items() if f.validate)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate(
    paper,
    data=None,
    *,
    name=None,
    conic_solver=None,
    exact=True,
    random_state=0,
    callback=None,
    **settings,
):
    """Solve one instance of a paper's convex problem exactly and at scale, and compare.

    The exact side is CVXPY with a named conic solver; the large-scale side is each of
    the paper's own solvers; the report has one schema for every paper (module doc).

    Parameters
    ----------
    paper : {"lmnn", "poe", "maurer", "aroma"} or a registered formulation
        (``convexmetric.formulations``).
    data : tuple, optional
        ``"lmnn"``: ``(X, y)``, used as given (default: the standardised training part
        of iris' standard split). ``"maurer"``: ``(X, y)``, scaled to diameter 1, from
        which ``n_pairs`` pairs (default 300) are drawn by ``oracle`` ("balanced" or
        "labels"), or a :class:`~convexmetric.maurer.pairs.Pairs` used as it is (default:
        iris). ``"poe"``: ``(comparisons, features_or_kernels)`` (default: the taxonomy
        instance of §5.1, ``n_per_class``, ``n_comparisons``). ``"aroma"``: ``(X, y)``,
        from which ``n_triplets`` triplets are drawn (default: a bag of features,
        ``n_items`` × ``n_features``).
    name : str, optional
        The instance's name in the report.
    conic_solver : {"CLARABEL", "SCS"}, optional
        The exact side's conic solver (default CLARABEL; SCS for LMNN's plain solve and its
        kernel variant).
    exact : bool, default=True
        False skips CVXPY: ``exact`` is None and the certificates stand alone.
    random_state : int, default=0
        Seeds the instance (pairs, triplets, comparisons, clusters) and the SGD.
    callback : callable, optional
        ``callback(iteration, objective, step)`` of the solver that takes one.
    **settings
        The paper's hyperparameters: LMNN ``k``, ``mu``, ``variant``
        ("single", "multi", "kernel"), ``per_class``, ``n_clusters``, ``kernel``,
        ``gamma``, ``plain``; Maurer ``reg_weight``, ``margin``, ``margin_neg``,
        ``regularizer``, ``max_iter``; POE ``kind``, ``diagonal``, ``beta``; AROMA ``C``, ``r``,
        ``epochs``.

    Returns
    -------
    ValidationReport
        ``paper``, ``instance``, ``settings``, ``exact`` and ``solvers`` as attributes;
        ``as_dict()`` gives the JSON schema of the module docstring.

    Examples
    --------
    >>> from convexmetric import validate
    >>> rep = validate("aroma", n_items=30, n_features=5, n_triplets=40, epochs=2)
    >>> sorted(rep.as_dict()) == sorted(["schema", "paper", "instance", "settings",
    ...                                  "exact", "solvers"])
    True
    >>> rep.exact["status"], sorted(rep.solvers)
    ('optimal', ['OASIS', 'd-AROMA', 'f-AROMA'])
    """
    common = {"conic_solver": conic_solver, "exact": bool(exact), "callback": callback}
    return _entry(paper)(data, name=name, random_state=random_state, **common, **settings)


def _entry(paper):
    """The registered formulation's validation entry (``convexmetric.formulations``)."""
    from ..formulations import FORMULATIONS, get, resolve

    entry = FORMULATIONS.get(paper)
    if entry is not None and entry.exact is None:
        raise ValueError(
            f"{paper.upper()} is not convex: it has no exact solve to validate against (see "
            "its restarts and objective history instead)."
        )
    return resolve(get(paper, "validate").validate)


__all__ = [
    "EXACT_KEYS",
    "INSTANCE_KEYS",
    "PAPERS",
    "SCHEMA",
    "SOLVER_KEYS",
    "TOP_KEYS",
    "ValidationReport",
    "validate",
]
