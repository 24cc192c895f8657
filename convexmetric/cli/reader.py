"""The one reader of every command-line input: features, labels, comparisons, pairs.

A CSV file is comma-separated UTF-8 text, one data row per line (blank lines are not
rows). Rows and columns are counted from 1 as a spreadsheet shows them, the header row
included, so every message points at the cell to fix. The header is explicit
(``--header`` / ``--no-header``) or, by default, detected: the first row is a header
only when *every* cell of it is non-numeric (a first row with one number, or with a
missing cell such as ``NA``, is data, and a missing cell in it is an error). In a file
of text labels, whose first row is text either way, the first row is a header when its
value does not recur below (a class has several rows; a header names the column once).
``.npy`` and ``.npz`` files are read with ``allow_pickle=False``.

Labels keep their type: a column of integers gives ``int64`` labels, of other numbers
``float64``, anything else strings, and a saved model hands them back the same way.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os

import numpy as np

from .._npy import load_npy, load_npz, npz_names

#: cell values read as a missing value (an error everywhere: nothing is imputed)
MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-"})
CSV_EXTENSIONS = (".csv", ".txt")
_SHOW = 30  # characters of a cell shown in a message


def _short(text):
    text = str(text)
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "…")


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return cell.strip().lower() not in MISSING


@dataclasses.dataclass
class Table:
    """The cells of a CSV file (strings) or the array of a ``.npy``/``.npz`` file.

    ``first_row`` is the file row (1-based) of the first data row: 2 with a header.
    """

    path: str
    role: str
    header: list | None
    cells: list | None = None
    array: np.ndarray | None = None
    first_row: int = 1

    @property
    def n_rows(self):
        return len(self.cells) if self.cells is not None else int(np.shape(self.array)[0])

    @property
    def n_columns(self):
        if self.cells is not None:
            return len(self.cells[0])
        return 1 if np.ndim(self.array) == 1 else int(np.shape(self.array)[1])

    def where(self, row=None, column=None):
        """``"features file 'x.csv', row 3, column 2"`` (rows as the file counts them)."""
        text = f"{self.role} file {os.path.basename(self.path)!r}"
        if row is not None:
            text += f", row {row}"
        if column is not None:
            name = ""
            if self.header is not None and column <= len(self.header):
                name = f" ({self.header[column - 1]!r})"
            text += f", column {column}{name}"
        return text

    def describe(self):
        """One line for the report: rows read, columns, header."""
        hdr = "header row" if self.header is not None else "no header row"
        kind = "" if self.cells is not None else ", binary"
        if self.header is not None:
            hdr = "header row " + ",".join(self.header)
            hdr = hdr if len(hdr) <= 60 else hdr[:59] + "…"
        cols = "column" if self.n_columns == 1 else "columns"
        rows = "row" if self.n_rows == 1 else "rows"
        return (
            f"read {self.n_rows} {rows} × {self.n_columns} {cols} from {self.path} "
            f"({self.role}; {hdr}{kind})"
        )

    def summary(self):
        return {
            "file": self.path,
            "rows": self.n_rows,
            "columns": self.n_columns,
            "header": self.header,
        }

    # -- conversions ---------------------------------------------------------------
    def floats(self):
        """The table as a float array; a missing or non-numeric cell names its place."""
        if self.cells is None:
            arr = np.asarray(self.array)
            if arr.dtype.kind not in "biuf":
                raise ValueError(f"{self.where()}: holds {arr.dtype} values, not numbers.")
            arr = arr.astype(float)
            bad = np.argwhere(~np.isfinite(arr))
            if bad.size:
                row, col = (bad[0] + 1).tolist() + [1] * (2 - bad.shape[1])
                raise ValueError(f"{self.where(row, col)}: NaN or infinite value.")
            return arr
        out = np.empty((self.n_rows, self.n_columns))
        for r, row in enumerate(self.cells):
            for c, cell in enumerate(row):
                out[r, c] = self._number(cell, r, c)
        return out

    def _number(self, cell, r, c):
        here = self.where(self.first_row + r, c + 1)
        hint = ""
        if r == 0 and self.header is None:
            hint = " (if row 1 is a header, pass --header)"
        if cell.strip().lower() in MISSING:
            raise ValueError(f"{here}: missing value {_short(cell)}; nothing is imputed{hint}.")
        try:
            value = float(cell)
        except ValueError:
            raise ValueError(f"{here}: {_short(cell)} is not a number{hint}.") from None
        if not np.isfinite(value):
            raise ValueError(f"{here}: {_short(cell)} is not a finite number.")
        return value

    def integers(self, columns):
        """Columns (0-based) that must hold integer indices, as an int64 array."""
        arr = self.floats()
        if arr.ndim != 2 or arr.shape[1] <= max(columns):
            raise ValueError(f"{self.where()}: expected {max(columns) + 1} columns.")
        arr = arr[:, columns]
        frac = np.argwhere(arr != np.round(arr))
        if frac.size:
            r, c = frac[0]
            raise ValueError(
                f"{self.where(self.first_row + r, columns[c] + 1)}: {float(arr[r, c]):g} is not an "
                "integer index."
            )
        return arr.astype(np.int64)

    def labels(self):
        """One label per row, keeping its type: int64, float64 or str."""
        if self.cells is None:
            y = np.asarray(self.array)
            if y.ndim == 2 and 1 in y.shape:
                y = y.ravel()
            if y.ndim != 1:
                raise ValueError(f"{self.where()}: one label per row expected; shape {y.shape}.")
            if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
                bad = int(np.flatnonzero(~np.isfinite(y))[0]) + 1
                raise ValueError(f"{self.where(bad, 1)}: NaN or infinite label.")
            return y
        if self.n_columns != 1:
            raise ValueError(
                f"{self.where()}: a labels file has one column (one label per row); it has "
                f"{self.n_columns}."
            )
        col = [row[0].strip() for row in self.cells]
        for r, cell in enumerate(col):
            if cell.lower() in MISSING:
                raise ValueError(f"{self.where(self.first_row + r, 1)}: missing label {cell!r}.")
        try:
            return np.array([int(v) for v in col], dtype=np.int64)
        except ValueError:
            pass
        if all(_is_number(v) for v in col):
            return self.floats()[:, 0]
        return np.array(col, dtype=str)


def read_table(path, role, *, header=None):
    """Read ``path`` (.csv/.txt, .npy, .npz) as a :class:`Table`.

    ``header``: True (the first row is a header), False (it is data) or None (a header
    only if every cell of the first row is non-numeric). ``role`` ("features",
    "labels", ...) names the file in messages.
    """
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if os.path.isdir(path):
        raise ValueError(f"{role} file {path!r} is a directory; give a .csv or .npy file.")
    if ext == ".npy":
        return Table(path, role, None, array=_load_npy(path, role))
    if ext == ".npz":
        return Table(path, role, None, array=_load_npz(path, role))
    if ext not in CSV_EXTENSIONS:
        raise ValueError(
            f"{role} file {path!r}: unsupported extension {ext or '(none)'!r} "
            "(use .csv, .npy or .npz)."
        )
    rows, lines = _csv_rows(path, role)
    table = Table(path, role, None, cells=rows)
    if _has_header(table, rows, header):
        table.header, table.cells, table.first_row = [h.strip() for h in rows[0]], rows[1:], 2
        lines = lines[1:]
    if not table.cells:
        raise ValueError(f"{table.where()} has no data rows.")
    _check_widths(table, lines)
    return table


def _load_npy(path, role):
    """The array of a .npy file, its header checked before any allocation."""
    return load_npy(path, f"{role} file {path!r}")


def _load_npz(path, role):
    """The first array of a .npz file, every header checked before any allocation."""
    what = f"{role} file {path!r}"
    names = npz_names(path, what)
    if not names:
        raise ValueError(f"{what} holds no arrays.")
    return load_npz(path, what, names={names[0]})[names[0]]


def _csv_rows(path, role):
    """``(rows, line numbers)`` of the non-blank lines of a UTF-8 CSV file."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        row = raw[: exc.start].count(b"\n") + 1
        raise ValueError(
            f"{role} file {path!r} is not UTF-8 text (byte 0x{raw[exc.start]:02x} in row "
            f"{row}); save it as UTF-8 CSV."
        ) from None
    rows, lines = [], []
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    try:
        for row in reader:
            if row and not (len(row) == 1 and not row[0].strip()):  # a blank line is no row
                rows.append([cell.strip() for cell in row])
                lines.append(reader.line_num)
    except csv.Error as exc:
        raise ValueError(f"{role} file {path!r}, row {reader.line_num}: {exc}.") from None
    if not rows:
        raise ValueError(f"{role} file {path!r} is empty.")
    return rows, lines


def _has_header(table, rows, header):
    if header is not None:
        return bool(header)
    first = rows[0]
    if any(_is_number(cell) or cell.lower() in MISSING for cell in first):
        return False
    if table.role == "labels" and len(first) == 1 and len(rows) > 1:
        # text labels: a first label and a header look alike. A label recurs (a class
        # has several rows); a header names the column once.
        rest = [r[0] for r in rows[1:]]
        if not all(_is_number(v) for v in rest) and first[0] in rest:
            return False
    return True


def _check_widths(table, lines):
    width = len(table.cells[0])
    for row, line in zip(table.cells, lines, strict=True):
        if len(row) == width:
            continue
        raise ValueError(
            f"{table.where(line)}: {len(row)} columns where row {lines[0]} has {width}."
        )
    if width == 1:  # another separator shows in every row (a text label may hold one)
        cells = [row[0] for row in table.cells]
        for sep, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
            if all(sep in cell for cell in cells):
                raise ValueError(
                    f"{table.where(lines[0])}: one column separated by {name}, not commas; "
                    "convexmetric reads comma-separated files."
                )


__all__ = ["MISSING", "Table", "read_table"]
