"""The inputs of the commands: built-in data sets or the user's files, and the split.

Every file goes through :func:`convexmetric.cli.reader.read_table`; what was read (file,
rows, columns, header) is recorded for the running command and reported with its
output (stderr in text mode, ``"inputs"`` under ``--json``, ``report.json``), as is the
split: which rows trained the model and which were held out.

``--split stratified`` is the standard split (:func:`convexmetric.datasets.split`:
stratified 70/30, ``random_state=0``, scaler fitted on the training part);
``--split none`` trains on every row (the scaler is fitted on all of them). The default
is ``stratified`` for a built-in ``--dataset`` and ``none`` for the user's ``--features``.
"""

from __future__ import annotations

import os

import click
import numpy as np

from .. import datasets
from .._input_checks import check_labels, check_matrix
from .._npy import load_npz, npz_names
from .reader import read_table
from .session import command_state

SPLITS = ("stratified", "none")
_HEADER_KEY = "convexmetric.header"
_SPLIT_KEY = "convexmetric.split"
DATASET_CHOICE = click.Choice(sorted(datasets.names() + list(datasets.ALIASES)))


def _store(key):
    def callback(ctx, param, value):
        ctx.meta[key] = value
        return value

    return callback


#: ``--header/--no-header``: how every CSV input of the command is read.
HEADER_OPTION = click.option(
    "--header/--no-header",
    default=None,
    expose_value=False,
    callback=_store(_HEADER_KEY),
    help="Whether the first row of each CSV input is a header [default: a header only "
    "if every cell of the first row is non-numeric]. Rows and columns in messages are "
    "counted from 1, the header row included.",
)

#: ``--split``: train on the standard split or on every row.
SPLIT_OPTION = click.option(
    "--split",
    type=click.Choice(SPLITS),
    default=None,
    expose_value=False,
    callback=_store(_SPLIT_KEY),
    help="stratified: train on the standard 70/30 stratified split (random_state 0) and "
    "report test errors on the held-out 30%; none: train on every row (no test error). "
    "[default: stratified for --dataset, none for --features]",
)

#: ``--dataset``, ``--features``, ``--labels`` (and how they are read).
DATA_OPTIONS = [
    click.option(
        "--dataset", type=DATASET_CHOICE, help="A built-in data set (see `convexmetric datasets`)."
    ),
    click.option(
        "--features",
        type=click.Path(exists=True, dir_okay=False),
        help="Features file (.csv, .npy, .npz); one point per row, comma-separated numbers.",
    ),
    click.option(
        "--labels",
        type=click.Path(exists=True, dir_okay=False),
        help="Labels file (.csv, .npy, .npz), one label per row of --features; labels may "
        "be integers, numbers or text and keep their type in the model and in `predict`.",
    ),
    HEADER_OPTION,
]


def _meta(key):
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(key)


def read(path, role):
    """Read one input file (the command's ``--header`` setting) and record what was read."""
    table = read_table(path, role, header=_meta(_HEADER_KEY))
    state = command_state()
    if state is not None:
        state.setdefault("inputs", {})[role] = table.summary()
        state.setdefault("input_lines", []).append(table.describe())
    return table


def load_features(path, role="features"):
    return read(path, role).floats()


def load_labels(path):
    return read(path, "labels").labels()


def load_matrix(path, role):
    """A numeric matrix input (kernel, points): float array."""
    return read(path, role).floats()


def split_mode(dataset):
    """The effective ``--split`` for a built-in ``dataset`` (None: the user's files)."""
    mode = _meta(_SPLIT_KEY)
    return mode if mode is not None else ("stratified" if dataset is not None else "none")


def load_xy(dataset, features, labels, *, split=True):
    """``(X_train, y_train, X_test, y_test, name)`` from a dataset name or files.

    With ``split``, the command's ``--split`` decides: the standard split (test part
    returned) or every row for training (``X_test``, ``y_test`` None); either way the
    standardisation is fitted on the training rows and recorded for a saved model.
    Without ``split`` the data come back whole and unscaled.
    """
    if dataset is not None and features is not None:
        raise ValueError("give either --dataset or --features/--labels, not both.")
    mode = split_mode(dataset)
    if dataset is not None:
        key = datasets.ALIASES.get(dataset, dataset)
        if split and mode == "stratified" and (key in datasets.GROUPED or key in datasets.SPLITS):
            Xtr, Xte, ytr, yte = datasets.load_split(dataset)  # by source item, or its own
            how = "by source item" if key in datasets.GROUPED else "the data set's own split"
            _record_split(f"stratified {how}", len(ytr), len(yte), None)
            return Xtr, ytr, Xte, yte, dataset
        X, y = datasets.load(dataset)
        name = dataset
    elif features is not None:
        X, y = _load_files(features, labels)
        name = os.path.basename(features)
    else:
        raise ValueError("no input: give --dataset NAME or --features FILE --labels FILE.")
    X = check_matrix(X, "features", min_rows=2, allow_sparse=True)
    if np.ndim(y) == 1 and len(y) != X.shape[0]:
        raise ValueError(
            f"the labels file has {len(y)} rows but the features file has {X.shape[0]}; "
            "they must match row for row."
        )
    y = check_labels(y, X.shape[0], "labels", min_classes=2)
    if not split:
        return X, y, None, None, name
    if mode == "none":
        _record_split("none", X.shape[0], 0, None)
        return _record_standardisation(X).transform(X), y, None, None, name
    _check_stratifiable(y)
    Xtr, Xte, ytr, yte = datasets.split(X, y)
    train_rows = datasets.split(np.arange(X.shape[0])[:, None], y, scale=False)[0][:, 0]
    _record_standardisation(datasets.split(X, y, scale=False)[0])
    _record_split("stratified", len(ytr), len(yte), np.sort(train_rows))
    return Xtr, ytr, Xte, yte, name


def _check_stratifiable(y):
    """``--split stratified`` puts rows of every label in both parts: two rows each."""
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        label = classes[np.argmin(counts)]
        label = label.item() if isinstance(label, np.generic) else label
        raise ValueError(
            f"label {label!r} has a single row: --split stratified needs two rows of every "
            "label (one for each part); give --split none to train on every row (a label "
            "of one row is then an impostor for the others, with no target neighbour)."
        )


def check_label_counts(y_train, k):
    """Labels of ``k`` training rows or fewer give their rows fewer target neighbours (one
    row: none, an impostor for the other labels only), as the library does: said on
    stderr in the user's words (of their labels and ``--k``), in place of the library's
    ``SmallClassWarning``. Refused when no label has two rows (no target at all)."""
    classes, counts = np.unique(y_train, return_counts=True)
    if counts.min() > k:
        return
    split = (command_state() or {}).get("split", {})
    where = " in the training part (--split stratified)" if split.get("n_test") else ""
    if counts.max() < 2:
        raise ValueError(
            f"every label has a single row{where}: no row has a target neighbour (a row of "
            "its own label), so LMNN has nothing to learn; give at least two rows of a label."
        )
    for label, m in zip(classes[counts <= k], counts[counts <= k]):
        label = label.item() if isinstance(label, np.generic) else label
        gets = (
            "no target neighbour (it is an impostor for the other labels only)"
            if m == 1
            else f"{m - 1} target neighbour{'s' if m > 2 else ''} instead of {k}"
        )
        rows = "1 row" if m == 1 else f"{m} rows"
        click.echo(
            f"Note: label {label!r} has {rows}{where}; with --k {k} "
            f"{'it gets' if m == 1 else 'its rows get'} {gets}.",
            err=True,
        )
    import warnings

    from ..lmnn.base import SmallClassWarning

    warnings.filterwarnings("ignore", category=SmallClassWarning)  # (said above)


def _load_files(features, labels):
    if labels is None:
        if features.endswith(".npz"):
            what = f"features file {features!r}"
            if {"X", "y"} <= set(npz_names(features, what)):
                read(features, "features")  # records the file
                z = load_npz(features, what, names={"X", "y"})
                return z["X"], z["y"]
            raise ValueError("--labels is required (or an .npz with arrays X and y).")
        raise ValueError("--labels is required with --features.")
    return load_features(features), load_labels(labels)


def _record_standardisation(X_train):
    """Keep the fitted scaler of the training rows for this command: the first step of
    the preprocessing a saved model applies (:mod:`convexmetric.preprocessing`)."""
    from sklearn.preprocessing import StandardScaler

    state = command_state()
    scaler = StandardScaler().fit(X_train)
    if state is not None:
        state["preprocessing"] = [scaler]
    return scaler


def _record_split(kind, n_train, n_test, train_rows):
    state = command_state()
    if state is None:
        return
    info = {"kind": kind, "n_train": int(n_train), "n_test": int(n_test)}
    if kind == "stratified":
        info.update(test_size=0.3, random_state=0)
    if train_rows is not None:
        info["train_rows"] = [int(i) for i in train_rows]
    state["split"] = info


def split_line(info):
    """The report's sentence on which rows were used (two lines of at most 88 characters)."""
    n = info["n_train"] + info["n_test"]
    if info["kind"] == "none":
        then = "so no test error"
        if info.get("evaluated_on"):
            then = f"the measures below are on {info['evaluated_on']}"
        return f"  rows used: all {n} rows for training (--split none); no held-out rows, {then}"
    how = (
        f"stratified 70/30, random_state {info.get('random_state', 0)}"
        if info["kind"] == "stratified"
        else "by source item, 70/30"
    )
    return (
        f"  rows used: {info['n_train']} of {n} rows for training, {info['n_test']} held out "
        f"for the test errors\n    (standard split: {how}; --split none trains on all)"
    )


def _check_range(table, arr, columns, n_items):
    """Indices in ``[0, n_items)`` (``n_items`` None: only ``>= 0``), naming row and column."""
    hi = np.inf if n_items is None else n_items
    bad = np.argwhere((arr < 0) | (arr >= hi))
    if not bad.size:
        return
    r, c = bad[0]
    if arr[r, c] < 0:
        why = "is negative (indices count items from 0)"
    else:
        why = f"is past the last of the {n_items} items (indices count from 0)"
    where = table.where(table.first_row + r, columns[c] + 1)
    raise ValueError(f"{where}: index {arr[r, c]} {why}.")


def load_comparisons(path, n_items=None):
    """A comparisons file (see :data:`COMPARISONS_HELP`) as :class:`Comparisons`; with
    ``n_items``, every index must name one of the items (a row of the features)."""
    from ..comparisons import Comparisons, check_comparisons

    table = read(path, "comparisons")
    if table.header is None and _meta(_HEADER_KEY) is None:
        raise ValueError(
            f"{table.where(1)}: a comparisons file starts with the header row i,j,k,l (or "
            "i,j,k for triads); pass --no-header to read one without it."
        )
    names = [h.lower() for h in table.header] if table.header is not None else None
    if names is not None and names not in (["i", "j", "k", "l"], ["i", "j", "k"]):
        raise ValueError(
            f"{table.where(1)}: the header must be i,j,k,l (or i,j,k for triads); "
            f"got {','.join(table.header)}."
        )
    if table.n_columns not in (3, 4):
        raise ValueError(
            f"{table.where()}: {table.n_columns} columns; a comparison is i,j,k,l (or i,j,k)."
        )
    columns = list(range(table.n_columns))
    arr = table.integers(columns)
    _check_range(table, arr, columns, n_items)
    if arr.shape[1] == 3:  # triad (i, j, k): (i, j) closer than (i, k)
        arr = np.column_stack([arr[:, 0], arr[:, 1], arr[:, 0], arr[:, 2]])
    name = os.path.basename(path)
    return check_comparisons(Comparisons.from_array(arr, name=name), name=name)


#: The comparisons format, for ``--help`` and the README.
COMPARISONS_HELP = (
    "CSV of relative comparisons, one per row, header row i,j,k,l: 0-based item indices "
    "(rows of --features or of the kernel) meaning d(i,j) + 1 <= d(k,l), i.e. the pair "
    "(i,j) is more similar than (k,l). Triads i,j,k mean (i,j) is closer than (i,k)."
)


def load_pairs(path, n_items=None):
    """A pairs file ``i,j,r`` (0-based row indices, a label or target per pair) ->
    ``(int indices (Q, 2), r (Q,))``; with ``n_items``, indices must name rows."""
    table = read(path, "pairs")
    if table.header is not None and [h.lower() for h in table.header] != ["i", "j", "r"]:
        raise ValueError(f"{table.where(1)}: the header must be i,j,r; got {table.header}.")
    if table.n_columns != 3:
        raise ValueError(f"{table.where()}: {table.n_columns} columns; a pair is i,j,r.")
    idx = table.integers([0, 1])
    _check_range(table, idx, [0, 1], n_items)
    return idx, table.floats()[:, 2]


__all__ = [
    "COMPARISONS_HELP",
    "DATASET_CHOICE",
    "DATA_OPTIONS",
    "HEADER_OPTION",
    "SPLIT_OPTION",
    "check_label_counts",
    "load_comparisons",
    "load_features",
    "load_labels",
    "load_matrix",
    "load_pairs",
    "load_xy",
    "read",
    "split_line",
    "split_mode",
]
