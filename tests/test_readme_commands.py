"""Every ``convexmetric ...`` command of README.md, run as written.

Commands are taken from the README's code blocks and inline code. Where a command
would take long, the test may add options, but only ones that the command's own
``--help`` documents (checked here): the README's command itself must still run. The
files a command reads (``comparisons.csv``, ``new.csv``, ...) are made first; the
comparisons file is the README's own three-line example.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric import datasets
from convexmetric.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"

#: command prefix -> options added for a quick run (each documented in --help)
QUICK = {
    "solve lmnn --dataset digits --scheduler local:2": ["--max-iter", "20"],
    "solve lmnn --dataset digits": ["--max-iter", "50"],
    "solve lmnn --features": ["--max-iter", "50"],
    "solve poe --kind kernel": ["--n-comparisons", "100"],
    "validate poe": ["--n-comparisons", "100"],
    "solve maurer": ["--max-iter", "2000", "--n-pairs", "200"],
    "solve aroma": ["--max-iter", "300"],
    "solve oasis": ["--max-iter", "300"],
    "solve ssne": ["--max-iter", "3"],
    "validate lmnn": ["--no-plain"],
}

#: commands that cannot run here, with the reason
SKIP = {
    "solve lmnn --dataset digits --scheduler tcp://HOST:8786": "needs a running Dask scheduler",
    "solve METHOD ... --out DIR": "a pattern, not a command",
    "verify --model DIR": "a pattern, not a command",
    "validate": "the command group, named in prose (its subcommands run below)",
}


def readme_commands():
    """The ``convexmetric`` commands of README.md, in order, without comments."""
    text = README.read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("convexmetric "):
                    found.append(part)
    for inline in re.findall(r"`(convexmetric [^`]+)`", text):
        found.append(inline.strip())
    cmds = []
    for c in found:
        rest = c[len("convexmetric ") :]
        if rest not in cmds:
            cmds.append(rest)
    return cmds


def _quick(cmd):
    for prefix, extra in QUICK.items():
        if cmd.startswith(prefix):
            return extra
    return []


def test_readme_has_the_commands_it_should():
    cmds = readme_commands()
    for expected in ("solve poe --kind kernel", "solve maurer", "solve oasis", "validate lmnn"):
        assert expected in cmds
    assert len(cmds) >= 15


def test_quick_options_are_documented():
    runner = CliRunner()
    for prefix, extra in QUICK.items():
        words = prefix.split()
        sub = words[:2] if words[0] in ("solve", "validate") else words[:1]
        help_text = runner.invoke(main, [*sub, "--help"]).output
        for opt in (token for token in extra if token.startswith("--")):
            assert opt in help_text, f"{opt} is not documented in `{' '.join(sub)} --help`"


def example_comparisons():
    """The lines of the README's example comparisons file (None if it has none)."""
    text = README.read_text(encoding="utf-8")
    example = re.search(r"```\n\s*(i,j,k,l\n(?:\s*[0-9,]+\n)+)\s*```", text)
    if example is None:
        return None
    return [ln.strip() for ln in example.group(1).splitlines() if ln.strip()]


def test_readme_shows_a_three_line_comparisons_file():
    lines = example_comparisons()
    assert lines is not None and len(lines) == 3 and lines[0] == "i,j,k,l"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = example_comparisons() or ["i,j,k,l", "0,1,0,2", "1,2,0,3"]
    (tmp_path / "comparisons.csv").write_text("\n".join(lines) + "\n")
    X, y = datasets.load("iris")
    names = np.array(["setosa", "versicolor", "virginica"])
    rows = "\n".join(",".join(map(str, r)) for r in X)
    (tmp_path / "points.csv").write_text("sl,sw,pl,pw\n" + rows + "\n")
    (tmp_path / "labels.csv").write_text("species\n" + "\n".join(names[y]) + "\n")
    (tmp_path / "new.csv").write_text("\n".join(",".join(map(str, r)) for r in X[::10]) + "\n")
    return tmp_path


@pytest.mark.parametrize("cmd", readme_commands())
def test_readme_command_runs(cmd, workdir):
    if cmd in SKIP:
        pytest.skip(SKIP[cmd])
    args = shlex.split(cmd) + _quick(cmd)
    if "predict --model m/" in cmd or "transform --model m/" in cmd:
        setup = "solve lmnn --dataset iris --out m/"
        res = CliRunner().invoke(main, [*shlex.split(setup), "--max-iter", "50"])
        assert res.exit_code == 0, res.output
    if cmd.startswith("verify --model m/"):  # a certified fit on the same files first
        setup = "solve lmnn --features points.csv --labels labels.csv --out m/"
        res = CliRunner().invoke(main, shlex.split(setup))
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, f"`convexmetric {' '.join(args)}` failed:\n{res.output}"
