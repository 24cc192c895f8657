"""POE's tuning constants, each with its reason and the benchmark row that measures it.

Evidence is a row of ``python benchmarks/bench_rows.py --rows poe`` (the estimators'
defaults end to end) or a section of ``python benchmarks/bench_poe.py`` (``small``,
``scale``, ``kpoe800``, ``diag51``, ``scale1650``); "no row" marks a value chosen by
reasoning alone. The solvers' settings dataclasses take their defaults from here.
"""

# ---- every method --------------------------------------------------------------------

#: the certified relative gap that "optimal" means — bench_rows.py poe/* (all certify)
TOL = 1e-4
#: first smoothing width of the smoothed paths (the margin is 1) — bench_poe.py small
SIGMA0 = 0.1
#: σ ← σ·SIGMA_FACTOR between stages — bench_poe.py small
SIGMA_FACTOR = 0.1

# ---- the diagonal LPs (diagonal.py) --------------------------------------------------

#: L-BFGS-B's projected-gradient tolerance, relative to ``min r`` — bench_rows.py poe/*-diagonal
DIAGONAL_GTOL = 1e-4
#: L-BFGS-B iterations per stage — bench_rows.py poe/*-diagonal
DIAGONAL_STAGE_ITER = 2000
#: stages at most (σ down to 1e-12·σ₀) — bench_poe.py diag51
DIAGONAL_MAX_STAGES = 12
#: L-BFGS-B's memory on the LPs — bench_rows.py poe/*-diagonal
DIAGONAL_MAXCOR = 10
#: from this width on an uncertified stage also solves the kink LP — bench_poe.py diag51
LP_SIGMA = 1e-3
#: kink widths of the exact LP bound, narrow first — bench_poe.py diag51
LP_TAUS = (1e-3, 1e-2, 1e-1)
#: most free multipliers handed to HiGHS (larger sets are skipped) — bench_poe.py diag51
LP_MAX_FREE = 1500
#: the crossover's kink widths, in units of the stage's σ — bench_rows.py poe/*-diagonal
CROSSOVER_WIDTHS = (0.1, 1.0, 10.0)
#: the crossover's σ at a subgradient path's end point — no row (the stall width)
CROSSOVER_SIGMA = 1e-4

# ---- the full SDPs (factored.py) -----------------------------------------------------

#: initial columns of each factor, grown by the escapes — bench_poe.py scale, kpoe800
RANK = 8
#: smallest σ; below it the prox centre moves instead — bench_poe.py scale
FACTORED_SIGMA_MIN = 1e-2
#: L-BFGS iterations per stage — bench_rows.py poe/*-full
FACTORED_STAGE_ITER = 1000
#: stages (escapes included) at most — bench_poe.py scale1650
FACTORED_MAX_STAGES = 30
#: L-BFGS's relative-reduction tolerance within a stage — bench_rows.py poe/*-full
FACTORED_FTOL = 1e-15
#: L-BFGS's gradient tolerance (the stage ends by ftol or its budget) — no row
FACTORED_GTOL = 1e-12
#: L-BFGS's memory on the factors — bench_rows.py poe/*-full
FACTORED_MAXCOR = 20
#: line-search trials at most — bench_rows.py poe/*-full
FACTORED_MAXLS = 50
#: scale of the random initial factors (L = 0 is a saddle) — no row
INIT_SCALE = 1e-2
#: escape when ``λ_min(Sᵖ) < −ESCAPE_MU_TOL`` … — bench_poe.py scale
ESCAPE_MU_TOL = 1e-9
#: … and its repair is above this share of the open gap — bench_poe.py scale
ESCAPE_SHARE = 0.25
#: negative-curvature directions appended per block and escape — bench_poe.py scale
ESCAPE_MAX_NEW = 8

# ---- the certificates (certificate.py, solver.py) ------------------------------------

#: smoothing widths whose multipliers ``s·clip(z/σ, 0, 1)`` are tried — bench_rows.py poe/*
CERT_SIGMAS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 0.0)
#: kink widths of the full crossover — bench_rows.py poe/*-full
FULL_CROSSOVER_TAUS = (1e-7, 1e-6, 1e-5, 1e-4, 1e-3)
#: most kink multipliers the full crossover fits — bench_poe.py scale1650
FULL_CROSSOVER_MAX_KINKS = 3000
#: up to this many kinks BVLS, beyond it the trust-region fit — bench_poe.py scale
BVLS_MAX_KINKS = 300

# ---- App. B's projected subgradient (solver.py, method="subgradient") ----------------

#: steps at most before the refinement — bench_poe.py small
SUBGRADIENT_MAX_ITER = 100
#: stall window (steps) … — bench_poe.py small
SUBGRADIENT_PATIENCE = 30
#: … and the relative improvement over it that counts as progress — bench_poe.py small
SUBGRADIENT_RTOL = 1e-4
#: FISTA iterations per smoothing stage of the refinement — bench_poe.py small
REFINE_STAGE_ITER = 200
