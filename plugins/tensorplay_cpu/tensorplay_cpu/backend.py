"""The cpu backend: NumPy arrays as storage; built-in kernels are the core's reference kernels
bound to NumPy's array-API namespace (array-api-compat)."""

from __future__ import annotations

import array_api_compat.numpy as xp_numpy
import numpy as np

from tensorplay._backend import ArrayBackend


class CPUBackend(ArrayBackend):
    device_type = "cpu"
    np = np
    xp = xp_numpy

    def __init__(self):
        super().__init__()
        self._rng = np.random.default_rng()

    def as_strided(self, root, shape, stride, offset):
        item = root.dtype.itemsize
        if 0 in shape or root.size == 0:
            return np.empty(shape, dtype=root.dtype)
        return np.ndarray(shape, dtype=root.dtype, buffer=root, offset=offset * item,
                          strides=tuple(s * item for s in stride))

    def data_ptr(self, arr) -> int:
        return arr.__array_interface__["data"][0]

    def from_host(self, obj, dtype, device):
        if dtype is not None and dtype.name == "bfloat16":
            raise TypeError("cpu: bfloat16 is not supported by numpy; use float16 or float32")
        return np.array(obj, dtype=self.native_dtype(dtype) if dtype is not None else None,
                        copy=True)

    def to_host(self, arr):
        return arr

    def from_dlpack(self, obj):
        arr = np.from_dlpack(obj)
        if not arr.flags.writeable:
            # NumPy 1.x marks every DLPack import read-only (DLPack < 1.0 had no flag for it): a
            # NumPy array, or a cpu tensor (whose data is one), is shared as itself instead.
            from tensorplay import Tensor
            src = obj._data if isinstance(obj, Tensor) else obj
            if isinstance(src, np.ndarray) and src.flags.writeable:
                return src
        return arr

    def manual_seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def rand(self, shape, dtype, device):
        return self._rng.random(shape, dtype=np.float64).astype(self.native_dtype(dtype))

    def randn(self, shape, dtype, device):
        return self._rng.standard_normal(shape, dtype=np.float64).astype(self.native_dtype(dtype))
