"""Checks of the documentation sources and of the build's own checks (the site's
build runs with ``-n -W``; these run in the test line without building it)."""

import glob
import importlib.util
import os
import re
import runpy
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
sys.path.insert(0, os.path.join(DOCS, "_ext"))

import gallery_hooks  # noqa: E402
import sitecheck  # noqa: E402

#: the tests that read the build's configuration need the docs extra (Sphinx, the gallery);
#: the test line installs the test extra only, and .ci/run runs this file again after it
#: has built the site
needs_docs = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("sphinx_gallery", "docutils")),
    reason="the docs extra is not installed (pip install -e '.[docs]')",
)


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _pages():
    return sorted(glob.glob(os.path.join(DOCS, "**", "*.rst"), recursive=True))


@pytest.fixture(scope="module")
def conf():
    return runpy.run_path(os.path.join(DOCS, "conf.py"))


@needs_docs
def test_typography_keeps_options_and_quotes(conf):
    assert conf["smartquotes"] is False  # "--features" stays two hyphens


@needs_docs
def test_maths_and_copy_button_work_offline(conf):
    assert "offline_math" in conf["extensions"]
    assert "sphinx_copybutton" in conf["extensions"]
    assert "intersphinx" not in " ".join(conf["extensions"])
    import offline_math

    assert os.path.isfile(offline_math._source())  # MathJax ships with the docs extra


def test_no_pasted_docstrings():
    for page in _pages():
        text = _read(page)
        assert "module-docstring::" not in text, page
        assert "(The docstring of" not in text, page


def test_figures_are_named_by_the_file_the_script_writes():
    """A caption belongs to the file name the example gives its figure, never to a
    number the gallery assigns in some order."""
    pattern = re.compile(r"\.\. figure:: /auto_examples/(\w+)/images/([\w.-]+\.png)")
    found = 0
    for page in _pages():
        for paper, name in pattern.findall(_read(page)):
            found += 1
            scripts = glob.glob(os.path.join(ROOT, "examples", paper, "*.py"))
            sources = " ".join(_read(s) for s in scripts)
            templates = re.findall(r'f"([\w{}\[\]\'.-]+\.png)"', sources)
            regexes = [re.sub(r"\\\{[^}]*\\\}", r"\\w+", re.escape(t)) for t in templates]
            assert f'"{name}"' in sources or any(re.fullmatch(r, name) for r in regexes), (
                f"{page}: no script of examples/{paper}/ writes {name}"
            )
        outside_refs = re.sub(r":ref:`[^`]*`", "", _read(page))
        assert "sphx_glr_" not in outside_refs or "auto_examples" in page, page
    assert found >= 8


@needs_docs
def test_the_gallery_scraper_keeps_file_names(tmp_path):
    script = tmp_path / "examples" / "demo.py"
    script.parent.mkdir()
    script.write_text("")
    figures = tmp_path / "examples" / gallery_hooks.FOLDER
    figures.mkdir()
    for name in ("b_second.png", "a_first.png"):
        (figures / name).write_bytes(b"png")
    images = tmp_path / "images"
    images.mkdir()
    block_vars = {
        "src_file": str(script),
        "image_path_iterator": iter([str(images / "sphx_glr_demo_001.png")]),
    }
    rst = gallery_hooks.png_scraper(None, block_vars, {"src_dir": str(tmp_path)})
    assert (images / "a_first.png").exists() and (images / "b_second.png").exists()
    assert "a_first.png" in rst and "b_second.png" in rst
    assert not figures.exists()  # moved out of the examples' folder


@pytest.mark.parametrize(
    "html,what",
    [
        ("<p>run it with –features X.csv</p>", "en dash"),
        ('<p><a href="mailto:precision%4010">precision@10</a></p>', "mailto"),
        ("<dt>With ``kernel=None``</dt>", "double backquotes"),
        ("<p>figure written to /tmp/convexmetric-gallery-x/a.png</p>", "build folder"),
        ("<p>the split of DESIGN.md</p>", "DESIGN.md"),
        ("<p>logger convexmetric.lmnn_extensions</p>", "logger"),
        ("<p>(convexmetric.taxonomy.DIGIT_TAXONOMY)</p>", "stale module"),
        ("<p><em>(The docstring of convexmetric.lmnn.solver.)</em></p>", "pasted docstring"),
        ('<script src="https://cdn.jsdelivr.net/mathjax.js"></script>', "network"),
        ("<p>Measured on 2026-11-27 (a slower hour)</p>", "date"),
        ("<p>see the closing note of issue 7</p>", "issue number"),
        ("<p>the scale test of the LMNN scale issue</p>", "issue number"),
    ],
)
def test_the_page_checks_find_each_defect(html, what):
    found = sitecheck.problems(f"<html><body>{html}</body></html>")
    assert any(what in kind for kind, _ in found), found


def test_the_page_checks_pass_clean_pages():
    html = (
        "<p>run <code>convexmetric solve lmnn --features X.csv</code>; eq. 2–4, 3–5 s;"
        " convexmetric.datasets.taxonomy; Weinberger &amp; Saul (2009), issue of JMLR</p>"
        "<pre>``literal`` in code --json</pre>"
        '<script src="_static/mathjax/tex-svg-full.js"></script>'
    )
    assert sitecheck.problems(html) == []


def test_status_words_come_from_the_code():
    for page in ("glossary.rst", "api.rst"):
        text = _read(os.path.join(DOCS, page))
        assert ".. status-words::" in text, page
        assert '* - ``"optimal_inaccurate"``' not in text, page  # no hand-made copy


TIMING = re.compile(
    r"\d(\.\d+)?\s?×\s+the time|\b\d+(\.\d+)?\s(s|ms|seconds|minutes)\b[,.;)]|\btook\b"
    r"|\b\d+(\.\d+)?\s(s|ms)\s{2,}"  # a column of times in a table
)


def test_no_timings_of_past_runs_on_learner_pages():
    pages = [os.path.join(DOCS, p) for p in ("index.rst", "getting_started.rst", "concepts.rst")]
    for folder in ("guide", "tutorials"):
        pages += glob.glob(os.path.join(DOCS, folder, "*.rst"))
        pages += glob.glob(os.path.join(DOCS, folder, "*.txt"))
    for page in pages:
        prose = re.sub(r"(?m)^(\s*)(>>>|\.\.\.) .*$", "", _read(page))  # doctests
        match = TIMING.search(prose)
        assert match is None, f"{page}: {match.group(0)!r}"


@needs_docs
def test_command_help_keeps_its_line_blocks(conf):
    """click's ``\\b`` blocks (the CSV example of ``filter`` and ``solve poe``) reach the
    page as line blocks, one line each; only ``|C|`` (a size) is escaped."""
    lines = ["| i,j,k,l", "| 0,1,0,2", "the size |C| of the set"]
    conf["_escape_bars"](None, None, lines)
    assert lines == ["| i,j,k,l", "| 0,1,0,2", r"the size \|C\| of the set"]
