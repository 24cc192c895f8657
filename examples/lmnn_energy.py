"""Energy-based (eq. 15) vs kNN classification, single vs multi-metric (§3.5, §5.2).

Test errors on the standard split of wine and digits. Multi-metric LMNN on digits is
slow (ten 64×64 metrics): it runs under a time limit and its status is printed.
Run: ``python examples/lmnn_energy.py``.
"""

import time
import warnings

import numpy as np

from convexmetric import LMNN, MultiMetricLMNN, datasets
from convexmetric.energy import energy_predict
from convexmetric.neighbors import knn_error

warnings.simplefilter("ignore")
print(f"{'data':8s} {'model':14s} {'kNN':>7s} {'energy':>7s} {'fit s':>7s}  status")
for name, limit in (("wine", None), ("digits", 300.0)):
    Xtr, Xte, ytr, yte = datasets.load_split(name)
    print(f"{name:8s} {'Euclidean':14s} {knn_error(Xtr, ytr, Xte, yte, 3):7.2%}")
    t0 = time.perf_counter()
    m = LMNN(k=3, time_limit=limit).fit(Xtr, ytr)
    fit = time.perf_counter() - t0
    pe = m.classes_[energy_predict(m._X, m._y, m.targets_, Xte, m.components_, 0.5)]
    knn = np.mean(m.predict(Xte) != yte)
    print(
        f"{name:8s} {'LMNN':14s} {knn:7.2%} {np.mean(pe != yte):7.2%} {fit:7.1f}  "
        f"{m.result_.status}"
    )
    t0 = time.perf_counter()
    mm = MultiMetricLMNN(k=3, time_limit=limit).fit(Xtr, ytr)
    fit = time.perf_counter() - t0
    knn, en = np.mean(mm.predict(Xte) != yte), np.mean(mm.energy_predict(Xte) != yte)
    print(f"{name:8s} {'MM-LMNN':14s} {knn:7.2%} {en:7.2%} {fit:7.1f}  {mm.result_.status}")
