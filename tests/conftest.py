"""Shared fixtures: the standard splits of the small data sets, computed once."""

import numpy as np
import pytest

from convexmetric import datasets
from convexmetric.neighbors import target_neighbors


def _instance(name, k=3):
    Xtr, _Xte, ytr, _yte = datasets.load_split(name)
    _, y = np.unique(ytr, return_inverse=True)
    return Xtr, y, target_neighbors(Xtr, y, k)


@pytest.fixture(scope="session")
def iris_instance():
    return _instance("iris")


@pytest.fixture(scope="session")
def wine_instance():
    return _instance("wine")
