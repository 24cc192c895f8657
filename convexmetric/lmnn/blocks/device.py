"""LMNN's block work on an array-API device: PyTorch or CuPy arrays, a GPU where there is one.

``LMNN(device="cuda")`` runs the full checks, the exact objectives and the streaming
sums (everything that grows with ``n²``) through :class:`DeviceExecutor`: the data go
to the device once per fit, each evaluation sends the components ``L`` (``r × d``) and
gets back triplet indices or ``d × d`` sums. The block functions are those of the
NumPy path (:mod:`.full_check`, :mod:`.stream`), run on the device's namespace
(:mod:`.xp`); the solver, its ``d × d`` refinement and the certificate stay in NumPy
float64 on the host, and the CPU verifier (:func:`convexmetric.verify`) checks the
result from the data alone.

Precision: the candidate search is one float32 product with widened radii (a
superset, as on the CPU) and every hinge argument is recomputed in float64, so the
triplets are the CPU's. PyTorch's float32 products must not use TF32
(``torch.backends.cuda.matmul.allow_tf32``, off by default): a product rounded to
10 bits could miss a candidate; :class:`DeviceExecutor` refuses to run with it on.

Device strings (``device=``):

- ``"cuda"``, ``"cuda:1"``: PyTorch's CUDA device when PyTorch sees one, else CuPy's;
- ``"torch:cpu"``, ``"torch:cuda:0"``, ``"torch:mps"``: PyTorch on that device;
- ``"cupy"``, ``"cupy:1"``: CuPy on that GPU;
- ``"array_api_strict"``: the standard's reference namespace (tests).

Nothing here is needed to install, import or test the package: PyTorch, CuPy and
``array-api-compat`` are imported only when a device is asked for
(``pip install 'convexmetric[gpu]'`` names them).
"""

from __future__ import annotations

import importlib

import numpy as np

from ..constants import DEVICE_BLOCK_MEMORY
from .data import StreamData
from .stream import LocalExecutor
from .xp import device_of, row_distances, to_numpy


def check_device(value, owner="LMNN"):
    """Validate ``device`` (None, "cpu" or a device string of the module docstring)."""
    if value is None or value == "cpu":
        return None
    if isinstance(value, str) and _parse(value) is not None:
        return value
    raise ValueError(
        f"The 'device' parameter of {owner} must be None, 'cpu', 'cuda', 'cuda:N', "
        f"'torch:DEVICE', 'cupy[:N]' or 'array_api_strict'. Got {value!r} instead."
    )


def _parse(value):
    """``(library, device)`` of a device string, or None if it is not one."""
    if value in ("cuda", "array_api_strict", "cupy"):
        return {"cuda": ("auto", "cuda"), "cupy": ("cupy", 0)}.get(value, (value, None))
    head, _, rest = value.partition(":")
    if head == "cuda" and rest.isdigit():
        return "auto", value
    if head == "torch" and rest:
        return "torch", rest
    if head == "cupy" and rest.isdigit():
        return "cupy", int(rest)
    return None


def _import(name, device, owner):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(
            f"{owner}(device={device!r}) needs the package '{name}', which is not installed "
            "(pip install 'convexmetric[gpu]' and a PyTorch or CuPy build for your GPU)."
        ) from None


def resolve(device, owner="LMNN"):
    """``(xp, dev)``: the namespace and device object of a device string.

    Raises ImportError naming the missing package, RuntimeError when the library sees
    no such device."""
    library, dev = _parse(check_device(device, owner))
    if library == "auto":
        library = "torch" if _torch_sees_cuda() else "cupy"
        if library == "cupy" and importlib.util.find_spec("cupy") is None:
            raise ImportError(
                f"{owner}(device={device!r}) needs PyTorch with CUDA or CuPy, and neither "
                "sees a GPU here (pip install 'convexmetric[gpu]' and a build for your GPU)."
            )
        dev = dev if library == "torch" else int(dev.partition(":")[2] or 0)
    if library == "array_api_strict":
        return _import("array_api_strict", device, owner), None
    _import("array_api_compat", device, owner)
    mod = _import(library, device, owner)
    if library == "torch":
        dev = mod.device(dev)
        if dev.type == "cuda" and not mod.cuda.is_available():
            raise RuntimeError(f"{owner}(device={device!r}): PyTorch sees no CUDA device here.")
    else:
        if mod.cuda.runtime.getDeviceCount() <= dev:
            raise RuntimeError(f"{owner}(device={device!r}): CuPy sees no GPU {dev} here.")
        dev = mod.cuda.Device(dev)
    from array_api_compat import array_namespace

    return array_namespace(mod.empty(0)), dev


def _torch_sees_cuda():
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


class DeviceExecutor(LocalExecutor):
    """Runs LMNN's block functions on an array-API device (:mod:`.device`).

    Parameters
    ----------
    device : str
        A device string (module docstring).
    block_memory : int, default=:data:`DEVICE_BLOCK_MEMORY`
        Bytes of device memory one block may take; sizes the blocks (:meth:`plan_blocks`).
    """

    name = "device"

    def __init__(self, device, block_memory=DEVICE_BLOCK_MEMORY, owner="LMNN"):
        super().__init__()
        self.device_name = device
        self.xp, self.device = resolve(device, owner)
        self.block_memory = int(block_memory)
        self._pairs = None  #: (host I, host L, device I, device L) of the active list's pairs
        self._check_precision()

    def _check_precision(self):
        if type(self.device).__module__.startswith("torch"):
            import torch

            if torch.backends.cuda.matmul.allow_tf32:
                raise RuntimeError(
                    "LMNN's device search needs full float32 products: set "
                    "torch.backends.cuda.matmul.allow_tf32 = False (PyTorch's default)."
                )

    def asarray(self, a):
        """A host array on the device."""
        return self.xp.asarray(np.ascontiguousarray(a), device=self.device)

    def scatter(self, data):
        """The data on the device (labels and targets as int64)."""
        X, y, T = data
        return StreamData(self.asarray(np.asarray(X, np.float64)),
                          self.asarray(np.asarray(y, np.int64)),
                          self.asarray(np.asarray(T, np.int64)))  # fmt: skip

    def plan_blocks(self, n, d, k, memory_limit=None):
        """``(block_rows, chunk)`` for the device: a block's ``rows × n`` float32 product,
        its comparison and mask within :attr:`block_memory` (``memory_limit``, the host's
        budget, does not bound device memory)."""
        rows = self.block_memory // (12 * max(n, 1))
        chunk = self.block_memory // (16 * (2 * d + 6 * k + 8))
        return int(max(64, min(rows, 16384))), int(max(1 << 12, min(chunk, 1 << 22)))

    def list_distances(self, data, L, pair_I, pair_L):
        """``(Z, D_target, d_pairs)`` on the host: ``Z = X Lᵀ``, the target distances and
        ``‖z_a − z_b‖²`` of the active list's pairs, computed on the device (the
        evaluation of :meth:`~convexmetric.lmnn.active_list.ActiveList.hinge_arguments`).

        The projection is the workspace's (a full check at the same ``L`` reuses it);
        the pairs' device copies are kept while the list holds the same arrays."""
        P = self.workspace.project(data, L)
        if self._pairs is None or self._pairs[0] is not pair_I or self._pairs[1] is not pair_L:
            self._pairs = (pair_I, pair_L, self.asarray(pair_I), self.asarray(pair_L))
        d = row_distances(self.xp, P.Z, self._pairs[2], self._pairs[3])
        return to_numpy(P.Z), to_numpy(P.Dt), to_numpy(d)

    def screen_targets(self, C32, sq32, band, k, block_size=None):
        """The target neighbours' float32 screen on the device (the ``screen`` of
        :func:`convexmetric.neighbors.target_neighbors`): per block of rows, yields ``(s,
        e, rr, cc)`` on the host. The same bound as the host's screen (the ``k``-th
        smallest of group minima), with a sort of the minima instead of a partition; the
        candidates may differ from the host's by rounding, the exact decision on the host
        does not. ``block_size`` is ignored: a block fills :attr:`block_memory`."""
        xp, m = self.xp, C32.shape[0]
        C, sq = self.asarray(C32), self.asarray(sq32)
        cols = xp.arange(m, device=self.device)
        rows = int(max(1, min(m, self.block_memory // (12 * m))))
        for s in range(0, m, rows):
            e = min(m, s + rows)
            V = sq[None, :] - 2.0 * (C[s:e, :] @ C.T)
            own = cols[None, :] == xp.arange(s, e, device=self.device)[:, None]
            V = xp.where(own, xp.full_like(V, float("inf")), V)
            t = _kth_bound(xp, V, k)
            thr = xp.astype(t, xp.float64) + self.asarray(band[s:e])
            rr, cc = xp.nonzero(V <= xp.astype(thr, xp.float32)[:, None])
            yield s, e, to_numpy(rr).astype(np.int64), to_numpy(cc).astype(np.int64)

    def close(self, data):
        """Forget the workspace and the pairs' device copies."""
        super().close(data)
        self._pairs = None

    def describe(self):
        """A short description for logs and reports."""
        return f"{self.device_name} ({device_of(self.asarray(np.zeros(1)))})"


def _kth_bound(xp, V, k, group=8):
    """:func:`convexmetric.neighbors._kth_bound` in the namespace ``xp``."""
    g = V.shape[1] // group
    if g <= k:
        return xp.sort(V, axis=1)[:, k - 1]
    mins = V[:, :g]
    for j in range(1, group):
        mins = xp.minimum(mins, V[:, j * g : (j + 1) * g])
    if g * group < V.shape[1]:
        mins = xp.concat([mins, xp.min(V[:, g * group :], axis=1, keepdims=True)], axis=1)
    return xp.sort(mins, axis=1)[:, k - 1]


__all__ = ["DEVICE_BLOCK_MEMORY", "DeviceExecutor", "check_device", "resolve", "to_numpy"]
