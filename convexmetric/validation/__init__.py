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

PAPERS = ("lmnn", "poe", "maurer", "aroma")


def validate(paper, data=None, *, name=None, conic_solver=None, exact=True, random_state=0,
             callback=None, **settings):  # fmt: skip
    """Solve one instance of a paper's convex problem exactly and at scale, and compare.

    The exact side is CVXPY with a named conic solver; the large-scale side is each of
    the paper's own solvers; the report has one schema for every paper (module doc).

    Parameters
    ----------
    paper : {"lmnn", "poe", "maurer", "aroma"}
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
    common = {"conic_solver": conic_solver, "exact": bool(exact)}
    if paper == "ssne":
        raise ValueError(
            "SSNE is not convex: it has no exact solve to validate against (see its "
            "restarts and objective history instead)."
        )
    if paper not in PAPERS:
        raise ValueError(f"The 'paper' parameter must be one of {PAPERS}. Got {paper!r} instead.")
    if paper == "lmnn":
        from . import lmnn as mod

        X, y, default = mod.default_data() if data is None else (*data, "data")
        return mod.validate(X, y, name=name or default, random_state=random_state,
                            callback=callback, **common, **settings)  # fmt: skip
    if paper == "maurer":
        return _maurer(data, name, random_state, callback, common, settings)
    if paper == "poe":
        return _poe(data, name, random_state, callback, common, settings)
    return _aroma(data, name, random_state, common, settings)


def _poe(data, name, random_state, callback, common, settings):
    from . import poe as mod

    shape = {k: settings.pop(k) for k in ("n_per_class", "n_comparisons") if k in settings}
    if data is None:
        C, D, default = mod.default_data(settings.get("kind", "kernel"), **shape,
                                         random_state=random_state)  # fmt: skip
    else:
        (C, D), default = data, "data"
    return mod.validate(C, D, name=name or default, callback=callback, **common, **settings)


def _aroma(data, name, random_state, common, settings):
    from . import aroma as mod

    shape = {k: settings.pop(k) for k in ("n_items", "n_features") if k in settings}
    X, y, default = (
        mod.default_data(**shape, random_state=random_state) if data is None else (*data, "data")
    )
    return mod.validate(X, y, name=name or default, random_state=random_state, **common,
                        **settings)  # fmt: skip


def _maurer(data, name, random_state, callback, common, settings):
    from ..maurer.pairs import Pairs
    from . import maurer as mod

    n_pairs, oracle = settings.pop("n_pairs", 300), settings.pop("oracle", "balanced")
    if isinstance(data, Pairs):
        pairs, default = data, "pairs"
    else:
        X, y, default = mod.default_data() if data is None else (*data, "data")
        pairs = mod.draw_pairs(X, y, n_pairs, oracle, random_state)
    return mod.validate(pairs, name=name or default, random_state=random_state,
                        callback=callback, **common, **settings)  # fmt: skip


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
