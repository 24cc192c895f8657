"""Sphinx configuration of the convexmetric documentation.

Build (from the repository root): ``python -m sphinx -n -W -b html docs docs/_build/html``
(``-n``: every cross-reference must resolve; ``-W``: warnings are errors).
The gallery runs every script of ``examples/`` with its ``--quick`` option unless
``CONVEXMETRIC_DOCS_FULL=1`` is set (then the scripts' defaults: minutes to an hour);
see ``_ext/gallery_hooks.py``.
No network is used, neither by the build (intersphinx is deliberately absent) nor by a
reader's browser: MathJax is copied into the site from the ``django-static-mathjax``
package (see ``_ext/offline_math.py``).
"""

import os
import re
import sys

import convexmetric

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "convexmetric"
author = "the convexmetric developers"
copyright = "the convexmetric developers, BSD-3-Clause"
version = release = convexmetric.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_click",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "sphinx_copybutton",
    "generated",
    "layout",
    "library_figure",
    "offline_math",
    "sitecheck",
    "xref",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**/*.ipynb", "**/*.py.md5", "**/*.codeobj.json", "**/*.zip"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["convexmetric.css"]
html_theme = "pydata_sphinx_theme"
html_title = f"convexmetric {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "use_edit_page_button": False,
}
# an explicit colour mode: with none, the theme logs a console error on a first visit
html_context = {"default_mode": "auto"}
html_show_sourcelink = False
# "--features" must stay two hyphens (an en dash cannot be copied into a shell), and
# quotes in commands must stay straight.
smartquotes = False
# The copy button leaves out the prompts of console sessions and doctests.
copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False

# -- cross-references -------------------------------------------------------------------
# Built with -n: a reference that resolves nowhere is a warning, and warnings are errors.
# Ignored are only targets outside this documentation: the Python, NumPy, SciPy and
# scikit-learn objects the docstrings name (no intersphinx: the build uses no network),
# and the solver internals that the docstrings of the public API mention by name for
# developers (private modules, documented in their source, not on this site).
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|sklearn|cvxpy|cp|dask|distributed|matplotlib|click)(\..*)?"),
]
nitpick_ignore = [
    # internal modules that the public docstrings point developers to (the dask
    # executor, the LMNN passes, the POE diagonal solver, the ball tree, the metrics
    # and kernel helpers): their docstrings are in the source; this site documents the
    # public API and the helpers a user meets
    ("py:mod", "convexmetric.lmnn.passes"),
    ("py:mod", "convexmetric.lmnn.blocks.dask_executor"),
    ("py:mod", "convexmetric.poe.diagonal"),
    ("py:mod", "convexmetric.lmnn.balltree"),
    ("py:func", "convexmetric.metrics.distance_roc_auc"),
    ("py:func", "convexmetric.kernels.empirical_features"),
    ("py:class", "convexmetric.ssne.solver.SSNESettings"),
    ("py:func", "_augmented"),
    # fitted attributes listed in an Attributes section, which numpydoc does not index
    ("py:obj", "average_loss_"),
    # the tuple of model kinds of convexmetric.model_kinds, named in SavedModel's
    # docstring (a constant without a docstring of its own)
    ("py:data", "KINDS"),
    # likewise the stage names of convexmetric.poe.graph and the exception of
    # convexmetric.problems.common, named in their modules' docstrings, without a
    # docstring of their own (autodoc leaves them out)
    ("py:data", "STAGES"),
    ("py:class", "SolverFailed"),
    # the submodules of convexmetric.datasets and their constants, named in the
    # docstrings of the data sets (the loaders are documented where users call them,
    # convexmetric.datasets)
    ("py:mod", "generators"),
    ("py:mod", "digits"),
    ("py:mod", "mnist"),
    ("py:mod", "taxonomy"),
    ("py:data", "SPLITS"),
    ("py:data", "GROUPED"),
    ("py:data", "AUGMENT_PER_IMAGE"),
    ("py:data", "AUGMENT_MOVES"),
    ("py:data", "AUGMENT_ANGLES"),
    ("py:func", "pca_fit"),
    ("py:class", "MissingExtraError"),
]
# Two objects of one name (a function and a property: ``certified_gap``) make a
# reference ambiguous; Sphinx still links it, to the first.
suppress_warnings = ["ref.python"]

# -- autodoc, autosummary and numpydoc ---------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# the class pages list the public methods of api_members.MEMBERS (checked by the tests)
from api_members import DATASETS, MEMBERS  # noqa: E402

autosummary_context = {
    "api_members": MEMBERS,
    "api_datasets": DATASETS,
    # documented once, where users import them (convexmetric.SolveResult)
    "api_exclude": {"convexmetric.result": "SolveResult"},
}
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# The public API (convexmetric.__all__ and its public methods) is validated on every
# build; a failing check is a warning, and the build runs with -W.  Left out: See Also
# (SA01), Examples (EX01) and Extended Summary (ES01) sections, which not every method
# needs.
numpydoc_validation_checks = {"all", "SA01", "EX01", "ES01"}
numpydoc_validation_exclude = {
    r"\.__init__$",
    r"\.get_params$",
    r"\.set_params$",
    # the helper and exact-side pages document modules whose docstrings are written for
    # readers of the code, not to numpydoc's sections
    r"^convexmetric\.(problems|comparisons|model_io|plotting)\b",
    r"^convexmetric\.(poe\.items|poe\.graph|maurer\.pairs|ssne\.estimator\.label_pairs)\b",
    r"^convexmetric\.result\.(?!SolveResult)",
}

# -- sphinx-gallery ---------------------------------------------------------------------
from sphinx_gallery.sorting import ExplicitOrder  # noqa: E402

sphinx_gallery_conf = {
    "examples_dirs": [os.path.join(ROOT, "examples")],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"\.py$",
    "ignore_pattern": r"__init__\.py",
    "reset_argv": "gallery_hooks.reset_argv",
    "image_scrapers": ("gallery_hooks.png_scraper",),
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "download_all_examples": False,
    # no run times on the pages: they are this machine's, not the reader's
    "min_reported_time": 10**9,
    "write_computation_times": False,
    "within_subsection_order": "FileNameSortKey",
    # the papers in the order of the user guide
    "subsection_order": ExplicitOrder(
        [f"../examples/{p}" for p in ("lmnn", "poe", "maurer", "aroma", "ssne")]
    ),
    "first_notebook_cell": (
        "# Each script takes its own options; in a notebook, set them here\n"
        "# (add '--quick' for a run of seconds). Figures are written to figures/.\n"
        "import sys\n"
        "sys.argv = ['example', '--plot', 'figures']"
    ),
    "last_notebook_cell": (
        "import glob\n"
        "from IPython.display import Image, display\n"
        "for png in sorted(glob.glob('figures/*.png')):\n"
        "    display(Image(png))"
    ),
}

# -- myst -------------------------------------------------------------------------------
myst_heading_anchors = 3
suppress_warnings += ["myst.header"]


# -- sphinx-click -----------------------------------------------------------------------
def _escape_bars(app, ctx, lines):
    """The commands' help is plain text: ``|C|`` means the size of C, not a substitution.

    Only such bars are escaped: a line starting with ``| `` is a line of a block that
    click keeps as written (``\\b``), which sphinx-click renders as a line block.
    """
    lines[:] = [re.sub(r"\|(\w+)\|", r"\\|\1\\|", line) for line in lines]


def setup(app):
    for event in ("description", "options", "arguments", "epilog"):
        app.connect(f"sphinx-click-process-{event}", _escape_bars)
