"""Per-command state of the command line: Ctrl-C handling, the progress line, and what
the inputs reader recorded (files read, the split, the standardisation)."""

from __future__ import annotations

import contextlib
import contextvars
import signal
import sys
import threading
import time

import click
import numpy as np


def command_state():
    """The running command's state dict (None outside a command)."""
    return _command_state.get()


def progress(label):
    """A progress callback printing to stderr when it is a terminal (else None)."""
    if not sys.stderr.isatty():
        return None

    def cb(it, f, step):
        if it % 25 == 0:
            click.echo(f"\r{label}: iteration {it}, objective {f:.6g}", err=True, nl=False)
        return False

    return cb


class ProgressLine:
    """The progress line of ``solve`` on stderr: iteration, objective, certified gap (when
    the solver reports a lower bound) and elapsed time, redrawn in place.

    Silent unless the stream is a terminal, and silent under ``--json``. Fed by
    :func:`convexmetric.progress.observe` (the solvers' iteration reports).
    """

    def __init__(self, label, stream=None, min_interval=0.2):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.min_interval = min_interval
        self.t0 = time.perf_counter()
        self.last = None
        self.width = 0
        self.quiet = None
        self.count = 0

    def _decide(self):
        isatty = getattr(self.stream, "isatty", None)
        if isatty is None or not isatty():
            return True
        ctx = click.get_current_context(silent=True)
        while ctx is not None:
            if ctx.params.get("as_json"):
                return True
            ctx = ctx.parent
        return False

    def __call__(self, iteration, objective, info):
        if self.quiet is None:
            self.quiet = self._decide()
        self.count += 1  # the solvers' phases each count from 0; show one running count
        now = time.perf_counter()
        if self.quiet or (self.last is not None and now - self.last < self.min_interval):
            return
        self.last = now
        text = f"{self.label}: iteration {self.count}, objective {objective:.6g}"
        lb = info.get("lower_bound")
        if lb is not None and np.isfinite(lb):
            text += f", certified gap {(objective - lb) / max(abs(objective), 1e-300):.1e}"
        text += f", {now - self.t0:.1f} s"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def close(self):
        """Erase the line (the command's own output follows)."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


@contextlib.contextmanager
def solve_progress(label):
    """Show a :class:`ProgressLine` while the block runs (a terminal, no ``--json``)."""
    from ..progress import observe

    line = ProgressLine(label)

    def observer(iteration, objective, info):
        # after Ctrl-C a solver returns its best iterate and the estimator may start its
        # next phase; stop that one at its first iteration too
        check_interrupted()
        line(iteration, objective, info)

    try:
        with observe(observer):
            yield line
    finally:
        line.close()


class Interrupted(click.ClickException):
    """Ctrl-C: one clean line and exit status 130 (128 + SIGINT)."""

    exit_code = 130

    def __init__(self):
        super().__init__("interrupted (Ctrl-C).")


_command_state = contextvars.ContextVar("convexmetric_command", default=None)


@contextlib.contextmanager
def interrupt_guard():
    """Per-command state: Ctrl-C (and the standardisation recorded by :func:`load_xy`).

    SIGINT raises ``KeyboardInterrupt``, which the solvers let through (after their
    cleanup), and is remembered: should anything between the solver and the output
    catch it, :func:`check_interrupted` (called by :func:`write_outputs` and
    :func:`emit`) still aborts the command, so nothing partial is written or printed.
    """
    state = {"hit": False}
    token = _command_state.set(state)
    old = None
    if threading.current_thread() is threading.main_thread():

        def handler(signum, frame):
            state["hit"] = True
            raise KeyboardInterrupt

        old = signal.signal(signal.SIGINT, handler)
    try:
        yield state
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
        _command_state.reset(token)


def check_interrupted():
    """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed during this command."""
    state = _command_state.get()
    if state is not None and state["hit"]:
        raise KeyboardInterrupt


__all__ = [
    "Interrupted",
    "ProgressLine",
    "check_interrupted",
    "command_state",
    "interrupt_guard",
    "progress",
    "solve_progress",
]
