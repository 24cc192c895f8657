"""Two directives that put the code's own words into the pages, read at build time.

``.. command-output:: validate lmnn --dataset wine`` runs a ``convexmetric`` command
in-process (click's test runner) and shows what it printed; a failing command fails the
build. Timings differ from run to run. With ``:plot: NAME.png`` the command also gets
``--plot`` into ``docs/_generated/NAME.png`` and the figure is shown below the output.

``.. module-docstring:: convexmetric.lmnn.certificate`` inserts a module's docstring (the
derivations of the certificates live there, next to the code), parsed as
reStructuredText; a module that is renamed or loses its docstring fails the build.
"""

import importlib
import os
import re
import shlex
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class CommandOutput(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[dict] = {"plot": directives.unchanged_required}

    def run(self):
        from click.testing import CliRunner

        from convexmetric.cli.main import main

        args = shlex.split(self.arguments[0])
        plot = self.options.get("plot")
        if plot:
            folder = os.path.join(self.env.srcdir, "_generated")
            os.makedirs(folder, exist_ok=True)
            args += ["--plot", os.path.join(folder, plot)]
        result = CliRunner().invoke(main, args)
        if result.exit_code != 0:
            raise self.error(
                f"`convexmetric {self.arguments[0]}` exited with status {result.exit_code}:\n"
                f"{result.output}{result.exception!r}"
            )
        text = f"$ convexmetric {self.arguments[0]}\n{result.output.rstrip()}"
        block = nodes.literal_block(text, text)
        block["language"] = "console"
        if not plot:
            return [block]
        return [block, nodes.image(uri=f"/_generated/{plot}", alt=self.arguments[0])]


def _escape_bars(lines):
    """``|C|`` in prose is the size of C, not a substitution: escape the bars outside
    math blocks and outside backquoted text (literals, roles)."""
    out, math_indent = [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if math_indent is not None and line.strip() and indent <= math_indent:
            math_indent = None
        if line.lstrip().startswith(".. math::"):
            math_indent = indent
        if math_indent is None:
            parts = re.split(r"(``.*?``|`[^`]*`)", line)
            parts[::2] = [re.sub(r"\|(\w+)\|", r"\\|\1\\|", part) for part in parts[::2]]
            line = "".join(parts)
        out.append(line)
    return out


class ModuleDocstring(SphinxDirective):
    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        try:
            doc = importlib.import_module(name).__doc__
        except ImportError as exc:
            raise self.error(f"module-docstring: cannot import {name}: {exc}") from exc
        if not doc or not doc.strip():
            raise self.error(f"module-docstring: {name} has no docstring")
        lines = doc.expandtabs().splitlines()
        rest = lines[1:]
        indent = min((len(s) - len(s.lstrip()) for s in rest if s.strip()), default=0)
        lines = _escape_bars([lines[0].strip()] + [s[indent:] for s in rest])
        container = nodes.container(classes=["module-docstring"])
        self.state.nested_parse(StringList(lines, source=f"docstring of {name}"), 0, container)
        note = nodes.paragraph()
        note += nodes.emphasis(text=f"(The docstring of {name}.)")
        return [container, note]


def setup(app):
    app.add_directive("command-output", CommandOutput)
    app.add_directive("module-docstring", ModuleDocstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
