"""Checks of the written pages: what a reader would see as wrong is a build warning
(and the build runs with ``-W``, so an error).

Looked for in the text of every HTML page (code blocks, where ``--`` and backquotes are
literal, left out; the pages of highlighted source, ``_modules/``, skipped):

* an option written with a dash that is not two hyphens (``–features``): typography
  turned ``--`` into an en dash, and the copied command fails;
* a ``mailto:`` link (``precision@10`` read as an e-mail address);
* literal double backquotes: reStructuredText that was not parsed;
* a build folder (``/tmp/...``) printed by an example;
* names that no longer exist (``DESIGN.md``, ``convexmetric.lmnn_extensions``,
  ``convexmetric.taxonomy``) and pasted-docstring notes;
* a project diary: a calendar date (``2026-11-27``) or an issue number (``issue 7``,
  "the LMNN scale issue") in a page's text: history belongs in the changelog;
* a script or style sheet loaded from the network: the site must work offline.
"""

import os
import re

_PRE = re.compile(r"<pre\b.*?</pre>|<script\b.*?</script>|<style\b.*?</style>", re.S)
_TAG = re.compile(r"<[^>]+>")
CHECKS = [
    (re.compile(r"(?:^|[\s(\[>])[–—](?:[a-z][a-z-]+)"), "an option with an en dash (copy fails)"),
    (re.compile(r"``"), "literal double backquotes (unparsed reStructuredText)"),
    (re.compile(r"/tmp/|convexmetric-gallery-"), "a build folder printed on the page"),
    (re.compile(r"DESIGN\.md"), "a stale name: DESIGN.md (now ARCHITECTURE.md)"),
    (re.compile(r"convexmetric\.lmnn_extensions"), "a stale logger name"),
    (re.compile(r"(?<![\w.])convexmetric\.taxonomy\b"), "a stale module name"),
    (re.compile(r"\(The docstring of"), "a pasted docstring"),
    (re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"), "a date: a diary entry (history: CHANGELOG.md)"),
    (re.compile(r"\bissue \d+|\bscale issue\b"), "an issue number: a diary entry"),
]
_MARKUP = [
    (re.compile(r'href="mailto:'), "a mailto link"),
    (re.compile(r'<(?:script|link)\b[^>]*(?:src|href)="(?:https?:)?//'), "a file from the network"),
]


def problems(html):
    """``(what, excerpt)`` for each finding in one page's HTML."""
    found = []
    for pattern, what in _MARKUP:
        found += [(what, m.group(0)) for m in pattern.finditer(html)]
    text = _TAG.sub(" ", _PRE.sub(" ", html))
    for pattern, what in CHECKS:
        for m in pattern.finditer(text):
            excerpt = text[max(m.start() - 40, 0) : m.end() + 40].replace("\n", " ")
            found.append((what, excerpt.strip()))
    return found


def _check(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for folder, dirs, files in os.walk(app.outdir):
        dirs[:] = [d for d in dirs if d not in {"_modules", "_sources", "_static"}]
        for name in sorted(files):
            if not name.endswith(".html"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                html = fh.read()
            seen = set()
            for what, excerpt in problems(html):
                if what in seen:  # the first of a kind per page is enough to find it
                    continue
                seen.add(what)
                page = os.path.relpath(path, app.outdir)
                _logger().warning(f"{page}: {what}: {excerpt!r}", type="sitecheck")


def _logger():
    """Sphinx's logger, imported at build time only (the checks themselves need no Sphinx:
    the test line, which installs no Sphinx, tests them)."""
    from sphinx.util import logging

    return logging.getLogger(__name__)


def setup(app):
    app.connect("build-finished", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
