"""The built site in a real browser: headless Chromium, no network, opens the index,
a user-guide page and the command-line page from ``docs/_build/html`` and finds the
maths typeset (MathJax, bundled with the site), no console error, no failed load, a
copy button on every code block, and every wide block (display maths, code, output)
scrolling inside its box rather than being cut off. The layout: at 1280 px the text
has the page's width (at least 900 px where there is no "On this page" column, and no
empty navigation column), LMNN's eq. (14) and SDP fit whole, and command output wraps
(every column of a report in view) at 1280 and at 400 px.

Skipped, with the reason, where no Chromium is installed (``apt-get install chromium``,
or ``CONVEXMETRIC_CHROMIUM=/path/to/chromium``) or where the site has not been built
(README's docs line; .ci/run builds it and then runs this file).
"""

import os

import pytest
from site_browser import Browser, find_browser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.environ.get("CONVEXMETRIC_SITE", os.path.join(ROOT, "docs", "_build", "html"))
PAGES = ["index.html", "guide/lmnn.html", "cli.html"]

_WIDE = """
[...document.querySelectorAll('div.math, div.highlight pre, pre.literal-block')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .filter(e => !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
  .map(e => e.tagName + '.' + e.className).slice(0, 5)
"""


@pytest.fixture(scope="module")
def browser():
    executable = find_browser()
    if executable is None:
        pytest.skip("no Chromium installed (apt-get install chromium, or CONVEXMETRIC_CHROMIUM)")
    if not os.path.isfile(os.path.join(SITE, "index.html")):
        pytest.skip(f"the site is not built in {SITE} (README's docs line builds it)")
    with Browser(executable) as b:
        yield b


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("width", [1280, 400])
def test_page_in_a_browser(browser, page, width):
    report = browser.open("file://" + os.path.join(SITE, page), width=width, mobile=width < 600)
    print(page, width, report)
    assert report["errors"] == [], report["errors"]
    assert report["typeset"] == report["formulas"], report
    if page.startswith("guide/"):
        assert report["formulas"] > 20, report  # the maths is there, and typeset
    if page == "index.html":
        assert report["formulas"] >= 2, report
    if page == "cli.html":  # every code block has its copy button
        buttons = browser.evaluate("document.querySelectorAll('button.copybtn').length")
        blocks = browser.evaluate("document.querySelectorAll('div.highlight pre').length")
        assert blocks > 3 and buttons == blocks, (buttons, blocks)
    assert browser.evaluate(_WIDE) == []  # wide blocks scroll


def test_the_check_sees_untypeset_maths_and_errors(browser, tmp_path):
    """A page whose MathJax is missing and that logs an error fails the checks above."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<html><head><script src="https://cdn.example.org/mathjax.js"></script></head>'
        '<body><div class="math">\\[x\\]</div><script>console.error("boom")</script>'
        "</body></html>",
        encoding="utf-8",
    )
    report = browser.open(page.as_uri())
    assert report["formulas"] == 1 and report["typeset"] == 0
    assert any("boom" in e for e in report["errors"])
    assert any("failed to load" in e for e in report["errors"])  # no network


LAYOUT_PAGES = [
    "index.html",
    "getting_started.html",
    "concepts.html",
    "guide/index.html",
    "guide/lmnn.html",
    "tutorials/validate.html",
    "cli.html",
    "architecture.html",
]


@pytest.mark.parametrize("page", LAYOUT_PAGES)
@pytest.mark.parametrize("width", [1280, 400])
def test_the_content_has_the_width(browser, page, width):
    browser.open("file://" + os.path.join(SITE, page), width=width, mobile=width < 600)
    layout = browser.layout()
    print(page, width, layout)
    assert layout["cut"] == [], layout["cut"]  # wide maths and code scroll in their box
    assert layout["console_scrolls"] == [], layout["console_scrolls"]  # output wraps
    if width == 1280:
        assert layout["primary_links"] > 0 or not layout["primary"], layout  # none empty
        assert layout["article"] >= (760 if layout["secondary"] else 900), layout
    if page == "guide/lmnn.html" and width == 1280:  # eq. (14) and the SDP fit whole
        maths = [b for b in layout["scrolls"] if b[0].startswith(("div.math", "mjx-"))]
        assert maths == [], layout


def test_the_layout_check_sees_a_cut_off_block_and_a_narrow_column(browser, tmp_path):
    """A narrow column with an empty navigation, formulas cut off on the right and on the
    left (a row laid out from the right: what MathJax's box did when it stopped
    scrolling), and output that scrolls: each is reported."""
    page = tmp_path / "narrow.html"
    long = "x" * 400
    page.write_text(
        '<html><body><div class="bd-sidebar-primary" style="width:600px">'
        '<nav class="bd-docs-nav"></nav></div>'
        '<article class="bd-article" style="width:600px">'
        f'<div class="math" style="overflow:hidden;white-space:nowrap">{long}</div>'
        '<div class="math" style="display:flex;flex-direction:row-reverse;width:100px">'
        f"<span>{long}</span></div>"
        '<div class="highlight-console"><div class="highlight">'
        f'<pre style="overflow-x:auto">{long}</pre></div></div></article></body></html>',
        encoding="utf-8",
    )
    browser.open(page.as_uri())
    layout = browser.layout()
    assert layout["article"] == 600 and layout["primary"] and layout["primary_links"] == 0
    assert [b[0] for b in layout["cut"]] == ["div.math", "div.math"]  # right, left
    assert len(layout["console_scrolls"]) == 1
