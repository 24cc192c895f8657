"""The ``convexmetric`` console script: Ctrl-C from its very start ends in one line.

Importing the command line takes about a second (numpy, scipy, scikit-learn, every
method's module); a Ctrl-C then would end in a traceback of the import. This module
imports nothing heavy (``import convexmetric`` itself is light): it imports the
commands inside a guard that turns ``KeyboardInterrupt`` into the commands' own one
line, ``Error: interrupted (Ctrl-C).``, and exit status 130. From there the group
(:class:`.main._Main`) keeps that promise while parsing and running a command.
"""

from __future__ import annotations

import os
import signal
import sys

#: what every interrupted command prints (the text of :class:`.session.Interrupted`)
INTERRUPTED = "Error: interrupted (Ctrl-C)."


def main():
    """Run the ``convexmetric`` command (the console script's entry point)."""
    hit = []

    def interrupted(signum, frame):
        hit.append(signum)
        raise KeyboardInterrupt

    # a Ctrl-C raised inside a callback that runs during the import (importlib's module
    # locks are released by weakref callbacks) is printed as "Exception ignored" and
    # lost, and one raised inside a class body's ``__set_name__`` reaches us as a
    # RuntimeError; the handler records it, so whatever the import ends in, a recorded
    # Ctrl-C is acted on
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    try:
        from .main import main as command

        if previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous)
    except BaseException:
        if not hit:
            raise
    if hit:
        _exit_interrupted()
    return command(prog_name="convexmetric")


def _exit_interrupted():
    sys.stderr.write(INTERRUPTED + "\n")
    sys.stderr.flush()
    # not SystemExit: CPython ends a process whose KeyboardInterrupt crossed an
    # extension's init code by SIGINT, whatever the exit status asked; nothing is
    # open or written yet, so nothing is lost by skipping the interpreter's shutdown
    os._exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
