"""settle_heap: after it, a solve's few-MiB temporaries come from the heap (glibc)."""

import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes, sys
import numpy as np
from convexmetric.lmnn._memory import settle_heap

class Info(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
if sys.argv[1] == "settle":
    settle_heap()
before = libc.mallinfo2().hblkhd
a = np.ones((4 << 20) // 8)  # a 4 MiB temporary
print(int(libc.mallinfo2().hblkhd - before >= 4 << 20))  # 1: a fresh mapping
"""


def _mapped(mode):
    # glibc's own defaults: a MALLOC_* variable (Dask's nanny sets MALLOC_TRIM_THRESHOLD_
    # in this process for its workers) fixes the thresholds, and settle_heap then does nothing
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         env=env)  # fmt: skip
    if out.returncode != 0:
        pytest.skip("no glibc mallinfo2 here: " + out.stderr.strip()[-200:])
    return out.stdout.strip() == "1"


def test_settle_heap_serves_temporaries_from_the_heap():
    if not _mapped("fresh"):
        pytest.skip("this interpreter's start-up already raised the mmap threshold")
    assert not _mapped("settle")
