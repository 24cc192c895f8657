"""The one report of :func:`convexmetric.validate`, whatever the paper.

Every paper's validation fills the same :class:`ValidationReport`; its
:meth:`~ValidationReport.as_dict` is the JSON that ``convexmetric validate METHOD
--json`` prints. The keys are the same for every paper (see :data:`TOP_KEYS`,
:data:`INSTANCE_KEYS`, :data:`EXACT_KEYS`, :data:`SOLVER_KEYS`); what only one paper
measures goes under ``measures`` (a dict, possibly empty), never beside the fixed keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

#: the version of the schema below; bumped when a key changes
SCHEMA = "convexmetric.validate/1"
TOP_KEYS = ("schema", "paper", "instance", "settings", "exact", "solvers")
INSTANCE_KEYS = ("name", "description", "n_points", "n_features", "n_terms", "terms")
EXACT_KEYS = ("solver", "status", "objective", "seconds", "tolerances", "lower_bound", "measures")
SOLVER_KEYS = (
    "status",
    "objective",
    "lower_bound",
    "certified_gap",
    "gap_to_exact",
    "seconds",
    "measures",
)


def settings_of(paper, given, defaults):
    """``defaults`` updated by ``given``; a ValueError naming any unknown setting."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(
            f"unknown {paper} setting(s) {', '.join(map(repr, unknown))}; the settings of "
            f"{paper} are {', '.join(defaults)}."
        )
    return {**defaults, **given}


def _num(v):
    """A JSON number (None for None; NaN and ±inf become None: JSON has neither)."""
    if v is None:
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def instance(name, description, n_points, n_features, n_terms, terms):
    """The ``instance`` entry: what was solved.

    ``terms`` names what ``n_terms`` counts ("hinge terms", "pairs", "comparisons",
    "triplets"); ``n_points`` the items the terms index (None where they are not points).
    """
    return {
        "name": str(name),
        "description": str(description),
        "n_points": None if n_points is None else int(n_points),
        "n_features": None if n_features is None else int(n_features),
        "n_terms": int(n_terms),
        "terms": str(terms),
    }


def exact_entry(solver, status, objective, seconds, tolerances, lower_bound=None, **measures):
    """The ``exact`` entry: the conic solve, its tolerances and any paper-specific measures."""
    return {
        "solver": solver,
        "status": status,
        "objective": _num(objective),
        "seconds": _num(seconds),
        "tolerances": dict(tolerances or {}),
        "lower_bound": _num(lower_bound),
        "measures": {k: _num(v) for k, v in measures.items()},
    }


def gap_to_exact(objective, reference, zero_value=0.0):
    """``(objective − exact) / |exact|``: the gap to the exact side (None without it); the
    denominator floored as the certified gap's (``FLOOR_SHARE`` of the objective at the
    zero point, ``zero_value``), so that two values of an optimum at 0 compare absolutely."""
    from ..result import FLOOR_SHARE

    if reference is None:
        return None
    scale = max(abs(float(reference)), FLOOR_SHARE * float(zero_value))
    diff = float(objective) - float(reference)
    return diff / scale if scale > 0 else diff


def solver_entry(res, reference=None, *, objective=None, seconds=None, **measures):
    """One large-scale solver's entry from its SolveResult.

    ``objective`` overrides ``res.objective`` (the problem module's value at the solver's
    point), ``seconds`` its time; ``reference`` is the exact optimum (None: no exact side).
    ``certified_gap`` is :func:`convexmetric.result.certified_gap`, None without a bound.
    """
    from ..result import certified_gap

    obj = float(res.objective if objective is None else objective)
    lb, zero = _num(res.lower_bound), res.info.get("zero_value", 0.0)
    return {
        "status": res.status,
        "objective": obj,
        "lower_bound": lb,
        "certified_gap": None if lb is None else _num(certified_gap(obj, lb, zero)),
        "gap_to_exact": gap_to_exact(obj, reference, zero),
        "seconds": float(res.seconds if seconds is None else seconds),
        "measures": {k: _num(v) for k, v in measures.items()},
    }


class Recorder:
    """A solver callback recording ``(seconds since creation, objective)`` per iteration.

    ``chain`` (another callback, e.g. a progress line) is called after recording; its
    answer (True stops the solver) is returned.
    """

    def __init__(self, chain=None):
        self.chain = chain
        self.t0 = time.perf_counter()
        self.times, self.objectives = [], []

    def __call__(self, it, f, step):
        self.times.append(time.perf_counter() - self.t0)
        self.objectives.append(float(f))
        return bool(self.chain(it, f, step)) if self.chain is not None else False


@dataclass
class ValidationReport:
    """What :func:`convexmetric.validate` returns.

    Attributes
    ----------
    paper : str
        "lmnn", "poe", "maurer" or "aroma".
    instance : dict
        :data:`INSTANCE_KEYS`.
    settings : dict
        The hyperparameters of the formulation (paper-specific names), the variant.
    exact : dict or None
        :data:`EXACT_KEYS`; None when the exact solve was skipped (``exact=False``).
    solvers : dict
        Solver name -> :data:`SOLVER_KEYS`.
    results : dict
        Solver name -> the SolveResult (not in the JSON).
    traces : dict
        Solver name -> :class:`Recorder` with real time stamps (not in the JSON).
    """

    paper: str
    instance: dict
    settings: dict
    exact: dict | None
    solvers: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)
    traces: dict = field(default_factory=dict)

    @property
    def reference(self):
        """The exact optimum (None without the exact side)."""
        return None if self.exact is None else self.exact["objective"]

    def add(self, name, res, *, trace=None, **kw):
        """Add solver ``name``'s SolveResult (keywords: :func:`solver_entry`'s)."""
        self.solvers[name] = solver_entry(res, self.reference, **kw)
        self.results[name] = res
        if trace is not None:
            self.traces[name] = trace
        return self.solvers[name]

    def as_dict(self):
        """The JSON object (the schema of :data:`TOP_KEYS`)."""
        return {
            "schema": SCHEMA,
            "paper": self.paper,
            "instance": dict(self.instance),
            "settings": {k: _plain(v) for k, v in self.settings.items()},
            "exact": None if self.exact is None else dict(self.exact),
            "solvers": {k: dict(v) for k, v in self.solvers.items()},
        }

    def __repr__(self):
        """The text report (``lines()``); ``as_dict()`` has every number."""
        return "\n".join([f"<ValidationReport: {self.lines()[0]}", *self.lines()[1:]]) + ">"

    def lines(self):
        """The human-readable report (two lines per solve)."""
        inst = self.instance
        out = [f"validate {self.paper} on {inst['description']}: {inst['n_terms']} {inst['terms']}"]
        if self.exact is None:
            out.append(
                "  exact solve skipped: no CVXPY reference; the gaps below are certified\n"
                "    by each solver's own dual lower bound"
            )
        else:
            e = self.exact
            head = (
                f"  exact ({e['solver']}): objective {e['objective']:.10g}, status "
                f"{e['status']}, {e['seconds']:.2f} s"
            )
            measures = _measures(e["measures"], ", ")
            fits = len(head + measures) <= WIDTH
            out.append(head + (measures if fits else _measures(e["measures"], "\n    ")))
        out += [solver_line(name, entry) for name, entry in self.solvers.items()]
        return out


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    return v if isinstance(v, (str, int, float, bool, type(None), list)) else repr(v)


#: the width the text report's lines keep to (a terminal's, and the site's code blocks)
WIDTH = 88


def _measures(m, first=", "):
    shown = [f"{k} {v:.6g}" for k, v in m.items() if v is not None]
    return first + ", ".join(shown) if shown else ""


def solver_line(name, entry):
    """The text of a solver entry: two lines (what it returned; how close it is to the
    exact optimum and its own certificate), each short enough for a terminal."""
    first = (
        f"  {name}: objective {entry['objective']:.10g}, status {entry['status']}, "
        f"{entry['seconds']:.2f} s"
    )
    parts = []
    if entry["gap_to_exact"] is not None:
        parts.append(f"gap to exact {entry['gap_to_exact']:.2e}")
    if entry["certified_gap"] is None:
        parts.append("no certificate")
    else:
        parts.append(
            f"lower bound {entry['lower_bound']:.10g}, certified gap {entry['certified_gap']:.2e}"
        )
    return first + "\n    " + "; ".join(parts) + _measures(entry["measures"], "; ")


__all__ = [
    "EXACT_KEYS",
    "INSTANCE_KEYS",
    "SCHEMA",
    "SOLVER_KEYS",
    "TOP_KEYS",
    "Recorder",
    "ValidationReport",
    "exact_entry",
    "gap_to_exact",
    "instance",
    "settings_of",
    "solver_entry",
    "solver_line",
]
