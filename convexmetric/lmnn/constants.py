"""LMNN's tuning constants in one place: each with its reason and where its evidence is.

None of them changes the problem solved or what a certificate proves: they steer time
and memory (the active list, the blocks, the check schedule, the certificate's search).
Evidence is a benchmark that regenerates it, named as ``script [--rows ROW]``; the
decisions and what was tried instead are in ``benchmarks/TUNING.md``.
"""

from __future__ import annotations

# --- memory ------------------------------------------------------------------------------

#: default working-memory budget of a fit (bytes); fixed, so a fit runs the same on any
#: machine (evidence: ``bench_mnist.py --rows augmented``, the fit's peak RSS)
DEFAULT_MEMORY_LIMIT = 2 << 30
#: bytes per listed triplet: the largest traced peak per term over a check, a merge, the
#: evaluations and a bound, list and memo included, rounded up to 64 (``bench_list_memory.py``)
BYTES_PER_TERM = 192
#: bytes per (block row × data row) of one block: float32 distances, masks, temporaries
BYTES_PER_BLOCK_CELL = 16
#: the part of a memory budget that sizes the blocks, at most (bytes)
BLOCK_BUDGET = 1 << 30
#: rows of one block, at most: fewer than about 140 repack the ``n × d`` operand too often,
#: more than about 300 only hold memory (``bench_mnist.py --rows augmented``)
MAX_BLOCK_ROWS = 288
#: the smallest block plan: a block's rows and a chunk's candidate pairs, at least
LEAST_ROWS, LEAST_CHUNK = 8, 256
#: what a fit holds beyond its ``memory_limit``: arrays of ``n × (d + k)`` and of ``d × d``
#: doubles, and bytes; traced peaks less the limit on iris, wine and digits at 1× and 8× the
#: smallest plan were at most 14 arrays and 0.36 MiB (``tests/test_lmnn_memory_ceiling.py``)
DATA_COPIES, SQUARE_STATE, BASE_BYTES = 16, 48, 1 << 19
#: default bytes of device memory one block may take (a ``block_rows × n`` float32 product)
DEVICE_BLOCK_MEMORY = 4 << 30
#: ``n_jobs=None`` runs the block work in lanes from this many points on: below it a map's
#: blocks are too short to pay for the lanes (augmented MNIST subsamples, 2 cores, lanes
#: over one thread: 30,000 points 0.82×; 8,000–20,000 0.93–0.94×; MNIST 4,000 1.13×;
#: digits 1.46×; ``bench_gpu.py --device cpu --rows 60k --max-n N --n-jobs 1`` and without)
LANES_FROM_ROWS = 30_000

# --- the active list and its checks ------------------------------------------------------

#: from this many points on, the list's int64 keys ``(i·n + j)·n + l`` overflow: streaming
MAX_LISTED_N = 2_097_152
#: streaming trial evaluations above this multiple of the best value seen return inf (a
#: trial the descent rejects anyway; at a collapsed metric the exact sum is ``O(n²kd)``)
STREAM_CAP = 4.0
#: the memo's search margin in phase 1, and in the refinement (whose stages count terms
#: near the kink: a wider memo keeps them between checks)
MEMO_MARGIN, WIDE_MEMO_MARGIN = 1e-3, 0.5
#: trial evaluations run in float32 when ``tol`` is at least this and ``X`` has this many
#: entries (their rounding, :data:`TRIAL_RTOL`, is far below such a tol)
SINGLE_TOL, SINGLE_SIZE = 1e-5, 1 << 16
#: the relative rounding of float32 trial values near the optimum (1e-9 to 7e-9 against
#: float64 on ``bench_mnist.py --rows sample``), for L-BFGS's end of a stage
TRIAL_RTOL = 1e-8
#: a check at a trial point gives up past ``max(COLLAPSE_TERMS, COLLAPSE_GROWTH × list
#: size)`` violated triplets: a step that far past the list collapsed the metric (its exact
#: value, by streaming, decides it: ``ActiveList.overflow``); not tuned
COLLAPSE_TERMS, COLLAPSE_GROWTH = 5_000_000, 4
#: for the check schedule, a check adding under this share of the list counts as finding
#: nothing new (the final check at convergence still asks for none); not tuned
STABLE_SHARE = 1e-2
#: phase 1 before a refinement passes a final check adding under this share of the list
#: (each check of a converged subgradient run finds a few near-kink terms on large data,
#: and every restart costs a full search; the refinement's own final check is strict)
HANDOVER_SHARE = 1e-3
#: the largest share of the points a partial check re-searches; past it, a full search
PARTIAL_SHARE = 0.25
#: below this many points the memo answers its own metric only: a partial check's set-up
#: costs what a search does (``bench_rows.py --rows lmnn/wine``)
PARTIAL_MIN_N = 2048
#: the thresholds tried for a partial check's stale set, as quantiles (the smallest kept)
QUANTILES = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
#: rows of ``X`` per product ``Z = X Lᵀ``: a GEMM's rounding depends on its shape, so fixed
#: chunks give the same ``Z`` in one thread or in the executor's lanes
PROJECT_ROWS = 4096
#: rows of a full check's block compared in one pass
GROUP_ROWS = 64
#: the impostor screen's axes leave out at most this fraction of ``Z``'s spread
SCREEN_RESIDUAL = 0.05
#: rows the screen centres at once (the centred copy of ``Z`` is never made whole)
SCREEN_ROWS = 8192
#: test rows per prediction task
PREDICT_ROWS = 2048

# --- the solver's phases -----------------------------------------------------------------

#: phase 1 hands over to the refinement once it gains less than this in 10 iterations
#: (L-BFGS does the rest in far fewer evaluations: ``bench_mnist.py --rows sample``)
HANDOVER_RTOL = 1e-2
#: streaming smoothed stages: σ's factor per stage and a stage's iterations (no prox centre
#: when streaming, λ̄ = 0, so σ must shrink for the smoothing to converge); not tuned
STREAM_STAGE = (0.3, 300)
#: the active list's pruning margin during the refinement
REFINE_PRUNE = 0.1
#: escapes along negative curvature at most in one refinement
MAX_ESCAPES = 5
#: searches' worth of time a fit stopped by ``time_limit`` keeps for its closing work: the
#: exact objective of the returned point, one search (none when it is the point last
#: searched); the proof of its bound comes on top. With ``time_limit=300`` 240,000 points
#: end at 311 s; with none kept at 384 s, with two searches kept at 231 s and a 3.3× worse
#: objective (``bench_gpu.py --device cpu --rows 240k --time-limit 300``)
CLOSING_SEARCHES = 1.0

# --- the certificate ---------------------------------------------------------------------

#: the smooth ascent goes on from the supergradient ascent's multipliers when their gap is
#: within this multiple of ``tol`` (single- and multi-metric; ``bench_mnist.py --rows sample``)
SOFT_WINDOW = 5.0
#: smoothing widths of the multipliers ``clip(z/σ, 0, 1)`` tried for the bound of a fit that
#: stopped before its refinement bounded it (margins are 1 at the solver's unit scale)
STOP_WIDTHS = (1.0, 0.1)
#: a stage's bound is tightened (ascent, crossover) only when its gap is within
#: ``max(TIGHTEN_WINDOW_TOLS·tol, TIGHTEN_WINDOW)``: farther out the primal gap dominates
TIGHTEN_WINDOW_TOLS, TIGHTEN_WINDOW = 30.0, 1e-3
#: the ascent's bound is kept without a crossover when it closed this share of the gap it
#: had to close; a crossover closing less than CROSSOVER_ENOUGH backs off for 1, 2, 4 … at
#: most CROSSOVER_MAX_SKIP eligible bounds (``bench_mnist.py --rows sample``)
ASCENT_ENOUGH, CROSSOVER_ENOUGH, CROSSOVER_MAX_SKIP = 0.5, 0.25, 8
#: the objective a solver computed, raised by this share, bounds the optimum from above
#: whatever its rounding (the trace bound needs some ``F ≥ f*``); a proof's slack
OBJECTIVE_SLACK = 1e-9

# --- multi-metric LMNN --------------------------------------------------------------------

#: full checks list the triplets with ``z > −MULTI_MARGIN``: a narrow list goes stale
#: sooner, a wide one makes every evaluation dearer (``bench_lmnn_ext.py``, digits)
MULTI_MARGIN = 0.1
#: the ascent frees the multipliers of the triplets within this of the kink (``|z| < τ``)
MULTI_TAU = 0.01
#: the block factors shed eigen-directions below this share of ``λ_max`` between stages
#: (the blocks' optima have a few dominant directions; ``ab_multi.py``)
MULTI_RANK_TOL = 1e-4
#: the bound's ascent runs within this relative gap, after a stage that lowered the best
#: objective by at most ``ASCENT_PROGRESS·tol`` (a primal still moving is not within tol;
#: the stages' own multipliers bound erratically: ``ab_multi.py``)
ASCENT_WINDOW, ASCENT_PROGRESS = 0.5, 2.0
#: the first stages that search all triplets at every evaluation, the first stage's
#: iterations (doubled per stage), L-BFGS's correction pairs (``ab_multi.py``)
EXACT_STAGES, FIRST_STAGE, MAXCOR = 2, 10, 10
#: a list-only stage ending above this multiple of the best ran off on its stale list and
#: backs off towards its start (``ab_runoff.py``)
BACKOFF = 8.0

# --- Dask --------------------------------------------------------------------------------

#: tasks per evaluation at most; consecutive blocks share a task beyond (the grouping
#: depends on the blocks only: results do not depend on the cluster)
MAX_TASKS = 256
#: and each task's blocks hold at least this many cells (rows × n, the block work's
#: unit): a task costs the client, the scheduler and its worker milliseconds of their
#: own, so a task of one small block cost as much again as its work
TASK_CELLS = 1 << 28
#: per evaluation, task arguments up to this many bytes in all travel inline
INLINE_BYTES = 1 << 20
#: seconds between two looks at the cluster while an attempt's tasks run
POLL = 0.5
#: seconds a control call (membership, gathering results, dropping data) may take
CALL = 10.0
#: bytes per second that sending the data to the workers is granted beyond :data:`CALL`
RATE = 20e6
#: seconds an evaluation waits for a running worker when it has none
GRACE = 20.0
#: fits whose data a worker keeps (the oldest is evicted)
STORE_FITS = 2
