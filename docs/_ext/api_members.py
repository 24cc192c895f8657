"""The public API as the reference documents it: ``convexmetric.__all__`` and the public
methods of each estimator (``set_*_request`` and scikit-learn's own methods left out).

``docs/api.rst`` is checked against this list by ``tests/test_docs.py`` so a renamed or
new public method cannot go undocumented.
"""

_ONLINE = [
    "fit",
    "partial_fit",
    "partial_fit_triplets",
    "similarity",
    "score_pairs",
    "rank",
    "score",
]

MEMBERS = {
    "LMNN": ["fit", "transform", "predict", "score", "energy_predict", "loo_error",
             "get_mahalanobis_matrix", "get_metric", "pair_distance", "pair_score"],
    "KernelLMNN": ["fit", "transform", "predict", "score", "energy_predict", "loo_error",
                   "kernel_rows",
                   "get_mahalanobis_matrix", "get_metric", "pair_distance", "pair_score"],
    "MultiMetricLMNN": ["fit", "predict", "score", "energy_predict", "distances", "loo_error"],
    "POE": ["fit", "transform", "score", "get_mahalanobis_matrix", "get_metric",
            "pair_distance", "pair_score"],
    "MKPOE": ["fit", "transform", "score"],
    "OperatorSimilarity": ["fit", "transform", "pair_distances", "predict_pairs", "score"],
    "HyperbolicPCA": ["fit", "transform", "pair_distances", "predict_pairs", "score"],
    "DiagonalAROMA": _ONLINE,
    "FactoredAROMA": _ONLINE,
    "OASIS": _ONLINE,
    "SSNE": ["fit", "transform", "similarity", "score"],
    "SolveResult": ["summary", "gap", "certified_gap", "message", "success"],
    "Verification": ["summary"],
    # metric-learn's names (convexmetric.metric_learn), keyed by the full name: the
    # class is another LMNN
    "convexmetric.metric_learn.LMNN": ["fit", "transform", "pair_distance", "pair_score",
                                       "score_pairs", "get_metric", "get_mahalanobis_matrix"],
}  # fmt: skip

#: public functions of ``convexmetric`` (``.. autofunction::``)
FUNCTIONS = ["validate", "verify", "set_config", "get_config", "config_context"]

DATASETS = [
    "names", "describe", "load", "load_split", "split", "split_by_source",
    "zebra_stripes", "concentric_circles", "synthetic_classes", "overlapping_classes",
    "transformed_digits", "augmented_digits", "bag_of_features",
    "load_mnist", "mnist_split", "augmented_mnist",
]  # fmt: skip
