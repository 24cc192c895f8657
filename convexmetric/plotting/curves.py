"""Evaluation curves: ROC of a distance as a detector of class equality (Maurer 2008,
§6) and ``precision@k`` of a ranking (Crammer & Chechik 2012, Fig. 3)."""

from __future__ import annotations

import numpy as np

from ._base import new_figure


def pair_roc(Z, y):
    """``(false positive rate, true positive rate)`` of the squared distance over all
    pairs ``i < j`` as a detector of "same class" (closer = more likely the same).

    Its area is :func:`convexmetric.metrics.distance_roc_auc`.
    """
    from sklearn.metrics import roc_curve

    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y)
    iu, ju = np.triu_indices(len(y), 1)
    sq = np.einsum("ij,ij->i", Z, Z)
    d = (sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T)[iu, ju]
    fpr, tpr, _ = roc_curve(y[iu] == y[ju], -d)
    return fpr, tpr


def plot_roc(embeddings, y, *, title=None):
    """ROC curves of the pair distance in each embedding of the same labelled points.

    Parameters
    ----------
    embeddings : dict
        Name → array ``(n, d)`` (e.g. ``"input"``, ``"learned T"``, ``"hyperbolic PCA"``).
    y : array-like of shape (n,)
        Class labels; a pair is positive when both points share the class.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.array([[0.0], [0.1], [5.0], [5.2]])
    >>> fig = plot_roc({"input": Z}, [0, 0, 1, 1])
    >>> fig.axes[0].get_xlabel()
    'false positive rate (different-class pairs called same)'
    """
    from ..metrics import distance_roc_auc

    fig, axes = new_figure(1, 1, width=6.0, height=5.2)
    ax = axes[0, 0]
    for name, Z in embeddings.items():
        fpr, tpr = pair_roc(Z, y)
        ax.plot(fpr, tpr, lw=1.5, label=f"{name} (area {distance_roc_auc(Z, y):.3f})")
    ax.plot([0, 1], [0, 1], color="0.6", ls=":", lw=1.0, label="chance")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.005)
    ax.set_xlabel("false positive rate (different-class pairs called same)")
    ax.set_ylabel("true positive rate (same-class pairs)")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_aspect("equal")
    if title:
        fig.suptitle(title, fontsize="medium")
    return fig


def plot_precision_at_k(curves, ks, *, title=None, trace=None):
    """Precision@k against k for each method; optionally ``P@10`` along training.

    Parameters
    ----------
    curves : dict
        Method → array ``(len(ks),)`` or ``(n_folds, len(ks))`` (mean ± std is drawn).
    ks : array-like of int
        The cut-offs.
    trace : dict, optional
        Method → list of ``(rounds, updates, precision)`` along training (a second
        panel, as in Fig. 3 middle of Crammer & Chechik 2012).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ks = np.asarray(ks)
    fig, axes = new_figure(1, 2 if trace else 1, width=4.8, height=3.8)
    ax = axes[0, 0]
    for idx, (name, c) in enumerate(curves.items()):
        c = np.atleast_2d(np.asarray(c, dtype=float))
        if c.shape[1] != len(ks):
            raise ValueError(f"curve {name!r} has {c.shape[1]} values but 'ks' has {len(ks)}.")
        mean, std = c.mean(0), c.std(0)
        ax.plot(ks, mean, marker="o", ms=3, color=f"C{idx}", label=name)
        if c.shape[0] > 1:
            ax.fill_between(ks, mean - std, mean + std, color=f"C{idx}", alpha=0.15)
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (number of retrieved items)")
    ax.set_ylabel("precision@k")
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    if trace:
        ax2 = axes[0, 1]
        order = list(curves)
        for name, rows in trace.items():
            idx = order.index(name) if name in order else len(order)
            rows = np.asarray(rows, dtype=float)
            ax2.plot(rows[:, 0], rows[:, 2], marker="o", ms=3, color=f"C{idx}", label=name)
        ax2.set_xlabel("training triplets seen")
        ax2.set_ylabel("precision@10 (test)")
        ax2.set_title("along training (fold 0)", fontsize="medium")
        ax2.legend(fontsize="small")
        ax2.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def plot_bars(table, *, errors=None, ylabel="value", title=None, percent=False):
    """Grouped bars: one group per row of ``table``, one bar per column.

    For the papers' tables (e.g. LMNN Table 1: test error of Euclidean kNN vs LMNN on
    each data set; Batra & Shakhnarovich Table 1: kNN accuracy per method).

    Parameters
    ----------
    table : dict
        Row (group) → dict column (bar) → value. Missing cells are left empty.
    errors : dict, optional
        The same shape, the half-height of an error bar (e.g. a standard deviation).
    percent : bool
        Values are fractions; label the axis in percent.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fig = plot_bars({"iris": {"Euclidean": 0.04, "LMNN": 0.03}}, ylabel="test error")
    >>> fig.axes[0].get_ylabel()
    'test error'
    """
    if not table:
        raise ValueError("'table' must hold at least one row. Got an empty mapping instead.")
    rows = list(table)
    cols = list(dict.fromkeys(c for r in rows for c in table[r]))
    fig, axes = new_figure(1, 1, width=max(6.4, 0.45 * len(rows) * len(cols) + 2))
    ax = axes[0, 0]
    width = 0.8 / len(cols)
    scale = 100.0 if percent else 1.0
    for j, col in enumerate(cols):
        xs = [i + (j - (len(cols) - 1) / 2) * width for i, r in enumerate(rows) if col in table[r]]
        vals = [scale * table[r][col] for r in rows if col in table[r]]
        err = None
        if errors is not None:
            err = [scale * errors.get(r, {}).get(col, 0.0) for r in rows if col in table[r]]
        bars = ax.bar(xs, vals, width=width, yerr=err, capsize=2, color=f"C{j}", label=col)
        ax.bar_label(bars, fmt="%.3g", fontsize="x-small", padding=1)
    ax.set_xticks(
        range(len(rows)),
        rows,
        rotation=30 if len(rows) > 5 else 0,
        ha="right" if len(rows) > 5 else "center",
    )
    ax.set_ylabel(ylabel + (" (%)" if percent else ""))
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="y", alpha=0.3)
    if title:
        ax.set_title(title, fontsize="medium")
    return fig
