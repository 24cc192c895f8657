"""Ctrl-C during `convexmetric solve ... --out DIR`: the previous DIR or nothing, never a part.

A subprocess runs a solve that takes a while (LMNN on digits) with stderr on a
pseudo-terminal, so that its progress line tells us the solver is iterating; then it
receives SIGINT.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from convexmetric.model_io import write_directory

pty = pytest.importorskip("pty")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and ptys")


def _interrupt_solve(cwd, out):
    master, slave = pty.openpty()
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    args = ["solve", "lmnn", "--dataset", "digits", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "convexmetric.cli.main", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=cwd,
        env=env,
    )
    os.close(slave)
    buf, started = b"", False
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    buf += os.read(master, 4096)
                except OSError:
                    break
            if b"iteration" in buf:
                started = True
                break
        assert started, f"the solve never showed progress: {buf!r}"
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=240)
        buf += _drain(master)  # the rest of stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, stdout.decode(), buf.decode(errors="replace")


def _drain(master):
    """Whatever the pty still holds (stops after 0.5 s without output, or at EOF)."""
    buf = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    return buf


def _messages(stderr):
    """stderr without the progress line (redrawn with carriage returns, then erased)."""
    parts = [p.strip() for chunk in stderr.split("\n") for p in chunk.split("\r")]
    return [p for p in parts if p and not p.startswith("solve lmnn: iteration")]


def _snapshot(d):
    return {name: (d / name).read_bytes() for name in sorted(os.listdir(d))}


def test_sigint_keeps_the_previous_output(tmp_path):
    out = tmp_path / "model"
    write_directory(out, {"report.json": {"previous": True}, "metric.npy": np.eye(2)})
    before = _snapshot(out)
    code, stdout, stderr = _interrupt_solve(tmp_path, out)
    assert code == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert _messages(stderr) == ["Error: interrupted (Ctrl-C)."], stderr
    assert stdout == ""
    assert _snapshot(out) == before
    assert os.listdir(tmp_path) == ["model"]  # no temporary directory left behind


def test_sigint_writes_nothing_when_there_was_nothing(tmp_path):
    out = tmp_path / "model"
    code, stdout, stderr = _interrupt_solve(tmp_path, out)
    assert code == 130, (stdout, stderr)
    assert _messages(stderr) == ["Error: interrupted (Ctrl-C)."], stderr
    assert os.listdir(tmp_path) == []


def _run_on_pty(args, cwd):
    master, slave = pty.openpty()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "convexmetric.cli.main", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=cwd,
        env=env,
    )
    os.close(slave)
    buf = b""
    try:
        stdout, _ = proc.communicate(timeout=240)
        buf += _drain(master)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, stdout.decode(), buf.decode(errors="replace")


def test_progress_on_a_terminal_and_quiet_with_json(tmp_path):
    args = ["solve", "lmnn", "--dataset", "iris", "--max-iter", "200"]
    code, stdout, stderr = _run_on_pty(args, tmp_path)
    assert code == 0, stderr
    assert "solve lmnn: iteration" in stderr and "objective" in stderr
    assert _messages(stderr) == []  # the line erases itself; results go to stdout
    code, stdout, stderr = _run_on_pty([*args, "--json"], tmp_path)
    assert code == 0, stderr
    assert stderr.strip() == ""
    assert stdout.startswith("{")
