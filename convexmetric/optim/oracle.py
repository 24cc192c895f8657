"""The oracle protocol: what a formulation gives the engine, written down once.

A formulation plugs into the engine by subclassing :class:`Oracle` (or by adapting an
oracle to another parametrisation, as :mod:`.factor` does for ``M = LᵀL``). The engine's
drivers call only these methods; every one but :meth:`~Oracle.smooth` and
:meth:`~Oracle.objective` has a neutral default, so a formulation implements what it
has and nothing else.

=====================  ==============================================================
method                 what the driver uses it for
=====================  ==============================================================
``__call__(x)``        ``(f, g)``: the (approximate) objective and a subgradient, for
                       :func:`.subgradient.projected_subgradient`
``smooth(x, σ)``       the smoothed objective (each hinge ``max(0, z)`` replaced by
                       ``max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²`` around the prox centre
                       ``λ̄``) and its gradient; ``grad=False``: the value only
``smooth_factor``      ``smooth``'s value and its gradient times the factor ``L``
                       (:class:`.factor.Factored`'s gradient is twice it); default:
                       from ``smooth``; an oracle with distances ``Z = X Lᵀ`` skips
                       the ``d × d`` gradient
``objective(x)``       the exact objective (best points and histories use only this)
``recenter(x, σ)``     move the prox centre to the current multipliers (a proximal
                       method of multipliers step); default: nothing
``bound(stage)``       a certified lower bound on the optimum from the multipliers at
                       ``stage.x`` (``stage`` is a :class:`Stage`); default: none
``check(x)``           a final check at an apparent optimum: ``True`` if the oracle's
                       approximation was exact there (an active set found nothing new)
``begin_stage(x, k)``  before stage ``k`` of the staged driver (a full check, say);
                       may return a replacement point (the same ``M``, a smaller
                       factor: :func:`.factor.trimmed`), else ``None``
``end_stage(x)``       after a stage's inner run, before its exact objective and bound:
                       a replacement point (the factor trimmed, so that the next
                       stage's full check reuses the objective's search), or ``None``
``stage_plan(f, n)``   the σ factor and inner iterations of the next stage (an oracle
                       whose mode changes mid-run adapts them); default: as set
``escape(stage)``      a new point along negative curvature, or ``None``
``final_bound(stage)`` one more (costly) bound when the run ends uncertified
``version``            bumped whenever the oracle's approximation changes, so a driver
                       re-evaluates before comparing values; ``None``: never changes
``bounds``             box constraints for L-BFGS-B (``None``: unconstrained)
``finish()``           undo any setting made for the run (called by the driver)
=====================  ==============================================================

A point ``x`` is an array or a list of arrays (see :mod:`.vectors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Stage:
    """What a staged driver knows at the end of a stage (passed to ``bound``/``escape``)."""

    x: Any  #: the stage's end point
    sigma: float  #: the smoothing width of the stage
    best_x: Any  #: the best point so far (exact objective)
    best_f: float  #: its exact objective
    lower: float  #: the best certified lower bound so far (``-inf`` if none)
    index: int  #: the stage's number (0 first)


class Oracle:
    """Base class of every formulation's oracle (see the module docstring)."""

    version = None
    bounds = None

    def __call__(self, x):
        raise NotImplementedError(f"{type(self).__name__} has no subgradient oracle")

    def smooth(self, x, sigma, grad=True):
        raise NotImplementedError(f"{type(self).__name__} has no smoothed objective")

    def smooth_factor(self, x, sigma, components):
        """``(f_σ(x), L ∇f_σ(x))`` with ``components`` the factor ``L`` of ``x = LᵀL`` (or
        the lists of blocks): default, :meth:`smooth`'s gradient times the factor."""
        f, G = self.smooth(x, sigma, grad=True, components=components)
        if isinstance(x, list):
            return f, [L @ g for L, g in zip(components, G)]
        return f, components @ G

    def objective(self, x):
        raise NotImplementedError(f"{type(self).__name__} has no exact objective")

    def recenter(self, x, sigma):
        """Move the prox centre (default: there is none)."""

    def bound(self, stage):
        """A certified lower bound on the optimum, or ``None`` (default)."""
        return None

    def check(self, x, components=None):
        """``True`` when the oracle's approximation was exact at ``x`` (default)."""
        return True

    def begin_stage(self, x, index, components=None):
        """Called before every stage of the staged driver; a replacement for ``x``, or
        ``None`` (default: nothing, ``None``). ``components``: the factor, when called
        through :class:`.factor.Factored`."""

    def end_stage(self, x):
        """Called after every stage's inner run, before its exact objective, bound and
        recentring; a replacement for ``x``, or ``None`` (default: nothing, ``None``)."""

    def stage_plan(self, sigma_factor, iterations):
        """The σ factor and inner iterations of the next stage (default: as set)."""
        return sigma_factor, iterations

    def escape(self, stage):
        """A point along negative curvature that lowers the objective, or ``None``."""
        return None

    def final_bound(self, stage):
        """A last, costlier bound when the run ends uncertified, or ``None``."""
        return None

    def finish(self):
        """Undo settings made for the run (default: nothing)."""
