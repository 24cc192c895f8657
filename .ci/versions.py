"""Print the installed versions of the packages pinned in a constraints file.

``python .ci/versions.py .ci/lowest.txt``: exit 1 unless each is exactly the pinned one
(the lowest-versions job); with ``--report``, only print them beside the lowest allowed
(the main job, which installs the newest releases the ranges allow).
"""

import re
import sys
from importlib.metadata import PackageNotFoundError, version


def main(path, report=False):
    bad = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, low = re.split(r"\s*==\s*", line)
            try:
                got = version(name)
            except PackageNotFoundError:
                got = "not installed"
            if report:
                print(f"  {name:14s} {got:14s} (lowest allowed {low})")
                continue
            bad += got != low
            print(f"  {name:14s} {got:14s}" + ("" if got == low else f"  (expected {low})"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], report="--report" in sys.argv[2:]))
