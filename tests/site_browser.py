"""A headless Chromium driven over its DevTools pipe (no extra package, no network).

``Browser`` starts Chromium with ``--remote-debugging-pipe`` (messages are JSON
terminated by a NUL byte on file descriptors 3 and 4), opens pages of the built site
from ``file://`` URLs with every host name unresolvable, and reports what a reader's
browser would: console errors, failed loads, uncaught exceptions, and how many
formulas MathJax typeset; ``Browser.layout()`` measures the page's columns and finds
wide blocks cut off. ``python tests/site_browser.py OUT`` takes the screenshots of the
site's main pages at desktop width and at 400 px, and of single blocks (``SHOTS``).

The browser is found from ``CONVEXMETRIC_CHROMIUM`` (a path), else ``chromium``,
``chromium-browser`` or ``google-chrome`` on the PATH (Debian: ``apt-get install
chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_browser():
    path = os.environ.get("CONVEXMETRIC_CHROMIUM")
    if path:
        return path if os.access(path, os.X_OK) else None
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    def __init__(self, executable, timeout=60.0):
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="site-browser-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        args = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--remote-debugging-pipe", f"--user-data-dir={self._profile}",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # no network, whatever a page asks
            "--allow-file-access-from-files", "--hide-scrollbars", "about:blank",
        ]  # fmt: skip

        def _fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self._proc = subprocess.Popen(
            args, pass_fds=(3, 4), preexec_fn=_fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer, self._id, self.events = b"", 0, []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=True)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:  # closing regardless
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self):
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from the browser")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, session=False, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = len(self.events)
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events[seen:]):
                return
            self.events.append(self._read())
        raise TimeoutError(method)

    def evaluate(self, expression):
        result = self.send(
            "Runtime.evaluate", session=True, expression=expression, awaitPromise=True,
            returnByValue=True,
        )  # fmt: skip
        return result.get("result", {}).get("value")

    def open(self, url, width=1280, height=900, mobile=False):
        """Load ``url``, wait for MathJax to finish, and return a report: the number
        of typeset formulas and of formulas in the page, and the errors seen."""
        self.send(
            "Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
            deviceScaleFactor=1, mobile=mobile,
        )  # fmt: skip
        self.events = []
        self.send("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        typeset = self.evaluate(
            "(window.MathJax && MathJax.startup && MathJax.startup.promise"
            " ? MathJax.startup.promise : Promise.resolve())"
            ".then(() => document.querySelectorAll('mjx-container').length)"
        )
        formulas = self.evaluate("document.querySelectorAll('div.math, span.math').length")
        return {"typeset": typeset, "formulas": formulas, "errors": self.errors()}

    def errors(self):
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value")) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + params["exceptionDetails"].get("text", ""))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.loadingFailed":
                out.append("failed to load: " + params.get("errorText", ""))
        return out

    def screenshot(self, path, width, mobile=False):
        """A PNG of the whole page (the height the page has) at ``width`` pixels."""
        height = self.evaluate("document.documentElement.scrollHeight")
        height = min(int(height or 900), 12000)
        self.send(
            "Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
            deviceScaleFactor=1, mobile=mobile,
        )  # fmt: skip
        time.sleep(0.3)
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def layout(self):
        """The open page's layout: the content column's width (``article``), whether each
        side column is shown and how many links the left one holds, and the wide blocks:
        ``cut`` (display maths, code or output wider than its box and not scrolling, or
        starting before its box's left edge: cut off), ``scrolls`` (wider, scrolling in
        its box) and ``console_scrolls`` (command output that scrolls, not wrapping).
        Each block as ``[what, % of its width in view, its first characters]``."""
        return self.evaluate(_LAYOUT)

    def clip(self, path, selector, index=0, width=1280, mobile=False, margin=16):
        """A PNG of the ``index``-th element matching ``selector`` (and ``margin`` pixels
        around it) at a window ``width`` pixels wide; ``False`` when there is none. The
        window is as tall as the page, so nothing moves between measuring and taking."""
        height = min(int(self.evaluate("document.documentElement.scrollHeight") or 900), 12000)
        self.send(
            "Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
            deviceScaleFactor=1, mobile=mobile,
        )  # fmt: skip
        time.sleep(0.3)
        box = self.evaluate(_BOX % (json.dumps(selector), index, margin))
        if not box:
            return False
        data = self.send(
            "Page.captureScreenshot", session=True, format="png", clip={**box, "scale": 1}
        )["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))
        return True


_LAYOUT = """(() => {
  const shown = e => e && getComputedStyle(e).display !== 'none'
    && getComputedStyle(e).visibility !== 'hidden' && e.getBoundingClientRect().width > 0;
  const primary = document.querySelector('.bd-sidebar-primary');
  const secondary = document.querySelector('.bd-sidebar-secondary');
  const article = document.querySelector('article.bd-article') || document.body;
  const blocks = [...document.querySelectorAll(
    'div.math, div.math > mjx-container, div.highlight pre, pre.literal-block')];
  const wide = blocks.filter(e => e.scrollWidth > e.clientWidth + 1);
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  // content that starts before the box's left edge cannot be scrolled to: cut off
  const before = e => e.scrollLeft === 0 && [...e.children].some(
    c => c.getBoundingClientRect().left < e.getBoundingClientRect().left - 1);
  const row = e => [
    e.tagName.toLowerCase() + '.' + (e.className || e.parentNode.parentNode.className),
    Math.round(100 * e.clientWidth / e.scrollWidth), e.textContent.trim().slice(0, 40)];
  return {
    article: Math.round(article.getBoundingClientRect().width),
    primary: Boolean(shown(primary)),
    primary_links: primary ? primary.querySelectorAll('nav.bd-docs-nav a').length : 0,
    secondary: Boolean(shown(secondary)),
    cut: [...wide.filter(e => !scrolls(e)), ...blocks.filter(before)].map(row),
    scrolls: wide.filter(scrolls).map(row),
    console_scrolls: wide.filter(e => e.closest('div.highlight-console')).map(row),
  };
})()"""

_BOX = """(() => {
  const e = document.querySelectorAll(%s)[%d], m = %d;
  if (!e) return null;
  window.scrollTo({left: 0, top: 0, behavior: 'instant'});
  const r = e.getBoundingClientRect();
  return {x: Math.max(0, r.left - m), y: Math.max(0, r.top - m),
          width: Math.min(r.width + 2 * m, document.documentElement.clientWidth),
          height: r.height + 2 * m};
})()"""

PAGES = {
    "index": "index.html",
    "getting-started": "getting_started.html",
    "guide-lmnn": "guide/lmnn.html",
    "guide-poe": "guide/poe.html",
    "guide-maurer": "guide/maurer.html",
    "cli": "cli.html",
    "architecture": "architecture.html",
    "gallery-lmnn-zebra": "auto_examples/lmnn/lmnn_zebra.html",
    "gallery-maurer-transfer": "auto_examples/maurer/maurer_transfer.html",
    "gallery-poe-taxonomy": "auto_examples/poe/poe_taxonomy.html",
    "gallery-poe-graph-noise": "auto_examples/poe/poe_graph_noise.html",
}

#: single blocks: name -> (page, CSS selector, which match)
SHOTS = {
    "lmnn-eq14": ("guide/lmnn.html", "div.math", 2),
    "lmnn-sdp": ("guide/lmnn.html", "div.math", 3),
    "validate-text": ("tutorials/validate.html", "div.highlight-console", 0),
    "validate-json": ("tutorials/validate.html", "div.highlight-console", 1),
    "validate-no-exact": ("tutorials/validate.html", "div.highlight-console", 2),
}

WIDTHS = (("desktop", 1280, False), ("400px", 400, True))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else "shots"
    site = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join("docs", "_build", "html"))
    executable = find_browser()
    if executable is None:
        sys.exit("no Chromium found (set CONVEXMETRIC_CHROMIUM)")
    os.makedirs(out, exist_ok=True)
    with Browser(executable) as browser:
        for name, page in PAGES.items():
            for label, width, mobile in WIDTHS:
                report = browser.open("file://" + os.path.join(site, page), width, 900, mobile)
                report.update(browser.layout())
                path = os.path.join(out, f"{name}-{label}.png")
                browser.screenshot(path, width, mobile)
                print(path, json.dumps(report, ensure_ascii=False))
        for name, (page, selector, index) in SHOTS.items():
            for label, width, mobile in WIDTHS:
                browser.open("file://" + os.path.join(site, page), width, 900, mobile)
                path = os.path.join(out, f"{name}-{label}.png")
                print(path, browser.clip(path, selector, index, width, mobile))


if __name__ == "__main__":
    main()
