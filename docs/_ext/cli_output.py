"""``.. command-output:: validate lmnn --dataset wine``: run a ``convexmetric`` command
while the site is built and show what it printed (a failing command fails the build).

The command runs in-process through click's test runner, so the page always shows what
the installed version prints; timings differ from run to run.
"""

import shlex

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


class CommandOutput(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = False

    def run(self):
        from click.testing import CliRunner

        from convexmetric.cli.main import main

        args = shlex.split(self.arguments[0])
        result = CliRunner().invoke(main, args, catch_exceptions=True)
        if result.exit_code != 0:
            raise self.error(
                f"`convexmetric {self.arguments[0]}` exited with status {result.exit_code}:\n"
                f"{result.output}{result.exception!r}"
            )
        text = f"$ convexmetric {self.arguments[0]}\n{result.output.rstrip()}"
        block = nodes.literal_block(text, text)
        block["language"] = "console"
        return [block]


def setup(app):
    app.add_directive("command-output", CommandOutput)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
