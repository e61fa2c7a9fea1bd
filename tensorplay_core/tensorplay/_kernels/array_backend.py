"""``ArrayBackend``: the ``tensorplay.backends.Backend`` of any NumPy-like array module (numpy,
cupy), beside the reference kernels it binds.

A plugin subclass sets ``np`` (the module) and ``xp`` (its array-API namespace) and overrides the
handful of places where the modules differ (``as_strided``, ``data_ptr``, host transfer, random
numbers, availability). The protocol it implements, ``Storage`` and the row-major stride rule live
in ``_backend`` (the dispatch layer); this implementation sits in the op layer, next to
``_kernels.xp`` (whose ``bind`` gives ``kernels()``), so it imports the reference kernels directly
instead of through a slot filled at import time.

Public as ``tensorplay.backends.ArrayBackend``; the cpu and cuda plugins subclass it.
"""

from __future__ import annotations

from .. import _codegen, _dtype
from .._backend import _CONTIG_CACHE, Backend, RootStorage, Storage, contiguous_strides_cached
from .._tensor_base import instance_class, new_tensor, new_tensor_source, set_layout, set_native
from .elementwise import layout_for

__all__ = ["ArrayBackend"]


class _WrapStorage(RootStorage):
    """``wrap``'s ``RootStorage``, made by calling the class with no arguments: a class whose
    ``__init__`` is ``object``'s is built by ``type.__call__`` in C, ~0.3 k instructions less
    than ``object.__new__(cls)`` (a METH_VARARGS builtin that builds its argument tuples and
    checks the class), once per wrapped result (~25 a training step)."""

    __slots__ = ()
    __init__ = object.__init__


def _generated_wrap():
    """``ArrayBackend.wrap``, generated: every kernel result whose array the adapter does not
    wrap inline goes through it, so ``new_tensor``'s body is spliced in (``new_tensor_source``,
    as the adapters of ``_ops/_define.py`` do) instead of called: a call frame is ~0.2 µs here,
    ~10% of the method. The Storage is built in place (no ``__init__`` frame), the cached stride
    tuple and dtype looked up here. Made when this module is imported, after
    ``tensorplay/_tensor.py`` defined the class (``instance_class()``)."""
    lines = [
        "def wrap(self, arr, device):",
        # the common case first: a row-major array of the module's own class (a ufunc's
        # result), told by type() (specialised by the interpreter; self._ndarray is an instance
        # field, not self.np's class-attribute read); anything else takes the general steps
        "    if type(arr) is not self._ndarray or not arr.flags.c_contiguous:",
        "        np = self.np",
        "        if arr.__class__ is not np.ndarray:   # a scalar, or a subclass: a plain array",
        "            arr = np.asarray(arr)",
        "        if not arr.flags.c_contiguous:",
        "            arr = np.ascontiguousarray(arr)",
        "    shape = arr.shape",
        # the root storage reads nbytes off its array when asked (rarely: views of a base)
        "    st = __S()",
        "    st.root = arr",
        "    st.version = 0",
        "    st.backend = self",
        # subscripts, not .get() calls: a miss is rare (a new shape or dtype)
        "    try:",
        "        stride = __C[shape]",
        "    except KeyError:",
        "        stride = __strides(shape)",
        "    try:",
        "        dt = self._dtype_cache[arr.dtype]",
        "    except KeyError:",
        "        dt = self.dtype_of(arr)",
        *("    " + x for x in new_tensor_source("t", "st", "arr", "shape", "stride", "dt",
                                              "device", "self")),
        "    return t",
    ]
    ns = {"__new": object.__new__, "__T": instance_class(), "__S": _WrapStorage,
          "__C": _CONTIG_CACHE, "__strides": contiguous_strides_cached}
    wrap = _codegen.function("\n".join(lines), ns, "wrap", "<tensorplay ArrayBackend.wrap>")
    wrap.__doc__ = ("Tensor owning ``arr`` (made contiguous if it is not; numpy scalars become "
                    "0-d).")
    wrap.__qualname__ = "ArrayBackend.wrap"
    return wrap


_T = instance_class()
_PLANS: dict = {}   # (shape, operands' layouts) -> (strides, dims outermost first, axes back)


def _plan(shape, st):
    """``wrap_elementwise``'s plan for strides ``st`` (None: row-major -> False)."""
    if st is None:
        return False
    n = len(shape)
    order = sorted(range(n), key=lambda d: -st[d])      # outermost first
    inv = [0] * n
    for i, d in enumerate(order):
        inv[d] = i
    return st, tuple(order), tuple(inv)


def _int_overflow(value, nd):
    return RuntimeError(f"value cannot be converted to type {nd.name} without overflow (got "
                        f"{value!r}); pick a dtype that holds it or a value in range")


def _int_number(v, nd, lo, hi):
    """Python number ``v`` for integer dtype ``nd`` (range ``lo``..``hi``) as torch converts it
    (``_int_overflow`` when it cannot); other objects unchanged."""
    c = v.__class__
    if c is int:
        if lo <= v <= hi:
            return v
        if lo == 0 and -hi <= v < 0:       # a negative int into an unsigned dtype wraps
            return v & hi
        raise _int_overflow(v, nd)
    if c is float:
        # the float's own value against the range (127.5 into int8, -0.5 into uint8 refused;
        # NaN fails both comparisons); Python compares a float with an int bound exactly
        if not lo <= v <= hi:
            raise _int_overflow(v, nd)
        return v
    if isinstance(v, (list, tuple)):
        return [_int_number(x, nd, lo, hi) for x in v]
    return v


#: the classes of Python data ``from_host`` checks for an integer dtype (numbers, nested lists)
PY_DATA = frozenset({list, tuple, int, float})
_INT_BOUNDS: dict = {}     # integer NumPy dtype -> (lowest, highest) as Python ints


def int_host_array(np, obj, nd):
    """A NumPy array of integer dtype ``nd`` from ``obj`` (a Python number or nested
    lists/tuples of them), each number converted as torch converts one into an integer tensor:
    ``RuntimeError`` ("value cannot be converted to type int8 without overflow") for NaN, inf
    and values out of ``nd``'s range, a float judged by its own value (127.5 into int8 and -0.5
    into uint8 are refused, 127.9 into uint8 is 127), a negative int into an unsigned dtype
    wraps (-1 into uint8 is 255). ``np``: the numpy module.

    NumPy's ``array(obj, dtype=int8)`` follows the installed version: 2.x raises its own
    ``OverflowError`` for 300, 1.26 wraps it to 44 with a ``DeprecationWarning`` and wraps the
    float 65504.0 silently. Here NumPy reads the numbers at its own dtype (int64, float64, bool)
    and the range is checked on that array; ints beyond 64 bits, and floats mixed with ints
    that float64 would round, take the exact per-number path."""
    b = _INT_BOUNDS.get(nd)
    if b is None:
        info = np.iinfo(nd)
        b = _INT_BOUNDS[nd] = (int(info.min), int(info.max))
    lo, hi = b
    c = obj.__class__
    if c is int or c is float:
        return np.array(_int_number(obj, nd, lo, hi), dtype=nd)
    try:
        wide = np.array(obj)
    except (ValueError, TypeError, OverflowError):
        return np.array(obj, dtype=nd, copy=True)   # (ragged data: NumPy's error, as before)
    wd = wide.dtype
    if wd == nd:
        return wide           # int64 read as int64: every number fits (a fresh array already)
    k = wd.kind
    if k == "b" or not wide.size:
        return wide.astype(nd)
    if k in "iu":
        if wide.ndim == 1 and wide.size <= 32:
            mn, mx = int(min(obj)), int(max(obj))    # (a few ints: no NumPy reductions)
        else:
            mn, mx = int(wide.min()), int(wide.max())
        if lo <= mn and mx <= hi or lo == 0 and -hi <= mn and mx <= hi:
            return wide.astype(nd)        # (negatives into an unsigned dtype wrap, as torch)
        bad = (wide < lo) | (wide > hi)
        if lo == 0:
            bad &= ~((wide < 0) & (wide >= -hi))
        raise _int_overflow(wide[bad].flat[0].item(), nd)
    if k == "f":
        hi_f = float(hi)                  # int64's 2**63 - 1 reads 2**63: refused from there
        over = wide >= hi_f if hi_f != hi else wide > hi_f
        bad = ~np.isfinite(wide) | (wide < lo) | over
        if bad.any():
            raise _int_overflow(wide[bad].flat[0].item(), nd)
        if nd.itemsize < 8 or float(np.abs(wide).max()) < 2.0 ** 53:
            return wide.astype(nd)
    # ints beyond 64 bits, objects NumPy cannot type, large ints rounded by a float64 read
    return np.array(_int_number(obj, nd, lo, hi), dtype=nd)


def wide_for_bf16(dt) -> bool:
    """Whether NumPy dtype ``dt`` goes through float32 on its way to bfloat16 (float64 and the
    integers of 32 bits or more: float32 or narrower convert exactly once)."""
    k = dt.kind
    return k in "iu" and dt.itemsize >= 4 or k == "f" and dt.itemsize > 4


def bf16_host_array(np, obj, nd):
    """A NumPy array of bfloat16 (``nd``, ml_dtypes') from ``obj``: Python numbers or nested
    lists (read as doubles, as torch reads them) or a NumPy array, each value converted as torch
    converts to bfloat16: a double or a wide integer to float32 first (to nearest, ties to
    even), then to bf16. ml_dtypes 0.7 rounds a double to bf16 once, 0.5 through float32
    (``1 + 2**-8 + 2**-30``: 1.0078125 against torch's 1.0), and 0.5 refuses Python ints beyond
    int64. Out-of-range values become +-inf without a warning, as in torch."""
    c = obj.__class__
    if c is float or c is int:
        return np.array(_dtype.round_scalar(obj, _dtype.bfloat16), dtype=nd)   # (exact)
    dt = getattr(obj, "dtype", None)
    if dt is None:
        obj = np.array(obj, dtype=np.float64)
        dt = obj.dtype
    if wide_for_bf16(dt):
        with np.errstate(over="ignore"):
            obj = obj.astype(np.float32)
    return obj.astype(nd)       # (a fresh array)


# ArrayBackend.scatter_add: slices this long or longer go by rounds of fancy-indexed adds, up
# to this many repeats of one index (below: NumPy's add.at, fast for single elements)
_AT_ROW = 16
_AT_ROUNDS = 16


class ArrayBackend(Backend):
    """``Backend`` for a NumPy-like array module. Subclasses set ``device_type``, ``np`` and
    ``xp`` and implement ``as_strided`` (and the optional members their device needs).

    Methods take and return *native* arrays; ``wrap`` turns a kernel result into a Tensor.
    """

    device_type = "?"
    np = None     # numpy-like module
    xp = None     # array-API namespace of it

    _ndarray = None   # the array class of np (set per instance: wrap's one-read type test)

    # Names of the ufuncs whose ``.at`` (combine at repeated indices) ``np`` computes exactly for
    # every dtype; None: all of them (NumPy). scatter_reduce combines the others by a sort-based
    # segmented reduction instead (CuPy has no ``multiply.at`` or ``logical_or.at``).
    ufunc_at: frozenset | None = None

    def __init__(self):
        self._dtype_cache = {}
        self._native_cache = {}
        self._kernels = None
        self._ndarray = getattr(self.np, "ndarray", None)

    # -- dtypes -----------------------------------------------------------------------------
    def native_dtype(self, dt):
        r = self._native_cache.get(dt)
        if r is None:
            try:
                r = self.np.dtype(dt.name)
            except TypeError:
                raise TypeError(f"{self.device_type}: dtype {dt} is not supported by this "
                                f"device's backend ({self.np.__name__} has no {dt.name}); use "
                                f"float16 or float32 on '{self.device_type}'") from None
            self._native_cache[dt] = r
        return r

    def dtype_of(self, arr):
        nd = arr.dtype
        r = self._dtype_cache.get(nd)
        if r is None:
            r = _dtype.from_name(nd.name, nd)
            self._dtype_cache[nd] = r
        return r

    # -- tensors ----------------------------------------------------------------------------
    wrap = _generated_wrap()   # see its docstring

    def wrap_elementwise(self, arr, device, args, preserve=False):
        """Tensor owning the result ``arr`` of an elementwise op on arguments ``args`` (its
        tensors and numbers, in order), laid out by torch's rule (``elementwise.layout_for``:
        TensorIterator's): row-major through ``wrap``; another layout allocated in its dims'
        stride order (``arr`` viewed in that order and made contiguous there, no copy when the
        array module already chose that order) and viewed back, the storage a flat array. The
        generated adapters call it only when an operand is not row-major; NumPy and CuPy alike
        (the array's own ``transpose``/``reshape``, the module's ``ascontiguousarray``).
        ``preserve``: a dtype conversion's result, laid out by ``preserve_format``."""
        shape = arr.shape
        key = (shape, preserve, *[(a.raw_shape, a.stride_tuple) if a.__class__ is _T else
                                  a.__class__ is not None.__class__ for a in args])
        plan = _PLANS.get(key)
        if plan is None:
            plan = _plan(shape, layout_for(shape, args, preserve))
            if len(_PLANS) > 4096:
                _PLANS.clear()
            _PLANS[key] = plan
        if plan is False:
            return self.wrap(arr, device)
        st, order, inv = plan
        return self.wrap_permuted(self.np.ascontiguousarray(arr.transpose(order)), device,
                                  shape, st, inv)

    def wrap_permuted(self, base, device, shape, stride, inv):
        """A fresh Tensor (no view) of ``shape``/``stride`` owning ``base``, a row-major array
        holding its elements in memory order (its dims ordered by decreasing stride), whose
        ``transpose(inv)`` is the tensor's array: how results laid out other than row-major
        (``wrap_elementwise``, ``to``'s preserve_format copy) are made."""
        t = self.wrap(base.reshape(-1), device)
        set_native(t, base.transpose(inv))
        set_layout(t, shape, stride)     # (a fresh tensor of its own: nothing sees it)
        return t

    def wrap_shared(self, arr, device):
        """Tensor sharing ``arr``'s memory, keeping its strides (``from_numpy``/``from_dlpack``).

        The storage root becomes a 1-D array over the span ``arr`` covers, so views and
        in-place writes reach the producer's memory. Arrays with negative or non-element-aligned
        strides cannot be described that way and are copied (``wrap``).
        """
        # contiguous (the common case, e.g. every cpu tensor crossing tensorplay-torch): straight
        # to ``wrap``, which binds the Tensor class once (an import statement here cost ~1 µs)
        if arr.flags.c_contiguous or arr.size == 0:
            return self.wrap(arr, device)
        item = arr.dtype.itemsize
        if any(st < 0 or st % item for st in arr.strides):
            return self.wrap(arr, device)
        stride = tuple(st // item for st in arr.strides)
        span = 1 + sum((s - 1) * st for s, st in zip(arr.shape, stride))
        root = self.np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,))
        return new_tensor(Storage(root, span * item, self), arr, tuple(arr.shape), stride, 0,
                          self.dtype_of(arr), device, self)

    # as_strided: each subclass's own (NumPy and CuPy build strided views differently); left
    # to the protocol's stub, so the load-time check names a subclass that forgot it

    def empty(self, shape, dtype, device):
        r = self._native_cache.get(dtype)
        return self.np.empty(shape, dtype=r if r is not None else self.native_dtype(dtype))

    def full(self, shape, value, dtype, device):
        r = self._native_cache.get(dtype)
        return self.np.full(shape, value, dtype=r if r is not None else self.native_dtype(dtype))

    # these two are exactly np.empty/np.full of the cached native dtype: the built-in kernels
    # (_kernels/xp.py) call those directly for a backend that keeps them (a subclass overriding
    # either loses the mark and is called as usual)
    empty._tp_np_alloc = full._tp_np_alloc = True
    # and they return a fresh row-major np.ndarray: the generated adapters of tp::empty/tp::full
    # build the result tensor inline (_ops/_define._alloc_build_lines)
    empty._tp_fresh_alloc = full._tp_fresh_alloc = True

    def arange(self, start, end, step, dtype, device):
        return self.np.arange(start, end, step, dtype=self.native_dtype(dtype))

    def from_host(self, obj, dtype, device):
        """Native array from a nested list, scalar or host (numpy) array, of ``dtype`` if given."""
        nd = self.native_dtype(dtype) if dtype is not None else None
        if nd is not None and obj.__class__ in PY_DATA and nd.kind in "iu":
            # Python numbers into an integer dtype: torch's checked conversion, on the host
            # (the numbers are there; a device module's own conversion goes through NumPy's,
            # which raises or wraps by its version)
            import numpy
            obj = int_host_array(numpy, obj, nd)
        elif nd is not None and nd.kind == "V" and getattr(obj, "dtype", None) != nd:
            import numpy      # bfloat16 through float32, as torch (host data, on the host)
            obj = bf16_host_array(numpy, obj, nd)
        return self.np.array(obj, dtype=nd, copy=True)

    def to_host(self, arr):
        """A numpy array with ``arr``'s values (the array itself on the cpu)."""
        return arr

    def from_dlpack(self, obj):
        return self.np.from_dlpack(obj)

    # -- the few writes the array API lacks --------------------------------------------------
    def assign(self, dst, src) -> None:
        """``dst[...] = src`` (broadcasting; ``dst`` is a view into storage)."""
        dst[...] = src

    def scatter_add(self, out, dim, idx, src) -> None:
        """``out.index_add_(dim, idx, src)``: add slices of ``src`` at ``idx`` along ``dim``, in
        ``idx``'s order (a repeated index adds its slices one after another, as torch's cpu
        ``index_add_`` and NumPy's ``add.at``: the same rounding).

        Slices of ``_AT_ROW`` elements or more (``x[i]``'s gradient, an embedding's) go by
        rounds of fancy-indexed adds instead of ``add.at``, which walks them element by element
        (512 rows of 256 float32: 1.6 ms against ~0.2 ms): the k-th occurrence of every index
        is added in round k, so each round's indices are distinct and every slice still meets
        its predecessors in ``idx``'s order. An index repeated ``_AT_ROUNDS`` times or more falls
        back to ``add.at`` (one round per repeat would cost more)."""
        np = self.np
        flat = idx.reshape(-1)
        src = src.reshape(tuple(out.shape[:dim]) + (flat.shape[0],) + tuple(out.shape[dim + 1:]))
        # (np.moveaxis costs ~4 µs a call here: not for dim 0)
        o, s = (out, src) if not dim else (np.moveaxis(out, dim, 0), np.moveaxis(src, dim, 0))
        m = flat.shape[0]
        if m < 2 or o.size < _AT_ROW * o.shape[0]:
            np.add.at(o, flat, s)
            return
        order = np.argsort(flat, kind="stable")
        sf = flat[order]
        first = np.empty(m, dtype=bool)         # where a run of one index starts, sorted
        first[0] = True
        np.not_equal(sf[1:], sf[:-1], out=first[1:])
        if first.all():                          # distinct: one round
            o[flat] += s
            return
        at = np.arange(m)
        start = np.where(first, at, 0)
        np.maximum.accumulate(start, out=start)
        rank = at - start                        # (sorted) occurrence number of each index
        top = int(rank.max())
        if top >= _AT_ROUNDS:
            np.add.at(o, flat, s)
            return
        for k in range(top + 1):
            sel = order[rank == k]
            o[flat[sel]] += s[sel]

    def index_put(self, x, dim, idx, values) -> None:
        x[(slice(None),) * dim + (idx,)] = values

    def masked_select(self, x, mask):
        return x[self.np.broadcast_to(mask, x.shape)]

    def masked_scatter(self, x, mask, src) -> None:
        m = self.np.broadcast_to(mask, x.shape)
        n = int(m.sum())
        x[m] = src.reshape(-1)[:n]

    def kernels(self) -> dict:
        """Built-in op name -> array kernel. Default: the reference kernels bound to ``xp``."""
        if self._kernels is None:
            from . import xp as reference   # large: imported on the first backend's first use
            self._kernels = reference.bind(self.xp, self)
        return self._kernels
