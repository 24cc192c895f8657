"""LMNN Fig. 2: on the zebra stripes, LMNN lowers 1-NN error; PCA and LDA directions raise it.

Each method gives a 1-D projection (PCA, LDA) or a metric (LMNN); the 1-NN test error on
the standard split is printed. Run: ``python examples/lmnn_zebra.py``.
"""

import warnings

from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from convexmetric import LMNN, datasets
from convexmetric.neighbors import knn_error

warnings.simplefilter("ignore")
Xtr, Xte, ytr, yte = datasets.load_split("zebra")
rows = {"Euclidean": (Xtr, Xte)}
pca = PCA(n_components=1).fit(Xtr)
rows["PCA (1-D)"] = (pca.transform(Xtr), pca.transform(Xte))
lda = LinearDiscriminantAnalysis(n_components=1).fit(Xtr, ytr)
rows["LDA (1-D)"] = (lda.transform(Xtr), lda.transform(Xte))
m = LMNN(k=3, search="auto").fit(Xtr, ytr)
rows["LMNN"] = (m.transform(Xtr), m.transform(Xte))
s = LMNN(k=3, n_components=1).fit(Xtr, ytr)
rows["LMNN-S (1-D)"] = (s.transform(Xtr), s.transform(Xte))
print("zebra stripes: 1-NN test error")
for name, (A, B) in rows.items():
    print(f"  {name:14s} {knn_error(A, ytr, B, yte, 1):6.2%}")
