"""Atomic outputs: a directory or a file appears whole, or not at all.

A directory is written into a temporary sibling and renamed into place at the end; an
existing one is replaced only then (SIGINT/SIGTERM held back during the two renames), so
an interrupted run leaves the previous contents or nothing. A file is written to a
temporary file in its directory and renamed over the target.

Users' files are never deleted: every directory written here carries a marker,
``convexmetric-output.json``, listing the files it wrote, and an existing directory is
replaced only if it is empty or holds nothing but the files its marker lists (or, for a
model written before the marker existed, the files its ``model.json`` lists). Anything
else, a file of the same name as one of ours included, makes the write refuse before it
starts (``check_replaceable``).
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

#: the marker of a directory written here: ``{"format": ..., "files": [names]}``
MARKER = "convexmetric-output.json"
_MARKER_FORMAT = "convexmetric-output"


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


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _our_files(directory):
    """The names convexmetric wrote in ``directory`` (its marker; or the model.json of a
    model saved before markers existed); an empty set when it is none of ours."""
    marker = _read_json(os.path.join(directory, MARKER))
    if marker.get("format") == _MARKER_FORMAT and isinstance(marker.get("files"), list):
        return {MARKER, *(str(f) for f in marker["files"])}
    meta = _read_json(os.path.join(directory, "model.json"))
    if meta.get("format") == "convexmetric-model" and isinstance(meta.get("arrays"), dict):
        arrays = meta["arrays"].values()
        return {"model.json", "report.json", *(str(a.get("file")) for a in arrays)}
    return set()


def check_replaceable(directory, option="output directory"):
    """Raise ValueError unless writing ``directory`` as a whole loses none of the user's
    files: it does not exist, is empty, or holds only files convexmetric wrote there.

    ``option`` names the directory in the message (the CLI passes ``"--out"``).
    """
    if os.path.abspath(directory) == os.path.abspath(os.getcwd()):
        raise ValueError(
            f"{option} {directory!r} is the working directory; give a new subdirectory name."
        )
    if not os.path.lexists(directory):
        return
    if not os.path.isdir(directory) or os.path.islink(directory):
        raise ValueError(f"{option} {directory!r} exists and is not a directory.")
    foreign = sorted(set(os.listdir(directory)) - _our_files(directory))
    if foreign:
        shown = ", ".join(foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        raise ValueError(
            f"{option} {directory!r} holds files convexmetric did not write ({shown}); "
            "refusing to replace it, which would delete them. Give a new or empty "
            "directory, or one a previous `--out` wrote."
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

    ``directory`` must be new, empty or a previous output (``check_replaceable``);
    the marker listing the files written into the temporary directory is added last.
    On any exception (KeyboardInterrupt included) the temporary directory is removed
    and ``directory`` is left as it was.
    """
    directory = os.path.abspath(directory)
    parent, base = os.path.split(directory)
    os.makedirs(parent, exist_ok=True)
    check_replaceable(directory)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{base}.partial-")
    try:
        yield tmp
        with open(os.path.join(tmp, MARKER), "w", encoding="utf-8") as fh:
            files = sorted(set(os.listdir(tmp)) - {MARKER})
            json.dump({"format": _MARKER_FORMAT, "files": files}, fh, indent=2)
        # files may have appeared since the first check (another process, the user)
        check_replaceable(directory)
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


def _file_mode(path):
    """The mode a replaced file keeps, or a new file's (0666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


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
        os.chmod(tmp, _file_mode(path))  # mkstemp's 0600 would hide the output from others
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


__all__ = ["MARKER", "atomic_directory", "atomic_file", "check_replaceable", "write_directory"]
