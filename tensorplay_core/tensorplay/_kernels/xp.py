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
    rdt = _dtype.result_type
    wrapped = _dtype.wrapped_dtype
    _small_int = {}
    # NumPy < 2 (no NEP 50) lets a Python number's *value* pick the result dtype ("value-based
    # casting": float16 array + 257 -> float32, float32 array + 70000 -> float64, 0-dim float32
    # * 2.5 -> float64). There every number handed to NumPy is first made a NumPy scalar of the
    # dtype our promotion rule chose (``_as``), so the result dtype is that rule's on every NumPy
    # version; NumPy >= 2 and CuPy keep Python numbers weak, as torch does, and get them as is.
    _np_mod = be.np
    _legacy = (getattr(_np_mod, "__name__", "") == "numpy"
               and int(_np_mod.__version__.split(".")[0]) < 2)

    def _as(b, ndt):
        """NumPy < 2: the Python number ``b`` as a NumPy scalar of native dtype ``ndt`` (a value
        beyond a float dtype's range becomes +-inf, as the weak number would)."""
        return ndt.type(b)

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
        same rule as the fake rules: ``_dtype.result_type``). Python scalars stay
        scalars (NumPy 2 treats them as weak, like torch's wrapped numbers)."""
        # the common cases first, without the promotion table: a floating array with a Python
        # number (the number is weak: the array's dtype wins), two arrays of one dtype
        bc = b.__class__
        if bc is float or bc is int:
            if a.dtype.kind == "f":
                if a.dtype is _F16 and bc is float:
                    # torch rounds the number to float16 through float32 (_dtype's scalar rule);
                    # NumPy/CuPy round it from the double: the same value but near a tie
                    b = _round16(b, _dtype.float16)
                return a, (_as(b, a.dtype) if _legacy else b)
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
                b = _int_scalar(b, t)
            return a, (_as(b, nd(t)) if _legacy and b.__class__ in (int, float) else b)
        db = dt_of(b)
        t = rdt(da, 2 if a.ndim else 1, db, 2 if b.ndim else 1)
        if floating and not t.is_floating_point:
            t = _dtype.get_default_dtype()
        if t is not da:
            a = xp.astype(a, nd(t))
        if t is not db:
            b = xp.astype(b, nd(t))
        return a, b

    _F16 = nd(_dtype.float16)
    _F32 = nd(_dtype.float32)
    _round16 = _dtype.round_scalar
    _ONE16 = _F16.type(1)

    def _half_opmath(a, b):
        """For a float16 ``a``: ``(a, b)`` as float32 operands when ``b`` is what torch's mul/div/
        floor_divide read at float32 (a number, or a 0-dim tensor that does not decide the
        float16 result: ``_dtype``'s scalar rule), else None."""
        bc = b.__class__
        if bc is float or bc is int:
            return xp.astype(a, _F32), (_as(b, _F32) if _legacy else b)
        if bc is bool or getattr(b, "ndim", 1) != 0 or b.dtype == _F16:
            return None
        if rdt(_dtype.float16, 2 if a.ndim else 1, dt_of(b), 1) is not _dtype.float16:
            return None
        return xp.astype(a, _F32), xp.astype(b, _F32)

    def add(a, b):
        a, b = _prep(a, b)
        if a.dtype.kind == "b":
            return xp.logical_or(a, b)
        return xp.add(a, b)

    # A kernel that meets operands torch refuses raises TypeError: the op's adapter then runs
    # its fake rule, which raises torch's own message (``_ops._shapes.check_bool_operands``).
    def _no_bool(a, b):
        if a.dtype.kind == "b" or b.__class__ is bool or getattr(b, "dtype", a.dtype).kind == "b":
            raise TypeError("subtraction with a bool operand")

    def sub(a, b):
        _no_bool(a, b)
        a, b = _prep(a, b)
        return xp.subtract(a, b)

    def rsub(a, b):
        _no_bool(a, b)
        a, b = _prep(a, b)
        return xp.subtract(b, a)

    def mul(a, b):
        if a.dtype is _F16:
            h = _half_opmath(a, b)
            if h is not None:
                return xp.astype(xp.multiply(*h), _F16)
        a, b = _prep(a, b)
        if a.dtype.kind == "b":
            return xp.logical_and(a, b)
        return xp.multiply(a, b)

    def div(a, b):
        if a.dtype is _F16:
            h = _half_opmath(a, b)
            if h is not None:
                return xp.astype(xp.divide(*h), _F16)
        a, b = _prep(a, b, True)
        return xp.divide(a, b)

    def rdiv(a, b):
        if a.dtype is _F16 and b.__class__ in (float, int):
            # torch: s / t is t.reciprocal() * s (reciprocal rounded to float16, s at float32)
            r = xp.astype(xp.divide(_ONE16 if _legacy else 1, a), _F32)
            return xp.astype(xp.multiply(r, _as(b, _F32) if _legacy else b), _F16)
        a, b = _prep(a, b, True)
        return xp.divide(b, a)

    def _int_divisor_check(a, b, name):
        # integer division by zero: torch raises, numpy would warn and return garbage
        if a.dtype.kind in "iu" and (not hasattr(b, "dtype") and b == 0 or
                                     hasattr(b, "dtype") and not xp.all(b != 0)):
            raise ZeroDivisionError(f"{name}: integer division by zero")

    def _bool_kernel(a, name):
        if a.dtype.kind == "b":   # both operands bool (after _prep): torch has no such kernel
            raise TypeError(f"{name} of bool operands")

    def floor_divide(a, b):
        if a.dtype is _F16:
            h = _half_opmath(a, b)
            if h is not None:
                return xp.astype(xp.floor_divide(*h), _F16)
        a, b = _prep(a, b)
        _bool_kernel(a, "floor_divide")
        _int_divisor_check(a, b, "floor_divide")
        return xp.floor_divide(a, b)

    def remainder(a, b):
        a, b = _prep(a, b)
        _bool_kernel(a, "remainder")
        _int_divisor_check(a, b, "remainder")
        return xp.remainder(a, b)

    def pow(a, b):
        if b.__class__ is bool and a.dtype.kind == "b":
            # torch's shortcut (no kernel): x ** True is x, x ** False is ones
            return xp.asarray(a, copy=True) if b else xp.ones_like(a)
        a, b = _prep(a, b)
        _bool_kernel(a, "pow")
        return xp.pow(a, b)

    def rpow(a, b):
        a, b = _prep(a, b)
        _bool_kernel(a, "rpow")
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
        if c.dtype.kind != "b":
            raise TypeError("where: condition is not bool")   # the fake rule says torch's words
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
        if x.dtype.kind == "b":
            return xp.where(x <= 0, xp.zeros_like(x), x)
        # maximum propagates NaN (torch's clamp_min(0) semantics) and gives +0 for -0.0; a
        # `where` on a random sign mask is ~15x slower on NumPy (branch mispredictions)
        return xp.maximum(x, _as(0, x.dtype) if _legacy else 0)

    def rsqrt(x):
        x = _fl(x)
        r = 1.0 / xp.sqrt(x)
        # a Python float keeps a floating array's dtype: no cast (xp.astype copies always)
        return r if r.dtype == x.dtype else xp.astype(r, x.dtype)

    # Sums over the last axis of a float32/float64 NumPy array (layer norms, softmax rows,
    # mean(-1)) as a matrix-vector product with a vector of ones: one BLAS call, ~3x faster than
    # NumPy's reduction on (64, 256) rows (whose per-row loop overhead dominates), with the
    # accuracy of BLAS's multi-lane accumulation (as torch's vectorized sum). Rows longer than
    # _ROW_MAX keep NumPy's pairwise summation.
    _row_blas = getattr(be.np, "__name__", "") == "numpy"
    _ROW_MAX = 4096
    _f32, _f64 = nd(_dtype.float32), nd(_dtype.float64)
    _ones_rows = {_f32: {}, _f64: {}}

    def _rows_sum(x, axis, keepdim):
        dt = x.dtype
        if _row_blas and (dt is _f32 or dt is _f64) and axis is not None and len(axis) == 1:
            nd_ = x.ndim
            d = axis[0]
            n = x.shape[-1] if nd_ else 0
            # from ~16 rows of 256 on (fewer: NumPy's reduction is as fast, and the branch costs)
            if (d == -1 or d == nd_ - 1) and 1 < n <= _ROW_MAX and x.size >= 4096:
                cache = _ones_rows[dt]
                one = cache.get(n)
                if one is None:
                    one = cache[n] = xp.ones(n, dtype=dt)
                    one.flags.writeable = False
                r = x @ one      # NumPy's own ndarray: .reshape is its method (no wrapper)
                if keepdim:
                    return r.reshape(x.shape[:-1] + (1,))
                return r if nd_ > 1 else xp.asarray(r)
        return x.sum(axis=axis, keepdims=keepdim)

    def _sum(x, dim=None, keepdim=False, *, dtype=None):
        axis = None if not dim or not x.ndim else tuple(dim)   # 0-dim: dim 0/-1 allowed
        # the array's own method (NumPy, CuPy): the array-api-compat wrapper costs ~1 us more
        if dtype is not None:
            return x.sum(axis=axis, keepdims=keepdim, dtype=nd(dtype))
        if x.dtype.kind in "biu":
            return x.sum(axis=axis, keepdims=keepdim, dtype=nd(_dtype.int64))
        return _rows_sum(x, axis, keepdim)

    def mean(x, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            x = xp.astype(x, nd(dtype))
        elif x.dtype.kind not in "f":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be a "
                               f"floating point dtype, got {dt_of(x)}; pass dtype= or convert "
                               f"with .float() first")
        axis = None if not dim or not x.ndim else tuple(dim)
        if x.size == 0:   # NaN like torch, without NumPy's "Mean of empty slice" warning
            r = xp.sum(x, axis=axis, keepdims=keepdim)
            return r * (_as(math.nan, r.dtype) if _legacy else math.nan)
        # sum / count, as numpy.mean computes it (float16 sums in float32), without its
        # Python-level bookkeeping (~2 us per call)
        if axis is None:
            n = x.size
        else:
            n = 1
            shape = x.shape
            for d in axis:
                n *= shape[d]
        if x.dtype.itemsize < 4:
            return xp.astype(x.sum(axis=axis, keepdims=keepdim, dtype=nd(_dtype.float32)) / n,
                             x.dtype)
        r = _rows_sum(x, axis, keepdim) / n
        # a NumPy scalar (axis=None) or 0-dim sum over an int is float64 on NumPy < 2
        return xp.astype(r, x.dtype) if _legacy and r.dtype != x.dtype else r

    def amax(x, dim=(), keepdim=False):
        if x.size == 0:   # the fake rule's check: torch's error on every device
            _shapes.check_nonempty_reduction(x.shape, dim, "amax")
        return x.max(axis=tuple(dim) if dim and x.ndim else None, keepdims=keepdim)

    def amin(x, dim=(), keepdim=False):
        if x.size == 0:
            _shapes.check_nonempty_reduction(x.shape, dim, "amin")
        return x.min(axis=tuple(dim) if dim and x.ndim else None, keepdims=keepdim)

    def _arg_ext(f, api):
        def k(x, dim=None, keepdim=False):
            if x.size == 0:
                _shapes.check_nonempty_reduction(x.shape, () if dim is None else (dim,), api, True)
            if dim is None:
                r = f(xp.reshape(x, (-1,)))
                return xp.reshape(r, (1,) * x.ndim) if keepdim else r
            return f(x, axis=dim if x.ndim else None, keepdims=keepdim)
        return k

    argmax = _arg_ext(xp.argmax, "argmax")
    argmin = _arg_ext(xp.argmin, "argmin")

    def matmul(a, b):
        if a.dtype != b.dtype:   # torch does not promote here: its message, from the fake rule's check
            _shapes.check_same_dtype(dt_of(a), dt_of(b))
        if a.ndim == 2 and b.ndim == 2 and a.shape[1] == 1 and a.shape[0] * b.shape[1] >= 4096:
            # an outer product (inner size 1: the weight gradient of a batch of one). NumPy's
            # matmul leaves BLAS for k == 1 (~10x slower); one zero column/row more gives the
            # same values (x*y + 0*0) through BLAS
            m, n = a.shape[0], b.shape[1]
            a2 = xp.zeros((m, 2), dtype=a.dtype)
            a2[:, :1] = a
            b2 = xp.zeros((2, n), dtype=b.dtype)
            b2[:1] = b
            return a2 @ b2
        return a @ b   # the array's operator: no array-api-compat wrapper frame

    def _need_float(x, api):
        # torch: "softmax_lastdim_kernel_impl" not implemented for 'Long' (no int -> float here)
        if x.dtype.kind in "biu":
            raise RuntimeError(f"{api}(): expected a floating point input, got {dt_of(x)} "
                               f"(not implemented for integer/bool tensors, as in torch); "
                               f"convert it first, e.g. x.float().{api}(dim)")
        return _fl(x)

    def softmax(x, dim):
        x = _need_float(x, "softmax")
        if x.size == 0:   # torch: an empty result (no reduction over a 0-size dim)
            return xp.empty(x.shape, dtype=x.dtype)
        e = xp.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)

    def log_softmax(x, dim):
        x = _need_float(x, "log_softmax")
        if x.size == 0:
            return xp.empty(x.shape, dtype=x.dtype)
        z = x - x.max(axis=dim, keepdims=True)
        return z - xp.log(xp.exp(z).sum(axis=dim, keepdims=True))

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
        a, b = _prep(dst, other)
        if a is dst and a.dtype.kind != "b":
            # no promotion of dst: write in place (no temporary, no second pass; NumPy/CuPy
            # handle overlapping operands)
            a += b
            return
        _inplace_result("add_", dst, add(dst, other))

    def mul_(dst, other):
        if dst.dtype is _F16:
            h = _half_opmath(dst, other)
            if h is not None:      # torch's float32 opmath, as mul (not float16 `*=`)
                be.assign(dst, xp.astype(xp.multiply(*h), _F16))
                return
        a, b = _prep(dst, other)
        if a is dst and a.dtype.kind != "b":
            a *= b
            return
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

    def nonzero(x):
        # (n, ndim) int64, row-major order; a 0-dim input gives (1, 0) or (0, 0) (torch's rule)
        if x.ndim == 0:
            return xp.zeros((1 if bool(x) else 0, 0), dtype=xp.int64)
        return xp.stack([xp.astype(i, xp.int64) for i in xp.nonzero(x)], axis=1)

    def masked_scatter_(x, mask, src):
        if mask.dtype.kind != "b":
            raise TypeError("masked_scatter_: mask is not bool")   # the fake rule: torch's words
        be.masked_scatter(x, mask, src)

    def masked_fill_(x, mask, value):
        if mask.dtype.kind != "b":
            raise TypeError("masked_fill_: mask is not bool")      # the fake rule: torch's words
        be.assign(x, xp.where(mask, xp.asarray(value, dtype=x.dtype) if isinstance(
            value, (int, float)) else value, x))

    # allocations: the outputs of ops and user factories, once per call. A backend whose
    # empty/full are ArrayBackend's own (``np.empty``/``np.full`` of the cached native dtype:
    # their ``_tp_np_alloc`` mark) gets that call here, one frame less; others are called as
    # bound. (One code object for every backend: the kernels are the same code on each.)
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
            c = fill_value.__class__
            if (c is float or c is int) and r.kind == "f":
                # ones/full of a Python number into a float dtype: ndarray.fill gives np.full's
                # bytes and errors there (checked value by value, inf/nan/overflow included, on
                # NumPy 1.26 and 2) without np.full's Python frame and copyto dispatch. (Not
                # integer dtypes: NumPy 1.x's fill warns or raises where np.full wraps.)
                a = np_empty(size, r)
                a.fill(fill_value)
                return a
            return np_full(size, fill_value, r)
        return be_full(tuple(size), fill_value, dtype, device)

    def arange(start, end, step, *, dtype, device):
        _shapes.check_arange(start, end, step)   # what the backend's arange would not refuse
        return be.arange(start, end, step, dtype, device)

    def rand(size, *, dtype, device):
        return be.rand(tuple(size), dtype, device)

    def randn(size, *, dtype, device):
        return be.randn(tuple(size), dtype, device)

    def sign(x):
        return xp.sign(x)

    # -- torch habits: classification, rounding, bool/prod/cumulative reductions ----------------
    def _axis(x, dim):
        return None if not dim or not x.ndim else tuple(dim)

    def all_(x, dim=None, keepdim=False):
        return xp.all(_as_bool(x), axis=_axis(x, dim), keepdims=keepdim)

    def any_(x, dim=None, keepdim=False):
        return xp.any(_as_bool(x), axis=_axis(x, dim), keepdims=keepdim)

    def prod(x, dim=None, keepdim=False, *, dtype=None):
        t = nd(dtype) if dtype is not None else (
            nd(_dtype.int64) if x.dtype.kind in "biu" else x.dtype)
        return xp.prod(x, axis=_axis(x, dim), keepdims=keepdim, dtype=t)

    _cumulative_sum = getattr(xp, "cumulative_sum", None)

    def cumsum(x, dim, *, dtype=None):
        t = nd(dtype) if dtype is not None else (
            nd(_dtype.int64) if x.dtype.kind in "biu" else x.dtype)
        if x.ndim == 0:
            return xp.astype(x, t, copy=True)
        d = _shapes.wrap_dim(dim, x.ndim)
        if _cumulative_sum is not None:
            return _cumulative_sum(x, axis=d, dtype=t)
        return be.np.cumsum(x, axis=d, dtype=t)

    def _unchanged_ints(f):
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

    # -- values and indices ---------------------------------------------------------------------
    _take_along = getattr(xp, "take_along_axis", None) or be.np.take_along_axis

    def _minmax_dim(arg, api):
        def k(x, dim, keepdim=False):
            if x.size == 0:
                _shapes.check_nonempty_reduction(x.shape, (dim,), api)
            if x.ndim == 0:
                _shapes.wrap_dim(dim, 0)
                return xp.asarray(x, copy=True), xp.zeros((), dtype=nd(_dtype.int64))
            d = _shapes.wrap_dim(dim, x.ndim)
            idx = arg(x, axis=d, keepdims=True)
            vals = _take_along(x, idx, axis=d)
            if not keepdim:
                vals, idx = xp.squeeze(vals, axis=d), xp.squeeze(idx, axis=d)
            return vals, xp.astype(idx, nd(_dtype.int64))
        return k

    def argsort(x, dim=-1, descending=False, *, stable=False):
        if x.ndim == 0:
            return xp.zeros((), dtype=nd(_dtype.int64))
        d = _shapes.wrap_dim(dim, x.ndim)
        # always stable: equal values keep their order on every device (torch's stable=True
        # result, which is also a valid stable=False result)
        return xp.astype(xp.argsort(x, axis=d, descending=descending, stable=True),
                         nd(_dtype.int64))

    def sort(x, dim=-1, descending=False, *, stable=False):
        idx = argsort(x, dim, descending)
        if x.ndim == 0:
            return xp.asarray(x, copy=True), idx
        return _take_along(x, idx, axis=_shapes.wrap_dim(dim, x.ndim)), idx

    def _index_bounds(api, idx, n, dim):
        if idx.size:
            lo, hi = int(xp.min(idx)), int(xp.max(idx))
            if lo < 0 or hi >= n:
                bad = lo if lo < 0 else hi
                raise RuntimeError(f"{api}(): index {bad} is out of bounds for dimension {dim} "
                                   f"with size {n}")

    def gather(x, dim, idx, *, sparse_grad=False):
        if x.ndim == 0:
            x = xp.reshape(x, (1,))
            return xp.reshape(gather(x, 0, xp.reshape(idx, (-1,))), idx.shape)
        d = _shapes.wrap_dim(dim, x.ndim)
        _index_bounds("gather", idx, x.shape[d], d)
        if idx.ndim != x.ndim:
            raise RuntimeError("gather(): Index tensor must have the same number of dimensions "
                               "as input tensor")
        sl = tuple(slice(None) if k == d else slice(0, idx.shape[k]) for k in range(x.ndim))
        return _take_along(x[sl], idx, axis=d)

    def _scatter_prep(api, x, dim, idx, src):
        """``(flat index into x, src's index-shaped block)`` for scatter ops on ``x`` (at least
        1-D): position ``[i][j]...`` of ``idx`` goes to ``x[i][idx[i][j]]...`` (``dim`` = 1)."""
        shape = x.shape
        d = _shapes.wrap_dim(dim, x.ndim)
        _index_bounds(api, idx, shape[d], d)
        ish = idx.shape
        strides = [1] * x.ndim
        for k in range(x.ndim - 2, -1, -1):
            strides[k] = strides[k + 1] * shape[k + 1]
        i64 = nd(_dtype.int64)
        lin = xp.astype(idx, i64) * strides[d]
        for k in range(x.ndim):
            if k != d:
                ar = xp.arange(ish[k], dtype=i64) * strides[k]
                lin = lin + xp.reshape(ar, tuple(ish[k] if j == k else 1 for j in range(x.ndim)))
        if hasattr(src, "dtype"):
            src = src[tuple(slice(0, n) for n in ish)]
            if src.dtype != x.dtype:
                src = xp.astype(src, x.dtype)
            src = xp.reshape(src, (-1,))
        return xp.reshape(lin, (-1,)), src

    def scatter_add(x, dim, idx, src):
        shape = x.shape
        if x.ndim == 0:
            return xp.reshape(scatter_add(xp.reshape(x, (1,)), 0, xp.reshape(idx, (-1,)),
                                          xp.reshape(src, (-1,))), ())
        lin, src = _scatter_prep("scatter_add", x, dim, idx, src)
        out = xp.asarray(xp.reshape(x, (-1,)), copy=True)
        be.scatter_add(out, 0, lin, src)
        return xp.reshape(out, shape)

    def scatter(x, dim, idx, src):
        # src: an array or a Python number (torch's scatter.value); a repeated index keeps one
        # of its values (which one is unspecified, as torch)
        if hasattr(src, "dtype") and src.dtype != x.dtype:
            raise TypeError("scatter: src dtype differs")   # the fake rule says it torch's way
        shape = x.shape
        if x.ndim == 0:
            return xp.reshape(scatter(xp.reshape(x, (1,)), 0, xp.reshape(idx, (-1,)),
                                      xp.reshape(src, (-1,)) if hasattr(src, "dtype") else src),
                              ())
        lin, src = _scatter_prep("scatter", x, dim, idx, src)
        out = xp.asarray(xp.reshape(x, (-1,)), copy=True)
        be.index_put(out, 0, lin, src)
        return xp.reshape(out, shape)

    def scatter_(x, dim, idx, src):
        be.assign(x, scatter(x, dim, idx, src))

    # -- factories --------------------------------------------------------------------------------
    def eye(n, m, *, dtype, device):
        _shapes.check_eye(n, m)
        return xp.eye(n, m, dtype=nd(dtype))

    def linspace(start, end, steps, *, dtype, device):
        _shapes.check_linspace(steps)
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
        _shapes.check_randint(low, high)
        _shapes.check_nonnegative("randint", size)
        u = be.rand(tuple(size), _dtype.float64, device)
        v = xp.minimum(xp.floor(u * float(high - low)), float(high - low - 1)) + float(low)
        return xp.astype(v, nd(dtype))

    # -- fused formula kernels (not ops: ``_ops._define.fused`` calls them in backward formulas
    # when no graph is recorded). Each runs the same array steps as the op-by-op formula, so
    # the values are equal; one kernel call instead of several op calls.
    def _log_softmax_backward(g, y, dim):   # g - exp(y) * sum(g, dim)
        return xp.subtract(g, xp.multiply(xp.exp(y), _sum(g, (dim,), True)))

    def _softmax_backward(g, y, dim):       # y * (g - sum(g * y, dim))
        return xp.multiply(y, xp.subtract(g, _sum(xp.multiply(g, y), (dim,), True)))

    def _threshold_backward(g, y):          # relu: g * (y != 0)
        return xp.multiply(g, xp.not_equal(y, 0))

    def _matmul_backward(g, a, b, need_a, need_b):   # 2-D: (g @ b.T, a.T @ g)
        return (matmul(g, b.T) if need_a else None), (matmul(a.T, g) if need_b else None)

    def _add_scaled_(dst, other, alpha):    # dst += other * alpha (add_/sub_ with alpha)
        dst += xp.multiply(other, alpha)

    # floating array with an array of its dtype or a Python number: these kernels are exactly
    # the ufunc there (_prep changes nothing); the generated adapters call it directly
    if not _legacy:   # NumPy < 2: a Python number needs _prep (see _as)
        # a float16 tensor with a number is no bare ufunc: torch rounds the number through
        # float32 (add, sub: NumPy rounds it from the double) or reads it at float32 (mul, div)
        wide = frozenset((_dtype.float32, _dtype.float64))
        for k, uf in ((add, xp.add), (sub, xp.subtract), (mul, xp.multiply), (div, xp.divide)):
            k._tp_float_ufunc = uf
            k._tp_number_dtypes = wide

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
        sum=_sum, mean=mean, amax=amax, amin=amin, argmax=argmax, argmin=argmin, matmul=matmul,
        softmax=softmax, log_softmax=log_softmax, cat=cat, stack=stack, clone=clone,
        to_dtype=to_dtype, copy_=copy_, fill_=fill_, add_=add_, mul_=mul_,
        index=index, index_add=index_add, index_put_=index_put_, masked_select=masked_select,
        nonzero=nonzero,
        masked_scatter_=masked_scatter_, masked_fill_=masked_fill_,
        empty=empty, full=full, arange=arange, rand=rand, randn=randn,
        isnan=xp.isnan, isinf=xp.isinf, isfinite=xp.isfinite,
        floor=_unchanged_ints(xp.floor), ceil=_unchanged_ints(xp.ceil), round=round_,
        all=all_, any=any_, prod=prod, cumsum=cumsum,
        max_dim=_minmax_dim(xp.argmax, "max"), min_dim=_minmax_dim(xp.argmin, "min"),
        sort=sort, argsort=argsort, gather=gather, scatter_add=scatter_add,
        scatter=scatter, scatter_=scatter_,
        eye=eye, linspace=linspace, randint=randint,
        _log_softmax_backward=_log_softmax_backward, _softmax_backward=_softmax_backward,
        _threshold_backward=_threshold_backward, _add_scaled_=_add_scaled_,
        _matmul_backward=_matmul_backward,
    )
    kernels["topk"] = _topk(xp, be)
    return _quiet(kernels, be)


def _quiet(kernels: dict, be) -> dict:
    """The kernels made silent about floating point exceptions (x/0, sqrt(-1), log(0), overflow),
    as torch is: NumPy would warn (``RuntimeWarning``) and raise under ``filterwarnings=error``.

    Done once here, where every path to a kernel passes (the generated adapters and the
    elementwise fuser both call these): each kernel runs with NumPy's error state set to
    "ignore" for its own duration only (a context variable: the caller's and other threads'
    NumPy settings are untouched). NumPy 2 gives the state as a ready object, so the per-call cost
    is two context-variable writes (about 0.13 us), which the adapters inline; other NumPy
    versions use ``numpy.errstate``. Backends whose
    module is not NumPy (CuPy: GPU arithmetic raises no such warnings) get the kernels as they are.
    """
    np_mod = be.np     # Backend.np: the NumPy-like module, None when there is none
    if getattr(np_mod, "__name__", "") != "numpy":
        return kernels
    try:   # NumPy >= 2: the state errstate would install, made once
        from numpy._core._ufunc_config import _extobj_contextvar
        from numpy._core.umath import _make_extobj
        state = _make_extobj(all="ignore")
        set_, reset = _extobj_contextvar.set, _extobj_contextvar.reset
    except (ImportError, AttributeError, TypeError):
        # NumPy < 2: an errstate entered and left by hand (its settings are thread-local there),
        # the same (set, reset, state) shape, so tensor() and the adapters silence it too
        errstate = np_mod.errstate
        state = {"all": "ignore"}

        def set_(st):
            cm = errstate(**st)
            cm.__enter__()
            return cm

        def reset(cm):
            cm.__exit__(None, None, None)

    def wrap(k):
        if getattr(k, "_tp_fp_free", False):   # computes no floats (empty): nothing to silence
            return k

        def quiet(*args, **kwargs):
            token = set_(state)
            try:
                return k(*args, **kwargs)
            finally:
                reset(token)
        quiet.__wrapped__ = k
        # the generated adapters (_ops/_define.make_adapter) inline these two writes around
        # the unwrapped kernel instead of calling through this wrapper (one frame less)
        quiet._tp_quiet = (set_, reset, state)
        return quiet
    return {name: wrap(k) for name, k in kernels.items()}


def _topk(xp, be):
    """The ``topk`` kernel on ``xp``: a stable sort along the dim (descending for ``largest``:
    NaN first, as torch counts NaN the largest), the first ``k`` positions, their values."""
    take_along = getattr(xp, "take_along_axis", None) or be.np.take_along_axis
    i64 = be.native_dtype(_dtype.int64)

    def topk(x, k, dim=-1, largest=True, sorted=True):   # noqa: A002 - torch's name
        n = x.shape[_shapes.wrap_dim(dim, x.ndim)] if x.ndim else 1
        if k < 0 or k > n:      # the fake rule's check (_ops/sorting_topk.py), for eager calls
            raise RuntimeError(f"topk(): selected index k out of range (k={k}, size of dim "
                               f"{dim} is {n})")
        if x.ndim == 0:
            return xp.asarray(x, copy=True), xp.zeros((), dtype=i64)
        d = _shapes.wrap_dim(dim, x.ndim)
        order = xp.argsort(x, axis=d, descending=bool(largest), stable=True)
        sl = [slice(None)] * x.ndim
        sl[d] = slice(0, k)
        idx = order[tuple(sl)]
        return take_along(x, idx, axis=d), xp.astype(idx, i64)
    return topk


__all__ = ["bind", "math"]
