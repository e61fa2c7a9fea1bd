"""Tensor factories with torch's signatures: ``tensor``, ``zeros``, ``randn``, ``*_like``, ...

Each builds its tensor through a ``tp::`` factory op dispatched on ``device`` (default ``cpu``),
so inside ``FakeTensorMode`` they produce fake tensors and during ``tensorplay.compile`` capture
they become graph nodes. Errors: a device whose plugin is not installed raises
``DeviceUnavailableError`` naming the distribution to install.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Sequence

from . import _device, _devices, _dispatch, _dtype, _tensor_base
from ._backend import _CONTIG_CACHE as _CONTIG, contiguous_strides, get_backend
from ._kernels import elementwise as _ew
from ._device import Device
from ._ops import ops as O
from ._ops._define import factory_out as _factory_out, write_out as _write_out
from ._ops._shapes import check_fill, check_nonnegative, int_tuple_error, scalar_value, \
    size_ints, where_int_in_range
from .fake import make_fake as _make_fake

if TYPE_CHECKING:
    from ._tensor import Tensor, _DeviceLike, _DTypeLike, _Number, _TensorOrScalar

__all__ = ["tensor", "as_tensor", "from_numpy", "from_dlpack", "empty", "zeros", "ones", "full",
           "arange", "rand", "randn", "empty_like", "zeros_like", "ones_like", "full_like",
           "rand_like", "randn_like", "manual_seed", "cat", "concat", "concatenate", "stack", "where",
           "eye", "linspace", "randint", "randint_like"]

_CPU = Device("cpu")
from ._device import canonical  # noqa: E402 - a tensor's device: cpu:0 is cpu, cuda is cuda:0
_DT = _dtype.DType
_index = operator.index
_default = _dtype._default   # [the default float dtype]: read per call, set_default_dtype writes it
_INT64, _BOOL = _dtype.int64, _dtype.bool
_FLOAT_KIND = _dtype.float32      # (where's getattr default for a non-tensor: no check)

# dtype -> (lo, hi): a Python int or float inside passes ``check_fill`` unchanged for that dtype
# (floats: float16's range, the narrowest; float64 and bool: a C long, beyond which ``check_fill``
# converts a Python int; integers: the dtype's own range, a float there being truncated by the
# kernel as ``check_fill`` lets it). The factories skip ``check_fill``'s frame inside it; any
# other value (nan, inf, out of the window) and any dtype not listed goes through it.
_F16 = (-65504.0, 65504.0)
_CLONG = (-2**63, 2**63 - 1)
_FILL_WINDOW = {
    _dtype.float16: _F16, _dtype.bfloat16: _F16, _dtype.float32: _F16, _dtype.float64: _CLONG,
    _dtype.bool: _CLONG, _dtype.int8: (-128, 127), _dtype.uint8: (0, 255),
    _dtype.int16: (-32768, 32767), _dtype.int32: (-2**31, 2**31 - 1), _dtype.int64: _CLONG,
    _dtype.uint32: (0, 2**32 - 1)}


def _tensor_fill(api, value):
    """A tensor as ``full``/``full_like``/``new_full``'s fill value: only a 0-dim one that does
    not require grad reads as a number, as torch's argument parser has it; any other tensor is
    ``TypeError`` ("argument 'fill_value' (position 2) must be Number, not Tensor")."""
    if isinstance(value, _tensor_base.TensorBase) and (value.raw_shape or value.requires_grad):
        raise TypeError(f"{api}(): argument 'fill_value' (position 2) must be Number, not Tensor"
                        f" (a tensor fill value must be 0-dim and not require grad: pass "
                        f"t.item(), or t.detach() for a 0-dim one)")


def fill_number(api, value, dtype):
    """The fill value of ``full``/``full_like``/``new_full`` (``api``) for ``dtype``, checked
    as torch's argument parser and ``full`` check it: a number by ``check_fill``
    (``RuntimeError`` "value cannot be converted to type int8 without overflow"); a 0-dim
    tensor that does not require grad read as its number (``item()``, as torch's parser does)
    and checked the same way, so ``full((2,), tensor(300), dtype=int8)`` raises as
    ``full((2,), 300, dtype=int8)`` does; a fake or captured one, whose value is not known
    here, unchanged (its kernel casts it). ``TypeError`` for any other tensor
    (``_tensor_fill``) or a non-number."""
    if isinstance(value, _tensor_base.TensorBase):
        _tensor_fill(api, value)
        if value.native is None or value.capture_info is not None:
            return value
        value = value.item()
    return check_fill(api, value, dtype)


def _value_dtype(value, number):
    """``full``'s dtype for fill value ``value`` that is no Python ``bool``/``int``/``float``
    (``number``: ``scalar_value``'s reading of it), as torch infers it: a 0-dim tensor by its
    dtype's kind (bool -> bool, integer -> int64, floating -> the default float dtype); a
    number by the class of its Python value -- int -> int64, float -> the default float, and a
    NumPy ``bool_`` (no Python bool: torch reads it as a number) the default float too."""
    if isinstance(value, _tensor_base.TensorBase):
        k = value.raw_dtype._kind
        return _BOOL if k == "b" else _default[0] if k == "f" else _INT64
    return _INT64 if number.__class__ is int else _default[0]

# The factories below run on every step of a program (outputs of ops, buffers), so each takes a
# fast path when its arguments are already canonical: ``dtype`` None or a ``DType``, ``device``
# None or an indexed ``Device`` (one class test each); anything else goes through ``as_dtype`` /
# ``_dev`` as before, so errors and spellings ("cuda", numpy dtypes, Python types) are unchanged.
#
# tp::empty / tp::full are dispatched here, inline: the op's generated call is exactly "key =
# the thread's mode (fake, capture) or the device's type; run op.table[key], or op.entry(key)
# on a miss" (_dispatch.make_call, for an op whose only dispatch input is its Device), so the
# factories read the mode and the table themselves -- the same plain lookup, without the op
# object's call, its frame and the keyword arguments passed on once more (~0.5 µs of a 2 µs
# factory). A miss (a device's first use, a fallback, no kernel) calls the op: its own path and
# errors. The tables are the op records' own dicts, updated in place (``_registry._rebuild``).
_mst = _dispatch._state
_EMPTY, _FULL = O.empty, O.full
_EMPTY_TABLE, _FULL_TABLE = _EMPTY.table, _FULL.table
_SPELLED = _device._CACHE    # (spelling, None) -> the Device that ``Device(spelling)`` returns
# spelling -> that same Device, filled by _dev: a string seen before is read here with no key
# tuple, then its ``_canon`` (which ``_device.forget_canonical`` resets) per call
_NAMED: dict = {}


def _dev(device):
    """The canonical Device of a factory's ``device=`` (None -> cpu)."""
    if device is None:
        return _CPU
    c = device.__class__
    if c is Device:
        d = device
    elif c is str:
        d = _NAMED.get(device)
        if d is not None:       # a spelling seen before: its Device, no key tuple built
            c = d._canon
            return c if c is not None else canonical(d)
        # device="cuda": the Device that spelling names, from Device's own cache (the one
        # lookup Device(str) makes first), without its constructor's frame
        d = _SPELLED.get((device, None))
        if d is None:
            return canonical(device)
        if len(_NAMED) > 256:        # (a program's spellings are few: a bound, not an LRU)
            _NAMED.clear()
        _NAMED[device] = d
    else:
        return canonical(device)
    c = d._canon
    if c is not None:
        return c
    return canonical(d)


def _dt(dtype):
    """``dtype=`` of a float factory: the default float dtype when None."""
    if dtype is None:
        return _default[0]
    return dtype if dtype.__class__ is _DT else _dtype.as_dtype(dtype)


def _size(size, api="empty"):
    """``*size`` of factory ``api`` (ints, or one list/tuple of ints) as a list of ints;
    ``TypeError`` naming ``api`` and ``size`` for bools, floats, None, strings... One argument
    that is neither an int (``__index__``: a NumPy integer, a 0-dim int tensor) nor a sequence
    is refused in torch's words ("argument 'size' (position 1) must be tuple of ints, not
    Tensor")."""
    if len(size) == 1:
        s = size[0]
        if s.__class__ is int:
            return [s]
        if isinstance(s, (list, tuple)):
            size = s
        else:
            return [_one_int(s, api)]
    return _ints(size, api)


def _one_int(s, api):
    """The one ``*size`` argument ``s`` that is no int or sequence, as an int (its
    ``__index__``), or torch's ``TypeError`` naming ``size``."""
    if s.__class__ is not bool and s.__class__.__name__ != "bool_":
        try:
            return _index(s)
        except (TypeError, ValueError, RuntimeError):
            pass
    raise int_tuple_error(api, "size", s, 1)


def _seq(value, api, name="size", position=None):
    """``value`` of an int-list argument that takes no bare int (``full``'s ``size``, the
    ``size=`` keyword): returned when a list or tuple, else torch's ``TypeError``."""
    if isinstance(value, (list, tuple)):
        return value
    raise int_tuple_error(api, name, value, position)


def _ints(seq, api):
    """``seq`` as a list when every element is a plain ``int`` (one class test each), else
    ``size_ints``' conversion or its ``TypeError``."""
    r = list(seq)
    for s in r:
        if s.__class__ is not int:
            return size_ints(api, r)
    return r


def _sizes(size, kw, api):
    """``*size`` or the ``size=`` keyword (torch takes either, not both; the keyword takes a
    sequence only, as torch's: ``zeros(size=3)`` is a ``TypeError``)."""
    if kw is None:
        return size
    if size:
        raise TypeError(f"{api}(): got the size both positionally and as 'size='; pass one")
    return (_seq(kw, api),)


def _bad_grad(api, requires_grad):
    raise TypeError(f"{api}(): argument 'requires_grad' must be bool, not "
                    f"{type(requires_grad).__name__}")


def _finish(t, requires_grad, api="factory"):
    if requires_grad is not False:
        if requires_grad is not True:
            _bad_grad(api, requires_grad)
        t.requires_grad_(True)
    return t


# -- layouts: torch's memory_format rule, in one place --------------------------------------------
# ``*_like`` and ``clone`` take ``memory_format=preserve_format`` by default (as torch): a dense,
# non-overlapping input's strides are copied exactly; another input gets dense strides whose
# order follows its strides (torch's ``infer_dense_strides``); ``contiguous_format`` is row-major;
# ``channels_last`` / ``channels_last_3d`` are NHWC / NDHWC of a 4-D / 5-D shape. A strided result
# is allocated flat (its ``numel`` elements, every device, fake and capture included) and viewed
# with the strides (``_restrided``); a row-major one takes the usual path, untouched.
_MF = _dtype.memory_format
_PRESERVE, _CONTIGUOUS = _dtype.preserve_format, _dtype.contiguous_format
_CL, _CL3D = _dtype.channels_last, _dtype.channels_last_3d


_dense = _ew.is_dense                          # torch's is_non_overlapping_and_dense
_infer_dense_strides = _ew.infer_dense_strides  # torch's infer_dense_strides


def _channels_last_strides(shape, fmt, api):
    n = 4 if fmt is _CL else 5
    if len(shape) != n:
        raise RuntimeError(f"required rank {n} tensor to use {fmt._name} format")
    st = [0] * n
    st[1] = 1
    acc = shape[1]                     # (torch's sizes as they are: a 0 size gives 0 strides)
    for d in range(n - 1, 1, -1):      # W, H (, D): innermost after the channels
        st[d] = acc
        acc *= shape[d]
    st[0] = acc
    return tuple(st)


def layout_strides(t, memory_format, api):
    """The strides torch gives a new tensor shaped and laid out like ``t`` for ``memory_format``
    (None means ``preserve_format``), or None when they are row-major. ``TypeError`` for a
    ``memory_format`` that is no ``tensorplay.memory_format``; ``RuntimeError`` (as torch) for
    ``channels_last`` on a tensor that is not 4-D, ``channels_last_3d`` on one not 5-D."""
    fmt = memory_format
    if fmt is None or fmt is _PRESERVE:
        shape, stride = t.shape, t.stride()
        key = (shape, stride)
        try:
            if stride is _CONTIG.get(shape):
                return None
            st = _PRESERVED.get(key, key)
        except TypeError:     # symbolic sizes (torch's, through tensorplay-torch): no cache
            key = st = None
        if st is not key:
            return st
        stride = tuple(stride)
        st = stride if _dense(shape, stride) else _infer_dense_strides(shape, stride)
        st = None if st == contiguous_strides(shape) else st
        if key is not None:
            if len(_PRESERVED) > 4096:     # (a program's layouts are few: a bound, not an LRU)
                _PRESERVED.clear()
            _PRESERVED[key] = st
        return st
    elif fmt is _CONTIGUOUS:
        return None
    elif fmt.__class__ is _MF:
        shape = t.shape
        st = _channels_last_strides(shape, fmt, api)
    else:
        _dtype.as_memory_format(fmt, api)
    return None if st == contiguous_strides(shape) else st


_PRESERVED: dict = {}     # (shape, stride) -> preserve_format's strides (None: row-major)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _restrided(r, shape, stride):
    """Fresh flat tensor ``r`` (its own storage of ``numel`` elements) as ``shape`` with
    ``stride``: real and fake tensors are relabelled in place (no view: ``_base`` stays None, as
    torch's ``empty_strided``); a capture tensor becomes an ``as_strided`` node of the graph."""
    shape, stride = tuple(shape), tuple(stride)
    if r.capture_info is not None:
        return O.as_strided(r, shape, stride, 0)
    data = r.native
    if data is not None:
        _tensor_base.set_native(r, _strided_native(data, shape, stride, r.device))
    _tensor_base.set_layout(r, shape, stride)    # (a fresh tensor of its own: nothing sees it)
    return r


def _strided_native(flat, shape, stride, device):
    """Flat contiguous native array ``flat`` seen with ``shape`` and dense ``stride``: reshaped in
    the dims' stride order and transposed back (NumPy and CuPy both do it, ~10x cheaper than
    building a strided array); the backend's ``as_strided`` when that order does not give
    ``stride`` on every dim of size > 1."""
    key = (shape, stride)
    plan = _PLANS.get(key)
    if plan is None:
        n = len(shape)
        perm = sorted(range(n), key=lambda d: -stride[d])
        pshape = tuple(shape[d] for d in perm)
        want = contiguous_strides(pshape)
        plan = False
        if all(shape[d] < 2 or stride[d] == want[i] for i, d in enumerate(perm)):
            inv = [0] * n
            for i, d in enumerate(perm):
                inv[d] = i
            plan = (pshape, tuple(inv))
        if len(_PLANS) > 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    if plan:
        return flat.reshape(plan[0]).transpose(plan[1])
    return get_backend(device.type).as_strided(flat, shape, stride, 0)


_PLANS: dict = {}    # (shape, strides) -> (shape in stride order, axes back) or False


def clone_as(t, memory_format=None):
    """``t.clone(memory_format=)`` off the row-major fast path: a tensor laid out by
    ``layout_strides`` holding ``t``'s values (``copy_`` into it: differentiable, captured)."""
    if memory_format is not None and memory_format.__class__ is not _MF:
        _dtype.as_memory_format(memory_format, "clone")
    if layout_strides(t, memory_format, "clone") is None:
        return O.clone(t)
    r = _like_self(t, "empty", t.raw_shape, None, None, None, False, "clone", memory_format)
    return r.copy_(t)


def contiguous_as(t, memory_format):
    """``t.contiguous(memory_format=)`` for a format other than row-major: ``t`` itself when it
    is already laid out so, else a copy (as torch). ``RuntimeError`` for ``preserve_format``
    (torch: the contiguous operator does not take it)."""
    fmt = _dtype.as_memory_format(memory_format, "contiguous")
    if is_contiguous_as(t, fmt):
        return t
    if fmt is _PRESERVE:       # (torch refuses it only when a copy is needed)
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return clone_as(t, fmt)


def is_contiguous_as(t, memory_format):
    """``t.is_contiguous(memory_format=)``, torch's rule: ``channels_last`` (``_3d``) asks for NHWC
    (NDHWC) strides on a 4-D (5-D) tensor, size-1 dims ignored (False for another rank; no
    exception for empty tensors); ``contiguous_format`` / ``preserve_format``: row-major."""
    fmt = _dtype.as_memory_format(memory_format, "is_contiguous")
    if fmt is None or fmt is _PRESERVE or fmt is _CONTIGUOUS:
        return t.is_contiguous()
    shape, stride = t.shape, t.stride()
    order = (1, 3, 2, 0) if fmt is _CL else (1, 4, 3, 2, 0)
    if len(shape) != len(order):
        return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True


def empty(*sizes: int | Sequence[int], size: Sequence[int] | None = None,
          dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
          requires_grad: bool = False, out: Any = None, memory_format: Any = None) -> Tensor:
    """Uninitialised tensor of ``size`` (ints). ``dtype`` defaults to the default float dtype.
    ``memory_format``: None / ``contiguous_format`` (row-major), ``channels_last`` (4-D sizes
    only) or ``channels_last_3d`` (5-D only): ``RuntimeError`` otherwise, as torch
    (``preserve_format`` included).
    ``size``: ints, one list/tuple of ints, or the ``size=`` keyword (as torch). ``TypeError``
    naming the factory for a bool/float/None... size or a non-bool ``requires_grad``;
    ``RuntimeError`` (as torch; also a ``ValueError``) for a negative size, on every device,
    meta and fake included."""
    if out is not None:
        return _factory_out("empty", out, dtype, empty, sizes, {"size": size,
                            "requires_grad": requires_grad, "memory_format": memory_format})
    if memory_format is not None and memory_format is not _CONTIGUOUS:
        return _empty_format(sizes, size, dtype, device, requires_grad, memory_format)
    # _size/_dt/_dev inlined for the common spellings (one int; dtype/device None or canonical)
    if size is not None:
        sizes = _sizes(sizes, size, "empty")
    size = sizes[0] if len(sizes) == 1 else None
    if size.__class__ is int:
        size = [size]
    elif size.__class__ is tuple:
        size = list(size)
        for s in size:     # _ints inlined: one class test per dimension
            if s.__class__ is not int:
                size = size_ints("empty", size)
                break
    else:
        size = _size(sizes, "empty")
    if dtype is None:
        dtype = _default[0]
    elif dtype.__class__ is not _DT:
        dtype = _dtype.as_dtype(dtype)
    device = _CPU if device is None else _dev(device)
    f = _EMPTY_TABLE.get(_mst.mode or device.type)     # the op's dispatch (see _EMPTY_TABLE)
    t = f(size, dtype=dtype, device=device) if f is not None else \
        _EMPTY(size, dtype=dtype, device=device)
    if requires_grad is not False:
        if requires_grad is not True:
            _bad_grad("empty", requires_grad)
        t.requires_grad_(True)
    return t


def _empty_format(sizes, size, dtype, device, requires_grad, memory_format):
    """``empty(..., memory_format=channels_last / channels_last_3d)``."""
    fmt = _dtype.as_memory_format(memory_format, "empty")
    if fmt is _PRESERVE:
        raise RuntimeError("unsupported memory format Preserve")
    shape = _size(_sizes(sizes, size, "empty"), "empty")
    st = _channels_last_strides(shape, fmt, "empty")
    if st == contiguous_strides(shape):    # (sizes whose NHWC strides are row-major ones)
        return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)
    t = _restrided(empty(_numel(shape), dtype=dtype, device=device), shape, st)
    return _finish(t, requires_grad, "empty")


def full(size: Sequence[int], fill_value: _Number, *, dtype: _DTypeLike | None = None,
         device: _DeviceLike | None = None, requires_grad: bool = False, out: Any = None) -> Tensor:
    """Tensor of ``size`` filled with ``fill_value``; dtype inferred from the value as torch does
    (bool -> bool, int -> int64, float -> the default float; NumPy integer scalars -> int64, its
    other scalars -> the default float, ``bool_`` included: it is no Python bool; a 0-dim tensor
    by its dtype's kind: bool, int64 or the default float). ``TypeError`` when ``fill_value`` is
    not a number (a tensor other than a 0-dim one without grad included, as torch's argument
    parser), ``RuntimeError`` when ``dtype`` cannot hold it (nan/inf or out of range into an
    integer dtype, beyond float16's range...)."""
    if out is not None:
        return _factory_out("full", out, dtype, full, (size, fill_value),
                            {"requires_grad": requires_grad})
    c = fill_value.__class__
    if c is float:
        if dtype is None:
            dtype = _default[0]
    elif c is int:
        if dtype is None:
            dtype = _INT64
    elif c is bool:
        if dtype is None:
            dtype = _BOOL
    else:
        _tensor_fill("full", fill_value)
        v = scalar_value("full", fill_value)
        if dtype is None:
            dtype = _value_dtype(fill_value, v)
        fill_value = v
        c = v.__class__
    if dtype.__class__ is not _DT:
        dtype = _dtype.as_dtype(dtype)
    # the range check (bools fit every dtype), skipped for a value inside the window every
    # value of the dtype's kind passes unchanged (_FILL_WINDOW); a 0-dim tensor is read as its
    # number and checked as one (fill_number)
    if c is float or c is int:
        w = _FILL_WINDOW.get(dtype)
        if w is None or not w[0] <= fill_value <= w[1]:
            fill_value = check_fill("full", fill_value, dtype)
    elif c is not bool:
        fill_value = fill_number("full", fill_value, dtype)
    if size.__class__ is tuple:
        size = list(size)
        for s in size:     # _size's work inlined for a tuple: one class test per dimension
            if s.__class__ is not int:
                size = size_ints("full", size)
                break
    else:                  # a list; a bare int is refused, as torch's full(3, v)
        size = _ints(_seq(size, "full", "size", 1), "full")
    device = _CPU if device is None else _dev(device)
    f = _FULL_TABLE.get(_mst.mode or device.type)      # the op's dispatch (see _EMPTY_TABLE)
    t = f(size, fill_value, dtype=dtype, device=device) if f is not None else \
        _FULL(size, fill_value, dtype=dtype, device=device)
    if requires_grad is not False:
        if requires_grad is not True:
            _bad_grad("full", requires_grad)
        t.requires_grad_(True)
    return t


def _filled(api, value, sizes, size, dtype, device, requires_grad):
    """``zeros`` / ``ones``: a tensor of ``sizes`` filled with ``value`` (the fast path: a size
    that is one int or one tuple of ints, a dtype object, no grad costs one class test each)."""
    if size is not None:
        sizes = _sizes(sizes, size, api)
    size = sizes[0] if len(sizes) == 1 else None
    if size.__class__ is int:
        size = [size]
    elif size.__class__ is tuple:
        size = list(size)
        for s in size:     # _ints inlined: one class test per dimension
            if s.__class__ is not int:
                size = size_ints(api, size)
                break
    else:
        size = _size(sizes, api)
    if dtype is None:
        dtype = _default[0]
    elif dtype.__class__ is not _DT:
        dtype = _dtype.as_dtype(dtype)
    device = _CPU if device is None else _dev(device)
    f = _FULL_TABLE.get(_mst.mode or device.type)      # the op's dispatch (see _EMPTY_TABLE)
    t = f(size, value, dtype=dtype, device=device) if f is not None else \
        _FULL(size, value, dtype=dtype, device=device)
    if requires_grad is not False:
        if requires_grad is not True:
            _bad_grad(api, requires_grad)
        t.requires_grad_(True)
    return t


def zeros(*sizes: int | Sequence[int], size: Sequence[int] | None = None,
          dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
          requires_grad: bool = False, out: Any = None) -> Tensor:
    """Tensor of zeros of ``size`` (default float dtype unless ``dtype``).
    ``size``: ints, one list/tuple of ints, or the ``size=`` keyword (as torch). ``TypeError``
    naming the factory for a bool/float/None... size or a non-bool ``requires_grad``;
    ``RuntimeError`` (as torch; also a ``ValueError``) for a negative size, on every device,
    meta and fake included."""
    if out is not None:
        return _factory_out("zeros", out, dtype, zeros, sizes, {"size": size,
                            "requires_grad": requires_grad})
    return _filled("zeros", 0, sizes, size, dtype, device, requires_grad)


def ones(*sizes: int | Sequence[int], size: Sequence[int] | None = None,
         dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
         requires_grad: bool = False, out: Any = None) -> Tensor:
    """Tensor of ones of ``size`` (default float dtype unless ``dtype``).
    ``size``: ints, one list/tuple of ints, or the ``size=`` keyword (as torch). ``TypeError``
    naming the factory for a bool/float/None... size or a non-bool ``requires_grad``;
    ``RuntimeError`` (as torch; also a ``ValueError``) for a negative size, on every device,
    meta and fake included."""
    if out is not None:
        return _factory_out("ones", out, dtype, ones, sizes, {"size": size,
                            "requires_grad": requires_grad})
    return _filled("ones", 1, sizes, size, dtype, device, requires_grad)


def arange(start: _Number, end: _Number | None = None, step: _Number = 1, *,
           dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
           requires_grad: bool = False, out: Any = None) -> Tensor:
    """``[start, end)`` with ``step``; int64 for int arguments, default float otherwise. With an
    an integer ``dtype`` and float arguments the values are ``int(start) + i * int(step)``, as
    torch (int64: also ``end`` truncated before the size is counted).
    ``RuntimeError`` (as torch) for a zero step, a step whose sign does not lead from ``start``
    to ``end``, or a non-finite bound, on every device, meta and fake included."""
    if out is not None:
        return _factory_out("arange", out, dtype, arange, (start, end, step),
                            {"requires_grad": requires_grad})
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = _dtype.int64 if all(isinstance(v, int) for v in (start, end, step)) else \
            _dtype.get_default_dtype()
    dtype = _dtype.as_dtype(dtype)
    if not dtype.is_floating_point and dtype is not _dtype.bool and any(
            isinstance(v, float) and math.isfinite(v) for v in (start, end, step)):
        if dtype is _dtype.int64:
            # torch truncates start, end and step to int64 first: arange(0, 4.5, 1,
            # dtype=int64) is [0, 1, 2, 3], a step of 0.3 is a zero step
            start, end, step = (int(v) if isinstance(v, float) and math.isfinite(v) else v
                                for v in (start, end, step))
        else:
            # the narrower integer dtypes: the size from the float bounds, the values
            # int(start) + i * int(step) (wrapping): arange(5, 0, -1.5, dtype=int32) is
            # [5, 4, 3, 2] in torch
            n = O.arange(start, end, step, dtype=_dtype.float64, device=_dev(device)).shape[0]
            i = O.arange(0, n, 1, dtype=_dtype.int64, device=_dev(device))
            r = O.to_dtype(O.add(O.mul(i, int(step)), int(start)), dtype)
            return _finish(r, requires_grad, "arange")
    return _finish(O.arange(start, end, step, dtype=dtype, device=_dev(device)),
                   requires_grad, "arange")


def eye(n: int, m: int | None = None, *, dtype: _DTypeLike | None = None,
        device: _DeviceLike | None = None, requires_grad: bool = False, out: Any = None) -> Tensor:
    """2-D tensor with ones on the diagonal: ``n`` rows, ``m`` columns (``n`` when None);
    default float dtype unless ``dtype`` (same as ``torch.eye``)."""
    if out is not None:
        return _factory_out("eye", out, dtype, eye, (n, m), {"requires_grad": requires_grad})
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    return _finish(O.eye(n, m, dtype=_dtype.as_dtype(dtype) if dtype is not None else
                         _dtype.get_default_dtype(), device=_dev(device)), requires_grad, "eye")


def linspace(start: _Number, end: _Number, steps: int, *, dtype: _DTypeLike | None = None,
             device: _DeviceLike | None = None, requires_grad: bool = False, out: Any = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (default float dtype
    unless ``dtype``), computed as torch does (both ends exact). ``RuntimeError`` for negative
    ``steps``, ``NotImplementedError`` for ``dtype=bool`` (as torch)."""
    if out is not None:
        return _factory_out("linspace", out, dtype, linspace, (start, end, steps),
                            {"requires_grad": requires_grad})
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if dt is _dtype.bool:    # torch has no bool linspace kernel
        raise NotImplementedError("\"linspace\" not implemented for 'Bool'")
    return _finish(O.linspace(start, end, operator.index(steps), dtype=dt, device=_dev(device)),
                   requires_grad, "linspace")


def randint(*args: int | Sequence[int], size: Sequence[int] | None = None, low: int | None = None,
            high: int | None = None, dtype: _DTypeLike | None = None,
            device: _DeviceLike | None = None, requires_grad: bool = False, out: Any = None) -> Tensor:
    """Uniform random integers in ``[low, high)`` of shape ``size``: ``randint(high, size)`` or
    ``randint(low, high, size)`` (keywords work too), int64 unless ``dtype``, from the device's
    generator (``manual_seed``), as ``torch.randint``. ``RuntimeError`` unless ``low < high``,
    and for ``dtype=bool`` unless ``0 <= low < high <= 2`` (torch's bounds)."""
    if out is not None:
        return _factory_out("randint", out, dtype, randint, args, {"size": size, "low": low,
                            "high": high, "requires_grad": requires_grad})
    args = list(args)
    if size is None and args and isinstance(args[-1], (list, tuple)):
        size = args.pop()
    elif size is None and len(args) in (2, 3):
        # randint(10, 3): torch reads the last as the size, which takes no bare int
        raise int_tuple_error("randint", "size", args[-1], len(args))
    elif size is not None:
        _seq(size, "randint")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        raise TypeError(f"randint() takes (high, size) or (low, high, size), got {len(args) + 1}"
                        f" positional arguments")
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: 'high' and 'size' "
                        "(randint(high, size) or randint(low, high, size))")
    low, high = operator.index(low or 0), operator.index(high)
    if not low < high:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    if dtype is not None and _dtype.as_dtype(dtype) is _dtype.bool and (low < 0 or high > 2):
        # torch's bounds check of random_(from, to) for bool: values 0 and 1 only
        raise RuntimeError(f"{'from' if low < 0 else 'to - 1'} is out of bounds for bool")
    return _finish(O.randint(low, high, _size((size,), "randint"),
                             dtype=_dtype.as_dtype(dtype) if dtype is not None else _dtype.int64,
                             device=_dev(device)), requires_grad, "randint")


def _random_dtype(api, dtype):
    """``dtype`` (default: the default float) for rand/randn; torch refuses non-float dtypes
    ("check_uniform_bounds" / "normal_kernel_cpu" not implemented for 'Long')."""
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{api}(): random samples need a floating point dtype, got {dt} "
                           f"(torch refuses it too); use dtype=tensorplay.float32 (or float64) "
                           f"and convert the result if you need integers")
    return dt


def rand(*sizes: int | Sequence[int], size: Sequence[int] | None = None,
         dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
         requires_grad: bool = False, out: Any = None) -> Tensor:
    """Uniform [0, 1) samples of ``size`` from the device's generator (see ``manual_seed``)."""
    if out is not None:
        return _factory_out("rand", out, dtype, rand, sizes, {"size": size,
                            "requires_grad": requires_grad})
    size = _size(_sizes(sizes, size, "rand"), "rand")
    return _finish(O.rand(size, dtype=_random_dtype("rand", dtype),
                          device=_dev(device)), requires_grad, "rand")


def randn(*sizes: int | Sequence[int], size: Sequence[int] | None = None,
          dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
          requires_grad: bool = False, out: Any = None) -> Tensor:
    """Standard normal samples of ``size`` from the device's generator (see ``manual_seed``)."""
    if out is not None:
        return _factory_out("randn", out, dtype, randn, sizes, {"size": size,
                            "requires_grad": requires_grad})
    size = _size(_sizes(sizes, size, "randn"), "randn")
    return _finish(O.randn(size, dtype=_random_dtype("randn", dtype),
                           device=_dev(device)), requires_grad, "randn")


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: _DTypeLike | None = None,
                  device: _DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """Uninitialised tensor of ``size`` laid out with ``stride`` (elements), as
    ``torch.empty_strided``: its storage holds exactly the elements those strides reach
    (``1 + sum((n - 1) * s)``, 0 for an empty tensor); on fake/meta devices only the metadata.
    ``ValueError`` when ``size`` and ``stride`` differ in length or a size or stride is negative;
    ``TypeError`` for a non-int entry."""
    size = size_ints("empty_strided", list(_seq(size, "empty_strided", "size", 1)))
    stride = size_ints("empty_strided", list(_seq(stride, "empty_strided", "stride", 2)))
    if len(size) != len(stride):
        raise ValueError(f"empty_strided: size {tuple(size)} and stride {tuple(stride)} must have "
                         f"the same length")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise ValueError(f"empty_strided: sizes and strides must be non-negative, got size "
                         f"{tuple(size)}, stride {tuple(stride)}")
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    base = empty(span, dtype=dtype, device=device)
    from ._ops.views import make_view
    t = make_view(base, size, stride, 0)
    _tensor_base.set_view(t, None, t.view_version)   # owns its storage: no view of ``base``
    if requires_grad is not False:
        if requires_grad is not True:
            _bad_grad("empty_strided", requires_grad)
        t.requires_grad_(True)
    return t


def empty_like(t: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """``empty`` with ``t``'s shape, dtype and device (fake if ``t`` is fake).
    ``memory_format``: ``preserve_format`` (None, the default: a dense input's
    strides are kept, another input gets dense strides in its stride order), ``contiguous_format``,
    ``channels_last`` (4-D) or ``channels_last_3d`` (5-D), as torch (``RuntimeError`` for a
    channels-last format of another rank)."""
    if dtype is None and device is None and memory_format is None and requires_grad is False:
        f = _like_fast(t, _EMPTY_TABLE)
        if f is not None:
            return f(list(t.raw_shape), dtype=t.raw_dtype, device=t.raw_device)
    _need_tensor(t, "empty_like")
    return _like_self(t, "empty", t.raw_shape, None, dtype, device, requires_grad,
                      "empty_like", memory_format)


_TB = _tensor_base.TensorBase


def _like_fast(t, table):
    """The kernel of ``tp::empty``/``tp::full`` (``table``: the op's dispatch table) that the
    common call of a ``*_like`` factory runs, or None: that call -- a real tensor (not fake, not
    being captured), row-major (its strides the cached row-major tuple: preserve_format keeps
    that layout), no device/memory_format/requires_grad given (the caller tests those) -- is
    that op on its shape, dtype and device, dispatched inline as the factories do (see
    _EMPTY_TABLE): the same op call _like_self makes for it, without _like_self's checks of
    what was not given (~0.5 µs of a 2 µs zeros_like). None (anything else, a table miss
    included): the caller takes _like_self."""
    if not isinstance(t, _TB) or t.native is None or t.capture_info is not None:
        return None
    try:
        if t.stride_tuple is not _CONTIG.get(t.raw_shape):
            return None
    except TypeError:   # symbolic sizes (torch's, via tensorplay-torch): not hashable
        return None
    return table.get(_mst.mode or t.raw_device.type)


def zeros_like(t: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Zeros with ``t``'s shape, dtype and device unless given (fake if ``t`` is fake).
    ``memory_format``: ``preserve_format`` (None, the default: a dense input's
    strides are kept, another input gets dense strides in its stride order), ``contiguous_format``,
    ``channels_last`` (4-D) or ``channels_last_3d`` (5-D), as torch (``RuntimeError`` for a
    channels-last format of another rank)."""
    if dtype is None and device is None and memory_format is None and requires_grad is False:
        f = _like_fast(t, _FULL_TABLE)
        if f is not None:
            return f(list(t.raw_shape), 0, dtype=t.raw_dtype, device=t.raw_device)
    _need_tensor(t, "zeros_like")
    return _like_self(t, "full", t.raw_shape, 0, dtype, device, requires_grad,
                      "zeros_like", memory_format)


def ones_like(t: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Ones with ``t``'s shape, dtype and device unless given (fake if ``t`` is fake).
    ``memory_format``: ``preserve_format`` (None, the default: a dense input's
    strides are kept, another input gets dense strides in its stride order), ``contiguous_format``,
    ``channels_last`` (4-D) or ``channels_last_3d`` (5-D), as torch (``RuntimeError`` for a
    channels-last format of another rank)."""
    if dtype is None and device is None and memory_format is None and requires_grad is False:
        f = _like_fast(t, _FULL_TABLE)
        if f is not None:
            return f(list(t.raw_shape), 1, dtype=t.raw_dtype, device=t.raw_device)
    _need_tensor(t, "ones_like")
    return _like_self(t, "full", t.raw_shape, 1, dtype, device, requires_grad,
                      "ones_like", memory_format)


def full_like(t: Tensor, fill_value: _Number, *, dtype: _DTypeLike | None = None,
              device: _DeviceLike | None = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    """``fill_value`` with ``t``'s shape, dtype and device unless given.
    ``memory_format``: ``preserve_format`` (None, the default: a dense input's
    strides are kept, another input gets dense strides in its stride order), ``contiguous_format``,
    ``channels_last`` (4-D) or ``channels_last_3d`` (5-D), as torch (``RuntimeError`` for a
    channels-last format of another rank)."""
    if dtype is None:
        try:
            dt = t.raw_dtype
        except AttributeError:  # no tensor: torch's TypeError (_need_tensor, without its call)
            _need_tensor(t, "full_like")
            raise
    else:
        _need_tensor(t, "full_like")
        dt = dtype if dtype.__class__ is _DT else _dtype.as_dtype(dtype)
    c = fill_value.__class__
    if c is float or c is int:
        w = _FILL_WINDOW.get(dt)      # see full: a value inside the window needs no check
        if w is None or not w[0] <= fill_value <= w[1]:
            fill_value = check_fill("full_like", fill_value, dt)
    elif c is not bool:       # a NumPy scalar, a 0-dim tensor (read as its number)...
        fill_value = fill_number("full_like", fill_value, dt)
    if device is None and memory_format is None and requires_grad is False:
        f = _like_fast(t, _FULL_TABLE)
        if f is not None:
            return f(list(t.raw_shape), fill_value, dtype=dt, device=t.raw_device)
    _need_tensor(t, "full_like")
    return _like_self(t, "full", t.raw_shape, fill_value, dt, device, requires_grad, "full_like",
                      memory_format)


def rand_like(t: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Uniform [0, 1) samples shaped like ``t`` (its dtype and device unless given).
    ``memory_format``: ``preserve_format`` (None, the default: a dense input's
    strides are kept, another input gets dense strides in its stride order), ``contiguous_format``,
    ``channels_last`` (4-D) or ``channels_last_3d`` (5-D), as torch (``RuntimeError`` for a
    channels-last format of another rank)."""
    _need_tensor(t, "rand_like")
    return _like_self(t, "rand", t.raw_shape, None, dtype, device, requires_grad,
                      "rand_like", memory_format)


def randn_like(t: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Standard normal samples shaped like ``t`` (its dtype and device unless given).
    ``memory_format``: ``preserve_format`` (None, the default: a dense input's
    strides are kept, another input gets dense strides in its stride order), ``contiguous_format``,
    ``channels_last`` (4-D) or ``channels_last_3d`` (5-D), as torch (``RuntimeError`` for a
    channels-last format of another rank)."""
    _need_tensor(t, "randn_like")
    return _like_self(t, "randn", t.raw_shape, None, dtype, device, requires_grad,
                      "randn_like", memory_format)


def _need_tensor(t, api):
    """``TypeError`` in torch's words when the ``input`` of a ``*_like`` factory is no Tensor."""
    if not isinstance(t, _tensor_base.TensorBase):
        raise TypeError(f"{api}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(t).__name__}")


_ROW_MAJOR = object()    # _like_self's default (new_* and scalars): row-major, no layout rule


def _like_self(t, kind, size, value, dtype, device, requires_grad, api="new_empty",
               memory_format=_ROW_MAJOR):
    """A new tensor shaped ``size``; fake when ``t`` is fake (so fake kernels can use
    ``x.new_empty`` / ``empty_like``), a capture node when ``t`` is being captured. ``api``
    names the caller in errors (sizes, ``requires_grad``). The ``*_like`` factories (``size`` is
    ``t.shape``) pass their ``memory_format`` (None: preserve) and get ``layout_strides``'
    layout; the default (``new_*`` and the methods' scalars) is row-major, as torch."""
    if dtype is None:
        dt = t.raw_dtype          # (the slots: a third of the properties' cost)
    else:
        dt = dtype if dtype.__class__ is _DT else _dtype.as_dtype(dtype)
    if kind == "rand" or kind == "randn":
        _random_dtype(f"{kind}_like", dt)
    dev = t.raw_device if device is None else _dev(device)
    st = None
    if memory_format is not _ROW_MAJOR:     # *_like (a row-major input's result: row-major)
        if memory_format is not None:
            st = layout_strides(t, memory_format, api)
        else:
            try:
                rm = t.stride_tuple is _CONTIG.get(size)
            except TypeError:     # symbolic sizes (torch's, through tensorplay-torch)
                rm = False
            if not rm:
                st = layout_strides(t, None, api)
    if size is t.raw_shape:    # *_like: the tensor's own shape, a tuple of ints already
        size = list(size)
    elif size.__class__ is list or size.__class__ is tuple:   # new_*: _size's work, inline
        size = list(size)
        for s in size:
            if s.__class__ is not int:
                size = size_ints(api, size)
                break
    else:
        size = _size((size,), api)
    if requires_grad is not False and requires_grad is not True:
        _bad_grad(api, requires_grad)
    if t.capture_info is None:
        if t.native is None and (dev.type == "meta" or t.raw_device.type != "meta"):
            # (a meta tensor's result on a real device is a real tensor, as torch's: only
            # fake tensors -- on the device they stand for -- give fake results there)
            check_nonnegative(kind, size)     # as the real kernels: every mode refuses the same
            return _finish(_make_fake(size, dt, dev, st), requires_grad)
        # the common case: a real tensor, no capture (the op's dispatch inline for
        # empty/full, see _EMPTY_TABLE)
        if st is None:
            if kind == "full":
                f = _FULL_TABLE.get(_mst.mode or dev.type)
                r = f(size, value, dtype=dt, device=dev) if f is not None else \
                    _FULL(size, value, dtype=dt, device=dev)
            elif kind == "empty":
                f = _EMPTY_TABLE.get(_mst.mode or dev.type)
                r = f(size, dtype=dt, device=dev) if f is not None else \
                    _EMPTY(size, dtype=dt, device=dev)
            else:
                r = getattr(O, kind)(size, dtype=dt, device=dev)
        else:                                          # a strided result: flat, then viewed
            n = [_numel(size)]
            if kind == "full":
                r = O.full(n, value, dtype=dt, device=dev)
            else:
                r = getattr(O, kind)(n, dtype=dt, device=dev)
            r = _restrided(r, size, st)
        if requires_grad:
            r.requires_grad_(True)
        return r
    mst = _dispatch._state
    prev = mst.mode
    mst.mode = "capture"
    try:
        return _like_self_real(kind, size, value, dt, dev, requires_grad, st)
    finally:
        mst.mode = prev


def _like_self_real(kind, size, value, dt, dev, requires_grad, st=None):
    n = size if st is None else [_numel(size)]
    if kind == "full":
        r = O.full(n, value, dtype=dt, device=dev)
    else:
        r = getattr(O, kind)(n, dtype=dt, device=dev)
    if st is not None:
        r = _restrided(r, size, st)
    return _finish(r, requires_grad)


def randint_like(t: Tensor, low: int = 0, high: int | None = None, *,
                 dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
                 requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Uniform random integers in ``[low, high)`` shaped like ``t``: ``randint_like(t, high)`` or
    ``randint_like(t, low, high)``, ``t``'s dtype and device unless given, laid out by
    ``memory_format`` as the other ``*_like`` factories (same as ``torch.randint_like``).
    ``RuntimeError`` unless ``low < high`` (``randint``'s checks)."""
    _need_tensor(t, "randint_like")
    if high is None:
        low, high = 0, low
    dt = t.dtype if dtype is None else dtype if dtype.__class__ is _DT else _dtype.as_dtype(dtype)
    dev = t.device if device is None else _dev(device)
    st = layout_strides(t, memory_format, "randint_like")
    size = list(t.shape)
    if st is None:
        r = randint(low, high, size, dtype=dt, device=dev)
    else:
        r = _restrided(randint(low, high, [_numel(size)], dtype=dt, device=dev), size, st)
    return _finish(r, requires_grad, "randint_like")


def _infer_dtype(data):
    """torch's rule for Python data: any float -> default float, else int -> int64, bool -> bool."""
    kinds = set()

    def walk(x):
        if isinstance(x, bool):
            kinds.add("b")
        elif isinstance(x, int):
            kinds.add("i")
        elif isinstance(x, float):
            kinds.add("f")
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, _tensor_base.TensorBase):
            kinds.add({"b": "b", "i": "i", "f": "f"}[x.dtype._kind])
        else:
            raise TypeError(f"tensorplay.tensor: cannot build a tensor from {type(x).__name__}")
    walk(data)
    if "f" in kinds:
        return _dtype.get_default_dtype()
    if "i" in kinds:
        return _dtype.int64
    if "b" in kinds:
        return _dtype.bool
    return _dtype.get_default_dtype()


def _shape_of(data):
    shape = []
    x = data
    while isinstance(x, (list, tuple)):
        shape.append(len(x))
        if not x:
            break
        x = x[0]
    return shape


def tensor(data: Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
           requires_grad: bool = False) -> Tensor:
    """A new tensor copying ``data`` (nested lists/tuples of numbers, a numpy/CuPy array, or a
    Tensor). dtype: given, or the array's own, or torch's rule for Python numbers (float ->
    float32 by default, int -> int64, bool -> bool)."""
    dev = _dev(device)
    if isinstance(data, _tensor_base.TensorBase):
        out = data.detach().to(device=dev, dtype=dtype, copy=True)
        return _finish(out, requires_grad, "tensor")
    native_like = hasattr(data, "dtype") and hasattr(data, "shape")
    dt = _dtype.as_dtype(dtype) if dtype is not None else (
        _dtype.as_dtype(data.dtype) if native_like else _infer_dtype(data))
    if _dispatch._state.mode == "meta" or dev.type == "meta":
        # fake mode, or device="meta" (torch.tensor(data, device="meta"): the shape and dtype
        # of the data, no values)
        from .fake import make_fake
        if not native_like:
            _check_ragged(data)
        return _finish(make_fake(list(data.shape) if native_like else _shape_of(data), dt, dev),
                       requires_grad, "tensor")
    be = get_backend(dev.type)
    if native_like and not type(data).__module__.startswith("numpy"):
        # another library's array (CuPy, DLPack producers): the backend copies it its own way
        arr = be.from_other(data, None, dev)
        if dtype is not None:
            arr = arr.astype(be.native_dtype(dt))
    else:
        try:
            q = _quiet_hooks(be)
            if q is None:
                arr = be.from_host(data, dt, dev)
            else:   # values out of the dtype's range become inf silently, as in torch
                tok = q[0](q[2])
                try:
                    arr = be.from_host(data, dt, dev)
                finally:
                    q[1](tok)
        except ValueError:
            if not native_like:
                _check_ragged(data)   # raises torch's kind of message for ragged nesting
            raise
    return _finish(be.wrap(arr, dev), requires_grad, "tensor")


def _quiet_hooks(be):
    """``(set, reset, state)`` silencing the backend's floating point warnings (the same hooks
    its built-in kernels run under, see ``_kernels/xp.py``), or None."""
    return getattr(be.kernels().get("clone"), "_tp_quiet", None)


def _check_ragged(data):
    """Raise ``ValueError`` when nested lists/tuples ``data`` are ragged (torch: "expected
    sequence of length 2 at dim 1 (got 1)"); called on the error path of ``tensor``."""
    shape = _shape_of(data)

    def walk(x, d, path):
        seq = isinstance(x, (list, tuple))
        if d == len(shape):
            if seq:
                raise ValueError(f"tensorplay.tensor: ragged nested sequence: element {path} is "
                                 f"a sequence at dim {d} but its siblings are numbers")
            return
        if not seq:
            raise ValueError(f"tensorplay.tensor: ragged nested sequence: expected a sequence of "
                             f"length {shape[d]} at dim {d} (got {type(x).__name__} at {path})")
        if len(x) != shape[d]:
            raise ValueError(f"tensorplay.tensor: ragged nested sequence: expected sequence of "
                             f"length {shape[d]} at dim {d} (got {len(x)} at {path})")
        for i, y in enumerate(x):
            walk(y, d + 1, f"{path}[{i}]")
    walk(data, 0, "data")


def as_tensor(data: Any, dtype: _DTypeLike | None = None,
              device: _DeviceLike | None = None) -> Tensor:
    """Like ``tensor`` but shares memory with a Tensor or a cpu numpy array when it can."""
    if isinstance(data, _tensor_base.TensorBase):
        return data.to(device=device, dtype=dtype)
    if type(data).__module__ == "numpy" and (device is None or _dev(device).type == "cpu") and \
            dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: Any) -> Tensor:
    """A cpu tensor sharing memory with numpy array ``arr`` (writes are visible both ways)."""
    be = get_backend("cpu")
    if type(arr).__module__ != "numpy" or not hasattr(arr, "strides"):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(arr).__name__}; use "
                        f"tensorplay.tensor(data) for other data")
    return be.wrap_shared(arr, _CPU)


def from_dlpack(obj: Any) -> Tensor:
    """Zero-copy import of a DLPack-capable array (numpy, CuPy, torch, ...) as a tensor.

    The result shares memory with the producer, strides included (arrays with negative strides
    are copied once). Raises ``DeviceUnavailableError`` when the producer's device has no
    installed plugin, ``RuntimeError`` for a DLPack device type TensorPlay does not know.
    """
    dev_type, dev_id = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
    if dev_type in (1, 3):      # kDLCPU, kDLCUDAHost
        dev = _CPU
    elif dev_type in (2, 13):  # kDLCUDA, kDLCUDAManaged
        dev = Device("cuda", int(dev_id))
    else:
        raise RuntimeError(f"from_dlpack: unsupported DLPack device type {dev_type}")
    be = get_backend(dev.type)
    return be.wrap_shared(be.from_dlpack(obj), dev)


_SEED = [None]   # the last manual_seed, applied to backends loaded later


def manual_seed(seed: int) -> None:
    """Seed every loaded device's generator (and those loaded later) with ``seed``."""
    _SEED[0] = int(seed)
    for b in list(_devices.loaded.values()):
        b.manual_seed(int(seed))


def seed_new_backend(backend) -> None:
    """Give a backend being set up the last ``manual_seed`` (``tensorplay.backends.first_use``:
    a device first used after ``manual_seed`` draws the same numbers as one loaded before)."""
    if _SEED[0] is not None:
        backend.manual_seed(_SEED[0])


def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None,
        out: Any = None) -> Tensor:
    """Concatenate along ``dim`` (same as ``torch.cat``; ``axis=`` is NumPy's name for ``dim``,
    which torch also takes). ``RuntimeError`` for an empty sequence."""
    if out is not None:
        return _write_out("cat", out, cat, (tensors, dim), {"axis": axis}, "cast")
    tensors = list(tensors)
    if not tensors:   # nothing to dispatch on: torch's error rather than a DispatchError
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    return O.cat(tensors, dim if axis is None else axis)


def concat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None,
           out: Any = None) -> Tensor:
    """Alias of :func:`cat` (same as ``torch.concat``): the same results, gradients and errors."""
    if out is not None:
        return _write_out("concat", out, concat, (tensors, dim), {"axis": axis}, "cast")
    return cat(tensors, dim, axis=axis)


def concatenate(tensors: Sequence[Tensor], axis: int = 0, *, dim: int | None = None,
                out: Any = None) -> Tensor:
    """Alias of :func:`cat` (same as ``torch.concatenate``, whose positional name is NumPy's
    ``axis``; ``dim=`` is taken too)."""
    if out is not None:
        return _write_out("concatenate", out, concatenate, (tensors, axis), {"dim": dim}, "cast")
    return cat(tensors, axis if dim is None else dim)


def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Any = None) -> Tensor:
    """Stack along a new dimension ``dim`` (same as ``torch.stack``)."""
    if out is not None:
        return _write_out("stack", out, stack, (tensors, dim), {}, "cast")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return O.stack(tensors, dim)


def where(condition: Tensor, input: _TensorOrScalar | None = None,
          other: _TensorOrScalar | None = None, *, out: Any = None) -> Any:
    """Elementwise ``input if condition else other`` with broadcasting (same as ``torch.where``).
    ``condition`` must be a bool tensor (``RuntimeError`` otherwise, as torch); ``input`` and
    ``other`` are tensors or Python numbers, promoted together (an int beside an integer tensor
    is converted checked, as torch: ``RuntimeError`` for 200 with int8, while
    ``where(m, uint8_t, -1)`` puts 255). ``where(condition)``
    alone is ``nonzero(condition, as_tuple=True)``: a tuple of int64 index tensors, one per
    dim."""
    if out is not None:
        return _write_out("where", out, where, (condition, input, other), {}, "exact")
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    # an int beside an integer tensor: its checked conversion (one class test for the rest)
    if other.__class__ is int:
        if input.__class__ is not int and getattr(input, "raw_dtype", _FLOAT_KIND)._kind in "iu":
            where_int_in_range(input, other)
    elif input.__class__ is int and getattr(other, "raw_dtype", _FLOAT_KIND)._kind in "iu":
        where_int_in_range(input, other)
    return O.where(condition, input, other)

