"""A figure made at build time by the library's own plotting, from code shown on the page.

``.. library-figure:: NAME.png`` runs its content (Python, public API only) with every
warning an error, takes the :class:`matplotlib.figure.Figure` it leaves in ``fig``,
writes it to ``docs/_generated/NAME.png`` with :func:`convexmetric.plotting.save_figure`
and shows the code (with ``:show-code:``) and the figure with its ``:caption:``. A
snippet that fails or warns fails the build. No network: the data are made in the
snippet or read from the package's own files.
"""

import os
import warnings
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class LibraryFigure(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec: ClassVar[dict] = {
        "caption": directives.unchanged_required,
        "width": directives.unchanged_required,
        "show-code": directives.flag,
    }

    def _figure(self, code):
        namespace = {"__name__": "library_figure"}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(compile(code, self.get_location(), "exec"), namespace)
        except Exception as exc:
            raise self.error(f"library-figure {self.arguments[0]}: {exc!r}") from exc
        fig = namespace.get("fig")
        if fig is None or not hasattr(fig, "savefig"):
            raise self.error(f"library-figure {self.arguments[0]}: the code leaves no 'fig'.")
        return fig

    def run(self):
        from convexmetric.plotting import save_figure

        name = self.arguments[0]
        code = "\n".join(self.content)
        folder = os.path.join(self.env.srcdir, "_generated")
        save_figure(self._figure(code), os.path.join(folder, name))
        out = []
        if "show-code" in self.options:
            block = nodes.literal_block(code, code)
            block["language"] = "python"
            out.append(block)
        rst = [f".. figure:: /_generated/{name}", f"   :width: {self.options.get('width', '100%')}"]
        rst += ["", "   " + " ".join(self.options.get("caption", "").split())]
        container = nodes.container()
        self.state.nested_parse(StringList(rst, source=self.get_source_info()[0]), 0, container)
        return out + container.children


def setup(app):
    app.add_directive("library-figure", LibraryFigure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
