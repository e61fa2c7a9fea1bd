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


def bind(xp, be) -> dict:
    nd = be.native_dtype

    def _deflt():
        return nd(_dtype.get_default_dtype())

    def _fl(a):
        return a if a.dtype.kind == "f" else xp.astype(a, _deflt())

    def _prep(a, b):
        # torch promotion where numpy differs: python float with int/bool array -> default float;
        # int array with float array -> the float array's dtype.
        if isinstance(b, float):
            if a.dtype.kind != "f":
                a = xp.astype(a, _deflt())
            return a, b
        if isinstance(b, bool) or isinstance(b, int):
            if a.dtype.kind == "b" and not isinstance(b, bool):
                a = xp.astype(a, nd(_dtype.int64))
            return a, b
        ka, kb = a.dtype.kind, b.dtype.kind
        if ka != kb:
            if ka == "f" and kb != "f":
                b = xp.astype(b, a.dtype)
            elif kb == "f" and ka != "f":
                a = xp.astype(a, b.dtype)
        elif ka == "f" and a.dtype != b.dtype and (a.ndim == 0) != (b.ndim == 0):
            # a 0-dim float tensor does not change a dimensioned one's dtype (torch)
            if a.ndim == 0:
                a = xp.astype(a, b.dtype)
            else:
                b = xp.astype(b, a.dtype)
        return a, b

    def add(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b" and not isinstance(b, (int, float)):
            return xp.logical_or(a, b)
        return xp.add(a, b)

    def sub(a, b):
        a, b = _prep(a, b)
        return xp.subtract(a, b)

    def rsub(a, b):
        a, b = _prep(a, b)
        return xp.subtract(b, a)

    def mul(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b" and not isinstance(b, (int, float)):
            return xp.logical_and(a, b)
        return xp.multiply(a, b)

    def div(a, b):
        a = _fl(a)
        if not isinstance(b, (int, float)):
            b = _fl(b)
        a, b = _prep(a, b)
        return xp.divide(a, b)

    def rdiv(a, b):
        a = _fl(a)
        return xp.divide(b, a)

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

    def logical_and(a, b):
        return xp.logical_and(xp.astype(a, xp.bool), b if isinstance(b, (int, float)) and
                              not isinstance(b, bool) and False else
                              (xp.astype(b, xp.bool) if not isinstance(b, (int, float)) else bool(b)))

    def logical_or(a, b):
        return xp.logical_or(xp.astype(a, xp.bool),
                             xp.astype(b, xp.bool) if not isinstance(b, (int, float)) else bool(b))

    def logical_not(a):
        return xp.logical_not(xp.astype(a, xp.bool))

    def where(c, a, b):
        if not hasattr(a, "dtype"):
            if not hasattr(b, "dtype"):
                dt = _deflt() if isinstance(a, float) or isinstance(b, float) else nd(_dtype.int64)
                a = xp.asarray(a, dtype=dt)
            else:
                b, a = _prep(b, a)
                a = xp.asarray(a, dtype=b.dtype)
        if not hasattr(b, "dtype"):
            a, b = _prep(a, b)
            b = xp.asarray(b, dtype=a.dtype)
        a, b = _prep(a, b)
        return xp.where(xp.astype(c, xp.bool), a, b)

    def _erf(x):
        # Abramowitz & Stegun 7.1.26 refined with one Newton-free correction: |err| < 1.5e-7,
        # enough for float32; the array API has no erf.
        x = _fl(x)
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
        axis = None if not dim else tuple(dim)
        if dtype is not None:
            return xp.sum(x, axis=axis, keepdims=keepdim, dtype=nd(dtype))
        if x.dtype.kind in "biu":
            return xp.sum(x, axis=axis, keepdims=keepdim, dtype=nd(_dtype.int64))
        return xp.sum(x, axis=axis, keepdims=keepdim)

    def mean(x, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            x = xp.astype(x, nd(dtype))
        axis = None if not dim else tuple(dim)
        return xp.mean(x, axis=axis, keepdims=keepdim)

    def amax(x, dim=(), keepdim=False):
        return xp.max(x, axis=tuple(dim) if dim else None, keepdims=keepdim)

    def amin(x, dim=(), keepdim=False):
        return xp.min(x, axis=tuple(dim) if dim else None, keepdims=keepdim)

    def argmax(x, dim=None, keepdim=False):
        if dim is None:
            r = xp.argmax(xp.reshape(x, (-1,)))
            return xp.reshape(r, (1,) * x.ndim) if keepdim else r
        return xp.argmax(x, axis=dim, keepdims=keepdim)

    def matmul(a, b):
        a, b = _prep(a, b)
        return xp.matmul(a, b)

    def softmax(x, dim):
        x = _fl(x)
        e = xp.exp(x - xp.max(x, axis=dim, keepdims=True))
        return e / xp.sum(e, axis=dim, keepdims=True)

    def log_softmax(x, dim):
        x = _fl(x)
        m = xp.max(x, axis=dim, keepdims=True)
        z = x - m
        return z - xp.log(xp.sum(xp.exp(z), axis=dim, keepdims=True))

    def cat(ts, dim=0):
        ts = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)] or ts
        dt = ts[0].dtype
        for t in ts[1:]:
            if t.dtype != dt:
                dt = nd(_dtype.promote_types(be.dtype_of(t), be.dtype_of(ts[0])))
        return xp.concat([xp.astype(t, dt) for t in ts], axis=dim)

    def stack(ts, dim=0):
        return xp.stack(ts, axis=dim)

    def clone(x):
        return xp.asarray(x, copy=True)

    def to_dtype(x, dtype):
        return xp.astype(x, nd(dtype))

    def copy_(dst, src):
        be.assign(dst, src)

    def fill_(dst, value):
        be.assign(dst, value)

    def add_(dst, other):
        be.assign(dst, add(dst, other))

    def mul_(dst, other):
        be.assign(dst, mul(dst, other))

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
