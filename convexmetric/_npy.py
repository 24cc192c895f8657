"""``.npy`` and ``.npz`` files read safely: the header first, then the data.

A header is a claim the file may not keep: a few bytes claiming a shape of
(10⁶, 10⁶) make ``np.load`` try to allocate 8 TB and fail with a ``MemoryError``
deep inside numpy. Here the header is read first (``numpy.lib.format``) and the array
it announces is checked against the bytes that follow it (a file too short for its
shape is truncated or lies) and against the machine's memory; a file that fails is
refused with a ValueError naming it. Object arrays (pickles) are refused as well.

>>> import io, numpy as np
>>> buf = io.BytesIO()
>>> np.lib.format.write_array_header_1_0(
...     buf, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
>>> check_header(io.BytesIO(buf.getvalue()), len(buf.getvalue()), "file 'x.npy'")
Traceback (most recent call last):
...
ValueError: file 'x.npy': its header announces an array of shape (1000000, 1000000) ...
"""

from __future__ import annotations

import contextlib
import math
import os
import zipfile

import numpy as np

_FORMAT = np.lib.format


def _size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


def _memory():
    """Bytes of physical memory, or None where the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return None


def _read_header(fh, what):
    try:
        version = _FORMAT.read_magic(fh)
        if version == (1, 0):
            return _FORMAT.read_array_header_1_0(fh)
        if version == (2, 0):
            return _FORMAT.read_array_header_2_0(fh)
        return _FORMAT._read_array_header(fh, version)  # 3.0: numpy has no public reader
    except (ValueError, EOFError, OSError, SyntaxError, TypeError) as exc:
        raise ValueError(f"{what} is not a readable .npy file ({exc}).") from None


def check_header(fh, total, what):
    """Read the .npy header at the start of ``fh`` (``total`` bytes long) and refuse an
    array it cannot hold or this machine cannot allocate; return ``(shape, dtype)``."""
    shape, _, dtype = _read_header(fh, what)
    if dtype.hasobject:
        raise ValueError(f"{what} holds pickled Python objects; refusing to load it.")
    need = math.prod(shape) * dtype.itemsize
    held = total - fh.tell()
    claim = f"its header announces an array of shape {tuple(shape)} {dtype} ({_size(need)})"
    if need > held:
        raise ValueError(
            f"{what}: {claim} but the file holds {_size(max(held, 0))} of data; it is "
            "truncated or its header is wrong."
        )
    memory = _memory()
    if memory is not None and need > memory:
        raise ValueError(f"{what}: {claim}, more than this machine's {_size(memory)} of memory.")
    return shape, dtype


def load_npy(path, what):
    """The array of the .npy file ``path``, its header checked first (module doc).
    ``what`` names the file in messages ("features file 'x.npy'")."""
    with open(path, "rb") as fh:
        check_header(fh, os.fstat(fh.fileno()).st_size, what)
    with _errors(what):
        return np.load(path, allow_pickle=False)


def npz_names(path, what):
    """The names of the arrays of the .npz file ``path``, in the file's order."""
    with _errors(what), zipfile.ZipFile(path) as zf:
        return [n.removesuffix(".npy") for n in zf.namelist() if n.endswith(".npy")]


def load_npz(path, what, names=None):
    """``{name: array}`` of the .npz file ``path`` (``names``: only those), every
    member's header checked first."""
    with _errors(what), zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = info.filename.removesuffix(".npy")
            if info.filename.endswith(".npy") and (names is None or name in names):
                with zf.open(info) as fh:
                    check_header(fh, info.file_size, f"{what}, array {name!r},")
    with _errors(what), np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files if names is None or k in names}


@contextlib.contextmanager
def _errors(what):
    """numpy's and zipfile's failures as one ValueError naming the file."""
    try:
        yield
    except MemoryError:
        raise ValueError(f"{what} does not fit in memory.") from None
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{what} is not a readable .npz file ({exc}).") from None
    except ValueError as exc:
        if str(exc).startswith(what):  # ours, already naming the file
            raise
        if "pickle" in str(exc).lower():
            raise ValueError(f"{what} holds pickled Python objects; refusing to load it.") from None
        raise ValueError(f"{what} is not a readable .npy file ({exc}).") from None
    except (OSError, EOFError) as exc:
        raise ValueError(f"{what} cannot be read: {exc}") from None


__all__ = ["check_header", "load_npy", "load_npz", "npz_names"]
