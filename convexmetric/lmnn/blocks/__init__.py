"""LMNN's block work: the computations over all pairs of the data, by blocks of rows.

Everything in LMNN that grows with ``n²`` lives here, as pure functions of a block of
rows, the data and the components ``L``:

- :mod:`.data`: the data a block reads (:class:`~.data.StreamData`), the row blocks,
  the projection ``Z = X Lᵀ`` shared by the blocks of one evaluation, and the
  per-thread :class:`~.data.Workspace`;
- :mod:`.full_check`: the full check, every violated triplet, exactly;
- :mod:`.stream`: eq. (14)'s sums over all triplets (objective, gradient,
  certificate);
- :mod:`.local`: the in-process executor, in one thread or several lanes;
- :mod:`.predict`: k-NN and energy predictions by blocks of test rows;
- :mod:`.dask_executor` and :mod:`.dask_worker`: the same block functions on a Dask
  cluster;
- :mod:`.xp` and :mod:`.device`: the block functions on any array-API namespace
  (NumPy by default; PyTorch or CuPy arrays, on a GPU where there is one).

The solver (:mod:`convexmetric.lmnn.active_list`, :mod:`convexmetric.lmnn.solver`)
reaches them through an executor; the d × d work stays in NumPy float64.
"""
