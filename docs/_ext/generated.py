"""Two directives that put the code's own words and outputs into the pages, read at build time.

``.. command-output:: validate lmnn --dataset wine`` runs a ``convexmetric`` command
in-process (click's test runner) and shows what it printed; a failing command fails the
build. Timings differ from run to run. A ``--json`` report is shown indented (the
command prints it on one line). With ``:plot: NAME.png`` the command also gets
``--plot`` into ``docs/_generated/NAME.png`` and the figure is shown below the output.

``.. status-words::`` prints the table of status words from
``convexmetric.result.STATUS_MESSAGES``.
"""

import json
import os
import shlex
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from status_words import status_table


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
        text = f"$ convexmetric {self.arguments[0]}\n{_readable(args, result.output).rstrip()}"
        block = nodes.literal_block(text, text)
        block["language"] = "console"
        if not plot:
            return [block]
        return [block, nodes.image(uri=f"/_generated/{plot}", alt=self.arguments[0])]


def _readable(args, output):
    """A ``--json`` report indented for the page (the command prints one line: the
    same object, which is what a script reads)."""
    if "--json" not in args:
        return output
    return json.dumps(json.loads(output), indent=2, ensure_ascii=False)


class StatusWords(SphinxDirective):
    """The table of status words, ``convexmetric.result.STATUS_MESSAGES``, as the code
    has it (so the site cannot disagree with ``SolveResult.message``)."""

    def run(self):
        container = nodes.container(classes=["status-words"])
        source = "convexmetric.result.STATUS_MESSAGES"
        self.state.nested_parse(StringList(status_table(), source=source), 0, container)
        return [container]


def setup(app):
    app.add_directive("command-output", CommandOutput)
    app.add_directive("status-words", StatusWords)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
