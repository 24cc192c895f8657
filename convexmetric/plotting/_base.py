"""Lazy matplotlib access shared by the plotting modules.

Figures are built with the object-oriented API (:class:`matplotlib.figure.Figure`),
never through ``pyplot``: no global state, no display, and ``savefig`` renders with
the Agg backend whatever backend the session uses.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

import numpy as np

INSTALL_HINT = (
    "convexmetric.plotting needs matplotlib, which is not installed. "
    'Install it with: pip install "convexmetric[plot]"'
)


def new_figure(nrows=1, ncols=1, *, width=4.2, height=3.6, **subplot_kw):
    """A ``(Figure, axes array)`` pair; raises ImportError with the install hint."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(INSTALL_HINT) from exc
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplot_kw)
    return fig, axes


def save_figure(fig, path, *, dpi=110):
    """Write ``fig`` as PNG to ``path`` atomically (temporary file, then rename)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".plot.", suffix=".png")
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, format="png", dpi=dpi)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give a normal file's mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def class_colors(y):
    """``(classes, codes)``: the sorted classes and each label's index (for a colour map)."""
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    return classes, codes


def project_2d(Z, reference=None):
    """The first two principal coordinates of ``Z`` (fitted on ``reference`` if given).

    1-D inputs get a zero second coordinate; 2-D inputs are returned unchanged.
    """
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.shape[1] == 1:
        return np.column_stack([Z[:, 0], np.zeros(len(Z))])
    if Z.shape[1] == 2:
        return Z
    R = Z if reference is None else np.asarray(reference, dtype=float)
    mean = R.mean(axis=0)
    _, _, Vt = np.linalg.svd(R - mean, full_matrices=False)
    V = Vt[:2].T * np.sign(Vt[:2, :1].T + (Vt[:2, :1].T == 0))  # a deterministic sign
    return (Z - mean) @ V
