"""The page's width goes to its content: no empty sidebar.

pydata-sphinx-theme shows a "Section Navigation" column on every page, empty where the
page's top-level section has no pages under it (Getting started, Concepts): 320 px of
nothing at 1280 px. Here the column's navigation is dropped on such pages, and the
theme then hides the column at desktop widths (it stays reachable from the menu button
on a phone). The right-hand column ("On this page") is already left out by the theme
where a page has no sections. The widths of the columns are in
``_static/convexmetric.css``.
"""

from sphinx.environment.adapters.toctree import _get_toctree_ancestors

#: the theme's templates of the section navigation
NAVIGATION = ("sidebar-nav-bs.html", "sidebar-collapse.html")


def section_has_pages(env, pagename):
    """Whether ``pagename``'s top-level section lists pages under it (its toctrees,
    hidden ones included: the theme shows those too)."""
    ancestors = list(_get_toctree_ancestors(env.toctree_includes, pagename))
    if not ancestors:
        return False
    return bool(env.toctree_includes.get(ancestors[-1]))


def _drop_empty_navigation(app, pagename, templatename, context, doctree):
    if section_has_pages(app.env, pagename):
        return
    sidebars = context.get("sidebars") or []
    context["sidebars"] = [s for s in sidebars if s not in NAVIGATION]


def setup(app):
    # after the theme's own handlers (priority 500), before the page is rendered
    app.connect("html-page-context", _drop_empty_navigation, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
