"""Convergence of the large-scale solvers toward the exact optimum.

Top panel: the objective of each solver against wall-clock time, the exact (CVXPY)
optimum as a horizontal line and each solver's certified lower bound where it has
one. Bottom panel: the relative gap ``|f(t) − f*| / |f*|`` on a log scale (the
objective axis is clipped to the tail of the runs; the gap panel shows all of it).
Absolute values, because some solvers report the objective of a restricted
(working-set) problem early on, which lies below ``f*``.

A solver's time axis comes from a recorded trace (``{"times": …, "objectives": …}``,
e.g. from a callback) when there is one; otherwise the entries of
``SolveResult.history`` are spread evenly over ``SolveResult.seconds`` (the legend
marks such curves "≈ time"). When the runs' times span more than two decades
the time axis is logarithmic.
"""

from __future__ import annotations

import numpy as np

from ._base import new_figure

#: the smallest relative gap drawn on the log axis (gaps below it, or negative, sit here)
GAP_FLOOR = 1e-12


def _trace(run):
    """``(times, objectives, approximate_time, lower_bound)`` of one run; points below
    the run's certified lower bound (values of an approximation, never objectives) are
    dropped, so no curve is drawn through the optimum."""
    t, f, approx, lower = _raw_trace(run)
    if lower is not None and len(f) > 1:
        keep = f >= float(lower) - 1e-9 * max(abs(float(lower)), 1.0)
        keep[-1] = True
        t, f = t[keep], f[keep]
    return t, f, approx, lower


def _raw_trace(run):
    if isinstance(run, dict):
        if "times" in run and "objectives" in run:
            t = np.asarray(run["times"], dtype=float)
            f = np.asarray(run["objectives"], dtype=float)
            return t, f, False, run.get("lower_bound")
        hist = list(run.get("history") or [])
        seconds, final = float(run.get("seconds", 0.0)), run.get("objective")
        lower = run.get("lower_bound")
    else:  # a SolveResult
        trace = run.info.get("trace") if isinstance(run.info, dict) else None
        if trace:
            return _raw_trace({**trace, "lower_bound": run.lower_bound})
        hist, seconds, final, lower = list(run.history), run.seconds, run.objective, run.lower_bound
    if final is not None and (not hist or hist[-1] != final):
        hist.append(float(final))
    f = np.asarray(hist, dtype=float)
    if len(f) == 1:
        return np.array([seconds]), f, False, lower
    return seconds * np.arange(1, len(f) + 1) / len(f), f, True, lower


def plot_convergence(runs, *, optimum=None, optimum_label="exact optimum", title=None):
    """Objective against time for each run, with the optimum and the relative gap.

    Parameters
    ----------
    runs : dict
        Name → :class:`~convexmetric.result.SolveResult`, or a dict with ``times`` and
        ``objectives`` (a recorded trace), or a dict with ``history``/``seconds``/
        ``objective`` (as in a validate report); ``lower_bound`` is drawn when present.
    optimum : float, optional
        The exact optimum ``f*`` (CVXPY); without it the gap panel uses the lowest
        final objective of the runs.
    optimum_label : str
        Legend text of the optimum line (e.g. ``"exact optimum (SCS)"``).
    title : str, optional
        Figure title (name the paper figure or equation).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from convexmetric.result import SolveResult
    >>> r = SolveResult(None, 1.0, "optimal", seconds=0.5, history=[3.0, 1.5, 1.0])
    >>> fig = plot_convergence({"subgradient": r}, optimum=0.99)
    >>> len(fig.axes)
    2
    """
    if not runs:
        raise ValueError("'runs' must hold at least one run. Got an empty mapping instead.")
    traces = {name: _trace(run) for name, run in runs.items()}
    best = min(float(f[-1]) for _, f, _, _ in traces.values())
    ref = float(optimum) if optimum is not None else best
    fig, axes = new_figure(2, 1, width=6.4, height=2.9, sharex=True)
    top, bottom = axes[0, 0], axes[1, 0]
    for idx, (name, (t, f, approx, lower)) in enumerate(traces.items()):
        color = f"C{idx}"
        label = f"{name} (≈ time)" if approx else name
        style = {"marker": "o", "ms": 4} if len(f) < 3 else {}
        top.plot(t, f, color=color, lw=1.2, label=label, **style)
        gap = np.abs(f - ref) / max(abs(ref), 1e-300)
        bottom.plot(t, np.maximum(gap, GAP_FLOOR), color=color, lw=1.2, **style)
        if lower is not None:
            top.axhline(lower, color=color, ls=":", lw=1.0, label=f"{name}: certified lower bound")
            cert = (float(f[-1]) - float(lower)) / max(abs(float(f[-1])), 1e-300)
            bottom.axhline(max(cert, GAP_FLOOR), color=color, ls=":", lw=1.0)
    if optimum is not None:
        top.axhline(ref, color="k", ls="--", lw=1.0, label=optimum_label)
    times = np.concatenate([t for t, _, _, _ in traces.values()])
    positive = times[times > 0]
    if positive.size and positive.max() > 100 * positive.min():
        bottom.set_xscale("log")  # runs of very different lengths: a log time axis
    _zoom(top, traces, ref)
    top.set_ylabel("objective")
    top.legend(fontsize="small", loc="best")
    bottom.set_yscale("log")
    bottom.set_xlabel("wall-clock time (s)")
    bottom.set_ylabel("relative gap |f − f*| / |f*|" if optimum is not None else "gap to best")
    bottom.grid(True, which="major", alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def _zoom(ax, traces, ref):
    """Clip the objective axis to the tail of the runs (the gap panel shows the rest)."""
    finals = [float(f[-1]) for _, f, _, _ in traces.values()]
    lowers = [float(lb) for _, _, _, lb in traces.values() if lb is not None]
    lo = min(finals + lowers + [ref])
    hi = max(float(np.quantile(f, 0.9)) for _, f, _, _ in traces.values())
    if not hi > lo:
        hi = lo + max(abs(lo), 1.0) * 1e-6
    pad = 0.05 * (hi - lo)
    ax.set_ylim(lo - pad, hi + pad)
