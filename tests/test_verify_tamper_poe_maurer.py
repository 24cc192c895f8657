"""Issue 63's property: tampering with random fields of fitted POE, MKPOE and
OperatorSimilarity estimators (and of a saved POE model) never gets "verified" unless
the claim is true, truth being the exact optimum of the problem the tampered model
states, solved by CLARABEL (status checked) on small instances. A seeded loop, a few
seconds long."""

import copy
import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import poe_instance

from convexmetric import verify
from convexmetric.cli.main import main
from convexmetric.maurer.estimators import OperatorSimilarity
from convexmetric.maurer.pairs import balanced_pairs
from convexmetric.poe.estimators import MKPOE, POE
from convexmetric.problems import maurer as PM
from convexmetric.problems import poe as PP
from convexmetric.verifier import VerificationError

#: CLARABEL's accuracy on these instances (relative)
CONIC = 1e-6


def _cases():
    X, C = poe_instance(10, 50, seed=4, flip=0.1)
    rng = np.random.default_rng(1)
    A = rng.normal(size=(10, 10))
    K1, K2 = A @ A.T / 10 + 0.1 * np.eye(10), X @ X.T + 0.5 * np.eye(10)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 24)
    Xm = rng.standard_normal((3, 3))[y] * 1.5 + rng.standard_normal((24, 3))
    Xm = Xm / (2 * np.linalg.norm(Xm - Xm.mean(0), axis=1).max())
    pairs = balanced_pairs(Xm, y, 50, random_state=0)
    return {
        "lpoe": (POE(beta=10.0).fit(C, X), (C, X)),
        "diagonal": (POE(beta=10.0, diagonal=True).fit(C, X), (C, X)),
        "kpoe": (POE(beta=10.0, kernel="precomputed").fit(C, K1), (C, K1)),
        "mkpoe": (MKPOE(beta=10.0).fit(C, [K1, K2]), (C, [K1, K2])),
        "maurer-hs": (
            OperatorSimilarity(reg_weight=0.05, solver="subgradient").fit(pairs),
            (pairs,),
        ),
        "maurer-trace": (
            OperatorSimilarity(
                reg_weight=0.05, solver="subgradient", regularizer="trace", margin_neg=2.0
            ).fit(pairs),
            (pairs,),
        ),
    }


def _blocks(est, items):
    if isinstance(est, POE) and est.kernel is None:
        return PP.lpoe_blocks(items)
    return PP.kernel_blocks(items if isinstance(items, list) else [items])


def _optimum(est, args):
    if isinstance(est, OperatorSimilarity):
        (pairs,) = args
        _, value, status, _ = PM.solve(
            pairs.differences,
            pairs.r,
            est.reg_weight,
            est.margin,
            est.margin_neg,
            est.regularizer,
            solver="CLARABEL",
        )
        assert status == "optimal"
        return value
    C, items = args
    _, value, status, _ = PP.solve(
        _blocks(est, items), C, est.beta, diagonal=est.diagonal, solver="CLARABEL"
    )
    assert status in ("optimal", "optimal_inaccurate")
    return value


def _applied(est, args):
    """The objective of the map the model applies (``transform``'s: ``components_``, or
    ``coef_``; a bare ``W_`` where there is no factor), written here; ``None`` when that
    map is not a feasible point of the stated problem."""
    if isinstance(est, OperatorSimilarity):
        (pairs,) = args
        A = est.coef_ @ est.coef_.T
        return PM.objective(
            A,
            pairs.differences,
            pairs.r,
            est.reg_weight,
            est.margin,
            est.margin_neg,
            est.regularizer,
        )
    C, items = args
    if getattr(est, "components_", None) is not None:
        Ns = est.components_ if isinstance(est.components_, list) else [est.components_]
        Ws = [N.T @ N for N in Ns]
        if est.diagonal:
            if any(np.count_nonzero(W - np.diag(np.diag(W))) for W in Ws):
                return None
            Ws = [np.diag(W) for W in Ws]
    else:
        Ws = est.W_ if isinstance(est.W_, list) else [est.W_]
        low = [W.min() if est.diagonal else np.linalg.eigvalsh(W)[0] for W in Ws]
        if min(low) < -1e-12 * max(np.abs(W).max() for W in Ws):
            return None
    return PP.objective(Ws, _blocks(est, items), C, est.beta)


def _true(est, args, v, cache):
    """Whether the verified claim holds: the applied map is feasible, its objective is
    the one reported and within the verified tol of the stated problem's optimum."""
    key = (type(est).__name__, repr(sorted(est.get_params().items())), id(args[0]))
    if key not in cache:
        cache[key] = _optimum(est, args)
    best, f = cache[key], _applied(est, args)
    if f is None or abs(f - v.objective) > 1e-8 * max(1.0, abs(f)):
        return False
    return best * (1 - CONIC) <= f <= best * (1 + v.tol + CONIC)


def _forms(est):
    """The names of the estimator's stored forms of the map."""
    return [
        n for n in ("W_", "components_", "coef_", "embedding_") if getattr(est, n, None) is not None
    ]


def _tamper(est, rng):
    """One random edit of a copy of ``est``: ``(description, estimator)``."""
    est = copy.deepcopy(est)
    cert = est.result_.certificate
    dual = "alpha" if "alpha" in cert else "lam"
    what = rng.choice(
        ["scale all", "scale one", "dual", "radius", "objective", "param", "indefinite"]
    )
    factor = float(rng.choice([0.5, 0.9, 0.999, 1.001, 1.1, 2.0]))
    if what == "scale all":
        for n in _forms(est):
            value = getattr(est, n)
            power = 1.0 if n == "W_" else 0.5
            setattr(
                est,
                n,
                [factor**power * v for v in value]
                if isinstance(value, list)
                else factor**power * value,
            )
    elif what == "scale one":
        n = str(rng.choice(_forms(est)))
        value = getattr(est, n)
        setattr(est, n, [factor * v for v in value] if isinstance(value, list) else factor * value)
    elif what == "dual":  # mostly inside the box, where only the bound can tell
        noise = rng.uniform(1 - 0.2 * factor, 1 + 0.02 * factor, len(cert[dual]))
        cert[dual] = np.clip(cert[dual] * noise, 0.0, cert[dual].max() * (1 + 1e-13))
    elif what == "radius":
        cert["radius"] = float(cert["radius"]) * factor
    elif what == "objective":
        est.result_.objective = est.result_.objective * factor
    elif what == "indefinite" and not isinstance(est, OperatorSimilarity):
        del est.components_, est.embedding_  # a bare metric, shifted off the cone
        shift = (lambda W: W - 0.01) if est.diagonal else (lambda W: W - 0.01 * np.eye(len(W)))
        est.W_ = [shift(W) for W in est.W_] if isinstance(est.W_, list) else shift(est.W_)
    else:
        name = "reg_weight" if isinstance(est, OperatorSimilarity) else "beta"
        est.set_params(**{name: getattr(est, name) * factor})
    return f"{what} ×{factor}", est


def test_tampered_estimators_are_verified_only_when_true():
    cases, cache, rng = _cases(), {}, np.random.default_rng(63)
    counts = {"verified": 0, "refused": 0}
    for _ in range(80):
        name = str(rng.choice(list(cases)))
        honest, args = cases[name]
        what, est = _tamper(honest, rng)
        try:
            v = verify(est, *args)
            if not v.verified and np.isfinite(v.objective) and rng.random() < 0.5:
                est.result_.objective = v.objective  # the adversary re-syncs the claim
                v = verify(est, *args)
        except VerificationError:
            counts["refused"] += 1
            continue
        counts["verified" if v.verified else "refused"] += 1
        if v.verified:
            assert _true(est, args, v, cache), f"{name}, {what}: {v}"
    assert counts["refused"] > 20 and counts["verified"] > 3  # both outcomes were tried


@pytest.fixture(scope="module")
def saved_poe(tmp_path_factory):
    out = tmp_path_factory.mktemp("tamper") / "m"
    data = ["--n-comparisons", "200", "--seed", "3"]
    r = CliRunner().invoke(main, ["solve", "poe", "--kind", "linear", *data, "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out, data


def _edit_saved(src, dst, rng):
    """A copy of the saved model with one random file edited; what was edited."""
    shutil.copytree(src, dst)
    arrays = [
        "components.npy",
        "W.npy",
        "fitted__W_.npy",
        "fitted__components_.npy",
        "certificate__lam.npy",
    ]
    choice = str(rng.choice([*arrays, "beta", "radius", "objective", "tol"]))
    factor = float(rng.choice([0.5, 0.99, 1.01, 2.0]))
    if choice.endswith(".npy"):
        np.save(dst / choice, factor * np.load(dst / choice))
        return f"{choice} ×{factor}"
    meta = json.loads((dst / "model.json").read_text())
    proof = meta["verification"]
    if choice == "beta":
        proof["params"]["beta"] *= factor
    elif choice == "radius":
        proof["certificate"]["radius"] *= factor
    elif choice == "objective":
        proof["objective"] *= factor
    else:
        proof["params"]["tol"] = 1.0
    (dst / "model.json").write_text(json.dumps(meta))
    return f"{choice} ×{factor}"


def test_tampered_saved_models_are_verified_only_when_true(saved_poe, tmp_path):
    from convexmetric.validation.poe import default_data

    src, data = saved_poe
    C, X, _ = default_data("linear", 20, 200, 3)
    rng = np.random.default_rng(630)
    for k in range(16):
        what = _edit_saved(src, tmp_path / f"m{k}", rng)
        r = CliRunner().invoke(
            main, ["verify", "--model", str(tmp_path / f"m{k}"), *data, "--json"]
        )
        if r.exit_code != 0:
            continue
        rep = json.loads(r.output)
        beta = json.loads((tmp_path / f"m{k}" / "model.json").read_text())
        beta = beta["verification"]["params"]["beta"]
        _, best, status, _ = PP.solve(PP.lpoe_blocks(X), C, beta, solver="CLARABEL")
        assert status == "optimal"
        N = np.load(tmp_path / f"m{k}" / "components.npy")  # what the saved model applies
        f = PP.objective([N.T @ N], PP.lpoe_blocks(X), C, beta)
        same = abs(f - rep["objective"]) <= 1e-8 * f
        assert same and best * (1 - CONIC) <= f <= best * (1 + rep["tol"] + CONIC), what
