"""The cpu backend: NumPy arrays as storage; built-in kernels are the core's reference kernels
bound to NumPy's array-API namespace.

The namespace is NumPy's own main namespace on NumPy >= 2.1 (it carries nearly every array-API
function the reference kernels use: ``astype``, ``concat``, ``pow``, ``permute_dims`` ...; the
two whose signatures differ, ``sort``/``argsort`` with ``descending``, are added), so the first cpu
op imports nothing but numpy. ``array_api_compat.numpy`` is imported only on an older NumPy, where
it supplies the missing names (it pulls in ``numpy.testing``, ``unittest`` and ``numpy.f2py``:
about 0.3 s on a cold start).

``bfloat16`` tensors are NumPy arrays of ``ml_dtypes.bfloat16`` (imported on first bf16 use, not
before). NumPy has no bf16 arithmetic of its own, so built-in ops compute on bf16 inputs in
float32 and round the result back (``tensorplay._kernels.lowp``), as torch does on cpu.
"""

from __future__ import annotations

import types

import numpy as np

from tensorplay._kernels import lowp
from tensorplay.backends import ArrayBackend


def _namespace():
    """NumPy's own namespace with the array-API signatures it lacks added (``sort``/``argsort``
    take ``descending``/``stable``), as a module object: attribute look-ups stay dict look-ups.
    On NumPy < 2.1 (no ``np.astype``), array-api-compat's namespace instead."""
    if not all(hasattr(np, n) for n in ("astype", "concat", "pow", "permute_dims", "bool")):
        import array_api_compat.numpy as xp_numpy    # old NumPy: the compat layer fills the gaps
        return xp_numpy
    ns = types.ModuleType("tensorplay_cpu.xp", "NumPy's namespace, array-API signatures")
    ns.__dict__.update({k: v for k, v in np.__dict__.items() if not k.startswith("__")})

    def argsort(x, /, *, axis=-1, descending=False, stable=True):
        kind = "stable" if stable else None
        if not descending:
            return np.argsort(x, axis=axis, kind=kind)
        # NumPy has no descending sort: sort the flipped array and map the indices back, which
        # keeps equal elements in their original order (a stable descending sort)
        res = np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind=kind), axis=axis)
        return (x.shape[axis] - 1) - res

    def sort(x, /, *, axis=-1, descending=False, stable=True):
        kind = "stable" if stable else None
        r = np.sort(x, axis=axis, kind=kind)
        return np.flip(r, axis=axis) if descending else r

    ns.argsort, ns.sort = argsort, sort
    return ns


class CPUBackend(lowp.Bfloat16Dtypes, ArrayBackend):
    """The ``tensorplay.backends.Backend`` of device ``cpu`` (through ``ArrayBackend``): NumPy
    arrays. Optional members it defines: ``as_strided`` over NumPy buffers, ``data_ptr``,
    ``from_dlpack``, random numbers (``manual_seed``, ``rand``, ``randn``) and
    ``fuse_elementwise`` (``tensorplay_cpu.fusion``); the others keep the protocol's defaults
    (one device, no device guard, copies through the host)."""

    device_type = "cpu"
    np = np
    xp = _namespace()

    _lowp_enabled = False      # set by tensorplay._kernels.lowp.enable on first bf16 use

    def __init__(self):
        super().__init__()
        self._rng_ = None

    @property
    def _rng(self):
        # made on first use: numpy.random is a lazy submodule of NumPy 2 whose import (~10 ms)
        # the first cpu op should not pay unless it draws random numbers
        r = self._rng_
        if r is None:
            r = self._rng_ = np.random.default_rng()
        return r

    def kernels(self) -> dict:
        if self._kernels is None:
            k = super().kernels()   # the reference kernels bound to xp
            self._kernels = lowp.wrap_kernels(k, self) if self._lowp_enabled else k
        return self._kernels

    def as_strided(self, root, shape, stride, offset):
        item = root.dtype.itemsize
        if 0 in shape or root.size == 0:
            return np.empty(shape, dtype=root.dtype)
        return np.ndarray(shape, dtype=root.dtype, buffer=root, offset=offset * item,
                          strides=tuple(s * item for s in stride))

    def data_ptr(self, arr) -> int:
        return arr.__array_interface__["data"][0]

    def from_host(self, obj, dtype, device):
        nd = self.native_dtype(dtype) if dtype is not None else None
        return np.array(obj, dtype=nd, copy=True)

    def to_host(self, arr):
        return arr

    def from_dlpack(self, obj):
        arr = np.from_dlpack(obj)
        if not arr.flags.writeable:
            # NumPy 1.x marks every DLPack import read-only (DLPack < 1.0 had no flag for it): a
            # NumPy array, or a cpu tensor (whose data is one), is shared as itself instead.
            from tensorplay import Tensor
            src = obj.native if isinstance(obj, Tensor) else obj
            if isinstance(src, np.ndarray) and src.flags.writeable:
                return src
        return arr

    def manual_seed(self, seed: int) -> None:
        self._rng_ = np.random.default_rng(seed)

    def rand(self, shape, dtype, device):
        return self._rng.random(shape, dtype=np.float64).astype(self.native_dtype(dtype))

    def randn(self, shape, dtype, device):
        return self._rng.standard_normal(shape, dtype=np.float64).astype(self.native_dtype(dtype))

    def fuse_elementwise(self, expr):
        """``tensorplay.compile``'s fuser protocol: one single-pass blocked function per fused
        chain of elementwise ops, equal to eager bit for bit (see ``tensorplay_cpu.fusion``)."""
        from .fusion import fuse
        return fuse(expr, self)
