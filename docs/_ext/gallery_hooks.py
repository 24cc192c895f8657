"""sphinx-gallery hooks of the convexmetric documentation (named in ``conf.py``).

The examples build their figures with matplotlib's object API (never through pyplot), and
write them as PNG files with ``--plot DIR``. :func:`reset_argv` gives every script
``--plot figures`` (and ``--quick`` unless ``CONVEXMETRIC_DOCS_FULL=1``): sphinx-gallery
runs a script in its own folder, so the page shows ``figure written to figures/NAME.png``,
what a reader running the same command sees. :func:`png_scraper` moves the files written
there into the gallery's image folder *under their own names* (``NAME.png``), so the
user guide refers to a figure by the name the script gives it and a caption cannot land
on another figure; two scripts writing the same name stop the build.
"""

import glob
import os
import shutil

QUICK = os.environ.get("CONVEXMETRIC_DOCS_FULL", "").lower() not in {"1", "true", "yes"}
FOLDER = "figures"


def _figure_dir(script):
    return os.path.join(os.path.dirname(os.path.abspath(script)), FOLDER)


def reset_argv(gallery_conf, script_vars):
    """Command-line arguments of every example: ``--plot figures`` (and ``--quick``)."""
    folder = _figure_dir(script_vars["src_file"])
    if os.path.isdir(folder):  # left by an interrupted build
        shutil.rmtree(folder)
    return (["--quick"] if QUICK else []) + ["--plot", FOLDER]


def png_scraper(block, block_vars, gallery_conf, **kwargs):
    """The PNG files an example wrote into its ``--plot`` folder, as gallery images."""
    from sphinx_gallery.scrapers import figure_rst

    folder = _figure_dir(block_vars["src_file"])
    pngs = sorted(glob.glob(os.path.join(folder, "*.png")))
    if not pngs:
        return ""
    first = next(iter(block_vars["image_path_iterator"]))
    shutil.copyfile(pngs[0], first)  # sphinx-gallery's thumbnail is made from this name
    images = os.path.dirname(first)
    names = []
    for png in pngs:
        target = os.path.join(images, os.path.basename(png))
        owner = target + ".source"
        if os.path.exists(owner):
            with open(owner, encoding="utf-8") as fh:
                if fh.read() != block_vars["src_file"]:
                    raise RuntimeError(f"two examples write {os.path.basename(png)}")
        with open(owner, "w", encoding="utf-8") as fh:
            fh.write(block_vars["src_file"])
        shutil.move(png, target)
        names.append(target)
    if not os.listdir(folder):
        os.rmdir(folder)
    return figure_rst(names, gallery_conf["src_dir"])
