"""What every family of reference kernels closes over: the array namespace ``xp``, the backend, and
the torch rules shared between families (operand promotion, NumPy < 2's value-based casting,
float16 "opmath", integer inputs of floating functions).

The helpers are closures over the namespace, built once per ``bind`` (a kernel reads them as
closure cells, as fast as before the split); each family module copies the ones it needs into
its own locals.
"""

from __future__ import annotations

import math

from .. import _dtype
from . import _checks


def _as(b, ndt):
    """NumPy < 2: the Python number ``b`` as a NumPy scalar of native dtype ``ndt`` (a value
    beyond a float dtype's range becomes +-inf, as the weak number would)."""
    return ndt.type(b)


class Context:
    """The namespace ``xp``, the backend ``be`` and the shared helpers (see the module docstring).

    NumPy < 2 (no NEP 50) lets a Python number's *value* pick the result dtype ("value-based
    casting": float16 array + 257 -> float32, float32 array + 70000 -> float64, 0-dim float32
    * 2.5 -> float64). There (``legacy``) every number handed to NumPy is first made a NumPy
    scalar of the dtype our promotion rule chose (``as_``), so the result dtype is that rule's on
    every NumPy version; NumPy >= 2 and CuPy keep Python numbers weak, as torch does, and get them
    as is."""

    as_ = staticmethod(_as)

    def __init__(self, xp, be):
        self.xp = xp
        self.be = be
        self.nd = nd = be.native_dtype
        self.dt_of = be.dtype_of
        # ties of -0.0 and 0.0 in clamp/fmax/fmin/relu: torch's cpu rule or its cuda one
        # (``Backend.signed_zero_order``)
        self.zero_order = be.signed_zero_order
        np_mod = be.np
        self.legacy = (getattr(np_mod, "__name__", "") == "numpy"
                       and int(np_mod.__version__.split(".")[0]) < 2)
        self.F16 = nd(_dtype.float16)
        self.F32 = nd(_dtype.float32)
        self.fl = _make_fl(self)
        self.as_bool = _make_as_bool(self)
        self.prep = _make_prep(self)
        self.scalar_array = _make_scalar_array(xp)
        self.half_opmath = _make_half_opmath(self)
        self.rows_sum = _make_rows_sum(self)
        self.sum = _make_sum(self)
        numpy_like = getattr(np_mod, "__name__", None) in ("numpy", "cupy")
        self.reshape, self.take = _make_reshape_take(xp, numpy_like)
        # whether ``take`` gives torch's element for a negative index already checked to lie in
        # [-n, n): NumPy's reads it from the end, CuPy's wraps every index modulo n; the array
        # API leaves it unspecified (the kernels add n first there)
        self.take_negative = numpy_like

    def axis(self, x, dim):
        """The reduction axes of ``dim`` for ``x`` (None: all; a 0-dim ``x`` allows dim 0/-1)."""
        if not x.ndim:
            _checks.check_dims_0d(dim)
            return None
        return None if not dim else tuple(dim)


def _make_reshape_take(xp, numpy_like):
    """``(reshape(a, shape), take(a, indices, axis))`` with ``xp.reshape``'s and ``xp.take``'s
    meaning, as the arrays' own methods for NumPy and CuPy arrays (``numpy_like``: the backend's
    array module is one of them; decided by name, as making an array would need the device).
    Why: NumPy 2's module functions dispatch through a Python wrapper (``_wrapfunc``) that costs
    ~0.8 µs a call on a 2-core Xeon, four to five times the method; the small indexing kernels
    call them three or four times. Other namespaces (the array API standard defines only the
    functions) keep the functions."""
    if not numpy_like:
        return xp.reshape, xp.take

    def reshape(a, shape):
        return a.reshape(shape)

    def take(a, indices, axis):
        return a.take(indices, axis=axis)
    return reshape, take


def _make_fl(c):
    xp, nd = c.xp, c.nd

    def fl(a):
        """``a`` itself when floating, else ``a`` in the default float dtype."""
        return a if a.dtype.kind == "f" else xp.astype(a, nd(_dtype.get_default_dtype()))
    return fl


def _make_as_bool(c):
    xp = c.xp

    def as_bool(x):
        if isinstance(x, (int, float)):
            return bool(x)
        return x if x.dtype.kind == "b" else xp.astype(x, xp.bool)
    return as_bool


def _make_int_scalar(c):
    xp, nd, be = c.xp, c.nd, c.be
    small_int = {}

    def int_scalar(b, t):
        # NumPy 2 refuses a Python int outside the array dtype's range; torch wraps it around
        r = small_int.get(t)
        if r is None:
            info = be.np.iinfo(nd(t))
            r = small_int[t] = (int(info.min), int(info.max))
        if r[0] <= b <= r[1]:
            return b
        return xp.astype(xp.asarray(b, dtype=nd(_dtype.int64)), nd(t))
    return int_scalar


def _make_scalar_array(xp):
    neg = xp.negative

    def scalar_array(v, dt):
        """``xp.asarray(v, dtype=dt)`` of a Python number ``v`` with -0.0 kept: CuPy writes a
        zero scalar by a memset, which made -0.0 0.0 (``clamp(x, max=-0.0)``, ``atan2(y, -0.0)``
        and ``where(m, x, -0.0)`` on cuda; an H100, 2026-12-07). -0.0 is made as -(0.0), for
        a floating ``dt`` only (a bool has no negative: -0.0 is False there, 0 in integers)."""
        if (v == 0 and v.__class__ is float and math.copysign(1.0, v) < 0
                and getattr(dt, "kind", "f") not in "biu"):
            return neg(xp.asarray(0.0, dtype=dt))
        return xp.asarray(v, dtype=dt)
    return scalar_array


def _make_prep(c):
    xp, nd, dt_of, legacy, F16 = c.xp, c.nd, c.dt_of, c.legacy, c.F16
    rdt, wrapped, round16 = _dtype.result_type, _dtype.wrapped_dtype, _dtype.round_scalar
    int_scalar = _make_int_scalar(c)

    def prep(a, b, floating=False):
        """Cast ``a`` (array) and ``b`` (array or Python scalar) to torch's result dtype (the
        same rule as the fake rules: ``_dtype.result_type``). Python scalars stay
        scalars (NumPy 2 treats them as weak, like torch's wrapped numbers)."""
        # the common cases first, without the promotion table: a floating array with a Python
        # number (the number is weak: the array's dtype wins), two arrays of one dtype
        bc = b.__class__
        if bc is float or bc is int:
            if a.dtype.kind == "f":
                if a.dtype is F16 and bc is float:
                    # torch rounds the number to float16 through float32 (_dtype's scalar rule);
                    # NumPy/CuPy round it from the double: the same value but near a tie
                    b = round16(b, _dtype.float16)
                return a, (_as(b, a.dtype) if legacy else b)
        elif a.dtype is getattr(b, "dtype", None) and (not floating or a.dtype.kind == "f"):
            return a, b
        da = dt_of(a)
        if isinstance(b, (int, float)):
            t = rdt(da, 2 if a.ndim else 1, wrapped(b), 0)
            if floating and not t.is_floating_point:
                t = _dtype.get_default_dtype()
            if t is not da:
                a = xp.astype(a, nd(t))
            if b.__class__ is int and t._kind == "i" and t is not _dtype.int64:
                b = int_scalar(b, t)
            return a, (_as(b, nd(t)) if legacy and b.__class__ in (int, float) else b)
        db = dt_of(b)
        t = rdt(da, 2 if a.ndim else 1, db, 2 if b.ndim else 1)
        if floating and not t.is_floating_point:
            t = _dtype.get_default_dtype()
        if t is not da:
            a = xp.astype(a, nd(t))
        if t is not db:
            b = xp.astype(b, nd(t))
        return a, b
    return prep


def _make_half_opmath(c):
    xp, dt_of, legacy, F16, F32 = c.xp, c.dt_of, c.legacy, c.F16, c.F32
    rdt = _dtype.result_type

    def half_opmath(a, b):
        """For a float16 ``a``: ``(a, b)`` as float32 operands when ``b`` is what torch's mul/div/
        floor_divide read at float32 (a number, or a 0-dim tensor that does not decide the
        float16 result: ``_dtype``'s scalar rule), else None."""
        bc = b.__class__
        if bc is float or bc is int:
            return xp.astype(a, F32), (_as(b, F32) if legacy else b)
        if bc is bool or getattr(b, "ndim", 1) != 0 or b.dtype == F16:
            return None
        if rdt(_dtype.float16, 2 if a.ndim else 1, dt_of(b), 1) is not _dtype.float16:
            return None
        return xp.astype(a, F32), xp.astype(b, F32)
    return half_opmath


# Sums over the last axis of a float32/float64 NumPy array (layer norms, softmax rows, mean(-1)) as
# a matrix-vector product with a vector of ones: one BLAS call, ~3x faster than NumPy's reduction
# on (64, 256) rows (whose per-row loop overhead dominates), with the accuracy of BLAS's
# multi-lane accumulation (as torch's vectorized sum). Rows longer than _ROW_MAX keep NumPy's
# pairwise summation. Likewise the sums down the first axis of a 2-D array (a bias gradient,
# ``g.sum(0)``) as ``ones @ x``: NumPy adds such columns row by row (no pairwise summation), ~2x
# slower on (64, 256) and ~20x on (4096, 16), as accurate or more; up to _ROW_MAX rows (the cached
# vectors of ones stay bounded). Only arrays BLAS reads in place take either product (row-major,
# or a transposed 2-D one): NumPy's matmul copies or loops elementwise over any other strides,
# slower than its reduction.
_ROW_MAX = 4096


def _blas_rows(fl, ndim):
    """True when BLAS reads an array with these flags in place: row-major, or a column-major
    matrix (NumPy passes it transposed)."""
    return fl.c_contiguous or (ndim == 2 and fl.f_contiguous)


def _make_rows_sum(c):
    xp, nd = c.xp, c.nd
    row_blas = getattr(c.be.np, "__name__", "") == "numpy"
    f32, f64 = nd(_dtype.float32), nd(_dtype.float64)
    ones_rows = {f32: {}, f64: {}}
    # NumPy's ndarray.sum is its Python wrapper (numpy/_core/_methods._sum) around exactly this
    # call; calling the ufunc's reduce directly skips that frame (~1.1 k instructions a sum)
    add_reduce = c.be.np.add.reduce if row_blas else None

    def rows_sum(x, axis, keepdim):
        # both BLAS cases below need 512 elements or more: a smaller array (a training step's
        # batch-1 rows) goes to the reduction after one size read, not the eight tests
        if row_blas and axis is not None and len(axis) == 1 and (size := x.size) >= 512 and (
                (dt := x.dtype) is f32 or dt is f64):
            nd_ = x.ndim
            d = axis[0]
            n = x.shape[-1] if nd_ else 0
            # from ~16 rows of 256 on (fewer: NumPy's reduction is as fast, and the branch costs)
            if (d == -1 or d == nd_ - 1) and 1 < n <= _ROW_MAX and size >= 4096:
                # a 2-D array owning its memory is row- or column-major (one read, not the
                # flags object's ~0.6 k instructions); a view or an N-D array: the flags
                if (nd_ == 2 and x.base is None) or _blas_rows(x.flags, nd_):
                    cache = ones_rows[dt]
                    one = cache.get(n)
                    if one is None:
                        one = cache[n] = xp.ones(n, dtype=dt)
                        one.flags.writeable = False
                    r = x @ one      # NumPy's own ndarray: .reshape is its method (no wrapper)
                    if keepdim:
                        return r.reshape(x.shape[:-1] + (1,))
                    return r if nd_ > 1 else xp.asarray(r)
            elif nd_ == 2 and (d == 0 or d == -2):
                # columns: faster than NumPy's row-by-row reduction from a few hundred elements
                m = x.shape[0]
                if 1 < m <= _ROW_MAX and (x.base is None or _blas_rows(x.flags, 2)):
                    cache = ones_rows[dt]
                    one = cache.get(m)
                    if one is None:
                        one = cache[m] = xp.ones(m, dtype=dt)
                        one.flags.writeable = False
                    r = one @ x
                    return r.reshape(1, n) if keepdim else r
        if add_reduce is not None:
            return add_reduce(x, axis, None, None, keepdim)
        return x.sum(axis=axis, keepdims=keepdim)
    return rows_sum


def _make_sum(c):
    nd, rows_sum, f16, f32 = c.nd, c.rows_sum, c.F16, c.F32

    def sum_(x, dim=None, keepdim=False, *, dtype=None):
        if not x.ndim:    # 0-dim: dim 0/-1 allowed
            _checks.check_dims_0d(dim)
        axis = None if not dim or not x.ndim else tuple(dim)
        # the array's own method (NumPy, CuPy): the array-api-compat wrapper costs ~1 us more
        if dtype is not None:
            return x.sum(axis=axis, keepdims=keepdim, dtype=nd(dtype))
        if x.dtype == f16:    # accumulated in float32, rounded once (torch's opmath)
            return x.sum(axis=axis, keepdims=keepdim, dtype=f32).astype(f16)
        if x.dtype.kind in "biu":
            return x.sum(axis=axis, keepdims=keepdim, dtype=nd(_dtype.int64))
        return rows_sum(x, axis, keepdim)
    return sum_
