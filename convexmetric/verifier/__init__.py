"""An independent verifier of certified results: recompute, from the data and the
papers' definitions, the objective of a fitted model and the lower bound that its
certificate (the dual point in ``result_.certificate``) proves.

It shares no code with the oracles, solvers or engine: it imports numpy, scipy and
:mod:`convexmetric.result` (the one definition of the certified gap) only, evaluates
objectives by brute force over row blocks in float64, and never reads a stored bound
or a stored objective as evidence (it compares the stored objective with its own, and
reports a mismatch). One module per formulation, each documenting its certificate:

============  =====================================================  ======================
kind          formulation                                             module
============  =====================================================  ======================
lmnn          Weinberger & Saul eq. (14), single metric               :mod:`.lmnn`
lmnn_multi    eq. (14) with one metric per class (§5.2)               :mod:`.lmnn`
lmnn_kernel   eq. (14) over the kernel's empirical features (§6)      :mod:`.lmnn`
poe           McFee & Lanckriet's (MK)POE SDPs and diagonal LPs       :mod:`.poe`
maurer        Maurer's Ω_{ψ,λ} over the PSD cone (eq. 5)             :mod:`.maurer`
============  =====================================================  ======================

>>> from convexmetric import LMNN, datasets
>>> from convexmetric import verify
>>> X, _, y, _ = datasets.load_split("iris")
>>> v = verify(LMNN().fit(X, y), X, y)
>>> v.verified, v.certified_gap <= v.tol
(True, True)
"""

from __future__ import annotations

from ._report import Fitted, Verification, VerificationError, check_finite

__all__ = ["Fitted", "Verification", "VerificationError", "verify", "verify_fitted"]

#: the certificate kinds of formulations added by :func:`convexmetric.formulations.register`
#: (the built-in ones below are the verifier's own: it imports nothing of the library)
ADDED_KINDS = {}


def kinds():
    """``{certificate kind: check}``: the built-in kinds and those registered since."""
    from . import lmnn, maurer, poe

    return {**lmnn.KINDS, **poe.KINDS, **maurer.KINDS, **ADDED_KINDS}


def verify(estimator, *fit_args, tol=None, **fit_kwargs):
    """Recompute a fitted estimator's objective and certified lower bound from its data.

    Parameters
    ----------
    estimator : a fitted certified estimator
        ``LMNN``, ``MultiMetricLMNN``, ``KernelLMNN``, ``POE``, ``MKPOE`` or
        ``OperatorSimilarity`` (convex solver), with ``result_.certificate``.
    *fit_args
        The same arguments as its ``fit`` (``X, y``; ``comparisons``; pairs ...).
    tol : float in (0, 1), optional
        The certified relative gap to verify: yours. By default the formulation's
        documented default (``1e-4``; Maurer's projected solver ``1e-6``), never the
        model's own ``tol``, which is reported (``model_tol``) but not trusted.
    **fit_kwargs
        ``fit``'s keyword arguments (``targets=`` ...).

    Returns
    -------
    Verification
        ``objective`` and ``lower_bound`` recomputed here, ``certified_gap``, ``tol``
        and ``verified`` (the gap within ``tol`` and the stored objective matching).

    Raises
    ------
    VerificationError
        The estimator carries no certificate, or one of an unknown kind.
    """
    return verify_fitted(Fitted.from_estimator(estimator), *fit_args, tol=tol, **fit_kwargs)


#: the names of ``fit``'s arguments, for messages about bad input
FIT_ARGS = {"POE": ("comparisons", "X"), "MKPOE": ("comparisons", "X")}


def verify_fitted(fitted, *fit_args, tol=None, **fit_kwargs):
    """:func:`verify` of a :class:`Fitted` view (an estimator or a saved model)."""
    names = FIT_ARGS.get(fitted.estimator, ("X", "y"))
    for k, arg in enumerate(fit_args):
        check_finite(names[k] if k < len(names) else f"argument {k + 1}", arg)
    for name, arg in fit_kwargs.items():
        check_finite(name, arg)
    cert = fitted.certificate
    table = kinds()
    check = table.get(cert.get("kind"))
    if check is None:
        known = ", ".join(sorted(table))
        raise VerificationError(f"unknown certificate kind {cert.get('kind')!r}; known: {known}")
    return check(fitted, *fit_args, tol=tol, **fit_kwargs)
