"""``convexmetric validate lmnn``: eq. (14) (or the multi-metric / kernel SDP) solved
exactly and with the large-scale solver, with the relative and certified gaps."""

from __future__ import annotations

import time

import click
import numpy as np

from ..lmnn.estimator import LMNN
from ..lmnn.solver import solve as solve_large_scale
from ..neighbors import target_neighbors
from ..problems import lmnn as P
from ..result import SolveResult
from ._common import (
    NO_EXACT_NOTE,
    NO_EXACT_OPTION,
    POSITIVE_INT,
    apply_options,
    emit,
    library_errors,
    load_xy,
    progress,
    solver_entry,
    solver_line,
)
from ._plot import Trace, plot_option, write_validate_plot
from .inputs import check_label_counts
from .lmnn_options import INPUTS, reject_unused


@click.command(
    "lmnn", short_help="Solve eq. (14) exactly and with the large-scale solver; report the gaps."
)
@apply_options(INPUTS)
@click.option(
    "--conic-solver",
    type=click.Choice(["SCS", "CLARABEL"]),
    default=None,
    help="Conic solver for the plain CVXPY solve of the full SDP "
    "[default: SCS; CLARABEL for --variant multi/kernel].",
)
@click.option(
    "--plain/--no-plain",
    default=None,
    help="Also solve the full SDP with plain CVXPY "
    "(default: only when it has at most 25,000 hinge terms).",
)
@click.option(
    "--variant",
    type=click.Choice(["single", "multi", "kernel"]),
    default="single",
    show_default=True,
    help="Which SDP: eq. (14), the multi-metric SDP (§5.2) or kernel LMNN (§5.3).",
)
@click.option(
    "--n-clusters", type=int, default=None, help="multi: k-means clusters (default: labels)."
)
@click.option(
    "--kernel",
    type=click.Choice(["rbf", "linear"]),
    default="rbf",
    show_default=True,
    help="kernel: the kernel function.",
)
@click.option("--gamma", type=float, default=None, help="kernel: RBF width (default 'scale').")
@click.option(
    "--per-class",
    type=POSITIVE_INT,
    default=10,
    show_default=True,
    help="multi/kernel: points per class of the small instance solved exactly.",
)
@NO_EXACT_OPTION
@plot_option
def VALIDATE(**opts):
    """Solve eq. (14) exactly and with the large-scale solver; report the relative gaps
    and each solver's certified gap (``--no-exact``: the certificates alone).

    Without inputs: the iris data (the training part of its standard split).
    """
    if opts["variant"] == "single":
        reject_unused(("n_clusters", "kernel", "gamma", "per_class"), "by --variant single")
    else:
        reject_unused(("plain",), f"by --variant {opts['variant']}")
    if opts["no_exact"]:
        reject_unused(("conic_solver", "plain"), "with --no-exact (no CVXPY solve)")
    if opts["dataset"] is None and opts["features"] is None:
        opts["dataset"] = "iris"
    if opts["variant"] != "single":
        opts["conic_solver"] = opts["conic_solver"] or "CLARABEL"
        return _validate_extension(opts)
    k, mu = opts["k"], opts["mu"]
    with library_errors():
        Xtr, ytr, _, _, name = load_xy(opts["dataset"], opts["features"], opts["labels"])
        check_label_counts(ytr, k)
        _, y = np.unique(ytr, return_inverse=True)
        T = target_neighbors(Xtr, y, k)
        n_terms = len(P.all_triplets(y, T)[0])
        exact, solvers = _exact_solves(Xtr, ytr, y, T, n_terms, opts)
        trace = Trace(progress("subgradient"))
        solvers["subgradient"] = solve_large_scale(Xtr, y, T, mu, callback=trace)
        ref = None if exact is None else exact.objective
        report = {
            "method": "lmnn",
            "instance": name,
            "n_hinge_terms": n_terms,
            "exact": None
            if exact is None
            else {
                "objective": ref,
                "seconds": exact.seconds,
                "status": exact.status,
                "solver": exact.solver,
                "lower_bound": exact.lower_bound,
            },
            "solvers": {
                key: solver_entry(r, ref) for key, r in solvers.items() if key != "working-set"
            },
        }
    lines = [f"LMNN eq. (14) on {name} (k={k}, mu={mu}, {n_terms} hinge terms)"]
    if exact is None:
        lines.append(NO_EXACT_NOTE)
    else:
        lines.append(
            f"  exact ({exact.solver}): objective {ref:.10g}, status {exact.status}, "
            f"{exact.seconds:.2f} s"
        )
    lines += [solver_line(key, r) for key, r in report["solvers"].items()]
    write_validate_plot(opts["plot"], report, solvers, {"subgradient": trace})
    emit(report, opts["as_json"], lines)


def _exact_solves(Xtr, ytr, y, T, n_terms, opts):
    """The working-set exact solve and, when small enough, the plain CVXPY one."""
    k, mu, plain = opts["k"], opts["mu"], opts["plain"]
    exact, solvers = None, {}
    if opts["no_exact"]:
        return exact, solvers
    exact = LMNN(k=k, mu=mu, solver="exact").fit(Xtr, ytr, targets=T).result_
    solvers["working-set"] = exact
    if plain or (plain is None and n_terms <= 25_000):
        conic = opts["conic_solver"] or "SCS"
        t0 = time.perf_counter()
        M, value, status, _ = P.solve(Xtr, y, T, mu, solver=conic)
        solvers[f"plain-{conic}"] = SolveResult(
            matrix=M,
            objective=P.objective(M, Xtr, T, y, mu),
            status=status,
            seconds=time.perf_counter() - t0,
            solver=conic,
            info={"cvxpy_value": value},
        )
    return exact, solvers


def _validate_extension(opts):
    from .lmnn_ext import small_instance, validate_variant

    runs = {}
    k, mu, variant, per_class = opts["k"], opts["mu"], opts["variant"], opts["per_class"]
    with library_errors():
        Xtr, ytr, _, _, name = load_xy(opts["dataset"], opts["features"], opts["labels"])
        X, y = small_instance(Xtr, ytr, per_class)
        check_label_counts(y, k)
        exact, solvers = validate_variant(
            X,
            y,
            variant=variant,
            k=k,
            mu=mu,
            settings={key: opts[key] for key in ("n_clusters", "kernel", "gamma")},
            conic_solver=opts["conic_solver"],
            no_exact=opts["no_exact"],
            runs=runs,
        )
        report = {
            "method": "lmnn",
            "variant": variant,
            "instance": f"{name} ({per_class} per class, n={len(y)})",
            "exact": exact,
            "solvers": solvers,
        }
    lines = [f"LMNN {variant} SDP on {report['instance']} (k={k}, mu={mu})"]
    if exact is None:
        lines.append(NO_EXACT_NOTE)
    else:
        lines.append(
            f"  exact ({exact['solver']}): objective {exact['objective']:.10g}, status "
            f"{exact['status']}, {exact['seconds']:.2f} s"
        )
    lines += [solver_line(key, r) for key, r in solvers.items()]
    write_validate_plot(opts["plot"], report, runs)
    emit(report, opts["as_json"], lines)


__all__ = ["VALIDATE"]
