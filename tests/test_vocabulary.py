"""One vocabulary (issue 37): every public estimator's parameters against the table of
shared words (``convexmetric._vocabulary``), the renamed names, ``ConvergenceWarning``,
``set_output`` and the BLAS-thread setting."""

from __future__ import annotations

import ast
import inspect
import os
import pathlib
import re
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from test_contract import CASES, ESTIMATORS, _make

import convexmetric
from convexmetric._renamed import is_deprecated
from convexmetric._vocabulary import (
    CERTIFIED,
    METHOD_EXCEPTIONS,
    METHOD_RETIRED,
    RETIRED,
    RETIRED_FIELDS,
    SETTINGS_WORDS,
    WORDS,
    markdown,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _params(name):
    """The estimator's parameters, the deprecated old names left out."""
    sig = inspect.signature(getattr(convexmetric, name).__init__).parameters
    return {p: v.default for p, v in sig.items() if p != "self" and not is_deprecated(v.default)}


def _doc_entry(name, param, seen=()):
    """The docstring text of ``param`` in ``name``'s Parameters section, following
    "As in :class:`X`" to the class it names."""
    doc = inspect.getdoc(getattr(convexmetric, name))
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\n" + "Attributes", 1)[0]
    lines, text = section.splitlines(), None
    for i, line in enumerate(lines):
        head = line.split(" : ", 1)[0]
        if not line.startswith(" ") and param in [h.strip() for h in head.split(",")]:
            body = []
            for nxt in lines[i + 1 :]:
                if nxt and not nxt.startswith(" "):
                    break
                body.append(nxt.strip())
            text = line + " " + " ".join(body)
            break
    assert text is not None, f"{name}'s docstring does not document {param!r}"
    other = re.search(r"As in :class:`~?(?:convexmetric\.)?(\w+)`", text)
    if other and other.group(1) not in seen and other.group(1) != name:
        return text + " " + _doc_entry(other.group(1), param, (*seen, name))
    return text


def _problems(classes):
    """Every way the estimators ``classes`` (name -> class) break the table: a shared word
    missing from it, a word whose users differ from the table's, a retired name taken
    other than as a deprecated alias, ``gamma`` without ``kernel``."""
    out, users = [], {}
    for name, cls in classes.items():
        sig = inspect.signature(cls.__init__).parameters
        live = [p for p, v in sig.items() if p != "self" and not is_deprecated(v.default)]
        for p in live:
            users.setdefault(p, set()).add(name)
        out += [f"{name} takes the retired {p!r}: {RETIRED[p]}" for p in live if p in RETIRED]
        if "gamma" in live and "kernel" not in live:
            out.append(f"{name}'s gamma is not a kernel width (no kernel)")
    for p, who in users.items():
        if len(who) > 1 and p not in WORDS:
            out.append(f"shared word {p!r} ({sorted(who)}) is missing from the table")
    for word, entry in WORDS.items():
        mine = {n for n in entry.estimators if n in classes}
        if mine != users.get(word, set()):
            out.append(
                f"{word!r}: the table says {sorted(mine)}, the signatures "
                f"{sorted(users.get(word, set()))}"
            )
    return out


def test_every_estimator_follows_the_table():
    assert _problems({n: getattr(convexmetric, n) for n in ESTIMATORS}) == []


def test_the_check_catches_a_word_used_against_the_table():
    class Margin(BaseEstimator):
        def __init__(self, *, gamma=1.0, lam=0.1, max_iter=10, wobble=0, random_state=None):
            pass

    class Wobbly(BaseEstimator):
        def __init__(self, *, wobble=0, n_neighbors=5):
            pass

    problems = _problems({"LMNN": convexmetric.LMNN, "Margin": Margin, "Wobbly": Wobbly})
    text = "\n".join(problems)
    assert "Margin's gamma is not a kernel width" in text
    assert "Margin takes the retired 'lam'" in text and "Wobbly takes the retired" in text
    assert "shared word 'wobble'" in text
    assert "'max_iter': the table says ['LMNN'], the signatures ['LMNN', 'Margin']" in text


def test_gamma_is_documented_as_a_kernel_width():
    for name in WORDS["gamma"].estimators:
        assert re.search(r"width", _doc_entry(name, "gamma"), re.I), name


@pytest.mark.parametrize("name", WORDS["backend_timeout"].estimators)
def test_backend_timeout_is_documented_and_validated(name):
    assert "seconds one block evaluation" in _doc_entry(name, "backend_timeout"), name
    est, args, *_ = _make(name, backend_timeout=0)
    words = r"'backend_timeout' parameter of \w+ must be a float in the range \(0, inf\)\. Got 0"
    with pytest.raises(ValueError, match=words):
        est.fit(*args)


@pytest.mark.parametrize("name", WORDS["time_limit"].estimators)
def test_time_limit_is_documented_and_runs_as_the_whole_fit(name):
    assert "whole fit" in _doc_entry(name, "time_limit"), name
    est, args, *_ = _make(name, time_limit=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*args)
    assert est.result_.status == "user_limit", name


@pytest.mark.parametrize("name", WORDS["tol"].estimators)
def test_tol_is_a_certified_gap_or_a_documented_stop(name):
    entry = _doc_entry(name, "tol")
    if name in CERTIFIED:
        assert re.search("certified", entry, re.I), name
    else:
        assert re.search(r"stop", entry), name


@pytest.mark.parametrize("name", WORDS["max_iter"].estimators)
def test_max_iter_caps_the_whole_fit(name):
    cap = 3 if name == "SSNE" else 5
    est, args, *_ = _make(name, max_iter=cap)
    if name == "SSNE":
        est.set_params(n_restarts=3, tol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*args)
    assert 0 < est.n_iter_ <= cap, (name, est.n_iter_)


def test_the_readme_shows_the_table():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        assert markdown() in fh.read()


RENAMED = [
    ("OperatorSimilarity", "lam", "reg_weight", 0.1),
    ("OperatorSimilarity", "gamma", "margin", 2.0),
    ("OperatorSimilarity", "gamma_neg", "margin_neg", 0.5),
    ("SSNE", "lam", "loss_weight", 10.0),
    ("LMNN", "n_neighbors", "predict_k", 5),
    ("KernelLMNN", "n_neighbors", "predict_k", 5),
    ("MultiMetricLMNN", "n_neighbors", "predict_k", 5),
]


@pytest.mark.parametrize(("name", "old", "new", "value"), RENAMED)
def test_old_names_warn_and_mean_the_new_name(name, old, new, value):
    default = _params(name)[new]
    est, args, *_ = _make(name, **{old: value, new: default})
    with pytest.warns(FutureWarning, match=f"'{old}' parameter of {name} was renamed '{new}'"):
        est.fit(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        ref = _make(name, **{new: value})[0].fit(*args)
    attr = CASES[name][3]
    np.testing.assert_allclose(getattr(est, attr), getattr(ref, attr))
    with pytest.raises(ValueError, match=f"got both '{old}' and '{new}'"):
        _make(name, **{old: value, new: value + 1})[0].fit(*args)


def test_ssne_n_epochs_is_max_iter_per_restart():
    X, y = _make("SSNE")[1]
    with pytest.warns(FutureWarning, match="pass max_iter=6"):
        old = convexmetric.SSNE(
            n_components=3, n_epochs=3, n_restarts=2, tol=0.0, random_state=0
        ).fit(X, y)
    new = convexmetric.SSNE(n_components=3, max_iter=6, n_restarts=2, tol=0.0, random_state=0)
    np.testing.assert_array_equal(old.W_, new.fit(X, y).W_)
    assert old.n_iter_ == 6


def test_poe_conic_solver_names_move_to_conic_solver():
    est, args, *_ = _make("POE", solver="SCS", max_iter=None)
    with pytest.warns(FutureWarning, match="conic_solver='SCS'"):
        est.fit(*args)
    assert est.result_.solver == "SCS"


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("LMNN", {"max_iter": 3}),
        ("KernelLMNN", {"max_iter": 3}),
        ("MultiMetricLMNN", {"max_iter": 4}),
        ("POE", {"max_iter": 2}),
        ("MKPOE", {"max_iter": 2}),
        ("OperatorSimilarity", {"solver": "subgradient", "max_iter": 3}),
        ("SSNE", {"max_iter": 1, "tol": 1e-12}),
    ],
)
def test_every_batch_learner_warns_when_it_stops_short(name, params):
    est, args, *_ = _make(name, **params)
    with pytest.warns(ConvergenceWarning, match=f"{name}.*max_iter"):
        est.fit(*args)


TRANSFORMERS = [n for n in ESTIMATORS if hasattr(getattr(convexmetric, n), "transform")]


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_every_transformer_names_its_outputs_and_sets_pandas_output(name):
    pd = pytest.importorskip("pandas")
    est, args, *_ = _make(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(*args)
    X = _transform_input(name, args)
    Z = np.asarray(est.transform(X))
    names = est.get_feature_names_out()
    assert len(names) == Z.shape[1] and names[0] == f"{name.lower()}0"
    out = est.set_output(transform="pandas").transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(names)
    np.testing.assert_allclose(out.to_numpy(), Z)


def _transform_input(name, args):
    """What ``transform`` takes: the items of a POE bundle, else ``X``."""
    return args[0].items if name in ("POE", "MKPOE") else args[0]


def test_blas_threads_default_to_one_and_can_be_raised():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from convexmetric._threads import one_blas_thread

    def blas():
        info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        return info[0]["num_threads"] if info else None

    outside = blas()
    assert convexmetric.get_config() == {"blas_threads": 1}
    with one_blas_thread():
        assert blas() in (1, None)
    with convexmetric.config_context(blas_threads=None), one_blas_thread():
        assert blas() == outside
    with convexmetric.config_context(blas_threads=2), one_blas_thread():
        assert blas() in (min(2, outside or 2), None)
    assert convexmetric.get_config() == {"blas_threads": 1}
    with pytest.raises(ValueError, match="'blas_threads'"):
        convexmetric.set_config(blas_threads=0)


def test_aroma_fit_time_max_iter_is_deprecated():
    X, y = _make("OASIS")[1]
    est = convexmetric.OASIS(max_iter=50, random_state=0)
    with pytest.warns(FutureWarning, match=r"set_params\(max_iter=20\)"):
        est.fit(X, y, max_iter=20)
    assert est.n_iter_ == 20
    ref = convexmetric.OASIS(max_iter=20, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.W_, ref.W_)


# -- below the estimators: settings objects and public methods (issue 66) ----------------
def _settings_fields(sources):
    """``{class: {field: comment}}`` of every ``*Settings`` class in ``sources`` (path ->
    text), the comment being the field's ``#:`` text (on its line or the lines above)."""
    out = {}
    for text in sources.values():
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.ClassDef) and node.name.endswith("Settings")):
                continue
            fields = out.setdefault(node.name, {})
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                    above, i = [], st.lineno - 2
                    while i >= 0 and lines[i].strip().startswith("#:"):
                        above.insert(0, lines[i].strip()[2:])
                        i -= 1
                    own = lines[st.lineno - 1].partition("#:")[2]
                    fields[st.target.id] = " ".join([*above, own]).strip()
    return out


def _settings_problems(classes):
    """Every ``Class.field`` that breaks the settings table: a retired name, a shared
    name missing from it, or a comment that uses a word for another idea."""
    out, users = {}, {}
    for cls, fields in classes.items():
        for name, comment in fields.items():
            users.setdefault(name, []).append(cls)
            if name in RETIRED_FIELDS:
                out[f"{cls}.{name}"] = RETIRED_FIELDS[name]
            word = SETTINGS_WORDS.get(name)
            if word is not None and word.against and re.search(word.against, comment, re.I):
                out[f"{cls}.{name}"] = f"{comment!r} is not {name}: {word.meaning}"
    for name, who in users.items():
        if len(who) > 1 and name not in SETTINGS_WORDS and name not in RETIRED_FIELDS:
            for cls in who:
                out[f"{cls}.{name}"] = f"shared field {name!r} ({sorted(who)}) is not in the table"
    return out


def _library_sources():
    root = pathlib.Path(convexmetric.__file__).parent
    return {p: p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}


def test_settings_objects_follow_the_table():
    classes = _settings_fields(_library_sources())
    assert {"LMNNSettings", "MultiSettings", "SmoothingSettings", "SSNESettings"} <= set(classes)
    problems = _settings_problems(classes)
    assert problems == {}


def test_the_settings_check_catches_a_field_against_the_table():
    sources = {
        "a.py": "class ASettings:\n    max_iter: int = 5  #: total gradient evaluations\n"
        "    wobble: int = 1\n    #: seconds\n    gap_tol: float = 0.1\n",
        "b.py": "class BSettings:\n    #: iterations at most, over all stages\n"
        "    max_iter: int = 5\n    wobble: int = 2\n",
    }
    problems = _settings_problems(_settings_fields(sources))
    assert set(problems) == {
        "ASettings.max_iter",
        "ASettings.gap_tol",
        "ASettings.wobble",
        "BSettings.wobble",
    }
    assert "use tol" in problems["ASettings.gap_tol"]


def _method_problems(classes):
    out = []
    for name, cls in classes.items():
        for meth, fn in inspect.getmembers(cls, inspect.isfunction):
            if meth.startswith(("_", "set_")):  # set_*_request: scikit-learn's routing
                continue
            for p, v in inspect.signature(fn).parameters.items():
                pending = f"{name}.{meth}" in METHOD_EXCEPTIONS
                if p in METHOD_RETIRED and not is_deprecated(v.default) and not pending:
                    out.append(f"{name}.{meth}({p}=): {METHOD_RETIRED[p]}")
    return out


def test_public_methods_take_no_retired_keyword():
    assert _method_problems({n: getattr(convexmetric, n) for n in ESTIMATORS}) == []

    class Voter(BaseEstimator):
        def loo_error(self, k=None):
            pass

    assert _method_problems({"Voter": Voter}) == ["Voter.loo_error(k=): " + METHOD_RETIRED["k"]]


def test_loo_error_k_is_renamed_predict_k():
    est, (X, y), *_ = _make("LMNN", max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    with pytest.warns(FutureWarning, match="'k' parameter of loo_error was renamed 'predict_k'"):
        old = est.loo_error(k=1)
    assert old == est.loo_error(predict_k=1) == est.loo_error(1)
    with pytest.raises(ValueError, match="both 'k' and 'predict_k'"):
        est.loo_error(1, k=1)
