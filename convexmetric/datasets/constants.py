"""The data sets' fixed numbers that are no part of a data set's definition.

A data set's own numbers (sizes, the paper's PCA dimension, the augmentation moves) stay
beside its loader, where they define it.
"""

from __future__ import annotations

#: rows per block of the MNIST PCA's covariance and projection: a float64 block of
#: 8,192 × 784 is 51 MB, so the 60,000-row augmented set never needs a float64 copy.
#: Evidence: none recorded (a memory bound; the result does not depend on it beyond
#: the order of a floating-point sum).
PCA_BLOCK_ROWS = 8192
