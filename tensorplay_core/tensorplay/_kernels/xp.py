"""Reference kernels of the built-in ops, written once against the array-API namespace ``xp``.

``bind(xp, backend)`` returns ``{op name: kernel}`` with ``xp`` closed over; the CPU plugin binds
numpy's namespace and the CUDA plugin CuPy's (array-api-compat), so each kernel exists once
(array-api-compat's habit). Kernels take and return *native* arrays; dtypes arrive as
``tensorplay.DType`` and are mapped with ``backend.native_dtype``. Where NumPy's promotion
differs from torch's (an int array with a Python float, int / int), the kernel casts first so
the result dtype equals the fake rule's.

A few operations the array API lacks (scatter-add, masked writes, strided views, random numbers)
go through small backend methods.
"""

from __future__ import annotations

import math

from .. import _dtype
from .._ops import _shapes


def bind(xp, be) -> dict:
    nd = be.native_dtype

    def _deflt():
        return nd(_dtype.get_default_dtype())

    def _fl(a):
        return a if a.dtype.kind == "f" else xp.astype(a, _deflt())

    dt_of = be.dtype_of
    rdt = _shapes.binary_result_dtype
    wrapped = _shapes._wrapped_dtype
    _small_int = {}

    def _int_scalar(b, t):
        # NumPy 2 refuses a Python int outside the array dtype's range; torch wraps it around
        r = _small_int.get(t)
        if r is None:
            info = be.np.iinfo(nd(t))
            r = _small_int[t] = (int(info.min), int(info.max))
        if r[0] <= b <= r[1]:
            return b
        return xp.astype(xp.asarray(b, dtype=nd(_dtype.int64)), nd(t))

    def _prep(a, b, floating=False):
        """Cast ``a`` (array) and ``b`` (array or Python scalar) to torch's result dtype (the
        same rule as the fake rules: ``_ops._shapes.binary_result_dtype``). Python scalars stay
        scalars (NumPy 2 treats them as weak, like torch's wrapped numbers)."""
        da = dt_of(a)
        if isinstance(b, (int, float)):
            t = rdt(da, 2 if a.ndim else 1, wrapped(b), 0)
            if floating and not t.is_floating_point:
                t = _dtype.get_default_dtype()
            if t is not da:
                a = xp.astype(a, nd(t))
            if b.__class__ is int and t._kind == "i" and t is not _dtype.int64:
                b = _int_scalar(b, t)
            return a, b
        db = dt_of(b)
        t = rdt(da, 2 if a.ndim else 1, db, 2 if b.ndim else 1)
        if floating and not t.is_floating_point:
            t = _dtype.get_default_dtype()
        if t is not da:
            a = xp.astype(a, nd(t))
        if t is not db:
            b = xp.astype(b, nd(t))
        return a, b

    def add(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b":
            return xp.logical_or(a, b)
        return xp.add(a, b)

    def sub(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b":
            raise RuntimeError("sub: subtraction with two bool tensors is not supported; use "
                               "logical_xor or cast to an integer dtype first (same as torch)")
        return xp.subtract(a, b)

    def rsub(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b":
            raise RuntimeError("rsub: subtraction with two bool tensors is not supported; cast "
                               "to an integer dtype first (same as torch)")
        return xp.subtract(b, a)

    def mul(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b":
            return xp.logical_and(a, b)
        return xp.multiply(a, b)

    def div(a, b):
        a, b = _prep(a, b, True)
        return xp.divide(a, b)

    def rdiv(a, b):
        a, b = _prep(a, b, True)
        return xp.divide(b, a)

    def _int_divisor_check(a, b, name):
        # integer division by zero: torch raises, numpy would warn and return garbage
        if a.dtype.kind in "iu" and (not hasattr(b, "dtype") and b == 0 or
                                     hasattr(b, "dtype") and not xp.all(b != 0)):
            raise ZeroDivisionError(f"{name}: integer division by zero")

    def floor_divide(a, b):
        a, b = _prep(a, b)
        _int_divisor_check(a, b, "floor_divide")
        return xp.floor_divide(a, b)

    def remainder(a, b):
        a, b = _prep(a, b)
        _int_divisor_check(a, b, "remainder")
        return xp.remainder(a, b)

    def pow(a, b):
        a, b = _prep(a, b)
        return xp.pow(a, b)

    def rpow(a, b):
        a, b = _prep(a, b)
        return xp.pow(xp.asarray(b, dtype=a.dtype), a)

    def maximum(a, b):
        a, b = _prep(a, b)
        if isinstance(b, (int, float)):
            b = xp.asarray(b, dtype=a.dtype)
        return xp.maximum(a, b)

    def minimum(a, b):
        a, b = _prep(a, b)
        if isinstance(b, (int, float)):
            b = xp.asarray(b, dtype=a.dtype)
        return xp.minimum(a, b)

    def _cmp(f):
        def k(a, b):
            a, b = _prep(a, b)
            return f(a, b)
        return k

    def _as_bool(x):
        if isinstance(x, (int, float)):
            return bool(x)
        return x if x.dtype.kind == "b" else xp.astype(x, xp.bool)

    def logical_and(a, b):
        return xp.logical_and(_as_bool(a), _as_bool(b))

    def logical_or(a, b):
        return xp.logical_or(_as_bool(a), _as_bool(b))

    def logical_not(a):
        return xp.logical_not(_as_bool(a))

    def where(c, a, b):
        ta, tb = hasattr(a, "dtype"), hasattr(b, "dtype")
        t = rdt(dt_of(a) if ta else wrapped(a), (2 if a.ndim else 1) if ta else 0,
                dt_of(b) if tb else wrapped(b), (2 if b.ndim else 1) if tb else 0)
        n = nd(t)
        a = (a if a.dtype == n else xp.astype(a, n)) if ta else xp.asarray(a, dtype=n)
        b = (b if b.dtype == n else xp.astype(b, n)) if tb else xp.asarray(b, dtype=n)
        return xp.where(_as_bool(c), a, b)

    _TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
    _SQRT_PI = math.sqrt(math.pi)

    def _erf64(x):
        # |x| < 2.5: Maclaurin series; else erfc's continued fraction. |err| < 2e-14 (the
        # array API has no erf; float64 needs more than the float32 approximation)
        a = xp.abs(x)
        small = a < 2.5
        xs = xp.where(small, x, xp.zeros_like(x))
        z = -xs * xs
        p = xp.ones_like(xs)
        s = xs
        for n in range(1, 48):
            p = p * z / n
            s = s + p * xs / (2 * n + 1)
        xl = xp.where(small, xp.full_like(x, 3.0), xp.minimum(a, xp.full_like(x, 30.0)))
        f = xl
        for k in range(60, 0, -1):
            f = xl + (k / 2) / f
        large = xp.sign(x) * (1.0 - xp.exp(-xl * xl) / (_SQRT_PI * f))
        return xp.where(small, s * _TWO_OVER_SQRT_PI, large)

    def _erf(x):
        x = _fl(x)
        if x.dtype.itemsize >= 8:
            return _erf64(x)
        # Abramowitz & Stegun 7.1.26: |err| < 1.5e-7, enough for float32/float16
        s = xp.sign(x)
        a = xp.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                   + 0.254829592) * t * xp.exp(-a * a)
        return xp.astype(s * y, x.dtype)

    def sigmoid(x):
        x = _fl(x)
        return xp.astype(1.0 / (1.0 + xp.exp(-x)), x.dtype)

    def relu(x):
        return xp.where(x > 0, x, xp.zeros_like(x))

    def rsqrt(x):
        x = _fl(x)
        return xp.astype(1.0 / xp.sqrt(x), x.dtype)

    def _sum(x, dim=None, keepdim=False, *, dtype=None):
        axis = None if not dim or not x.ndim else tuple(dim)   # 0-dim: dim 0/-1 allowed
        if dtype is not None:
            return xp.sum(x, axis=axis, keepdims=keepdim, dtype=nd(dtype))
        if x.dtype.kind in "biu":
            return xp.sum(x, axis=axis, keepdims=keepdim, dtype=nd(_dtype.int64))
        return xp.sum(x, axis=axis, keepdims=keepdim)

    def mean(x, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            x = xp.astype(x, nd(dtype))
        elif x.dtype.kind not in "f":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be a "
                               f"floating point dtype, got {dt_of(x)}; pass dtype= or convert "
                               f"with .float() first")
        axis = None if not dim or not x.ndim else tuple(dim)
        return xp.mean(x, axis=axis, keepdims=keepdim)

    def amax(x, dim=(), keepdim=False):
        return xp.max(x, axis=tuple(dim) if dim and x.ndim else None, keepdims=keepdim)

    def amin(x, dim=(), keepdim=False):
        return xp.min(x, axis=tuple(dim) if dim and x.ndim else None, keepdims=keepdim)

    def argmax(x, dim=None, keepdim=False):
        if dim is None:
            r = xp.argmax(xp.reshape(x, (-1,)))
            return xp.reshape(r, (1,) * x.ndim) if keepdim else r
        return xp.argmax(x, axis=dim if x.ndim else None, keepdims=keepdim)

    def matmul(a, b):
        a, b = _prep(a, b)
        return xp.matmul(a, b)

    def _need_float(x, api):
        # torch: "softmax_lastdim_kernel_impl" not implemented for 'Long' (no int -> float here)
        if x.dtype.kind in "biu":
            raise RuntimeError(f"{api}(): expected a floating point input, got {dt_of(x)} "
                               f"(not implemented for integer/bool tensors, as in torch); "
                               f"convert it first, e.g. x.float().{api}(dim)")
        return _fl(x)

    def softmax(x, dim):
        x = _need_float(x, "softmax")
        e = xp.exp(x - xp.max(x, axis=dim, keepdims=True))
        return e / xp.sum(e, axis=dim, keepdims=True)

    def log_softmax(x, dim):
        x = _need_float(x, "log_softmax")
        m = xp.max(x, axis=dim, keepdims=True)
        z = x - m
        return z - xp.log(xp.sum(xp.exp(z), axis=dim, keepdims=True))

    def cat(ts, dim=0):
        ts = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)] or ts
        dt = dt_of(ts[0])
        for t in ts[1:]:
            dt = _dtype.promote_types(dt, dt_of(t))
        n = nd(dt)
        return xp.concat([t if t.dtype == n else xp.astype(t, n) for t in ts], axis=dim)

    def stack(ts, dim=0):
        dt = dt_of(ts[0])
        for t in ts[1:]:
            dt = _dtype.promote_types(dt, dt_of(t))
        n = nd(dt)
        return xp.stack([t if t.dtype == n else xp.astype(t, n) for t in ts], axis=dim)

    def clone(x):
        return xp.asarray(x, copy=True)

    def to_dtype(x, dtype):
        return xp.astype(x, nd(dtype))

    def copy_(dst, src):
        be.assign(dst, src)

    def fill_(dst, value):
        be.assign(dst, value)

    _KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}

    def _inplace_result(api, dst, r):
        # torch: an in-place result may not be of a higher category than the tensor it writes
        if _KIND_RANK[r.dtype.kind] > _KIND_RANK[dst.dtype.kind]:
            raise RuntimeError(f"{api}: result type {dt_of(r)} can't be cast to the desired "
                               f"output type {dt_of(dst)}; use the out-of-place op instead")
        be.assign(dst, r)

    def add_(dst, other):
        _inplace_result("add_", dst, add(dst, other))

    def mul_(dst, other):
        _inplace_result("mul_", dst, mul(dst, other))

    def index(x, dim, idx):
        flat = xp.reshape(idx, (-1,))
        n = x.shape[dim]
        flat = xp.where(flat < 0, flat + n, flat)
        r = xp.take(x, flat, axis=dim)
        return xp.reshape(r, tuple(x.shape[:dim]) + tuple(idx.shape) + tuple(x.shape[dim + 1:]))

    def index_add(x, dim, idx, src):
        out = xp.asarray(x, copy=True)
        be.scatter_add(out, dim, idx, src)
        return out

    def index_put_(x, dim, idx, values):
        be.index_put(x, dim, idx, values)

    def masked_select(x, mask):
        return be.masked_select(x, mask)

    def masked_scatter_(x, mask, src):
        be.masked_scatter(x, mask, src)

    def masked_fill_(x, mask, value):
        be.assign(x, xp.where(mask, xp.asarray(value, dtype=x.dtype) if isinstance(
            value, (int, float)) else value, x))

    def empty(size, *, dtype, device):
        return be.empty(tuple(size), dtype, device)

    def full(size, fill_value, *, dtype, device):
        return be.full(tuple(size), fill_value, dtype, device)

    def arange(start, end, step, *, dtype, device):
        return be.arange(start, end, step, dtype, device)

    def rand(size, *, dtype, device):
        return be.rand(tuple(size), dtype, device)

    def randn(size, *, dtype, device):
        return be.randn(tuple(size), dtype, device)

    def sign(x):
        return xp.sign(x)

    kernels = dict(
        add=add, sub=sub, rsub=rsub, mul=mul, div=div, rdiv=rdiv, pow=pow, rpow=rpow,
        floor_divide=floor_divide, remainder=remainder,
        maximum=maximum, minimum=minimum,
        eq=_cmp(xp.equal), ne=_cmp(xp.not_equal), lt=_cmp(xp.less), le=_cmp(xp.less_equal),
        gt=_cmp(xp.greater), ge=_cmp(xp.greater_equal),
        logical_and=logical_and, logical_or=logical_or, logical_not=logical_not, sign=sign,
        neg=xp.negative, exp=lambda x: xp.exp(_fl(x)), log=lambda x: xp.log(_fl(x)),
        sqrt=lambda x: xp.sqrt(_fl(x)), rsqrt=rsqrt, tanh=lambda x: xp.tanh(_fl(x)),
        sigmoid=sigmoid, relu=relu, abs=xp.abs, sin=lambda x: xp.sin(_fl(x)),
        cos=lambda x: xp.cos(_fl(x)), erf=_erf, where=where,
        sum=_sum, mean=mean, amax=amax, amin=amin, argmax=argmax, matmul=matmul,
        softmax=softmax, log_softmax=log_softmax, cat=cat, stack=stack, clone=clone,
        to_dtype=to_dtype, copy_=copy_, fill_=fill_, add_=add_, mul_=mul_,
        index=index, index_add=index_add, index_put_=index_put_, masked_select=masked_select,
        masked_scatter_=masked_scatter_, masked_fill_=masked_fill_,
        empty=empty, full=full, arange=arange, rand=rand, randn=randn,
    )
    return kernels


__all__ = ["bind", "math"]
