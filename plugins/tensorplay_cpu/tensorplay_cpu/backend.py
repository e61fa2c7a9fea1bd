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
from itertools import repeat as _repeat
from operator import mul as _mul

import numpy as np

from tensorplay._kernels import lowp
from tensorplay._kernels.array_backend import PY_DATA as _PY_DATA, bf16_host_array, int_host_array
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
# loop (~0.4 ns an element on float32), maximum(zeros, x) of one shape its vector loop (~3x faster
# from ~2 k elements: 7 -> 2.5 us on (64, 256)). One block per dtype of _ZEROS elements, made on
# first use; longer row-major arrays are computed a block at a time.
#
# torch's relu is ``x < 0 ? 0 : x``: NaN passes, -0.0 stays -0.0 (clamp_min(0) keeps its input on
# a tie). NumPy's maximum propagates NaN; on a tie (-0.0 against 0) its float32/float64 loops give
# the *second* operand (1.26 to 2.5, contiguous, strided, scalar and SIMD), its float16 loop the
# *first*: _tie_order finds the operand order that keeps x once per dtype (a NumPy where neither
# does gets an exact `where`, slower).
_ZEROS = 1 << 16
_ZEROS_FROM = 2048


def _tie_order(dt):
    """``"second"`` when NumPy's ``maximum(0, x)`` gives ``x`` for ``x = -0.0`` (and NaN for
    NaN) in the loops relu reaches (0-d, short, long, strided; a zero scalar or array),
    ``"first"`` when ``maximum(x, 0)`` does, else None."""
    z = dt.type(0)
    for order in ("second", "first"):
        ok = True
        for n in (1, 37):
            x = np.full(2 * n, -0.0, dtype=dt)
            x[1::2] = np.nan
            for a in (x, x[::2], x[0]):
                for zz in (z, np.zeros(np.shape(a), dt)):
                    r = np.maximum(zz, a) if order == "second" else np.maximum(a, zz)
                    r = np.asarray(r).reshape(-1)
                    if not np.signbit(r[::2] if a is x else r).all() or \
                            a is x and not np.isnan(r[1::2]).all():
                        ok = False
        if ok:
            return order
    return None


def _fast_relu(reference, be):
    """The cpu ``relu`` kernel, torch's ``x < 0 ? 0 : x`` (NaN passes, ``-0.0`` stays ``-0.0``):
    for floating dtypes ``maximum`` of the array and a zero, in the order that keeps the array's
    value on a tie (``_tie_order``) -- against a view of the zero block for row-major
    float32/float64 arrays of ``_ZEROS_FROM`` to ``_ZEROS`` elements, else against a zero of the
    dtype; other dtypes go to ``reference`` (the core's kernel; bool refused there). Wrapped as
    the core wraps its kernels (quiet about floating point; the adapters read the wrapper's
    attributes)."""
    from tensorplay._kernels import xp as reference_kernels
    base = reference.__wrapped__
    f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
    maximum, where, less = np.maximum, np.where, np.less
    blocks: dict = {}
    # a zero of the array's own dtype: NumPy < 2's value-based casting makes maximum of a 0-d
    # float32 array and the Python int 0 a float64
    zero = {f16: f16.type(0), f32: f32.type(0), f64: f64.type(0)}
    order = {d: _tie_order(d) for d in zero}
    fast = order[f32] == order[f64] == "second"
    half_first = order[f16] == "first"

    def exact(x, dt):                 # (any floating dtype, whatever NumPy's tie rule)
        o = order[dt]
        if o == "second":
            return maximum(zero[dt], x)
        if o == "first":
            return maximum(x, zero[dt])
        return where(less(x, 0), zero[dt], x)

    def relu(x):
        dt = x.dtype
        if dt is f32 or dt is f64:
            n = x.size
            if n >= _ZEROS_FROM and x.flags.c_contiguous:
                z = blocks.get(dt)
                if z is None:
                    z = np.zeros(_ZEROS, dtype=dt)
                    z.flags.writeable = False
                    z = blocks.setdefault(dt, z)
                if n <= _ZEROS:
                    return maximum(z[:n].reshape(x.shape), x)
                # longer arrays block by block against the same zeros (the vector loop: 2.5x
                # faster than the number's at 2**18 float32 elements, ~1 us a block more)
                out = np.empty(x.shape, dt)
                xf, of = x.reshape(-1), out.reshape(-1)
                for i in range(0, n - _ZEROS, _ZEROS):
                    maximum(z, xf[i:i + _ZEROS], out=of[i:i + _ZEROS])
                i = (n - 1) // _ZEROS * _ZEROS
                maximum(z[:n - i], xf[i:], out=of[i:])
                return out
            return maximum(zero[dt], x)
        if dt is f16:
            return maximum(x, zero[dt]) if half_first else exact(x, dt)
        return base(x)                # other dtypes (bool refused there)

    def relu_exact(x):
        dt = x.dtype
        return exact(x, dt) if dt in zero else base(x)

    f = relu if fast else relu_exact
    f.__doc__ = base.__doc__
    return reference_kernels._quiet({"relu": f}, be)["relu"]


def _fast_threshold_backward(reference, be):
    """relu's backward on the cpu, torch's ``threshold_backward(g, y, 0)``: ``g`` where the
    output ``y`` is not ``<= 0`` (a relu output is ``>= 0``, ``-0.0`` or NaN, so ``y != 0`` says
    it), else exactly +0 -- also for an infinite or NaN ``g``, where ``g * (y != 0)`` gave NaN.
    For floating ``g`` of 2, 4 or 8 bytes (``g`` and ``y`` of one dtype, as ``fused`` passes
    them) the selection is an integer product of ``g``'s bit pattern with the 0/1 mask: the same
    two passes as that float product (64x256: 6.7 vs 6.0 us, 256x1024 and 2**20: within the
    spread) where ``where`` takes 3x to 12x longer (branches on a random mask). Other dtypes go
    to ``reference``."""
    from tensorplay._kernels import xp as reference_kernels
    base = reference.__wrapped__
    bits = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32,
            np.dtype(np.float64): np.uint64}
    multiply, not_equal = np.multiply, np.not_equal

    def _threshold_backward(g, y):
        dt = g.dtype
        u = bits.get(dt)
        if u is None or y.dtype is not dt:
            return base(g, y)
        # (unsigned int times bool: NumPy's unsigned loop, the mask cast to 0/1)
        return multiply(g.view(u), not_equal(y, 0)).view(dt)

    _threshold_backward.__doc__ = base.__doc__
    return reference_kernels._quiet({"_threshold_backward": _threshold_backward},
                                    be)["_threshold_backward"]


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
            k["_threshold_backward"] = _fast_threshold_backward(k["_threshold_backward"], self)
            self._kernels = lowp.wrap_kernels(k, self) if self._lowp_enabled else k
        return self._kernels

    def as_strided(self, root, shape, stride, offset):
        item = root.dtype.itemsize
        if 0 in shape or root.size == 0:
            return np.empty(shape, dtype=root.dtype)
        return np.ndarray(shape, dtype=root.dtype, buffer=root, offset=offset * item,
                          strides=tuple(map(_mul, stride, _repeat(item))))   # (no generator frame)

    def data_ptr(self, arr) -> int:
        return arr.__array_interface__["data"][0]

    def from_host(self, obj, dtype, device):
        nd = self.native_dtype(dtype) if dtype is not None else None
        if nd is not None and obj.__class__ in _PY_DATA and nd.kind in "iu":
            # Python numbers into an integer dtype: torch's checked conversion (NumPy's own
            # raises or wraps by its version)
            return int_host_array(np, obj, nd)
        if nd is not None and nd.kind == "V" and getattr(obj, "dtype", None) != nd:
            return bf16_host_array(np, obj, nd)      # bfloat16 through float32, as torch
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
