"""The one definition of the certified gap (:func:`certified_gap`), kept in the
verifier's package so that the verifier needs nothing else of the library;
:mod:`convexmetric.result` re-exports it for the solvers and reports."""

from __future__ import annotations

import numpy as np

#: a lower bound may exceed the objective by this much (relative) through rounding;
#: beyond it the certificate is broken and :func:`certified_gap` raises
ROUNDING = 1e-9
#: at an optimum of 0 no relative gap can be met (an objective of any positive size is
#: all gap): the gap's denominator is at least ``FLOOR_SHARE·zero_value``, the objective
#: at the zero point (every hinge at its margin) being the problem's own scale; an
#: objective below a millionth of that scale is then certified to an absolute gap
FLOOR_SHARE = 1e-6


class CertificateError(ArithmeticError):
    """A lower bound above the objective beyond rounding: the certificate is broken.

    Never clipped: a bound that exceeds the objective proves nothing, and reading it as a
    gap of 0 would report a wrong answer as "optimal".
    """


def certified_gap(objective, lower_bound, zero_value=0.0) -> float:
    """``(objective − lower_bound) / max(|objective|, FLOOR_SHARE·zero_value, 1e-12)``: the
    relative error that a lower bound certifies, the one definition every solver,
    estimator, report and the verifier use.

    ``inf`` without a bound (``None`` or ``-inf``) or with a non-finite objective. The
    floor of the denominator certifies an objective of 0 with a bound of 0, and, given the
    objective at the zero point (``zero_value``), an objective within a millionth of that
    scale to an absolute gap (``FLOOR_SHARE``). Nothing is
    clipped: a bound above the objective by at most ``ROUNDING`` (relative) gives a
    gap just below 0; beyond that the bound is broken and :class:`CertificateError` is
    raised.

    >>> certified_gap(100.0, 99.99), certified_gap(0.0, 0.0), certified_gap(1.0, None)
    (0.00010000000000005117, 0.0, inf)
    >>> certified_gap(1.0, 1.5)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    convexmetric.result.CertificateError: lower bound 1.5 exceeds the objective 1.0 ...
    """
    if lower_bound is None or not np.isfinite(lower_bound) or not np.isfinite(objective):
        return float("inf")
    f, lb = float(objective), float(lower_bound)
    scale = max(abs(f), FLOOR_SHARE * float(zero_value), 1e-12)
    if lb - f > ROUNDING * max(scale, abs(lb)):
        raise CertificateError(
            f"lower bound {lb!r} exceeds the objective {f!r} by {lb - f:.3g} (more than "
            f"rounding): the certificate is invalid; this is a bug, please report it"
        )
    return (f - lb) / scale


__all__ = ["FLOOR_SHARE", "ROUNDING", "CertificateError", "certified_gap"]
