"""Reference kernels that move or select elements: matmul, joining, copies and casts, indexing,
gather/scatter and masked writes. A few operations the array API lacks (scatter-add, masked
writes) go through small backend methods."""

from __future__ import annotations

from .. import _dtype
from . import _checks

# the unsigned integer of a float's width (_keep's bit-pattern selection)
_UINT = {4: "uint32", 8: "uint64"}


# -- torch's index rules, op by op (session 52) -----------------------------------------------
# the index dtypes an op takes, whether it counts negative indices from the end ([-n, n)) or
# refuses them ([0, n)), and the exception classes of a refused dtype and of an index out of
# range. The ops' fake rules check the dtype (``check_index_dtype``: fake tensors, compile), the
# kernels the dtype (a cheap test, re-explained by the fake rule) and the range (one read of the
# index's extremes, ``check_range``). ``index`` and ``index_put_`` are the indexing ops' own
# rules (advanced indexing, after a bool or uint8 mask became its positions); the composites
# built on them (``index_select``, ``take``, ``put_``, ``index_copy_``, ``index_fill_``) name
# themselves to the op (its ``api`` argument), which then applies their rule.
_INTS = (_dtype.int64, _dtype.int32)
_LONG = (_dtype.int64,)
_W_MASKS = "tensors used as indices must be long, int, byte or bool tensors"
_W_INTS = "Expected dtype int32/int64 for index"     # (torch's words)
_W_LONG = "Expected a long tensor for index"
INDEX_RULES = {
    # api:          (dtypes, negatives, dtype error, range error, torch's words)
    "index": (_INTS, True, IndexError, IndexError, _W_MASKS),
    "index_put_": (_INTS, True, IndexError, IndexError, _W_MASKS),
    "index_select": (_INTS, False, RuntimeError, IndexError,
                     "Expected dtype int32 or int64 for index"),
    "index_add": (_INTS, False, RuntimeError, IndexError, _W_INTS),
    "take": (_LONG, True, RuntimeError, IndexError, _W_LONG),
    "put_": (_LONG, True, RuntimeError, IndexError, _W_LONG),
    "index_copy_": (_LONG, False, RuntimeError, IndexError, _W_LONG),
    "index_fill_": (_LONG, True, IndexError, IndexError, "Expected dtype int64 for index"),
    "gather": (_INTS, False, RuntimeError, RuntimeError, _W_INTS),
    "scatter": (_INTS, False, RuntimeError, RuntimeError, _W_INTS),
    "scatter_": (_INTS, False, RuntimeError, RuntimeError, _W_INTS),
    "scatter_add": (_INTS, False, RuntimeError, RuntimeError, _W_INTS),
    "scatter_reduce": (_INTS, False, RuntimeError, RuntimeError, _W_INTS),
    # (with a dim; without one it is gather's of the flattened tensor)
    "take_along_dim": (_LONG, False, RuntimeError, RuntimeError,
                       "dtype of indices should be Long"),
}


def check_index_dtype(api: str, dtype) -> None:
    """Raise torch's exception for an index of ``dtype`` that ``api`` refuses (``INDEX_RULES``),
    naming the op and the fix. An identity test for the dtypes taken."""
    rule = INDEX_RULES[api]
    ok = rule[0]
    if dtype is ok[0] or (dtype is _dtype.int32 and ok is _INTS):
        return
    got = getattr(dtype, "name", dtype)
    if api == "index" or api == "index_put_":
        name = "x[index]" if api == "index" else "x[index] = value / index_put_()"
        raise rule[2](f"{name}: {rule[4]} (got {got}); convert it with index.long()")
    raise rule[2](f"{api}(): {rule[4]} (got {got}); convert it with index.long()")


def _index_dtype_test(c):
    """``bad(idx, api)``: True when the native array ``idx`` has a dtype ``api`` refuses; the
    kernel then raises, and the op's fake rule says why in torch's words
    (``check_index_dtype``). Identity tests first (~20 ns), equality only when they fail:
    NumPy has two int64 dtype objects on Linux (``long``, ``'l'``, the one it makes, and
    ``long long``, ``'q'``, which CuPy's ``argmax`` returns and ``np.longlong`` names), equal
    but not identical; an identity test alone refused the second (``mode`` on cuda)."""
    np_mod = c.be.np
    i64, i32 = np_mod.dtype(c.nd(_dtype.int64)), np_mod.dtype(c.nd(_dtype.int32))
    rules = INDEX_RULES

    def bad(idx, api):
        dt = idx.dtype
        if dt is i64 or (dt is i32 and rules[api][0] is _INTS):
            return False
        return dt != i64 and not (dt == i32 and rules[api][0] is _INTS)
    return bad


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    k = _matmul(c)
    k.update(_copies(c))
    k.update(_index(c))
    k.update(_gather_scatter(c))
    return k


def _matmul(c):
    xp, dt_of = c.xp, c.dt_of
    BOOL = c.be.np.dtype(bool)     # (CuPy arrays have NumPy dtypes; no device allocation here)

    def matmul(a, b):
        if a.dtype != b.dtype:   # torch does not promote here: its message, from the fake rule's check
            _checks.check_same_dtype(dt_of(a), dt_of(b))
        if a.dtype is BOOL:      # (builtin dtypes are singletons: an identity test, ~20 ns)
            raise TypeError("matmul of bool operands")   # the fake rule raises torch's refusal
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

    def _matmul_backward(g, a, b, need_a, need_b):   # 2-D: (g @ b.T, a.T @ g)
        return (matmul(g, b.T) if need_a else None), (matmul(a.T, g) if need_b else None)

    def _threshold_backward(g, y):
        # relu's backward, torch's threshold_backward(g, y, 0): g where the output is not <= 0
        # (NaN passes), else exactly 0 -- a product with the mask gave NaN for an infinite or NaN
        # g there. (The cpu plugin has a faster exact form.)
        return xp.where(xp.less_equal(y, 0), xp.zeros((), dtype=g.dtype), g)

    def _keep(g, keep):
        # g where keep, else exactly +0 (also for an infinite or NaN g): for 4- and 8-byte
        # floats an integer product of g's bit pattern with the 0/1 mask (the passes of the
        # float product g * keep, which gave NaN there; `where` on a random mask is up to 15x
        # slower on NumPy: 1e5 float32, 22 vs 342 us), else `where`
        dt = g.dtype      # (str(dtype) costs ~14 us on NumPy: its name is built in Python)
        u = _UINT.get(dt.itemsize) if dt.kind == "f" else None
        if u is None or not hasattr(g, "view"):
            return xp.where(keep, g, xp.zeros((), dtype=g.dtype))
        return (g.view(u) * keep.astype(u)).view(dt)   # (a bool operand: a slower loop)

    def _minmax_backward(g, a, b, pick_gt):
        # maximum's (pick_gt) / minimum's gradients as torch's formulas: where(a == b, g / 2, g)
        # with exact zeros where the operand loses (NaN on either side: g to both); g's shape
        # (the callers reduce to each operand's). The values of elementwise._minmax_bw's op-by-op
        # steps (g * 1 and g * 0.5 are g and g / 2 exactly), in one call.
        lt, gt = xp.less(a, b), xp.greater(a, b)
        a_keeps, b_keeps = (xp.logical_not(lt), xp.logical_not(gt)) if pick_gt else \
            (xp.logical_not(gt), xp.logical_not(lt))
        share = g * (1.0 - 0.5 * xp.astype(xp.equal(a, b), g.dtype))
        return _keep(share, a_keeps), _keep(share, b_keeps)

    def _clamp_backward(g, x, bound, pick_gt):
        # maximum/minimum with a number (clamp's bounds): g where x >= bound (<= for minimum),
        # else exactly 0 (NaN x: 0), as torch's clamp_backward
        return _keep(g, xp.greater_equal(x, bound) if pick_gt else xp.less_equal(x, bound))

    return dict(matmul=matmul, _matmul_backward=_matmul_backward,
                _threshold_backward=_threshold_backward, _minmax_backward=_minmax_backward,
                _clamp_backward=_clamp_backward)


def _copies(c):
    xp, nd, be, dt_of = c.xp, c.nd, c.be, c.dt_of

    def promoted(ts):
        dt = dt_of(ts[0])
        for t in ts[1:]:
            dt = _dtype.promote_types(dt, dt_of(t))
        n = nd(dt)
        return [t if t.dtype == n else xp.astype(t, n) for t in ts]

    def cat(ts, dim=0):
        ts = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)] or ts
        if dim.__class__ is not int:
            # NumPy's axis=None would flatten, a 1-element tensor be its int: torch's int only
            dim = _checks.wrap_dim(dim, ts[0].ndim if ts else 0, "cat(): ")
        return xp.concat(promoted(ts), axis=dim)

    def stack(ts, dim=0):
        if dim.__class__ is not int:
            dim = _checks.wrap_dim(dim, ts[0].ndim + 1 if ts else 1, "stack(): ")
        return xp.stack(promoted(ts), axis=dim)

    def clone(x):
        return xp.asarray(x, copy=True)

    def to_dtype(x, dtype):
        return xp.astype(x, nd(dtype))

    def copy_(dst, src):
        # (src may reach the kernel as a Python number: a 0-dim source the adapter unwrapped)
        if getattr(src, "ndim", 0) > dst.ndim:
            # an array assignment accepts extra leading size-1 dims, torch never does: the
            # adapter's error path re-explains this with copy_'s fake rule, in torch's words
            # ("output with shape [] doesn't match the broadcast shape [1]")
            raise ValueError(f"copy_: source of {src.ndim} dims written into {dst.ndim} dims")
        be.assign(dst, src)

    def fill_(dst, value):
        be.assign(dst, value)

    return dict(cat=cat, stack=stack, clone=clone, to_dtype=to_dtype, copy_=copy_, fill_=fill_)


def _index(c):
    xp, be, dt_of = c.xp, c.be, c.dt_of
    reshape, take, take_negative = c.reshape, c.take, c.take_negative

    # (each takes a negative dim from the end, as torch: dim=-1 went to NumPy as given, and the
    # slicing below read it as dim 0 -- index_fill(-1, ...) filled rows)
    bad_dtype = _index_dtype_test(c)
    rules = INDEX_RULES
    I64 = be.np.dtype(c.nd(_dtype.int64))

    def index(x, dim, idx, *, api="index"):
        # api: the op this reads for (index_select, take, ...): its rule (INDEX_RULES)
        if idx.dtype is not I64 and bad_dtype(idx, api):
            raise TypeError(f"{api}: index of dtype {idx.dtype}")   # the fake rule: torch's words
        if not x.ndim:
            # a 0-dim self is one element along dim 0 (dim 0 or -1), as torch's
            _checks.wrap_dim(dim, 0)
            return xp.reshape(index(xp.reshape(x, (1,)), 0, idx, api=api), idx.shape)
        if dim.__class__ is not int or dim < 0:    # (a 0-dim int tensor: its int)
            dim = _checks.wrap_dim(dim, x.ndim)
        flat = reshape(idx, (-1,))
        if not _region(x.shape, dim, idx):
            # no element is read, so no index is checked (torch's rule: x[tensor([3]), 5:1] on
            # a (3, 4, 5) tensor is the empty (1, 0, 5) result)
            return xp.reshape(xp.take(x, flat[:0], axis=dim),
                              tuple(x.shape[:dim]) + tuple(idx.shape) + tuple(x.shape[dim + 1:]))
        n = x.shape[dim]
        # checked here, not left to take: CuPy's take wraps every index modulo n, and NumPy's
        # wraps what is still negative after the + n below (x[tensor([-5])] of 4 rows was row 3)
        rule = rules[api]
        exc = rule[3]
        if dim == 1 and api == "index_select" and x.ndim > 1:
            # torch's cpu index_select has its own path for dim 1 of a 2+-dim self, whose
            # range check is a RuntimeError ("INDICES element is out of DATA bounds"), where
            # every other dim's is an IndexError
            exc = RuntimeError
        lo = check_range(c, idx, n, dim, negative=rule[1],
                         api=None if api == "index" else api, exc=exc)
        if lo < 0 and not take_negative:
            # (only when the read extremes say some index is negative, and the namespace's take
            # does not count it from the end: the wrap is three more array ops)
            flat = xp.where(flat < 0, flat + n, flat)
        r = take(x, flat, dim)
        return reshape(r, tuple(x.shape[:dim]) + tuple(idx.shape) + tuple(x.shape[dim + 1:]))

    def index_add(x, dim, idx, src):
        if bad_dtype(idx, "index_add"):
            raise TypeError(f"index_add: index of dtype {idx.dtype}")   # the fake rule says why
        if not x.ndim:
            # a 0-dim self: one element along dim 0 (dim 0 or -1), a 0-dim source and one index
            # (torch's); other shapes are refused by the fake rule
            _checks.wrap_dim(dim, 0)
            if src.ndim or idx.size != 1:
                raise ValueError("index_add: a 0-dim self takes one index and a 0-dim source")
            return xp.reshape(index_add(xp.reshape(x, (1,)), 0, xp.reshape(idx, (1,)),
                                        xp.reshape(src, (1,))), ())
        if dim.__class__ is not int or dim < 0:    # (a 0-dim int tensor: its int)
            dim = _checks.wrap_dim(dim, x.ndim)
        if idx.ndim > 1 or src.shape != x.shape[:dim] + (idx.size,) + x.shape[dim + 1:]:
            # (the fake rule then says which of torch's shape rules is broken)
            raise ValueError(f"index_add: index {idx.shape} and source {src.shape} do not fit "
                             f"self {x.shape} along dim {dim}")
        if not _region(x.shape, dim, idx):   # nothing added: no index is checked (torch)
            return xp.asarray(x, copy=True)
        if x.dtype != src.dtype:
            _checks.check_index_add_dtypes(dt_of(x), dt_of(src))
        # torch's range: no negative index; CuPy's add.at would wrap any index, NumPy's a
        # negative one. torch's class: RuntimeError for an int64 index into 2 or more dims,
        # IndexError for a 1-D self or an int32 index
        check_range(c, idx, x.shape[dim], dim, negative=False, api="index_add_",
                    exc=RuntimeError if x.ndim > 1 and idx.dtype == I64 else IndexError)
        if x.dtype == c.F16:   # accumulated in float32, rounded once (torch's opmath)
            return xp.astype(_added(xp.astype(x, c.F32), dim, idx, xp.astype(src, c.F32)),
                             c.F16)
        return _added(x, dim, idx, src)

    def _added(x, dim, idx, src):
        out = xp.asarray(x, copy=True)
        be.scatter_add(out, dim, idx, src)
        return out

    def index_put_(x, dim, idx, values, *, api="index_put_"):
        # api: the op this writes for (index_fill_, index_copy_, put_): its rule (INDEX_RULES)
        if idx.dtype is not I64 and bad_dtype(idx, api):
            raise TypeError(f"{api}: index of dtype {idx.dtype}")   # the fake rule: torch's words
        if not x.ndim:
            # a 0-dim self is one element along dim 0 (dim 0 or -1), as torch's
            _checks.wrap_dim(dim, 0)
            one = xp.reshape(x, (1,))
            index_put_(one, 0, xp.reshape(idx, (-1,)), xp.reshape(values, (-1,))
                       if getattr(values, "ndim", 0) else values, api=api)
            be.assign(x, xp.reshape(one, ()))     # (a view on NumPy and CuPy: no change)
            return
        if dim.__class__ is not int or dim < 0:    # (a 0-dim int tensor: its int)
            dim = _checks.wrap_dim(dim, x.ndim)
        if _region(x.shape, dim, idx):
            # (CuPy's scatter wraps any index modulo n: checked here as for index)
            rule = rules[api]
            check_range(c, idx, x.shape[dim], dim, negative=rule[1],
                        api=None if api == "index_put_" else api, exc=rule[3])
            be.index_put(x, dim, idx, values)
        elif hasattr(values, "shape"):
            # nothing written: no index is checked (torch), but the values must still broadcast
            # to the indexed shape (the same error as a write)
            xp.broadcast_to(values, tuple(x.shape[:dim]) + tuple(idx.shape) +
                            tuple(x.shape[dim + 1:]))

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
        v = c.scalar_array(value, x.dtype) if isinstance(value, (int, float)) else value
        if 0 in getattr(x, "strides", ()):
            # an expanded x (elements sharing memory): only the True positions are written, as
            # torch's (writing back where(mask, v, x) whole let a False position's old value win)
            x[be.np.broadcast_to(mask, x.shape)] = v
            return
        be.assign(x, xp.where(mask, v, x))

    return dict(index=index, index_add=index_add, index_put_=index_put_,
                masked_select=masked_select, nonzero=nonzero, masked_scatter_=masked_scatter_,
                masked_fill_=masked_fill_)


def _region(shape, dim, idx) -> int:
    """How many elements ``x[..., idx, ...]`` (``idx`` along ``dim`` of a ``shape`` array)
    reads or writes. Zero: the index kernels check no index, as torch checks bounds only for
    the elements it reads or writes."""
    n = idx.size
    for i, s in enumerate(shape):
        if i != dim:
            n *= s
    return n


SMALL_INDEX = 64     # index arrays up to this many elements are read whole as a list
HOST_INDEX = 1 << 16     # ... up to this many are copied to the host and reduced there


def extremes(c, a) -> tuple:
    """``(smallest, largest)`` element of the non-empty integer array ``a`` (of the kernels'
    context ``c``), as ints, with one read of its device. Why one, and why mostly none of the
    device's reductions: on a GPU every read waits for all the work queued before it (the
    pipeline drains) and every reduction is a launch (~10 µs of host time each on CuPy). Up to
    ``SMALL_INDEX`` elements: the values as a list (``tolist``), Python takes the ends; up to
    ``HOST_INDEX`` (512 KiB of int64): one copy to the host (``to_host``; on cpu the array
    itself), reduced there by NumPy; larger: reduced on the device, both ends copied back
    together."""
    if a.size <= SMALL_INDEX:
        v = c.reshape(a, (-1,)).tolist()
        return min(v), max(v)
    if a.size <= HOST_INDEX:
        h = c.be.to_host(a)
        return int(h.min()), int(h.max())
    xp = c.xp
    lo, hi = xp.min(a), xp.max(a)
    if lo.__class__ is a.__class__:       # 0-dim device arrays (CuPy): one copy for both
        lo, hi = xp.stack((lo, hi)).tolist()
    return int(lo), int(hi)


def check_range(c, idx, n, dim, *, negative, api=None, exc=IndexError) -> int:
    """Raise ``exc`` naming the first bad extreme of index array ``idx`` along ``dim`` of size
    ``n``, in torch's words ("index 4 is out of bounds for dimension 0 with size 4", after
    ``api + "(): "`` when given): the valid range is ``[-n, n)`` with ``negative`` (indexing,
    ``index_put_``), else ``[0, n)`` (``gather``, the scatters, ``index_add``). One device
    read (``extremes``); nothing for an empty ``idx``. The array libraries do not check for
    us: CuPy's ``take``, scatter and ``add.at`` wrap every index modulo ``n``. Returns the
    smallest index (0 for an empty ``idx``): a caller that wraps negative indices need not
    when it is not negative."""
    if not idx.size:
        return 0
    lo, hi = extremes(c, idx)
    if lo < (-n if negative else 0) or hi >= n:
        bad = hi if hi >= n else lo
        e = exc(f"{api + '(): ' if api else ''}index {bad} is out of bounds for dimension "
                f"{dim} with size {n}")
        e.complete = True   # torch's words in full: no op-name prefix (_define.kernel_error)
        raise e
    return lo


def _scatter_prep(c, api, x, dim, idx, src):
    """``(flat index into x, src's index-shaped block)`` for scatter ops on ``x`` (at least
    1-D): position ``[i][j]...`` of ``idx`` goes to ``x[i][idx[i][j]]...`` (``dim`` = 1)."""
    xp = c.xp
    shape = x.shape
    d = _checks.wrap_dim(dim, x.ndim)
    check_range(c, idx, shape[d], d, negative=False, api=api, exc=RuntimeError)
    ish = idx.shape
    if len(ish) == len(shape) and any(ish[k] > shape[k] for k in range(len(ish)) if k != d):
        # the linear index below would run into the next row: refused (the adapter then runs
        # the op's shape rule, which raises torch's words)
        raise ValueError(f"{api}: index {list(ish)} larger than self {list(shape)} apart from "
                         f"dimension {d}")
    strides = [1] * x.ndim
    for k in range(x.ndim - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    i64 = c.nd(_dtype.int64)
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


def _gather_scatter(c):
    xp, be = c.xp, c.be
    bad_dtype = _index_dtype_test(c)
    take_along = getattr(xp, "take_along_axis", None) or be.np.take_along_axis
    take = c.take

    def gather(x, dim, idx, *, sparse_grad=False):
        if bad_dtype(idx, "gather"):
            raise TypeError(f"gather: index of dtype {idx.dtype}")   # the fake rule says why
        if x.ndim == 0:
            x = xp.reshape(x, (1,))
            return xp.reshape(gather(x, 0, xp.reshape(idx, (-1,))), idx.shape)
        d = _checks.wrap_dim(dim, x.ndim)
        check_range(c, idx, x.shape[d], d, negative=False, api="gather", exc=RuntimeError)
        if x.ndim == 1 and idx.ndim <= 1:
            # (a 0-dim index too, as torch; take_along_axis builds an index tuple first: ~2.5 µs
            # here)
            return take(x, idx, 0)
        if idx.ndim != x.ndim:
            raise RuntimeError("gather(): Index tensor must have the same number of dimensions "
                               "as input tensor")
        sl = tuple(slice(None) if k == d else slice(0, idx.shape[k]) for k in range(x.ndim))
        return take_along(x[sl], idx, axis=d)

    def scatter_add(x, dim, idx, src):
        if bad_dtype(idx, "scatter_add"):
            raise TypeError("scatter_add: index dtype")   # the fake rule says why
        shape = x.shape
        if x.ndim == 0:
            return xp.reshape(scatter_add(xp.reshape(x, (1,)), 0, xp.reshape(idx, (-1,)),
                                          xp.reshape(src, (-1,))), ())
        lin, src = _scatter_prep(c, "scatter_add", x, dim, idx, src)
        # float16: repeated indices summed in float32, rounded once (torch's opmath; float16
        # additions one by one were up to 0.04 off over 30 terms)
        half = x.dtype == c.F16
        out = xp.astype(xp.reshape(x, (-1,)), c.F32) if half else \
            xp.asarray(xp.reshape(x, (-1,)), copy=True)
        be.scatter_add(out, 0, lin, xp.astype(src, c.F32) if half else src)
        out = xp.reshape(out, shape)
        return xp.astype(out, c.F16) if half else out

    def scatter(x, dim, idx, src):
        if bad_dtype(idx, "scatter"):
            raise TypeError("scatter: index dtype")   # the fake rule says why
        # src: an array or a Python number (torch's scatter.value); a repeated index keeps one
        # of its values (which one is unspecified, as torch)
        if hasattr(src, "dtype") and src.dtype != x.dtype:
            raise TypeError("scatter: src dtype differs")   # the fake rule says it torch's way
        shape = x.shape
        if x.ndim == 0:
            return xp.reshape(scatter(xp.reshape(x, (1,)), 0, xp.reshape(idx, (-1,)),
                                      xp.reshape(src, (-1,)) if hasattr(src, "dtype") else src),
                              ())
        lin, src = _scatter_prep(c, "scatter", x, dim, idx, src)
        out = xp.asarray(xp.reshape(x, (-1,)), copy=True)
        be.index_put(out, 0, lin, src)
        return xp.reshape(out, shape)

    def scatter_(x, dim, idx, src):
        be.assign(x, scatter(x, dim, idx, src))

    np_mod = be.np
    i64 = c.nd(_dtype.int64)

    def identity(dt, reduce):
        """The value a position starts from without ``include_self``."""
        if reduce in ("sum", "mean"):
            return 0
        if reduce == "prod":
            return 1
        if dt.kind == "b":
            return reduce == "amin"
        if dt.kind == "f":
            return -np_mod.inf if reduce == "amax" else np_mod.inf
        info = np_mod.iinfo(dt)
        return int(info.min) if reduce == "amax" else int(info.max)

    def combine_at(uf, out, lin, s):
        """``uf.at(out, lin, s)`` without ``ufunc.at``: ``out[lin[i]] = uf(out[lin[i]], s[i])`` for
        every i, the values of a repeated position combined first, pairwise in a tree over their
        original order (log2 of the largest repeat count passes; one value read back). ``lin``
        1-D int64, ``s`` 1-D of ``out``'s dtype."""
        n = lin.shape[0]
        if n == 0:
            return
        order = xp.argsort(lin, stable=True)
        sl, v = lin[order], s[order]                  # grouped by position, original order kept
        first = xp.searchsorted(sl, sl, side="left")
        size = xp.searchsorted(sl, sl, side="right") - first
        rank = xp.arange(n, dtype=sl.dtype) - first   # place within its position's group
        width, step = int(xp.max(size)), 1
        while step < width:
            pick = xp.nonzero((rank % (2 * step) == 0) & (rank + step < size))[0]
            v[pick] = uf(v[pick], v[pick + step])
            step *= 2
        heads = xp.nonzero(rank == 0)[0]
        pos = sl[heads]
        out[pos] = uf(out[pos], v[heads])

    def scatter_reduce(x, dim, idx, src, reduce, *, include_self=True):
        if bad_dtype(idx, "scatter_reduce"):
            raise TypeError("scatter_reduce: index dtype")   # the fake rule says why
        # torch.scatter_reduce: every src value reduced into out[...index...] (repeated indices
        # combine: ufunc.at), the position's own value first unless include_self=False
        if src.dtype != x.dtype or reduce not in _SCATTER_UFUNCS or (
                reduce == "mean" and x.dtype.kind == "b"):
            raise TypeError("scatter_reduce: refused operands")   # the fake rule says why
        shape = x.shape
        if x.ndim == 0:
            return xp.reshape(scatter_reduce(xp.reshape(x, (1,)), 0, xp.reshape(idx, (-1,)),
                                             xp.reshape(src, (-1,)), reduce,
                                             include_self=include_self), ())
        lin, s = _scatter_prep(c, "scatter_reduce", x, dim, idx, src)
        # float16 sums and means accumulate in float32, rounded once (torch's opmath)
        half = x.dtype == c.F16 and reduce in ("sum", "mean")
        out = xp.astype(xp.reshape(x, (-1,)), c.F32) if half else \
            xp.asarray(xp.reshape(x, (-1,)), copy=True)
        if half:
            s = xp.astype(s, c.F32)
        if not include_self:
            be.index_put(out, 0, lin, identity(x.dtype, reduce))
        if out.dtype.kind == "b" and reduce in ("sum", "prod"):
            uf = getattr(np_mod, "logical_or" if reduce == "sum" else "logical_and")
        else:
            uf = getattr(np_mod, _SCATTER_UFUNCS[reduce])
        exact = be.ufunc_at
        if exact is None or uf.__name__ in exact:
            uf.at(out, lin, s)
        else:
            combine_at(uf, out, lin, s)
        if reduce == "mean":
            count = xp.full(out.shape, 1 if include_self else 0, dtype=i64)
            be.scatter_add(count, 0, lin, xp.ones(lin.shape, dtype=i64))
            count = xp.where(count == 0, xp.ones_like(count), count)
            if out.dtype.kind == "f":
                out = xp.astype(out / xp.astype(count, out.dtype), out.dtype)
            else:
                out = xp.astype(xp.floor_divide(out, xp.astype(count, out.dtype)), out.dtype)
        out = xp.reshape(out, shape)
        return xp.astype(out, c.F16) if half else out

    return dict(gather=gather, scatter_add=scatter_add, scatter=scatter, scatter_=scatter_,
                scatter_reduce=scatter_reduce)


_SCATTER_UFUNCS = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum",
                   "amin": "minimum"}
