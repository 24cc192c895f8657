"""Cross-references written inside a docstring resolve as Python would read them.

A docstring of ``convexmetric.result.SolveResult`` that says ``:data:`STATUS_MESSAGES```
means the name of its own module, but the class is documented as
``convexmetric.SolveResult`` (where users import it), so Sphinx looks for
``convexmetric.STATUS_MESSAGES``. When a reference is not found, this extension tries
again in the module that defines the documented object (and in that module's package);
references still unresolved are left to ``-n``, which reports them.
"""

import importlib

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _defining_modules(modname, clsname):
    """The modules to retry in: the one that defines ``modname.clsname``, its package."""
    try:
        obj = importlib.import_module(modname)
        for part in (clsname or "").split("."):
            if part:
                obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return []
    real = getattr(obj, "__module__", None) if clsname else modname
    if not real:
        return []
    out = [real]
    if "." in real:
        out.append(real.rsplit(".", 1)[0])
    return [m for m in out if m != modname]


def _resolve(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    domain = env.get_domain("py")
    for module in _defining_modules(node.get("py:module"), node.get("py:class")):
        retry = node.deepcopy()
        retry["py:module"] = module
        retry["py:class"] = None
        retry["reftarget"] = target
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], target, retry, contnode
        )
        if found is not None:
            return found
    return None


def setup(app):
    app.connect("missing-reference", _resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
