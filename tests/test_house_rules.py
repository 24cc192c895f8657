"""The house rules hold (``tools/house.py --strict``): no import cycle, no module over 400
lines, no function over 80 lines or with more than 10 parameters. A change that breaks one
fails here, not at the next review (43bd4da left ``lmnn/estimator.py`` at 401 lines)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_house_rules_hold():
    run = subprocess.run(
        [sys.executable, os.path.join("tools", "house.py"), "--strict"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
