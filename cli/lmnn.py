"""``convexmetric solve lmnn`` and ``convexmetric validate lmnn``."""

from __future__ import annotations

import time

import click
import numpy as np

from .. import datasets
from ..lmnn.dask_executor import dask_client
from ..lmnn.estimator import LMNN
from ..lmnn.solver import solve as solve_large_scale
from ..neighbors import knn_error, target_neighbors
from ..problems import lmnn as P
from ._common import (
    DATA_OPTIONS,
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
    write_outputs,
)
from ._plot import Trace, plot_option, write_validate_plot

_inputs = [
    *DATA_OPTIONS,
    click.option(
        "--k", default=3, show_default=True, type=int, help="Target neighbours per point."
    ),
    click.option(
        "--mu", default=0.5, show_default=True, type=float, help="Weight of the push term."
    ),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout."),
]


_extension_options = [
    click.option(
        "--variant",
        type=click.Choice(["single", "multi", "kernel"]),
        default="single",
        show_default=True,
        help="One metric (eq. 14), one per cluster (§5.2), or kernel LMNN (§5.3).",
    ),
    click.option(
        "--n-clusters", type=int, default=None, help="multi: k-means clusters (default: labels)."
    ),
    click.option(
        "--kernel",
        type=click.Choice(["rbf", "linear"]),
        default="rbf",
        show_default=True,
        help="kernel: the kernel function.",
    ),
    click.option("--gamma", type=float, default=None, help="kernel: RBF width (default 'scale')."),
    click.option(
        "--n-passes", type=int, default=1, show_default=True, help="Multi-pass LMNN (§5.1)."
    ),
    click.option("--n-components", type=int, default=None, help="Output dimensionality r (§5.4)."),
    click.option(
        "--reduction",
        type=click.Choice(["S", "R"]),
        default="S",
        show_default=True,
        help="With --n-components: LMNN-S (eigen-directions) or LMNN-R (rectangular L).",
    ),
    click.option("--pca", type=int, default=None, help="PCA to this many dimensions first."),
    click.option(
        "--search",
        type=click.Choice(["brute", "balltree", "kdtree", "auto"]),
        default="brute",
        show_default=True,
        help="Impostor search (§6): blocked brute force, trees, or measured choice.",
    ),
    click.option("--energy", is_flag=True, help="Also report energy-based test error (eq. 15)."),
]


@click.command("lmnn", short_help="Learn an LMNN metric (eq. 14) and report kNN errors.")
@apply_options(_inputs)
@click.option(
    "--solver",
    type=click.Choice(["subgradient", "exact"]),
    default="subgradient",
    show_default=True,
    help="Large-scale active-set solver, or working-set SDPs (exact).",
)
@click.option(
    "--max-iter", default=3000, show_default=True, type=int, help="Subgradient iterations."
)
@click.option(
    "--time-limit", type=float, default=None, help="Seconds before returning the best iterate."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for a model (model.json + .npy arrays, for `convexmetric transform` / "
    "`predict`), metric.npy, components.npy and report.json; written atomically.",
)
@click.option(
    "--memory-limit",
    default=None,
    callback=lambda ctx, param, value: _bytes(value),
    help="Working memory of the solver in bytes (suffixes K, M, G allowed, e.g. 512M) "
    "[default: 1G]; past it the solver streams over row blocks.",
)
@click.option(
    "--scheduler",
    default=None,
    help="Run the block work on Dask: a scheduler address (tcp://host:8786) or local:N "
    "(a LocalCluster of N worker processes); needs convexmetric[dask].",
)
@apply_options(_extension_options)
def SOLVE(dataset, features, labels, k, mu, as_json, solver, max_iter, time_limit, out,
          memory_limit, scheduler, **ext):  # fmt: skip
    """Learn an LMNN metric (eq. 14) on the standard split and report kNN errors.

    Extensions (§5–6): --variant multi|kernel, --n-passes, --n-components with
    --reduction S|R, --pca, --search, --energy.
    """
    if ext["variant"] != "single" or _extension_requested(ext):
        if scheduler is not None:
            raise click.UsageError(
                "--scheduler runs single-metric LMNN only (not --variant, --n-passes, "
                "--n-components, --pca, --search or --energy, yet)."
            )
        return _solve_extension(
            dataset, features, labels, k, mu, as_json, solver, max_iter, time_limit, out, ext
        )
    with library_errors():
        Xtr, ytr, Xte, yte, name = load_xy(dataset, features, labels)
        model = LMNN(k=k, mu=mu, solver=solver, max_iter=max_iter, time_limit=time_limit)
        if memory_limit is not None:
            model.set_params(memory_limit=memory_limit)
        if scheduler is None:
            model.fit(Xtr, ytr)
        else:
            with dask_client(scheduler):
                model.set_params(backend="dask").fit(Xtr, ytr)
        Ztr, Zte = model.transform(Xtr), model.transform(Xte)
        report = {
            "method": "lmnn",
            "instance": name,
            "n_train": int(Xtr.shape[0]),
            "n_features": int(Xtr.shape[1]),
            "k": k,
            "mu": mu,
            **model.result_.summary(),
            "mode": model.result_.info.get("mode"),
            "backend": model.backend,
            "knn_test_error": knn_error(Ztr, ytr, Zte, yte, k),
            "euclidean_knn_test_error": knn_error(Xtr, ytr, Xte, yte, k),
            "loo_train_error": model.loo_error(),
        }
        if out is not None:
            write_outputs(
                out,
                {"metric": model.metric_, "components": model.components_},
                report,
                model=model,
            )
    lines = [
        f"LMNN on {name}: {Xtr.shape[0]} training points × {Xtr.shape[1]} features, k={k}, mu={mu}",
        f"  solver {report['solver']}: objective {report['objective']:.8g}, status "
        f"{report['status']}, {report['iterations']} iterations, {report['seconds']:.2f} s",
        f"  {k}-NN test error: {report['knn_test_error']:.2%} "
        f"(Euclidean {report['euclidean_knn_test_error']:.2%}); "
        f"leave-one-out training error {report['loo_train_error']:.2%}",
    ]
    if out is not None:
        lines.append(f"  wrote {out}/ (model.json, metric.npy, components.npy, report.json)")
    emit(report, as_json, lines)


@click.command(
    "lmnn", short_help="Solve eq. (14) exactly and with the large-scale solver; report the gaps."
)
@apply_options(_inputs)
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
def VALIDATE(
    dataset,
    features,
    labels,
    k,
    mu,
    as_json,
    conic_solver,
    plain,
    variant,
    n_clusters,
    kernel,
    gamma,
    per_class,
    no_exact,
    plot,
):
    """Solve eq. (14) exactly and with the large-scale solver; report the relative gaps
    and each solver's certified gap (``--no-exact``: the certificates alone)."""
    if variant != "single":
        conic_solver = conic_solver or "CLARABEL"
        return _validate_extension(
            dataset,
            features,
            labels,
            k,
            mu,
            as_json,
            conic_solver,
            variant,
            n_clusters,
            kernel,
            gamma,
            per_class,
            no_exact,
            plot,
        )
    conic_solver = conic_solver or "SCS"
    with library_errors():
        if dataset is None and features is None:
            dataset = "iris"
        Xtr, ytr, _, _, name = load_xy(dataset, features, labels)
        model = LMNN(k=k, mu=mu)  # validates k, mu and the labels
        model._validate_params()
        _, y = np.unique(ytr, return_inverse=True)
        if np.bincount(y).min() <= k or len(np.unique(y)) < 2:
            LMNN(k=k, mu=mu, max_iter=1).fit(Xtr, ytr)  # raises the clear error
        T = target_neighbors(Xtr, y, k)
        n_terms = len(P.all_triplets(y, T)[0])
        exact, solvers = None, {}
        if not no_exact:
            exact = LMNN(k=k, mu=mu, solver="exact").fit(Xtr, ytr, targets=T).result_
            solvers["working-set"] = exact
        if not no_exact and (plain or (plain is None and n_terms <= 25_000)):
            t0 = time.perf_counter()
            M, value, status, _ = P.solve(Xtr, y, T, mu, solver=conic_solver)
            from ..result import SolveResult

            solvers[f"plain-{conic_solver}"] = SolveResult(
                matrix=M,
                objective=P.objective(M, Xtr, T, y, mu),
                status=status,
                seconds=time.perf_counter() - t0,
                solver=conic_solver,
                info={"cvxpy_value": value},
            )
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
    write_validate_plot(plot, report, solvers, {"subgradient": trace})
    emit(report, as_json, lines)


def _bytes(value):
    """``--memory-limit``: an int of bytes, optionally with a K, M or G suffix (powers of 2)."""
    if value is None:
        return None
    text = str(value).strip().upper().removesuffix("B")
    factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    try:
        number = int(text[:-1] if factor > 1 else text)
    except ValueError:
        raise click.BadParameter(
            f"must be a positive number of bytes such as 1073741824 or 1G; got {value!r}.",
            param_hint="'--memory-limit'",
        ) from None
    return number * factor


def _extension_requested(ext):
    return (
        ext["n_passes"] != 1
        or ext["n_components"] is not None
        or ext["pca"] is not None
        or ext["search"] != "brute"
        or ext["energy"]
    )


def _solve_extension(
    dataset, features, labels, k, mu, as_json, solver, max_iter, time_limit, out, ext
):
    from .lmnn_ext import fit_variant

    with library_errors():
        Xtr, ytr, Xte, yte, name = load_xy(dataset, features, labels)
        opts = dict(ext, max_iter=max_iter, time_limit=time_limit, solver=solver)
        model, extra = fit_variant(
            Xtr, ytr, Xte, yte, variant=ext["variant"], k=k, mu=mu, opts=opts
        )
        report = {
            "method": "lmnn",
            "instance": name,
            "n_train": int(Xtr.shape[0]),
            "n_features": int(Xtr.shape[1]),
            "k": k,
            "mu": mu,
            **model.result_.summary(),
            **extra,
            "euclidean_knn_test_error": knn_error(Xtr, ytr, Xte, yte, k),
        }
        if out is not None:
            arrays = {"components": model.components_}
            for attr in ("metric_", "metrics_", "A_"):
                if hasattr(model, attr):
                    arrays[attr.rstrip("_")] = getattr(model, attr)
            write_outputs(out, arrays, report, model=model)
    lines = [
        f"LMNN ({report['variant']}) on {name}: {Xtr.shape[0]} training points × "
        f"{Xtr.shape[1]} features, k={k}, mu={mu}",
        f"  solver {report['solver']}: objective {report['objective']:.8g}, status "
        f"{report['status']}, {report['seconds']:.2f} s",
        f"  {k}-NN test error: {report['knn_test_error']:.2%} "
        f"(Euclidean {report['euclidean_knn_test_error']:.2%})",
    ]
    if "energy_test_error" in report:
        lines.append(f"  energy-based test error: {report['energy_test_error']:.2%}")
    emit(report, as_json, lines)


def _validate_extension(
    dataset,
    features,
    labels,
    k,
    mu,
    as_json,
    conic_solver,
    variant,
    n_clusters,
    kernel,
    gamma,
    per_class,
    no_exact=False,
    plot=None,
):
    from .lmnn_ext import small_instance, validate_variant

    runs = {}

    with library_errors():
        if dataset is None and features is None:
            dataset = "iris"
        Xtr, ytr, _, _, name = load_xy(dataset, features, labels)
        X, y = small_instance(Xtr, ytr, per_class)
        exact, solvers = validate_variant(
            X,
            y,
            variant=variant,
            k=k,
            mu=mu,
            n_clusters=n_clusters,
            conic_solver=conic_solver,
            kernel=kernel,
            gamma=gamma,
            no_exact=no_exact,
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
    write_validate_plot(plot, report, runs)
    emit(report, as_json, lines)


__all__ = ["SOLVE", "VALIDATE", "datasets"]
