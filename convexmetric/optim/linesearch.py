"""Golden-section search, shared by the escape steps of the LMNN and POE solvers."""

from __future__ import annotations

import numpy as np


def golden_section(phi, a, b, steps):
    """Golden-section minimum of a unimodal ``φ`` on ``[a, b]``: ``(t, φ(t))``."""
    g = (np.sqrt(5.0) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = phi(c), phi(d)
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = phi(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = phi(d)
    return (c, fc) if fc <= fd else (d, fd)
