"""Check that the installed versions are exactly those pinned in a constraints file
(``python .ci/versions.py .ci/lowest.txt``): print them, exit 1 on any difference."""

import re
import sys
from importlib.metadata import PackageNotFoundError, version


def main(path):
    bad = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, want = re.split(r"\s*==\s*", line)
            try:
                got = version(name)
            except PackageNotFoundError:
                got = "not installed"
            ok = got == want
            bad += not ok
            print(f"  {name:14s} {got:14s}" + ("" if ok else f"  (expected {want})"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
