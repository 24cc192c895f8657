"""Scatter plots of data and learned embeddings, classes coloured.

* :func:`plot_embeddings` — one panel per embedding (LMNN Fig. 2: input, PCA, LDA,
  LMNN on the zebra stripes; an SSNE embedding); 1-D projections are drawn on a line,
  more than two dimensions are projected on their first two principal axes.
* :func:`plot_local_metrics` — points with a ball of each local metric drawn at its
  cluster centre (LMNN Fig. 7: circles with one, two, three metrics); the balls show
  the metrics' shapes, scaled to one display size.
* :func:`plot_taxonomy_embedding` — training items and out-of-sample items in a 2-D
  projection of a POE embedding (McFee & Lanckriet §5.1).
"""

from __future__ import annotations

import numpy as np

from ._base import class_colors, new_figure, project_2d


def _scatter(ax, Z, y, *, marker="o", s=10, hollow=False, label_classes=True, classes=None):
    Z2 = project_2d(Z)
    classes = np.unique(np.asarray(y)) if classes is None else classes
    for i, c in enumerate(classes):
        keep = np.asarray(y) == c
        color = f"C{i % 10}"  # the default cycle is tab10
        kw = {"facecolors": "none", "edgecolors": [color]} if hollow else {"color": [color]}
        ax.scatter(
            Z2[keep, 0],
            Z2[keep, 1],
            s=s,
            marker=marker,
            linewidths=0.8,
            label=str(c) if label_classes else None,
            **kw,
        )
    return Z2


def plot_embeddings(panels, y, *, title=None, ncols=None, axis_labels=None):
    """One scatter panel per embedding of the same points.

    Parameters
    ----------
    panels : dict
        Panel title → array ``(n,)``, ``(n, 1)``, ``(n, 2)`` or ``(n, d)`` (projected on
        its first two principal axes).
    y : array-like of shape (n,)
        Class labels (colours).
    title : str, optional
        Figure title (name the paper figure).
    ncols : int, optional
        Panels per row (default: all in one row, at most 4).
    axis_labels : tuple of str, optional
        Axis labels of every panel (default: "coordinate 1", "coordinate 2"; a 1-D
        panel is labelled "projection").

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(20, 2)); y = np.arange(20) % 2
    >>> fig = plot_embeddings({"input": X, "first axis": X[:, 0]}, y)
    >>> len(fig.axes)
    2
    """
    if not panels:
        raise ValueError("'panels' must hold at least one embedding. Got an empty mapping.")
    y = np.asarray(y)
    ncols = ncols or min(len(panels), 4)
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(nrows, ncols, width=3.4, height=3.2)
    xl, yl = axis_labels or ("coordinate 1", "coordinate 2")
    for ax, (name, Z) in zip(axes.ravel(), panels.items()):
        Z = np.asarray(Z, dtype=float)
        if len(Z) != len(y):
            raise ValueError(f"panel {name!r} has {len(Z)} rows but 'y' has {len(y)} labels.")
        one_d = Z.ndim == 1 or Z.shape[1] == 1
        if one_d:  # a 1-D projection: classes on a line, slightly separated vertically
            z = Z.reshape(-1)
            _, codes = class_colors(y)
            jitter = 0.08 * (codes - codes.mean()) / max(codes.max(), 1)
            _scatter(ax, np.column_stack([z, jitter]), y, s=6 if len(y) < 1000 else 3)
            ax.set_yticks([])
            ax.set_ylim(-0.5, 0.5)
            ax.set_xlabel("projection")
        else:
            _scatter(ax, Z, y, s=6 if len(y) < 1000 else 3)
            ax.set_xlabel(xl if Z.shape[1] == 2 else "principal axis 1")
            ax.set_ylabel(yl if Z.shape[1] == 2 else "principal axis 2")
            ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(name, fontsize="medium")
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    if len(np.unique(y)) <= 10:
        axes.ravel()[0].legend(title="class", fontsize="x-small", markerscale=1.5, loc="best")
    if title:
        fig.suptitle(title)
    return fig


def _ellipse(ax, center, M, scale, color):
    """The set ``{x : (x − c)ᵀ M (x − c) = scale²}`` (2-D ``M``, PSD)."""
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    w = np.maximum(w, 1e-12 * max(w.max(), 1e-300))
    theta = np.linspace(0, 2 * np.pi, 100)
    circle = np.stack([np.cos(theta), np.sin(theta)])
    pts = center[:, None] + V @ (circle * (scale / np.sqrt(w))[:, None])
    ax.plot(pts[0], pts[1], color=color, lw=1.5)


def plot_local_metrics(X, y, panels, *, title=None):
    """2-D points with a ball ``{x : (x − c)ᵀ M (x − c) = r²}`` of each learned metric.

    The balls show each metric's shape at its cluster centre ``c``; ``M`` is scaled to
    trace 2 and ``r`` is 12% of the data's extent, so sizes are comparable across panels.

    Parameters
    ----------
    X : array of shape (n, 2)
        The points (input coordinates).
    y : array-like of shape (n,)
        Class labels (colours).
    panels : dict
        Panel title → ``None`` (the points only, Euclidean) or a dict with ``metrics``
        (array ``(c, 2, 2)``) and optional ``clusters`` (cluster of each point, shown
        by marker) and ``centers`` (``(c, 2)``; default: the cluster means).

    Returns
    -------
    matplotlib.figure.Figure
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"'X' must have shape (n, 2). Got {X.shape} instead.")
    y = np.asarray(y)
    fig, axes = new_figure(1, len(panels), width=3.4, height=3.4)
    span = float(np.ptp(X, axis=0).max()) or 1.0
    markers = "o^sDv<>p"
    for ax, (name, spec) in zip(axes.ravel(), panels.items()):
        if spec is None:
            _scatter(ax, X, y, s=10)
        else:
            Ms = np.asarray(spec["metrics"], dtype=float).reshape(-1, 2, 2)
            g = np.asarray(spec.get("clusters", np.zeros(len(X), dtype=int)))
            centers = spec.get("centers")
            for c in range(len(Ms)):
                keep = g == c
                if keep.any():
                    _scatter(
                        ax,
                        X[keep],
                        y[keep],
                        s=10,
                        marker=markers[c % len(markers)],
                        label_classes=False,
                        classes=np.unique(y),
                    )
                center = (
                    np.asarray(centers[c])
                    if centers is not None
                    else X[keep].mean(0)
                    if keep.any()
                    else X.mean(0)
                )
                M = Ms[c] / max(np.trace(Ms[c]) / 2, 1e-300)  # the shape; size set below
                _ellipse(ax, center, M, 0.12 * span, color="k")
                ax.plot(*center, "k+", ms=8)
        ax.set_title(name, fontsize="medium")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("x₁")
        ax.set_ylabel("x₂")
    if title:
        fig.suptitle(title)
    return fig


def plot_taxonomy_embedding(Z_train, y_train, Z_test, y_test, *, title=None):
    """A POE embedding in 2-D: training items (dots) and out-of-sample items (crosses).

    The projection is the first two principal axes of the training embedding, so the
    test items are placed by the learned map alone (nothing is refitted on them).

    Returns
    -------
    matplotlib.figure.Figure
    """
    Z_train, Z_test = np.asarray(Z_train, dtype=float), np.asarray(Z_test, dtype=float)
    if Z_train.ndim == 1:
        Z_train, Z_test = Z_train[:, None], Z_test[:, None]
    both = project_2d(np.vstack([Z_train, Z_test]), reference=Z_train)
    tr, te = both[: len(Z_train)], both[len(Z_train) :]
    fig, axes = new_figure(1, 1, width=6.0, height=5.0)
    ax = axes[0, 0]
    classes = np.unique(np.concatenate([np.asarray(y_train), np.asarray(y_test)]))
    _scatter(ax, tr, y_train, s=14, classes=classes)
    _scatter(ax, te, y_test, s=40, marker="x", label_classes=False, classes=classes)
    ax.scatter([], [], marker="x", color="k", label="out-of-sample")
    ax.legend(title="class", fontsize="x-small", loc="best", ncols=2)
    ax.set_xlabel("principal axis 1 of the training embedding")
    ax.set_ylabel("principal axis 2")
    if title:
        ax.set_title(title, fontsize="medium")
    return fig
