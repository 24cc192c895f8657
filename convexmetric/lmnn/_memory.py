"""The heap's state at the start of a solve (glibc's dynamic mmap threshold).

glibc serves an allocation above its *mmap threshold* from a fresh mapping, whose pages
fault on first touch, and raises the threshold to the size of the largest mapped block
freed so far (at most 32 MiB; the heap's trim threshold to twice that). A solve's
temporaries of a few MiB therefore cost page faults at every evaluation, or none,
depending on what the process happened to free before (the timings of one fit then
vary with what ran earlier in the process: ``benchmarks/TUNING.md``). :func:`settle_heap`
allocates and frees one 31 MiB block, which leaves the allocator in the state the
largest temporaries would leave it in anyway, so a solve's speed no longer depends on the
process's history. It changes no setting (``mallopt``
would freeze the threshold for the whole process) and costs two system calls; with
another allocator, or with the thresholds fixed by a ``MALLOC_*`` variable (Dask's
workers run with ``MALLOC_TRIM_THRESHOLD_``), it is one allocation.
"""

from __future__ import annotations

import numpy as np

#: the block :func:`settle_heap` allocates: just below glibc's 32 MiB ceiling
SETTLE_BYTES = 31 << 20


def settle_heap(memory_limit=None):
    """Allocate and free one :data:`SETTLE_BYTES` block (module docstring), unless a
    solve's ``memory_limit`` (bytes) is below it: its pages are never touched, but a
    fit asked to stay within less holds no temporary that large, and would show a
    31 MiB peak for a settling it does not need."""
    if memory_limit is None or memory_limit >= SETTLE_BYTES:
        np.empty(SETTLE_BYTES // 8)
