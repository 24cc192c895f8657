"""The online learners' fixed numbers: each with its reason and where its evidence is.

The learners' hyperparameters (``r``, ``C``, ``max_iter``) are the estimators' own, with
their documented defaults. "None recorded" means no measurement chose the value: measure
with ``benchmarks/bench_aroma.py`` and ``bench_rows.py --rows aroma`` before changing it.
"""

from __future__ import annotations

#: triplets that ``fit`` draws and turns into difference vectors at a time (bounded
#: memory on a long stream); the ``verbose`` log line comes once per chunk.
#: Evidence: none recorded (not tuned); the learned ``W`` does not depend on it (the
#: engines take the triplets in order): ``tests/test_aroma_estimators.py``.
TRIPLET_CHUNK = 10_000
