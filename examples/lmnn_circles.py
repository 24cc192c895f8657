"""LMNN Fig. 7 (§5.2): one global metric vs several local metrics on concentric circles.

Leave-one-out 1-NN training error with the Euclidean metric, one LMNN metric, and
c = 2, 3, 4, 6, 8 metrics from k-means (the distance of eq. 16). Run:
``python examples/lmnn_circles.py``.
"""

import warnings

from convexmetric import LMNN, MultiMetricLMNN, datasets
from convexmetric.neighbors import loo_error

warnings.simplefilter("ignore")
X, y = datasets.load("circles")
print(f"concentric circles: {X.shape[0]} points, 2 classes; leave-one-out 1-NN error")
print(f"  Euclidean          {loo_error(X, y, 1):6.1%}")
print(f"  one LMNN metric    {loo_error(LMNN(k=1).fit(X, y).transform(X), y, 1):6.1%}")
for c in (2, 3, 4, 6, 8):
    m = MultiMetricLMNN(k=1, n_clusters=c, random_state=0).fit(X, y)
    print(f"  {c} metrics (k-means) {m.loo_error(1):6.1%}   ({m.result_.status})")
