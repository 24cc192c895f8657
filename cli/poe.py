"""``convexmetric solve poe``, ``convexmetric validate poe`` and ``convexmetric filter``.

One ``poe`` command covers LPOE, KPOE and MKPOE (``--kind linear|kernel|multi``) and
their diagonal LPs (``--diagonal``). Comparisons are CSV files with the header row
``i,j,k,l``; features and kernels are ``.npy``/``.npz``/``.csv`` files.
"""

from __future__ import annotations

import time

import click

from ..datasets.taxonomy import make_taxonomy
from ..metrics import gauc
from ..poe import solver as large_scale
from ..poe.estimators import MKPOE, POE
from ..poe.graph import filter_comparisons
from ..problems import poe as P
from ._common import (
    COMPARISONS_HELP,
    HEADER_OPTION,
    NO_EXACT_NOTE,
    NO_EXACT_OPTION,
    POSITIVE_FLOAT,
    emit,
    library_errors,
    load_comparisons,
    load_features,
    load_matrix,
    reject_unused,
    solver_entry,
    solver_line,
    write_outputs,
)
from ._plot import Trace, plot_option, write_validate_plot

KINDS = ("linear", "kernel", "multi")


def _built_in(kind, n_per_class, n_comparisons, seed):
    """The taxonomy instance of §5.1 on digits, as (comparisons, data, description)."""
    T = make_taxonomy(
        n_per_class, n_train_comparisons=n_comparisons, n_test_comparisons=10, random_state=seed
    )
    Ks = T.train_kernels()
    if kind == "linear":
        pooled = T.X[T.train].reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(len(T.train), -1)
        data = pooled / 16.0
    elif kind == "kernel":
        data = Ks[0]
    else:
        data = [Ks[0], Ks[1], Ks[5]]  # pixels, rows, one noise kernel
    return T.train_comparisons, data, f"digits_taxonomy(n={len(T.train)}, m={n_comparisons})"


def _inputs(kind, comparisons, features, kernels, dataset, seed, n_comparisons):
    if dataset is not None:
        if comparisons or features or kernels:
            raise ValueError("give either --dataset or files (--comparisons ...), not both.")
        return _built_in(kind, 20, n_comparisons, seed)
    if comparisons is None:
        if features or kernels:
            raise ValueError("--features and --kernel need --comparisons FILE.")
        return _built_in(kind, 20, n_comparisons, seed)  # the default: --dataset digits_taxonomy
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


_kind = click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="kernel",
    show_default=True,
    help="LPOE on features, KPOE on one kernel, or MKPOE on several.",
)
_diag = click.option("--diagonal", is_flag=True, help="The diagonal LP of §4.4.")
_beta = click.option(
    "--beta",
    type=POSITIVE_FLOAT,
    default=100.0,
    show_default=True,
    help="Loss weight β (objective tr(WR) + β/|C| Σ ξ).",
)
_json = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
_seed = click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")


_comparisons = click.option(
    "--comparisons",
    type=click.Path(exists=True, dir_okay=False),
    help=COMPARISONS_HELP,
)
_kernels = click.option(
    "--kernel",
    "kernels",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A kernel matrix file; repeat for --kind multi.",
)
_n_comparisons = click.option(
    "--n-comparisons",
    type=int,
    default=1000,
    show_default=True,
    help="Comparisons drawn for --dataset.",
)
#: the options besides --features/--dataset that say which comparisons and items train
#: (``solve poe``, ``verify``)
COMPARISON_OPTIONS = [_comparisons, _kernels, _n_comparisons]


@click.command("poe")
@_kind
@_diag
@_beta
@_comparisons
@click.option(
    "--features",
    type=click.Path(exists=True, dir_okay=False),
    help="Features (rows are items) for --kind linear.",
)
@_kernels
@click.option(
    "--dataset",
    type=click.Choice(["digits_taxonomy"]),
    help="Built-in taxonomy comparisons on digits (§5.1) [the default without files].",
)
@_n_comparisons
@click.option(
    "--solver",
    type=click.Choice(["subgradient", "exact", "CLARABEL", "SCS"]),
    default="subgradient",
    show_default=True,
    help="Large-scale solver or exact SDP/LP.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for W*.npy, embedding.npy and report.json (written atomically).",
)
@HEADER_OPTION
@_json
@_seed
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
        model = _model(kind, opts["beta"], diagonal, opts["solver"]).fit(C, data)
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


@click.command("poe")
@_kind
@_diag
@_beta
@click.option(
    "--n-per-class",
    type=click.IntRange(min=5),
    default=5,
    show_default=True,
    help="Digits per class in the default instance (80% are used; at least 5, so that "
    "the held-out 20% has a digit of every class).",
)
@click.option(
    "--n-comparisons",
    type=int,
    default=500,
    show_default=True,
    help="Comparisons in the default instance.",
)
@click.option(
    "--solver",
    "exact_solver",
    type=click.Choice(["CLARABEL", "SCS"]),
    default="CLARABEL",
    show_default=True,
    help="The exact conic solver.",
)
@_json
@_seed
@NO_EXACT_OPTION
@plot_option
def VALIDATE(
    kind, diagonal, beta, n_per_class, n_comparisons, exact_solver, as_json, seed, no_exact, plot
):
    """Solve one POE instance exactly and with the large-scale solver; report the gap
    and the solver's certified gap (``--no-exact``: the certificate alone)."""
    if no_exact:
        reject_unused(("exact_solver",), "with --no-exact (no CVXPY solve)")
    with library_errors():
        C, data, name = _built_in(kind, n_per_class, n_comparisons, seed)
        if kind == "linear":
            blocks, kernels = P.lpoe_blocks(data), None
        else:
            kernels = data if kind == "multi" else [data]
            blocks = P.kernel_blocks(kernels)
        value, exact = None, None
        if not no_exact:
            _, value, status, seconds = P.solve(
                blocks, C, beta, diagonal=diagonal, solver=exact_solver
            )
            exact = {"objective": value, "seconds": seconds, "status": status}
            exact["solver"] = exact_solver
        t0, trace = time.perf_counter(), Trace()
        if kernels is None:
            res = large_scale.solve(blocks, C, beta, diagonal=diagonal, callback=trace)
        else:
            res = large_scale.solve_kernels(kernels, C, beta, diagonal=diagonal, callback=trace)
        sub_seconds = time.perf_counter() - t0
        sub_obj = P.objective(res.matrices, blocks, C, beta)
        report = {
            "method": "poe",
            "instance": f"{name}, kind={kind}, diagonal={diagonal}, beta={beta}",
            "exact": exact,
            "solvers": {res.solver: solver_entry(res, value, objective=sub_obj)},
        }
        report["solvers"][res.solver]["seconds"] = sub_seconds
    lines = [f"validate poe on {report['instance']}"]
    if exact is None:
        lines.append(NO_EXACT_NOTE)
    else:
        lines.append(
            f"  exact ({exact_solver}): {value:.8g} ({exact['status']}, {exact['seconds']:.2f} s)"
        )
    lines += [solver_line(k, v) for k, v in report["solvers"].items()]
    write_validate_plot(plot, report, {res.solver: res}, {res.solver: trace})
    emit(report, as_json, lines)


@click.command("filter")
@click.argument("comparisons", type=click.Path(exists=True, dir_okay=False))
@HEADER_OPTION
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the filtered comparisons here (CSV, header i,j,k,l).",
)
@_seed
@_json
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


EXTRA = [FILTER]
