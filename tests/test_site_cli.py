"""The console sessions of the command-line page (docs/cli.rst) are real: every
``$ convexmetric ...`` line is run and its output compared with the page (``...`` on the
page matches what changes from run to run: times, last digits)."""

import doctest
import os
import re
import shlex

import pytest
from click.testing import CliRunner

from convexmetric.cli.main import main

PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "cli.rst")


def _blocks(text):
    """``(kind, caption, lines)`` of every code block of the page, dedented."""
    out = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"\.\. code-block:: (\w+)", line)
        if not m:
            continue
        caption, body, k = None, [], n + 1
        while k < len(lines) and (not lines[k].strip() or lines[k].startswith("   ")):
            stripped = lines[k].strip()
            if stripped.startswith(":caption:"):
                caption = stripped.split(":caption:")[1].strip()
            elif not (stripped.startswith(":") and not body):
                body.append(lines[k][3:])
            k += 1
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        out.append((m.group(1), caption, body))
    return out


def _sessions(text):
    """``(command, expected output)`` for each ``$`` line of the console blocks."""
    sessions = []
    for kind, _caption, body in _blocks(text):
        if kind != "console":
            continue
        for line in body:
            if line.startswith("$ "):
                sessions.append([line[2:], []])
            else:
                sessions[-1][1].append(line)
    return [(cmd, "\n".join(out).rstrip() + "\n") for cmd, out in sessions]


def _files(text):
    return {caption: "\n".join(body) + "\n" for kind, caption, body in _blocks(text) if caption}


with open(PAGE, encoding="utf-8") as _fh:
    TEXT = _fh.read()
SESSIONS = _sessions(TEXT)


def test_the_page_has_sessions():
    assert len(SESSIONS) >= 3
    assert all(cmd.startswith("convexmetric ") for cmd, _ in SESSIONS)
    assert "comparisons.csv" in _files(TEXT)


def test_the_session_parser_reads_commands_and_output():
    page = ".. code-block:: console\n\n   $ convexmetric x\n   out 1\n   out 2\n\nprose\n"
    assert _sessions(page) == [("convexmetric x", "out 1\nout 2\n")]


@pytest.mark.parametrize("command,expected", SESSIONS, ids=[c for c, _ in SESSIONS])
def test_console_session(command, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, content in _files(TEXT).items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    result = CliRunner().invoke(main, shlex.split(command)[1:], prog_name="convexmetric")
    assert result.exit_code == 0, result.output
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(expected, result.output, flags), (
        f"$ {command}\n--- the page says:\n{expected}--- the command printed:\n{result.output}"
    )
