"""sphinx-gallery hooks of the convexmetric documentation (named in ``conf.py``).

The examples build their figures with matplotlib's object API (never through pyplot), and
write them as PNG files with ``--plot DIR``; :func:`reset_argv` gives every script its own
folder (and ``--quick`` unless ``CONVEXMETRIC_DOCS_FULL=1``), and :func:`png_scraper`
moves the files written there into the gallery page.
"""

import glob
import os
import shutil
import tempfile

QUICK = os.environ.get("CONVEXMETRIC_DOCS_FULL", "").lower() not in {"1", "true", "yes"}
_FIGURES = tempfile.mkdtemp(prefix="convexmetric-gallery-")


def _figure_dir(script):
    return os.path.join(_FIGURES, os.path.splitext(os.path.basename(script))[0])


def reset_argv(gallery_conf, script_vars):
    """Command-line arguments of every example: ``--plot DIR`` (and ``--quick``)."""
    args = ["--plot", _figure_dir(script_vars["src_file"])]
    return (["--quick"] if QUICK else []) + args


def png_scraper(block, block_vars, gallery_conf, **kwargs):
    """The PNG files an example wrote into its ``--plot`` folder, as gallery images."""
    from sphinx_gallery.scrapers import figure_rst

    folder = _figure_dir(block_vars["src_file"])
    names = []
    for png, target in zip(
        sorted(glob.glob(os.path.join(folder, "*.png"))), block_vars["image_path_iterator"]
    ):
        shutil.move(png, target)
        names.append(target)
    return figure_rst(names, gallery_conf["src_dir"])
