"""Print the OpenBLAS kernel numpy uses now, or (``--other``) another one this CPU runs.

CI runs the test suite a second time under the other kernel (``OPENBLAS_CORETYPE``), so
that a solver whose outcome depends on last-bit rounding shows up (issue 14).
"""

import sys

import numpy  # noqa: F401  (loads numpy's OpenBLAS)
from threadpoolctl import threadpool_info

# OpenBLAS x86-64 core types, newest first, with the CPU flags each needs
KERNELS = [
    ("SkylakeX", {"avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd"}),
    ("Haswell", {"avx2", "fma"}),
    ("Sandybridge", {"avx"}),
    ("Nehalem", {"sse4_2"}),
    ("Prescott", {"sse3"}),
]


def current():
    archs = [i.get("architecture") for i in threadpool_info() if i["internal_api"] == "openblas"]
    return archs[0] if archs else None


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def other():
    now, flags = (current() or "").lower(), cpu_flags()
    for name, needs in KERNELS:
        if name.lower() != now and needs <= flags:
            return name
    return ""


if __name__ == "__main__":
    print(other() if "--other" in sys.argv else (current() or "none"))
