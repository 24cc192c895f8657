"""The executors of LMNN's block map keep one written contract (blocks/executor.py)."""

import inspect

import numpy as np
import pytest

from convexmetric.lmnn.blocks.dask_executor import DaskExecutor
from convexmetric.lmnn.blocks.data import StreamData
from convexmetric.lmnn.blocks.device import DeviceExecutor
from convexmetric.lmnn.blocks.executor import Executor, executor_for
from convexmetric.lmnn.blocks.local import LocalExecutor
from convexmetric.lmnn.blocks.stream import hinge_block, row_blocks
from convexmetric.neighbors import target_neighbors

METHODS = [n for n, v in vars(Executor).items() if inspect.isfunction(v) and not n.startswith("_")]


@pytest.mark.parametrize("cls", [LocalExecutor, DaskExecutor, DeviceExecutor])
def test_every_executor_has_the_contracts_methods_and_signatures(cls):
    assert "map_terms" in METHODS and "plan_blocks" in METHODS
    for name in METHODS:
        theirs = inspect.signature(getattr(cls, name)).parameters
        ours = inspect.signature(getattr(Executor, name)).parameters
        # the contract's parameters, by name and kind (a staticmethod has no self)
        want = [(p.name, p.kind) for p in ours.values() if p.name != "self"]
        have = [(p.name, p.kind) for p in theirs.values() if p.name != "self"]
        assert have[: len(want)] == want, (cls.__name__, name)
    assert isinstance(cls.name, str)


def test_the_factory_gives_contract_executors_and_names_bad_input():
    assert executor_for("local") is None  # one thread: the evaluator's own
    assert isinstance(executor_for("local", n_jobs=2), Executor)
    with pytest.raises(ValueError, match="'backend'"):
        executor_for("spark")
    with pytest.raises(ValueError, match="'backend' must be 'local'"):
        executor_for("dask", device="torch:cpu")


def test_lanes_fold_in_block_order_bit_for_bit():
    """Order (the contract's first promise): two lanes fold the same sums as one."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    X = rng.normal(size=(400, 5))
    data = StreamData(X, y, target_neighbors(X, y, 3))
    blocks = row_blocks(y, 16)

    def fold(total, part):
        return total + part["G"]

    L = np.eye(5)
    sums = [
        ex.fold_blocks(fold, np.zeros((5, 5)), hinge_block, blocks, ex.scatter(data), L, 0.1)
        for ex in (LocalExecutor(1), LocalExecutor(2))
    ]
    assert np.array_equal(sums[0], sums[1])
