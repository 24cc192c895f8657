"""``verbose=0|1`` for the estimators: progress through :mod:`logging`, never print.

With ``verbose=1`` an estimator logs, at INFO level on its module's logger, one line
per progress report of its solver (iteration, objective, elapsed seconds; at most one
line per ``every`` seconds) and a summary when ``fit`` ends. If the application has
configured no logging handler, a stderr handler is attached to the logger for the
duration of ``fit`` so the lines are seen; configured applications keep full control.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time

from ._input_checks import check_choice


def check_verbose(verbose, owner):
    """``verbose`` must be 0, 1 (or a bool)."""
    check_choice(
        int(verbose) if isinstance(verbose, bool) else verbose, "verbose", (0, 1), owner=owner
    )
    return int(verbose)


@contextlib.contextmanager
def logging_to_stderr(logger, verbose):
    """While active, INFO records of ``logger`` reach stderr when nothing else handles them."""
    if not verbose:
        yield
        return
    added, old_level = None, logger.level
    if not logger.hasHandlers():
        added = logging.StreamHandler(sys.stderr)
        added.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger.addHandler(added)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(old_level)
        if added is not None:
            logger.removeHandler(added)


def progress_callback(logger, verbose, owner, *, every=1.0, chain=None):
    """A solver callback ``callback(iteration, objective, step) -> False`` that logs.

    Returns ``chain`` unchanged when ``verbose`` is 0 (no logging, no overhead).
    """
    if not verbose:
        return chain
    t0 = time.perf_counter()
    last = [-float("inf")]

    def callback(iteration, objective, step=None, *args):
        now = time.perf_counter()
        if now - last[0] >= every:
            last[0] = now
            logger.info(
                "%s: iteration %d, objective %.6g, %.1f s", owner, iteration, objective, now - t0
            )
        return bool(chain(iteration, objective, step, *args)) if chain is not None else False

    return callback


def log_summary(logger, verbose, owner, result):
    """One INFO line when ``fit`` ends: status, objective, iterations, seconds."""
    if verbose:
        logger.info(
            "%s: %s after %s iterations, objective %.6g, %.2f s",
            owner,
            result.status,
            result.iterations,
            float(result.objective) if result.objective is not None else float("nan"),
            float(result.seconds or 0.0),
        )
