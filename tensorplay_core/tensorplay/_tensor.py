"""``Tensor``: the user-facing tensor class; its methods forward to ops, factories and autograd.

Names and semantics follow ``torch.Tensor``. A tensor is ``(storage, shape, stride,
storage_offset, dtype, device)``; views share ``storage`` (so aliasing and ``_version`` are
observable, as in torch). Its fields, its one constructor, its metadata and its dispatch keys
live in ``tensorplay/_tensor_base.py`` (``TensorBase``, at the dispatch layer, which the layers
below use); this module, above the ops, adds the methods and imports what they call plainly
(after the class: see the imports below it). Only these two modules touch the private slots.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Sequence, overload

from . import _dtype
from ._device import Device
from ._device import canonical as _canonical_device
from ._tensor_base import TensorBase, detach_history, new_tensor, set_retains_grad
from ._tensor_base import check_partial_overlap as _check_partial_overlap
from ._tensor_base import DataStorage as _DataStorage
from ._tensor_base import data_alias as _data_alias
from ._tensor_base import set_data as _set_data
from ._tensor_base import wrap_dim as _wrap_dim
from ._tensor_base import _NO_DIM, _NO_KEEPDIM
from ._tensor_base import dim_list as _dim_list
from ._tensor_base import index_dim as _index_dim
from ._tensor_base import checked_dims as _checked_dims

if TYPE_CHECKING:
    # Annotation-only names. ``Tensor`` has methods called ``bool``/``int``/``float``, so the
    # builtins are spelled ``_bool``/``_int``/``_float`` inside the class.
    from builtins import bool as _bool
    from builtins import float as _float
    from builtins import int as _int
    from typing import Union

    from . import return_types as _rt
    from .autograd.graph import Node

    _Number = Union[_bool, _int, _float]                  # a Python scalar (torch's ``Number``)
    _TensorOrScalar = Union["Tensor", _bool, _int, _float]
    _DTypeLike = Union[_dtype.DType, type]                # tp.float32, or float/int/bool
    _DeviceLike = Union[Device, str, _int]                # "cuda:0", Device("cpu"), 0
    _Dims = Union[_int, Sequence[_int], None]             # one dim, several, or all (None)

_CPU = Device("cpu")

def _scaled_add_(dst, other, alpha) -> bool:
    """``dst += other * alpha`` with one kernel call (an optimizer step under ``no_grad``:
    ``p.sub_(p.grad, alpha=lr)``) when nothing is recorded and both are real floating tensors of
    one dtype, shape and device; the same array steps as ``add_(dst, other * alpha)``, so the
    same values. False: the caller takes the op-by-op path (which also raises the errors)."""
    if alpha.__class__ is not float and alpha.__class__ is not int:
        return False
    if _grad_state.enabled and (dst._requires_grad or other._requires_grad):
        return False
    if _dispatch_state.mode is not None:
        # a mode (tensorplay.compile's capture: real tensors it reaches from outside are
        # recorded, not written once; fake mode): the op's dispatch decides
        return False
    dt = dst._dtype
    if other._dtype is not dt or dt not in _SCALED_DTYPES or \
            other._shape != dst._shape or other._bkey is not dst._bkey or \
            dst._capture is not None or other._capture is not None or dst._data is None or \
            0 in dst._stride or (other._device is not dst._device and other._device != dst._device):
        return False
    be = dst._backend
    ent = _SCALED.get(be)
    if ent is None or ent[0] is not be._kernels:      # (entries: ArrayBackends only)
        ent = _scaled_kernel(be)
        if ent is None:
            return False
    run = ent[1]
    if run is None:
        ent[3](dst._data, other._data, alpha)
    else:
        # the quiet wrapper's Context.run inlined (two frames less a parameter: no kernels(),
        # no wrapper); while that context is in use, the wrapper itself (its two writes)
        try:
            run(ent[2], dst._data, other._data, alpha)
        except RuntimeError as e:
            if e.args != ent[4] or e.__traceback__.tb_next is not None:
                raise
            ent[3](dst._data, other._data, alpha)
    dst._storage.version += 1
    return True


# backend -> (its kernels table, Context.run or None, bare kernel, kernel, busy): the backend's
# ``_add_scaled_`` resolved once per kernels table. The table is an ``ArrayBackend``'s ``_kernels``
# (built once, replaced when its kernels change: ``lowp.enable``); only those are cached (other
# backends: asked each call), so the check reads ``_kernels`` with no attribute probe
_SCALED: dict = {}
_SCALED_DTYPES = frozenset((_dtype.float32, _dtype.float64))   # floating, 4 bytes or more


def _scaled_kernel(be):
    """``_SCALED``'s entry for backend ``be`` (None: it has no ``_add_scaled_`` kernel)."""
    kd = be.kernels()
    k = kd.get("_add_scaled_")
    if k is None:
        return None
    runner = getattr(k, "_tp_quiet_run", None)     # (run, busy) of _kernels.xp's quiet wrapper
    if runner is None:
        ent = (kd, None, k, k, None)
    else:
        ent = (kd, runner[0], k.__wrapped__, k, runner[1])
    if isinstance(be, _ArrayBackend) and be._kernels is kd:
        _SCALED[be] = ent
    return ent


def _in_place(dst, api, op, *others):
    """``dst`` overwritten with ``op(dst, *others)``, the out-of-place op's value (its
    dtype promotion done): torch's rule for in-place methods (every ``Tensor.m_`` whose value is
    ``m``'s). The result's dtype must cast to ``dst``'s (``can_cast``: not floating into
    integer/bool, not integer into bool), else RuntimeError naming ``api`` before anything is
    written; its shape must broadcast to ``dst``'s (``copy_`` checks). Recorded as the op, then
    one ``copy_`` (so: returns ``dst``, one version bump, a leaf requiring grad refused, a view's
    base sees the write). While autograd records, the op reads a clone of ``dst`` (torch's
    "original self"): a formula that saved ``dst`` itself would find it overwritten at
    backward. A tensor in ``others`` sharing only part of ``dst``'s memory is refused first
    (torch's partial-overlap RuntimeError, as its in-place ops; ``dst`` itself is allowed)."""
    for o in others:
        if isinstance(o, Tensor):
            _check_partial_overlap(dst, o)
    src = dst
    if _grad_state.enabled and (dst._requires_grad or any(
            isinstance(o, Tensor) and o._requires_grad for o in others)):
        _check_inplace(api, dst)      # a leaf requiring grad: refused naming the method
        src = _O.clone(dst)
    result = op(src, *others)
    if result._dtype is not dst._dtype:
        _check_cast(api, result._dtype, dst._dtype)
    if len(result._shape) > len(dst._shape):
        _check_copy_src(dst, result)      # (copy_ of more dims: refused, as torch)
    try:
        return _O.copy_(dst, result)
    except _OverlapError as e:            # an expanded dst: named as the method called
        raise e.named(api) if e.who == "copy_" else e from None


def _named(api, fn, *args):
    """``fn(*args)`` for the in-place method ``api`` whose write is an internal ``copy_`` (its
    last step, or inside ``fn``): an expanded tensor written is refused (RuntimeError) naming
    ``api``, not that ``copy_``."""
    try:
        return fn(*args)
    except _OverlapError as e:
        raise e.named(api) if e.who == "copy_" else e from None


def _restride_(self, api, alternative, view, *args):
    """``self`` given the shape, stride and storage offset of ``view(self, *args)`` in place (a
    shape-changing in-place method: ``t_``, ``transpose_``, ``unsqueeze_``, ``squeeze_``,
    ``as_strided_``, as torch's): the same storage, one version bump, and, while autograd records,
    the view's history (so gradients flow through the new layout); a view stays a view of its
    base (a later write to the base reaches it). Refused as torch refuses any in-place op: on a
    leaf that requires grad or a view of one while grad mode is on (RuntimeError, nothing
    changed). Inside ``tensorplay.compile`` it is refused (RuntimeError naming ``alternative``):
    the capture would not change the caller's tensor when the graph replays."""
    if self._capture is not None:
        raise RuntimeError(
            f"Tensor.{api}() changes a tensor's shape in place, which tensorplay.compile cannot "
            f"record (the replayed graph would leave the caller's tensor unchanged): write "
            f"x = x.{alternative} instead")
    recording = _grad_state.enabled
    if recording:
        _check_inplace(api, self)
    out = view(self, *args)            # the checks (dims, bounds) before anything changes
    self._shape = out._shape
    self._stride = out._stride
    self._offset = out._offset
    self._data = out._data
    st = self._storage
    # a view whose history was current stays so (the op recorded it, or none is recorded); a
    # stale one stays stale: its history is regenerated when next read, with its new layout
    # (torch's), not from the layout it had before this op
    current = self._base is not None and self._vver == st.version
    st.version += 1
    if current:
        self._vver = st.version
    if recording and out.raw_grad_fn is not None:
        # (a retain_grad() made before stays on the old history: .grad is the gradient of the
        # tensor as it was, as torch's for its in-place view ops)
        self.raw_grad_fn = out.raw_grad_fn
        self._output_nr = out._output_nr
    return self


def _times_alpha(self, other, alpha, api):
    """``alpha * other`` for ``add``/``sub``'s ``alpha``, computed as torch does: in the dtype
    ``self <op> other`` computes in (a uint8 ``other`` times 2 does not wrap at 256 when ``self``
    is wider), ``alpha`` converted to that dtype with torch's checks: RuntimeError for a floating
    ``alpha`` with integral operands, a bool ``alpha`` with a non-bool result, an int ``alpha``
    out of the dtype's range. A bool result takes ``bool(alpha)``. For ``sub`` with a bool
    operand ``other`` comes back unscaled: ``sub`` itself refuses it in torch's words."""
    c = alpha.__class__
    if c is not int and c is not float and c is not bool:
        alpha = _as_number(alpha)           # a NumPy scalar: the number torch reads it as
    is_t = isinstance(other, Tensor)        # (captured tensors are Tensors too)
    if api == "sub" and (self._dtype is _dtype.bool or other.__class__ is bool or
                         is_t and other._dtype is _dtype.bool):
        return other
    if is_t:
        rt = _dtype.result_type(self._dtype, 2 if self._shape else 1,
                                other._dtype, 2 if other._shape else 1)
    else:
        rt = _dtype.result_type(self._dtype, 2 if self._shape else 1,
                                _dtype.wrapped_dtype(other), 0)
    if alpha.__class__ is bool:
        if rt is not _dtype.bool:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif rt is _dtype.bool:
        if alpha.__class__ is float and api != "index_add":
            # bool is integral: torch's add/sub refuse a float alpha too (its index_add takes it)
            raise RuntimeError("For integral input tensors, argument alpha must not be a "
                               "floating point number.")
        alpha = bool(alpha)
    elif not rt.is_floating_point:
        if alpha.__class__ is float:
            raise RuntimeError("For integral input tensors, argument alpha must not be a "
                               "floating point number.")
        _check_fill(api, alpha, rt)         # "value cannot be converted to type int8_t ..."
    if alpha == 1 and alpha.__class__ is not bool:
        return other            # (a float 1.0 that passed the checks: nothing to scale)
    if not is_t:
        return other * alpha
    return (other if other._dtype is rt else _O.to_dtype(other, rt)) * alpha


def _addc(self, t1, t2, value, op, api):
    """``self + (value * t1) op t2`` (``addcmul``/``addcdiv``), in the three tensors' promoted
    dtype, in torch's order of evaluation."""
    c = value.__class__
    if c is not int and c is not float and c is not bool:
        value = _as_number(value)           # a NumPy scalar: the number torch reads it as
    if api == "addcdiv" and isinstance(t1, Tensor) and isinstance(t2, Tensor) and \
            not t1._dtype.is_floating_point and not t2._dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    dims = zero = None          # torch's promotion: 0-dim tensors weaker than dimensioned ones
    for t in (self, t1, t2):
        if t._shape:
            dims = t._dtype if dims is None else _dtype.promote_types(dims, t._dtype)
        else:
            zero = t._dtype if zero is None else _dtype.promote_types(zero, t._dtype)
    rt = dims if zero is None else zero if dims is None else _dtype.result_type(dims, 2, zero, 1)
    if rt is _dtype.bool:
        raise RuntimeError(f"{api}: not implemented for bool tensors (as torch); cast first, "
                           f"e.g. .int()")
    if t1._dtype is not rt:
        t1 = _O.to_dtype(t1, rt)
    if t2._dtype is not rt:
        t2 = _O.to_dtype(t2, rt)
    if not rt.is_floating_point and value.__class__ is float:
        value = int(value)              # torch converts the scalar to the integer dtype
    if value.__class__ is int and not rt.is_floating_point:
        value = _check_fill(api, value, rt)     # checked, as torch ("... without overflow")
    if rt in _LOWP:     # float16/bfloat16: at float32, rounded once (torch's opmath)
        return _opmath.addc(self, t1, t2, value, api, rt)
    if value != 1 or value is True:
        t1 = _O.mul(t1, value)
    return _O.add(self, op(t1, t2))


def _lerp(self, end, weight):
    """torch's lerp kernel: ``self + w * (end - self)`` for ``|w| < 0.5``, else
    ``end - (end - self) * (1 - w)``; ``w`` in ``self``'s dtype."""
    dt = self._dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"lerp: not implemented for {dt} (floating tensors only, as torch)")
    if end._dtype is not dt:
        raise RuntimeError(f"expected dtype {dt} for `end` but got dtype {end._dtype}")
    if isinstance(weight, Tensor) and weight._dtype is not dt:
        if weight._shape:
            raise RuntimeError(f"expected dtype {dt} for `weight` but got dtype {weight._dtype}")
        # a 0-dim weight takes part like a number (torch's common dtype): converted to the
        # result's dtype, self's unless self and end are 0-dim too (then promoted together)
        rt = _dtype.result_type(dt, 2 if self._shape or end._shape else 1, weight._dtype, 1)
        if rt is not dt:
            self, end, dt = _O.to_dtype(self, rt), _O.to_dtype(end, rt), rt
        weight = _O.to_dtype(weight, dt)
    if dt in _LOWP:     # float16/bfloat16: at float32, rounded once (torch's opmath)
        return _opmath.lerp(self, end, weight)
    diff = _O.sub(end, self)
    if isinstance(weight, Tensor):
        small = _O.lt(_O.abs(weight), 0.5)
        return _O.where(small, _O.add(self, _O.mul(weight, diff)),
                        _O.sub(end, _O.mul(diff, _O.rsub(weight, 1))))
    w = _like_self(self, "full", [], weight, dt, None, False)    # rounded to dt, as torch's
    if abs(weight) < 0.5:
        return _O.add(self, _O.mul(w, diff))
    return _O.sub(end, _O.mul(diff, _O.rsub(w, 1)))


def _draw_dtype(t):
    """The floating dtype random draws for ``t`` are made in (its own, or float32)."""
    return t._dtype if t._dtype.is_floating_point else _dtype.float32


def _uniform_like(t):
    """Uniform [0, 1) draws of ``t``'s shape and device, no history (random fills)."""
    return _O.rand(list(t._shape), dtype=_draw_dtype(t), device=t._device)



def _check_fill_tensor(api, value, dtype):
    """A 0-dim tensor ``value`` of ``masked_fill``/``index_fill`` (``api``) checked against
    ``dtype`` as its number (``RuntimeError`` "value cannot be converted to type int8 without
    overflow"): torch's kernels read ``value.item()`` and convert it checked, where a copy
    (``fill_``, ``x[i] = t``) wraps. A fake or captured value (no number known here), or one
    with dimensions (the op's own error), is left to the kernel."""
    if not value._shape and value.native is not None and value.capture_info is None:
        _check_fill(api, value.item(), dtype)

def _index_vector(api, index):
    """``index`` of ``index_fill_``/``index_copy_``: a 0-D or 1-D int64 tensor, as 1-D (torch's
    dtype rule of ``api``, ``INDEX_RULES``, first)."""
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise RuntimeError(f"{api}(): Index is supposed to be a vector of int64")
    if index._dtype is not _dtype.int64:
        _check_index_dtype(api, index._dtype)
    return _O.reshape(index, [1]) if not index._shape else index


def _int_indices(indices):
    """``index_put_``'s index tensors with each bool mask replaced by the integer index tensors
    of its True positions (one per dim it covers), as torch reads them."""
    idx = []
    for i in indices:
        if i is None:
            raise NotImplementedError("index_put_ with None among the indices is not supported; "
                                      "index with tensors only (or use x[...] = values)")
        if i._dtype is _dtype.uint8:
            i = _byte_mask(i, 4)     # torch's (deprecated) byte mask
        elif i._dtype is not _dtype.bool:
            _check_index_dtype("index_put_", i._dtype)
        if i._dtype is _dtype.bool:
            nz = _O.nonzero(i)
            idx.extend(nz[:, j] for j in range(i.ndim))
        else:
            idx.append(i)
    return tuple(idx)


def _index_put_accumulated(self, indices, values):
    """``self`` with ``values`` added at ``indices`` (``index_put(..., accumulate=True)``):
    the indexed leading dims flattened to one, then one ``index_add``."""
    idx = _int_indices(indices)
    k = len(idx)
    if not k:
        raise IndexError("index_put_(accumulate=True) needs at least one index tensor")
    if k > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {k})")
    # the leading k dims flattened to one: the advanced-indexing linearisation, with its range
    # checks (one read of the device eagerly; under a capture, per dim each time the graph runs)
    _, _, bshape, lin, n = _linear_index(self, list(enumerate(idx)))
    bshape, rest = list(bshape), list(self._shape[k:])
    lin = _O.reshape(lin, [-1])
    if not isinstance(values, Tensor):
        values = _like_self(self, "full", [], values, self._dtype, None, False)
    vals = _O.reshape(_O.expand(values, bshape + rest), [-1] + rest)
    flat = _O.reshape(self, [n] + rest)
    return _O.reshape(_O.index_add(flat, 0, lin, vals), list(self._shape))


def _one_of(api, sections, indices, more=()):
    """``hsplit``/``vsplit``/``dsplit``'s one argument: positional, several ints (indices, as
    torch's ``hsplit(1, 3)``) or torch's keyword ``sections=``/``indices=`` (TypeError for none
    or both)."""
    if more:
        if indices is not None:
            raise TypeError(f"{api}() got multiple values for argument 'indices'")
        return [sections, *more]
    if (sections is None) == (indices is None):
        raise TypeError(f"{api}() takes exactly one of sections (an int) and indices (a list)")
    return sections if indices is None else list(indices)


def _no_generator(api, generator):
    """torch's ``generator=`` keyword of the random fills: ``None`` only (TensorPlay draws from
    the device's generator, seeded by ``tensorplay.manual_seed``)."""
    if generator is not None:
        raise TypeError(f"{api}(generator=...): TensorPlay has no Generator objects; seed the "
                        f"device's generator with tensorplay.manual_seed and pass no generator")


def _put(self, index, source, accumulate):
    """``put``: ``self`` read as 1-D (row-major), ``source`` written or added at ``index``."""
    if index._dtype is not _dtype.int64:
        _check_index_dtype("put_", index._dtype)     # int64 only (torch)
    if source._dtype is not self._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {self._dtype} and source.dtype = {source._dtype}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    flat = _O.clone(_O.reshape(self, [-1]))
    flat = flat.index_put_((_O.reshape(index, [-1]),), _O.reshape(source, [-1]), accumulate)
    return _O.reshape(flat, list(self._shape))


def _np_split(self, sections, dim, api, min_dims):
    """``hsplit``/``vsplit``/``dsplit``: ``tensor_split`` along ``dim``; an int must divide the
    dim (RuntimeError, torch's words)."""
    if self.ndim < min_dims:
        raise RuntimeError(f"torch.{api} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {self.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or self._shape[dim] % sections):
        raise RuntimeError(f"torch.{api} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {self._shape[dim]} is not divisible by the "
                           f"split_size {sections}!")
    return self.tensor_split(sections, dim)


def _logaddexp(a, b, base2):
    """torch's logaddexp/logaddexp2 kernel: ``m + log1p(exp(-|a - b|))`` (base 2: ``exp2`` and
    times ``1/ln 2``), ``a`` where ``a`` and ``b`` are the same infinity."""
    if not a._dtype.is_floating_point or isinstance(b, Tensor) and \
            not b._dtype.is_floating_point:
        raise RuntimeError(f"logaddexp{'2' if base2 else ''}: not implemented for integer or "
                           f"bool tensors (as torch); convert to a floating dtype first")
    m = _O.maximum(a, b)
    d = _O.neg(_O.abs(_O.sub(a, b)))
    if base2:
        r = _O.add(m, _O.mul(_O.log1p(_O.exp2(d)), 1.4426950408889634))
    else:
        r = _O.add(m, _O.log1p(_O.exp(d)))
    same_inf = _O.logical_and(_O.isinf(a), _O.eq(a, b))
    return _O.where(same_inf, m, r)


def _cumprod_in(a, dim, dtype):
    return a.cumprod(dim, dtype=dtype)


def _cumsum_in(a, dim, dtype):
    return _O.cumsum(a, dim, dtype=dtype)


def _addmm_of(a, m1, m2, beta, alpha):
    return _surface.addmm(a, m1, m2, beta=beta, alpha=alpha)


def _baddbmm_of(a, b1, b2, beta, alpha):
    return _surface.baddbmm(a, b1, b2, beta=beta, alpha=alpha)


def _round_decimals(a, decimals):
    return _O.round(a, decimals=decimals)


def _rounded_div(a, b, mode):
    """``torch.div`` with a ``rounding_mode``: "floor" is ``floor_divide``'s values with a
    zero gradient (``_div_floor``: floor_divide itself has none, as torch's); "trunc" is the
    quotient rounded toward zero (floor, plus one where the remainder is nonzero and the floor
    quotient is negative: exact for integers, where ``trunc(a / b)`` through floats is not)."""
    if mode == "floor":
        return _O._div_floor(a, b)
    if mode != "trunc":
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{mode}'")
    q = _O._div_floor(a, b)
    if q._dtype.is_floating_point:
        return _O.where(_O.lt(q, 0), _O.ceil(_O.div(a, b)), q)
    # A nonzero remainder with a negative floor quotient is exactly "the signs differ" of the
    # operands as converted to the result dtype, which is what torch divides: a number or 0-dim
    # tensor wraps there (uint8 by -3 divides by 253; int8 by 200 by -56), so the signs of the
    # unconverted operands (the former test) added one to unsigned quotients that needed none.
    fix = _O.logical_and(_O.ne(_O.remainder(a, b), 0), _O.lt(q, 0))
    return _O.add(q, _O.to_dtype(fix, q._dtype))




class Tensor(TensorBase, instance_class=True):
    """A multi-dimensional array on a device, with autograd (same surface as ``torch.Tensor``).

    Create tensors with ``tensorplay.tensor``/``zeros``/``randn``/... rather than this class.
    Attributes: ``shape`` (tuple of ints), ``dtype``, ``device``, ``ndim``, ``requires_grad``,
    ``grad``, ``grad_fn``, ``is_leaf``, ``_version``.
    """

    __slots__ = ()   # the fields are TensorBase's (tensorplay/_tensor_base.py)

    @property
    def is_leaf(self) -> bool:
        """True when the tensor was not produced by a recorded operation (``grad_fn is None``).
        A view's history is its base's current one (torch's rule): ``RuntimeError`` for a view
        made under ``no_grad`` of a tensor that requires grad, once the base or another view of
        it was written in place (torch's words)."""
        if self._base is not None and self._vver != self._storage.version:
            return _current_grad_fn(self) is None
        return self.grad_fn is None     # (a capture tensor's answers as eager)


    # the autograd field users read and assign (TensorBase's slot), typed for the checkers
    grad: Tensor | None

    @property
    def grad_fn(self) -> Node | None:
        """The autograd node that made this tensor (None for a leaf), as ``torch.Tensor.grad_fn``.
        A view whose base, or another view of its base, was written in place since its history
        was last set gets its history regenerated first (an ``AsStridedBackward`` of the base's
        current history, torch's rule), so reading it names the node gradients flow through;
        ``RuntimeError`` (torch's words) for a view whose creation forbids that: made under
        ``no_grad``, or an output of ``unbind``/``split``/``chunk`` (or a view of one), once its
        base requires grad."""
        if self._base is not None and self._vver != self._storage.version:
            return _current_grad_fn(self)
        return self.raw_grad_fn

    @grad_fn.setter
    def grad_fn(self, node: Node | None) -> None:
        self.raw_grad_fn = node

    def requires_grad_(self, requires_grad: _bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return ``self`` (same as torch)."""
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` during ``backward`` (leaves always
        keep theirs), as ``torch.Tensor.retain_grad``. ``RuntimeError`` if it does not require
        grad. An in-place write made afterwards that gives the tensor a new history (``mul_``,
        ``copy_``, ``x[i] = v``, a write to a view of it or to its base, a custom op or
        ``autograd.Function`` writing it) takes it along: ``.grad`` is the gradient of the
        value the tensor has at ``backward`` (torch's rule); the shape-changing in-place
        methods (``t_``, ``squeeze_``, ...) leave it on the old history, as torch's."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        set_retains_grad(self, True)
        node = _current_grad_fn(self)      # (a view's history made stale by a write: renewed)
        if node is not None:
            import weakref
            _output_hooks(node, self._output_nr).ref = weakref.ref(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> _HookHandle:
        """Call ``hook(grad)`` each time a gradient for this tensor is computed in ``backward``;
        a hook returning a tensor replaces the gradient (for a leaf: before it is added to
        ``.grad``; for a non-leaf: for the rest of the backward). Returns a handle whose
        ``remove()`` unregisters it. ``RuntimeError`` unless the tensor requires grad (as
        ``torch.Tensor.register_hook``). A hook stays with the value it was registered on: an
        in-place write made afterwards leaves it on the old history (it gets the gradient of
        the value before the write), as torch's."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if _current_grad_fn(self) is not None:
            hooks = _output_hooks(self.grad_fn, self._output_nr).hooks
        else:
            acc = _grad_accumulator(self)
            if acc.hooks is None:
                acc.hooks = _LeafHooks()
            hooks = acc.hooks
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> _HookHandle:
        """Call ``hook(self)`` in each ``backward`` after the gradient has been accumulated
        into this leaf's ``.grad`` (after its ``register_hook`` functions; hooks in
        registration order; also for ``backward(inputs=...)``, not for ``autograd.grad``);
        the hook returns None (else ``RuntimeError``). Returns a handle whose ``remove()``
        unregisters it. Leaves only: ``RuntimeError`` on a non-leaf tensor or one that does
        not require grad. Same as ``torch.Tensor.register_post_accumulate_grad_hook`` (e.g.
        an optimizer step per parameter, freeing each ``.grad`` as soon as it is used)."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if _current_grad_fn(self) is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        acc = _grad_accumulator(self)
        if acc.hooks is None:
            acc.hooks = _LeafHooks()
        post = acc.hooks.post
        post.append(hook)
        return _HookHandle(post, hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: _bool | None = None,
                 create_graph: _bool = False,
                 inputs: Tensor | Sequence[Tensor] | None = None) -> None:
        """Accumulate gradients of this tensor into the leaves' ``.grad`` (same as
        ``torch.Tensor.backward``): ``gradient`` has this tensor's shape (omitted only for one
        element); each leaf's gradient is summed to its shape and cast to its dtype, on its
        device. ``create_graph=True`` records the backward pass, so ``.grad`` keeps its history
        and can be differentiated again. ``RuntimeError`` when this tensor does not require
        grad."""
        _backward(self, gradient, retain_graph=retain_graph,
                               create_graph=create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing storage with this one, cut from the graph."""
        t = new_tensor(self._storage, self._data, self._shape, self._stride, self._offset,
                       self._dtype, self._device, self._backend)
        t._bkey = t._dkey = self._bkey     # a fake tensor's detached alias stays fake
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place (it becomes a leaf) and return it.
        RuntimeError for a view (``detach()`` makes a detached alias instead), as torch."""
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        detach_history(self)
        return self

    if TYPE_CHECKING:
        @property
        def data(self) -> Tensor: ...
    else:   # (the getter is _tensor_base.data_alias itself: no frame of its own)
        data = property(_data_alias, _set_data, doc="""A detached alias, as ``torch.Tensor.data``: same
        memory and layout, no history, does not require grad, no view (``_base`` None even for a
        view), and -- unlike ``detach()`` -- a version counter of its own starting at 0: in-place
        writes through it (or its views) are invisible to autograd, so a graph that saved this
        tensor does not raise "modified by an inplace operation" at backward (it computes with
        the new values, as torch's). Use it only where that is meant (a manual parameter
        update); prefer ``with tensorplay.no_grad():``, whose writes autograd checks.

        ``x.data = y`` (torch's ``set_data``): ``x`` keeps its identity, ``requires_grad``,
        history, ``.grad`` and version counter and takes ``y``'s memory and layout (shape and
        dtype may change; a non-floating ``y`` for an ``x`` that requires grad is a
        RuntimeError, as torch's); not on a view (RuntimeError).""")

    # -- conversion -----------------------------------------------------------------------------
    def numpy(self, *, force: _bool = False) -> Any:
        """The values as a numpy array sharing memory (cpu tensors only; ``force`` copies others).

        ``RuntimeError`` when the tensor requires grad and grad mode is on (unless ``force``),
        ``TypeError`` for a non-cpu tensor without ``force``; both are checked before the values
        are needed (a fake or captured tensor gets the same refusals as a real one)."""
        # torch refuses only while grad mode is on: under no_grad (and inside a kernel that runs
        # below autograd, e.g. a custom op with register_autograd) .numpy() is allowed. Inside
        # the composite kernel of a custom op without a formula it is allowed too (torch's
        # custom-op kernels run with grad off) and marks the call's outputs not differentiable
        # (autograd.function.KERNEL_MARK; the gate keeps the thread-local read out of programs
        # that never ran such a kernel)
        if not (_kernel_gate[0] and _mark_kernel_exit()) and self._requires_grad and \
                not force and _grad_state.enabled:
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        if self._device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {self._device} tensor to numpy; use .cpu() first")
            self._need_data("numpy")
            return self._backend.to_host(self._data)
        self._need_data("numpy")
        return self._data

    def __array__(self, dtype: Any = None, copy: _bool | None = None) -> Any:
        a = self.detach().numpy(force=True)
        return a if dtype is None else a.astype(dtype)

    def tolist(self) -> Any:
        """Nested Python lists of Python scalars."""
        if _kernel_gate[0] and self._requires_grad:
            _mark_kernel_exit()
        self._need_data("tolist")
        return self._data.tolist()

    def item(self) -> _Number:
        """The single value as a Python scalar; ``RuntimeError`` unless ``numel() == 1``
        (``float(t)``, ``int(t)``, ``bool(t)`` read it)."""
        if _kernel_gate[0] and self._requires_grad:
            _mark_kernel_exit()
        self._need_data("item")
        if self.numel() != 1:
            raise RuntimeError(f"item(): a Tensor with {self.numel()} elements cannot be "
                               f"converted to a Python scalar")
        return self._data.reshape(()).item() if self._data.ndim else self._data.item()

    def _need_data(self, what):
        """Raise unless the tensor has values (``what``: the method that reads them). A
        ``tensorplay.compile`` capture tensor overrides it to name the data-dependent construct."""
        if self._data is None:
            raise RuntimeError(f"Tensor.{what}(): fake/meta tensors have no data")
        if data_read_hook is not None:
            # a tensorplay.compile capture is in progress (in some thread): one reading a graph
            # constant's values (a dim, a size, int(t)) guards the graph on them
            data_read_hook(self)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        self._need_data("__dlpack__")
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[_int, _int]:
        self._need_data("__dlpack_device__")
        return self._data.__dlpack_device__()

    def __bool__(self) -> _bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is "
                               f"ambiguous; reduce it first (e.g. (t > 0).sum() > 0) or index "
                               f"one element")
        return bool(self.item())

    def __float__(self) -> _float:
        return float(self.item())

    def __int__(self) -> _int:
        return int(self.item())

    def __index__(self) -> _int:
        if self._dtype.is_floating_point:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> _int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The rows along dim 0, ``unbind(0)``'s views (as torch's: not writable in place while
        autograd records); TypeError for a 0-D tensor."""
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_surface.unbind(self, 0))

    def __hash__(self) -> _int:
        return id(self)

    def __repr__(self) -> str:
        """torch's layout and precision: ``tensor([1.0000, 2.5000])``, ``dtype=`` unless the
        default float, int64 or bool, tensors over 1000 elements summarised with ``...``."""
        if self._data is None:
            extra = [f"device='{self._device}'"]
            if self._dtype is not _dtype.float32 and self._dtype is not _dtype.int64:
                extra.append(f"dtype={self._dtype}")
            from ._format import grad_fn_name
            name = grad_fn_name(self)
            if name is not None:
                extra.append(f"grad_fn=<{name}>")
            elif self._requires_grad:
                extra.append("requires_grad=True")
            kind = "fake" if self._device.type != "meta" else "meta"
            return f"{kind}_tensor(size={tuple(self._shape)}, " + ", ".join(extra) + ")"
        from ._format import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        # torch's rule: a 0-d tensor formats as its Python scalar (f"{loss:.4f}"); others only
        # with an empty spec (str(t)), anything else is object.__format__'s TypeError
        if not self._shape and self._data is not None:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo: dict[_int, Any]) -> Tensor:
        """``copy.deepcopy``: a new leaf with copied values, dtype, device and ``requires_grad``;
        ``.grad`` is deep-copied too (as torch). Non-leaf tensors are refused (torch's rule)."""
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment. If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        done = memo.get(id(self))
        if done is not None:
            return done
        prev = _grad_state.enabled
        _grad_state.enabled = False
        try:
            new = _O.clone(self.detach())
        finally:
            _grad_state.enabled = prev
        if self._requires_grad:
            new.requires_grad_(True)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        return new

    def __reduce_ex__(self, protocol: Any) -> Any:
        """``pickle``: real tensors by value (a host copy of the elements, dtype, device,
        ``requires_grad``); unpickling puts them back on their device (as torch). The gradient and
        the graph are not kept (as torch). Fake and meta tensors have no values:
        ``RuntimeError``."""
        if self._data is None:
            kind = "meta" if self._device.type == "meta" else "fake"
            raise RuntimeError(f"cannot pickle a {kind} tensor (shape {tuple(self._shape)}, "
                               f"{self._dtype}): it has no values; pickle a real tensor, or "
                               f"its shape and dtype")
        t = self.detach()
        if self._dtype is _dtype.bfloat16:
            t = t.to(_dtype.float32)     # NumPy has no bfloat16 of its own; exact round trip
        arr = t.numpy(force=True)
        arr = arr.copy() if t._device.type == "cpu" else arr
        return (_rebuild_tensor, (arr, self._dtype.name, str(self._device), self._requires_grad))

    # -- device / dtype moves --------------------------------------------------------------------
    @overload
    def to(self, dtype: _DTypeLike, /, *, non_blocking: _bool = False,
           copy: _bool = False) -> Tensor: ...
    @overload
    def to(self, device: _DeviceLike | None = None, dtype: _DTypeLike | None = None, *,
           non_blocking: _bool = False, copy: _bool = False) -> Tensor: ...
    @overload
    def to(self, other: Tensor, /, *, non_blocking: _bool = False,
           copy: _bool = False) -> Tensor: ...
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; ``copy=True`` forces
        a copy. Returns ``self`` when nothing changes (torch semantics). Differentiable. A device
        spelled with an index on a one-device type (``"cpu:0"``, ``"cpu:1"``,
        ``device("cpu", 0)``) is a copy on that type, as torch's (which compares it with the
        tensor's unindexed ``cpu`` as another device); ``"cpu"`` returns ``self``."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"Tensor.to: unexpected arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, _dtype.DType):
                dtype = a
            elif isinstance(a, type):      # float, numpy.float64, ...
                dtype = _dtype.as_dtype(a) if a in (float, int, bool) else \
                    _dtype.from_name(a.__name__, a)
            elif isinstance(a, str) and a in _dtype._BY_NAME:
                _dtype.as_dtype(a)      # a dtype's name is not a dtype (torch): TypeError
            elif a is not None:
                try:
                    dtype = _dtype.as_dtype(a) if not isinstance(a, (str, Device, int)) else dtype
                    if isinstance(a, (str, Device, int)):
                        device = Device(a)
                except TypeError:
                    device = Device(a)
        out = self
        if dtype is not None and _dtype.as_dtype(dtype) is not self._dtype:
            out = _O.to_dtype(out, _dtype.as_dtype(dtype))
        if device is not None:
            d = _canonical_device(device)   # "cpu:0" is cpu, "cuda" is cuda:0
            if d is not out._device:
                out = _O.to_device(out, d)
            elif d is not device and d.index is None and out is self and (
                    ":" in device if device.__class__ is str else
                    device.__class__ is Device and device.index is not None):
                # torch compares an indexed one-device spelling ("cpu:0", "meta:0") with the
                # tensor's unindexed device as different: a copy, not self (cuda's index is
                # filled in first, so "cuda:0" of a cuda:0 tensor stays self)
                copy = True
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> Tensor:
        """This tensor on the cpu (``self`` when it already is there)."""
        return self.to(_CPU)

    def cuda(self, device: _DeviceLike | None = None, non_blocking: _bool = False) -> Tensor:
        """This tensor on ``cuda:device`` (index 0 by default); needs the tensorplay-cuda plugin.
        ``non_blocking`` is accepted (as ``to``'s) and the copy is synchronous."""
        return self.to(Device("cuda", device if isinstance(device, int) else
                              (Device(device).index or 0) if device is not None else 0))

    def type_as(self, other: Tensor) -> Tensor:
        """This tensor converted to ``other``'s dtype."""
        return self.to(other.dtype)

    def float(self) -> Tensor:
        """``self.to(tensorplay.float32)``."""
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        """``self.to(tensorplay.float64)``."""
        return self.to(_dtype.float64)

    def half(self) -> Tensor:
        """``self.to(tensorplay.float16)``."""
        return self.to(_dtype.float16)

    def long(self) -> Tensor:
        """``self.to(tensorplay.int64)``."""
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        """``self.to(tensorplay.int32)``."""
        return self.to(_dtype.int32)

    def bool(self) -> Tensor:
        """``self.to(tensorplay.bool)``."""
        return self.to(_dtype.bool)

    # -- new tensors like this one ----------------------------------------------------------------
    def new_empty(self, *size: _int | Sequence[_int], dtype: _DTypeLike | None = None,
                  device: _DeviceLike | None = None, requires_grad: _bool = False,
                  **kwargs: Sequence[_int]) -> Tensor:
        """Uninitialised tensor of ``size`` (ints, one sequence, or torch's keyword ``size=``)
        with this tensor's dtype and device unless given (fake if this tensor is fake), as
        ``torch.Tensor.new_empty``; TypeError for another keyword."""
        return _like_self(self, "empty", _new_size(size, "new_empty", kwargs), None, dtype, device,
                                     requires_grad, "new_empty")

    def new_zeros(self, *size: _int | Sequence[_int], dtype: _DTypeLike | None = None,
                  device: _DeviceLike | None = None, requires_grad: _bool = False,
                  **kwargs: Sequence[_int]) -> Tensor:
        """Zeros of ``size`` (as ``new_empty``'s) with this tensor's dtype and device unless
        given."""
        return _like_self(self, "full", _new_size(size, "new_zeros", kwargs), 0, dtype, device,
                                     requires_grad, "new_zeros")

    def new_ones(self, *size: _int | Sequence[_int], dtype: _DTypeLike | None = None,
                 device: _DeviceLike | None = None, requires_grad: _bool = False,
                 **kwargs: Sequence[_int]) -> Tensor:
        """Ones of ``size`` (as ``new_empty``'s) with this tensor's dtype and device unless
        given."""
        return _like_self(self, "full", _new_size(size, "new_ones", kwargs), 1, dtype, device,
                                     requires_grad, "new_ones")

    def new_full(self, size: Sequence[_int], fill_value: _Number, *,
                 dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
                 requires_grad: _bool = False) -> Tensor:
        """``fill_value`` everywhere, shape ``size`` (a tuple or list of ints: a bare int is a
        ``TypeError``, as torch's), this tensor's dtype/device unless given. ``fill_value``: a
        number or a 0-dim tensor that does not require grad (read as its number), checked
        against the dtype as ``full``'s (``RuntimeError`` when the dtype cannot hold it)."""
        dt = self._dtype if dtype is None else dtype if dtype.__class__ is _dtype.DType else \
            _dtype.as_dtype(dtype)
        c = fill_value.__class__
        if not ((c is float or c is int) and -65504.0 <= fill_value <= 65504.0 and
                dt._kind == "f"):          # the common case every float dtype holds skips it
            fill_value = _fill_number("new_full", fill_value, dt)
        if size.__class__ is not tuple and size.__class__ is not list:
            size = _size_seq(size, "new_full", "size", 1)
        return _like_self(self, "full", size, fill_value, dt, device, requires_grad, "new_full")

    def new_tensor(self, data: Any, *, dtype: _DTypeLike | None = None,
                   device: _DeviceLike | None = None, requires_grad: _bool = False) -> Tensor:
        """A copy of ``data`` with this tensor's dtype and device unless given."""
        return _new_tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                                 requires_grad=requires_grad)

    # -- ops ----------------------------------------------------------------------------------------
    def clone(self, *, memory_format: Any = None) -> Tensor:
        """A copy with its own storage; differentiable. Its layout follows ``memory_format``
        (same as torch): ``preserve_format`` (None, the default) keeps a dense input's strides
        and gives another input dense strides in its stride order; ``contiguous_format``,
        ``channels_last`` (4-D) and ``channels_last_3d`` (5-D) as named (``RuntimeError`` for a
        channels-last format of another rank, ``TypeError`` for a non-``memory_format``)."""
        if memory_format is None:
            try:
                if self._stride is _CONTIG[self._shape]:
                    return _O.clone(self)      # row-major input: row-major copy, the fast path
            except KeyError:
                pass
        return _clone_as(self, memory_format)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """``self`` if laid out as ``memory_format`` asks (row-major by default), else a copy so
        laid out (same as torch; ``channels_last`` needs 4 dims, ``channels_last_3d`` 5:
        ``RuntimeError`` otherwise, and for ``preserve_format``)."""
        if memory_format is None:
            # (is_contiguous decides: a capture tensor's own reads its sizes without making the
            # graph size dependent)
            return self if self.is_contiguous() else _O.clone(self)
        return _contiguous_as(self, memory_format)

    def is_contiguous(self, memory_format: Any = None) -> _bool:
        """True when the layout is row-major dense (size-1 dimensions may have any stride), or,
        with ``memory_format=channels_last`` (``_3d``), NHWC (NDHWC) dense on a 4-D (5-D) tensor
        (same as torch; False for another rank). An empty tensor is row-major contiguous
        whatever its strides, as torch's."""
        if memory_format is None:
            shape, stride = self._shape, self._stride
            c = _CONTIG.get(shape)
            if stride is c:
                return True
            if c is not None and 1 not in shape and 0 not in shape:
                # no size-1 dim (any stride) and no empty one: row-major iff the cached
                # row-major strides, one tuple comparison (0.2 µs less than _row_major's loop)
                return stride == c
            return _row_major(shape, stride) or 0 in shape
        return _is_contiguous_as(self, memory_format)

    def resize_(self, *sizes: int | Sequence[int], memory_format: Any = None) -> Tensor:
        """Give this tensor the shape ``sizes`` in place; returns ``self`` (same as
        ``torch.Tensor.resize_``). The same shape keeps the strides; another one gives row-major
        strides over the same storage from the same offset, so the elements keep their
        row-major order while the size shrinks or stays; a larger size grows the storage (the
        new elements are uninitialised; the base and live views see the new storage). Bumps the
        version counter. ``RuntimeError`` when this tensor requires grad (also under
        ``no_grad``) or a size is negative; ``memory_format``: None or ``"contiguous_format"``
        only."""
        if memory_format is not None and str(memory_format) not in (
                "contiguous_format", "torch.contiguous_format", "tensorplay.contiguous_format"):
            raise RuntimeError(f"resize_: unsupported memory_format {memory_format!r}")
        from ._ops.copy import resize_sizes, resize_tensor
        return resize_tensor(self, resize_sizes("resize_", sizes))

    def copy_(self, other: Tensor, non_blocking: _bool = False) -> Tensor:
        """Copy ``other`` (broadcast, cast to this dtype/device) into ``self``; returns ``self``
        (same as ``torch.Tensor.copy_``, whose argument is named ``other``; ``non_blocking`` is
        accepted and the copy is synchronous). ``other`` must broadcast to this shape:
        RuntimeError otherwise, also for one of more dims (``zeros(()).copy_(ones(1))``), as
        torch, nothing written."""
        if (other.__class__ is Tensor or isinstance(other, Tensor)) and \
                len(other._shape) > len(self._shape):
            _check_copy_src(self, other)
        return _O.copy_(self, other)

    def fill_(self, value: _TensorOrScalar) -> Tensor:
        """Set every element to ``value`` (a number or 0-dim tensor); returns ``self``.

        Raises ``TypeError`` for a value that is not a number or tensor and ``RuntimeError`` when
        this tensor's dtype cannot hold it (nan/inf or out of range into integers, beyond the
        range of float16/bfloat16/float32), checked once before anything is written (same rule
        as torch). An expanded ``self`` (a stride-0 dimension of size > 1) is written with a
        number, and refused (``RuntimeError``: "more than one element of the written-to tensor
        refers to a single memory location") with a Tensor ``value``, as torch."""
        if value.__class__ is not Tensor:
            value = _check_fill("fill_", value, self._dtype)
        elif value._shape:
            _check_fill_value(value)
        return _O.fill_(self, value)

    def zero_(self) -> Tensor:
        """Set every element to zero; returns ``self``. An expanded ``self`` is written (its
        shared elements all get 0), as torch's."""
        return _O.fill_(self, 0)

    def add_(self, other: _TensorOrScalar, *, alpha: _Number = 1) -> Tensor:
        """``self += alpha * other`` in place; the result may not need a higher dtype category."""
        if alpha != 1 and isinstance(other, Tensor):
            # (before other * alpha, a fresh tensor) only where the two may share memory: the
            # same storage, or a ``.data`` alias (DataStorage) on either side; any other pair
            # has no shared storage, so check_partial_overlap would return (an optimizer's
            # update reads a gradient on storage of its own: four frames less)
            so, sd = other._storage, self._storage
            if so is sd or so.__class__ is _DataStorage or sd.__class__ is _DataStorage:
                _check_partial_overlap(self, other)
            if _scaled_add_(self, other, alpha):
                return self
        # float16/bfloat16 results: one op (never with a dimensioned float32/float64 self)
        if alpha != 1 and ((dt := self._dtype) in _LOWP or dt._kind != "f" or not self._shape) \
                and _opmath.takes_alpha(self, other, alpha):
            return _in_place(self, "add_", _opmath.add_alpha, other, alpha, "add")
        return _O.add_(self, other if alpha.__class__ is int and alpha == 1 else _times_alpha(self, other, alpha, "add"))

    def sub_(self, other: _TensorOrScalar, *, alpha: _Number = 1) -> Tensor:
        """``self -= alpha * other`` in place, with ``sub``'s promotion (a bool operand is
        refused, as torch); RuntimeError when the result's dtype cannot be cast to ``self``'s
        (``torch.can_cast``), nothing written."""
        if alpha != 1 and isinstance(other, Tensor):
            # (before other * alpha, a fresh tensor) only where the two may share memory: the
            # same storage, or a ``.data`` alias (DataStorage) on either side; any other pair
            # has no shared storage, so check_partial_overlap would return (an optimizer's
            # update reads a gradient on storage of its own: four frames less)
            so, sd = other._storage, self._storage
            if so is sd or so.__class__ is _DataStorage or sd.__class__ is _DataStorage:
                _check_partial_overlap(self, other)
            if _scaled_add_(self, other, -alpha):
                return self
        # float16/bfloat16 results: one op (never with a dimensioned float32/float64 self)
        if alpha != 1 and ((dt := self._dtype) in _LOWP or dt._kind != "f" or not self._shape) \
                and _opmath.takes_alpha(self, other, alpha):
            return _in_place(self, "sub_", _opmath.add_alpha, other, alpha, "sub")
        return _O.sub_(self, other if alpha.__class__ is int and alpha == 1 else _times_alpha(self, other, alpha, "sub"))

    def mul_(self, other: _TensorOrScalar) -> Tensor:
        """``self *= other`` in place; the result may not need a higher dtype category."""
        return _O.mul_(self, other)

    def div_(self, other: _TensorOrScalar, *, rounding_mode: str | None = None) -> Tensor:
        """``self /= other`` in place: true division, bit for bit ``div``'s value, so a floating
        ``self`` only (an integer or bool ``self`` raises RuntimeError, as torch; nothing
        written). Division by zero gives inf/nan as ``div``."""
        if rounding_mode is not None:
            return _in_place(self, "div_", _rounded_div, other, rounding_mode)
        return _O.div_(self, other)

    def floor_divide_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``floor_divide`` (``//=``); the result's dtype must cast to ``self``'s
        (RuntimeError otherwise, nothing written; same as ``torch.Tensor.floor_divide_``)."""
        return _in_place(self, "floor_divide_", _O.floor_divide, other)

    def remainder_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``remainder`` (``%=``), Python's sign rule; the result's dtype must cast to
        ``self``'s (RuntimeError otherwise; same as ``torch.Tensor.remainder_``)."""
        return _in_place(self, "remainder_", _O.remainder, other)

    def pow_(self, exponent: _TensorOrScalar) -> Tensor:
        """In-place ``pow`` (``**=``); the result's dtype must cast to ``self``'s (RuntimeError
        otherwise; same as ``torch.Tensor.pow_``)."""
        return _in_place(self, "pow_", _O.pow, exponent)

    def masked_fill_(self, mask: Tensor, value: _TensorOrScalar) -> Tensor:
        """Write ``value`` (number or 0-dim tensor) where ``mask`` (bool, broadcastable) is True;
        an expanded ``self`` (stride 0, size > 1) is written too, as torch's. A number, and a
        0-dim tensor as its number, follows ``fill_``'s rule (RuntimeError when the dtype cannot
        hold it: ``int8.masked_fill_(m, tensor(300))`` raises; a negative int into uint8
        wraps)."""
        if value.__class__ is not Tensor:
            value = _check_fill("masked_fill_", value, self._dtype)
        else:
            _check_fill_tensor("masked_fill_", value, self._dtype)
        if 0 in self._stride and _expanded(self):
            _warn_expanded_put(2, "masked_fill_")      # (torch's deprecation warning)
        return _O.masked_fill_(self, mask, value)

    def masked_fill(self, mask: Tensor, value: _TensorOrScalar) -> Tensor:
        """Out-of-place ``masked_fill_`` (differentiable in ``self`` and a tensor ``value``); the
        result has the broadcast shape of ``self`` and ``mask``, as torch's."""
        base = self
        if isinstance(mask, Tensor) and mask._shape != self._shape:
            from ._ops._shapes import broadcast_shapes
            shape = broadcast_shapes(tuple(self._shape), tuple(mask._shape), api="masked_fill")
            if shape != tuple(self._shape):
                base = self.expand(*shape)    # (a mask wider than self: NumPy's error before)
        if value.__class__ is not Tensor:
            value = _check_fill("masked_fill", value, self._dtype)
        else:
            _check_fill_tensor("masked_fill", value, self._dtype)
        return _O.masked_fill_(_O.clone(base), mask, value)

    def index_add(self, dim: _int, index: Tensor, source: Tensor, *,
                  alpha: _Number = 1) -> Tensor:
        """``self`` with ``alpha * source`` added at the positions ``index`` (1-d int64) along
        ``dim``; repeated indices accumulate (``torch.Tensor.index_add``). Differentiable in
        ``self`` and ``source``."""
        # alpha * source in source's dtype with torch's checks (bool: bool(alpha); a float alpha
        # with integers refused), so the same-dtype rule of index_add holds for the product
        return _O.index_add(self, dim, index, source if alpha == 1 and alpha is not True else
                            _times_alpha(source, source, alpha, "index_add"))

    def index_add_(self, dim: _int, index: Tensor, source: Tensor, *,
                   alpha: _Number = 1) -> Tensor:
        """In-place ``index_add``; returns ``self`` (same as ``torch.Tensor.index_add_``). An
        ``index`` or ``source`` sharing memory with ``self`` is refused (RuntimeError, torch's
        ``assert_no_overlap``: ``x.index_add_(0, i, x)`` too)."""
        _no_overlap(self, index, source)
        return _named("index_add_", _O.copy_, self, self.index_add(dim, index, source, alpha=alpha))

    def clamp_(self, min: _TensorOrScalar | None = None,
               max: _TensorOrScalar | None = None) -> Tensor:
        """In-place ``clamp``; a bound that makes the result floating is refused for an integer
        ``self`` (RuntimeError, as torch)."""
        return _in_place(self, "clamp_", Tensor.clamp, min, max)

    def clamp_min(self, min: _TensorOrScalar) -> Tensor:
        """``clamp(min=min)``: the elementwise maximum with a number or tensor bound, promoted
        as ``clamp`` (same as ``torch.Tensor.clamp_min``); ``None`` raises ``TypeError``."""
        return _surface.clamp_min(self, min)

    def clamp_max(self, max: _TensorOrScalar) -> Tensor:
        """``clamp(max=max)`` (same as ``torch.Tensor.clamp_max``); ``None`` raises
        ``TypeError``."""
        return _surface.clamp_max(self, max)

    def clamp_min_(self, min: _TensorOrScalar) -> Tensor:
        """In-place ``clamp_min``; returns ``self``. A bound that makes the result floating is
        refused for an integer ``self`` (RuntimeError, nothing written; same as
        ``torch.Tensor.clamp_min_``)."""
        return _in_place(self, "clamp_min_", _surface.clamp_min, min)

    def clamp_max_(self, max: _TensorOrScalar) -> Tensor:
        """In-place ``clamp_max``, as ``clamp_min_`` (same as ``torch.Tensor.clamp_max_``)."""
        return _in_place(self, "clamp_max_", _surface.clamp_max, max)

    def clip_(self, min: _TensorOrScalar | None = None,
              max: _TensorOrScalar | None = None) -> Tensor:
        """Alias of ``clamp_`` (same as ``torch.Tensor.clip_``)."""
        return _in_place(self, "clip_", Tensor.clamp, min, max)

    def logical_and(self, other: Tensor) -> Tensor:
        """Elementwise ``bool(self) and bool(other)`` with broadcasting, any dtypes; a bool
        tensor (same as ``torch.Tensor.logical_and``)."""
        return _O.logical_and(self, other)

    def logical_or(self, other: Tensor) -> Tensor:
        """Elementwise ``bool(self) or bool(other)``; a bool tensor (``torch.Tensor.logical_or``)."""
        return _O.logical_or(self, other)

    def logical_xor(self, other: Tensor) -> Tensor:
        """Elementwise ``bool(self) != bool(other)``; a bool tensor (``torch.Tensor.logical_xor``)."""
        return _surface.logical_xor(self, other)

    def logical_not(self) -> Tensor:
        """Elementwise ``not bool(self)``; a bool tensor (``torch.Tensor.logical_not``)."""
        return _O.logical_not(self)

    def logical_and_(self, other: Tensor) -> Tensor:
        """In-place ``logical_and``: the truth values written in ``self``'s dtype (1/0 in a
        float tensor); returns ``self`` (same as ``torch.Tensor.logical_and_``)."""
        return _in_place(self, "logical_and_", _O.logical_and, other)

    def logical_or_(self, other: Tensor) -> Tensor:
        """In-place ``logical_or``, as ``logical_and_``."""
        return _in_place(self, "logical_or_", _O.logical_or, other)

    def logical_xor_(self, other: Tensor) -> Tensor:
        """In-place ``logical_xor``, as ``logical_and_``."""
        return _in_place(self, "logical_xor_", _surface.logical_xor, other)

    def logical_not_(self) -> Tensor:
        """In-place ``logical_not``, as ``logical_and_``."""
        return _in_place(self, "logical_not_", _O.logical_not)

    def relu_(self) -> Tensor:
        """In-place ``relu``."""
        return _named("relu_", _O.copy_, self, _O.relu(self))

    # In-place forms of the unary ops (torch's ``Tensor.<op>_``): the out-of-place op's value
    # written into ``self`` (``_in_place``: returns ``self``, bumps its version, differentiable,
    # an integer ``self`` refuses a floating result with RuntimeError before writing).

    def neg_(self) -> Tensor:
        """In-place ``neg``; returns ``self`` (same as ``torch.Tensor.neg_``)."""
        return _in_place(self, "neg_", _O.neg)

    def abs_(self) -> Tensor:
        """In-place ``abs``; returns ``self`` (same as ``torch.Tensor.abs_``)."""
        return _in_place(self, "abs_", _O.abs)

    def exp_(self) -> Tensor:
        """In-place ``exp``; returns ``self`` (same as ``torch.Tensor.exp_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "exp_", _O.exp)

    def log_(self) -> Tensor:
        """In-place ``log``; returns ``self`` (same as ``torch.Tensor.log_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "log_", _O.log)

    def sqrt_(self) -> Tensor:
        """In-place ``sqrt``; returns ``self`` (same as ``torch.Tensor.sqrt_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "sqrt_", _O.sqrt)

    def rsqrt_(self) -> Tensor:
        """In-place ``rsqrt``; returns ``self`` (same as ``torch.Tensor.rsqrt_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "rsqrt_", _O.rsqrt)

    def sin_(self) -> Tensor:
        """In-place ``sin``; returns ``self`` (same as ``torch.Tensor.sin_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "sin_", _O.sin)

    def cos_(self) -> Tensor:
        """In-place ``cos``; returns ``self`` (same as ``torch.Tensor.cos_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "cos_", _O.cos)

    def tanh_(self) -> Tensor:
        """In-place ``tanh``; returns ``self`` (same as ``torch.Tensor.tanh_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "tanh_", _O.tanh)

    def sigmoid_(self) -> Tensor:
        """In-place ``sigmoid``; returns ``self`` (same as ``torch.Tensor.sigmoid_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "sigmoid_", _O.sigmoid)

    def erf_(self) -> Tensor:
        """In-place ``erf``; returns ``self`` (same as ``torch.Tensor.erf_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "erf_", _O.erf)

    def floor_(self) -> Tensor:
        """In-place ``floor``; returns ``self`` (same as ``torch.Tensor.floor_``)."""
        return _in_place(self, "floor_", _O.floor)

    def ceil_(self) -> Tensor:
        """In-place ``ceil``; returns ``self`` (same as ``torch.Tensor.ceil_``)."""
        return _in_place(self, "ceil_", _O.ceil)

    def reciprocal_(self) -> Tensor:
        """In-place ``reciprocal``; returns ``self`` (same as ``torch.Tensor.reciprocal_``). An integer or bool ``self`` raises RuntimeError (a floating result cannot be cast
        into it), nothing written."""
        return _in_place(self, "reciprocal_", Tensor.reciprocal)

    def sign_(self) -> Tensor:
        """In-place ``sign``; returns ``self`` (same as ``torch.Tensor.sign_``)."""
        return _in_place(self, "sign_", _O.sign)

    def square_(self) -> Tensor:
        """In-place ``square``; returns ``self`` (same as ``torch.Tensor.square_``)."""
        return _in_place(self, "square_", Tensor.square)

    def round_(self, *, decimals: _int = 0) -> Tensor:
        """In-place ``round`` (halves to even, ``decimals`` places); returns ``self`` (same as
        ``torch.Tensor.round_``)."""
        return _in_place(self, "round_", _round_decimals, decimals)

    def __add__(self, other: _TensorOrScalar) -> Tensor:
        return _O.add(self, other)

    def __radd__(self, other: _TensorOrScalar) -> Tensor:
        return _O.add(self, other)

    def __iadd__(self, other: _TensorOrScalar) -> Tensor:
        return _O.add_(self, other)

    def __sub__(self, other: _TensorOrScalar) -> Tensor:
        return _O.sub(self, other)

    def __rsub__(self, other: _TensorOrScalar) -> Tensor:
        return _O.rsub(self, other)

    def __isub__(self, other: _TensorOrScalar) -> Tensor:
        return _O.sub_(self, other)

    def __mul__(self, other: _TensorOrScalar) -> Tensor:
        return _O.mul(self, other)

    def __rmul__(self, other: _TensorOrScalar) -> Tensor:
        return _O.mul(self, other)

    def __imul__(self, other: _TensorOrScalar) -> Tensor:
        return _O.mul_(self, other)

    def __truediv__(self, other: _TensorOrScalar) -> Tensor:
        return _O.div(self, other)

    def __rtruediv__(self, other: _TensorOrScalar) -> Tensor:
        return _O.rdiv(self, other)

    def __itruediv__(self, other: _TensorOrScalar) -> Tensor:
        return _O.div_(self, other)

    def __floordiv__(self, other: _TensorOrScalar) -> Tensor:
        return _O.floor_divide(self, other)

    def __ifloordiv__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "floor_divide_", _O.floor_divide, other)

    def __rfloordiv__(self, other: _Number) -> Tensor:
        """``other // self`` for a Python number ``other`` (``torch.Tensor.__rfloordiv__``): the
        number is weak, as on the right (``7 // tensor(3, int8)`` is int8), cast to the result
        dtype (integers wrap: ``-3 // tensor(3, uint8)`` is ``253 // 3``)."""
        s = self._number_operand(other)
        return NotImplemented if s is NotImplemented else _O.floor_divide(s, self)

    def __mod__(self, other: _TensorOrScalar) -> Tensor:
        return _O.remainder(self, other)

    def __imod__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "remainder_", _O.remainder, other)

    def __rmod__(self, other: _Number) -> Tensor:
        """``other % self`` for a Python number ``other`` (``torch.Tensor.__rmod__``), the number
        promoted and cast as in ``__rfloordiv__``."""
        s = self._number_operand(other)
        return NotImplemented if s is NotImplemented else _O.remainder(s, self)

    def _scalar_tensor(self, value: Any) -> Any:
        """A 0-dim tensor for a Python number on this tensor's device (fake/captured alike);
        0-dim tensors take part in promotion exactly like Python numbers do."""
        if not isinstance(value, (int, float)):
            return NotImplemented
        dt = _dtype.bool if isinstance(value, bool) else _dtype.int64 if isinstance(
            value, int) else _dtype.get_default_dtype()
        return _like_self(self, "full", [], value, dt, None, False)

    def __pow__(self, other: _TensorOrScalar) -> Tensor:
        return _O.pow(self, other)

    def __ipow__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "pow_", _O.pow, other)

    def __rpow__(self, other: _TensorOrScalar) -> Tensor:
        return _O.rpow(self, other)

    def __neg__(self) -> Tensor:
        return _O.neg(self)

    def __pos__(self) -> Tensor:
        if self._dtype is _dtype.bool:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def __abs__(self) -> Tensor:
        return _O.abs(self)

    def __matmul__(self, other: Tensor) -> Tensor:
        return _O.matmul(self, other)

    def __rmatmul__(self, other: Tensor) -> Tensor:
        return _O.matmul(other, self)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        if other.__class__ is not Tensor and not isinstance(other, (Tensor, int, float)):
            other = _as_number(other)       # a NumPy scalar: the number torch reads it as
            if not isinstance(other, (int, float)):
                return NotImplemented     # `t == None` is False, as in torch (identity fallback)
        return _O.eq(self, other)

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        if other.__class__ is not Tensor and not isinstance(other, (Tensor, int, float)):
            other = _as_number(other)       # a NumPy scalar: the number torch reads it as
            if not isinstance(other, (int, float)):
                return NotImplemented
        return _O.ne(self, other)

    def __lt__(self, other: _TensorOrScalar) -> Tensor:
        return _O.lt(self, other)

    def __le__(self, other: _TensorOrScalar) -> Tensor:
        return _O.le(self, other)

    def __gt__(self, other: _TensorOrScalar) -> Tensor:
        return _O.gt(self, other)

    def __ge__(self, other: _TensorOrScalar) -> Tensor:
        return _O.ge(self, other)

    # bitwise operators, as torch's: integer and bool tensors (on bool, the logical ops); the
    # in-place forms write self (a result of a higher dtype category is refused)
    def __and__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_and(self, other)

    def __rand__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_and(self, other)

    def __iand__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "bitwise_and_", _O.bitwise_and, other)

    def __or__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_or(self, other)

    def __ror__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_or(self, other)

    def __ior__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "bitwise_or_", _O.bitwise_or, other)

    def __xor__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_xor(self, other)

    def __rxor__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_xor(self, other)

    def __ixor__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "bitwise_xor_", _O.bitwise_xor, other)

    def __invert__(self) -> Tensor:
        return _O.bitwise_not(self)

    def __lshift__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_left_shift(self, other)

    def __rlshift__(self, other: _Number) -> Tensor:
        """``other << self`` for a Python number ``other`` (``torch.Tensor.__rlshift__``): the
        number takes part in promotion as torch's wrapped scalars do (an integer tensor keeps its
        dtype, 0-dim or not; a bool tensor gives int64) and is cast to that dtype, wrapping."""
        s = self._number_operand(other)
        return NotImplemented if s is NotImplemented else _O.bitwise_left_shift(s, self)

    def __ilshift__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "bitwise_left_shift_", _O.bitwise_left_shift, other)

    def __rshift__(self, other: _TensorOrScalar) -> Tensor:
        return _O.bitwise_right_shift(self, other)

    def __rrshift__(self, other: _Number) -> Tensor:
        """``other >> self`` for a Python number ``other`` (``torch.Tensor.__rrshift__``), the
        number promoted and cast as in ``__rlshift__``."""
        s = self._number_operand(other)
        return NotImplemented if s is NotImplemented else _O.bitwise_right_shift(s, self)

    def __irshift__(self, other: _TensorOrScalar) -> Tensor:
        return _in_place(self, "bitwise_right_shift_", _O.bitwise_right_shift, other)

    def _number_operand(self, value: Any) -> Any:
        """The Python number ``value`` as the left operand of a binary op with this tensor: a
        0-dim tensor on this tensor's device of the dtype torch's promotion gives the pair (a
        number does not promote a tensor of its category or above, 0-dim or not), ``value`` cast
        to it (integers wrap). ``NotImplemented`` for anything but a number."""
        s = self._scalar_tensor(value)
        if s is NotImplemented:
            return s
        dt = _result_dtype(value, self)
        return s if s._dtype is dt else _O.to_dtype(s, dt)

    def bitwise_and(self, other: _TensorOrScalar) -> Tensor:
        """``self & other`` elementwise with broadcasting and torch's promotion, on integer and
        bool tensors (logical AND on bool); ``other`` may be a Python int or bool. Floating
        operands raise ``RuntimeError``. Same as ``torch.Tensor.bitwise_and``."""
        return _O.bitwise_and(self, other)

    def bitwise_or(self, other: _TensorOrScalar) -> Tensor:
        """``self | other`` (integer and bool tensors; logical OR on bool), as
        ``bitwise_and``. Same as ``torch.Tensor.bitwise_or``."""
        return _O.bitwise_or(self, other)

    def bitwise_xor(self, other: _TensorOrScalar) -> Tensor:
        """``self ^ other`` (integer and bool tensors; logical XOR on bool), as
        ``bitwise_and``. Same as ``torch.Tensor.bitwise_xor``."""
        return _O.bitwise_xor(self, other)

    def bitwise_not(self) -> Tensor:
        """``~self`` elementwise, same dtype and shape (logical NOT on bool); floating tensors
        raise ``RuntimeError``. Same as ``torch.Tensor.bitwise_not``."""
        return _O.bitwise_not(self)

    def bitwise_left_shift(self, other: _TensorOrScalar) -> Tensor:
        """``self << other`` elementwise with broadcasting and torch's promotion, on integer
        tensors (the result wraps in its dtype); an amount outside ``[0, bits)`` gives 0.
        Floating or bool result dtypes raise ``RuntimeError``. Same as
        ``torch.Tensor.bitwise_left_shift``."""
        return _O.bitwise_left_shift(self, other)

    def bitwise_right_shift(self, other: _TensorOrScalar) -> Tensor:
        """``self >> other`` (arithmetic for signed dtypes) on integer tensors, as
        ``bitwise_left_shift``; an amount outside ``[0, bits)`` gives the sign (-1 or 0; 0 for
        uint8). Same as ``torch.Tensor.bitwise_right_shift``."""
        return _O.bitwise_right_shift(self, other)

    def bitwise_and_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``bitwise_and`` (``self &= other``); returns ``self``. The result is cast to
        ``self``'s dtype; one of a higher category (a bool ``self`` with an integer ``other``)
        raises ``RuntimeError``, as does a broadcast shape other than ``self``'s. Same as
        ``torch.Tensor.bitwise_and_``."""
        return _in_place(self, "bitwise_and_", _O.bitwise_and, other)

    def bitwise_or_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``bitwise_or`` (``self |= other``), as ``bitwise_and_``."""
        return _in_place(self, "bitwise_or_", _O.bitwise_or, other)

    def bitwise_xor_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``bitwise_xor`` (``self ^= other``), as ``bitwise_and_``."""
        return _in_place(self, "bitwise_xor_", _O.bitwise_xor, other)

    def bitwise_not_(self) -> Tensor:
        """In-place ``bitwise_not``; returns ``self``. Same as ``torch.Tensor.bitwise_not_``."""
        return _named("bitwise_not_", _O.copy_, self, _O.bitwise_not(self))

    def bitwise_left_shift_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``bitwise_left_shift`` (``self <<= other``), as ``bitwise_and_``."""
        return _in_place(self, "bitwise_left_shift_", _O.bitwise_left_shift, other)

    def bitwise_right_shift_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``bitwise_right_shift`` (``self >>= other``), as ``bitwise_and_``."""
        return _in_place(self, "bitwise_right_shift_", _O.bitwise_right_shift, other)

    def __getitem__(self, index: Any) -> Tensor:
        if index.__class__ is int and self._shape:
            return _O.select(self, 0, index)      # x[i]: _getitem's first fast path, inline
        return _getitem(self, index)

    def __setitem__(self, index: Any, value: _TensorOrScalar) -> None:
        """``self[index] = value``, torch's rules. A bool mask of ``self``'s full shape with a
        tensor ``value`` of 1 or more dims takes one value per True element, in order (``value``
        broadcasts to ``(mask.sum(),)``; RuntimeError otherwise), as torch's ``x[mask] = v``."""
        try:
            _setitem(self, index, value)
        except _OverlapError as e:      # x.expand(3)[:] = v: named as the write, not copy_
            raise e.named("__setitem__") if e.who == "copy_" else e from None

    def add(self, other: _TensorOrScalar, *, alpha: _Number = 1) -> Tensor:
        """``self + alpha * other`` with broadcasting and torch's dtype promotion."""
        # float16/bfloat16 results: one op (never with a dimensioned float32/float64 self)
        if alpha != 1 and ((dt := self._dtype) in _LOWP or dt._kind != "f" or not self._shape) \
                and _opmath.takes_alpha(self, other, alpha):
            return _opmath.add_alpha(self, other, alpha, "add")
        return _O.add(self, other if alpha.__class__ is int and alpha == 1 else _times_alpha(self, other, alpha, "add"))

    def sub(self, other: _TensorOrScalar, *, alpha: _Number = 1) -> Tensor:
        """``self - alpha * other``."""
        # float16/bfloat16 results: one op (never with a dimensioned float32/float64 self)
        if alpha != 1 and ((dt := self._dtype) in _LOWP or dt._kind != "f" or not self._shape) \
                and _opmath.takes_alpha(self, other, alpha):
            return _opmath.add_alpha(self, other, alpha, "sub")
        return _O.sub(self, other if alpha.__class__ is int and alpha == 1 else _times_alpha(self, other, alpha, "sub"))

    def mul(self, other: _TensorOrScalar) -> Tensor:
        """``self * other``."""
        return _O.mul(self, other)

    def div(self, other: _TensorOrScalar, *, rounding_mode: str | None = None) -> Tensor:
        """``self / other`` as ``torch.div``: ``rounding_mode=None`` true division (integer
        inputs give the default float dtype); ``"floor"`` rounds down (``floor_divide``);
        ``"trunc"`` rounds toward zero (C's integer division; integer inputs keep an integer
        dtype, and a number or 0-dim divisor is first converted to it, wrapping as torch's:
        uint8 divided by -3 divides by 253). RuntimeError for any other mode."""
        if rounding_mode is None:
            return _O.div(self, other)
        return _rounded_div(self, other, rounding_mode)

    def floor_divide(self, other: _TensorOrScalar) -> Tensor:
        """``self // other``: floor of the quotient (Python's sign convention)."""
        return _O.floor_divide(self, other)

    def remainder(self, other: _TensorOrScalar) -> Tensor:
        """``self % other``: a non-zero remainder has the sign of ``other`` (Python's), a zero
        one the sign of ``self`` (torch's kernel: ``-4. % 2.`` is -0.0)."""
        return _O.remainder(self, other)

    def pow(self, exponent: _TensorOrScalar) -> Tensor:
        """``self ** exponent`` (tensor or number)."""
        return _O.pow(self, exponent)

    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product with numpy/torch semantics for 1-D, 2-D and batched operands."""
        return _O.matmul(self, other)

    def exp(self) -> Tensor:
        """Elementwise ``e ** x`` (integer inputs give the default float dtype)."""
        return _O.exp(self)

    def log(self) -> Tensor:
        """Elementwise natural logarithm."""
        return _O.log(self)

    def sqrt(self) -> Tensor:
        """Elementwise square root."""
        return _O.sqrt(self)

    def rsqrt(self) -> Tensor:
        """Elementwise ``1 / sqrt(x)``."""
        return _O.rsqrt(self)

    def tanh(self) -> Tensor:
        """Elementwise hyperbolic tangent."""
        return _O.tanh(self)

    def sigmoid(self) -> Tensor:
        """Elementwise logistic function ``1 / (1 + exp(-x))``."""
        return _O.sigmoid(self)

    def relu(self) -> Tensor:
        """Elementwise ``max(x, 0)`` (keeps the dtype)."""
        return _O.relu(self)

    def abs(self) -> Tensor:
        """Elementwise absolute value (keeps the dtype)."""
        return _O.abs(self)

    def neg(self) -> Tensor:
        """Elementwise negation."""
        return _O.neg(self)

    def sin(self) -> Tensor:
        """Elementwise sine."""
        return _O.sin(self)

    def cos(self) -> Tensor:
        """Elementwise cosine."""
        return _O.cos(self)

    def erf(self) -> Tensor:
        """Elementwise Gauss error function."""
        return _O.erf(self)

    def square(self) -> Tensor:
        """``self * self``; a bool tensor gives int64 (torch's ``pow(self, 2)``)."""
        if self._dtype is _dtype.bool:
            return _O.pow(self, 2)
        return _O.mul(self, self)

    def maximum(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise maximum with broadcasting (ties split the gradient evenly)."""
        return _O.maximum(self, other)

    def minimum(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise minimum with broadcasting."""
        return _O.minimum(self, other)

    def clamp(self, min: _TensorOrScalar | None = None,
              max: _TensorOrScalar | None = None) -> Tensor:
        """Limit values to ``[min, max]`` (either bound may be None, not both: RuntimeError,
        as ``torch.clamp``); the result's dtype is promoted with the bounds as ``maximum`` /
        ``minimum`` do."""
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if min.__class__ not in _PLAIN_BOUNDS:
            min = _as_number(min)           # a NumPy scalar: the number torch reads it as
        if max.__class__ not in _PLAIN_BOUNDS:
            max = _as_number(max)
        if self._dtype is _dtype.bool and all(
                b is None or b.__class__ is bool or isinstance(b, Tensor) and b._dtype is
                _dtype.bool for b in (min, max)) and (
                min is not None and max is not None or
                not isinstance(min if max is None else max, Tensor)):
            # torch computes a bool clamp only as clamp_min/clamp_max by one bool tensor bound
            raise NotImplementedError("clamp: not implemented for 'Bool' with a number bound or "
                                      "both bounds (as in torch); cast first, e.g. x.int()")
        if self._dtype._kind != "b":
            # a number bound is converted to self's dtype when the result keeps it (an integer
            # bound of an integer tensor, any number of a floating one): torch's checked
            # conversion ("value cannot be converted to type int8_t without overflow")
            for b in (min, max):
                if b.__class__ is int or b.__class__ is float and self._dtype._kind == "f":
                    _check_fill("clamp", b, self._dtype)
        out = self
        if min is not None:
            out = _O.maximum(out, min)
        if max is not None:
            out = _O.minimum(out, max)
        if out._requires_grad and (isinstance(min, Tensor) or isinstance(max, Tensor)):
            # torch's gradients at the bounds (maximum/minimum share a tie with the bound)
            from ._ops.nn import clamp_with_torch_gradients
            return clamp_with_torch_gradients(self, min, max, out)
        return out

    clip = clamp

    def where(self, condition: Tensor, other: _TensorOrScalar) -> Tensor:
        """``condition ? self : other`` elementwise, as ``torch.Tensor.where``."""
        if other.__class__ is int and self._dtype._kind in "iu":
            _where_int_in_range(self, other)     # checked conversion, as tensorplay.where
        return _O.where(condition, self, other)

    def sum(self, dim: _Dims = _NO_DIM, keepdim: _bool = _NO_KEEPDIM, *,
            dtype: _DTypeLike | None = None,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Sum over ``dim`` (int, sequence, or all when None); ints and bools sum to int64.

        ``axis=``/``keepdims=`` are torch's NumPy spellings of ``dim``/``keepdim``, taken by
        every reduction method here (sum, mean, prod, amax, amin, max, min, argmax, argmin,
        all, any, var, std, nansum, nanmean, count_nonzero); TypeError when a value comes
        both ways. ``keepdim`` without ``dim`` is a TypeError (same as ``torch.Tensor.sum``,
        whose full sum takes none); ``dim=None`` with it is the sum of all elements."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("sum", dim, keepdim, axis, keepdims)
        if keepdim is _NO_KEEPDIM:      # (inline: the common calls pay two tests)
            keepdim = False
            if dim is _NO_DIM:
                dim = None
        elif dim is _NO_DIM:
            _keepdim_without_dim("sum", dim, keepdim, True)
        # (one int dim or None, the common calls, without _dims' frame)
        dims = [dim] if dim.__class__ is int else None if dim is None else _dims(dim, "sum")
        if dtype is None:
            # (no keyword argument: an op object's call then builds no keyword dict)
            return _O.sum(self, dims, keepdim)
        return _O.sum(self, dims, keepdim, dtype=_dtype.as_dtype(dtype))

    def mean(self, dim: _Dims = _NO_DIM, keepdim: _bool = _NO_KEEPDIM, *,
             dtype: _DTypeLike | None = None,
             axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Mean over ``dim``; floating inputs (or ``dtype=``) only, as ``torch.mean``;
        ``keepdim`` without ``dim``: TypeError (``sum``'s rule)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("mean", dim, keepdim, axis, keepdims)
        if keepdim is _NO_KEEPDIM:      # (inline: the common calls pay two tests)
            keepdim = False
            if dim is _NO_DIM:
                dim = None
        elif dim is _NO_DIM:
            _keepdim_without_dim("mean", dim, keepdim, True)
        dims = [dim] if dim.__class__ is int else None if dim is None else _dims(dim, "mean")
        if dtype is None:
            # (no keyword argument: an op object's call then builds no keyword dict)
            return _O.mean(self, dims, keepdim)
        return _O.mean(self, dims, keepdim, dtype=_dtype.as_dtype(dtype))

    def amax(self, dim: _Dims = None, keepdim: _bool = False, *,
             axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Maximum over ``dim`` (all dims when None); the gradient is split among ties."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("amax", dim, keepdim, axis, keepdims)
        return _O.amax(self, _dims(dim, "amax") or [], keepdim)

    def amin(self, dim: _Dims = None, keepdim: _bool = False, *,
             axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Minimum over ``dim`` (all dims when None)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("amin", dim, keepdim, axis, keepdims)
        return _O.amin(self, _dims(dim, "amin") or [], keepdim)

    @overload
    def max(self) -> Tensor: ...
    @overload
    def max(self, dim: Tensor) -> Tensor: ...
    @overload
    def max(self, dim: _int, keepdim: _bool = False) -> _rt.max: ...
    @overload
    def max(self, *, axis: _int, keepdims: _bool = False) -> _rt.max: ...
    def max(self, dim_or_other: _int | Tensor | None = _NO_DIM, /,
            keepdim: _bool = _NO_KEEPDIM, *, dim: _int | None = _NO_DIM,
            other: Tensor | None = None,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor | _rt.max:
        """Maximum of all elements (a 0-dim tensor), or along ``dim`` the named tuple
        ``(values, indices)`` (``tensorplay.return_types.max``), as ``torch.Tensor.max``; with a
        Tensor ``dim`` (``x.max(other)``), the elementwise maximum. The gradient of the values
        goes to the selected index; that of the maximum of all elements is shared evenly among
        the elements equal to it (the NaN elements when it is NaN), zeros elsewhere even under
        an infinite or NaN incoming gradient (torch's on cpu; ``amax``'s gives NaN there). Empty inputs: torch's ``RuntimeError``/``IndexError``.
        ``other=`` (torch's keyword of the elementwise form) is ``x.max(other)``. ``keepdim``
        without ``dim``, or ``dim=None``: TypeError (torch's overloads)."""
        if dim is not _NO_DIM or keepdim is not _NO_KEEPDIM:
            # a keyword dim, or a keepdim: the dim overload, a tensor is the dim (torch's)
            dim = _dim_overload("max", dim_or_other, dim)
        else:
            dim = dim_or_other
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("max", dim, keepdim, axis, keepdims)
        if dim is _NO_DIM or dim is None or keepdim is _NO_KEEPDIM:
            # (torch's rule: keepdim needs dim, and no dim=None)
            dim, keepdim = _keepdim_without_dim("max", dim, keepdim, False)
        if other is not None:
            return _O.maximum(self, other)
        if dim is None:    # (no history: amax's call itself, no extra frame)
            try:
                return (_extreme_all(self, True) if self._requires_grad else
                        _O.amax(self, [], False))
            except RuntimeError as e:   # (a try costs nothing until it catches)
                raise _as_api(e, "amax()", "max()") from None
        if isinstance(dim, Tensor):
            return _O.maximum(self, dim)
        from . import return_types
        return return_types.max(*_O.max(self, dim, keepdim))

    @overload
    def min(self) -> Tensor: ...
    @overload
    def min(self, dim: Tensor) -> Tensor: ...
    @overload
    def min(self, dim: _int, keepdim: _bool = False) -> _rt.min: ...
    @overload
    def min(self, *, axis: _int, keepdims: _bool = False) -> _rt.min: ...
    def min(self, dim_or_other: _int | Tensor | None = _NO_DIM, /,
            keepdim: _bool = _NO_KEEPDIM, *, dim: _int | None = _NO_DIM,
            other: Tensor | None = None,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor | _rt.min:
        """Minimum of all elements, or ``(values, indices)`` along ``dim``
        (``tensorplay.return_types.min``), as ``torch.Tensor.min``; see ``max``."""
        if dim is not _NO_DIM or keepdim is not _NO_KEEPDIM:
            # a keyword dim, or a keepdim: the dim overload, a tensor is the dim (torch's)
            dim = _dim_overload("min", dim_or_other, dim)
        else:
            dim = dim_or_other
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("min", dim, keepdim, axis, keepdims)
        if dim is _NO_DIM or dim is None or keepdim is _NO_KEEPDIM:
            # (torch's rule: keepdim needs dim, and no dim=None)
            dim, keepdim = _keepdim_without_dim("min", dim, keepdim, False)
        if other is not None:
            return _O.minimum(self, other)
        if dim is None:    # (no history: amax's call itself, no extra frame)
            try:
                return (_extreme_all(self, False) if self._requires_grad else
                        _O.amin(self, [], False))
            except RuntimeError as e:   # (a try costs nothing until it catches)
                raise _as_api(e, "amin()", "min()") from None
        if isinstance(dim, Tensor):
            return _O.minimum(self, dim)
        from . import return_types
        return return_types.min(*_O.min(self, dim, keepdim))

    def argmax(self, dim: _int | None = None, keepdim: _bool = False, *,
               axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Index of the maximum (of the flattened tensor when ``dim`` is None); int64."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("argmax", dim, keepdim, axis, keepdims)
        if dim is not None and dim.__class__ is not int:
            dim = _index_dim(dim, "argmax(): ")      # (its TypeError names argmax)
        return _O.argmax(self, dim, keepdim)

    def argmin(self, dim: _int | None = None, keepdim: _bool = False, *,
               axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Index of the minimum (of the flattened tensor when ``dim`` is None); int64."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("argmin", dim, keepdim, axis, keepdims)
        if dim is not None and dim.__class__ is not int:
            dim = _index_dim(dim, "argmin(): ")
        return _O.argmin(self, dim, keepdim)

    def all(self, dim: _Dims = None, keepdim: _bool = False, *,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """True where every element (over ``dim``, or all) is non-zero; a bool tensor, or a
        uint8 one (1/0) for a uint8 ``self`` (same as ``torch.Tensor.all``)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("all", dim, keepdim, axis, keepdims)
        return _O.all(self, _int_or_dims(dim, "all"), keepdim)

    def any(self, dim: _Dims = None, keepdim: _bool = False, *,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """True where some element (over ``dim``, or all) is non-zero; a bool tensor, or a
        uint8 one (1/0) for a uint8 ``self`` (same as ``torch.Tensor.any``)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("any", dim, keepdim, axis, keepdims)
        return _O.any(self, _int_or_dims(dim, "any"), keepdim)

    def prod(self, dim: _Dims = _NO_DIM, keepdim: _bool = _NO_KEEPDIM, *,
             dtype: _DTypeLike | None = None,
             axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Product over ``dim`` (an int, or all elements when not given); ints and bools give
        int64. The gradient is exact with zeros among the inputs (as torch). ``keepdim``
        without ``dim``, or ``dim=None``: TypeError (same as ``torch.Tensor.prod``)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("prod", dim, keepdim, axis, keepdims)
        if dim is _NO_DIM or dim is None or keepdim is _NO_KEEPDIM:
            dim, keepdim = _keepdim_without_dim("prod", dim, keepdim, False)
        # (torch's prod takes one int dim: no tuple, no tensor([1]))
        return _O.prod(self, None if dim is None else
                       [dim if dim.__class__ is int else _index_dim(dim, "prod(): ")], keepdim,
                       dtype=_dtype.as_dtype(dtype) if dtype is not None else None)

    def cumsum(self, dim: _int, *, dtype: _DTypeLike | None = None) -> Tensor:
        """Cumulative sum along ``dim``; ints and bools give int64 (as ``torch.cumsum``).
        NotImplementedError for ``dtype=bool`` (torch has no bool cumsum)."""
        if dtype is not None:
            dtype = _dtype.as_dtype(dtype)
            if dtype is _dtype.bool:
                raise _no_bool_scan("cumsum")
        return _O.cumsum(self, dim, dtype=dtype)

    # -- forms of session 45's tensorplay functions (h-funcs45; the rules are theirs) -----------
    def signbit(self) -> Tensor:
        """Same as ``torch.Tensor.signbit`` (``tensorplay.signbit``)."""
        return _surface.signbit(self)

    def kron(self, other: Tensor) -> Tensor:
        """Same as ``torch.Tensor.kron`` (``tensorplay.kron``)."""
        return _surface.kron(self, other)

    def unique_consecutive(self, return_inverse: _bool = False, return_counts: _bool = False,
                           dim: _int | None = None) -> Any:
        """Same as ``torch.Tensor.unique_consecutive`` (``tensorplay.unique_consecutive``)."""
        return _surface.unique_consecutive(self, return_inverse, return_counts, dim)

    def select_scatter(self, src: Tensor, dim: _int, index: _int) -> Tensor:
        """Same as ``torch.Tensor.select_scatter`` (``tensorplay.select_scatter``)."""
        return _surface.select_scatter(self, src, dim, index)

    def slice_scatter(self, src: Tensor, dim: _int = 0, start: _int | None = None,
                      end: _int | None = None, step: _int = 1) -> Tensor:
        """Same as ``torch.Tensor.slice_scatter`` (``tensorplay.slice_scatter``)."""
        return _surface.slice_scatter(self, src, dim, start, end, step)

    def diagonal_scatter(self, src: Tensor, offset: _int = 0, dim1: _int = 0,
                         dim2: _int = 1) -> Tensor:
        """Same as ``torch.Tensor.diagonal_scatter`` (``tensorplay.diagonal_scatter``)."""
        return _surface.diagonal_scatter(self, src, offset, dim1, dim2)

    # -- forms of session 46's tensorplay functions (h-ops46; the rules are theirs) ---------------
    def histc(self, bins: _int = 100, min: _Number = 0, max: _Number = 0) -> Tensor:  # noqa: A002
        """Same as ``torch.Tensor.histc`` (``tensorplay.histc``)."""
        return _surface.histc(self, bins, min, max)

    def histogram(self, bins: Any, *, range: Any = None, weight: Tensor | None = None,  # noqa: A002
                  density: _bool = False) -> Any:
        """Same as ``torch.Tensor.histogram`` (``tensorplay.histogram``)."""
        return _surface.histogram(self, bins, range=range, weight=weight, density=density)

    def cov(self, *, correction: _int = 1, fweights: Tensor | None = None,
            aweights: Tensor | None = None) -> Tensor:
        """Same as ``torch.Tensor.cov`` (``tensorplay.cov``)."""
        return _surface.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self) -> Tensor:
        """Same as ``torch.Tensor.corrcoef`` (``tensorplay.corrcoef``)."""
        return _surface.corrcoef(self)

    def quantile(self, q: Any, dim: _int | None = None, keepdim: _bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        """Same as ``torch.Tensor.quantile`` (``tensorplay.quantile``)."""
        return _surface.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q: Any, dim: _int | None = None, keepdim: _bool = False, *,
                    interpolation: str = "linear") -> Tensor:
        """Same as ``torch.Tensor.nanquantile`` (``tensorplay.nanquantile``)."""
        return _surface.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def renorm(self, p: _Number, dim: _int, maxnorm: _Number) -> Tensor:
        """Same as ``torch.Tensor.renorm`` (``tensorplay.renorm``)."""
        return _surface.renorm(self, p, dim, maxnorm)

    def renorm_(self, p: _Number, dim: _int, maxnorm: _Number) -> Tensor:
        """In-place ``renorm``; returns ``self`` (same as ``torch.Tensor.renorm_``)."""
        return _in_place(self, "renorm_", _surface.renorm, p, dim, maxnorm)

    def logcumsumexp(self, dim: _int) -> Tensor:
        """``log(cumsum(exp(self), dim))`` without overflow or underflow; floating tensors only
        (same as ``torch.Tensor.logcumsumexp``; ``tensorplay.logcumsumexp``)."""
        return _surface.logcumsumexp(self, dim)

    def cumprod(self, dim: _int, *, dtype: _DTypeLike | None = None) -> Tensor:
        """Cumulative product along ``dim`` (integers and bools give int64; ``dtype=`` converts
        first), as ``torch.cumprod`` on the cpu: accumulated in float64 for float32 (float32 for
        float16/bfloat16) and rounded at each output, so the values are torch's bit for bit up
        to 2048 elements along ``dim`` (longer dims are scanned by doubling, last-bit
        differences possible). Differentiable, zeros included. NotImplementedError for
        ``dtype=bool`` (torch has no bool cumprod)."""
        x = self
        if dtype is not None:
            if _dtype.as_dtype(dtype) is _dtype.bool:
                raise _no_bool_scan("cumprod")
            x = x.to(_dtype.as_dtype(dtype))
        elif not x._dtype.is_floating_point:
            x = _O.to_dtype(x, _dtype.int64)
        if not x._shape:
            return _O.clone(x)
        d = _wrap_dim(dim, x.ndim)
        out_dt = x._dtype
        acc = {_dtype.float32: _dtype.float64, _dtype.float16: _dtype.float32,
               _dtype.bfloat16: _dtype.float32}.get(out_dt, out_dt)
        y = x if acc is out_dt else _O.to_dtype(x, acc)
        n = y._shape[d]
        if n <= 1:
            return _O.clone(x)
        if n <= 2048:
            parts = [_O.narrow(y, d, 0, 1)]
            for i in range(1, n):
                parts.append(_O.mul(parts[-1], _O.narrow(y, d, i, 1)))
            y = _O.cat(parts, d)
        else:
            k = 1
            while k < n:
                y = _O.cat([_O.narrow(y, d, 0, k),
                            _O.mul(_O.narrow(y, d, k, n - k), _O.narrow(y, d, 0, n - k))], d)
                k *= 2
        return y if acc is out_dt else _O.to_dtype(y, out_dt)

    def cumprod_(self, dim: _int, *, dtype: _DTypeLike | None = None) -> Tensor:
        """In-place ``cumprod`` in ``self``'s dtype (same as ``torch.Tensor.cumprod_``);
        RuntimeError for another ``dtype`` or a bool ``self``, nothing written."""
        if dtype is not None and _dtype.as_dtype(dtype) is not self._dtype:
            raise RuntimeError(f"cumprod_: Bad in-place call: input tensor dtype {self._dtype} "
                               f"and output tensor dtype {_dtype.as_dtype(dtype)} should match")
        return _in_place(self, "cumprod_", _cumprod_in, dim, dtype and self._dtype)

    def cumsum_(self, dim: _int, *, dtype: _DTypeLike | None = None) -> Tensor:
        """In-place ``cumsum`` along ``dim`` in ``self``'s dtype (an int32 tensor stays int32);
        returns ``self`` (same as ``torch.Tensor.cumsum_``). RuntimeError for a ``dtype`` other
        than ``self``'s (torch's "Bad in-place call") and for a bool ``self`` (the int64 sum
        cannot be cast into bool), nothing written."""
        if dtype is not None and _dtype.as_dtype(dtype) is not self._dtype:
            raise RuntimeError(f"cumsum_: Bad in-place call: input tensor dtype {self._dtype} and "
                               f"output tensor dtype {_dtype.as_dtype(dtype)} should match")
        return _in_place(self, "cumsum_", _cumsum_in, dim, dtype and self._dtype)

    def sort(self, dim: _int = -1, descending: _bool = False, *, stable: _bool = False,
             axis: _int | None = None) -> _rt.sort:
        """``(values, indices)`` sorted along ``dim`` (``tensorplay.return_types.sort``); NaN
        sorts as the largest value; equal values keep their order (always stable: torch's
        ``stable=True`` indices; with ``stable=False`` torch does not specify the order of equal
        values, and its cpu kernel's differs from this one past 16 or so elements). ``axis=`` is
        torch's NumPy spelling of ``dim``, here and in ``argsort``, ``topk``, ``chunk``,
        ``unbind``, ``squeeze``, ``repeat_interleave``."""
        if axis is not None:
            dim = _axis("sort", dim, -1, axis)
        from . import return_types
        return return_types.sort(*_O.sort(self, dim, descending, stable=stable))

    def topk(self, k: _int, dim: _int = -1, largest: _bool = True,
             sorted: _bool = True, *, axis: _int | None = None) -> _rt.topk:   # noqa: A002
        """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements
        along ``dim`` (``tensorplay.return_types.topk``; indices int64), as ``torch.topk``.
        Results come sorted (largest first; smallest first with ``largest=False``); NaN counts
        as the largest value. Equal values come lowest index first; torch does not specify their
        order (its cpu kernel leaves them as ``std::nth_element``/``partial_sort`` do), so the
        indices of ties may differ from torch's, the values never. ``RuntimeError`` unless
        ``0 <= k <= size of dim``."""
        if axis is not None:
            dim = _axis("topk", dim, -1, axis)
        from . import return_types
        return return_types.topk(*_O.topk(self, k, dim, largest, sorted))

    @overload
    def nonzero(self, *, as_tuple: Literal[False] = False) -> Tensor: ...
    @overload
    def nonzero(self, *, as_tuple: Literal[True]) -> tuple[Tensor, ...]: ...
    def nonzero(self, *, as_tuple: _bool = False) -> Tensor | tuple[Tensor, ...]:
        """Indices of the nonzero elements, as ``torch.nonzero``: an ``(n, ndim)`` int64 tensor
        in row-major order, or with ``as_tuple=True`` one 1-D index tensor per dimension. The
        size ``n`` depends on the values (a data-dependent size in fake kernels and
        ``tensorplay.compile``)."""
        if as_tuple and self.ndim == 0:
            # torch reads a 0-d input as 1-d here: (tensor([0]),) when it is nonzero (the
            # (n, 0) result reshaped gave an empty index, as for a zero)
            return (_O.nonzero(self.reshape(1))[:, 0].contiguous(),)
        out = _O.nonzero(self)
        if not as_tuple:
            return out
        return tuple(out[:, i].contiguous() for i in range(self.ndim))

    def argsort(self, dim: _int = -1, descending: _bool = False, *,
                stable: _bool = False, axis: _int | None = None) -> Tensor:
        """The indices that sort ``self`` along ``dim`` (int64), as ``torch.argsort``."""
        if axis is not None:
            dim = _axis("argsort", dim, -1, axis)
        return _O.argsort(self, dim, descending, stable=stable)

    def gather(self, dim: _int, index: Tensor, *, sparse_grad: _bool = False) -> Tensor:
        """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and so on), as ``torch.gather``:
        ``index`` is int64 with ``self``'s number of dims; ``RuntimeError`` for an index out of
        range."""
        return _O.gather(self, dim, index, sparse_grad=sparse_grad)

    def scatter_add(self, dim: _int, index: Tensor, src: Tensor) -> Tensor:
        """A copy of ``self`` with ``src`` added at ``index`` along ``dim`` (as
        ``torch.scatter_add``; repeated indices accumulate)."""
        return _O.scatter_add(self, dim, index, src)

    def scatter_add_(self, dim: _int, index: Tensor, src: Tensor) -> Tensor:
        """In-place ``scatter_add``: ``src`` added into ``self`` at ``index`` along ``dim``
        (repeated indices accumulate); returns ``self`` (same as ``torch.Tensor.scatter_add_``).
        An ``index`` or ``src`` sharing memory with ``self`` is refused (RuntimeError, torch's
        ``assert_no_overlap``)."""
        _no_overlap(self, index, src)
        return _in_place(self, "scatter_add_", _O.scatter_add, dim, index, src)

    def scatter(self, dim: _int, index: Tensor, src: _TensorOrScalar | None = None, *,
                value: _Number | None = None, reduce: str | None = None) -> Tensor:
        """A copy of ``self`` with ``src`` (a tensor of ``self``'s dtype, or a number; also
        ``value=``) written at ``index`` along ``dim``, as ``torch.scatter``: for ``dim=0``,
        ``out[index[i][j]][j] = src[i][j]``. A repeated index keeps one of its values
        (unspecified which). ``reduce="add"`` adds instead (``scatter_add``; torch's deprecated
        form); ``reduce="multiply"`` multiplies (``scatter_reduce``'s "prod")."""
        if reduce is not None:
            return _scatter_reduced(self, dim, index, src, value, reduce)
        return _O.scatter(self, dim, index, _scatter_src(src, value, reduce))

    def scatter_(self, dim: _int, index: Tensor, src: _TensorOrScalar | None = None, *,
                 value: _Number | None = None, reduce: str | None = None) -> Tensor:
        """In-place ``scatter`` (``torch.Tensor.scatter_``); returns ``self``. An ``index`` or
        ``src`` sharing memory with ``self`` is refused (RuntimeError, torch's
        ``assert_no_overlap``)."""
        _no_overlap(self, index, src)
        if reduce is not None:
            return _in_place(self, "scatter_", _scatter_reduced, dim, index, src, value, reduce)
        return _O.scatter_(self, dim, index, _scatter_src(src, value, reduce))

    def scatter_reduce(self, dim: _int, index: Tensor, src: Tensor, reduce: str, *,
                       include_self: _bool = True) -> Tensor:
        """``self`` with the values of ``src`` reduced into the positions ``index`` along ``dim``
        (same as ``torch.Tensor.scatter_reduce``): ``reduce="sum"`` or ``"mean"`` (``self``'s
        value counted unless ``include_self=False``; an integer mean rounds down, as torch).
        ``"prod"``, ``"amax"``, ``"amin"`` too (``include_self`` as torch's; gradients as torch's:
        ties of amax/amin share evenly, prod's zeros handled without division).
        ``src`` has ``self``'s dtype (RuntimeError otherwise). Differentiable."""
        return _scatter_reduce(self, dim, index, src, reduce, include_self)

    def scatter_reduce_(self, dim: _int, index: Tensor, src: Tensor, reduce: str, *,
                        include_self: _bool = True) -> Tensor:
        """In-place ``scatter_reduce``; returns ``self`` (same as
        ``torch.Tensor.scatter_reduce_``); ``index`` or ``src`` sharing memory with ``self``:
        RuntimeError (torch's ``assert_no_overlap``)."""
        _no_overlap(self, index, src)
        return _in_place(self, "scatter_reduce_", _scatter_reduce, dim, index, src, reduce,
                         include_self)

    def isnan(self) -> Tensor:
        """Bool tensor: True where the element is NaN."""
        return _O.isnan(self)

    def isinf(self) -> Tensor:
        """Bool tensor: True where the element is +inf or -inf."""
        return _O.isinf(self)

    def isfinite(self) -> Tensor:
        """Bool tensor: True where the element is neither NaN nor infinite."""
        return _O.isfinite(self)

    def floor(self) -> Tensor:
        """Elementwise floor (integer tensors are returned unchanged, as a copy)."""
        return _O.floor(self)

    def ceil(self) -> Tensor:
        """Elementwise ceiling (integer tensors are returned unchanged, as a copy)."""
        return _O.ceil(self)

    def expm1(self) -> Tensor:
        """Elementwise ``exp(self) - 1``, accurate near 0 (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.expm1``)."""
        return _O.expm1(self)

    def expm1_(self) -> Tensor:
        """In-place ``expm1``; returns ``self`` (same as ``torch.Tensor.expm1_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "expm1_", _O.expm1)

    def log1p(self) -> Tensor:
        """Elementwise ``log(1 + self)``, accurate near 0 (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.log1p``)."""
        return _O.log1p(self)

    def log1p_(self) -> Tensor:
        """In-place ``log1p``; returns ``self`` (same as ``torch.Tensor.log1p_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "log1p_", _O.log1p)

    def log2(self) -> Tensor:
        """Elementwise base-2 logarithm (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.log2``)."""
        return _O.log2(self)

    def log2_(self) -> Tensor:
        """In-place ``log2``; returns ``self`` (same as ``torch.Tensor.log2_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "log2_", _O.log2)

    def log10(self) -> Tensor:
        """Elementwise base-10 logarithm (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.log10``)."""
        return _O.log10(self)

    def log10_(self) -> Tensor:
        """In-place ``log10``; returns ``self`` (same as ``torch.Tensor.log10_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "log10_", _O.log10)

    def exp2(self) -> Tensor:
        """Elementwise ``2 ** self`` (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.exp2``)."""
        return _O.exp2(self)

    def exp2_(self) -> Tensor:
        """In-place ``exp2``; returns ``self`` (same as ``torch.Tensor.exp2_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "exp2_", _O.exp2)

    def tan(self) -> Tensor:
        """Elementwise tangent (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.tan``)."""
        return _O.tan(self)

    def tan_(self) -> Tensor:
        """In-place ``tan``; returns ``self`` (same as ``torch.Tensor.tan_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "tan_", _O.tan)

    def asin(self) -> Tensor:
        """Elementwise arcsine (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.asin``)."""
        return _O.asin(self)

    def asin_(self) -> Tensor:
        """In-place ``asin``; returns ``self`` (same as ``torch.Tensor.asin_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "asin_", _O.asin)

    def acos(self) -> Tensor:
        """Elementwise arccosine (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.acos``)."""
        return _O.acos(self)

    def acos_(self) -> Tensor:
        """In-place ``acos``; returns ``self`` (same as ``torch.Tensor.acos_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "acos_", _O.acos)

    def atan(self) -> Tensor:
        """Elementwise arctangent (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.atan``)."""
        return _O.atan(self)

    def atan_(self) -> Tensor:
        """In-place ``atan``; returns ``self`` (same as ``torch.Tensor.atan_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "atan_", _O.atan)

    def sinh(self) -> Tensor:
        """Elementwise hyperbolic sine (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.sinh``)."""
        return _O.sinh(self)

    def sinh_(self) -> Tensor:
        """In-place ``sinh``; returns ``self`` (same as ``torch.Tensor.sinh_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "sinh_", _O.sinh)

    def cosh(self) -> Tensor:
        """Elementwise hyperbolic cosine (integer and bool inputs give the default float
        dtype; same as ``torch.Tensor.cosh``)."""
        return _O.cosh(self)

    def cosh_(self) -> Tensor:
        """In-place ``cosh``; returns ``self`` (same as ``torch.Tensor.cosh_``). An integer or
        bool ``self`` raises RuntimeError (a floating result cannot be cast into it), nothing
        written."""
        return _in_place(self, "cosh_", _O.cosh)

    def trunc(self) -> Tensor:
        """Elementwise rounding toward zero (integer tensors are returned unchanged, as a copy;
        same as ``torch.Tensor.trunc``)."""
        return _O.trunc(self)

    def trunc_(self) -> Tensor:
        """In-place ``trunc``; returns ``self`` (same as ``torch.Tensor.trunc_``)."""
        return _in_place(self, "trunc_", _O.trunc)

    def round(self, *, decimals: _int = 0) -> Tensor:
        """Round to ``decimals`` places, halves to even (as ``torch.round``)."""
        return _O.round(self, decimals=decimals)

    def var(self, *args: Any, dim: _Dims = _NO_DIM, correction: _Number | None = None,
            keepdim: _bool = _NO_KEEPDIM, unbiased: _bool | None = None,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Variance over ``dim`` (all elements when None) with Bessel's ``correction`` (1 by
        default): ``sum((x - mean)**2) / (N - correction)``; floating tensors only.

        Arguments as ``torch.var``'s overloads: ``var(dim, unbiased, keepdim)`` positionally
        (the third positional is ``unbiased``, not ``keepdim``), ``var(unbiased)`` with a bool
        first argument, or ``var(dim, correction=c, keepdim=k)``. The divisor is ``max(0, N -
        correction)``: inf/nan when that is 0, as torch (which also warns)."""
        if dim is _NO_DIM:      # (dim, unbiased, keepdim) positionally: the common call, inline
            if args:
                dim, args = args[0], args[1:]
        else:                   # dim= by name (dim=True: torch's TypeError)
            dim, args = _surface.dim_and_rest("var", args, dim)
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("var", dim, keepdim, axis, keepdims)
        return _surface.variance_and_mean("var", self, dim, args, correction, keepdim,
                                          unbiased)[0]

    def std(self, *args: Any, dim: _Dims = _NO_DIM, correction: _Number | None = None,
            keepdim: _bool = _NO_KEEPDIM, unbiased: _bool | None = None,
            axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Standard deviation over ``dim``: ``sqrt(var(...))`` with ``var``'s arguments (same
        overloads as ``torch.std``); its gradient is 0 where the result is 0 (a constant
        input), as torch's."""
        if dim is _NO_DIM:      # (dim, unbiased, keepdim) positionally: the common call, inline
            if args:
                dim, args = args[0], args[1:]
        else:                   # dim= by name (dim=True: torch's TypeError)
            dim, args = _surface.dim_and_rest("std", args, dim)
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("std", dim, keepdim, axis, keepdims)
        return _norm_root(_surface.variance_and_mean("std", self, dim, args, correction, keepdim,
                                                     unbiased)[0], 2)

    def norm(self, p: _Number | str | None = "fro", dim: _Dims = None, keepdim: _bool = False,
             dtype: Any = None) -> Tensor:
        """The ``p``-norm over ``dim`` (2 by default): ``tensorplay.norm`` (``torch.norm``)."""
        return _surface.norm(self, p, dim, keepdim, dtype=dtype)

    def softmax(self, dim: _int, dtype: _DTypeLike | None = None) -> Tensor:
        """Softmax along ``dim`` (numerically stable); ``dtype=`` converts ``self`` first."""
        return _O.softmax(self if dtype is None else self.to(dtype), dim)

    def log_softmax(self, dim: _int, dtype: _DTypeLike | None = None) -> Tensor:
        """Log-softmax along ``dim`` (numerically stable); ``dtype=`` converts ``self`` first."""
        return _O.log_softmax(self if dtype is None else self.to(dtype), dim)

    # views
    def view(self, *shape: Any, **kwargs: Any) -> Tensor:
        """A view with a new shape (ints, one sequence, or ``size=``; one dim may be -1);
        ``RuntimeError`` suggesting ``reshape`` when the strides do not allow it. ``view(dtype)``
        (or ``dtype=``): the same bytes as another dtype. Same as ``torch.Tensor.view``."""
        if kwargs:
            if "dtype" in kwargs and not shape and len(kwargs) == 1:
                return _O.view_dtype(self, _dtype.as_dtype(kwargs["dtype"]))
            return _O.view(self, _keyword_sizes(shape, kwargs, "view", "size"))
        if len(shape) == 1:
            s = shape[0]
            if s.__class__ is int:
                return _O.view(self, [s])
            if isinstance(s, _dtype.DType):
                # view(dtype): the same bytes as another dtype (torch's Tensor.view(dtype))
                return _O.view_dtype(self, s)
        return _O.view(self, _shape_arg(shape))

    def reshape(self, *shape: _int | Sequence[_int], **kwargs: Sequence[_int]) -> Tensor:
        """A view with the new shape (ints, one sequence, or ``shape=``) when the strides allow
        it, else a copy (torch's rule)."""
        if kwargs:
            return _O.reshape(self, _keyword_sizes(shape, kwargs, "reshape", "shape"))
        return _O.reshape(self, _shape_arg(shape))

    def view_as(self, other: Tensor) -> Tensor:
        """``self.view(other.shape)``."""
        return _O.view(self, list(other.shape))

    def reshape_as(self, other: Tensor) -> Tensor:
        """``self.reshape(other.shape)``."""
        return _O.reshape(self, list(other.shape))

    def flatten(self, start_dim: _int = 0, end_dim: _int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` into one (a view when possible; a 0-D tensor gives
        a 1-D view). ``self`` itself when that is one dim (``start_dim == end_dim``, a 1-D
        tensor), as torch's; RuntimeError when ``start_dim`` comes after ``end_dim``."""
        if self.ndim == 0:
            _wrap_dim(start_dim, 0), _wrap_dim(end_dim, 0)    # 0 and -1 only, as torch
            return _O.reshape(self, [1])
        s = _wrap_dim(start_dim, self.ndim)
        e = _wrap_dim(end_dim, self.ndim)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shape = list(self._shape[:s]) + [_prod(self._shape[s:e + 1])] + list(self._shape[e + 1:])
        return _O.reshape(self, shape)

    def permute(self, *dims: _int | Sequence[_int], **kwargs: Sequence[_int]) -> Tensor:
        """A view with the dimensions reordered (ints, one sequence, or ``dims=``); TypeError
        without any, as torch (also for a 0-d tensor: ``permute(())`` is its identity)."""
        if kwargs:
            return _O.permute(self, _keyword_sizes(dims, kwargs, "permute", "dims"))
        if not dims:
            raise TypeError('permute() missing 1 required positional arguments: "dims"')
        return _O.permute(self, _shape_arg(dims))

    def transpose(self, dim0: _int, dim1: _int) -> Tensor:
        """A view with ``dim0`` and ``dim1`` swapped."""
        return _O.transpose(self, dim0, dim1)

    swapdims = transpose

    def swapaxes(self, axis0: _int, axis1: _int) -> Tensor:
        """``transpose(axis0, axis1)`` (NumPy's names, as ``torch.Tensor.swapaxes``)."""
        return _O.transpose(self, axis0, axis1)

    def t(self) -> Tensor:
        """Transpose of a tensor with at most 2 dims: a view, also of a 0-D or 1-D tensor (a new
        view of the same shape, not ``self``; same as ``torch.Tensor.t``); RuntimeError for more
        than 2 dims."""
        nd = len(self._shape)
        if nd == 2:
            return _O.transpose(self, 0, 1)
        if nd > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, got {nd}")
        return _O.transpose(self, 0, 0)

    # Shape-changing in-place methods (torch's ``t_``, ``transpose_``, ...): ``self`` takes the
    # view's shape, strides and offset (``_restride_``: same storage, one version bump, the
    # view's autograd history; refused on a leaf requiring grad, and inside tensorplay.compile).

    def transpose_(self, dim0: _int, dim1: _int) -> Tensor:
        """Swap ``dim0`` and ``dim1`` of ``self`` in place (its strides; no data moves); returns
        ``self`` (same as ``torch.Tensor.transpose_``)."""
        return _restride_(self, "transpose_", "transpose(dim0, dim1)", _O.transpose, dim0, dim1)

    def swapdims_(self, dim0: _int, dim1: _int) -> Tensor:
        """``transpose_`` (same as ``torch.Tensor.swapdims_``)."""
        return _restride_(self, "swapdims_", "swapdims(dim0, dim1)", _O.transpose, dim0, dim1)

    def swapaxes_(self, axis0: _int, axis1: _int) -> Tensor:
        """``transpose_`` (same as ``torch.Tensor.swapaxes_``)."""
        return _restride_(self, "swapaxes_", "swapaxes(axis0, axis1)", _O.transpose, axis0,
                          axis1)

    def t_(self) -> Tensor:
        """``t()`` in place: a 2-D ``self`` transposed, a 0-D or 1-D one unchanged; returns
        ``self``; RuntimeError for more than 2 dims (same as ``torch.Tensor.t_``)."""
        if self.ndim > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, got {self.ndim}")
        # (a 0-D or 1-D self keeps its layout but is written as torch's: the in-place checks,
        # one version bump, a view's history)
        return _restride_(self, "t_", "t()", _O.transpose, 0, 1 if self.ndim == 2 else 0)

    def unsqueeze_(self, dim: _int) -> Tensor:
        """Insert a size-1 dimension at ``dim`` in place; returns ``self`` (same as
        ``torch.Tensor.unsqueeze_``; IndexError for ``dim`` out of range, nothing changed)."""
        return _restride_(self, "unsqueeze_", "unsqueeze(dim)", _O.unsqueeze, dim)

    def squeeze_(self, dim: _Dims = _NO_DIM, *dims: _int, axis: _Dims = None) -> Tensor:
        """Drop size-1 dimensions (all, or those in ``dim``: an int, a sequence, or several
        ints) in place; returns ``self`` (same as ``torch.Tensor.squeeze_``)."""
        if axis is not None:
            dim = _axis("squeeze_", dim, _NO_DIM, axis)
        return _restride_(self, "squeeze_", "squeeze(dim)", _O.squeeze,
                          _squeeze_dims("squeeze_", dim, dims))

    def as_strided_(self, size: Sequence[_int], stride: Sequence[_int],
                    storage_offset: _int | None = None) -> Tensor:
        """``self`` made the view ``as_strided(size, stride, storage_offset)`` of its own storage,
        in place; returns ``self`` (same as ``torch.Tensor.as_strided_``). RuntimeError when it
        would reach beyond the storage, nothing changed."""
        return _restride_(self, "as_strided_", "as_strided(size, stride)", _O.as_strided,
                          list(size), list(stride), storage_offset)

    @property
    def T(self) -> Tensor:
        """All dimensions reversed (a view)."""
        return _O.permute(self, list(range(self.ndim))[::-1])

    @property
    def mT(self) -> Tensor:
        """The last two dimensions swapped (a view)."""
        return _O.transpose(self, -2, -1)

    def expand(self, *sizes: _int | Sequence[_int], **kwargs: Any) -> Tensor:
        """A view broadcasting size-1 dims to ``sizes`` (ints, one sequence, or ``size=``;
        -1 keeps a size): a broadcast dim has stride 0; a new leading dim of size 1 has the
        next dim's size times its stride, as torch's. ``implicit=`` is accepted and changes
        nothing."""
        if kwargs:
            return _O.expand(self, _keyword_sizes(sizes, kwargs, "expand", "size", ("implicit",)))
        return _O.expand(self, _shape_arg(sizes))

    def expand_as(self, other: Tensor) -> Tensor:
        """``self.expand(other.shape)``."""
        return _O.expand(self, list(other.shape))

    def broadcast_to(self, size: Sequence[_int]) -> Tensor:
        """``self.expand(size)`` (torch's argument name ``size``)."""
        return _O.expand(self, list(size))

    def unsqueeze(self, dim: _int) -> Tensor:
        """A view with a size-1 dimension inserted at ``dim``."""
        return _O.unsqueeze(self, dim)

    def squeeze(self, dim: _Dims = _NO_DIM, *dims: _int, axis: _Dims = None) -> Tensor:
        """A view without size-1 dims (all of them, or those in ``dim``: an int, a sequence, or
        several ints as torch's ``squeeze(0, 2)``)."""
        if dim is _NO_DIM and axis is None:
            return _O.squeeze(self, None)
        if axis is not None:
            dim = _axis("squeeze", dim, _NO_DIM, axis)
        return _O.squeeze(self, _squeeze_dims("squeeze", dim, dims))

    def unflatten(self, dim: _int, sizes: Sequence[_int]) -> Tensor:
        """A view splitting ``dim`` into ``sizes`` (one may be -1)."""
        d = _wrap_dim(dim, self.ndim, "unflatten(): ")
        sizes = list(sizes)
        if -1 in sizes:
            known = _prod(s for s in sizes if s != -1)
            sizes[sizes.index(-1)] = self._shape[d] // max(known, 1)
        return _O.view(self, list(self._shape[:d]) + sizes + list(self._shape[d + 1:]))

    def chunk(self, chunks: _int, dim: _int = 0, *,
              axis: _int | None = None) -> tuple[Tensor, ...]:
        """Split into at most ``chunks`` views along ``dim`` of ``ceil(size / chunks)`` elements
        (the last may be smaller; an empty dim gives ``chunks`` empty views), as
        ``torch.chunk``; RuntimeError when ``chunks`` is not positive. The views are ``split``'s
        (not writable in place while autograd records, as torch's)."""
        if axis is not None:
            dim = _axis("chunk", dim, 0, axis)
        if not self._shape:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        d = _wrap_dim(dim, self.ndim)
        if self._shape[d] == 0:
            return self.split([0] * chunks, d)
        return self.split(-(-self._shape[d] // chunks), d)

    def split(self, split_size: _int | Sequence[_int], dim: _int = 0) -> tuple[Tensor, ...]:
        """Split into views along ``dim``, as ``torch.split``: ``split_size`` an int gives
        chunks of that size (the last smaller; one chunk, possibly empty, when it is at least
        the dim's size); a sequence gives chunks of those sizes, which must be non-negative and
        sum to the dim's size. RuntimeError (torch's words) for a negative size, a 0 size of a
        non-empty dim, or sizes that do not sum to the dim's size. The views are the outputs of
        one function (torch's ``Split``/``SplitWithSizes``): while autograd records, writing
        one of them (or a view of one) in place raises RuntimeError, as torch's; so does using
        one after its base was written in place (``tensor_split`` makes writable views)."""
        if not self._shape:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        d = _wrap_dim(dim, self.ndim)
        n = self._shape[d]
        if split_size.__class__ is int:
            if split_size < 0:
                raise RuntimeError(f"split expects split_size be non-negative, but got "
                                   f"split_size={split_size}")
            if split_size == 0:
                if n:
                    raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but "
                                       f"got dimension size of {n}")
                sizes = [0]
            else:
                sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size
                                                            else [])
                if not sizes:
                    sizes = [0]          # an empty dim: one empty chunk, as torch
        else:
            sizes = [operator.index(s) for s in split_size]
            if any(s < 0 for s in sizes):
                raise RuntimeError(f"split_with_sizes expects split_sizes have only "
                                   f"non-negative entries, but got split_sizes={sizes}")
            if sum(sizes) != n:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                                   f"(input tensor's size at dimension {d}), but got "
                                   f"split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(_O.narrow(self, d, start, s))
            start += s
        # torch's outputs of one multi-view function: not writable in place while autograd records
        return _mark_multi_output(tuple(out), "Split" if split_size.__class__ is int else
                                  "SplitWithSizes")

    def narrow(self, dim: _int, start: _int, length: _int) -> Tensor:
        """A view of ``length`` elements of ``dim`` from ``start``."""
        return _O.narrow(self, dim, start, length)

    # -- torch's everyday composites (tensorplay._surface; autograd comes from their ops) ---------
    def unbind(self, dim: _int = 0, *, axis: _int | None = None) -> tuple[Tensor, ...]:
        """The slices along ``dim`` as a tuple of views (``torch.unbind``); while autograd
        records, writing one in place raises RuntimeError, as torch's (``split``)."""
        if axis is not None:
            dim = _axis("unbind", dim, 0, axis)
        return _surface.unbind(self, dim)

    def select(self, dim: _int, index: _int) -> Tensor:
        """The view at ``index`` of ``dim``, which it removes (``torch.select``)."""
        return _O.select(self, dim, index)

    def flip(self, *dims: _int | Sequence[_int], **kwargs: _int | Sequence[_int]) -> Tensor:
        """A copy reversed along ``dims`` (ints, one sequence, or ``dims=``; ``torch.flip``)."""
        return _surface.flip(self, _keyword_sizes(dims, kwargs, "flip", "dims") if kwargs else
                             _shape_arg(dims))

    def roll(self, shifts: _int | Sequence[_int],
             dims: _int | Sequence[_int] | None = None) -> Tensor:
        """Elements shifted along ``dims`` with wrap-around (``torch.roll``)."""
        return _surface.roll(self, shifts, dims)

    def tril(self, diagonal: _int = 0) -> Tensor:
        """The lower triangle of the last two dims, the rest zero (``torch.tril``)."""
        return _surface.tril(self, diagonal)

    def triu(self, diagonal: _int = 0) -> Tensor:
        """The upper triangle of the last two dims, the rest zero (``torch.triu``)."""
        return _surface.triu(self, diagonal)

    def tril_(self, diagonal: _int = 0) -> Tensor:
        """In-place ``tril``: zeros above diagonal ``diagonal`` of the last two dims; returns
        ``self`` (same as ``torch.Tensor.tril_``, also on an expanded tensor)."""
        if 0 in self._stride and len(self._shape) >= 2 and _expanded(self):
            return _zero_outside_triangle(self, _surface.tril, diagonal)
        return _in_place(self, "tril_", _surface.tril, diagonal)

    def triu_(self, diagonal: _int = 0) -> Tensor:
        """In-place ``triu`` (same as ``torch.Tensor.triu_``, also on an expanded tensor)."""
        if 0 in self._stride and len(self._shape) >= 2 and _expanded(self):
            return _zero_outside_triangle(self, _surface.triu, diagonal)
        return _in_place(self, "triu_", _surface.triu, diagonal)

    def diag(self, diagonal: _int = 0) -> Tensor:
        """1-D: the matrix with this on a diagonal; 2-D: a diagonal (``torch.diag``)."""
        return _surface.diag(self, diagonal)

    def repeat(self, *sizes: _int | Sequence[_int], **kwargs: Sequence[_int]) -> Tensor:
        """Tiled ``sizes[i]`` times along each dim (ints, one sequence, or ``repeats=``;
        ``torch.Tensor.repeat``)."""
        if kwargs:
            return _surface.repeat(self, _keyword_sizes(sizes, kwargs, "repeat", "repeats"))
        return _surface.repeat(self, *sizes)

    def repeat_interleave(self, repeats: _int | Tensor, dim: _int | None = None, *,
                          output_size: _int | None = None, axis: _int | None = None) -> Tensor:
        """Each element repeated ``repeats`` times along ``dim`` (``torch.repeat_interleave``)."""
        if axis is not None:
            dim = _axis("repeat_interleave", dim, None, axis)
        return _surface.repeat_interleave(self, repeats, dim, output_size=output_size)

    def index_select(self, dim: _int, index: Tensor) -> Tensor:
        """Entries of ``dim`` at the 1-D ``index`` (``torch.index_select``)."""
        return _surface.index_select(self, dim, index)

    def masked_select(self, mask: Tensor) -> Tensor:
        """Elements where the bool ``mask`` (broadcast) is True, 1-D (``torch.masked_select``)."""
        return _surface.masked_select(self, mask)

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of each element (``torch.sign``)."""
        return _O.sign(self)

    def reciprocal(self) -> Tensor:
        """``1 / self`` (integer inputs give the default float dtype), as ``torch.reciprocal``."""
        return _O.rdiv(self, 1)

    def eq(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise ``==`` (bool tensor)."""
        return _O.eq(self, other)

    def ne(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise ``!=`` (bool tensor)."""
        return _O.ne(self, other)

    def ge(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise ``>=`` (bool tensor)."""
        return _O.ge(self, other)

    def gt(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise ``>`` (bool tensor)."""
        return _O.gt(self, other)

    def le(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise ``<=`` (bool tensor)."""
        return _O.le(self, other)

    def lt(self, other: _TensorOrScalar) -> Tensor:
        """Elementwise ``<`` (bool tensor)."""
        return _O.lt(self, other)

    # In-place comparisons (torch's ``Tensor.eq_``...): the truth values written into ``self`` in
    # its dtype (1/0 in a float tensor), through ``_in_place`` (returns ``self``, one version bump,
    # ``other`` broadcasts to ``self``'s shape, a leaf requiring grad refused; zero gradient).

    def eq_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``eq``: 1 where ``self == other`` else 0, in ``self``'s dtype; returns
        ``self`` (same as ``torch.Tensor.eq_``). RuntimeError when ``other`` broadcasts beyond
        ``self``'s shape."""
        return _in_place(self, "eq_", _O.eq, other)

    def ne_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``ne``, as ``eq_`` (same as ``torch.Tensor.ne_``)."""
        return _in_place(self, "ne_", _O.ne, other)

    def ge_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``ge``, as ``eq_`` (same as ``torch.Tensor.ge_``)."""
        return _in_place(self, "ge_", _O.ge, other)

    def gt_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``gt``, as ``eq_`` (same as ``torch.Tensor.gt_``)."""
        return _in_place(self, "gt_", _O.gt, other)

    def le_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``le``, as ``eq_`` (same as ``torch.Tensor.le_``)."""
        return _in_place(self, "le_", _O.le, other)

    def lt_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``lt``, as ``eq_`` (same as ``torch.Tensor.lt_``)."""
        return _in_place(self, "lt_", _O.lt, other)

    # torch's alias names of the comparisons (``torch.Tensor.greater`` ...)
    greater, greater_, greater_equal, greater_equal_ = gt, gt_, ge, ge_
    less, less_, less_equal, less_equal_ = lt, lt_, le, le_
    not_equal, not_equal_ = ne, ne_

    def equal(self, other: Tensor) -> _bool:
        """True when shapes and elements are equal (a Python bool; ``torch.equal``)."""
        return _surface.equal(self, other)

    def isclose(self, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
                equal_nan: _bool = False) -> Tensor:
        """Elementwise closeness (bool tensor), as ``torch.isclose``."""
        return _surface.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other: Tensor, rtol: _float = 1e-05, atol: _float = 1e-08,
                 equal_nan: _bool = False) -> _bool:
        """``isclose(...).all()`` as a Python bool (``torch.allclose``)."""
        return _surface.allclose(self, other, rtol, atol, equal_nan)

    @overload
    def type(self, dtype: None = None, non_blocking: _bool = False) -> str: ...
    @overload
    def type(self, dtype: _DTypeLike | str, non_blocking: _bool = False) -> Tensor: ...
    def type(self, dtype: _DTypeLike | str | None = None,
             non_blocking: _bool = False) -> str | Tensor:
        """No argument: the type name (``"tensorplay.FloatTensor"``, cuda:
        ``"tensorplay.cuda.FloatTensor"``); with a dtype (or such a name): ``self.to(dtype)``,
        as ``torch.Tensor.type``."""
        if dtype is None:
            cap = _dtype.SCALAR_TYPE_NAMES[self._dtype.name]
            dev = "cuda." if self._device.type == "cuda" else ""
            return f"tensorplay.{dev}{cap}Tensor"
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            names = {v: k for k, v in _dtype.SCALAR_TYPE_NAMES.items()}
            key = dtype.rsplit(".", 1)[-1][:-len("Tensor")]
            if key not in names:
                raise ValueError(f"invalid type: {dtype!r}")
            dtype = _dtype.from_name(names[key])
        return self.to(_dtype.as_dtype(dtype))

    def bfloat16(self) -> Tensor:
        """``self.to(tensorplay.bfloat16)``."""
        return self.to(_dtype.bfloat16)

    def byte(self) -> Tensor:
        """``self.to(tensorplay.uint8)``."""
        return self.to(_dtype.uint8)

    def short(self) -> Tensor:
        """``self.to(tensorplay.int16)``."""
        return self.to(_dtype.int16)

    def char(self) -> Tensor:
        """``self.to(tensorplay.int8)``."""
        return self.to(_dtype.int8)

    def uniform_(self, from_: _float = 0.0, to: _float = 1.0, *, generator: None = None,
                 **kwargs: _float) -> Tensor:
        """Fill in place with values uniform on ``[from_, to)`` (``torch.Tensor.uniform_``;
        torch's keyword ``from``, a Python keyword, is accepted as ``**{"from": v}``)."""
        _no_generator("uniform_", generator)
        if kwargs:
            from_ = _from_keyword(kwargs, from_, 0.0, "uniform_")
        return _named("uniform_", _surface.uniform_, self, from_, to)

    def normal_(self, mean: _float = 0.0, std: _float = 1.0, *,
                generator: None = None) -> Tensor:
        """Fill in place with normal values (``torch.Tensor.normal_``)."""
        _no_generator("normal_", generator)
        return _named("normal_", _surface.normal_, self, mean, std)

    def random_(self, from_: _int = 0, to: _int | None = None, *, generator: None = None,
                **kwargs: _int) -> Tensor:
        """Fill in place with random integers in ``[from_, to)`` (``torch.Tensor.random_``;
        torch's keyword ``from`` is accepted as ``**{"from": v}``)."""
        _no_generator("random_", generator)
        if kwargs:
            from_ = _from_keyword(kwargs, from_, 0, "random_")
        return _named("random_", _surface.random_, self, from_, to)

    def unique(self, sorted: _bool = True, return_inverse: _bool = False,
               return_counts: _bool = False, dim: _int | None = None) -> Any:  # noqa: A002
        """Distinct elements, ascending (``torch.unique``)."""
        return _surface.unique(self, sorted, return_inverse, return_counts, dim)

    def mm(self, mat2: Tensor) -> Tensor:
        """2-D matrix product (``torch.mm``)."""
        return _surface.mm(self, mat2)

    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched 3-D matrix product (``torch.bmm``)."""
        return _surface.bmm(self, mat2)

    def dot(self, tensor: Tensor) -> Tensor:
        """Inner product of 1-D tensors (``torch.Tensor.dot``; the argument is named ``tensor``
        as there)."""
        return _surface.dot(self, tensor)

    def outer(self, vec2: Tensor) -> Tensor:
        """Outer product of 1-D tensors (``torch.outer``)."""
        return _surface.outer(self, vec2)

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: _Number = 1, alpha: _Number = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)`` (``torch.addmm``)."""
        return _surface.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1: Tensor, batch2: Tensor, *, beta: _Number = 1,
                alpha: _Number = 1) -> Tensor:
        """``beta * self + alpha * bmm(batch1, batch2)`` (``torch.baddbmm``)."""
        return _surface.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def addmm_(self, mat1: Tensor, mat2: Tensor, *, beta: _Number = 1,
               alpha: _Number = 1) -> Tensor:
        """In-place ``addmm``: ``self = beta * self + alpha * (mat1 @ mat2)``; returns ``self``
        (same as ``torch.Tensor.addmm_``). The product's shape must be ``self``'s and its dtype
        castable to ``self``'s (RuntimeError otherwise, nothing written)."""
        return _in_place(self, "addmm_", _addmm_of, mat1, mat2, beta, alpha)

    def baddbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: _Number = 1,
                 alpha: _Number = 1) -> Tensor:
        """In-place ``baddbmm`` (same as ``torch.Tensor.baddbmm_``), as ``addmm_``."""
        return _in_place(self, "baddbmm_", _baddbmm_of, batch1, batch2, beta, alpha)

    def logsumexp(self, dim: _Dims, keepdim: _bool = False) -> Tensor:
        """``log(sum(exp(self), dim))``, computed stably (``torch.logsumexp``)."""
        return _surface.logsumexp(self, dim, keepdim)

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:
        """Apply the Python ``callable`` to each element in place (cpu tensors only; slow), as
        ``torch.Tensor.apply_``."""
        if self._device.type != "cpu" or self._data is None:
            raise TypeError("apply_ is only implemented on CPU tensors")
        if self._requires_grad and _grad_state.enabled:
            raise RuntimeError("apply_ on a tensor that requires grad is not differentiable; "
                               "call it under tensorplay.no_grad()")
        flat = self.reshape(-1).tolist()
        new = _new_tensor([callable(v) for v in flat], dtype=self._dtype)
        _named("apply_", _O.copy_, self, _O.reshape(new, list(self._shape)))
        return self

    def as_strided(self, size: Sequence[_int], stride: Sequence[_int],
                   storage_offset: _int | None = None) -> Tensor:
        """A view of this tensor's storage with ``size``, ``stride`` and ``storage_offset`` (in
        elements; default: this tensor's offset), as ``torch.as_strided``; ``RuntimeError``
        when it would reach beyond the storage."""
        return _O.as_strided(self, list(size), list(stride), storage_offset)

    # -- torch's alias names (the same methods; an in-place alias is the in-place method) ----------
    absolute, absolute_ = abs, abs_
    arccos, arccos_, arcsin, arcsin_, arctan, arctan_ = acos, acos_, asin, asin_, atan, atan_
    negative, negative_ = neg, neg_
    fix, fix_ = trunc, trunc_
    multiply, multiply_ = mul, mul_
    subtract, subtract_ = sub, sub_
    divide, divide_ = div, div_

    def true_divide(self, other: _TensorOrScalar) -> Tensor:
        """``div(other)``, true division (same as ``torch.Tensor.true_divide``)."""
        return _O.div(self, other)

    def true_divide_(self, other: _TensorOrScalar) -> Tensor:
        """``div_(other)`` (same as ``torch.Tensor.true_divide_``): RuntimeError for an integer or
        bool ``self``, nothing written."""
        return _O.div_(self, other)

    def ndimension(self) -> _int:
        """``dim()`` (same as ``torch.Tensor.ndimension``)."""
        return len(self._shape)

    def positive(self) -> Tensor:
        """``self`` (``+x``); RuntimeError for a bool tensor (same as ``torch.Tensor.positive``)."""
        return self.__pos__()

    def is_signed(self) -> _bool:
        """True unless the dtype is uint8 or bool (same as ``torch.Tensor.is_signed``)."""
        return self._dtype.is_signed     # False for bool and the unsigned dtypes

    def is_complex(self) -> _bool:
        """False: TensorPlay has no complex dtypes (``torch.Tensor.is_complex``)."""
        return False

    def get_device(self) -> _int:
        """The cuda device index, -1 for a cpu tensor (same as ``torch.Tensor.get_device``)."""
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    @property
    def is_cpu(self) -> _bool:
        """True for tensors on the cpu (``torch.Tensor.is_cpu``)."""
        return self._device.type == "cpu"

    @property
    def itemsize(self) -> _int:
        """Bytes per element (``element_size()``; ``torch.Tensor.itemsize``)."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> _int:
        """``numel() * itemsize`` (``torch.Tensor.nbytes``)."""
        return self.numel() * self._dtype.itemsize

    def is_nonzero(self) -> _bool:
        """The single element as a Python bool; RuntimeError (torch's words) for no or several
        elements (same as ``torch.Tensor.is_nonzero``)."""
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def is_same_size(self, other: Tensor) -> _bool:
        """``self.shape == other.shape`` (same as ``torch.Tensor.is_same_size``)."""
        return self._shape == other._shape

    def ravel(self) -> Tensor:
        """1-D: a view when the layout allows, else a copy (``reshape(-1)``; same as
        ``torch.Tensor.ravel``)."""
        return _O.reshape(self, [-1])

    def movedim(self, source: _int | Sequence[_int],
                destination: _int | Sequence[_int]) -> Tensor:
        """A view with the dims ``source`` moved to positions ``destination`` (ints or equally
        long sequences), the others in their order (same as ``torch.Tensor.movedim``).
        RuntimeError for lengths that differ or a dim repeated; IndexError out of range."""
        n = self.ndim
        src, dst = _movedim_args(source, destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} "
                               f"dims) should contain the same number of dims as destination "
                               f"({dst} dims)")
        src = [_wrap_dim(d, n) for d in src]
        dst = [_wrap_dim(d, n) for d in dst]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise RuntimeError(f"movedim: repeated dim in `source` ({src}) or `destination` "
                               f"({dst})")
        if not n:       # a 0-d tensor: dims 0 and -1 name it, and there is nothing to move
            return _O.permute(self, [])
        perm = [-1] * n
        for s_, d_ in zip(src, dst):
            perm[d_] = s_
        rest = iter(d for d in range(n) if d not in src)
        perm = [p if p != -1 else next(rest) for p in perm]
        return _O.permute(self, perm)

    moveaxis = movedim

    def tile(self, *dims: _int | Sequence[_int], **kwargs: Sequence[_int]) -> Tensor:
        """``repeat`` with ``dims`` (ints, one sequence, or ``dims=``) padded with leading 1s to
        the tensor's number of dims (same as ``torch.Tensor.tile``)."""
        reps = _keyword_sizes(dims, kwargs, "tile", "dims") if kwargs else _shape_arg(dims)
        reps = [1] * (self.ndim - len(reps)) + reps
        return _surface.repeat(self, reps)

    def fliplr(self) -> Tensor:
        """``flip(1)``; RuntimeError for fewer than 2 dims (same as ``torch.Tensor.fliplr``)."""
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return _surface.flip(self, [1])

    def flipud(self) -> Tensor:
        """``flip(0)``; RuntimeError for a 0-d tensor (same as ``torch.Tensor.flipud``)."""
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return _surface.flip(self, [0])

    def frac(self) -> Tensor:
        """``self - trunc(self)`` (sign of ``self``); floating tensors only, RuntimeError
        otherwise (same as ``torch.Tensor.frac``)."""
        if not self._dtype.is_floating_point:
            raise RuntimeError(f"frac: not implemented for {self._dtype} (floating tensors only, "
                               f"as torch)")
        return _O.sub(self, _O.trunc(self))

    def frac_(self) -> Tensor:
        """In-place ``frac``; returns ``self`` (same as ``torch.Tensor.frac_``)."""
        return _in_place(self, "frac_", Tensor.frac)

    def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
        """A copy of ``self`` with the elements of ``source``, in order, written where the bool
        ``mask`` (broadcast) is True (same as ``torch.Tensor.masked_scatter``); differentiable."""
        base = self
        if isinstance(mask, Tensor) and mask._shape != self._shape:
            from ._ops._shapes import broadcast_shapes
            shape = broadcast_shapes(tuple(self._shape), tuple(mask._shape),
                                     api="masked_scatter")
            if shape != tuple(self._shape):
                base = self.expand(*shape)
        return _O.masked_scatter_(_O.clone(base), mask, source)

    def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
        """In-place ``masked_scatter``; returns ``self`` (same as
        ``torch.Tensor.masked_scatter_``)."""
        return _O.masked_scatter_(self, mask, source)

    def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value: _Number = 1) -> Tensor:
        """``self + value * tensor1 * tensor2`` with broadcasting and the three tensors' dtype
        promotion, evaluated as torch's kernel, ``(value * tensor1) * tensor2`` (an integer
        result truncates a float ``value``; same as ``torch.Tensor.addcmul``)."""
        return _addc(self, tensor1, tensor2, value, _O.mul, "addcmul")

    def addcmul_(self, tensor1: Tensor, tensor2: Tensor, *, value: _Number = 1) -> Tensor:
        """In-place ``addcmul``; returns ``self`` (same as ``torch.Tensor.addcmul_``)."""
        return _in_place(self, "addcmul_", _addc, tensor1, tensor2, value, _O.mul, "addcmul")

    def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value: _Number = 1) -> Tensor:
        """``self + value * tensor1 / tensor2`` (true division), as ``addcmul``; RuntimeError
        (torch's words) when both ``tensor1`` and ``tensor2`` are integral (same as
        ``torch.Tensor.addcdiv``)."""
        return _addc(self, tensor1, tensor2, value, _O.div, "addcdiv")

    def addcdiv_(self, tensor1: Tensor, tensor2: Tensor, *, value: _Number = 1) -> Tensor:
        """In-place ``addcdiv``; returns ``self`` (same as ``torch.Tensor.addcdiv_``)."""
        return _in_place(self, "addcdiv_", _addc, tensor1, tensor2, value, _O.div, "addcdiv")

    def lerp(self, end: Tensor, weight: _TensorOrScalar) -> Tensor:
        """``self + weight * (end - self)``, evaluated as torch's kernel (``end - (end - self) *
        (1 - weight)`` where ``|weight| >= 0.5``); floating tensors of one dtype (RuntimeError
        otherwise); differentiable. Same as ``torch.Tensor.lerp``."""
        return _lerp(self, end, weight)

    def lerp_(self, end: Tensor, weight: _TensorOrScalar) -> Tensor:
        """In-place ``lerp``; returns ``self`` (same as ``torch.Tensor.lerp_``)."""
        return _in_place(self, "lerp_", _lerp, end, weight)

    # -- views by strides ------------------------------------------------------------------------
    def diagonal(self, offset: _int = 0, dim1: _int = 0, dim2: _int = 1) -> Tensor:
        """A view of the diagonal ``offset`` (above the main one when positive) of the planes
        ``dim1``/``dim2``: those dims removed, the diagonal appended last (same as
        ``torch.Tensor.diagonal``); RuntimeError when ``dim1 == dim2``."""
        n = self.ndim
        d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        shape, stride, off = self._shape, self._stride, self._offset
        if offset >= 0:
            length = max(min(shape[d1], shape[d2] - offset), 0)
            start = offset * stride[d2]
        else:
            length = max(min(shape[d1] + offset, shape[d2]), 0)
            start = -offset * stride[d1]
        keep = [i for i in range(n) if i != d1 and i != d2]
        return _O.as_strided(self, [shape[i] for i in keep] + [length],
                             [stride[i] for i in keep] + [stride[d1] + stride[d2]],
                             off + start if length else off)

    def trace(self) -> Tensor:
        """Sum of the main diagonal of a 2-D tensor (integers and bools sum to int64; same as
        ``torch.Tensor.trace``); RuntimeError for other ranks."""
        if self.ndim != 2:
            raise RuntimeError("trace: expected a matrix")
        return _O.sum(self.diagonal(), None, False)

    def unfold(self, dimension: _int, size: _int, step: _int) -> Tensor:
        """A view of every slice of length ``size`` along ``dimension``, ``step`` apart, as a new
        last dim (same as ``torch.Tensor.unfold``). RuntimeError when ``size`` exceeds the dim or
        ``step`` is not positive."""
        n = self.ndim
        d = _wrap_dim(dimension, n)
        dim_size = self._shape[d] if n else 1
        if size > dim_size:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {dim_size} but size "
                               f"is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if not n:
            return _O.as_strided(self, [size], [1], self._offset)
        shape, stride = list(self._shape), list(self._stride)
        shape[d] = (dim_size - size) // step + 1
        last = stride[d]
        stride[d] = last * step
        return _O.as_strided(self, shape + [size], stride + [last], self._offset)

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a 2-D tensor (TensorPlay's dtypes are real: ``t()``);
        RuntimeError for other ranks (same as ``torch.Tensor.H``)."""
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.ndim}-D tensor. For batches of matrices, consider using "
                               f"tensor.mH")
        return _O.transpose(self, 0, 1)

    @property
    def mH(self) -> Tensor:
        """The last two dims swapped (real dtypes: ``mT``; ``torch.Tensor.mH``)."""
        return _O.transpose(self, -2, -1)

    def adjoint(self) -> Tensor:
        """``mH`` (same as ``torch.Tensor.adjoint``)."""
        return _O.transpose(self, -2, -1)

    # -- splitting --------------------------------------------------------------------------------
    def split_with_sizes(self, split_sizes: Sequence[_int], dim: _int = 0) -> tuple[Tensor, ...]:
        """``split(list(split_sizes), dim)`` (same as ``torch.Tensor.split_with_sizes``)."""
        return self.split(list(split_sizes), dim)

    def tensor_split(self, indices_or_sections: _int | Sequence[_int] | Tensor | None = None,
                     dim: _int = 0, *, sections: _int | None = None,
                     indices: Sequence[_int] | None = None,
                     tensor_indices_or_sections: Tensor | None = None) -> tuple[Tensor, ...]:
        """Views along ``dim``: an int ``n`` gives ``n`` parts whose sizes differ by at most
        one (the first ones larger); a sequence (or 1-D integer tensor) of indices gives the
        parts between them (same as ``torch.Tensor.tensor_split``; torch's keywords
        ``sections=``, ``indices=``, ``tensor_indices_or_sections=`` too; TypeError for none or
        several)."""
        given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
                 if v is not None]
        if len(given) != 1:
            raise TypeError("tensor_split() takes exactly one of indices_or_sections, sections=, "
                            "indices=, tensor_indices_or_sections=")
        indices_or_sections = given[0]
        if isinstance(indices_or_sections, Tensor):
            indices_or_sections = indices_or_sections.tolist()
        d = _wrap_dim(dim, self.ndim)
        size = self._shape[d]
        if isinstance(indices_or_sections, int):
            n = indices_or_sections
            if n <= 0:
                raise RuntimeError(f"number of sections must be larger than 0, got {n}")
            q, r = divmod(size, n)
            bounds, start = [], 0
            for i in range(n - 1):
                start += q + (1 if i < r else 0)
                bounds.append(start)
        else:
            bounds = list(indices_or_sections)
        out, prev = [], 0
        for b in bounds + [size]:
            b = min(max(b + size if b < 0 else b, 0), size)
            lo = min(prev, b)
            out.append(_O.narrow(self, d, lo, b - lo))
            prev = b
        return tuple(out)

    # -- NaN-aware and counting reductions ---------------------------------------------------------
    def count_nonzero(self, dim: _Dims = None, *dims: _int, axis: _Dims = None) -> Tensor:
        """Number of non-zero elements over ``dim`` (an int, a sequence, several ints, or all
        when None), int64 (same as ``torch.Tensor.count_nonzero``)."""
        if dims:
            dim = [dim, *dims]
        if axis is not None:
            dim = _numpy_names("count_nonzero", dim, False, axis, None)[0]
        return _O.sum(_O.ne(self, 0), _checked_dims(dim, "count_nonzero"), False)

    def argwhere(self) -> Tensor:
        """``nonzero()``: the ``(n, ndim)`` int64 indices of the non-zero elements (same as
        ``torch.Tensor.argwhere``)."""
        return _O.nonzero(self)

    def nansum(self, dim: _Dims = None, keepdim: _bool = False, *,
               dtype: _DTypeLike | None = None,
               axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """``sum`` with NaN counted as zero (same as ``torch.Tensor.nansum``)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("nansum", dim, keepdim, axis, keepdims)
        if dim is not None and dim.__class__ is not int:
            dim = _checked_dims(dim, "nansum")     # (its errors name nansum, not sum)
        x = _O.where(_O.isnan(self), 0, self) if self._dtype.is_floating_point else self
        return x.sum(dim, keepdim, dtype=dtype)

    def nanmean(self, dim: _Dims = None, keepdim: _bool = False, *,
                dtype: _DTypeLike | None = None,
                axis: _Dims = None, keepdims: _bool | None = None) -> Tensor:
        """Mean of the non-NaN elements over ``dim`` (NaN when there are none); floating
        tensors only, RuntimeError otherwise (same as ``torch.Tensor.nanmean``)."""
        if axis is not None or keepdims is not None:
            dim, keepdim = _numpy_names("nanmean", dim, keepdim, axis, keepdims)
        if dim is not None and dim.__class__ is not int:
            dim = _dims(dim, "nanmean")     # (its errors name nanmean, not sum or nansum)
        if not self._dtype.is_floating_point:
            raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                               f"dtype but got {self._dtype}")
        count = _O.logical_not(_O.isnan(self)).sum(dim, keepdim, dtype=dtype or self._dtype)
        return _O.div(self.nansum(dim, keepdim, dtype=dtype), count)

    def nan_to_num(self, nan: _float = 0.0, posinf: _float | None = None,
                   neginf: _float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
        dtype's largest and lowest finite values); integer and bool tensors are copied (same as
        ``torch.Tensor.nan_to_num``). The gradient is zero where a value was replaced."""
        if not self._dtype.is_floating_point:
            return _O.clone(self)
        fi = _surface.finfo(self._dtype)
        out = self.masked_fill(_O.isnan(self), nan)
        out = _O.masked_fill_(out, _O.eq(self, float("inf")), fi.max if posinf is None else posinf)
        return _O.masked_fill_(out, _O.eq(self, float("-inf")),
                               fi.min if neginf is None else neginf)

    def nan_to_num_(self, nan: _float = 0.0, posinf: _float | None = None,
                    neginf: _float | None = None) -> Tensor:
        """In-place ``nan_to_num``; returns ``self`` (same as ``torch.Tensor.nan_to_num_``)."""
        return _in_place(self, "nan_to_num_", Tensor.nan_to_num, nan, posinf, neginf)

    # -- elementwise composites --------------------------------------------------------------------
    def sgn(self) -> Tensor:
        """``sign()`` (real dtypes; same as ``torch.Tensor.sgn``)."""
        return _O.sign(self)

    def sgn_(self) -> Tensor:
        """In-place ``sgn`` (same as ``torch.Tensor.sgn_``)."""
        return _in_place(self, "sgn_", _O.sign)

    def deg2rad(self) -> Tensor:
        """``self * (pi / 180)`` (integers give the default float dtype; same as
        ``torch.Tensor.deg2rad``)."""
        x = self if self._dtype.is_floating_point else _O.to_dtype(self, _dtype.get_default_dtype())
        return _O.mul(x, 0.017453292519943295)

    def deg2rad_(self) -> Tensor:
        """In-place ``deg2rad``; an integer ``self`` raises RuntimeError (same as
        ``torch.Tensor.deg2rad_``)."""
        return _in_place(self, "deg2rad_", Tensor.deg2rad)

    def rad2deg(self) -> Tensor:
        """``self * (180 / pi)`` (same as ``torch.Tensor.rad2deg``)."""
        x = self if self._dtype.is_floating_point else _O.to_dtype(self, _dtype.get_default_dtype())
        return _O.mul(x, 57.29577951308232)

    def rad2deg_(self) -> Tensor:
        """In-place ``rad2deg`` (same as ``torch.Tensor.rad2deg_``)."""
        return _in_place(self, "rad2deg_", Tensor.rad2deg)

    def float_power(self, exponent: _TensorOrScalar) -> Tensor:
        """``pow`` computed in float64 (the result is float64; same as
        ``torch.Tensor.float_power``)."""
        f64 = _dtype.float64
        e = _O.to_dtype(exponent, f64) if isinstance(exponent, Tensor) and \
            exponent._dtype is not f64 else exponent
        return _O.pow(self if self._dtype is f64 else _O.to_dtype(self, f64), e)

    def float_power_(self, exponent: _TensorOrScalar) -> Tensor:
        """In-place ``float_power``: ``self`` must be float64 (RuntimeError otherwise, as torch)."""
        if self._dtype is not _dtype.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype {self._dtype} but the "
                               f"operation's result requires dtype float64")
        return _in_place(self, "float_power_", Tensor.float_power, exponent)

    def xlogy(self, other: _TensorOrScalar) -> Tensor:
        """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN); integers give
        the default float dtype (same as ``torch.Tensor.xlogy``)."""
        return _O.xlogy(self, other)   # the op tp::xlogy (torch's formulas)

    def xlogy_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``xlogy`` (same as ``torch.Tensor.xlogy_``)."""
        return _in_place(self, "xlogy_", Tensor.xlogy, other)

    # -- matrix-vector -----------------------------------------------------------------------------
    def mv(self, vec: Tensor) -> Tensor:
        """Matrix (2-D) times vector (1-D) (same as ``torch.Tensor.mv``); RuntimeError for other
        ranks."""
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, "
                               f"{vec.ndim}")
        return _O.matmul(self, vec)

    def ger(self, vec2: Tensor) -> Tensor:
        """``outer(vec2)`` (same as ``torch.Tensor.ger``)."""
        return _surface.outer(self, vec2)

    def inner(self, other: Tensor) -> Tensor:
        """Sum over the last dims of ``self`` and ``other``: shape ``self.shape[:-1] +
        other.shape[:-1]``; a 0-d operand multiplies (same as ``torch.Tensor.inner``)."""
        if not self._shape or not other._shape:
            return _O.mul(self, other)
        return _surface.tensordot(self, other, ([-1], [-1]))

    # -- index writes along a dim ------------------------------------------------------------------
    def index_fill_(self, dim: _int, index: Tensor, value: _TensorOrScalar) -> Tensor:
        """Write ``value`` (a number or 0-dim tensor) at the positions ``index`` (0-D or 1-D
        int64) of ``dim``; returns ``self``; an expanded ``self`` is written too (same as
        ``torch.Tensor.index_fill_``). ``RuntimeError`` when ``self``'s dtype cannot hold the
        value (a 0-dim tensor checked as its number: ``tensor(300)`` into int8)."""
        if isinstance(value, Tensor):
            if value._shape:
                raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                                   f"got tensor with {value.ndim} dimension(s).")
            _check_fill_tensor("index_fill_", value, self._dtype)
        else:
            value = _check_fill("index_fill_", value, self._dtype)
        vec = _index_vector("index_fill_", index)
        _check_no_overlap(self, index)     # (torch's assert_no_overlap(self, index))
        if 0 in self._stride and _expanded(self):
            _warn_expanded_put(2, "index_fill_")      # (torch's, as masked_fill_'s)
        return _O.index_put_(self, dim, vec, value, api="index_fill_")

    def index_fill(self, dim: _int, index: Tensor, value: _TensorOrScalar) -> Tensor:
        """Out-of-place ``index_fill_`` (same as ``torch.Tensor.index_fill``)."""
        return _O.clone(self).index_fill_(dim, index, value)

    def index_copy_(self, dim: _int, index: Tensor, source: Tensor) -> Tensor:
        """Copy the slices of ``source`` along ``dim`` to the positions ``index`` (0-D or 1-D
        int64) of ``self``; returns ``self`` (same as ``torch.Tensor.index_copy_``), with
        torch's checks in its order and classes: an expanded ``self`` (a stride-0 dimension of
        size > 1) or an ``index``/``source`` sharing memory with ``self``: RuntimeError; an
        index of 2 or more dims, a 0-dim ``source`` with other than one index, a ``source`` of
        another number of dims: IndexError; an index not int64, a ``source`` of another dtype,
        other slice shapes: RuntimeError; as many indices as ``source.size(dim)``: IndexError
        otherwise."""
        if not isinstance(index, Tensor) or not isinstance(source, Tensor):
            _index_vector("index_copy_", index)
            raise TypeError("index_copy_(): index and source must be tensors")
        d = _wrap_dim(dim, self.ndim)
        if 0 in self.stride_tuple:
            # index_put_ may write an expanded tensor (as torch's); torch's index_copy_ refuses
            from ._dispatch import check_overlap
            check_overlap(_O.index_put_, 0, self, "index_copy_")
        _no_overlap(self, index, source)       # (torch's assert_no_overlap, both)
        if index.ndim > 1:
            raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got "
                             f"{index.ndim})")
        n = index.numel()
        sd, xd = source.ndim, self.ndim
        if not sd and n != 1:
            raise IndexError(f"index_copy_(): When source is scalar, index should have one "
                             f"element (got {n})")
        if sd != xd and sd and xd:
            raise IndexError(f"index_copy_(): When source and destination are not scalars, "
                             f"their dimensionality must match. Source dimensionality ({sd}), "
                             f"destination dimensionality ({xd})")
        if index._dtype is not _dtype.int64:
            _check_index_dtype("index_copy_", index._dtype)
        if source._dtype is not self._dtype:
            raise RuntimeError(f"index_copy_(): self and source expected to have the same "
                               f"dtype, but got (self) {self._dtype} and (source) "
                               f"{source._dtype}")
        xs = [k for i, k in enumerate(self._shape) if i != d]
        ss = [k for i, k in enumerate(source._shape) if i != d]
        if xs != ss:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {', '.join(map(str, xs))} at "
                               f"dimension {d} and source slice shape: "
                               f"{', '.join(map(str, ss))} at dimension 0.")
        if sd and n != source._shape[d]:
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                             f"source.size(dim) ({source._shape[d]})")
        if not index._shape:
            index = _O.reshape(index, [1])
        # (the op applies index_copy_'s rule: int64, no negative index)
        return _O.index_put_(self, dim, index, source, api="index_copy_")

    def index_copy(self, dim: _int, index: Tensor, source: Tensor) -> Tensor:
        """Out-of-place ``index_copy_`` (same as ``torch.Tensor.index_copy``)."""
        return _O.clone(self).index_copy_(dim, index, source)

    # -- random fills ------------------------------------------------------------------------------
    # (torch's generator= is taken as None only: TypeError for a generator object, as TensorPlay
    # has none; every fill draws from the device's generator, seeded by tensorplay.manual_seed)
    def bernoulli(self, p: _float | None = None, *, generator: None = None) -> Tensor:
        """0/1 draws in ``self``'s dtype: each with probability ``self``'s element (floating
        probabilities), or ``p`` (same as ``torch.Tensor.bernoulli``)."""
        _no_generator("bernoulli", generator)
        if p is None:
            if not self._dtype.is_floating_point:
                raise RuntimeError(f"bernoulli: expected a floating tensor of probabilities, "
                                   f"got {self._dtype}")
            return _O.to_dtype(_O.lt(_uniform_like(self), self.detach()), self._dtype)
        return _O.clone(self.detach()).bernoulli_(p)

    def bernoulli_(self, p: _TensorOrScalar = 0.5, *, generator: None = None) -> Tensor:
        """Fill in place with 0/1 draws of probability ``p`` (a number in [0, 1] or a tensor of
        probabilities broadcasting to ``self``); returns ``self`` (same as
        ``torch.Tensor.bernoulli_``)."""
        _no_generator("bernoulli_", generator)
        if not isinstance(p, Tensor) and not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        return _named("bernoulli_", _O.copy_, self, _O.lt(_uniform_like(self), p.detach() if isinstance(p, Tensor)
                                    else p))

    def exponential_(self, lambd: _float = 1.0, *, generator: None = None) -> Tensor:
        """Fill in place with exponential draws of rate ``lambd`` (same as
        ``torch.Tensor.exponential_``)."""
        _no_generator("exponential_", generator)
        u = _uniform_like(self)
        return _named("exponential_", _O.copy_, self, _O.div(_O.neg(_O.log1p(_O.neg(u))), lambd))

    def log_normal_(self, mean: _float = 1.0, std: _float = 2.0, *,
                    generator: None = None) -> Tensor:
        """Fill in place with ``exp(N(mean, std))`` draws (same as
        ``torch.Tensor.log_normal_``)."""
        _no_generator("log_normal_", generator)
        z = _O.randn(list(self._shape), dtype=_draw_dtype(self), device=self._device)
        return _named("log_normal_", _O.copy_, self, _O.exp(_O.add(_O.mul(z, std), mean)))

    def cauchy_(self, median: _float = 0.0, sigma: _float = 1.0, *,
                generator: None = None) -> Tensor:
        """Fill in place with Cauchy draws (same as ``torch.Tensor.cauchy_``)."""
        _no_generator("cauchy_", generator)
        u = _uniform_like(self)
        return _named("cauchy_", _O.copy_, self, _O.add(_O.mul(_O.tan(_O.mul(_O.sub(u, 0.5), 3.141592653589793)),
                                            sigma), median))

    def geometric_(self, p: _float, *, generator: None = None) -> Tensor:
        """Fill in place with the number of trials to the first success of probability ``p``
        (1, 2, ...; same as ``torch.Tensor.geometric_``)."""
        _no_generator("geometric_", generator)
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        import math
        u = _uniform_like(self)
        return _named("geometric_", _O.copy_, self, _O.ceil(_O.div(_O.log1p(_O.neg(u)), math.log1p(-p))))

    # -- torch's indexing methods --------------------------------------------------------------
    def index_put_(self, indices: Sequence[Tensor], values: _TensorOrScalar,
                   accumulate: _bool = False) -> Tensor:
        """``self[indices] = values`` (``indices``: a tuple of integer or bool index tensors,
        broadcast together, indexing the leading dims); with ``accumulate=True`` the values are
        added, repeated positions summing. Returns ``self`` (same as
        ``torch.Tensor.index_put_``), with torch's rules: ``values`` has ``self``'s dtype and
        neither it nor an index tensor shares memory with ``self`` (RuntimeError), except that
        one bool mask with a one-element cpu ``values`` (not accumulating) is torch's
        ``masked_fill_``: the value is cast, a mask partially overlapping ``self`` refused."""
        indices = tuple(indices)
        if not self._shape and indices:       # (torch's, whatever the index: a 0-dim bool too)
            raise IndexError(f"too many indices for tensor of dimension 0 (got {len(indices)})")
        if not accumulate and _to_masked_fill(indices, values, self._device):
            m = next(i for i in indices if i is not None)
            _check_partial_overlap(self, m)
        else:
            _check_index_write(self, indices, values)
            _check_index_put_dtype(self, values)
        if not accumulate:
            if not isinstance(values, Tensor) or values.numel() == 1:
                _refuse_byte_fill(indices, values, "index_put_()")
            # bool masks as their nonzero positions: x[mask] = values (values one per True)
            # through the integer-index path, which takes them (its checks made above)
            _setitem(self, _int_indices(indices), values, False)
            return self
        if 0 in self._stride and _expanded(self):    # (torch: a warning, the sums written)
            return _put_accumulate_expanded(self, indices, values, _index_put_accumulated)
        return _in_place(self, "index_put_", _index_put_accumulated, indices, values)

    def index_put(self, indices: Sequence[Tensor], values: _TensorOrScalar,
                  accumulate: _bool = False) -> Tensor:
        """Out-of-place ``index_put_`` (same as ``torch.Tensor.index_put``)."""
        return _O.clone(self).index_put_(indices, values, accumulate)

    def put_(self, index: Tensor, source: Tensor, accumulate: _bool = False) -> Tensor:
        """Write (``accumulate=True``: add) ``source``'s elements at the positions ``index`` of
        the tensor read as 1-D in row-major order (negative indices from the end); returns
        ``self`` (same as ``torch.Tensor.put_``). ``source`` has ``self``'s dtype and as many
        elements as ``index`` (RuntimeError otherwise), and neither shares memory with ``self``
        (RuntimeError, torch's ``assert_no_overlap``)."""
        _no_overlap(self, index, source)
        return _in_place(self, "put_", _put, index, source, accumulate)

    def put(self, index: Tensor, source: Tensor, accumulate: _bool = False) -> Tensor:
        """Out-of-place ``put_`` (same as ``torch.Tensor.put``)."""
        return _put(self, index, source, accumulate)

    def bincount(self, weights: Tensor | None = None, minlength: _int = 0) -> Tensor:
        """How often each value ``0..max`` occurs in this 1-D non-negative integer tensor (at
        least ``minlength`` bins): int64 counts, or the sums of ``weights`` (float32 weights
        stay float32, others give float64), as ``torch.Tensor.bincount``. RuntimeError for
        other inputs. The length depends on the values (data-dependent under compile)."""
        if self.ndim != 1 or self._dtype.is_floating_point or self._dtype is _dtype.bool:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if minlength < 0:
            raise RuntimeError("minlength should be >= 0")
        n = self._shape[0]
        lo, hi = _index_extremes([self])[0] if n else (0, -1)     # (one read of the device)
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        size = max(minlength, hi + 1)
        idx = _O.to_dtype(self, _dtype.int64) if self._dtype is not _dtype.int64 else self
        if weights is None:
            src = _like_self(self, "full", [n], 1, _dtype.int64, None, False)
        else:
            if weights._shape != self._shape:
                raise RuntimeError("weights should be 1-d and have the same length as input")
            wdt = weights._dtype if weights._dtype in (_dtype.float32, _dtype.float64) else \
                _dtype.float64
            src = weights if weights._dtype is wdt else _O.to_dtype(weights, wdt)
        out = _like_self(self, "full", [size], 0, src._dtype, None, False)
        return _O.scatter_add(out, 0, idx, src)

    def take(self, index: Tensor) -> Tensor:
        """The elements at ``index`` of the flattened tensor, in ``index``'s shape; negative
        indices count from the end (same as ``torch.Tensor.take``); ``index`` is int64."""
        return _O.index(self if len(self._shape) == 1 else _O.reshape(self, [-1]), 0, index,
                        api="take")

    def take_along_dim(self, indices: Tensor, dim: _int | None = None) -> Tensor:
        """``gather`` along ``dim`` with ``self`` and ``indices`` broadcast in the other dims;
        ``dim=None``: both flattened (same as ``torch.Tensor.take_along_dim``). An index out
        of range is a RuntimeError naming take_along_dim."""
        if dim is None:
            try:
                return _O.gather(_O.reshape(self, [-1]), 0, _O.reshape(indices, [-1]))
            except RuntimeError as e:
                raise _renamed(e, "gather", "take_along_dim") from None
        if indices._dtype is not _dtype.int64:     # int64 only with a dim (torch's rule)
            _check_index_dtype("take_along_dim", indices._dtype)
        if indices.ndim != self.ndim:
            raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                               "number of dimensions, but got " f"{self.ndim} dimensions for "
                               f"input, and {indices.ndim} dimensions for indices")
        d = _wrap_dim(dim, self.ndim)
        from ._ops._shapes import broadcast_shapes
        a, b = list(self._shape), list(indices._shape)
        a[d] = b[d] = 1
        common = list(broadcast_shapes(tuple(a), tuple(b), api="take_along_dim"))
        sa, sb = list(common), list(common)
        sa[d], sb[d] = self._shape[d], indices._shape[d]
        x = self if list(self._shape) == sa else _O.expand(self, sa)
        i = indices if list(indices._shape) == sb else _O.expand(indices, sb)
        try:
            return _O.gather(x, d, i)
        except RuntimeError as e:
            raise _renamed(e, "gather", "take_along_dim") from None

    def fill_diagonal_(self, fill_value: _Number, wrap: _bool = False) -> Tensor:
        """Write ``fill_value`` on the main diagonal (all dims equal for more than 2); a tall
        matrix with ``wrap=True`` restarts the diagonal every ``cols + 1`` rows. Returns
        ``self`` (same as ``torch.Tensor.fill_diagonal_``)."""
        n = self.ndim
        if n < 2:
            raise RuntimeError("dimensions must larger than 1")
        if n > 2 and len(set(self._shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        from ._factories import arange
        idx = [_O.reshape(arange(s, device=self._device), [s if j == i else 1 for j in range(n)])
               for i, s in enumerate(self._shape)]
        if n == 2 and wrap and self._shape[0] > self._shape[1]:
            cols = self._shape[1]
            mask = _O.eq(_O.remainder(_O.add(_O.mul(idx[0], cols), idx[1]), cols + 1), 0)
        else:
            mask = _O.eq(idx[0], idx[1])
            for k in range(2, n):
                mask = _O.logical_and(mask, _O.eq(idx[0], idx[k]))
        return _O.masked_fill_(self, mask, _check_fill("fill_diagonal_", fill_value,
                                                       self._dtype))

    # -- shape composites ---------------------------------------------------------------------
    def rot90(self, k: _int = 1, dims: Sequence[_int] = (0, 1)) -> Tensor:
        """Rotated by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the
        second dim; same as ``torch.Tensor.rot90``); RuntimeError for fewer than 2 dims or equal
        ``dims``."""
        dims = list(dims)
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
        d0, d1 = _wrap_dim(dims[0], self.ndim), _wrap_dim(dims[1], self.ndim)
        if d0 == d1:
            raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                               f"dim1 = {d1}")
        k %= 4
        if k == 1:
            return _O.transpose(_surface.flip(self, [d1]), d0, d1)
        if k == 2:
            return _surface.flip(self, [d0, d1])
        if k == 3:
            return _O.transpose(_surface.flip(self, [d0]), d0, d1)
        return _O.clone(self)

    def diff(self, n: _int = 1, dim: _int = -1, prepend: Tensor | None = None,
             append: Tensor | None = None) -> Tensor:
        """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first;
        bool tensors give ``!=``; same as ``torch.Tensor.diff``)."""
        if n < 0:
            raise RuntimeError(f"order must be non-negative but got {n}")
        d = _wrap_dim(dim, self.ndim)
        x = self
        if prepend is not None or append is not None:
            x = _O.cat([t for t in (prepend, self, append) if t is not None], d)
        op = _O.ne if x._dtype is _dtype.bool else _O.sub
        for _ in range(n):
            m = x._shape[d]
            if m == 0:
                break
            x = op(_O.narrow(x, d, 1, m - 1), _O.narrow(x, d, 0, m - 1))
        return x

    def hsplit(self, sections: _int | Sequence[_int] | None = None, *more: _int,
               indices: Sequence[_int] | None = None) -> tuple[Tensor, ...]:
        """``tensor_split`` along dim 1 (dim 0 of a 1-D tensor); an int must divide the dim
        (same as ``torch.Tensor.hsplit``)."""
        return _np_split(self, _one_of("hsplit", sections, indices, more), 1 if self.ndim > 1 else 0,
                         "hsplit", 1)

    def vsplit(self, sections: _int | Sequence[_int] | None = None, *more: _int,
               indices: Sequence[_int] | None = None) -> tuple[Tensor, ...]:
        """``tensor_split`` along dim 0 of a tensor of at least 2 dims (same as
        ``torch.Tensor.vsplit``)."""
        return _np_split(self, _one_of("vsplit", sections, indices, more), 0, "vsplit", 2)

    def dsplit(self, sections: _int | Sequence[_int] | None = None, *more: _int,
               indices: Sequence[_int] | None = None) -> tuple[Tensor, ...]:
        """``tensor_split`` along dim 2 of a tensor of at least 3 dims (same as
        ``torch.Tensor.dsplit``)."""
        return _np_split(self, _one_of("dsplit", sections, indices, more), 2, "dsplit", 3)

    def msort(self) -> Tensor:
        """``sort(dim=0).values`` (same as ``torch.Tensor.msort``)."""
        return _O.sort(self, 0, False, stable=False)[0]

    def narrow_copy(self, dim: _int, start: _int, length: _int) -> Tensor:
        """``narrow(...)`` as a copy (same as ``torch.Tensor.narrow_copy``)."""
        return _O.clone(_O.narrow(self, dim, start, length))

    def diagflat(self, offset: _int = 0) -> Tensor:
        """The flattened tensor on diagonal ``offset`` of a square matrix (same as
        ``torch.Tensor.diagflat``)."""
        return _surface.diag(_O.reshape(self, [-1]), offset)

    def diag_embed(self, offset: _int = 0, dim1: _int = -2, dim2: _int = -1) -> Tensor:
        """A tensor with one more dim whose planes ``dim1``/``dim2`` hold the last dim of
        ``self`` on diagonal ``offset``, zeros elsewhere (same as
        ``torch.Tensor.diag_embed``); differentiable."""
        n = self.ndim + 1
        d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        size = self._shape[-1] + abs(offset)
        rest = iter(self._shape[:-1])
        shape = [size if i in (d1, d2) else next(rest) for i in range(n)]
        out = _like_self(self, "full", shape, 0, self._dtype, None, False)
        _O.copy_(out.diagonal(offset, d1, d2), self)
        return out

    def cross(self, other: Tensor, dim: _int | None = None) -> Tensor:
        """The 3-vector cross product along ``dim`` (by default the first dim of size 3) of
        ``self`` and ``other`` broadcast together (same as ``torch.Tensor.cross``)."""
        from ._ops._shapes import broadcast_shapes
        shape = list(broadcast_shapes(tuple(self._shape), tuple(other._shape), api="cross"))
        a = self if list(self._shape) == shape else _O.expand(self, shape)
        b = other if list(other._shape) == shape else _O.expand(other, shape)
        if dim is None:
            dim = next((i for i, s in enumerate(shape) if s == 3), None)
            if dim is None:
                raise RuntimeError("no dimension of size 3 in input")
        d = _wrap_dim(dim, len(shape))
        if shape[d] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{self._shape[d]} and {other._shape[d]}")
        a0, a1, a2 = (_O.narrow(a, d, i, 1) for i in range(3))
        b0, b1, b2 = (_O.narrow(b, d, i, 1) for i in range(3))
        return _O.cat([_O.sub(_O.mul(a1, b2), _O.mul(a2, b1)),
                       _O.sub(_O.mul(a2, b0), _O.mul(a0, b2)),
                       _O.sub(_O.mul(a0, b1), _O.mul(a1, b0))], d)

    # -- linear algebra (session 46, h-linalg46): torch's methods, forwarding to tensorplay.linalg
    def det(self) -> Tensor:
        """The determinant of each matrix (same as ``torch.Tensor.det``; ``linalg.det``)."""
        from . import linalg
        return linalg.det(self)

    def logdet(self) -> Tensor:
        """``log(det(self))`` (NaN for a negative determinant; ``torch.Tensor.logdet``)."""
        from . import linalg
        return linalg.logdet(self)

    def slogdet(self) -> Any:
        """``(sign, logabsdet)`` of the determinant (``torch.Tensor.slogdet``)."""
        from . import linalg
        return linalg.top_slogdet(self)

    def inverse(self) -> Tensor:
        """The inverse of each square matrix (``torch.Tensor.inverse``; ``linalg.inv``)."""
        from . import linalg
        return linalg.inverse(self)

    def cholesky(self, upper: _bool = False) -> Tensor:
        """The Cholesky factor, lower or upper (``torch.Tensor.cholesky``)."""
        from . import linalg
        return linalg.top_cholesky(self, upper)

    def qr(self, some: _bool = True) -> Any:
        """``(Q, R)``, reduced or complete (``torch.Tensor.qr``)."""
        from . import linalg
        return linalg.top_qr(self, some)

    def svd(self, some: _bool = True, compute_uv: _bool = True) -> Any:
        """``(U, S, V)`` (V, not Vh; ``torch.Tensor.svd``)."""
        from . import linalg
        return linalg.top_svd(self, some, compute_uv)

    def pinverse(self, rcond: _float = 1e-15) -> Tensor:
        """The pseudo-inverse (``torch.Tensor.pinverse``; ``linalg.pinv``)."""
        from . import linalg
        return linalg.pinverse(self, rcond)

    def matrix_power(self, n: _int) -> Tensor:
        """``self`` to the integer power ``n`` (``torch.Tensor.matrix_power``)."""
        from . import linalg
        return linalg.matrix_power(self, n)

    def dist(self, other: Tensor, p: _float = 2) -> Tensor:
        """The ``p``-norm of ``self - other`` (``torch.Tensor.dist``; ``tensorplay.dist``)."""
        return _surface.dist(self, other, p)

    # -- floating composites ------------------------------------------------------------------
    def logaddexp(self, other: Tensor) -> Tensor:
        """``log(exp(self) + exp(other))`` computed stably, as torch's kernel (equal infinities
        give themselves); floating tensors only (same as ``torch.Tensor.logaddexp``)."""
        return _logaddexp(self, other, False)

    def logaddexp2(self, other: Tensor) -> Tensor:
        """``log2(2**self + 2**other)``, as ``logaddexp`` (same as
        ``torch.Tensor.logaddexp2``)."""
        return _logaddexp(self, other, True)

    # -- session 44 (h-gaps44): torch's two-operand math, inverse hyperbolics, and the
    # value+index reductions (tensorplay._ops.elementwise / reduction / sorting_topk) -----------
    def atan2(self, other: Tensor) -> Tensor:
        """Elementwise arctangent of ``self / other`` in (-pi, pi] by the quadrant of
        ``(other, self)``; tensors only (TypeError for a number, as torch); integer and bool
        operands give the default float dtype (same as ``torch.Tensor.atan2``)."""
        return _O.atan2(self, other)

    def atan2_(self, other: Tensor) -> Tensor:
        """In-place ``atan2``; RuntimeError for an integer ``self`` (the result is floating;
        same as ``torch.Tensor.atan2_``)."""
        return _in_place(self, "atan2_", _O.atan2, other)

    def hypot(self, other: Tensor) -> Tensor:
        """``sqrt(self**2 + other**2)`` without overflow; floating tensors only
        (NotImplementedError otherwise, as ``torch.Tensor.hypot``)."""
        return _O.hypot(self, other)

    def hypot_(self, other: Tensor) -> Tensor:
        """In-place ``hypot`` (same as ``torch.Tensor.hypot_``)."""
        return _in_place(self, "hypot_", _O.hypot, other)

    def fmax(self, other: Tensor) -> Tensor:
        """Elementwise maximum where a NaN loses to a number (NaN only where both are NaN);
        tensors only, broadcast, promoted as ``maximum`` (same as ``torch.Tensor.fmax``)."""
        return _O.fmax(self, other)

    def fmin(self, other: Tensor) -> Tensor:
        """Elementwise minimum where a NaN loses to a number (NaN only where both are NaN);
        tensors only, broadcast, promoted as ``minimum`` (same as ``torch.Tensor.fmin``)."""
        return _O.fmin(self, other)

    def fmod(self, other: _TensorOrScalar) -> Tensor:
        """C's ``fmod``: the remainder of ``self / other`` with ``self``'s sign (``remainder``
        takes ``other``'s); keeps integer dtypes (RuntimeError for an integer zero divisor,
        NotImplementedError for bool; same as ``torch.Tensor.fmod``)."""
        return _O.fmod(self, other)

    def fmod_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``fmod`` (same as ``torch.Tensor.fmod_``)."""
        return _in_place(self, "fmod_", _O.fmod, other)

    def copysign(self, other: _TensorOrScalar) -> Tensor:
        """``|self|`` with the sign of ``other`` (a tensor or number; -0.0 counts as negative);
        integer and bool operands give the default float dtype (same as
        ``torch.Tensor.copysign``)."""
        return _O.copysign(self, other)

    def copysign_(self, other: _TensorOrScalar) -> Tensor:
        """In-place ``copysign`` (same as ``torch.Tensor.copysign_``)."""
        return _in_place(self, "copysign_", _O.copysign, other)

    def nextafter(self, other: Tensor) -> Tensor:
        """The next floating value after ``self`` toward ``other``; floating tensors only
        (same as ``torch.Tensor.nextafter``)."""
        return _O.nextafter(self, other)

    def nextafter_(self, other: Tensor) -> Tensor:
        """In-place ``nextafter`` (same as ``torch.Tensor.nextafter_``)."""
        return _in_place(self, "nextafter_", _O.nextafter, other)

    def asinh(self) -> Tensor:
        """Inverse hyperbolic sine; integer and bool inputs give the default float dtype (same
        as ``torch.Tensor.asinh``)."""
        return _O.asinh(self)

    def asinh_(self) -> Tensor:
        """In-place ``asinh`` (same as ``torch.Tensor.asinh_``)."""
        return _in_place(self, "asinh_", _O.asinh)

    def acosh(self) -> Tensor:
        """Inverse hyperbolic cosine (NaN below 1), as ``torch.Tensor.acosh``."""
        return _O.acosh(self)

    def acosh_(self) -> Tensor:
        """In-place ``acosh`` (same as ``torch.Tensor.acosh_``)."""
        return _in_place(self, "acosh_", _O.acosh)

    def atanh(self) -> Tensor:
        """Inverse hyperbolic tangent (+-inf at +-1, NaN beyond), as ``torch.Tensor.atanh``."""
        return _O.atanh(self)

    def atanh_(self) -> Tensor:
        """In-place ``atanh`` (same as ``torch.Tensor.atanh_``)."""
        return _in_place(self, "atanh_", _O.atanh)

    arctan2, arctan2_, arcsinh, arcsinh_ = atan2, atan2_, asinh, asinh_
    arccosh, arccosh_, arctanh, arctanh_ = acosh, acosh_, atanh, atanh_

    def aminmax(self, *, dim: _int | None = None, keepdim: _bool = False) -> _rt.aminmax:
        """``(min, max)`` over ``dim`` (every element when None) as
        ``tensorplay.return_types.aminmax`` (same as ``torch.Tensor.aminmax``): NaN propagates;
        RuntimeError over an empty dim; gradients split evenly among ties (as amin/amax)."""
        from . import return_types
        from ._ops.reduction import aminmax
        if dim is not None and dim.__class__ is not int:
            dim = _index_dim(dim, "aminmax(): ")    # (one int dim: no tuple, no tensor([1]))
        return return_types.aminmax(*aminmax(self, dim=dim, keepdim=keepdim))

    def median(self, dim: _int | None = _NO_DIM,
               keepdim: _bool = _NO_KEEPDIM) -> Tensor | _rt.median:
        """Without ``dim``: the lower median of every element (0-dim; NaN if any is NaN; NaN for
        no element); with ``dim``: ``(values, indices)`` along it
        (``tensorplay.return_types.median``; a slice holding NaN gives NaN and its first NaN's
        index), as ``torch.Tensor.median``. NotImplementedError for bool, IndexError for an
        empty dim. ``keepdim`` without ``dim``, or ``dim=None``: TypeError (torch's
        overloads)."""
        from ._ops.sorting_topk import median_all, median_dim
        dim, keepdim = _keepdim_without_dim("median", dim, keepdim, False)
        if dim is None:
            return median_all(self)
        from . import return_types
        return return_types.median(*median_dim(self, dim, keepdim))

    def nanmedian(self, dim: _int | None = _NO_DIM,
                  keepdim: _bool = _NO_KEEPDIM) -> Tensor | _rt.nanmedian:
        """``median`` ignoring NaN (NaN only where every value is NaN), as
        ``torch.Tensor.nanmedian`` (its rule for ``keepdim``/``dim=None`` too)."""
        from ._ops.sorting_topk import median_all, median_dim
        dim, keepdim = _keepdim_without_dim("nanmedian", dim, keepdim, False)
        if dim is None:
            return median_all(self, nan_ignored=True)
        from . import return_types
        return return_types.nanmedian(*median_dim(self, dim, keepdim, nan_ignored=True))

    def kthvalue(self, k: _int, dim: _int = -1, keepdim: _bool = False) -> _rt.kthvalue:
        """The ``k``-th smallest value along ``dim`` and its index
        (``tensorplay.return_types.kthvalue``; NaN counts as the largest value), as
        ``torch.Tensor.kthvalue``; RuntimeError for ``k`` outside ``[1, size]``. When the
        ``k``-th value occurs more than once, the index on cpu is the one torch's cpu kernel
        returns (same as ``torch.kthvalue``: its quickselect replayed on those slices); on other
        devices the ``k``-th of a stable sort."""
        from . import return_types
        from ._ops.sorting_topk import kthvalue
        return return_types.kthvalue(*kthvalue(self, k, dim, keepdim))

    def mode(self, dim: _int = -1, keepdim: _bool = False) -> _rt.mode:
        """The most frequent value along ``dim`` (the smallest of equally frequent ones) and
        the index of its last occurrence (``tensorplay.return_types.mode``), as
        ``torch.Tensor.mode``; IndexError for an empty dim."""
        from . import return_types
        from ._ops.sorting_topk import mode
        return return_types.mode(*mode(self, dim, keepdim))

    def cummax(self, dim: _int) -> _rt.cummax:
        """Running maximum along ``dim`` and the index where it was last reached
        (``tensorplay.return_types.cummax``; NaN propagates), as ``torch.Tensor.cummax``."""
        from . import return_types
        from ._ops.reduction import cum_extremum
        return return_types.cummax(*cum_extremum("cummax", self, dim))

    def cummin(self, dim: _int) -> _rt.cummin:
        """Running minimum along ``dim``, as ``cummax`` (same as ``torch.Tensor.cummin``)."""
        from . import return_types
        from ._ops.reduction import cum_extremum
        return return_types.cummin(*cum_extremum("cummin", self, dim))

    def logit(self, eps: _float | None = None) -> Tensor:
        """``log(z / (1 - z))`` with ``z`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given;
        integers give the default float dtype (same as ``torch.Tensor.logit``). The op
        ``tp::logit`` (torch's backward: NaN outside [0, 1] without ``eps``, 0 outside the
        clamp with it)."""
        return _O.logit(self, eps)

    def logit_(self, eps: _float | None = None) -> Tensor:
        """In-place ``logit`` (same as ``torch.Tensor.logit_``)."""
        return _in_place(self, "logit_", Tensor.logit, eps)

    # -- special functions (session 46: the ops of _ops/special.py) ---------------------------
    # Each floating one gives the default float dtype for integer and bool tensors; its in-place
    # form raises RuntimeError for an integer or bool ``self`` (a floating result cannot be cast
    # into it), nothing written.
    def lgamma(self) -> Tensor:
        """``log|Gamma(self)|``, elementwise (+inf at the poles 0, -1, -2, ... and at +-inf;
        same as ``torch.Tensor.lgamma``)."""
        return _O.lgamma(self)

    def lgamma_(self) -> Tensor:
        """In-place ``lgamma`` (same as ``torch.Tensor.lgamma_``)."""
        return _in_place(self, "lgamma_", _O.lgamma)

    def digamma(self) -> Tensor:
        """``d/dx log Gamma(self)``, elementwise (-inf at +0, +inf at -0, NaN at negative
        integers; same as ``torch.Tensor.digamma``)."""
        return _O.digamma(self)

    def digamma_(self) -> Tensor:
        """In-place ``digamma`` (same as ``torch.Tensor.digamma_``)."""
        return _in_place(self, "digamma_", _O.digamma)

    def polygamma(self, n: _int) -> Tensor:
        """The ``n``-th derivative of ``digamma`` (``n >= 0``; RuntimeError for a negative
        ``n``), elementwise (same as ``torch.Tensor.polygamma``)."""
        return _O.polygamma(n, self)

    def polygamma_(self, n: _int) -> Tensor:
        """In-place ``polygamma`` (same as ``torch.Tensor.polygamma_``)."""
        return _in_place(self, "polygamma_", lambda x: _O.polygamma(n, x))

    def mvlgamma(self, p: _int) -> Tensor:
        """The multivariate log-gamma function of dimension ``p`` (``p >= 1``, else
        RuntimeError), elementwise (same as ``torch.Tensor.mvlgamma``)."""
        return _O.mvlgamma(self, p)

    def mvlgamma_(self, p: _int) -> Tensor:
        """In-place ``mvlgamma`` (same as ``torch.Tensor.mvlgamma_``)."""
        return _in_place(self, "mvlgamma_", _O.mvlgamma, p)

    def erfc(self) -> Tensor:
        """``1 - erf(self)`` computed without cancellation, elementwise (same as
        ``torch.Tensor.erfc``)."""
        return _O.erfc(self)

    def erfc_(self) -> Tensor:
        """In-place ``erfc`` (same as ``torch.Tensor.erfc_``)."""
        return _in_place(self, "erfc_", _O.erfc)

    def erfinv(self) -> Tensor:
        """The inverse error function on [-1, 1] (+-inf at +-1, NaN outside), elementwise
        (same as ``torch.Tensor.erfinv``)."""
        return _O.erfinv(self)

    def erfinv_(self) -> Tensor:
        """In-place ``erfinv`` (same as ``torch.Tensor.erfinv_``)."""
        return _in_place(self, "erfinv_", _O.erfinv)

    def i0(self) -> Tensor:
        """The modified Bessel function of the first kind of order 0, elementwise (same as
        ``torch.Tensor.i0``)."""
        return _O.i0(self)

    def i0_(self) -> Tensor:
        """In-place ``i0`` (same as ``torch.Tensor.i0_``)."""
        return _in_place(self, "i0_", _O.i0)

    def sinc(self) -> Tensor:
        """``sin(pi x) / (pi x)``, 1 at 0, elementwise (same as ``torch.Tensor.sinc``)."""
        return _O.sinc(self)

    def sinc_(self) -> Tensor:
        """In-place ``sinc`` (same as ``torch.Tensor.sinc_``)."""
        return _in_place(self, "sinc_", _O.sinc)

    def heaviside(self, values: Tensor) -> Tensor:
        """0 where ``self < 0``, ``values`` where ``self == 0``, 1 where ``self > 0``, with
        broadcasting; ``values`` must have ``self``'s dtype (RuntimeError otherwise); not
        differentiable (same as ``torch.Tensor.heaviside``)."""
        return _O.heaviside(self, values)

    def heaviside_(self, values: Tensor) -> Tensor:
        """In-place ``heaviside`` (same as ``torch.Tensor.heaviside_``)."""
        return _in_place(self, "heaviside_", _O.heaviside, values)

    def ldexp(self, other: Tensor) -> Tensor:
        """``self * 2 ** other`` (torch's composition: ``2 ** other`` in ``other``'s floating
        dtype, the default one for integers, then the product's promotion; same as
        ``torch.Tensor.ldexp``)."""
        return _O.ldexp(self, other)

    def ldexp_(self, other: Tensor) -> Tensor:
        """In-place ``ldexp`` (same as ``torch.Tensor.ldexp_``)."""
        return _in_place(self, "ldexp_", _O.ldexp, other)

    def frexp(self) -> _rt.frexp:
        """``(mantissa, exponent)`` with ``self == mantissa * 2 ** exponent``, ``|mantissa|`` in
        [0.5, 1) (0, inf and NaN kept with exponent 0); ``exponent`` is int32; floating tensors
        only (RuntimeError otherwise). Same as ``torch.Tensor.frexp``
        (``tensorplay.return_types.frexp``)."""
        from . import return_types
        return return_types.frexp(*_O.frexp(self))

    def isposinf(self) -> Tensor:
        """Bool tensor: True where the element is +inf (same as ``torch.Tensor.isposinf``)."""
        return _O.eq(self, float("inf"))

    def isneginf(self) -> Tensor:
        """Bool tensor: True where the element is -inf (same as ``torch.Tensor.isneginf``)."""
        return _O.eq(self, float("-inf"))

    def isreal(self) -> Tensor:
        """All True (TensorPlay's dtypes are real; same as ``torch.Tensor.isreal``)."""
        return _like_self(self, "full", list(self._shape), True, _dtype.bool, None, False)

    # -- real tensors' complex surface --------------------------------------------------------
    def conj(self) -> Tensor:
        """``self`` (a real tensor is its own conjugate; same as ``torch.Tensor.conj``)."""
        return self

    def resolve_conj(self) -> Tensor:
        """``self`` (same as ``torch.Tensor.resolve_conj`` on a real tensor)."""
        return self

    def resolve_neg(self) -> Tensor:
        """``self`` (same as ``torch.Tensor.resolve_neg`` on a real tensor)."""
        return self

    def conj_physical(self) -> Tensor:
        """A copy (real dtypes; same as ``torch.Tensor.conj_physical``)."""
        return _O.clone(self)

    def conj_physical_(self) -> Tensor:
        """``self`` unchanged (real dtypes; same as ``torch.Tensor.conj_physical_``)."""
        return self

    def is_conj(self) -> _bool:
        """False (no lazy conjugation; ``torch.Tensor.is_conj``)."""
        return False

    def is_neg(self) -> _bool:
        """False (no lazy negation; ``torch.Tensor.is_neg``)."""
        return False

    @property
    def real(self) -> Tensor:
        """``self`` (real dtypes; same as ``torch.Tensor.real``)."""
        return self

    @property
    def imag(self) -> Tensor:
        """RuntimeError, as torch for real dtypes."""
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def is_pinned(self) -> _bool:
        """False: TensorPlay has no page-locked host memory (``torch.Tensor.is_pinned``)."""
        return False

    def is_shared(self) -> _bool:
        """False: no tensor lives in shared memory (``torch.Tensor.is_shared``)."""
        return False

    def new(self, *args: Any, dtype: _DTypeLike | None = None,
            device: _DeviceLike | None = None) -> Tensor:
        """torch's legacy constructor: ``new(*sizes)`` (ints) an uninitialised tensor of this
        dtype and device, ``new(data)`` (a list, tuple or tensor) a copy of ``data`` in this
        dtype, ``new()`` an empty 1-D one (same as ``torch.Tensor.new``)."""
        if not args:
            return self.new_empty((0,), dtype=dtype, device=device)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return self.new_empty(args, dtype=dtype, device=device)
        if len(args) == 1:
            return self.new_tensor(args[0], dtype=dtype, device=device)
        raise TypeError(f"new(): expected sizes (ints) or one data argument, got {args!r}")

    def sum_to_size(self, *size: _int | Sequence[_int], **kwargs: Sequence[_int]) -> Tensor:
        """Sum broadcast dimensions away so the result has ``size`` (used by backward formulas).

        ``size`` (ints or one sequence) must expand to this tensor's shape, as torch requires:
        no more dims, and each of its trailing dims equal to the tensor's or 1. The dims that
        broadcasting added (leading ones, and size-1 ones of ``size``) are summed. Returns
        ``self`` when the shape already is ``size``. Raises ``RuntimeError`` ("size {[5]} is not
        expandable to size {[2, 3]}.", torch's words) for any other ``size``."""
        if len(size) == 1 and size[0].__class__ is tuple and size[0] == self._shape:
            return self   # backward formulas' common case, before any parsing
        size = tuple(_keyword_sizes(size, kwargs, "sum_to_size", "size") if kwargs else
                     _shape_arg(size))
        shape = self._shape
        if shape == size:
            return self
        lead = len(shape) - len(size)
        if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
            # else a wrong size would be summed to something else silently (or fail in reshape)
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                               f"{{{list(shape)}}}.")
        inner = [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
        if lead and not inner:
            # only leading dims to drop (a bias gradient): one sum without keepdim gives the
            # shape, and a tensor of its own (no reshape view for .grad to copy)
            return _O.sum(self, list(range(lead)), False)
        dims = list(range(lead)) + inner
        out = _O.sum(self, dims, True) if dims else self
        if lead:
            out = _O.reshape(out, list(size))
        return out


Tensor.__array_priority__ = 1000

# What the methods above call: the ops, factories, indexing, autograd and torch's composites, all
# in the layers below this one. Imported after the class because defining the built-in ops
# generates code that names ``Tensor`` (``tensorplay._tensor_base.instance_class()``).
from . import _surface  # noqa: E402
from ._factories import _like_self  # noqa: E402
from ._factories import clone_as as _clone_as, contiguous_as as _contiguous_as  # noqa: E402
from ._factories import is_contiguous_as as _is_contiguous_as  # noqa: E402
from ._backend import _CONTIG_CACHE as _CONTIG  # noqa: E402
from ._tensor_base import row_major as _row_major  # noqa: E402
from ._factories import tensor as _new_tensor  # noqa: E402
from ._ops import ops as _O  # noqa: E402
from .autograd.function import KERNEL_MARK as _KERNEL_MARK  # noqa: E402


def _mark_kernel_exit() -> bool:
    """Inside the composite kernel of a custom op without a formula, with grad on: mark that
    the kernel's math leaves the graph (``.numpy()``; ``tolist``/``item``/``float(t)`` of a
    tensor that requires grad), so the call's outputs refuse backward; True when marked (no
    such kernel runs, or grad is off: False). Control flow on tensors that need no grad
    (``if (x > 0).all():``) marks nothing: its callers mark only tensors requiring grad."""
    g = _grad_state.__dict__
    if g["enabled"]:
        mark = g.get(_KERNEL_MARK)
        if mark is not None:
            mark.append(True)
            return True
    return False
from .autograd.function import kernel_gate as _kernel_gate  # noqa: E402
_NUMPY_REQUIRES_GRAD = ("Can't call numpy() on Tensor that requires grad. Use "
                        "tensor.detach().numpy() instead.")
from ._ops.elementwise import norm_root as _norm_root  # noqa: E402
from ._ops import opmath as _opmath  # noqa: E402  (float16/bfloat16 ops of several steps)
_LOWP = _opmath.LOWP
from ._registry import bind_methods as _bind_methods  # noqa: E402
from ._ops._shapes import check_fill as _check_fill  # noqa: E402
from ._factories import fill_number as _fill_number, _one_int, _seq as _size_seq  # noqa: E402
from ._ops.copy import check_cast as _check_cast  # noqa: E402
from ._ops.copy import check_copy_src as _check_copy_src  # noqa: E402
from ._ops.copy import check_fill_value as _check_fill_value  # noqa: E402
from ._ops._shapes import result_dtype as _result_dtype  # noqa: E402
from ._indexing import getitem as _getitem, _linear_index  # noqa: E402
from ._ops.indexing import check_scatter_reduce as _check_scatter_reduce  # noqa: E402
from ._ops.indexing import index_extremes as _index_extremes  # noqa: E402
from ._ops.indexing import check_no_overlap as _check_no_overlap  # noqa: E402
from ._ops.indexing import check_index_put_dtype as _check_index_put_dtype  # noqa: E402
from ._ops.indexing import check_index_write as _check_index_write  # noqa: E402
from ._ops.indexing import dispatches_to_masked_fill as _to_masked_fill  # noqa: E402
from ._indexing import setitem as _setitem  # noqa: E402
from ._indexing import expanded as _expanded  # noqa: E402
from ._indexing import warn_expanded_put as _warn_expanded_put  # noqa: E402
from ._indexing import index_put_accumulate_expanded as _put_accumulate_expanded  # noqa: E402
from ._indexing import byte_mask as _byte_mask, refuse_byte_fill as _refuse_byte_fill  # noqa: E402
from ._kernels.indexing import check_index_dtype as _check_index_dtype  # noqa: E402
from .autograd.api import backward as _backward  # noqa: E402
from .autograd.function import check_inplace as _check_inplace  # noqa: E402
from .autograd.grad_mode import _state as _grad_state  # noqa: E402
from ._dispatch import NoGradBlock as _NoGradBlock  # noqa: E402
from ._dispatch import as_number as _as_number  # noqa: E402
from ._ops._shapes import where_int_in_range as _where_int_in_range  # noqa: E402
_PLAIN_BOUNDS = frozenset((int, float, bool, type(None), Tensor))   # clamp's bounds as given
from ._dispatch import _state as _dispatch_state  # noqa: E402
# ``hook(tensor)``, set by ``tensorplay._capture`` while a capture is in progress in any thread
# (else None: one global read on the eager path): called when ``_need_data`` passes (the
# capture records which constants' values it read)
data_read_hook = None
from ._dispatch import OverlapError as _OverlapError  # noqa: E402
from ._kernels.array_backend import ArrayBackend as _ArrayBackend  # noqa: E402
from .autograd.graph import grad_accumulator as _grad_accumulator  # noqa: E402
from .autograd.graph import LeafHooks as _LeafHooks  # noqa: E402
from .autograd.graph import output_hooks as _output_hooks  # noqa: E402
from .autograd.graph import current_grad_fn as _current_grad_fn  # noqa: E402
from ._ops.views import mark_multi_output as _mark_multi_output  # noqa: E402


# The operator methods above whose body is only ``return _O.op(self, other)`` (or
# ``_O.op(self)``) are the op's generated dispatch function itself: ``x * y`` runs one Python
# frame, not the method's and then the function's (issue 32 item 6; same arguments, result and
# errors). The definitions above stay as their documentation and types.
_bind_methods(Tensor, {
    "__add__": _O.add, "__radd__": _O.add, "__iadd__": _O.add_,
    "__sub__": _O.sub, "__rsub__": _O.rsub, "__isub__": _O.sub_,
    "__mul__": _O.mul, "__rmul__": _O.mul, "__imul__": _O.mul_,
    "__truediv__": _O.div, "__rtruediv__": _O.rdiv, "__itruediv__": _O.div_,
    "__floordiv__": _O.floor_divide, "__mod__": _O.remainder, "__rpow__": _O.rpow,
    "__neg__": _O.neg, "__abs__": _O.abs, "__matmul__": _O.matmul,
    "__lt__": _O.lt, "__le__": _O.le, "__gt__": _O.gt, "__ge__": _O.ge,
    "__and__": _O.bitwise_and, "__rand__": _O.bitwise_and, "__or__": _O.bitwise_or,
    "__ror__": _O.bitwise_or, "__xor__": _O.bitwise_xor, "__rxor__": _O.bitwise_xor,
    "__invert__": _O.bitwise_not, "__lshift__": _O.bitwise_left_shift,
    "__rshift__": _O.bitwise_right_shift,
})


class _HookHandle:
    """``Tensor.register_hook``'s handle: ``remove()`` unregisters the hook (idempotent)."""

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list[Any], fn: Any) -> None:
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


def _zero_outside_triangle(x, triangle, diagonal):
    """``tril_``/``triu_`` (``triangle``: ``tril``/``triu``) of an expanded ``x``, as torch
    allows it: they write only zeros, so every memory location that some element outside the
    triangle maps to becomes 0 whatever the order of the writes -- a ``masked_fill_`` with 0
    (the op, which may write an expanded tensor; no deprecation warning, as torch's)."""
    n, m = x._shape[-2:]
    keep = triangle(_O.full([n, m], True, dtype=_dtype.bool, device=x.device), diagonal)
    _O.masked_fill_(x, _O.logical_not(keep), False if x._dtype is _dtype.bool else 0)
    return x


def _no_bool_scan(api):
    """torch's refusal of ``api`` (cumsum, cumprod) computed in bool (``dtype=bool``)."""
    return NotImplementedError(f'"{api}_out_cpu" not implemented for \'Bool\': {api}() has no '
                               f"bool result (as torch); give an integer dtype "
                               f"(dtype=tensorplay.int64, the default for bool input) and "
                               f"compare with 0 if a mask is wanted: {api}(x, dim) != 0")


def _scatter_reduced(self, dim, index, src, value, reduce):
    """``scatter(..., reduce=)``: "add" is ``scatter_add``, "multiply" is ``scatter_reduce``'s
    "prod" (a number ``src``/``value`` used at every index); RuntimeError for another reduce."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    v = _scatter_src(src, value, None)
    if not isinstance(v, Tensor):
        v = _like_self(self, "full", list(index._shape), v, self._dtype, None, False)
    if not _grad_state.enabled or not (self.requires_grad or v.requires_grad):
        try:
            if reduce == "multiply":
                return _O.scatter_reduce(self, dim, index, v, "prod")
            return _O.scatter_add(self, dim, index, v)
        except RuntimeError as e:     # (an index out of range: named as the op called)
            raise _renamed(_renamed(e, "scatter_add", "scatter"), "scatter_reduce",
                           "scatter") from None
    # torch has no derivative for scatter(reduce=): the result requires grad and backward
    # through it raises (scatter_add and scatter_reduce, which compute the same, have one)
    with _NoGradBlock():
        r = _scatter_reduced(self, dim, index, src, value, reduce)
    from .autograd.graph import edge_of
    from ._tensor_base import set_history
    node = _ScatterReducedBackward("scatter", (edge_of(self), edge_of(v)),
                                   ((r.raw_shape, r.raw_dtype, r.raw_device),))
    set_history(r, node, 0)
    return r


def _scatter_reduced_node_class():
    from .autograd.function import NoFormulaBackward

    class ScatterReducedBackward(NoFormulaBackward):
        """History of ``scatter(..., reduce=)``'s result: torch has no derivative for it."""
        __slots__ = ()

        def __init__(self, op_name, edges, out_meta):
            super().__init__(op_name, edges, out_meta)
            self.name = "ScatterReduceNotImplemented"

        def apply(self, grads):
            raise RuntimeError(
                "derivative for aten::scatter is not implemented: scatter(..., reduce=) has no "
                "gradient (as torch). Use scatter_add(dim, index, src) for reduce='add' or "
                "scatter_reduce(dim, index, src, 'prod') for reduce='multiply', which compute "
                "the same and are differentiable")
    return ScatterReducedBackward


def _scatter_reduce(self, dim, index, src, reduce, include_self):
    """torch's scatter_reduce for "sum" and "mean": ``scatter_add`` into ``self`` (the touched
    positions zeroed first without ``include_self``); the mean divides by the count of values
    reduced into each position (self counted when included; floor division for integers)."""
    if reduce in ("max", "min"):      # torch's undocumented spellings of amax/amin
        reduce = "a" + reduce
    if reduce not in ("sum", "mean"):   # prod, amax, amin (and bad names): tp::scatter_reduce
        return _O.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)
    _check_scatter_reduce(self, dim, index, src, reduce)     # the op's checks, in torch's words
    try:
        base = self if include_self else _O.scatter(self, dim, index, 0)
        out = _O.scatter_add(base, dim, index, src)
    except RuntimeError as e:     # (an index out of range: named as the op called)
        raise _renamed(_renamed(e, "scatter_add", "scatter_reduce"), "scatter",
                       "scatter_reduce") from None
    if reduce == "sum":
        return out
    count = _like_self(self, "full", list(self._shape), 1 if include_self else 0, self._dtype,
                       None, False)
    ones = _like_self(self, "full", list(src._shape), 1, self._dtype, None, False)
    count = _O.scatter_add(count, dim, index, ones)
    count = _O.where(_O.eq(count, 0), 1, count)
    return _O.div(out, count) if self._dtype.is_floating_point else \
        _O.floor_divide(out, count)


def _renamed(e, old, new):
    """Range error ``e`` of op ``old`` (its message starting ``"old(): index "``, maybe after
    the dispatcher's ``"tp::old: "``) as raised by ``new``, the op the user called and ``old``
    a step of (``take_along_dim``'s ``gather``): the same class and text naming ``new``; ``e``
    itself otherwise (other errors keep torch's words, which name the step as torch's do)."""
    msg = str(e)
    for head in (f"tp::{old}: {old}(): index ", f"{old}(): index "):
        if msg.startswith(head):
            try:
                return type(e)(f"{new}(): index {msg[len(head):]}")
            except Exception:      # noqa: BLE001 - a class with another constructor
                return e
    return e


def _no_overlap(self, index, src):
    """torch's ``assert_no_overlap`` of the in-place index writes (``index_add_``,
    ``index_copy_``, ``put_``, the scatters): ``self`` shares memory with neither ``index`` nor
    a tensor ``src`` (RuntimeError)."""
    if isinstance(index, Tensor):
        _check_no_overlap(self, index)
    if isinstance(src, Tensor):
        _check_no_overlap(self, src)


def _scatter_src(src, value, reduce):
    if reduce is not None:
        raise NotImplementedError(f"scatter(reduce={reduce!r}) is not supported by tensorplay; "
                                  f"use scatter_add (reduce='add')")
    if (src is None) == (value is None):
        raise TypeError("scatter() takes exactly one of src (a tensor or number) and value")
    return value if src is None else src


def _rebuild_tensor(arr, dtype, device, requires_grad):
    """Unpickle a tensor (``Tensor.__reduce_ex__``)."""
    t = _new_tensor(arr, device=device).to(_dtype.from_name(dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _from_keyword(kwargs, from_, default, api):
    """torch's ``from`` keyword of ``uniform_``/``random_`` (spelt ``from_`` here); TypeError for
    any other keyword or for both spellings."""
    value = kwargs.pop("from", _MISSING)
    if kwargs:
        raise TypeError(f"{api}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if value is not _MISSING and from_ != default:
        raise TypeError(f"{api}() got multiple values for argument 'from'")
    return from_ if value is _MISSING else value


def _dim_overload(api, positional, dim):
    """``max``/``min``'s ``dim`` when torch's parser picks the dim overload (``dim=`` given as
    a keyword, or a ``keepdim``): the keyword ``dim`` (TypeError if also given positionally),
    else the positional one; a tensor there is a dim, a 0-dim integer one its int (torch:
    ``x.max(dim=tensor(1))`` is ``x.max(1)``; ``x.max(tensor(1))`` alone is the elementwise
    maximum). Off the plain ``x.max(1)`` path."""
    if dim is not _NO_DIM:
        if positional is not _NO_DIM:
            raise TypeError(f"{api}() got multiple values for argument 'dim'")
        positional = dim
    if isinstance(positional, TensorBase):
        return _index_dim(positional, f"{api}(): ")
    return positional


def _keepdim_without_dim(api, dim, keepdim, none_dim_ok):
    """``(dim, keepdim)`` of a reduction called with ``dim``/``keepdim`` possibly not passed
    (``_NO_DIM``/``_NO_KEEPDIM``), by torch's overloads: ``keepdim`` without ``dim`` is a
    TypeError (``x.sum(keepdim=True)``: torch's full reduction takes no keepdim), as is
    ``dim=None`` where torch has no such overload (``none_dim_ok`` False: prod, max, min,
    median, nanmedian; sum and mean take it). ``dim`` None means all dims."""
    if dim is _NO_DIM:
        if keepdim is not _NO_KEEPDIM:
            raise TypeError(f"{api}() received an invalid combination of arguments - got "
                            f"keepdim={keepdim!r} without dim: the full {api}() takes no keepdim "
                            f"(as torch); give dim")
        return None, False
    if dim is None and not none_dim_ok:
        raise TypeError(f"{api}(): argument 'dim' must be int, not NoneType (as torch; leave "
                        f"dim out for the {api} of all elements)")
    return dim, (False if keepdim is _NO_KEEPDIM else keepdim)


def _numpy_names(api, dim, keepdim, axis, keepdims):
    """``(dim, keepdim)`` given torch's NumPy spellings of them, ``axis=`` and ``keepdims=``
    (torch's argument parser accepts both on every method with ``dim``/``keepdim``); TypeError
    when a value comes both ways."""
    if axis is not None:
        if dim is not None and dim is not _NO_DIM:
            raise TypeError(f"{api}() got multiple values for argument 'dim' (axis= is its NumPy "
                            f"spelling)")
        dim = axis
    if keepdims is not None:
        if keepdim:
            raise TypeError(f"{api}() got multiple values for argument 'keepdim' (keepdims= is "
                            f"its NumPy spelling)")
        keepdim = bool(keepdims)
    return dim, keepdim


def _axis(api, dim, default, axis):
    """``dim`` given as torch's NumPy spelling ``axis=``; TypeError when ``dim`` was given too
    (a value other than its default)."""
    if dim is not default and dim != default:
        raise TypeError(f"{api}() got multiple values for argument 'dim' (axis= is its NumPy "
                        f"spelling)")
    return axis


_dims = _dim_list      # (the methods' name for it)


def _int_or_dims(dim, api):
    """``dim`` of ``all``/``any``, by torch's two overloads: one int (a 0-dim integer tensor
    too) or a list of them (``int[]?`` without a size: ``tensor([1])`` alone is refused)."""
    if dim is None:
        return None
    if dim.__class__ is int:
        return [dim]
    if isinstance(dim, (list, tuple)):
        return _dim_list(dim, api)
    return [_index_dim(dim, f"{api}(): ")]


def _squeeze_dims(api, dim, dims):
    """``squeeze``'s dims: none (all size-1 dims), one int or a list (``squeeze(0, 2)``: several
    ints) by torch's overloads; ``squeeze(None)`` is torch's TypeError."""
    if dims:
        return _dim_list([dim, *dims], api)
    if dim is _NO_DIM:
        return None
    if dim is None:
        raise TypeError(f"{api}() received an invalid combination of arguments - got "
                        f"(NoneType): dim is an int or a tuple of ints (as torch); leave it out "
                        f"to squeeze every size-1 dim")
    return _dim_list(dim, api)


def _movedim_args(source, destination):
    """``movedim``'s ``(source, destination)`` as two lists, by torch's two overloads: both
    ints (0-dim integer tensors too) or both int lists; one of each is torch's TypeError."""
    ls, ld = isinstance(source, (list, tuple)), isinstance(destination, (list, tuple))
    if ls != ld:
        raise TypeError(f"movedim() received an invalid combination of arguments - got "
                        f"({type(source).__name__}, {type(destination).__name__}): source and "
                        f"destination are both ints or both tuples of ints (as torch)")
    if ls:
        return _dim_list(source, "movedim"), _dim_list(destination, "movedim")
    return ([source if source.__class__ is int else _index_dim(source, "movedim(): ", "source")],
            [destination if destination.__class__ is int
             else _index_dim(destination, "movedim(): ", "destination")])


def _new_size(size, api, kwargs):
    """``*size`` of ``new_empty``/``new_zeros``/``new_ones``: ints, one list/tuple or torch's
    keyword ``size=`` (checked by ``_like_self``); torch requires it, so none at all is a
    ``TypeError``, as is any other keyword."""
    if kwargs:
        return _keyword_sizes(size, kwargs, api, "size")
    if not size:
        raise TypeError(f"{api}(): missing required argument 'size' (pass () for a 0-dim "
                        f"tensor)")
    if len(size) == 1 and size[0].__class__ is not int:
        s = size[0]
        if isinstance(s, (list, tuple)):
            return s
        return [_one_int(s, api)]     # a NumPy int or 0-dim int tensor; torch's TypeError else
    return size


def _shape_arg(shape):
    if len(shape) == 1:
        s = shape[0]
        if s.__class__ is int:          # view(-1), unsqueeze-like single sizes: no loop
            return [s]
        if isinstance(s, (list, tuple)):
            shape = s
    for s in shape:         # (all ints, the common case: one pass, no call per element)
        if s.__class__ is not int:
            return _int_list(shape)
    return list(shape)


def _int_list(shape) -> list:
    """A size or dim list with an element that is not an int: each element's ``__index__``
    (a 0-dim integer tensor, a NumPy integer), but a bool is torch's ``TypeError``
    (``x.view(True, 6)``, ``x.flip(True)``, ``x.permute((True, 0))``: never 1)."""
    out = []
    for i, s in enumerate(shape):
        if s.__class__ is bool or type(s).__name__ in ("bool_", "bool"):
            raise TypeError(f"argument must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {i}")
        try:
            out.append(operator.index(s))
        except (TypeError, RuntimeError):   # (tensor([0, 1]): its item() refused in other words)
            raise TypeError(f"argument must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {i}") from None
    return out


def _keyword_sizes(args, kwargs, api, name, ignored=()):
    """The sizes of a method declared ``m(self, *sizes)`` as torch's are: ints, one sequence,
    or torch's keyword ``name`` (``permute(dims=...)``, ``view(size=...)``); ``ignored``: other
    keywords torch accepts that change nothing here (``expand``'s ``implicit``). TypeError, as
    torch, for another keyword or for the sizes given both ways."""
    value = kwargs.pop(name, _MISSING)
    for k in ignored:
        kwargs.pop(k, None)
    if kwargs:
        raise TypeError(f"{api}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if value is _MISSING:
        return _shape_arg(args)
    if args:
        raise TypeError(f"{api}() got multiple values for argument {name!r}")
    # the keyword takes a sequence only, as torch's: x.expand(size=3) is a TypeError
    return _shape_arg((_size_seq(value, api, name),))


_MISSING = object()

_ScatterReducedBackward = _scatter_reduced_node_class()


def _as_api(e: RuntimeError, inner: str, api: str) -> RuntimeError:
    """``e`` raised by the op ``inner`` that ``api`` calls, worded as ``api``'s own (torch names
    the function the user called: ``x.max()`` of an empty tensor says ``max():``)."""
    msg = str(e)
    return RuntimeError(api + msg[len(inner):]) if msg.startswith(inner) else e


def _extreme_all(x, largest):
    """``x.max()`` / ``x.min()`` (no ``dim``): the largest / smallest element, a 0-dim tensor of
    ``x``'s dtype (NaN when ``x`` holds one; ``RuntimeError`` for an empty ``x``, amax's). Its
    gradient is torch's ``evenly_distribute_backward`` on cpu, not ``amax``'s: ``g / count`` at
    each element equal to the result (each NaN element when the result is NaN) and exact zeros
    elsewhere, also under an infinite or NaN ``g`` (``amax``/``amin`` give NaN there, as torch's
    ``amax``: ``g / count * mask``). Under ``tensorplay.compile`` (built-in ops only) the
    recorded op is ``amax``/``amin`` with its gradient."""
    op = _O.amax if largest else _O.amin
    if not x.requires_grad:
        return op(x, [], False)
    from .autograd.function import FunctionCtx, _capturing, attach
    from .autograd.grad_mode import is_grad_enabled, no_grad
    if not is_grad_enabled() or _capturing():
        return op(x, [], False)
    with no_grad():
        out = op(x, [], False)
    ctx = FunctionCtx()
    ctx.save_for_backward(x, out)
    return attach("tp::maxBackward" if largest else "tp::minBackward", _evenly_bw, ctx, (x,),
                  out, Tensor)


def _evenly_bw(ctx, g):
    x, value = ctx.saved_tensors
    # torch's mask on cpu (value.isnan() ? input.isnan() : input == value), without a host
    # read: the result is NaN exactly when x holds a NaN, so x == value is all False then and
    # isnan(x) all False otherwise
    mask = _O.logical_or(_O.eq(x, value), _O.isnan(x))
    return _O.where(mask, _O.div(g, _O.sum(mask, [], False)), 0.0)
