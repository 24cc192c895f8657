"""benchmarks/results_table.py: a benchmark's one table, with the command that regenerates it."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
import results_table as tables


def test_the_table_names_its_command_and_keeps_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["benchmarks/bench_x.py", "--rows", "wine"])
    path = tmp_path / "results" / "bench_x.md"
    rows = [{"row": "wine", "seconds": 0.123456, "verified": True}, {"row": "a|b"}]
    tables.write_table(str(path), "Title", ["row", "seconds", "verified"], rows, ["a note"])
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Title\n")
    assert "Regenerate: `python " in text and "bench_x.py --rows wine`" in text
    assert "| wine | 0.1235 | True |" in text
    assert "| a\\|b |  |  |" in text  # a missing cell is blank; a bar is escaped
    assert text.rstrip().endswith("a note")


def test_table_argument_takes_the_path_out_of_the_positional_arguments():
    assert tables.table_argument(["tree", "--table", "t.md", "3"]) == (["tree", "3"], "t.md")
    assert tables.table_argument(["tree"]) == (["tree"], None)
    with pytest.raises(SystemExit, match="--table needs a path"):
        tables.table_argument(["tree", "--table"])
