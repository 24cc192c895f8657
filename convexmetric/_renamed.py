"""Renamed parameters, scikit-learn's way: the old name works for one release.

An estimator that renames ``old`` to ``new`` keeps ``old`` in its signature with the
default :data:`DEPRECATED`; ``fit`` calls :func:`renamed`, which returns the value to use
for ``new`` and, when ``old`` was given, warns with a ``FutureWarning`` that names the
new name (giving both is an error). ``clone``, ``get_params`` and grid searches see both
names, as in scikit-learn's own deprecations.

>>> import warnings
>>> class Est:
...     def __init__(self, *, margin=1.0, gamma=DEPRECATED):
...         self.margin, self.gamma = margin, gamma
>>> renamed(Est(margin=2.0), "gamma", "margin")
2.0
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     value = renamed(Est(gamma=3.0), "gamma", "margin")
>>> value, w[0].category.__name__
(3.0, 'FutureWarning')
"""

from __future__ import annotations

import inspect
import warnings

#: the default of a renamed parameter's old name
DEPRECATED = "deprecated"

#: the release that removes the old names
REMOVED_IN = "0.3"


def is_deprecated(value):
    """Whether ``value`` is the :data:`DEPRECATED` default (the old name was not given)."""
    return isinstance(value, str) and value == DEPRECATED


def renamed(est, old, new, *, convert=None, hint=""):
    """The value of ``new`` for this fit: ``old``'s value (with a FutureWarning) if given.

    ``convert(value)`` maps the old name's value onto the new name's meaning (for a
    rename that also changes units, such as SSNE's ``n_epochs`` → ``max_iter``); ``hint``
    ends the warning.
    """
    name = type(est).__name__
    old_value, new_value = getattr(est, old), getattr(est, new)
    if is_deprecated(old_value):
        return new_value
    default = inspect.signature(type(est).__init__).parameters[new].default
    if not _same(new_value, default):
        raise ValueError(
            f"{name} got both '{old}' and '{new}'; '{old}' was renamed '{new}': pass only "
            f"{new}={new_value!r}."
        )
    value = old_value if convert is None else convert(old_value)
    warnings.warn(
        f"The '{old}' parameter of {name} was renamed '{new}' in 0.2 and '{old}' will be "
        f"removed in {REMOVED_IN}; pass {new}={value!r} instead.{hint}",
        FutureWarning,
        stacklevel=3,
    )
    return value


def _same(a, b):
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # arrays and other unorderable values
        return False
