"""Reference kernels of the bitwise ops (``bitwise_and``/``or``/``xor``/``not``/``left_shift``/
``right_shift``): the array-API function of each op (``elementwise.OPS[op].xp``) after torch's
promotion (``Context.prep``), on integer and bool operands only.

On bool operands and/or/xor/not are the logical ops (NumPy's and CuPy's bitwise ufuncs on bool
arrays are). Shifts take integers only and follow torch's kernels for amounts outside
``[0, bits)`` -- the array API leaves them undefined: a left shift gives 0, a right shift the sign
(``a >> (bits - 1)`` for signed dtypes, 0 for uint8).

A kernel that meets operands torch refuses (a floating or bfloat16 result dtype, bool shifts)
raises TypeError: the op's adapter then runs its fake rule, which raises the op's own message
naming the op and dtype (``_ops/elementwise.py``).
"""

from __future__ import annotations

from .elementwise import OPS


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    xp, prep = c.xp, c.prep

    def checked(a, b, name, shift):
        a, b = prep(a, b)
        k = a.dtype.kind
        if k != "i" and k != "u" and (shift or k != "b"):
            raise TypeError(f"{name}: not implemented for {a.dtype}")
        return a, b

    def logical_or_bitwise(f, name):
        def k(a, b):
            a, b = checked(a, b, name, False)
            return f(a, b)
        k.__name__ = k.__qualname__ = name
        return k

    def bitwise_not(a):
        k = a.dtype.kind
        if k != "i" and k != "u" and k != "b":
            raise TypeError(f"bitwise_not: not implemented for {a.dtype}")
        return xp.bitwise_invert(a)

    shl, shr = xp.bitwise_left_shift, xp.bitwise_right_shift

    def bitwise_left_shift(a, b):
        a, b = checked(a, b, "bitwise_left_shift", True)
        w = a.dtype.itemsize * 8
        if not hasattr(b, "dtype"):             # a Python int: one test on the host
            return shl(a, b) if 0 <= b < w else xp.zeros_like(a)
        ok = (b >= 0) & (b < w)
        # no lane shifts by the width or more; the mask in b's dtype (NumPy 1 would promote a
        # 0-d b with a Python int to int64, and the shift with it)
        r = shl(a, xp.bitwise_and(b, b.dtype.type(w - 1)))
        return xp.where(ok, r, xp.asarray(0, dtype=r.dtype))

    def bitwise_right_shift(a, b):
        a, b = checked(a, b, "bitwise_right_shift", True)
        w = a.dtype.itemsize * 8
        if not hasattr(b, "dtype"):
            return shr(a, b) if 0 <= b < w else shr(shr(a, w - 1), 1)
        ok = (b >= 0) & (b < w)
        r = shr(a, xp.bitwise_and(b, b.dtype.type(w - 1)))
        # outside: the sign bit everywhere (signed), 0 (unsigned): (a >> (w - 1)) >> 1 is both;
        # the amounts in a's dtype (NumPy 1 would promote a 0-d a with a Python int to int64:
        # 7 >> tensor(3, int8) gave int64 under the declared minimum, NumPy 1.26)
        t = a.dtype.type
        return xp.where(ok, r, shr(shr(a, t(w - 1)), t(1)))

    k = {n: logical_or_bitwise(getattr(xp, OPS[n].xp), n)
         for n in ("bitwise_and", "bitwise_or", "bitwise_xor")}
    k.update(bitwise_not=bitwise_not, bitwise_left_shift=bitwise_left_shift,
             bitwise_right_shift=bitwise_right_shift)
    return k
