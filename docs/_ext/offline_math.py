"""MathJax served from the site itself, so the maths is typeset without a network.

The ``django-static-mathjax`` package (a ``docs`` extra) ships MathJax 3 as files;
``tex-svg-full.js`` is one self-contained script (the TeX input with every extension,
SVG output: no font files, nothing loaded later). This extension points
``mathjax_path`` at ``_static/mathjax/tex-svg-full.js`` and copies the script there
when the HTML is written. A missing package fails the build with the line that
installs it.
"""

import os
import shutil

SCRIPT = "tex-svg-full.js"


def _source():
    try:
        import mathjax  # the django-static-mathjax package
    except ImportError as exc:
        raise RuntimeError(
            'the site bundles MathJax from django-static-mathjax: pip install -e ".[docs]"'
        ) from exc
    path = os.path.join(os.path.dirname(mathjax.__file__), "static", "mathjax", "es5", SCRIPT)
    if not os.path.isfile(path):
        raise RuntimeError(f"{path} is missing: reinstall django-static-mathjax")
    return path


def _copy(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    target = os.path.join(app.outdir, "_static", "mathjax")
    os.makedirs(target, exist_ok=True)
    shutil.copyfile(_source(), os.path.join(target, SCRIPT))


def _configure(app, config):
    _source()  # fail early, before minutes of gallery
    config.mathjax_path = f"mathjax/{SCRIPT}"
    # MathJax's contextual menu and its speech engine would load more files on demand.
    config.mathjax3_config = {
        "options": {"enableMenu": False},
        "svg": {"fontCache": "global"},
    }


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
