"""The built site in a real browser: headless Chromium, no network, opens the index,
a user-guide page and the command-line page from ``docs/_build/html`` and finds the
maths typeset (MathJax, bundled with the site), no console error, no failed load, a
copy button on every code block, and every wide block (display maths, code, output)
scrolling inside its box rather than being cut off.

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
