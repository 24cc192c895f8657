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


def _canonical(module, target):
    """The full name of what ``target`` names in ``module``'s namespace (an import)."""
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    owner, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{owner}.{name}" if owner and name else None


def _lookup(dotted):
    """The object a full dotted name names, or None."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for part in parts[n:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None


def _resolve(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    domain = env.get_domain("py")
    modules = _defining_modules(node.get("py:module"), node.get("py:class"))
    for module in [node.get("py:module"), *modules]:
        full = _canonical(module, target) if module else None
        if full and full != target:
            retry = node.deepcopy()
            retry["reftarget"] = full
            found = domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"], full, retry, contnode
            )
            if found is not None:
                return found
    # an object documented where users import it: convexmetric.SolveResult
    last = target.rsplit(".", 1)[-1]
    try:
        top = importlib.import_module("convexmetric")
        same = "." in target and getattr(top, last, None) is _lookup(target)
    except ImportError:
        same = False
    if same and last in getattr(top, "__all__", ()):
        retry = node.deepcopy()
        found = domain.resolve_xref(
            env,
            node["refdoc"],
            app.builder,
            node["reftype"],
            f"convexmetric.{last}",
            retry,
            contnode,
        )
        if found is not None:
            return found
    for module in modules:
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
