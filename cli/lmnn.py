"""``convexmetric solve lmnn`` and ``convexmetric validate lmnn``."""

from __future__ import annotations

import time

import click
import numpy as np

from .. import datasets
from ..lmnn import LMNN
from ..neighbors import knn_error, target_neighbors
from ..problems import lmnn as P
from ..result import relative_gap
from ..solvers.lmnn import solve as solve_large_scale
from ._common import DATASET_CHOICE, emit, library_errors, load_xy, progress, write_outputs

_inputs = [
    click.option(
        "--dataset", type=DATASET_CHOICE, help="A built-in data set (see `convexmetric datasets`)."
    ),
    click.option(
        "--features",
        type=click.Path(exists=True, dir_okay=False),
        help="Features file (.npy, .npz, .csv); rows are points.",
    ),
    click.option(
        "--labels",
        type=click.Path(exists=True, dir_okay=False),
        help="Labels file (.npy, .npz, .csv), one label per row of --features.",
    ),
    click.option(
        "--k", default=3, show_default=True, type=int, help="Target neighbours per point."
    ),
    click.option(
        "--mu", default=0.5, show_default=True, type=float, help="Weight of the push term."
    ),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout."),
]


def _apply(options):
    def deco(f):
        for opt in reversed(options):
            f = opt(f)
        return f

    return deco


@click.command("lmnn")
@_apply(_inputs)
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
    help="Directory for metric.npy, components.npy and report.json (written atomically).",
)
def SOLVE(dataset, features, labels, k, mu, as_json, solver, max_iter, time_limit, out):
    """Learn an LMNN metric (eq. 14) on the standard split and report kNN errors."""
    with library_errors():
        Xtr, ytr, Xte, yte, name = load_xy(dataset, features, labels)
        model = LMNN(k=k, mu=mu, solver=solver, max_iter=max_iter, time_limit=time_limit)
        model.fit(Xtr, ytr)
        Ztr, Zte = model.transform(Xtr), model.transform(Xte)
        report = {
            "method": "lmnn",
            "instance": name,
            "n_train": int(Xtr.shape[0]),
            "n_features": int(Xtr.shape[1]),
            "k": k,
            "mu": mu,
            **model.result_.summary(),
            "knn_test_error": knn_error(Ztr, ytr, Zte, yte, k),
            "euclidean_knn_test_error": knn_error(Xtr, ytr, Xte, yte, k),
            "loo_train_error": model.loo_error(),
        }
        if out is not None:
            write_outputs(out, {"metric": model.metric_, "components": model.components_}, report)
    lines = [
        f"LMNN on {name}: {Xtr.shape[0]} training points × {Xtr.shape[1]} features, k={k}, mu={mu}",
        f"  solver {report['solver']}: objective {report['objective']:.8g}, status "
        f"{report['status']}, {report['iterations']} iterations, {report['seconds']:.2f} s",
        f"  {k}-NN test error: {report['knn_test_error']:.2%} "
        f"(Euclidean {report['euclidean_knn_test_error']:.2%}); "
        f"leave-one-out training error {report['loo_train_error']:.2%}",
    ]
    if out is not None:
        lines.append(f"  wrote {out}/metric.npy, components.npy, report.json")
    emit(report, as_json, lines)


@click.command("lmnn")
@_apply(_inputs)
@click.option(
    "--conic-solver",
    type=click.Choice(["SCS", "CLARABEL"]),
    default="SCS",
    show_default=True,
    help="Conic solver for the plain CVXPY solve of the full SDP.",
)
@click.option(
    "--plain/--no-plain",
    default=None,
    help="Also solve the full SDP with plain CVXPY "
    "(default: only when it has at most 25,000 hinge terms).",
)
def VALIDATE(dataset, features, labels, k, mu, as_json, conic_solver, plain):
    """Solve eq. (14) exactly and with the large-scale solver; report the relative gaps."""
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
        exact = LMNN(k=k, mu=mu, solver="exact").fit(Xtr, ytr, targets=T).result_
        solvers = {"working-set": exact}
        if plain or (plain is None and n_terms <= 25_000):
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
        solvers["subgradient"] = solve_large_scale(Xtr, y, T, mu, callback=progress("subgradient"))
        ref = exact.objective
        report = {
            "method": "lmnn",
            "instance": name,
            "n_hinge_terms": n_terms,
            "exact": {
                "objective": ref,
                "seconds": exact.seconds,
                "status": exact.status,
                "solver": exact.solver,
                "lower_bound": exact.lower_bound,
            },
            "solvers": {
                key: {
                    "objective": r.objective,
                    "seconds": r.seconds,
                    "status": r.status,
                    "relative_gap": relative_gap(r.objective, ref),
                }
                for key, r in solvers.items()
                if key != "working-set"
            },
        }
    lines = [
        f"LMNN eq. (14) on {name} (k={k}, mu={mu}, {n_terms} hinge terms)",
        f"  exact ({exact.solver}): objective {ref:.10g}, status {exact.status}, "
        f"{exact.seconds:.2f} s",
    ]
    for key, r in report["solvers"].items():
        lines.append(
            f"  {key}: objective {r['objective']:.10g}, status {r['status']}, "
            f"{r['seconds']:.2f} s, relative gap {r['relative_gap']:.2e}"
        )
    emit(report, as_json, lines)


__all__ = ["SOLVE", "VALIDATE", "datasets"]
