"""The engine's fixed numbers: each with its reason and where its evidence is.

A setting a caller may change stays a field of its settings object (``StageSettings``,
``SubgradientSettings``, ``SmoothingSettings``, ``FISTA``, ``LBFGS``), with its documented
default there. This module holds the numbers no caller sets. "Evidence" names an entry of
``benchmarks/TUNING.md`` or a benchmark row (``python benchmarks/bench_rows.py --rows
NAME``), or the paper a value comes from; "a guard" is a floor against a division by zero
or an endless loop; "none recorded" means no measurement chose the value: measure with
``bench_rows.py --against`` before changing it.
"""

from __future__ import annotations

import numpy as np

# --- relative tests -------------------------------------------------------------------

#: ``|f|`` is floored at this in relative tests, so an objective of 0 still compares.
#: Evidence: a guard.
REL_FLOOR = 1e-12
#: a gradient's or a point's norm is floored at this where a first step divides by it.
#: Evidence: a guard.
NORM_FLOOR = 1e-12

# --- L-BFGS (:mod:`.lbfgs`) and its line search (:mod:`.wolfe`) --------------------------

#: a step whose search took more than :data:`NOISY_TRIALS` trials ends the stage when it
#: gained at most this multiple of the oracle's ``trial_rtol``: it is fighting rounding.
#: Evidence: benchmarks/TUNING.md, entry ``NOISY_GAIN`` (the engine and shared modules).
NOISY_GAIN = 10.0
#: trials above which a search counts as long (see :data:`NOISY_GAIN`).
#: Evidence: benchmarks/TUNING.md, entry ``NOISY_GAIN`` (the rules compared).
NOISY_TRIALS = 2
#: a correction pair is kept only if ``sᵀy > EPS·yᵀy``: the update stays positive definite.
#: Evidence: L-BFGS-B's rule (Byrd, Lu, Nocedal & Zhu 1995).
EPS = float(np.finfo(float).eps)
#: Moré–Thuente extrapolation bounds (multiples of the distance from the best step).
#: Evidence: Moré & Thuente 1994, §4 (the values L-BFGS-B uses).
XTRAP_LO, XTRAP_HI = 1.1, 4.0
#: two trials that shrink the interval by less than this trigger a bisection.
#: Evidence: Moré & Thuente 1994, §4.
SHRINK = 0.66

# --- FISTA (:mod:`.fista`) --------------------------------------------------------------

#: backtracking doublings of the Lipschitz estimate per step at most.
#: Evidence: a guard.
FISTA_BACKTRACKS = 60
#: the quadratic upper bound may be exceeded by this (relative to ``|f_σ(y)|``): rounding.
#: Evidence: a guard.
FISTA_BOUND_SLACK = 1e-12
#: the Lipschitz estimate decays by this after every accepted step (it may have been high).
#: Evidence: none recorded (not tuned).
FISTA_LIP_DECAY = 0.95

# --- the staged driver (:mod:`.stages`) --------------------------------------------------

#: halvings of a run-off stage's step at most (``StageSettings.backoff``): ``2⁻⁸`` of it.
#: Evidence: benchmarks/TUNING.md, entry ``BACKOFF`` (``benchmarks/ab_runoff.py``).
BACKOFF_HALVINGS = 8
#: the stage ramp ``first_stage·2ᵏ`` stops doubling after this many stages.
#: Evidence: a guard (the shift stays a machine integer).
RAMP_DOUBLINGS = 30

# --- projected subgradient (:mod:`.subgradient`) -----------------------------------------

#: after a restart the step is at least this fraction of the first step.
#: Evidence: none recorded (not tuned).
RESTART_STEP_FLOOR = 1e-3

# --- escapes along negative curvature (:mod:`.escape`) and line searches ----------------

#: the smoothed escape's line search spans ``[0, ESCAPE_SPAN·Σ‖Lᵖ‖²]``.
#: Evidence: none recorded (not tuned).
ESCAPE_SPAN = 10.0
#: the exact escape's first trial is ``ESCAPE_TRIAL·Σ‖Lᵖ‖²/max|λ|``.
#: Evidence: none recorded (not tuned).
ESCAPE_TRIAL = 1e-3
#: ``Σ‖Lᵖ‖²`` is floored at these (smoothed, exact search): a zero factor still grows.
#: Evidence: a guard.
ESCAPE_SCALE_FLOOR, ESCAPE_BRACKET_FLOOR = 1e-6, 1e-8
#: backtracking gradient steps give up below this step.
#: Evidence: a guard.
BACKTRACK_MIN_STEP = 1e-20
