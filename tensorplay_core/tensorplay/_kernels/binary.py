"""Reference kernels of the pointwise binary ops (arithmetic, comparisons, logic, ``where``) and
their in-place forms: the array-API function of each op (``elementwise.OPS[op].xp``) with torch's
rules around it -- promotion to the fake rule's dtype (``Context.prep``), float16 numbers read at
float32 (``Context.half_opmath``), bool operands torch refuses, integer division by zero.

A kernel that meets operands torch refuses raises TypeError: the op's adapter then runs its fake
rule, which raises torch's own message (``_ops._shapes.check_bool_operands``).
"""

from __future__ import annotations

import math

from .. import _dtype
from .elementwise import OPS, POW_BY_NUMBER, compose


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    k = _arithmetic(c)
    k.update(_division(c))
    k.update(_power(c))
    k.update(_compare(c))
    k.update(_logic(c))
    k.update(_math2(c))
    k.update(_inplace(c, k))
    _mark_float_ufuncs(c, k)
    return k


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """Integer ``//`` or ``%`` by zero: torch raises ``RuntimeError: ZeroDivisionError``; a
    ``ZeroDivisionError`` too, for Python's habit (and this project's earlier behaviour)."""


def _no_bool(a, b):
    if a.dtype.kind == "b" or b.__class__ is bool or getattr(b, "dtype", a.dtype).kind == "b":
        raise TypeError("subtraction with a bool operand")


def _bool_kernel(a, name):
    if a.dtype.kind == "b":   # both operands bool (after prep): torch has no such kernel
        raise TypeError(f"{name} of bool operands")


def _arithmetic(c):
    xp, prep, half_opmath, F16, F32 = c.xp, c.prep, c.half_opmath, c.F16, c.F32
    legacy, as_ = c.legacy, c.as_
    ONE16 = F16.type(1)

    def add(a, b):
        a, b = prep(a, b)
        if a.dtype.kind == "b":
            return xp.logical_or(a, b)
        return xp.add(a, b)

    def sub(a, b):
        _no_bool(a, b)
        a, b = prep(a, b)
        return xp.subtract(a, b)

    def rsub(a, b):
        _no_bool(a, b)
        a, b = prep(a, b)
        return xp.subtract(b, a)

    def at_float32_for_half(f, name, floating):
        """``f`` with torch's promotion, a float16 ``a`` computing at float32 when ``b`` is a
        number torch reads there (``half_opmath``), bool operands as ``logical_and``."""
        def k(a, b):
            if a.dtype is F16:
                h = half_opmath(a, b)
                if h is not None:
                    return xp.astype(f(*h), F16)
            a, b = prep(a, b, floating)
            if a.dtype.kind == "b":      # (mul only: div's floating prep gives no bool)
                return xp.logical_and(a, b)
            return f(a, b)
        k.__name__ = k.__qualname__ = name
        return k

    mul = at_float32_for_half(xp.multiply, "mul", False)
    div = at_float32_for_half(xp.divide, "div", True)

    def rdiv(a, b):
        if a.dtype is F16 and b.__class__ in (float, int):
            # torch: s / t is t.reciprocal() * s (reciprocal rounded to float16, s at float32)
            r = xp.astype(xp.divide(ONE16 if legacy else 1, a), F32)
            return xp.astype(xp.multiply(r, as_(b, F32) if legacy else b), F16)
        a, b = prep(a, b, True)
        return xp.divide(b, a)

    return dict(add=add, sub=sub, rsub=rsub, mul=mul, div=div, rdiv=rdiv)


def _division(c):
    xp, prep, half_opmath, F16 = c.xp, c.prep, c.half_opmath, c.F16
    np_mod = c.be.np
    masked = getattr(np_mod, "__name__", "") == "numpy"   # ufuncs with out=/where= (not CuPy's)
    ndarray = getattr(np_mod, "ndarray", None)

    def int_divisor_check(a, b, name):
        # integer division by zero: torch raises, numpy would warn and return garbage. An empty
        # result divides nothing (torch: int64 (0, 1) // a (1, 3) holding 0 is an empty tensor)
        if a.dtype.kind in "iu" and a.size and (
                not hasattr(b, "dtype") and b == 0 or
                hasattr(b, "dtype") and b.size and not xp.all(b != 0)):
            raise IntegerDivisionByZero(f"{name}: ZeroDivisionError (integer division by zero)")

    def floor_divide(a, b):
        if a.dtype is F16:
            h = half_opmath(a, b)
            if h is not None:
                return xp.astype(xp.floor_divide(*h), F16)
        a, b = prep(a, b)
        _bool_kernel(a, "floor_divide")
        int_divisor_check(a, b, "floor_divide")
        return xp.floor_divide(a, b)

    def remainder(a, b):
        a, b = prep(a, b)
        _bool_kernel(a, "remainder")
        int_divisor_check(a, b, "remainder")
        r = xp.remainder(a, b)
        if r.dtype.kind == "f":
            # torch's kernel is fmod-based: a zero remainder keeps the dividend's sign
            # (remainder(-4., 2.) is -0.0); NumPy's (and Python's) takes the divisor's
            z = r == 0
            if masked and r.__class__ is ndarray:     # in place, only where zero (~10 us at 2^16)
                if z.any():
                    np_mod.copysign(r, a, out=r, where=z)
            else:
                r = xp.where(z, xp.copysign(r, a), r)
        return r

    def fmod(a, b):
        # C's fmod (the dividend's sign), as torch; integers exact, integer zero divisors refused
        a, b = prep(a, b)
        _bool_kernel(a, "fmod")
        int_divisor_check(a, b, "fmod")
        return xp.asarray(np_mod.fmod(a, b))

    return dict(floor_divide=floor_divide, remainder=remainder, fmod=fmod)


NEGATIVE_INT_POWER = "Integers to negative integer powers are not allowed."   # torch's words


def _power(c):
    xp, prep, iinfo, fl = c.xp, c.prep, c.be.np.iinfo, c.fl

    def int_pow(base, e):
        """Integer ``base ** e`` elementwise as torch's ``powi``: a negative exponent gives
        1 for a base of 1, +-1 for -1 (by the exponent's parity), else 0 (NumPy refuses any
        negative integer exponent). Arrays of one integer dtype."""
        neg = e < 0
        r = xp.pow(base, xp.where(neg, xp.zeros_like(e), e))
        one = xp.ones_like(r)
        odd = (e % 2) != 0
        at_neg = xp.where(base == 1, one, xp.where(base == -1, xp.where(odd, -one, one),
                                                     xp.zeros_like(r)))
        return xp.where(neg, at_neg, r)

    F16, F32, F64 = c.F16, c.F32, c.nd(_dtype.float64)

    def wide_exponent(a, e):
        """``a ** e`` for a float16/float32 ``a`` and a Python number ``e`` outside +-65504 (or
        NaN), as torch's cpu kernel: float32 takes the exponent as a double -- the weak-scalar
        rule would round it to float32, where an odd integer past 2^24 becomes even and
        ``(-1.0) ** 16777217`` lost its sign -- so the power runs at float64 (rounded once to
        float32); float16 converts it to Half, checked (RuntimeError past +-65504, inf and NaN
        pass). None where the ordinary path computes torch's value (float64, a float32 exponent
        within +-2^24, integers)."""
        dt = a.dtype
        if dt is F32:
            if -16777216 <= e <= 16777216:      # exact in float32 (every integer up to 2^24)
                return None
            return xp.astype(xp.pow(xp.astype(a, F64), e), F32)
        if dt is F16 and math.isfinite(e):
            raise RuntimeError("value cannot be converted to type c10::Half without overflow")
        return None

    # torch's cpu kernel for six number exponents (``elementwise.POW_BY_NUMBER``): sqrt,
    # reciprocals and products in place of pow, on the dtypes it takes them for (bfloat16 reaches
    # here as float32: ``lowp``); none where the backend keeps pow (``Backend.pow_by_number_steps``)
    by_number = ({e: compose(xp, steps) for e, steps in POW_BY_NUMBER.items()}
                 if c.be.pow_by_number_steps else {})
    steps_dtypes = (F32, F64)

    def pow(a, b):   # noqa: A001 - the op's name
        bc = b.__class__
        if bc is bool and a.dtype.kind == "b":
            # torch's shortcut (no kernel): x ** True is x, x ** False is ones
            return xp.asarray(a, copy=True) if b else xp.ones_like(a)
        special = by_number.get(b) if bc is float or bc is int else None
        number = b if bc is int else None
        if (bc is int or bc is float) and not -65504 <= b <= 65504:
            # beyond float16's range (or NaN) only: x ** 2 and the like skip this
            r = wide_exponent(a, b)
            if r is not None:
                return r
        a, b = prep(a, b)
        if special is not None and a.dtype in steps_dtypes:   # (an integer tensor promoted)
            return special(a)
        _bool_kernel(a, "pow")
        if a.dtype.kind in "iu":
            if number is not None:
                if number < 0:       # torch refuses a negative number exponent of an integer op
                    raise RuntimeError(NEGATIVE_INT_POWER)
                if number > iinfo(a.dtype).max:
                    # torch converts the exponent to the base's dtype, checked (prep wrapped it)
                    raise RuntimeError(f"value cannot be converted to type {a.dtype} without "
                                       f"overflow")
            if a.dtype.kind == "i" and hasattr(b, "dtype"):
                return int_pow(a, b)
        return xp.pow(a, b)

    def rpow(a, b):
        a, b = prep(a, b)
        _bool_kernel(a, "rpow")
        base = c.scalar_array(b, a.dtype)
        if a.dtype.kind == "i":      # number ** integer tensor: the tensor's negatives as powi
            return int_pow(xp.broadcast_to(base, a.shape), a)
        return xp.pow(base, a)

    def _norm_root(s, p):
        """The norms' root ``s ** (1/p)``: ``sqrt`` for p = 2, else ``pow``'s kernel (so the
        values are those of ``sqrt(s)`` / ``pow(s, 1/p)``); integers as the default float."""
        if p == 0:   # the fake rule says it in torch's words
            raise ValueError("_norm_root with p = 0")
        s = fl(s)
        return xp.sqrt(s) if p == 2 else pow(s, 1.0 / p)

    def _norm_root_backward(g, r, p):
        """``_norm_root``'s gradient in one kernel (``_ops._define.fused``; g and r of one
        float32/float64 dtype): the op-by-op formula's steps, ``g / (r * 2)`` or
        ``g * (r ** (1 - p) / p)``, then 0 where ``r`` is 0."""
        d = g / (r * 2.0) if p == 2 else g * (pow(r, 1.0 - p) / p)
        # a number for the zeros (NumPy/CuPy keep d's float dtype): ~1.7 us less than zeros_like
        return xp.where(r == 0, 0.0, d)

    return dict(pow=pow, rpow=rpow, _norm_root=_norm_root,
                _norm_root_backward=_norm_root_backward)


def _ordered_zeros(xp, f, is_max):
    """For a device whose torch kernels order -0.0 below 0.0 (``Backend.signed_zero_order``):
    ``settle(a, b, r)`` is ``r = f(a, b)`` (same dtype) with its ties of zeros given that order.
    A library whose ``f`` already gives it (CuPy's maximum/minimum/fmax/fmin: CUDA's max/min) has
    ``r`` returned as it is (probed once per dtype); else the ties are set in ``r``: of two zeros
    ``a + b`` is the larger, ``(a + b) * a * b`` the smaller (its sign: either's)."""
    plain: dict = {}
    host = getattr(xp, "__name__", "") == "numpy"   # any() on a device array would sync
    want = [True, False, False, False] if is_max else [True, True, True, False]

    def settle(a, b, r):
        p = plain.get(r.dtype)
        if p is None:
            x = xp.asarray([-0.0, -0.0, 0.0, 0.0], dtype=r.dtype)
            y = xp.asarray([-0.0, 0.0, -0.0, 0.0], dtype=r.dtype)
            p = plain[r.dtype] = [bool(v) for v in xp.signbit(f(x, y))] == want
        if p:
            return r
        tie = (a == b) & (a == 0)
        if not host or tie.any():       # (most calls have no tie: one pass)
            s = a + b
            xp.copyto(r, s if is_max else s * a * b, where=tie)
        return r
    return settle


def _compare(c):
    xp, prep, ordered = c.xp, c.prep, c.zero_order

    def extremum(f, name):
        # a number bound (clamp's) tying with a zero: torch's cpu kernels return the input
        # (clamp(-0.0, min=0.0) is -0.0, at every size), its cuda kernels order -0.0 below 0.0
        # (+0.0 there; ``Backend.signed_zero_order``: ``_ordered_zeros`` settles both a number
        # and an array operand). Which operand a library's maximum/minimum gives on that tie
        # differs: NumPy's float32/float64 loops the second, its float16 loop the first (1.26 to
        # 2.x), CuPy's (CUDA's fmax/fmin) the positive/negative zero whatever the order. For
        # the cpu rule ``_order`` finds, once per dtype, the call that keeps the array's zero;
        # where none does, the zeros are taken back from the array (an extra pass, only for a
        # bound of zero).
        orders: dict = {}
        settle = _ordered_zeros(xp, f, name == "maximum") if ordered else None

        def _order(dt):
            """The probe, once per dtype (the callers look in ``orders`` first)."""
            x = xp.asarray([-0.0, 0.0], dtype=dt)
            o = "where"
            for cand in ("second", "first"):
                if all(xp.all(xp.signbit(f(z, x) if cand == "second" else f(x, z))
                              == xp.signbit(x))
                       for z in (c.scalar_array(0.0, dt), c.scalar_array(-0.0, dt))):
                    o = cand
                    break
            orders[dt] = o
            return o

        def k(a, b):
            # the number is told apart before prep: on NumPy 1.x prep makes it a NumPy scalar
            # of the array's dtype (np.float32 is no Python float)
            number = b if b.__class__ is float or b.__class__ is int else None
            a, b = prep(a, b)
            if a.dtype.kind != "f":
                return f(a, b)
            if number is not None:
                b = c.scalar_array(b, a.dtype)
            if settle is not None:
                return settle(a, b, f(a, b))
            if number is None:
                # two arrays: torch's cpu kernels give either operand on a tie of zeros (its
                # vectorized blocks ``other``, the scalar tail ``input``): the library's answer
                return f(a, b)
            o = orders.get(a.dtype) or _order(a.dtype)
            if o == "second":
                return f(b, a)
            r = f(a, b)
            # (the Python number: a device array's ``!=`` would read it back per call)
            if o == "first" or number != 0:
                return r
            return xp.where(a == 0, a, r)
        k.__name__ = k.__qualname__ = name
        return k

    def cmp(f):
        def k(a, b):
            a, b = prep(a, b)
            return f(a, b)
        return k

    k = {n: extremum(getattr(xp, OPS[n].xp), n) for n in ("maximum", "minimum")}
    k.update((n, cmp(getattr(xp, p.xp))) for n, p in OPS.items() if p.family == "cmp")
    return k


def _logic(c):
    xp, as_bool, nd, dt_of = c.xp, c.as_bool, c.nd, c.dt_of
    rdt, wrapped = _dtype.result_type, _dtype.wrapped_dtype

    def logical_and(a, b):
        return xp.logical_and(as_bool(a), as_bool(b))

    def logical_or(a, b):
        return xp.logical_or(as_bool(a), as_bool(b))

    def logical_not(a):
        return xp.logical_not(as_bool(a))

    def where(cond, a, b):
        if cond.dtype.kind != "b":
            raise TypeError("where: condition is not bool")   # the fake rule says torch's words
        ta, tb = hasattr(a, "dtype"), hasattr(b, "dtype")
        t = rdt(dt_of(a) if ta else wrapped(a), (2 if a.ndim else 1) if ta else 0,
                dt_of(b) if tb else wrapped(b), (2 if b.ndim else 1) if tb else 0)
        n = nd(t)
        a = (a if a.dtype == n else xp.astype(a, n)) if ta else scalar(a, n)
        b = (b if b.dtype == n else xp.astype(b, n)) if tb else scalar(b, n)
        return xp.where(as_bool(cond), a, b)

    def scalar(v, n):
        # a Python int out of an integer dtype's range wraps, as torch (where(m, u8, -1) puts
        # 255), and as the arithmetic ops' numbers do; NumPy 2 refuses asarray(-1, uint8)
        return xp.astype(xp.asarray(v), n) if v.__class__ is int else c.scalar_array(v, n)

    return dict(logical_and=logical_and, logical_or=logical_or, logical_not=logical_not,
                where=where)


def x_times(c, f, name):
    """The kernel of ``input * f(other)`` as torch's xlogy/xlog1py: NaN where ``other`` is NaN,
    else 0 where ``input`` is 0; integer operands in the default float dtype."""
    xp, prep = c.xp, c.prep

    def k(a, b):
        a, b = prep(a, b, True)
        if not hasattr(b, "dtype"):
            b = xp.asarray(b, dtype=a.dtype)
        r = a * f(b)
        r = xp.where(a == 0, xp.zeros_like(r), r)
        return xp.where(xp.isnan(b), b + xp.zeros_like(r), r)
    k.__name__ = k.__qualname__ = name
    return k


def _math2(c):
    """atan2, hypot, copysign, nextafter: torch's promotion (integer and bool operands of atan2
    and copysign in the default float dtype); hypot and nextafter on floating operands only (a
    TypeError otherwise: the fake rule then raises torch's refusal). float16 operands are computed
    by the float16 loops of NumPy/CuPy, which work in float32 and round once (torch's opmath)."""
    xp, prep, np_mod, ordered = c.xp, c.prep, c.be.np, c.zero_order

    def fn(name):
        f = getattr(xp, name, None)
        return f if f is not None else getattr(np_mod, name)

    f_atan2, f_hypot, f_copysign, f_nextafter = (fn(n) for n in ("atan2", "hypot", "copysign",
                                                                   "nextafter"))
    if f_atan2 is None:     # pragma: no cover - NumPy's name
        f_atan2 = np_mod.arctan2

    def floating_op(f, name, integers_to_float):
        def k(a, b):
            a, b = prep(a, b, integers_to_float)
            if a.dtype.kind != "f":
                raise TypeError(f"{name} of non-floating operands")
            if not hasattr(b, "dtype"):
                b = c.scalar_array(b, a.dtype)
            return f(a, b)
        k.__name__ = k.__qualname__ = name
        return k

    def nextafter_or_equal(a, b):
        # ``other`` itself where the operands are equal (0.0 toward -0.0 is -0.0: C's and
        # torch's rule; NumPy's float16 loop gives ``input`` there)
        return xp.where(a == b, b, f_nextafter(a, b))

    def nan_ignoring(f, name):
        # C's fmax/fmin (torch.fmax): a NaN loses to a number; any dtype (bool included). On a
        # tie of zeros torch's cpu kernels return the input (float32/float64/float16, every
        # size; bfloat16 is computed swapped, _kernels/lowp), its cuda kernels order -0.0 below
        # 0.0 (``Backend.signed_zero_order``). NumPy's fmax/fmin return either zero depending
        # on the loop (size, a NaN elsewhere), so the tie is settled here; a library whose
        # fmax/fmin already order the zeros (CuPy's, CUDA's) is called as it is
        # (``_ordered_zeros``)
        host = getattr(xp, "__name__", "") == "numpy"   # any() on a device array would sync
        settle = _ordered_zeros(xp, f, name == "fmax") if ordered else None

        def k(a, b):
            a, b = prep(a, b, False)
            r = f(a, b)
            if r.dtype.kind == "f":
                if settle is not None:
                    return settle(a, b, r)
                tie = a == b
                if not host or tie.any():       # (most calls have no equal pair: one pass)
                    xp.copyto(r, a, where=tie)  # into the fresh result, no second array
            return r
        k.__name__ = k.__qualname__ = name
        return k

    return dict(xlogy=x_times(c, xp.log, "xlogy"), atan2=floating_op(f_atan2, "atan2", True),
                fmax=nan_ignoring(fn("fmax"), "fmax"), fmin=nan_ignoring(fn("fmin"), "fmin"),
                copysign=floating_op(f_copysign, "copysign", True),
                hypot=floating_op(f_hypot, "hypot", False),
                nextafter=floating_op(nextafter_or_equal, "nextafter", False))


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def _inplace(c, k):
    xp, be, prep, half_opmath, F16, dt_of = c.xp, c.be, c.prep, c.half_opmath, c.F16, c.dt_of
    add, sub, mul, div = k["add"], k["sub"], k["mul"], k["div"]

    def inplace_result(api, dst, r):
        # torch: an in-place result may not be of a higher category than the tensor it writes
        if _KIND_RANK[r.dtype.kind] > _KIND_RANK[dst.dtype.kind]:
            raise RuntimeError(f"{api}: result type {dt_of(r)} can't be cast to the desired "
                               f"output type {dt_of(dst)}; use the out-of-place op instead")
        be.assign(dst, r)

    def add_(dst, other):
        a, b = prep(dst, other)
        if a is dst and a.dtype.kind != "b":
            # no promotion of dst: write in place (no temporary, no second pass; NumPy/CuPy
            # handle overlapping operands)
            a += b
            return
        inplace_result("add_", dst, add(dst, other))

    def mul_(dst, other):
        if dst.dtype is F16:
            h = half_opmath(dst, other)
            if h is not None:      # torch's float32 opmath, as mul (not float16 `*=`)
                be.assign(dst, xp.astype(xp.multiply(*h), F16))
                return
        a, b = prep(dst, other)
        if a is dst and a.dtype.kind != "b":
            a *= b
            return
        inplace_result("mul_", dst, mul(dst, other))

    def sub_(dst, other):
        _no_bool(dst, other)
        a, b = prep(dst, other)
        if a is dst:
            a -= b
            return
        inplace_result("sub_", dst, sub(dst, other))

    def div_(dst, other):
        if dst.dtype is F16:
            h = half_opmath(dst, other)
            if h is not None:      # torch's float32 opmath, as div
                be.assign(dst, xp.astype(xp.divide(*h), F16))
                return
        a, b = prep(dst, other, True)
        if a is dst:               # floating dst, no promotion: true division in place
            a /= b
            return
        inplace_result("div_", dst, div(dst, other))   # an integer dst: refused there

    # NumPy's ufunc call with a Python float operand costs ~2.5 k instructions more than with a
    # 0-d array of the other operand's dtype (its weak-scalar conversion, NEP 50; NumPy < 2
    # casts the number the same way for an array operand): an optimizer step passes the same
    # learning rate every step, so its 0-d array is kept, read-only, per (float, dtype) --
    # the same value NumPy converts the number to, so the same products. Only NumPy's own
    # arrays (a CuPy array would need one per device); not -0.0/0.0 (one key for both) nor NaN.
    np_mod = be.np
    nd_cls = getattr(np_mod, "ndarray", None) if getattr(np_mod, "__name__", "") == "numpy" \
        else None
    alphas: dict = {}

    def _add_scaled_(dst, other, alpha):    # dst += other * alpha (add_/sub_ with alpha)
        if other.__class__ is nd_cls and alpha.__class__ is float:
            key = (alpha, other.dtype)
            a = alphas.get(key)
            if a is None and alpha == alpha and alpha != 0.0 and len(alphas) < 64:
                a = np_mod.array(alpha, dtype=other.dtype)
                a.flags.writeable = False
                alphas[key] = a
            if a is not None:
                dst += xp.multiply(other, a)
                return
        dst += xp.multiply(other, alpha)

    return dict(add_=add_, sub_=sub_, mul_=mul_, div_=div_, _add_scaled_=_add_scaled_)


def _mark_float_ufuncs(c, k):
    """Floating array with an array of its dtype or a Python number: add/sub/mul/div are exactly
    the ufunc there (``prep`` changes nothing); the generated adapters call it directly."""
    if c.legacy:   # NumPy < 2: a Python number needs prep (see Context)
        return
    # a float16 tensor with a number is no bare ufunc: torch rounds the number through float32
    # (add, sub: NumPy rounds it from the double) or reads it at float32 (mul, div)
    wide = frozenset((_dtype.float32, _dtype.float64))
    for name in ("add", "sub", "mul", "div"):
        kern = k[name]
        kern._tp_float_ufunc = getattr(c.xp, OPS[name].xp)
        kern._tp_number_dtypes = wide
