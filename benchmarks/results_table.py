"""One markdown table per benchmark, written by its script (``--table PATH``).

A benchmark's measurements live in one place: the table its script writes under
``benchmarks/results/``. The table says which command regenerates it and on what machine
it ran, so a number quoted elsewhere (TUNING.md, the docs) is a link to a row here, and
re-running the command replaces the row rather than adding a second copy of it.
"""

from __future__ import annotations

import os
import platform
import sys
import time


def _machine():
    import numpy as np

    cores = os.cpu_count()
    blas = os.environ.get("OMP_NUM_THREADS", "unset")
    return (
        f"{platform.system()} {platform.machine()}, {cores} cores, Python "
        f"{platform.python_version()}, NumPy {np.__version__}, OMP_NUM_THREADS={blas}"
    )


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def write_table(path, title, columns, rows, notes=()):
    """Write ``rows`` (dicts keyed by ``columns``) as a markdown table to ``path``.

    The file starts with ``title``, the command that regenerates it (this process's own
    command line) and the machine; ``notes`` are lines printed under the table (what a
    column means, a summary row's rule). Missing cells are left blank.
    """
    command = " ".join(["python", os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    lines = [
        f"# {title}",
        "",
        f"Regenerate: `{command}`  ",
        f"Machine: {_machine()}  ",
        f"Written: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
    lines += [""] + [f"{n}  " for n in notes]
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines).rstrip() + "\n")
    print(f"table written to {path}")


def table_argument(argv, default=None):
    """``(argv without --table PATH, PATH or default)``: for the scripts that read
    positional arguments from ``sys.argv`` rather than argparse."""
    argv = list(argv)
    if "--table" in argv:
        i = argv.index("--table")
        if i + 1 >= len(argv):
            raise SystemExit("--table needs a path (e.g. benchmarks/results/NAME.md)")
        path = argv[i + 1]
        del argv[i : i + 2]
        return argv, path
    return argv, default
