"""Figures for the papers' experiments and for solver validation (optional matplotlib).

Every function takes arrays, fitted estimators' outputs or
:class:`~convexmetric.result.SolveResult` objects and returns a
:class:`matplotlib.figure.Figure` built without ``pyplot`` (no display needed; PNGs
are rendered by Agg). Save one with :func:`save_figure` (atomic). matplotlib is
imported only when a figure is made; without it the error says
``pip install "convexmetric[plot]"``.

>>> from convexmetric.plotting import plot_embeddings, save_figure  # doctest: +SKIP
"""

from ._base import INSTALL_HINT, project_2d, save_figure
from .convergence import plot_convergence
from .curves import pair_roc, plot_bars, plot_precision_at_k, plot_roc
from .embeddings import plot_embeddings, plot_local_metrics, plot_taxonomy_embedding
from .margins import plot_lmnn_margin

__all__ = [
    "INSTALL_HINT",
    "pair_roc",
    "plot_bars",
    "plot_convergence",
    "plot_embeddings",
    "plot_lmnn_margin",
    "plot_local_metrics",
    "plot_precision_at_k",
    "plot_roc",
    "plot_taxonomy_embedding",
    "project_2d",
    "save_figure",
]
