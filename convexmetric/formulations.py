"""The formulations, in one table: a formulation joins the library in one place.

Each :class:`Formulation` names, for one paper, everything the rest of the library
lists per formulation: its estimators, its exact CVXPY builder, its ``validate`` entry,
its command-line commands, how its fitted estimators are saved and the verifier of its
certificates. The parts that list formulations read this table, never a list of their
own:

=====================================  ===============================================
reader                                 reads
=====================================  ===============================================
``convexmetric solve`` / ``validate``  ``solve_commands``, ``validate_command``,
(:mod:`convexmetric.cli.main`)         ``commands``
:func:`convexmetric.validate`          ``validate``
:func:`convexmetric.model_io.          ``savers``
save_model`` (``model_kinds``)
:func:`convexmetric.verify`            ``verifier`` (below)
the vocabulary's estimator groups      ``estimators``
=====================================  ===============================================

Code is named by a dotted path ``"module:attribute"``, imported on first use (or given
as the object itself): this module imports the standard library only, so every layer
reads it without an import cycle, and ``import convexmetric`` stays light.

The verifier is independent of the library by design (it imports nothing of it), so it
keeps its own table of the built-in certificate kinds; :func:`register` hands it a new
formulation's kinds, and a test holds the built-in entries and the verifier's table
equal.

>>> sorted(FORMULATIONS)
['aroma', 'lmnn', 'maurer', 'poe', 'ssne']
>>> estimator_names("poe")
('POE', 'MKPOE')
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Formulation:
    """One paper's formulation, as the rest of the library sees it.

    Attributes
    ----------
    name : str
        The method's word on the command line and in :func:`convexmetric.validate`.
    paper : str
        The citation (author, year, equation).
    estimators : tuple of str
        The public estimators, ``"module:Class"``.
    exact : str or None
        The CVXPY builder ``"module:function"`` (None: not convex, no exact side).
    validate : str or None
        ``run(data, *, name, conic_solver, exact, random_state, callback, **settings)``
        returning a :class:`~convexmetric.validation.report.ValidationReport` (None:
        nothing to validate against).
    solve_commands, commands : tuple
        click commands of ``convexmetric solve`` and of the top-level group.
    validate_command : str or None
        The click command of ``convexmetric validate``.
    savers : tuple of (estimator class, describe function)
        ``describe(est) -> (kind, meta, arrays)`` of :mod:`convexmetric.model_kinds`
        for each estimator that can be saved; the first ``isinstance`` match wins.
    verifier : str or None
        The verifier's ``{certificate kind: check}`` table (``"module:KINDS"``).
    """

    name: str
    paper: str
    estimators: tuple = ()
    exact: object = None
    validate: object = None
    solve_commands: tuple = ()
    validate_command: object = None
    commands: tuple = ()
    savers: tuple = ()
    verifier: object = None


def resolve(ref):
    """The object a dotted path ``"module:attribute"`` names (anything else: itself)."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _cm(path):
    return f"convexmetric.{path}"


_BUILT_IN = (
    Formulation(
        "lmnn",
        "Weinberger & Saul 2009, eq. (14); multi-metric §5.2; kernel §5.3",
        estimators=(
            _cm("lmnn.estimator:LMNN"),
            _cm("lmnn.kernel:KernelLMNN"),
            _cm("lmnn.multi.estimator:MultiMetricLMNN"),
        ),
        exact=_cm("problems.lmnn:build"),
        validate=_cm("validation.lmnn:run"),
        solve_commands=(_cm("cli.lmnn:SOLVE"),),
        validate_command=_cm("cli.validate:VALIDATE_LMNN"),
        savers=(
            (_cm("lmnn.estimator:LMNN"), _cm("model_kinds:describe_lmnn")),
            (_cm("lmnn.kernel:KernelLMNN"), _cm("model_kinds:describe_kernel_lmnn")),
            (_cm("lmnn.multi.estimator:MultiMetricLMNN"), _cm("model_kinds:describe_multi_metric")),
        ),
        verifier=_cm("verifier.lmnn:KINDS"),
    ),
    Formulation(
        "poe",
        "McFee & Lanckriet 2011, Alg. 2-4 and the diagonal LPs of §4.4",
        estimators=(_cm("poe.estimators:POE"), _cm("poe.mkpoe:MKPOE")),
        exact=_cm("problems.poe:build"),
        validate=_cm("validation.poe:run"),
        solve_commands=(_cm("cli.poe:SOLVE"),),
        validate_command=_cm("cli.validate:VALIDATE_POE"),
        commands=(_cm("cli.poe:FILTER"),),
        savers=((_cm("poe.estimators:POE"), _cm("model_kinds:describe_poe")),),
        verifier=_cm("verifier.poe:KINDS"),
    ),
    Formulation(
        "maurer",
        "Maurer 2008, eq. (5)",
        estimators=(_cm("maurer.estimators:OperatorSimilarity"), _cm("maurer.hpca:HyperbolicPCA")),
        exact=_cm("problems.maurer:build"),
        validate=_cm("validation.maurer:run"),
        solve_commands=(_cm("cli.maurer:SOLVE"),),
        validate_command=_cm("cli.validate:VALIDATE_MAURER"),
        savers=(
            (_cm("maurer.estimators:OperatorSimilarity"), _cm("model_kinds:describe_pairs")),
            (_cm("maurer.hpca:HyperbolicPCA"), _cm("model_kinds:describe_pairs")),
        ),
        verifier=_cm("verifier.maurer:KINDS"),
    ),
    Formulation(
        "aroma",
        "Crammer & Chechik 2012, Alg. 1-2; OASIS (Chechik et al. 2010)",
        estimators=(
            _cm("aroma.estimators:DiagonalAROMA"),
            _cm("aroma.estimators:FactoredAROMA"),
            _cm("aroma.estimators:OASIS"),
        ),
        exact=_cm("problems.bilinear:build_batch"),
        validate=_cm("validation.aroma:run"),
        solve_commands=(_cm("cli.aroma:SOLVE"), _cm("cli.oasis:SOLVE")),
        validate_command=_cm("cli.validate:VALIDATE_AROMA"),
        savers=tuple(
            (_cm(f"aroma.estimators:{c}"), _cm("model_kinds:describe_bilinear"))
            for c in ("DiagonalAROMA", "FactoredAROMA", "OASIS")
        ),
    ),
    Formulation(
        "ssne",
        "Batra & Shakhnarovich, eq. (3) (not convex: no exact side)",
        estimators=(_cm("ssne.estimator:SSNE"),),
        solve_commands=(_cm("cli.ssne:SOLVE"),),
        savers=((_cm("ssne.estimator:SSNE"), _cm("model_kinds:describe_ssne")),),
    ),
)

#: name -> :class:`Formulation`, the built-in ones first; change it only through
#: :func:`register` and :func:`unregister`
FORMULATIONS = {f.name: f for f in _BUILT_IN}


def register(formulation):
    """Add a formulation to every part of the library that lists formulations.

    Raises ValueError when its name is taken. Undo with :func:`unregister`.
    """
    if not isinstance(formulation, Formulation):
        raise TypeError(f"register takes a Formulation; got {type(formulation).__name__}.")
    if formulation.name in FORMULATIONS:
        raise ValueError(f"a formulation named {formulation.name!r} is already registered.")
    kinds = dict(resolve(formulation.verifier) or {})
    if kinds:
        from . import verifier

        taken = sorted(set(kinds) & set(verifier.kinds()))
        if taken:
            raise ValueError(f"certificate kinds {taken} are already verified.")
        verifier.ADDED_KINDS.update(kinds)
    FORMULATIONS[formulation.name] = formulation


def unregister(name):
    """Remove a formulation :func:`register` added (the built-in ones stay)."""
    if name not in FORMULATIONS or any(f.name == name for f in _BUILT_IN):
        raise ValueError(f"{name!r} is not a registered formulation (built-in ones stay).")
    formulation = FORMULATIONS.pop(name)
    if formulation.verifier is not None:
        from . import verifier

        for kind in resolve(formulation.verifier):
            verifier.ADDED_KINDS.pop(kind, None)


def get(name, role):
    """The formulation ``name``, which must have ``role`` (a field): ValueError naming the
    formulations that have one."""
    f = FORMULATIONS.get(name)
    if f is None or not getattr(f, role):
        having = tuple(n for n, g in FORMULATIONS.items() if getattr(g, role))
        raise ValueError(f"The 'paper' parameter must be one of {having}. Got {name!r} instead.")
    return f


def estimator_names(name):
    """The class names of a formulation's estimators (nothing imported)."""
    refs = FORMULATIONS[name].estimators
    return tuple(e.rpartition(":")[2] if isinstance(e, str) else e.__name__ for e in refs)


def commands(role):
    """``{command name: click command}`` of every formulation: ``role`` is
    ``"solve_commands"``, ``"validate_command"`` or ``"commands"``."""
    out = {}
    for f in FORMULATIONS.values():
        refs = getattr(f, role)
        for ref in refs if isinstance(refs, tuple) else (refs,) if refs else ():
            cmd = resolve(ref)
            out[cmd.name] = cmd
    return out


def savers():
    """``(estimator class, describe)`` pairs of every formulation, in table order."""
    return [(resolve(cls), resolve(fn)) for f in FORMULATIONS.values() for cls, fn in f.savers]


__all__ = [
    "FORMULATIONS",
    "Formulation",
    "commands",
    "estimator_names",
    "get",
    "register",
    "resolve",
    "savers",
    "unregister",
]
