"""Reference kernels of the pointwise unary ops: each op's array-API function
(``elementwise.OPS[op].xp``; integer inputs of floating functions in the default float dtype),
the composites (``sigmoid``, ``rsqrt``, ``relu``), ``erf`` (absent from the array API), the
classification and rounding ops (``floor``, ``ceil``, ``trunc``, ``round``)."""

from __future__ import annotations

import math

from .elementwise import OPS


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    k = _from_table(c)
    k.update(_composites(c))
    k["erf"] = _erf(c)
    k.update(_rounding(c))
    return k


def _from_table(c):
    """The ops that are one array-API call: ``xp.<form>(x)``, after ``fl`` for floating ones."""
    xp, fl = c.xp, c.fl

    def floating(f):
        return lambda x: f(fl(x))

    k = {}
    for name in ("neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos", "expm1", "log1p",
                 "log2", "log10", "exp2", "tan", "asin", "acos", "atan", "sinh", "cosh"):
        p = OPS[name]
        # exp2 is outside the array API: the backend's NumPy-like module has it as a ufunc
        f = getattr(xp, p.xp, None) or getattr(c.be.np, p.ufunc)
        k[name] = floating(f) if p.float_result else f

    def sign(x):
        # bool: the input itself, as torch (NumPy's sign has no bool loop)
        return xp.asarray(x, copy=True) if x.dtype.kind == "b" else xp.sign(x)
    k["sign"] = sign
    k.update(isnan=xp.isnan, isinf=xp.isinf, isfinite=xp.isfinite)
    return k


def _composites(c):
    xp, fl, legacy, as_ = c.xp, c.fl, c.legacy, c.as_

    def sigmoid(x):
        x = fl(x)
        return xp.astype(1.0 / (1.0 + xp.exp(-x)), x.dtype)

    def relu(x):
        if x.dtype.kind == "b":
            raise TypeError("relu of a bool array")   # the fake rule raises torch's refusal
        # maximum propagates NaN (torch's clamp_min(0) semantics) and gives +0 for -0.0; a
        # `where` on a random sign mask is ~15x slower on NumPy (branch mispredictions)
        return xp.maximum(x, as_(0, x.dtype) if legacy else 0)

    def rsqrt(x):
        x = fl(x)
        r = 1.0 / xp.sqrt(x)
        # a Python float keeps a floating array's dtype: no cast (xp.astype copies always)
        return r if r.dtype == x.dtype else xp.astype(r, x.dtype)

    return dict(sigmoid=sigmoid, relu=relu, rsqrt=rsqrt)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI = math.sqrt(math.pi)


def _erf(c):
    xp, fl = c.xp, c.fl

    def erf64(x):
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

    def erf(x):
        x = fl(x)
        if x.dtype.itemsize >= 8:
            return erf64(x)
        # Abramowitz & Stegun 7.1.26: |err| < 1.5e-7, enough for float32/float16
        s = xp.sign(x)
        a = xp.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                   + 0.254829592) * t * xp.exp(-a * a)
        return xp.astype(s * y, x.dtype)
    return erf


def _rounding(c):
    xp = c.xp

    def unchanged_ints(f):
        def k(x):
            return f(x) if x.dtype.kind == "f" else xp.asarray(x, copy=True)
        return k

    def round_(x, *, decimals=0):
        if x.dtype.kind != "f":
            return xp.asarray(x, copy=True)
        if decimals == 0:
            return xp.round(x)   # half to even, as torch
        if decimals > 0:
            s = 10.0 ** decimals
            return xp.astype(xp.round(x * s) / s, x.dtype)
        s = 10.0 ** -decimals
        return xp.astype(xp.round(x / s) * s, x.dtype)

    return dict(floor=unchanged_ints(xp.floor), ceil=unchanged_ints(xp.ceil),
                trunc=unchanged_ints(xp.trunc), round=round_)
