"""``--plot FILE.png`` for the validate commands.

A validate command records each large-scale solver's objective against time with a
:class:`Trace` (a solver callback) where the solver takes one, and hands its report
(and its SolveResults) to :func:`write_validate_plot`, which draws
:func:`convexmetric.plotting.plot_convergence` and writes the PNG atomically.
Solvers without a callback are drawn from ``SolveResult.history`` spread over the
solve time (marked "≈ time" in the legend); a run with neither is one marker at
(seconds, objective).
"""

from __future__ import annotations

import click

from ..validation.report import Recorder
from ._common import CLIError, check_output_file

#: the ``--plot`` option of every validate command
plot_option = click.option(
    "--plot",
    "plot",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the convergence figure (objective vs time, exact optimum, log relative "
    'gap) to this PNG file. Needs matplotlib: pip install "convexmetric[plot]".',
)


#: the solver callback that records real time stamps (the library's)
Trace = Recorder


def _run(name, entry, runs, traces):
    """What to draw for one solver of the report."""
    trace = (traces or {}).get(name)
    result = (runs or {}).get(name)
    lower = getattr(result, "lower_bound", None)
    if lower is None:
        lower = entry.get("lower_bound")
    if trace is not None and len(trace.times) >= 2:
        times, objs = list(trace.times), list(trace.objectives)
        final = float(entry["objective"])
        if objs[-1] != final:  # the returned (best) iterate, at the end of the solve
            times.append(max(float(entry.get("seconds", times[-1])), times[-1]))
            objs.append(final)
        return {"times": times, "objectives": objs, "lower_bound": lower}
    if result is not None and getattr(result, "history", None):
        return {
            "history": list(result.history),
            "seconds": float(entry.get("seconds", result.seconds)),
            "objective": float(entry["objective"]),
            "lower_bound": lower,
        }
    return {
        "objective": float(entry["objective"]),
        "seconds": float(entry.get("seconds", 0.0)),
        "lower_bound": lower,
    }


def write_validate_plot(path, report, runs=None, traces=None, title=None):
    """Draw a validate report's solvers against its exact optimum and write ``path``.

    Parameters
    ----------
    path : str or None
        The PNG file (nothing is done when None).
    report : dict
        The validate report: ``report["exact"]["objective"]`` and
        ``report["solvers"][name]`` with ``objective`` and ``seconds``.
    runs : dict, optional
        Name → SolveResult, for their ``history`` and ``lower_bound``.
    traces : dict, optional
        Name → :class:`Trace` recorded during the solve (real time stamps).
    """
    if path is None:
        return None
    try:
        check_output_file(path, "--plot")
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    try:
        from ..plotting import plot_convergence, save_figure
    except ImportError as exc:  # pragma: no cover - only without matplotlib
        raise CLIError(str(exc)) from None
    exact = report["exact"]
    drawn = {name: _run(name, entry, runs, traces) for name, entry in report["solvers"].items()}
    instance = report["instance"]["description"]
    title = title or f"validate {report['paper']}: solvers vs exact optimum\n{instance}"
    try:
        fig = plot_convergence(
            drawn,
            optimum=None if exact is None else float(exact["objective"]),  # None: --no-exact
            optimum_label=f"exact optimum ({(exact or {}).get('solver', 'CVXPY')})",
            title=title,
        )
        save_figure(fig, path)
    except ImportError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot write the figure to {path!r}: {exc}") from None
    return path
