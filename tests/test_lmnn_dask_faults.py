"""Dask faults during an LMNN fit (issue 67: nothing lost, nothing hung).

Each case fits LMNN on a LocalCluster of two worker processes (one thread each, under
nannies that restart a killed worker) while a thread injects one fault: workers killed
at seeded random times, one per second, or both at once; ``client.restart()``; the
Client closed; the scheduler (a process of its own) killed; workers starved of memory.
The fits either stream (iris: every evaluation's sums on the workers) or run their full
checks on the workers (digits, active-set mode: each task sent back to the worker that
holds its last report, the path that hung); at ``tol=1e-2`` both equal the in-process
fit bit for bit, so a recovered fit must equal it, and verify. A case either recovers,
or raises one ``DaskBackendError`` that names its cause, within :data:`AFTER` seconds of
the last fault.

The cases run in child interpreters (:func:`child`; the cases of the nanny cluster share
one), each in a session of its own: a child that hangs is killed with its workers after
its bound and its cases fail, so the test run itself never hangs.
"""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

HERE = os.path.dirname(os.path.abspath(__file__))
#: seconds a case's child may run before the case counts as hung
HUNG = 120
#: the bound the issue asks for: the fit ends (recovered or failed) this long after the
#: last fault, at most
AFTER = 60.0


def _run(cluster, cases, hung=HUNG):
    """``child(cluster, cases)`` in a fresh interpreter: case name -> its JSON result
    (``None`` for the cases not reached: after ``hung`` seconds the child is killed)."""
    code = (
        f"import sys; sys.path.insert(0, {HERE!r}); "
        f"import test_lmnn_dask_faults as t; t.child({cluster!r}, {cases!r})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the child, its workers and its scheduler: one group
    )
    try:
        out, err = proc.communicate(timeout=hung)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err = f"(killed: no end within {hung} s)\n{err}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the child left running
        except ProcessLookupError:
            pass
    results = {case: None for case, _ in cases}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT ") :])
            results[r["case"]] = r
    return results, err[-3000:]


@pytest.fixture(scope="module")
def nanny_cluster():
    """The cases of one LocalCluster whose nannies restart killed workers, in one child
    (the restart first, while no nanny is busy restarting a worker; the closed Client
    last)."""
    cases = [
        ("restart", {"seed": 8, "restarts": 3, "data": "checks"}),
        ("kill_random", {"seed": 67, "kills": 3, "data": "checks"}),
        ("kill_both", {"seed": 7, "data": "checks"}),
        ("kill_every_second", {"seed": 6, "kills": 5}),
        ("client_closed", {}),
    ]
    return _run("nannies", cases, hung=HUNG * 2)


def _case(run, case):
    results, err = run
    r = results[case]
    assert r is not None, f"{case}: hung or not reached. The child's last output:\n{err}"
    return r


def _recovered(r):
    """Every fit during the faults came through: verified, the same as the in-process
    fit bit for bit, and the last ended within :data:`AFTER` seconds of the last fault
    (every fault fell during a fit). Returns whether the cluster stayed whole (every
    fault was injected).

    Unless the cluster itself was degraded: a nanny gives up when the worker it restarts
    fails to start (seen under load, CI's included), and with fewer than the two workers
    left the fit may end in one DaskBackendError about its workers, within the bound (the
    issue's other outcome: never a hang), before any fault if none was left to kill."""
    fits = r["fits"]
    lost = fits[-1]["outcome"] != "fit" and r.get("workers_after", -1) < 2
    if lost:
        _failed(r, "worker")
        if not r["faults"]:  # no worker left to harm when the case began: the error it is
            return False
    done = fits[:-1] if lost else fits
    assert all(f["outcome"] == "fit" for f in done), r
    assert all(f["status"] == "optimal" and f["verified"] for f in done), r
    assert all(f["same"] for f in done), f"a recovered fit differs from the in-process one: {r}"
    assert r["faults"] and fits[0]["start"] <= r["faults"][0], r
    assert r["faults"][-1] < fits[-1]["end"] <= r["faults"][-1] + AFTER, r
    return not lost  # every fault injected (a lost cluster may have stopped them)


def _failed(r, words, within=AFTER):
    """One DaskBackendError naming the cause (``words``), ``within`` s of the fault."""
    last = r["fits"][-1]
    assert last["outcome"] == "DaskBackendError", r
    assert words in last["message"], r
    assert last["end"] - (r["faults"][-1] if r["faults"] else last["start"]) <= within, r


def test_workers_killed_at_random_times_recover(nanny_cluster):
    r = _case(nanny_cluster, "kill_random")
    if _recovered(r):
        assert len(r["faults"]) == 3


@pytest.mark.slow
def test_a_worker_killed_every_second_recovers(nanny_cluster):
    r = _case(nanny_cluster, "kill_every_second")
    if _recovered(r):
        assert len(r["faults"]) == 5
    assert np.all(np.diff(r["faults"]) >= 0.9)


def test_both_workers_killed_at_once_recover(nanny_cluster):
    _recovered(_case(nanny_cluster, "kill_both"))


def test_client_restart_mid_fit_recovers(nanny_cluster):
    _recovered(_case(nanny_cluster, "restart"))


def test_client_closed_mid_fit_is_one_clear_error(nanny_cluster):
    r = _case(nanny_cluster, "client_closed")
    last = r["fits"][-1]
    if last["outcome"] != "DaskBackendError" and r["faults"] and last["start"] >= r["faults"][-1]:
        # the close fell between two fits (a streamed iris fit can end within the second
        # before it): the next fit is refused at once, naming the missing Client
        assert last["outcome"] == repr(ValueError), r
        assert "no dask.distributed Client is running" in last["message"], r
        assert last["end"] - r["faults"][-1] <= 10.0, r
        return
    _failed(r, "Client was closed", within=10.0)


def test_scheduler_killed_mid_fit_is_one_clear_error():
    r = _case(_run("processes", [("scheduler_killed", {})]), "scheduler_killed")
    _failed(r, "lost its connection to the Dask scheduler", within=10.0)


@pytest.mark.slow
def test_memory_starved_workers_end_the_fit_clearly():
    # the workers start (about 60 MiB) but die once LMNN's data arrives (importing the
    # library takes them past 95% of 160 MB): recovered, or one error naming memory
    r = _case(_run("starved", [("memory", {"timeout": 15})]), "memory")
    last = r["fits"][-1]
    if last["outcome"] == "fit":
        assert _recovered(r)
    else:
        _failed(r, "memory")


def test_losses_are_counted_in_waves():
    """A restart's workers leave over several looks: one loss (counted once per worker it
    was, an evaluation across three restarts hit its limit of 5 in CI), also when one of
    them left before it received the data (counted twice, CI again); workers that die each
    time they receive the data: a loss each time."""
    from types import SimpleNamespace

    from convexmetric.lmnn.blocks.dask_faults import Cluster

    now, refused = {}, set()

    def call(fn, *args, seconds, workers=(), **kwargs):
        if fn is client.scheduler.identity:
            return {"workers": dict(now)}
        return {a: OSError() if a in refused else None for a in workers}  # the data sent

    client = SimpleNamespace(scheduler=SimpleNamespace(identity=object()), _run=object())
    cluster = Cluster(client)
    cluster.call = call
    cluster.put("fit", "data", np.zeros(3))

    def look(*addresses):
        now.clear()
        now.update({a: {"status": "running"} for a in addresses})
        cluster.ensure(1.0)
        return cluster.losses

    a, b = "a", "b"
    assert look(a, b) == 0
    for wave, new in enumerate([("c", "d"), ("e", "f"), ("g", "h")], 1):  # three restarts
        assert look(b) == wave  # one worker gone: a loss
        assert look() == wave  # the other: the same wave
        assert look(*new) == wave
        a, b = new
    assert cluster.lost == 6
    refused.add("j")  # a restart's workers join at two looks; the late one has no data yet
    assert look(b) == 4 and look() == 4 and look("i") == 4 and look("i", "j") == 4
    assert look("j") == 5 and look() == 5  # restarted again: one loss
    assert cluster.lost == 10
    assert look("k", "l") == 5 and look("k") == 6  # one worker left alone: a loss
    for i in range(4):  # a worker that dies once it holds the data, and its restarts
        look("k", f"x{i}")
        assert look("k") == 7 + i


# -- the child -----------------------------------------------------------------------
def child(kind, cases):
    """Run ``cases`` (name, params) one after the other on one cluster of ``kind``: in
    each, LMNN fits again and again while a thread injects the case's faults, until they
    are over or a fit fails; print one result line per case."""
    from convexmetric import LMNN

    with _cluster(kind) as (client, cluster, scheduler):
        for case, params in cases:
            X, y, kw = _instance(params.get("data", "streamed"))
            ref = LMNN(**kw).fit(X, y)
            kw["backend_timeout"] = params.get("timeout", 3600.0)
            _settle(client)
            faults, stop = [], threading.Event()
            inject = _fault(case, params, client, cluster, scheduler, faults, stop)
            thread = threading.Thread(target=inject, daemon=True)
            thread.start()
            fits, start = [], time.monotonic()
            while not fits or (fits[-1]["outcome"] == "fit" and _more(case, thread, fits, faults)):
                fits.append(_fit(LMNN(backend="dask", **kw), X, y, ref))
                if time.monotonic() - start > AFTER:  # the faults outlast the bound
                    break
            stop.set()
            thread.join(timeout=30)
            result = {"case": case, "faults": faults, "fits": fits,
                      "workers_after": _listed_workers(client)}  # fmt: skip
            print("RESULT " + json.dumps(result), flush=True)


def _more(case, thread, fits, faults):
    """Whether to fit again: while faults are coming; after a closed Client or a killed
    scheduler also once the fault fell in a fit's tail, past its last call to the cluster
    (that fit ends well; the next one meets the fault)."""
    terminal = case in ("client_closed", "scheduler_killed")
    return thread.is_alive() or (terminal and bool(faults) and fits[-1]["start"] < faults[-1])


def _listed_workers(client):
    """The workers the scheduler lists now (-1: it does not answer)."""
    try:
        return len(client.scheduler_info()["workers"])
    except Exception:
        return -1


def _instance(name):
    """``streamed``: iris with a memory budget that streams (every evaluation's sums on
    the workers, as locally bit for bit); ``checks``: digits in the active-set mode (the
    full checks on the workers, each task sent back to the worker of its last report)."""
    from convexmetric import datasets
    from convexmetric.lmnn.blocks.data import least_budget

    if name == "checks":
        X, _, y, _ = datasets.load_split("digits")
        return X, y, {"tol": 1e-2}
    X, _, y, _ = datasets.load_split("iris")
    return X, y, {"memory_limit": least_budget(*X.shape, 3), "tol": 1e-2}


def _settle(client):
    """Wait for both workers (a nanny may have closed after the worker it restarted
    failed to start: then one is enough, or none)."""
    if client.status != "running":
        return
    for n in (2, 1):
        try:
            return client.wait_for_workers(n, timeout=20)
        except (TimeoutError, distributed.TimeoutError):
            pass  # (with none, the next case runs on a cluster that waits for workers)


def _fit(model, X, y, ref):
    """One fit's outcome: verified and the same as ``ref``, or the error it raised."""
    from convexmetric import verify
    from convexmetric.lmnn.blocks.dask_executor import DaskBackendError

    out = {"start": time.monotonic()}
    try:
        model.fit(X, y)
    except Exception as exc:  # the outcome under test
        kind = "DaskBackendError" if isinstance(exc, DaskBackendError) else repr(type(exc))
        out.update(outcome=kind, message=str(exc))
    else:
        report = verify(model, X, y, tol=model.tol)
        same = np.array_equal(model.metric_, ref.metric_) and model.objective_ == ref.objective_
        out.update(outcome="fit", status=model.result_.status, same=bool(same))
        out["verified"] = bool(report.verified)
    out["end"] = time.monotonic()
    return out


class _cluster:
    """``nannies``: a LocalCluster of two single-threaded worker processes under nannies
    (``starved``: of 160 MB each); ``processes``: a scheduler and two workers, each a
    process of its own (the scheduler to be killed)."""

    def __init__(self, kind):
        self.kind, self.procs, self.stack = kind, [], []

    def __enter__(self):
        if self.kind == "processes":
            return self._processes()
        kw = {"memory_limit": "160MB"} if self.kind == "starved" else {}
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", **kw
        )
        client = distributed.Client(cluster)
        self.stack = [client, cluster]
        return client, cluster, None

    def _processes(self):
        folder = tempfile.mkdtemp()
        file = os.path.join(folder, "scheduler.json")
        dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        scheduler = subprocess.Popen(
            [*dask, "--scheduler-file", file, "--port", "0", "--dashboard-address", ":0"], **quiet
        )
        self.procs.append(scheduler)
        while not os.path.exists(file):
            time.sleep(0.05)
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", file]
        self.procs.append(
            subprocess.Popen([*worker, "--nworkers", "2", "--nthreads", "1"], **quiet)
        )
        client = distributed.Client(scheduler_file=file, timeout=30)
        self.stack = [client]
        return client, None, scheduler

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
        for thing in self.stack:
            try:
                thing.close()
            except Exception:  # a closed Client, a cluster whose scheduler is gone
                pass


def _workers(cluster):
    """The pids of the cluster's running workers: registered with the scheduler (a worker
    killed while its nanny starts it can make the nanny give up, and the cluster shrink
    for good: a lost cluster, not the fault under test)."""
    running = {
        a for a, ws in list(cluster.scheduler.workers.items()) if ws.status.name == "running"
    }
    pids = []
    for nanny in list(cluster.workers.values()):
        process = getattr(getattr(nanny, "process", None), "process", None)
        if getattr(nanny, "worker_address", None) in running and process is not None:
            pids.append(process.pid)
    return pids


def _fault(case, params, client, cluster, scheduler, faults, stop):
    """The function a thread runs to inject ``case``'s fault (times from the fit's start)."""
    rng = random.Random(params.get("seed", 0))

    def kill(pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if pids:
            faults.append(time.monotonic())

    def at(delay):
        return not stop.wait(delay)  # False once the fit has ended

    def running():
        """The running workers' pids, waited for (up to 10 s) while a nanny restarts
        them: every kill the case counts falls on a worker."""
        pids, end = _workers(cluster), time.monotonic() + 10.0
        while not pids and time.monotonic() < end and at(0.05):
            pids = _workers(cluster)
        return pids

    def inject():
        if case == "kill_random":
            times = sorted(rng.uniform(0.3, 2.0) for _ in range(params["kills"]))
            for before, now in zip([0.0, *times], times):
                if not at(now - before):
                    return
                pids = running()
                kill([rng.choice(pids)] if pids else [])
        elif case == "kill_every_second":
            for i in range(params["kills"]):
                if not at(0.5 if i == 0 else 1.0):
                    return
                pids = running()
                kill([rng.choice(pids)] if pids else [])
        elif case == "kill_both" and at(rng.uniform(1.2, 1.8)):  # after the first checks
            kill(_workers(cluster))
        elif case == "restart":
            for _ in range(params["restarts"]):
                if not at(rng.uniform(0.3, 1.0)):
                    return
                faults.append(time.monotonic())
                client.restart()
        elif case == "client_closed" and at(1.0):
            faults.append(time.monotonic())
            client.close()
        elif case == "scheduler_killed" and at(1.0):
            faults.append(time.monotonic())
            scheduler.kill()

    return inject


# -- the command line ----------------------------------------------------------------
def test_cli_backend_timeout_reaches_the_estimator(monkeypatch):
    import contextlib

    from click.testing import CliRunner

    from convexmetric.cli import lmnn as cli_lmnn
    from convexmetric.cli.main import main

    seen = {}

    def fit(self, X, y):
        seen.update(self.get_params())
        raise RuntimeError("stopped here")

    monkeypatch.setattr(cli_lmnn, "dask_client", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(cli_lmnn.LMNN, "fit", fit)
    args = ["solve", "lmnn", "--dataset", "iris", "--scheduler", "local:1"]
    out = CliRunner().invoke(main, [*args, "--backend-timeout", "12.5"])
    assert out.exit_code != 0 and "stopped here" in out.output
    assert seen["backend"] == "dask" and seen["backend_timeout"] == 12.5


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--backend-timeout", "5"], "--backend-timeout needs --scheduler"),
        (
            ["--scheduler", "local:1", "--backend-timeout", "0"],
            "Invalid value for '--backend-timeout'",
        ),
    ],
)
def test_cli_rejects_a_bad_backend_timeout(extra, words):
    from click.testing import CliRunner

    from convexmetric.cli.main import main

    out = CliRunner().invoke(main, ["solve", "lmnn", "--dataset", "iris", *extra])
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert words in out.output
