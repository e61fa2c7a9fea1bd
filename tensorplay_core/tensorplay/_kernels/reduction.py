"""Reference kernels of the reductions (sum, mean, extrema, bool, product, cumulative), the
softmaxes, the value-and-index ops (max/min over a dim, sort, argsort, topk) and the fused
backward formulas that reduce (``_softmax_backward``...)."""

from __future__ import annotations

import math

from .. import _dtype
from . import _checks
from .indexing import extremes


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    k = {"sum": c.sum, "mean": _mean(c)}
    k.update(_extrema(c))
    k.update(_bool_prod_cumulative(c))
    k.update(_softmax(c))
    k.update(_sorting(c))
    k["topk"] = _topk(c)
    return k


def _mean(c):
    xp, nd, dt_of, legacy, as_, rows_sum = c.xp, c.nd, c.dt_of, c.legacy, c.as_, c.rows_sum
    # NumPy arrays: the sum divided by a cached read-only 0-d array of its dtype holding the
    # count, not by the Python int (NumPy converts the weak int on every call: 8.9 k against
    # 6.0 k instructions for a (64, 1) sum, 6 means a training step). The same bits: the count
    # is exact in the dtype up to 2**24 (float32) / 2**53 (float64), so the int's conversion
    # gives the same divisor; larger counts, other dtypes and scalar sums keep the int.
    np_mod = c.be.np
    nd_cls = np_mod.ndarray if getattr(np_mod, "__name__", "") == "numpy" else None
    exact = {} if nd_cls is None else {np_mod.dtype(nd(_dtype.float32)): 1 << 24,
                                       np_mod.dtype(nd(_dtype.float64)): 1 << 53}
    divisors: dict = {}

    def divisor(dt, n):
        lim = exact.get(dt)
        if lim is None or n > lim or len(divisors) >= 256:
            return None
        d = np_mod.array(n, dtype=dt)
        d.flags.writeable = False
        return divisors.setdefault((dt, n), d)

    def mean(x, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            _checks.check_mean_dtype(dtype)
            x = xp.astype(x, nd(dtype))
        elif x.dtype.kind not in "f":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be a "
                               f"floating point dtype, got {dt_of(x)}; pass dtype= or convert "
                               f"with .float() first")
        if not x.ndim:
            _checks.check_dims_0d(dim)
        axis = None if not dim or not x.ndim else tuple(dim)
        if x.size == 0:   # NaN like torch, without NumPy's "Mean of empty slice" warning
            r = xp.sum(x, axis=axis, keepdims=keepdim)
            return r * (as_(math.nan, r.dtype) if legacy else math.nan)
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
        r = rows_sum(x, axis, keepdim)
        if r.__class__ is nd_cls:
            d = divisors.get((r.dtype, n))
            if d is not None or (d := divisor(r.dtype, n)) is not None:
                return r / d
        r = r / n
        # a NumPy scalar (axis=None) or 0-dim sum over an int is float64 on NumPy < 2
        return xp.astype(r, x.dtype) if legacy and r.dtype != x.dtype else r
    return mean


def _extrema(c):
    xp = c.xp

    def amax(x, dim=(), keepdim=False):
        if x.size == 0:   # the fake rule's check: torch's error on every device
            _checks.check_nonempty_reduction(x.shape, dim, "amax")
        if not x.ndim:
            _checks.check_dims_0d(dim)
        return x.max(axis=tuple(dim) if dim and x.ndim else None, keepdims=keepdim)

    def amin(x, dim=(), keepdim=False):
        if x.size == 0:
            _checks.check_nonempty_reduction(x.shape, dim, "amin")
        if not x.ndim:
            _checks.check_dims_0d(dim)
        return x.min(axis=tuple(dim) if dim and x.ndim else None, keepdims=keepdim)

    def arg_ext(f, api):
        def k(x, dim=None, keepdim=False):
            if x.size == 0:
                _checks.check_nonempty_reduction(x.shape, () if dim is None else (dim,), api, True)
            if not x.ndim:
                _checks.check_dims_0d(dim)
            if dim is None:
                r = f(xp.reshape(x, (-1,)))
                return xp.reshape(r, (1,) * x.ndim) if keepdim else r
            if dim.__class__ is not int:    # (not NumPy's axis rules: torch's int only)
                dim = _checks.wrap_dim(dim, x.ndim, f"{api}(): ")
            return f(x, axis=dim if x.ndim else None, keepdims=keepdim)
        return k

    return dict(amax=amax, amin=amin, argmax=arg_ext(xp.argmax, "argmax"),
                argmin=arg_ext(xp.argmin, "argmin"))


def _bool_prod_cumulative(c):
    xp, nd, be, as_bool, axis, F16, F32 = c.xp, c.nd, c.be, c.as_bool, c.axis, c.F16, c.F32
    F64 = nd(_dtype.float64)
    cumulative_sum = getattr(xp, "cumulative_sum", None)

    U8 = nd(_dtype.uint8)

    # torch's all/any of uint8 give uint8 (0/1); every other dtype gives bool. An empty dim
    # list (not None) reduces no dim: torch's all(x, dim=()) is x != 0 (sum's reduces all)
    def all_(x, dim=None, keepdim=False):
        if dim is not None and not dim:
            r = xp.asarray(as_bool(x), copy=True)
        else:
            r = xp.all(as_bool(x), axis=axis(x, dim), keepdims=keepdim)
        return xp.astype(r, U8) if x.dtype == U8 else r

    def any_(x, dim=None, keepdim=False):
        if dim is not None and not dim:
            r = xp.asarray(as_bool(x), copy=True)
        else:
            r = xp.any(as_bool(x), axis=axis(x, dim), keepdims=keepdim)
        return xp.astype(r, U8) if x.dtype == U8 else r

    def prod(x, dim=None, keepdim=False, *, dtype=None):
        t = nd(dtype) if dtype is not None else (
            nd(_dtype.int64) if x.dtype.kind in "biu" else x.dtype)
        return xp.prod(x, axis=axis(x, dim), keepdims=keepdim, dtype=t)

    def cumsum(x, dim, *, dtype=None):
        t = nd(dtype) if dtype is not None else (
            nd(_dtype.int64) if x.dtype.kind in "biu" else x.dtype)
        if x.ndim == 0:
            _checks.wrap_dim(dim, 0)
            return xp.astype(x, t, copy=True)
        d = _checks.wrap_dim(dim, x.ndim)
        # torch's cpu cumsum accumulates float16 in float32 and float32 in float64, rounding
        # each running sum once (a float32 running sum drifts ~4e-6 over 5000 terms)
        acc = F32 if t == F16 else F64 if t == F32 else t
        if acc != t:
            x = xp.astype(x, acc)
        if cumulative_sum is not None:
            r = cumulative_sum(x, axis=d, dtype=acc)
        else:
            r = be.np.cumsum(x, axis=d, dtype=acc)
        return r if acc == t else xp.astype(r, t)

    return dict(all=all_, any=any_, prod=prod, cumsum=cumsum)


def _softmax(c):
    xp, fl, dt_of, sum_, F16, F32 = c.xp, c.fl, c.dt_of, c.sum, c.F16, c.F32
    # NumPy arrays: the row max and the sum of exps as the ufuncs' reduce, which is what
    # ndarray.max/.sum call through NumPy's Python wrappers (_methods._amax/_sum: ~1 k
    # instructions each a call); the same call, so the same values. Other array modules keep
    # their arrays' methods.
    np_mod = c.be.np
    numpy_arrays = getattr(np_mod, "__name__", "") == "numpy"
    max_reduce = np_mod.maximum.reduce if numpy_arrays else None
    add_reduce = np_mod.add.reduce if numpy_arrays else None

    def need_float(x, api):
        # torch: "softmax_lastdim_kernel_impl" not implemented for 'Long' (no int -> float here)
        if x.dtype.kind in "biu":
            raise RuntimeError(f"{api}(): expected a floating point input, got {dt_of(x)} "
                               f"(not implemented for integer/bool tensors, as in torch); "
                               f"convert it first, e.g. x.float().{api}(dim)")
        return fl(x)

    def softmax(x, dim):
        if dim.__class__ is not int:
            # NumPy's axis= would take a tuple, None or a 1-element tensor: torch's int only
            dim = _checks.wrap_dim(dim, x.ndim, "softmax(): ")
        x = need_float(x, "softmax")
        if x.size == 0:   # torch: an empty result (no reduction over a 0-size dim)
            return xp.empty(x.shape, dtype=x.dtype)
        if x.dtype == F16:   # torch's opmath: float32 inside, one rounding at the end
            return xp.astype(softmax(xp.astype(x, F32), dim), F16)
        if max_reduce is not None:
            e = xp.exp(x - max_reduce(x, dim, None, None, True))
            return e / add_reduce(e, dim, None, None, True)
        e = xp.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)

    def log_softmax(x, dim):
        if dim.__class__ is not int:
            dim = _checks.wrap_dim(dim, x.ndim, "log_softmax(): ")
        x = need_float(x, "log_softmax")
        if x.size == 0:
            return xp.empty(x.shape, dtype=x.dtype)
        if x.dtype == F16:   # (in float16 the sum of exps lost ~3 ulps of the result)
            return xp.astype(log_softmax(xp.astype(x, F32), dim), F16)
        if max_reduce is not None:
            z = x - max_reduce(x, dim, None, None, True)
            return z - xp.log(add_reduce(xp.exp(z), dim, None, None, True))
        z = x - x.max(axis=dim, keepdims=True)
        return z - xp.log(xp.exp(z).sum(axis=dim, keepdims=True))

    # fused formula kernels (not ops: ``_ops._define.fused`` calls them in backward formulas when
    # no graph is recorded). Each runs the same array steps as the op-by-op formula, so the
    # values are equal; one kernel call instead of several op calls.
    def _log_softmax_backward(g, y, dim):   # g - exp(y) * sum(g, dim)
        return xp.subtract(g, xp.multiply(xp.exp(y), sum_(g, (dim,), True)))

    def _softmax_backward(g, y, dim):       # y * (g - sum(g * y, dim))
        return xp.multiply(y, xp.subtract(g, sum_(xp.multiply(g, y), (dim,), True)))

    return dict(softmax=softmax, log_softmax=log_softmax,
                _log_softmax_backward=_log_softmax_backward, _softmax_backward=_softmax_backward)


def _sorting(c):
    xp, nd, be = c.xp, c.nd, c.be
    take_along = getattr(xp, "take_along_axis", None) or be.np.take_along_axis

    def minmax_dim(arg, api):
        def k(x, dim, keepdim=False):
            if x.size == 0:
                _checks.check_nonempty_reduction(x.shape, (dim,), api)
            if x.ndim == 0:
                _checks.wrap_dim(dim, 0)
                return xp.asarray(x, copy=True), xp.zeros((), dtype=nd(_dtype.int64))
            d = _checks.wrap_dim(dim, x.ndim)
            idx = arg(x, axis=d, keepdims=True)
            vals = take_along(x, idx, axis=d)
            if not keepdim:
                vals, idx = xp.squeeze(vals, axis=d), xp.squeeze(idx, axis=d)
            return vals, xp.astype(idx, nd(_dtype.int64))
        return k

    def argsort(x, dim=-1, descending=False, *, stable=False):
        if x.ndim == 0:
            return xp.zeros((), dtype=nd(_dtype.int64))
        d = _checks.wrap_dim(dim, x.ndim)
        # always stable: equal values keep their order on every device (torch's stable=True
        # result, which is also a valid stable=False result)
        return xp.astype(xp.argsort(x, axis=d, descending=descending, stable=True),
                         nd(_dtype.int64))

    def sort(x, dim=-1, descending=False, *, stable=False):
        idx = argsort(x, dim, descending)
        if x.ndim == 0:
            return xp.asarray(x, copy=True), idx
        return take_along(x, idx, axis=_checks.wrap_dim(dim, x.ndim)), idx

    def searchsorted(seq, x, *, out_int32=False, right=False, sorter=None):
        # torch's binary search (aten's cus_lower_bound/cus_upper_bound): the count of leading
        # elements e of each row with !(e >= v) (right: !(e > v)); the fake rule checked the
        # shapes and dtypes, ``tensorplay.searchsorted`` promoted the two to one dtype
        n = seq.shape[-1]
        i64 = nd(_dtype.int64)
        if sorter is not None:
            if sorter.size:
                lo, hi = extremes(c, sorter)          # (one device read for both ends)
                if lo < 0 or hi >= n:
                    raise RuntimeError("torch.searchsorted(): sorter index out of range")
            seq = take_along(seq, sorter, axis=-1)
        side = "right" if right else "left"
        if seq.ndim == 1:
            # the array namespace's binary search (O(log n) a value); NaN values go past the end
            # as torch's comparisons send them (NumPy stops before NaN boundaries)
            r = xp.searchsorted(seq, xp.reshape(x, (-1,)), side=side)
            r = xp.reshape(r, x.shape)
            if n and x.dtype.kind == "f":
                r = xp.where(xp.isnan(x), xp.asarray(n, dtype=r.dtype), r)
        else:
            # rows: a branchless binary search over every row at once, ceil(log2(n + 1)) steps
            # of a gather and a comparison (the array API's searchsorted takes one 1-D sequence)
            r = xp.zeros(x.shape, dtype=i64)
            step = 1 << (n.bit_length() - 1) if n else 0   # the highest power of 2 <= n
            while step:
                cand = r + step
                e = take_along(seq, xp.clip(cand, 1, n) - 1, axis=-1)
                go = xp.logical_not(e > x if right else e >= x)
                r = xp.where(xp.logical_and(cand <= n, go), cand, r)
                step //= 2
        return xp.astype(r, nd(_dtype.int32) if out_int32 else i64)

    return dict(max_dim=minmax_dim(xp.argmax, "max"), min_dim=minmax_dim(xp.argmin, "min"),
                sort=sort, argsort=argsort, searchsorted=searchsorted)


def _topk(c):
    """The ``topk`` kernel on ``xp``: a stable sort along the dim (descending for ``largest``:
    NaN first, as torch counts NaN the largest), the first ``k`` positions, their values."""
    xp = c.xp
    take_along = getattr(xp, "take_along_axis", None) or c.be.np.take_along_axis
    i64 = c.nd(_dtype.int64)

    def topk(x, k, dim=-1, largest=True, sorted=True):   # noqa: A002 - torch's name
        n = x.shape[_checks.wrap_dim(dim, x.ndim)] if x.ndim else 1
        if k < 0 or k > n:      # the fake rule's check (_ops/sorting_topk.py), for eager calls
            raise RuntimeError(f"topk(): selected index k out of range (k={k}, size of dim "
                               f"{dim} is {n})")
        if x.ndim == 0:
            return xp.asarray(x, copy=True), xp.zeros((), dtype=i64)
        d = _checks.wrap_dim(dim, x.ndim)
        order = xp.argsort(x, axis=d, descending=bool(largest), stable=True)
        sl = [slice(None)] * x.ndim
        sl[d] = slice(0, k)
        idx = order[tuple(sl)]
        return take_along(x, idx, axis=d), xp.astype(idx, i64)
    return topk
