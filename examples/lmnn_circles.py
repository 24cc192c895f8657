"""LMNN Fig. 7 (§5.2): one global metric vs several local metrics on concentric circles.

Leave-one-out 1-NN training error (k = 1 target neighbour) with the Euclidean metric,
one LMNN metric, and 2 or 3 metrics from k-means (the asymmetric distance of eq. 16),
on the default data of :func:`convexmetric.datasets.concentric_circles` for five seeds.
The paper reports 100% → 21% → 0%.

What differs from Fig. 7: the data are three 40° arcs of each circle, not full
circles. On full circles whose Euclidean LOO error is 100%, one metric serves an arc
of under 90° (74° at this spacing ratio), so three 120° k-means sectors cannot reach
0%; the second table shows it (same spacing ratio, ``arc=120``: full circles). The
argument is in the docstring of ``concentric_circles``. Run:
``python examples/lmnn_circles.py`` (about 10 s).
"""

import warnings

from convexmetric import LMNN, MultiMetricLMNN, datasets
from convexmetric.neighbors import loo_error

warnings.simplefilter("ignore")


def row(X, y, seed, counts=(2, 3)):
    errs = [loo_error(X, y, 1), loo_error(LMNN(k=1).fit(X, y).transform(X), y, 1)]
    for c in counts:
        errs.append(MultiMetricLMNN(k=1, n_clusters=c, random_state=seed).fit(X, y).loo_error(1))
    return errs


print("three 40° arcs per circle (72 points): leave-one-out 1-NN error")
print("seed  Euclidean  1 metric  2 metrics  3 metrics")
for seed in range(5):
    X, y = datasets.concentric_circles(random_state=seed)
    print(f"{seed:4d}" + "".join(f"{e:10.1%}" for e in row(X, y, seed)))

print("\nfull circles (arc=120, same spacing ratio, 72 points): the impossibility")
print("seed  Euclidean  1 metric  2 metrics  3 metrics  6 metrics")
X, y = datasets.concentric_circles(arc=120.0, random_state=0)
print(f"{0:4d}" + "".join(f"{e:10.1%}" for e in row(X, y, 0, counts=(2, 3, 6))))
