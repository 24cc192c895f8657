"""The console sessions of the site are real: on the command-line page (docs/cli.rst)
and the own-data tutorial, every ``$ convexmetric ...`` line is run, in the order of the
page and in one folder, and its output compared with the page (``...`` on the page
matches what changes from run to run: times, last digits). The files a session reads
come from the page: a code block captioned with the file name, or the page's Python
examples that come before its first session (they write them)."""

import doctest
import os
import re
import shlex

import pytest
from click.testing import CliRunner

from convexmetric.cli.main import main

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
PAGES = ["cli.rst", os.path.join("tutorials", "own_data.rst")]


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


def _read(page):
    with open(os.path.join(DOCS, page), encoding="utf-8") as fh:
        return fh.read()


def _setup(text, folder):
    """Run the page's Python examples that come before its first console session."""
    head = text.split(".. code-block:: console")[0]
    namespace = {}
    for example in doctest.DocTestParser().get_examples(head):
        if "getfixture" not in example.source:  # pytest's own fixtures: not needed here
            exec(compile(example.source, "<page>", "exec"), namespace)


def test_the_pages_have_sessions():
    text = _read("cli.rst")
    assert len(_sessions(text)) >= 3
    assert "comparisons.csv" in _files(text)
    assert len(_sessions(_read(PAGES[1]))) >= 4
    for page in PAGES:
        assert all(cmd.startswith("convexmetric ") for cmd, _ in _sessions(_read(page)))


def test_the_session_parser_reads_commands_and_output():
    page = ".. code-block:: console\n\n   $ convexmetric x\n   out 1\n   out 2\n\nprose\n"
    assert _sessions(page) == [("convexmetric x", "out 1\nout 2\n")]


def test_a_wrong_page_fails():
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert not checker.check_output("predicted 37 labels\n", "predicted 38 labels\n", flags)


@pytest.mark.parametrize("page", PAGES)
def test_console_sessions(page, tmp_path, monkeypatch):
    text = _read(page)
    monkeypatch.chdir(tmp_path)
    for name, content in _files(text).items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    _setup(text, tmp_path)
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for command, expected in _sessions(text):
        result = CliRunner().invoke(main, shlex.split(command)[1:], prog_name="convexmetric")
        assert result.exit_code == 0, f"$ {command}\n{result.output}"
        assert checker.check_output(expected, result.output, flags), (
            f"$ {command}\n--- the page says:\n{expected}--- the command printed:\n{result.output}"
        )
