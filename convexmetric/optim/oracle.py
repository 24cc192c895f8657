"""The oracle protocol: what a formulation gives the engine, written as the engine calls it.

A formulation plugs into the engine by subclassing :class:`Oracle` (or by adapting an
oracle to another parametrisation, as :mod:`.factor` does for ``M = LᵀL``). Every driver
(:mod:`.subgradient`, :mod:`.stages` with :mod:`.lbfgs` or :mod:`.fista`, :mod:`.factor`)
calls only these members, with these signatures; every one but :meth:`~Oracle.smooth`
and :meth:`~Oracle.objective` has a neutral default, so a formulation implements what it
has and nothing else. ``components`` is the factor ``L`` of ``x = LᵀL`` (or the list of
block factors) when the caller is :class:`.factor.Factored`, else ``None``: an oracle may
use it (distances from ``Z = X Lᵀ``, no eigendecomposition) or ignore it.

====================================  ========================================================
member                                what the drivers use it for
====================================  ========================================================
``__call__(x, components=None)``      ``(f, g)``: the (approximate) objective and a
                                      subgradient (:func:`.subgradient.projected_subgradient`)
``smooth(x, σ, grad, components)``    the smoothed objective (each hinge ``max(0, z)``
                                      replaced by ``max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²``
                                      around the prox centre ``λ̄``) and its gradient;
                                      ``grad=False``: the value only (the inner methods)
``smooth_factor(x, σ, components)``   ``smooth``'s value and its gradient times the factor
                                      ``L`` (:class:`.factor.Factored`'s gradient is twice
                                      it); default: from ``smooth``; an oracle with distances
                                      ``Z = X Lᵀ`` skips the ``d × d`` gradient
``objective(x, components=None)``     the exact objective (best points and histories use
                                      only this)
``recenter(x, σ, components=None)``   move the prox centre to the current multipliers (a
                                      proximal method of multipliers step); default: nothing
``bound(stage)``                      a certified lower bound on the optimum from the
                                      multipliers at ``stage.x`` (a :class:`Stage`);
                                      default: none
``check(x, components=None)``         an *approximating* oracle (an active set) at an
                                      apparent optimum: ``True`` if its approximation was
                                      exact there (the subgradient and staged drivers)
``version``                           an approximating oracle bumps it whenever its
                                      approximation changes, so a driver re-evaluates before
                                      comparing values (:mod:`.subgradient`, :mod:`.fista`);
                                      ``None``: never changes
``best_seen``                         an approximating oracle: ``(f, x)``, the point of
                                      least exact value it has computed, else ``None``;
                                      when it refuses a trial (``inf``) with a new
                                      ``version`` and the driver's re-evaluated point rose
                                      above ``f``, the driver goes back there
                                      (:mod:`.subgradient`)
``bounds``                            box constraints of the variables for L-BFGS-B
                                      (:mod:`.lbfgs`); ``None``: unconstrained
``psd``                               ``True`` when a point is a PSD matrix (or a list of
                                      them), so that :class:`.factor.Factored` applies;
                                      ``False`` for vectors and factors (it raises then)
``needs_metric``                      ``False``: given ``components``, the oracle reads the
                                      factor alone, and :class:`.factor.Factored` passes
                                      ``None`` for the matrix (no ``LᵀL`` per evaluation)
``trial_rtol``                        the relative rounding of ``smooth``'s values (0: that
                                      of double precision); L-BFGS ends a stage at a step
                                      that searched long for a gain within it (:mod:`.lbfgs`)
====================================  ========================================================

The staged driver has its own extension points, for the formulations that need them:
:class:`StageHooks` (a full check before a stage, a smaller factor after it, a stage
budget that follows the oracle's mode, an escape along negative curvature, one last
bound, the run's clean-up). An oracle that subclasses it is its own hooks; any other gets
the neutral ones.

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
    factor: Any = None  #: through :class:`.factor.Factored`: the factor of ``x``
    best_factor: Any = None  #: through :class:`.factor.Factored`: the factor of ``best_x``
    #: the run ends here, uncertified (a stall), unless ``escape`` gives a new point
    stopping: bool = False


class Oracle:
    """Base class of every formulation's oracle (see the module docstring)."""

    version = None
    best_seen = None
    bounds = None
    psd = True
    needs_metric = True
    trial_rtol = 0.0

    def __call__(self, x, components=None):
        raise NotImplementedError(f"{type(self).__name__} has no subgradient oracle")

    def smooth(self, x, sigma, grad=True, components=None):
        raise NotImplementedError(f"{type(self).__name__} has no smoothed objective")

    def smooth_factor(self, x, sigma, components):
        """``(f_σ(x), L ∇f_σ(x))`` with ``components`` the factor ``L`` of ``x = LᵀL`` (or
        the lists of blocks): default, :meth:`smooth`'s gradient times the factor."""
        f, G = self.smooth(x, sigma, grad=True, components=components)
        if isinstance(x, list):
            return f, [L @ g for L, g in zip(components, G)]
        return f, components @ G

    def objective(self, x, components=None):
        raise NotImplementedError(f"{type(self).__name__} has no exact objective")

    def recenter(self, x, sigma, components=None):
        """Move the prox centre (default: there is none)."""

    def bound(self, stage):
        """A certified lower bound on the optimum, or ``None`` (default)."""
        return None

    def check(self, x, components=None):
        """``True`` when the oracle's approximation was exact at ``x`` (default: an exact
        oracle, always)."""
        return True


class StageHooks:
    """The staged driver's extension points (:func:`.stages.run_stages`), neutral here.

    =======================  ===============================================================
    hook                     called
    =======================  ===============================================================
    ``begin_stage(x, k)``    before stage ``k``: a replacement point (the same ``M``, a
                             smaller factor: :func:`.factor.trimmed`), else ``None``; an
                             active-set oracle runs its full check here (LMNN)
    ``stage_plan(f, n)``     before the inner run: the σ factor and inner iterations of
                             the stage (an oracle whose mode changes mid-run adapts them:
                             LMNN's streaming has no prox centre, so σ must shrink)
    ``end_stage(x)``         after the inner run, before the stage's exact objective and
                             bound: a replacement point, else ``None`` (the factor trimmed
                             by :class:`.factor.Factored`, so that the next stage's full
                             check reuses that objective's search)
    ``escape(stage)``        when the stage ends uncertified (before the last stage): a
                             point along negative curvature, the next stage's start
                             (:mod:`.escape` finds the directions and the step), else
                             ``None``; ``stage.stopping``: the run would end here (a
                             stall), and an escape restarts it. The one escape path of
                             the engine: POE's factored solver escapes whenever the
                             curvature dominates the gap, LMNN's refinement at its stalls;
                             through :class:`.factor.Factored`, a factor with more rows
    ``final_bound(stage)``   once, when the run ends uncertified: a last, costlier bound at
                             ``stage.best_x``, else ``None`` (POE's crossover)
    ``finish()``             when the run ends, however: undo settings made for it
    =======================  ===============================================================
    """

    def begin_stage(self, x, index, components=None):
        """A replacement for ``x`` before stage ``index``, or ``None`` (default: nothing).
        ``components``: the factor, when called through :class:`.factor.Factored`."""

    def stage_plan(self, sigma_factor, iterations):
        """The σ factor and inner iterations of the next stage (default: as set)."""
        return sigma_factor, iterations

    def end_stage(self, x):
        """A replacement for ``x`` after the stage's inner run, or ``None`` (default)."""

    def escape(self, stage):
        """A point along negative curvature that lowers the objective, or ``None``
        (default: none)."""
        return None

    def final_bound(self, stage):
        """A last, costlier bound when the run ends uncertified, or ``None``."""
        return None

    def finish(self):
        """Undo settings made for the run (default: nothing)."""


#: the hooks of an oracle that has none of its own
NO_HOOKS = StageHooks()


def hooks_of(oracle):
    """``oracle`` itself if it is a :class:`StageHooks`, else the neutral hooks."""
    return oracle if isinstance(oracle, StageHooks) else NO_HOOKS
