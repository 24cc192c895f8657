"""Maurer's tuning constants, each with its reason and the benchmark row that measures it.

Evidence is a row of ``python benchmarks/bench_rows.py --rows maurer`` (the estimators'
defaults end to end), a section of ``python benchmarks/bench_maurer.py`` (``scale``:
Table 1's SGD at 10⁶ steps; ``accuracy``: every solver against Clarabel), or an entry
of ``benchmarks/TUNING.md`` ("Maurer"); "paper" marks Maurer's (JMLR 2008) own value,
"no row" a value chosen by reasoning alone. The solvers' settings and the estimators'
defaults are read from here, never copied.
"""

# ---- what "optimal" means -------------------------------------------------------------

#: the certified relative gap of the projected-subgradient route — bench_rows.py
#: maurer/subgradient-wine (certifies 6e-7)
TOL_SUBGRADIENT = 1e-6
#: the certified relative gap of the SGD's end point — bench_rows.py maurer/sgd-wine
TOL_SGD = 1e-4

# ---- Table 1's SGD (sgd.py) ---------------------------------------------------------

#: θ, for inputs of diameter ≤ 1 — paper (§6); bench_maurer.py scale
LEARNING_RATE = 0.01
#: steps (pair draws) — bench_rows.py maurer/sgd-wine (20,000), bench_maurer.py scale
SGD_MAX_ITER = 100_000
#: consecutive draws evaluated by one triangular solve — bench_maurer.py scale
BLOCK_SIZE = 50
#: steps between refreshes of the regulariser's gradient — paper (Table 1); bench_maurer.py scale
REG_EVERY = 500
#: rows ``d`` of ``V`` at most by default — paper (§6: d = 100)
MAX_COMPONENTS = 100
#: mean ``‖a‖²`` of the random start — bench_maurer.py accuracy
INIT_SCALE = 0.1
#: an objective this many times the start's is a divergence — no row (overflow guard)
DIVERGENCE = 1e6

# ---- the projected-subgradient route (solver.py) -------------------------------------

#: subgradient steps before the refinement — bench_rows.py maurer/subgradient-wine
FIRST_STAGE_MAX_ITER = 3000
#: the first stage's stall window — bench_rows.py maurer/subgradient-wine
FIRST_STAGE_PATIENCE = 200
#: the refinement's first smoothing width — bench_maurer.py accuracy
REFINE_SIGMA0 = 0.01
#: the refinement's smallest width — bench_maurer.py accuracy
REFINE_SIGMA_MIN = 1e-7
#: FISTA steps per refinement stage — TUNING.md ("maurer.solver.solve_projected")
REFINE_STAGE_ITER = 1000
#: stalled stages before the refinement gives up — TUNING.md ("maurer.solver.solve_projected")
REFINE_STALLS = 2
#: widths above this skip the certificate between stages (it could not end the run),
#: and the near-kink width polished at or below it — bench_rows.py maurer/subgradient-wine
BOUND_SIGMA = 1e-4

# ---- the certificate (certificate.py) -----------------------------------------------

#: smoothing widths of the ladder — bench_rows.py maurer/*
N_LADDER = 12
#: near-kink pairs handed to the polish at most — TUNING.md ("CertifySettings.polish_gap")
MAX_POLISH = 3000
#: up to this many free pairs SLSQP, beyond it the penalty path — TUNING.md (polish_gap)
MAX_SLSQP = 40
#: SLSQP's iterations at most — TUNING.md (polish_gap)
SLSQP_ITER = 100
#: SLSQP's tolerance: its iterations, not ftol, end the polish — no row
SLSQP_FTOL = 1e-15
#: the polish's near-kink widths — TUNING.md (polish_gap)
POLISH_WIDTHS = (1e-4, 1e-2, 0.1, 0.3)
#: the fit and the polish run only when the ladder's gap is at most this — TUNING.md
#: ("maurer.certificate.CertifySettings.polish_gap")
POLISH_GAP = 0.5
#: at a returned point of the projected route: narrower widths … — bench_rows.py
#: maurer/subgradient-wine, test_maurer_showcase (the guide's data certify to TOL_SUBGRADIENT)
AT_SOLUTION_POLISH_WIDTHS = (1e-6, 1e-4, 1e-3, 1e-2, 0.1, 0.3)
#: … SLSQP on more free pairs (the penalty path stops short of 1e-6) … — same rows
AT_SOLUTION_MAX_SLSQP = 150
#: … and for more iterations — same rows
AT_SOLUTION_SLSQP_ITER = 300
#: near-kink widths of the stationarity fit — bench_rows.py maurer/subgradient-wine
KKT_DELTAS = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
#: relative eigenvalue thresholds of ``A``'s range in the stationarity fit — same row
KKT_RANK_TOLS = (1e-8, 1e-5, 1e-3)
#: most free pairs of the stationarity fit — no row (a dense BVLS beyond it)
KKT_MAX_FREE = 5000
#: rounds of the penalty path, ρ ×10 each — no row
PENALTY_ROUNDS = 7
#: L-BFGS-B iterations per penalty round — no row
PENALTY_ITER = 300
#: eigenvalues constrained by the trace polish (the smallest ones) — no row
TRACE_EIGS = 10

# ---- the SGD's start and its checks (sgd.py) ------------------------------------------

#: differences combined into each random start vector — no row
START_TERMS = 10
#: pairs sampled to scale the start — no row
START_SAMPLE = 2000
#: full objectives per run at least (the best evaluated iterate is returned) — no row
MIN_EVALUATIONS = 10

# ---- the estimators --------------------------------------------------------------------

#: pairs the oracle draws from ``X, y`` — bench_rows.py maurer/* (2,000 pairs of wine)
N_PAIRS = 2000
