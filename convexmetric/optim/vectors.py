"""Arithmetic on the engine's points: an array, or a list of arrays (one block each).

Every driver treats a point as a *block vector*: LMNN's factor ``L`` is one block, a
multi-metric solution one block per cluster, a POE factor one block per kernel (blocks
may differ in shape). These helpers are the only place that knows both forms, so the
drivers never test ``isinstance(x, list)`` themselves.

>>> x = [np.ones((2, 2)), np.zeros(3)]
>>> norm(axpy(x, 2.0, x)), flatten(x).shape
(6.0, (7,))
>>> [b.shape for b in unflatten(np.arange(7.0), x)]
[(2, 2), (3,)]
"""

from __future__ import annotations

import numpy as np


def axpy(x, a, g):
    """``x + a·g``."""
    if isinstance(x, list):
        return [xi + a * gi for xi, gi in zip(x, g)]
    return x + a * g


def sub(a, b):
    """``a − b``."""
    return [ai - bi for ai, bi in zip(a, b)] if isinstance(a, list) else a - b


def inner(a, b):
    """``⟨a, b⟩`` summed over the blocks."""
    if isinstance(a, list):
        return float(sum(np.vdot(ai, bi).real for ai, bi in zip(a, b)))
    return float(np.vdot(a, b).real)


def norm(g):
    """The Euclidean (Frobenius) norm over all blocks."""
    if isinstance(g, list):
        return float(np.sqrt(sum(np.vdot(gi, gi).real for gi in g)))
    return float(np.linalg.norm(g))


def copy(x):
    """An independent copy."""
    return [np.array(xi, copy=True) for xi in x] if isinstance(x, list) else np.array(x, copy=True)


def flatten(x):
    """All blocks as one vector (a view for a single contiguous array)."""
    if isinstance(x, list):
        return np.concatenate([np.ravel(xi) for xi in x])
    return np.ravel(x)


def unflatten(v, like):
    """The inverse of :func:`flatten`, with the block shapes of ``like``."""
    if not isinstance(like, list):
        return v.reshape(np.shape(like))
    out, at = [], 0
    for b in like:
        shape = b.shape if isinstance(b, np.ndarray) else np.shape(b)
        size = b.size if isinstance(b, np.ndarray) else int(np.prod(shape))
        out.append(v[at : at + size].reshape(shape))
        at += size
    return out
