"""``convexmetric solve poe`` and ``convexmetric filter`` (``validate poe``: :mod:`.validate`).

One ``poe`` command covers LPOE, KPOE and MKPOE (``--kind linear|kernel|multi``) and
their diagonal LPs (``--diagonal``). Comparisons are CSV files with the header row
``i,j,k,l``; features and kernels are ``.npy``/``.npz``/``.csv`` files.
"""

from __future__ import annotations

import time

import click

from ..metrics import gauc
from ..poe.estimators import MKPOE, POE
from ..poe.graph import filter_comparisons
from ..validation.poe import default_data
from ._common import (
    HEADER_OPTION,
    check_output_file,
    emit,
    library_errors,
    load_comparisons,
    load_features,
    load_matrix,
    reject_unused,
    write_outputs,
)
from .options import (
    CONIC_SOLVERS,
    JSON_OPTION,
    OUT_DIR_OPTION,
    SEED_OPTION,
    TIME_LIMIT_OPTION,
    TOL_OPTION,
    conic_solver_option,
    estimator_limits,
    given,
)
from .poe_options import BETA, COMPARISONS, DIAGONAL, KERNELS, KIND
from .poe_options import N_COMPARISONS as _N_COMPARISONS


def _inputs(kind, comparisons, features, kernels, dataset, seed, n_comparisons):
    if dataset is not None:
        if comparisons or features or kernels:
            raise ValueError("give either --dataset or files (--comparisons ...), not both.")
        return default_data(kind, 20, n_comparisons, seed)
    if comparisons is None:
        if features or kernels:
            raise ValueError("--features and --kernel need --comparisons FILE.")
        return default_data(kind, 20, n_comparisons, seed)  # the default: --dataset digits_taxonomy
    if kind == "linear":
        if features is None:
            raise ValueError("--kind linear needs --features FILE.")
        X = load_features(features)
        return load_comparisons(comparisons, X.shape[0]), X, comparisons
    if not kernels:
        raise ValueError(f"--kind {kind} needs --kernel FILE (repeat it for --kind multi).")
    Ks = [load_matrix(path, "kernel") for path in kernels]
    if kind == "kernel" and len(Ks) != 1:
        raise ValueError("--kind kernel takes exactly one --kernel; use --kind multi.")
    C = load_comparisons(comparisons, Ks[0].shape[0])
    return C, (Ks[0] if kind == "kernel" else Ks), comparisons


def _solver(opts):
    """The estimator's ``solver``: "subgradient", or the conic solver of the exact side."""
    ctx = click.get_current_context()
    if opts["solver"] in CONIC_SOLVERS:
        click.echo(
            f"Warning: --solver {opts['solver']} is deprecated; use --solver exact "
            f"--conic-solver {opts['solver']}.",
            err=True,
        )
        if given(ctx, "conic_solver"):
            raise click.UsageError("give the conic solver once: --conic-solver.")
        return opts["solver"]
    if opts["solver"] == "subgradient":
        reject_unused(("conic_solver",), "by --solver subgradient")
        return "subgradient"
    reject_unused(("tol", "time_limit"), "by --solver exact")
    return opts["conic_solver"]


def _model(kind, beta, diagonal, solver):
    # the estimators' solver is the algorithm; a conic solver's name means "exact" with it
    conic = solver if solver in ("CLARABEL", "SCS") else "CLARABEL"
    solver = "exact" if solver in ("CLARABEL", "SCS") else solver
    if kind == "multi":
        return MKPOE(beta=beta, diagonal=diagonal, solver=solver, conic_solver=conic)
    return POE(
        beta=beta,
        kernel=None if kind == "linear" else "precomputed",
        diagonal=diagonal,
        solver=solver,
        conic_solver=conic,
    )


@click.command("poe")
@KIND
@DIAGONAL
@BETA
@COMPARISONS
@click.option(
    "--features",
    type=click.Path(exists=True, dir_okay=False),
    help="Features (rows are items) for --kind linear.",
)
@KERNELS
@click.option(
    "--dataset",
    type=click.Choice(["digits_taxonomy"]),
    help="Built-in taxonomy comparisons on digits (§5.1) [the default without files].",
)
@_N_COMPARISONS
@click.option(
    "--solver",
    type=click.Choice(["subgradient", "exact", *CONIC_SOLVERS]),
    default="subgradient",
    show_default=True,
    help="The large-scale solver (App. B), or the exact SDP/LP by --conic-solver "
    "(--solver CLARABEL|SCS: the former spelling of --solver exact --conic-solver ...).",
)
@conic_solver_option(note=" With --solver exact.")
@TOL_OPTION
@TIME_LIMIT_OPTION
@OUT_DIR_OPTION
@HEADER_OPTION
@JSON_OPTION
@SEED_OPTION
def SOLVE(kind, diagonal, out, as_json, **opts):
    """Learn a partial order embedding (LPOE / KPOE / MKPOE) from relative comparisons.

    Without files: the built-in taxonomy comparisons on digits (--dataset digits_taxonomy).

    --comparisons: a CSV file with the header row i,j,k,l, one comparison per row:
    0-based item indices meaning d(i,j) + 1 <= d(k,l), the pair (i,j) more similar
    than (k,l); triads i,j,k mean (i,j) closer than (i,k). For example:

    \b
        i,j,k,l
        0,1,0,2
        1,2,0,3
    """
    if opts["comparisons"] is not None:  # they draw the built-in instance only
        reject_unused(("n_comparisons", "seed"), "with --comparisons")
    with library_errors():
        files = (opts["comparisons"], opts["features"], opts["kernels"])
        C, data, name = _inputs(kind, *files, opts["dataset"], opts["seed"], opts["n_comparisons"])
        model = _model(kind, opts["beta"], diagonal, _solver(opts))
        model.set_params(**estimator_limits(opts, model)).fit(C, data)
        Z = model.transform(data)
        report = {
            "method": "poe",
            "kind": kind,
            "diagonal": diagonal,
            "instance": name,
            "comparisons": len(C),
            "objective": model.objective_,
            "training_gauc": gauc(Z, C),
            "result": model.result_.summary(),
        }
        if kind == "multi":
            report["kernel_weights"] = model.kernel_weights_.tolist()
        if out:
            Ws = model.W_ if kind == "multi" else [model.W_]
            arrays = {f"W{p}" if len(Ws) > 1 else "W": W for p, W in enumerate(Ws)}
            saved = None if kind == "multi" else model  # MKPOE: no model file
            write_outputs(out, {**arrays, "embedding": Z}, report, model=saved)
    emit(
        report,
        as_json,
        [
            f"poe ({kind}{', diagonal' if diagonal else ''}) on {name}: {len(C)} comparisons",
            f"objective {model.objective_:.6g} ({model.result_.status}, {model.result_.solver}, "
            f"{model.result_.seconds:.2f} s), training GAUC {report['training_gauc']:.4f}",
        ],
    )


@click.command("filter")
@click.argument("comparisons", type=click.Path(exists=True, dir_okay=False))
@HEADER_OPTION
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the filtered comparisons here (CSV, header i,j,k,l).",
)
@SEED_OPTION
@JSON_OPTION
def FILTER(comparisons, out, seed, as_json):
    """Filter relative comparisons (§2.2): repeated rows, length-2 cycles, a maximal
    acyclic subset (Alg. 1, seeded), transitive reduction; report what each stage removed.

    COMPARISONS: a CSV file with the header row i,j,k,l, one comparison per row: 0-based
    item indices meaning d(i,j) + 1 <= d(k,l), the pair (i,j) more similar than (k,l);
    triads i,j,k mean (i,j) closer than (i,k). For example:

    \b
        i,j,k,l
        0,1,0,2
        1,2,0,3
    """
    with library_errors():
        if out:
            check_output_file(out)
        C = load_comparisons(comparisons)
        t0 = time.perf_counter()
        rep = filter_comparisons(C, random_state=seed)
        report = {
            "file": comparisons,
            "seconds": time.perf_counter() - t0,
            **rep.summary(),
            "removed": {s.name: s.removed.tolist() for s in rep.stages},
        }
        if out:
            rep.comparisons.to_csv(out)
    lines = [f"{report['input']} comparisons read from {comparisons}"]
    lines += [
        f"  {s['stage']:22s} removed {s['removed']:7d}, {s['remaining']:7d} remain"
        for s in report["stages"]
    ]
    lines.append(f"{report['output']} comparisons kept" + (f", written to {out}" if out else ""))
    emit(report, as_json, lines)
