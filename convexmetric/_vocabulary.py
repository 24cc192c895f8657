"""The shared words: one meaning per parameter name, in every estimator.

:data:`WORDS` maps each parameter name that more than one estimator takes (and the
names the rules below single out) to its meaning and to the estimators that take it;
:data:`RETIRED` lists names no estimator may take (with what to use instead);
``tests/test_vocabulary.py`` walks every public estimator's signature against both, and
README.md shows :func:`markdown` of this table.

The rules, in short: ``max_iter`` caps the whole fit's iterations (``n_iter_`` never
exceeds it); ``tol`` is the certified relative gap of the batch convex learners, or the
documented stop of the others; ``time_limit`` is seconds for the whole fit;
``random_state`` seeds every random choice; ``verbose`` logs and never prints;
``gamma`` is only ever a kernel width; a weight is named for what it weighs. The solvers'
settings objects follow the same rule (:data:`SETTINGS_WORDS`): ``max_iter`` counts
iterations, ``max_evaluations`` evaluations, ``stage_iter`` one stage's iterations.

>>> WORDS["gamma"].meaning
'Width γ of the RBF kernel exp(−γ‖x − y‖²); only beside `kernel`.'
"""

from __future__ import annotations

from dataclasses import dataclass

from .formulations import estimator_names

# the estimator groups, as the formulations table lists them
_LMNNS = estimator_names("lmnn")
_POES = estimator_names("poe")
_MAURER = estimator_names("maurer")
_ONLINE = estimator_names("aroma")
_ALL = (*_LMNNS, *_POES, *_MAURER, *_ONLINE, *estimator_names("ssne"))


@dataclass(frozen=True)
class Word:
    """One shared parameter name: its ``meaning`` and the ``estimators`` that take it."""

    meaning: str
    estimators: tuple


#: the batch convex learners: their ``tol`` is a certified relative gap
CERTIFIED = (*_LMNNS, *_POES, "OperatorSimilarity")

WORDS = {
    "max_iter": Word(
        "Iterations at most over the whole fit (every stage, pass and restart together); "
        "`n_iter_` never exceeds it. One iteration is a solver step (LMNN, POE, Maurer), "
        "an epoch (SSNE) or a triplet (AROMA, OASIS).",
        (*_LMNNS, *_POES, "OperatorSimilarity", "SSNE", *_ONLINE),
    ),
    "tol": Word(
        "Batch convex learners: the certified relative gap (objective − lower bound)/"
        '|objective| that status "optimal" means. SSNE (not convex): its documented '
        "plateau stop.",
        (*CERTIFIED, "SSNE"),
    ),
    "time_limit": Word(
        "Seconds for the whole fit; past it the best point so far is kept, with status "
        '"user_limit" (no ConvergenceWarning: the user asked).',
        (*_LMNNS, *_POES, "OperatorSimilarity", "SSNE"),
    ),
    "backend_timeout": Word(
        'With backend="dask": seconds one block evaluation on the cluster may take, its '
        "recoveries from lost workers included, before a DaskBackendError (a closed Client "
        "or a lost scheduler ends the fit at once).",
        ("LMNN",),
    ),
    "random_state": Word(
        "Seeds every random choice of the fit (int, numpy Generator or None); taken for a "
        "uniform interface by learners that make none.",
        _ALL,
    ),
    "verbose": Word(
        "0: silent; 1: log progress and a summary (INFO, the estimator's logger, on stderr "
        "when nothing else handles it). Never prints, never changes the result.",
        _ALL,
    ),
    "gamma": Word(
        "Width γ of the RBF kernel exp(−γ‖x − y‖²); only beside `kernel`.",
        ("POE", "KernelLMNN"),
    ),
    "kernel": Word(
        "The kernel the inputs are compared through (None: the features themselves).",
        ("POE", "KernelLMNN", *_MAURER),
    ),
    "n_components": Word(
        "Dimension of `transform`'s output (at most).",
        ("LMNN", *_MAURER, "SSNE"),
    ),
    "solver": Word(
        'The algorithm: "subgradient" (the large-scale solver), "exact" (the CVXPY '
        'problem, solved by `conic_solver`), or Maurer\'s "sgd".',
        (*_LMNNS, *_POES, "OperatorSimilarity"),
    ),
    "conic_solver": Word(
        'The conic solver of solver="exact": "CLARABEL" or "SCS".',
        ("LMNN", "MultiMetricLMNN", *_POES),
    ),
    "learning_rate": Word(
        "The first step size of a stochastic solver.",
        ("OperatorSimilarity", "SSNE"),
    ),
    "k": Word(
        "Target neighbours per point (metric-learn's `n_neighbors`).",
        _LMNNS,
    ),
    "predict_k": Word(
        "The k of the kNN vote of `predict` and `loo_error` (default: `k`).",
        _LMNNS,
    ),
    "mu": Word(
        "Weight of LMNN's push (hinge) term; the pull term weighs 1 − mu "
        "(metric-learn's `regularization` is 1 − mu).",
        _LMNNS,
    ),
    "beta": Word("Weight of POE's hinge losses against the trace regulariser.", _POES),
    "reg_weight": Word("Weight of the regulariser (Maurer's λ: λ‖A‖/√m).", ("OperatorSimilarity",)),
    "loss_weight": Word(
        "Weight of the mean squared loss against the group norm (SSNE's λ·Q).", ("SSNE",)
    ),
    "margin": Word("The margin of similar pairs (Maurer's γ₁).", ("OperatorSimilarity",)),
    "margin_neg": Word(
        "The margin of dissimilar pairs (Maurer's γ₋₁; None: `margin`).",
        ("OperatorSimilarity",),
    ),
    "diagonal": Word("Learn a diagonal matrix (POE's LPs of §4.4).", _POES),
    "filter_graph": Word("Filter the comparisons first (POE §2.2).", _POES),
    "n_pairs": Word("Pairs the pair oracle draws from X, y.", _MAURER),
    "oracle": Word('How pairs are drawn from labels: "balanced" or "labels".', _MAURER),
    "mistake_driven": Word(
        "Update only on a mistake (qᵀWp ≤ 0) instead of inside the margin.", _ONLINE
    ),
    "r": Word("AROW's regulariser r > 0 (small: aggressive updates).", _ONLINE[:2]),
}

#: names no estimator may take: why, and what to use instead
RETIRED = {
    "lam": "weighs the regulariser in one paper and the loss in another: use reg_weight "
    "(OperatorSimilarity) or loss_weight (SSNE)",
    "gamma_neg": "a margin, not a kernel width: use margin_neg",
    "n_epochs": "an iteration cap: use max_iter",
    "n_iter": "an iteration cap: use max_iter",
    "n_neighbors": "target neighbours in metric-learn, the vote's k in scikit-learn: use k "
    "or predict_k (convexmetric.metric_learn.LMNN takes metric-learn's meaning)",
}


#: the words of the solvers' settings objects (the keyword-only dataclasses ``*Settings``),
#: one name per idea as in :data:`WORDS`: a field name two settings objects share is here,
#: and a field whose ``#:`` comment matches ``against`` uses the word for another idea
#: (``tests/test_vocabulary.py`` reads every settings class's fields and comments)
@dataclass(frozen=True)
class Field:
    """One shared settings field: its ``meaning``, and a regex its comment must not match."""

    meaning: str
    against: str = ""


SETTINGS_WORDS = {
    "max_iter": Field(
        "Iterations at most over the whole run, every stage included (a step, an L-BFGS "
        "iteration, a pair draw, an epoch).",
        against=r"evaluation|before|per stage",
    ),
    "max_evaluations": Field(
        "Objective (or smoothed objective and gradient) evaluations at most over the run.",
        against=r"iteration",
    ),
    "stage_iter": Field("Iterations at most within one stage.", against=r"evaluation|total"),
    "max_stages": Field("Stages at most."),
    "tol": Field(
        'The certified relative gap that status "optimal" means (SSNE, not convex: its '
        "documented plateau stop).",
        against=r"per stage",
    ),
    "time_limit": Field('Seconds for the whole run (status "user_limit").'),
    "callback": Field("Called with (count, objective, step or σ) after each; True stops."),
    "random_state": Field("Seeds every random choice of the run."),
    "rtol": Field("The relative improvement below which a stage or run counts as stalled."),
    "patience": Field("Iterations in a row without such an improvement that end the run."),
    "stalls": Field("Stalled stages in a row that end the run."),
    "sigma0": Field("The first smoothing width σ."),
    "sigma_factor": Field("σ ← σ·factor between stages."),
    "sigma_min": Field("σ never goes below this."),
    "recenter": Field("Move the dual prox centre between stages."),
    "refine": Field('The refinement after the subgradient phase (True, "fista", False).'),
    "refine_settings": Field("Overrides of the refinement's StageSettings."),
    "precondition": Field("Solve in whitened coordinates (an exact change of variables)."),
    "block_size": Field("Items handled together in one block (rows of a search, draws)."),
    "learning_rate": Field("The first step size of a stochastic solver."),
}

#: names no settings field may take: why, and what to use instead
RETIRED_FIELDS = {
    "max_iterations": "a second name for iterations at most over the run: use max_iter",
    "gap_tol": "a second name for the certified relative gap: use tol",
    "n_epochs": "an iteration cap (an epoch is the iteration of an epoch-based solver): use "
    "max_iter",
}

#: the public methods' keywords follow :data:`WORDS` too: ``k`` is the target neighbours
#: of ``__init__`` only; the vote's k is ``predict_k`` (``loo_error(predict_k=)``)
METHOD_RETIRED = {"k": "the vote's k in a method: use predict_k"}

#: methods whose ``k`` is another idea by an older name of the field: AROMA's and OASIS's
#: ``score(k=)`` is precision@k's depth (the retrieval literature's P@k; these estimators
#: have no target neighbours)
METHOD_EXCEPTIONS = {
    f"{name}.score": "k is precision@k's depth (P@k)"
    for name in ("DiagonalAROMA", "FactoredAROMA", "OASIS")
}


def markdown():
    """The table as Markdown (README.md shows it; a test keeps the two equal)."""
    rows = ["| word | meaning | taken by |", "|---|---|---|"]
    for name, word in WORDS.items():
        users = ", ".join(word.estimators) if word.estimators != _ALL else "every estimator"
        meaning = word.meaning.replace("|", "\\|")  # a pipe would end the cell
        rows.append(f"| `{name}` | {meaning} | {users} |")
    return "\n".join(rows)
