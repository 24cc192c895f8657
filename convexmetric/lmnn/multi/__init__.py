"""Multi-metric LMNN (Weinberger & Saul, JMLR 2009, §5.2): one metric per class cluster.

:mod:`.solver` drives the engine over the active-list oracle of :mod:`.oracle`
(distances over the list's distinct pairs, :mod:`.pairs`), in per-block whitened
coordinates by default (:mod:`.whitened`), and certifies the result by the dual bound of
:mod:`.certificate`. The estimator, :class:`convexmetric.lmnn.MultiMetricLMNN`, is in
:mod:`.estimator`.
"""
