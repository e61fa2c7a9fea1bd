"""Reference kernels of the pointwise unary ops: each op's array-API function
(``elementwise.OPS[op].xp``; integer inputs of floating functions in the default float dtype),
the composites (``sigmoid``, ``rsqrt``, ``relu``), ``erf`` (absent from the array API), the
classification and rounding ops (``floor``, ``ceil``, ``trunc``, ``round``)."""

from __future__ import annotations

import math

from .. import _dtype
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
    # inverse hyperbolics (torch.asinh/acosh/atanh): the array API's, integers as the default float
    for name in ("asinh", "acosh", "atanh"):
        k[name] = floating(getattr(xp, name, None) or getattr(c.be.np, "arc" + name[1:]))
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
# erf(x) = x * sum_n c_n (x*x)**n, c_n = 2/sqrt(pi) (-1)**n / (n! (2n+1)), highest power first
_ERF_SERIES = [_TWO_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1))
               for n in range(8, -1, -1)]


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
            # (the series loses the sign of a zero: -0.0 * -0.0 is +0.0)
            return xp.where(x == 0, x, erf64(x))
        # float32/float16: computed in float64, rounded once. |x| < 0.5: the Maclaurin series
        # (9 terms in Horner form, relative error < 1e-10: erf(x) ~ 2x/sqrt(pi), so tiny inputs keep their
        # digits; the A&S formula used before gave 0 for |x| < 1e-8 and 1e-4 relative error
        # at 1e-3); else 1 - erfc with Numerical Recipes' Chebyshev erfcc
        # (relative error < 1.2e-7 of erfc, < 1.2e-7 of erf for |x| >= 0.5). ~1 float32 ulp.
        x64 = xp.astype(x, c.nd(_dtype.float64))
        a = xp.abs(x64)
        small = a < 0.5
        xs = xp.where(small, x64, xp.zeros_like(x64))
        z = xs * xs
        p = _ERF_SERIES[0]
        for coef in _ERF_SERIES[1:]:
            p = p * z + coef
        t = 1.0 / (1.0 + 0.5 * a)
        erfc = t * xp.exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
            0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
                1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
        large = xp.sign(x64) * (1.0 - erfc)
        r = xp.where(small, xs * p, large)
        return xp.astype(xp.where(x64 == 0, x64, r), x.dtype)   # -0.0 keeps its sign
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
        if x.dtype.itemsize < 4:
            # float16: scaled in float32 as torch (round(1e4, decimals=1) is 1e4: x * 10
            # overflowed float16 to inf)
            return xp.astype(round_(xp.astype(x, c.F32), decimals=decimals), x.dtype)
        if decimals > 0:
            s = 10.0 ** decimals
            return xp.astype(xp.round(x * s) / s, x.dtype)
        s = 10.0 ** -decimals
        return xp.astype(xp.round(x / s) * s, x.dtype)

    return dict(floor=unchanged_ints(xp.floor), ceil=unchanged_ints(xp.ceil),
                trunc=unchanged_ints(xp.trunc), round=round_)
