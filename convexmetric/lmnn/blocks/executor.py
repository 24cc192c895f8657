"""The executor contract of LMNN's block map, and the factory that picks an executor.

LMNN's full checks, exact objectives and streamed sums are maps of pure *block
functions* over row blocks of the data (:func:`~.full_check.terms_block`,
:func:`~.stream.hinge_block`; a block is the rows ``i`` of one class, compared against
every row). An executor runs such a map where the rows live; the solver above it holds
only ``d × d`` state and the active list. Three executors keep one contract,
:class:`Executor`:

* :class:`~.local.LocalExecutor`: this process, one thread or ``n_jobs`` lanes;
* :class:`~.dask_executor.DaskExecutor`: the workers of a ``dask.distributed`` cluster,
  the data shipped once per fit (faults: :mod:`.dask_faults`);
* :class:`~.device.DeviceExecutor`: this process, the block work on a GPU through the
  array API (PyTorch or CuPy), its results back on the host.

What every executor promises:

1. **Order.** Results come back in block order, and :meth:`Executor.fold_blocks` folds
   the partial sums in block order whatever order the blocks ran in: the executor, the
   number of lanes or workers never changes a triplet list and, at equal block sizes,
   never a sum's rounding.
2. **Traffic.** :meth:`Executor.scatter` makes the data available once per fit; each map
   then sends only its small arguments (``L``, ``d × d``) and gets back ``d × d`` partial
   sums and counts, or a block's triplets at a full check.
3. **Limits.** ``alarm`` (the fit's :class:`~convexmetric.optim.deadline.Alarm`) is
   checked before each block and while waiting; a map whose triplets exceed
   ``max_terms`` raises ``TooManyTerms`` as soon as it knows.
4. **Memory.** :meth:`Executor.plan_blocks` sizes the blocks within the host's budget
   (a device sizes them within its own memory).
5. **Giving up.** :meth:`Executor.fold_blocks` takes ``until``, a predicate on the
   running total of a fold whose total only grows: once it holds, the blocks not yet
   started may be skipped (a capped evaluation past its cap, :mod:`.evaluator`).

Optional hooks, looked up with ``getattr``: ``list_distances`` (a device computes the
active list's distances where the data are) and ``threads``: the lanes of this process's
own work on the active list (its distances and sums; the Dask client's too), and of a
:class:`~.local.LocalExecutor`'s blocks, which share its memory budget.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .local import LocalExecutor, check_lanes

#: ``backend`` values of the estimators that take one
BACKENDS = ("local", "dask")


@runtime_checkable
class Executor(Protocol):
    """What :class:`~.stream.StreamingEvaluator` and the active list call (module docstring)."""

    name: str  #: "local", "dask" or "device" (reported in ``result_.info``)

    def scatter(self, data):
        """Make the :class:`~.data.StreamData` available to the block functions once;
        return the handle the maps take in its place."""

    def plan_blocks(self, n, d, k, memory_limit=None):
        """``(block_rows, chunk)``: rows per block, candidate pairs per chunk."""

    def map_blocks(self, fn, blocks, data, *args, **kwargs):
        """``[fn(rows, data, *args, **kwargs) for rows in blocks]``, in block order."""

    def fold_blocks(self, fold, total, fn, blocks, data, *args, until=None, **kwargs):
        """``total`` with each block's result folded in by ``fold``, in block order;
        ``until(total)`` true: the rest may be skipped (item 5)."""

    def map_terms(self, fn, blocks, data, *args, max_terms=None, **kwargs):
        """The blocks' triplets joined in block order (a list of parts); raises
        ``TooManyTerms`` past ``max_terms``."""

    def map_chunks(self, fn, chunks, data, **kwargs):
        """``[fn(chunk, data, **kwargs) for chunk in chunks]`` (e.g. test rows)."""

    def release(self):
        """Free a full check's scratch buffers."""

    def close(self, data):
        """Forget the data of ``scatter`` (the fit has ended)."""


def check_backend(value, owner="LMNN"):
    """Validate ``backend`` ("local" or "dask"); return it."""
    if isinstance(value, str) and value in BACKENDS:
        return value
    raise ValueError(
        f"The 'backend' parameter of {owner} must be a str among {{'local', 'dask'}}. "
        f"Got {value!r} instead."
    )


def executor_for(backend, owner="LMNN", device=None, n_jobs=None, **kwargs):
    """The executor of ``backend``: ``None`` (in-process, one thread) for "local", or a
    :class:`~.local.LocalExecutor` of ``n_jobs`` lanes (:func:`~.local.check_lanes`); a
    :class:`~.dask_executor.DaskExecutor` on the running Client for "dask"; with a
    ``device`` (not None or "cpu"), a :class:`~.device.DeviceExecutor` in this process.

    Raises ValueError naming 'backend' when no Client is running, and naming 'n_jobs'
    when it asks for lanes beside a device (it runs the blocks). With Dask, ``n_jobs``
    lanes run the client's own work on the active list."""
    check_backend(backend, owner)
    threads = check_lanes(n_jobs, device, owner)
    if device not in (None, "cpu"):
        if backend != "local":
            raise ValueError(
                f"{owner}(device={device!r}) runs the block work in this process: "
                f"'backend' must be 'local' with a device. Got {backend!r} instead."
            )
        from .device import DeviceExecutor

        return DeviceExecutor(device, owner=owner)
    if backend == "local":
        return LocalExecutor(threads) if threads > 1 else None
    from .dask_executor import DaskExecutor, require_distributed

    distributed = require_distributed(owner)
    try:
        client = distributed.get_client()
    except ValueError:
        raise ValueError(
            f"The 'backend' parameter of {owner} is 'dask' but no dask.distributed Client is "
            "running; start one first (e.g. `from distributed import Client; "
            "client = Client('tcp://scheduler:8786')`) or use backend='local'."
        ) from None
    return DaskExecutor(client, threads=threads, **kwargs)


__all__ = ["BACKENDS", "Executor", "check_backend", "executor_for"]
