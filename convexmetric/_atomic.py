"""Atomic outputs: a directory or a file appears whole, or not at all.

A directory is written into a temporary sibling and renamed into place at the end; an
existing one is replaced only then (SIGINT/SIGTERM held back during the two renames),
and only if it is empty or a previous convexmetric output (it holds ``model.json`` or
``report.json``), so an interrupted run leaves the previous contents or nothing. A file
is written to a temporary file in its directory and renamed over the target.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
import uuid

import numpy as np

#: files whose presence marks a directory as a previous convexmetric output (replaceable)
OUTPUT_MARKERS = ("model.json", "report.json")


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (str, int, float, bool, type(None), list, dict, tuple)):
        return o
    return repr(o)


def write_directory(directory, files):
    """Write ``files`` (name -> ndarray as .npy, or dict as JSON) as ``directory``, atomically."""
    with atomic_directory(directory) as tmp:
        for name, content in files.items():
            path = os.path.join(tmp, name)
            if isinstance(content, dict):
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(content, fh, indent=2, default=_jsonable)
            else:
                with open(path, "wb") as fh:
                    np.save(fh, np.asarray(content), allow_pickle=False)


def _check_replaceable(directory):
    if os.path.abspath(directory) == os.path.abspath(os.getcwd()):
        raise ValueError(
            f"output {directory!r} is the working directory; give a new subdirectory name."
        )
    if not os.path.lexists(directory):
        return
    if not os.path.isdir(directory) or os.path.islink(directory):
        raise ValueError(f"output {directory!r} exists and is not a directory.")
    entries = os.listdir(directory)
    if entries and not any(m in entries for m in OUTPUT_MARKERS):
        raise ValueError(
            f"output directory {directory!r} is not empty and holds no model.json or "
            "report.json; refusing to replace it (choose a new directory)."
        )


@contextlib.contextmanager
def _sigint_held():
    """Hold SIGINT/SIGTERM back (delivered afterwards) while a few renames run."""
    main = threading.current_thread() is threading.main_thread()
    if not (main and hasattr(signal, "pthread_sigmask")):
        yield
        return
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def atomic_directory(directory):
    """Yield a temporary directory; on success it replaces ``directory`` as a whole.

    On any exception (KeyboardInterrupt included) the temporary directory is removed
    and ``directory`` is left as it was.
    """
    directory = os.path.abspath(directory)
    parent, base = os.path.split(directory)
    os.makedirs(parent, exist_ok=True)
    _check_replaceable(directory)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{base}.partial-")
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    with _sigint_held():
        old = None
        if os.path.lexists(directory):
            old = os.path.join(parent, f".{base}.old-{uuid.uuid4().hex[:8]}")
            os.rename(directory, old)
        try:
            os.rename(tmp, directory)
        except BaseException:
            if old is not None:
                os.rename(old, directory)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(path, mode="wb"):
    """Yield a file object; on success it replaces ``path``, on any exception it vanishes.

    A text file is UTF-8 with no newline translation (``newline=""``, what the ``csv``
    module needs): what is written is what the file holds.
    """
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".partial-")
    text = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
    try:
        with os.fdopen(fd, mode, **text) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


__all__ = ["OUTPUT_MARKERS", "atomic_directory", "atomic_file", "write_directory"]
