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


# relu over a shared read-only block of zeros: NumPy's maximum(x, 0) with a number runs a scalar
# loop (~0.4 ns an element on float32), maximum(x, zeros) of one shape its vector loop (~3x faster
# from ~2 k elements: 7 -> 2.5 us on (64, 256)); the values are the same bit for bit (NaN
# propagated, +0 for -0.0). One block per dtype, made on first use, up to _ZEROS elements.
_ZEROS = 1 << 16
_ZEROS_FROM = 2048


def _fast_relu(reference, be):
    """The cpu ``relu`` kernel: for float32/float64, ``maximum`` against a view of the zero block
    (row-major arrays of ``_ZEROS_FROM`` to ``_ZEROS`` elements) or against 0 (the reference
    kernel's own call); other dtypes go to ``reference`` (the core's kernel). Wrapped as the core
    wraps its kernels (quiet about floating point; the adapters read the wrapper's
    attributes)."""
    from tensorplay._kernels import xp as reference_kernels
    base = reference.__wrapped__
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    maximum = np.maximum
    blocks: dict = {}
    # a zero of the array's own dtype: NumPy < 2's value-based casting makes maximum of a 0-d
    # float32 array and the Python int 0 a float64
    zero = {f32: f32.type(0), f64: f64.type(0)}

    def relu(x):
        dt = x.dtype
        if dt is f32 or dt is f64:
            n = x.size
            if _ZEROS_FROM <= n <= _ZEROS and x.flags.c_contiguous:
                z = blocks.get(dt)
                if z is None:
                    z = np.zeros(_ZEROS, dtype=dt)
                    z.flags.writeable = False
                    z = blocks.setdefault(dt, z)
                return maximum(x, z[:n].reshape(x.shape))
            return maximum(x, zero[dt])   # the reference kernel's call, without its frame
        return base(x)                # other dtypes (bool refused there)

    relu.__doc__ = base.__doc__
    return reference_kernels._quiet({"relu": relu}, be)["relu"]


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
            k = dict(super().kernels())   # the reference kernels bound to xp
            k["relu"] = _fast_relu(k["relu"], self)
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
