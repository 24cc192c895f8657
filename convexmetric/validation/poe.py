"""Validation of partial order embedding (McFee & Lanckriet 2011): LPOE, KPOE or MKPOE
(Alg. 2–4) or their diagonal LPs (§4.4), exactly and with the large-scale solver."""

from __future__ import annotations

import time

from .report import Recorder, ValidationReport, exact_entry, instance

KINDS = ("linear", "kernel", "multi")


def default_data(kind="kernel", n_per_class=5, n_comparisons=500, random_state=0):
    """The taxonomy instance of §5.1 on digits: ``(comparisons, data, name)``.

    ``data``: 4×4-pooled pixels scaled to [0, 1] (``kind="linear"``), the pixel kernel
    (``"kernel"``), or the pixel, row and one noise kernel (``"multi"``).
    """
    from ..datasets.taxonomy import make_taxonomy

    if kind not in KINDS:
        raise ValueError(f"The 'kind' parameter must be one of {KINDS}. Got {kind!r} instead.")
    T = make_taxonomy(
        n_per_class,
        n_train_comparisons=n_comparisons,
        n_test_comparisons=10,
        random_state=random_state,
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


def validate(
    comparisons,
    data,
    *,
    name,
    kind="kernel",
    diagonal=False,
    beta=100.0,
    conic_solver=None,
    exact=True,
    callback=None,
):
    """POE both ways; see :func:`convexmetric.validate` for the arguments."""
    from ..poe import solver as large_scale
    from ..problems import poe as P

    if kind not in KINDS:
        raise ValueError(f"The 'kind' parameter must be one of {KINDS}. Got {kind!r} instead.")
    C = comparisons
    if kind == "linear":
        blocks, kernels = P.lpoe_blocks(data), None
        n_points, n_features = data.shape
    else:
        kernels = list(data) if kind == "multi" else [data]
        blocks = P.kernel_blocks(kernels)
        n_points, n_features = kernels[0].shape[0], None
    conic = (conic_solver or "CLARABEL") if exact else None
    settings = {"kind": kind, "diagonal": diagonal, "beta": beta, "conic_solver": conic}
    inst = instance(
        name,
        f"{name}, kind={kind}, diagonal={diagonal}, beta={beta}",
        n_points,
        n_features,
        len(C),
        "comparisons",
    )
    report = ValidationReport("poe", inst, settings, None)
    if exact:
        from ..problems.common import SOLVER_OPTIONS

        _, value, status, seconds = P.solve(blocks, C, beta, diagonal=diagonal, solver=conic)
        tols = {**SOLVER_OPTIONS[conic], **P.EXACT_OPTIONS.get(conic, {})}
        report.exact = exact_entry(conic, status, value, seconds, tols)
    t0, trace = time.perf_counter(), Recorder(callback)
    if kernels is None:
        res = large_scale.solve(blocks, C, beta, diagonal=diagonal, callback=trace)
    else:
        res = large_scale.solve_kernels(kernels, C, beta, diagonal=diagonal, callback=trace)
    seconds = time.perf_counter() - t0
    report.add(
        res.solver,
        res,
        objective=P.objective(res.matrices, blocks, C, beta),
        seconds=seconds,
        trace=trace,
    )
    return report


def run(data, *, name=None, random_state=0, callback=None, **given):
    """:func:`convexmetric.validate`'s entry: ``data`` is ``(comparisons, features or
    kernels)`` or None (the taxonomy instance, ``n_per_class``, ``n_comparisons``)."""
    shape = {k: given.pop(k) for k in ("n_per_class", "n_comparisons") if k in given}
    if data is None:
        C, D, default = default_data(
            given.get("kind", "kernel"), **shape, random_state=random_state
        )
    else:
        (C, D), default = data, "data"
    return validate(C, D, name=name or default, callback=callback, **given)
