"""LMNN's picture of one point's neighbourhood (Weinberger & Saul 2009, Fig. 1).

* :func:`plot_lmnn_margin` — a point :math:`x_i`, its target neighbours, the perimeter
  they set, the unit margin beyond it and the impostors inside the margin, before
  learning (Euclidean) and after it (:math:`x \\mapsto Lx`): the pull on the targets and
  the push on the impostors drawn as arrows.
"""

from __future__ import annotations

import numpy as np

from ._base import new_figure


def neighborhood(Z, y, point, targets):
    """``(perimeter², impostors)`` of ``point`` in the coordinates ``Z``.

    The perimeter is the squared distance of the farthest target neighbour; an impostor
    is a point of another class closer than the perimeter plus the unit margin, i.e.
    one with a positive hinge :math:`[1 + D(x_i, x_j) - D(x_i, x_l)]_+` for some target
    :math:`j` (eq. 14).
    """
    d2 = ((Z - Z[point]) ** 2).sum(axis=1)
    radius2 = float(d2[targets].max())
    impostors = np.flatnonzero((y != y[point]) & (d2 < radius2 + 1.0))
    return radius2, impostors


def _check(X, y, components, point, k):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"'X' must have two columns (a picture in the plane); got {X.shape}.")
    if y.shape != (len(X),):
        raise ValueError(f"'y' must hold one label per row of 'X'; got {y.shape}.")
    if not 0 <= int(point) < len(X):
        raise ValueError(f"'point' must index a row of 'X' (0 to {len(X) - 1}); got {point}.")
    L = np.eye(2) if components is None else np.asarray(components, dtype=float)
    if L.ndim != 2 or L.shape[1] != 2 or not 1 <= L.shape[0] <= 2:
        raise ValueError(f"'components' must have shape (1, 2) or (2, 2); got {L.shape}.")
    w, V = np.linalg.eigh(L.T @ L)  # drawn as M^(1/2) x: Lx's distances, not rotated
    L = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T
    if np.count_nonzero(y == y[point]) < 2:
        raise ValueError(f"'point' {point} is alone in its class: it has no target neighbour.")
    return X, y, L, int(point), int(k)


def _ring(ax, centre, radius2, **kw):
    from matplotlib.patches import Circle

    ax.add_patch(Circle(centre, np.sqrt(radius2), fill=False, **kw))


def _arrow(ax, start, end, color):
    ax.annotate(
        "", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": color, "lw": 1.4}
    )


def _panel(ax, Z, y, point, targets, name):
    """One panel: the data, the perimeter, the margin, pulls and pushes."""
    radius2, impostors = neighborhood(Z, y, point, targets)
    c = Z[point]
    for n, label in enumerate(np.unique(y)):
        keep = y == label
        ax.scatter(Z[keep, 0], Z[keep, 1], s=14, color=f"C{n % 10}", alpha=0.45, lw=0)
    ax.scatter(*c, s=160, marker="*", color="k", zorder=4, label=r"$x_i$")
    ax.scatter(
        Z[targets, 0],
        Z[targets, 1],
        s=70,
        facecolors="none",
        edgecolors="k",
        lw=1.4,
        zorder=3,
        label="target neighbours",
    )
    ax.scatter(
        Z[impostors, 0],
        Z[impostors, 1],
        s=80,
        marker="X",
        color="crimson",
        zorder=3,
        label="impostors",
    )
    _ring(ax, c, radius2, ls="--", color="k", lw=1, label="perimeter (farthest target)")
    _ring(ax, c, radius2 + 1.0, ls="-", color="crimson", lw=1, label="perimeter + margin")
    for j in targets:  # pull: the target towards x_i
        _arrow(ax, Z[j], Z[j] + 0.4 * (c - Z[j]), "k")
    outer = np.sqrt(radius2 + 1.0)
    for m in impostors:  # push: the impostor out past the margin
        u = Z[m] - c
        u = u / (np.linalg.norm(u) or 1.0)
        _arrow(ax, Z[m], c + 1.08 * outer * u, "crimson")
    half = 1.35 * outer
    ax.set_xlim(c[0] - half, c[0] + half)
    ax.set_ylim(c[1] - half, c[1] + half)
    ax.set_aspect("equal")
    ax.set_title(f"{name}: {len(impostors)} impostor{'s' * (len(impostors) != 1)}", fontsize=10)
    return impostors


def plot_lmnn_margin(X, y, components=None, *, point=0, k=3, title=None):
    """One point's target neighbours, perimeter, margin and impostors, before and after.

    The picture of Weinberger & Saul's Fig. 1. The targets are the ``k`` nearest points
    of the class of ``X[point]`` in the input (LMNN fixes them before learning,
    :func:`~convexmetric.neighbors.target_neighbors`). In each panel the dashed circle
    is the perimeter they set (through the farthest target), the red circle lies one
    unit of squared distance beyond it, and the points of other classes inside it are
    the impostors, each with a positive hinge term of eq. (14). Black arrows are the
    pull on the targets, red ones the push on the impostors.

    Parameters
    ----------
    X : array of shape (n, 2)
        Points in the plane.
    y : array of shape (n,)
        Their labels.
    components : array of shape (2, 2) or (1, 2), optional
        The learned map ``L`` (``LMNN.components_``); the second panel draws
        :math:`Lx`. Without it only the input panel is drawn.
    point : int, default=0
        The row of ``X`` whose neighbourhood is drawn.
    k : int, default=3
        Target neighbours per point (the ``k`` of the fit).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        The panels' titles count the impostors.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.0, 0.6], [0.0, -0.6], [0.3, 0.0], [3.0, 0.0]])
    >>> y = np.array([0, 0, 0, 1, 1])
    >>> fig = plot_lmnn_margin(X, y, [[4.0, 0.0], [0.0, 1.0]], k=2)
    >>> [ax.get_title() for ax in fig.axes]
    ['before (Euclidean): 1 impostor', 'after (learned metric): 0 impostors']
    """
    from ..neighbors import target_neighbors

    X, y, L, point, k = _check(X, y, components, point, k)
    targets = target_neighbors(X, y, k)[point]
    targets = targets[targets != point]  # a small class pads its row with the point
    spaces = [("before (Euclidean)", X)]
    if components is not None:
        spaces.append(("after (learned metric)", X @ L.T))
    fig, axes = new_figure(1, len(spaces), width=4.4, height=4.4)
    for ax, (name, Z) in zip(axes[0], spaces, strict=True):
        _panel(ax, Z, y, point, targets, name)
    axes[0, 0].legend(loc="lower left", fontsize=7, framealpha=0.85)
    if title:
        fig.suptitle(title)
    return fig
