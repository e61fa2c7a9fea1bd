"""Reference kernels of the factories: allocations (the outputs of ops and user factories, once
per call), ranges and random numbers (through the backend's methods)."""

from __future__ import annotations

from .. import _dtype
from . import _checks


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    k = _allocations(c)
    k.update(_ranges_random(c))
    return k


def _allocations(c):
    # A backend whose empty/full are ArrayBackend's own (``np.empty``/``np.full`` of the cached
    # native dtype: their ``_tp_np_alloc`` mark) gets that call here, one frame less; others are
    # called as bound. (One code object for every backend: the kernels are the same code on each.)
    be = c.be
    be_empty, be_full = be.empty, be.full
    direct = getattr(be_empty, "_tp_np_alloc", False) and getattr(be_full, "_tp_np_alloc", False)
    np_empty, np_full, np_zeros = (be.np.empty, be.np.full, be.np.zeros) if direct else \
        (None, None, None)
    native, ndt = be._native_cache if direct else None, be.native_dtype

    def empty(size, *, dtype, device):
        if direct:
            r = native.get(dtype)
            return np_empty(size, r if r is not None else ndt(dtype))
        return be_empty(tuple(size), dtype, device)
    # an allocation computes nothing, so it raises no floating point warning: _quiet leaves it
    # unwrapped (its adapter then skips the two context-variable writes)
    empty._tp_fp_free = True

    def full(size, fill_value, *, dtype, device):
        if direct:
            r = native.get(dtype)
            if fill_value.__class__ is int and fill_value == 0:
                # zeros/zeros_like/new_zeros: the same bytes as np.full(.., 0) in every dtype,
                # about 4x cheaper (no fill loop through copyto)
                return np_zeros(size, r if r is not None else ndt(dtype))
            if r is None:
                r = ndt(dtype)
            fc = fill_value.__class__
            if (fc is float or fc is int) and r.kind == "f":
                # ones/full of a Python number into a float dtype: ndarray.fill gives np.full's
                # bytes and errors there (checked value by value, inf/nan/overflow included, on
                # NumPy 1.26 and 2) without np.full's Python frame and copyto dispatch. (Not
                # integer dtypes: NumPy 1.x's fill warns or raises where np.full wraps.)
                a = np_empty(size, r)
                a.fill(fill_value)
                return a
            return np_full(size, fill_value, r)
        return be_full(tuple(size), fill_value, dtype, device)

    return dict(empty=empty, full=full)


def _ranges_random(c):
    xp, nd, be = c.xp, c.nd, c.be

    def arange(start, end, step, *, dtype, device):
        _checks.check_arange(start, end, step)   # what the backend's arange would not refuse
        return be.arange(start, end, step, dtype, device)

    def rand(size, *, dtype, device):
        return be.rand(tuple(size), dtype, device)

    def randn(size, *, dtype, device):
        return be.randn(tuple(size), dtype, device)

    def eye(n, m, *, dtype, device):
        _checks.check_eye(n, m)
        return xp.eye(n, m, dtype=nd(dtype))

    def linspace(start, end, steps, *, dtype, device):
        _checks.check_linspace(steps)
        t = nd(dtype)
        if steps == 1:
            return xp.astype(xp.asarray([start], dtype=nd(_dtype.float64)), t)
        # torch's symmetric rule: the first half steps up from start, the second half down
        # from end, so both ends are exact
        f64 = nd(_dtype.float64)
        i = xp.arange(steps, dtype=f64)
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        v = xp.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
        return xp.astype(v, t)

    def randint(low, high, size, *, dtype, device):
        _checks.check_randint(low, high)
        _checks.check_nonnegative("randint", size)
        u = be.rand(tuple(size), _dtype.float64, device)
        v = xp.minimum(xp.floor(u * float(high - low)), float(high - low - 1)) + float(low)
        return xp.astype(v, nd(dtype))

    return dict(arange=arange, rand=rand, randn=randn, eye=eye, linspace=linspace,
                randint=randint)
