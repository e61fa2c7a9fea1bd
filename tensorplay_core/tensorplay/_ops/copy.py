"""Copies and in-place writes: ``clone``, ``to_dtype``, ``to_device``, ``copy_``, ``fill_``,
``add_``, ``sub_``, ``mul_``, ``div_``. In-place ops bump the shared version counter (in the generated adapter)."""

from __future__ import annotations

from .._device import Device
from .._dtype import can_cast
from .._kernels.array_backend import ArrayBackend
from .._kernels.elementwise import preserve_strides
from ._define import defop, ops as O
from ._shapes import (broadcast_shapes, check_bool_operands, elementwise_meta, float_dtype,
                      is_tensor, out_like, result_dtype)
from ._shapes import zeros_grad


def _clone_meta(x):
    return out_like(x.shape, x.dtype, x)


defop("clone(Tensor input) -> Tensor", meta=_clone_meta, backward=lambda ctx, g: g)


def _to_dtype_meta(x, dtype):
    return out_like(x.shape, dtype, x, (x,), preserve=True)   # torch's _to_copy: preserve_format


elementwise_meta(_to_dtype_meta, 1, preserve=True)


def _to_dtype_setup(ctx, inputs, output):
    ctx.dtype = inputs[0].dtype


def _to_dtype_bw(ctx, g):
    return (O.to_dtype(g, ctx.dtype) if ctx.dtype.is_floating_point else None), None


defop("to_dtype(Tensor self, ScalarType dtype) -> Tensor", meta=_to_dtype_meta,
      setup=_to_dtype_setup, backward=_to_dtype_bw)


def _to_device(x, device):
    """Copy ``x`` to ``device`` through the host (numpy) or DLPack; device-independent core code."""
    from .. import _backend
    if x.native is None or device.type == "meta":
        return _to_device_meta(x, device)   # to "meta": no data to copy (torch gives a meta tensor)
    dst = _backend.get_backend(device.type)
    src = x.backend
    st = None if x.is_contiguous() else preserve_strides(x.shape, x.stride())
    if st is None or not isinstance(dst, ArrayBackend):
        return dst.wrap(dst.from_other(x.native, src, device), device)
    # torch's to(): preserve_format -- a dense tensor keeps its strides (another gets dense ones
    # in its stride order). Its elements move in memory order (one row-major array of the
    # permuted shape: no copy on the source side for a dense one) and are viewed back.
    order = sorted(range(len(st)), key=lambda d: -st[d])
    inv = sorted(range(len(order)), key=order.__getitem__)
    moved = dst.from_other(x.permute(order).contiguous().native, src, device)
    return dst.wrap_permuted(moved, device, tuple(x.shape), st, inv)


def _to_device_meta(x, device):
    if x.device.type == "meta" and device.type != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")   # torch's error
    from ..fake import make_fake
    return make_fake(x.shape, x.dtype, device, preserve_strides(x.shape, x.stride()))


def _to_device_setup(ctx, inputs, output):
    ctx.device = inputs[0].device


defop("to_device(Tensor self, Device device) -> Tensor", default=_to_device, meta=_to_device_meta,
      setup=_to_device_setup, backward=lambda ctx, g: (O.to_device(g, ctx.device), None))


def _inplace_meta(self, other):
    """Fake rule of ``copy_``/``fill_`` and the in-place arithmetic ops: ``self``, after checking
    ``other`` broadcasts to its shape (torch's words: ``RuntimeError: output with shape [3]
    doesn't match the broadcast shape [2, 3]``)."""
    if is_tensor(other):
        shape = broadcast_shapes(self.shape, other.shape, api="in-place op")
        if tuple(shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")
    return self


def check_copy_src(dst, src):
    """``RuntimeError`` unless tensor ``src`` broadcasts to ``dst``'s shape: torch's rule for
    ``copy_`` and for every in-place method (whose value is written with ``copy_``). Callers
    call it when ``src`` has more dims than ``dst``, which torch always refuses (``zeros(())
    .copy_(ones(1))``: "output with shape [] doesn't match the broadcast shape [1]") but an
    array assignment accepts when the extra leading dims have size 1. ``x[i] = v`` strips
    ``v``'s leading size-1 dims first (torch's setitem does), so it accepts them."""
    _inplace_meta(dst, src)


def _copy_setup(ctx, inputs, output):
    src = inputs[1]
    ctx.src = (src.shape, src.dtype, src.device) if is_tensor(src) else None


def _copy_bw(ctx, g):
    gs = None
    if ctx.src is not None:
        shape, dtype, dev = ctx.src
        gs = g.sum_to_size(shape)
        if gs.dtype is not dtype and dtype.is_floating_point:
            gs = O.to_dtype(gs, dtype)
        if gs.device is not dev:
            gs = O.to_device(gs, dev)
    return zeros_grad(g), gs     # torch: zeros_like(grad) (g * 0 gave NaN at an inf g)


defop("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", meta=_inplace_meta, setup=_copy_setup,
      backward=_copy_bw, scalar_ok=("src",), partial=("src",))
def _fill_setup(ctx, inputs, output):
    v = inputs[1]
    ctx.value = (v.shape, v.dtype) if is_tensor(v) else None


def _fill_bw(ctx, g):
    gv = None
    if ctx.value is not None and ctx.needs_input_grad[1]:
        shape, dtype = ctx.value
        gv = O.reshape(O.sum(g), list(shape))
        if gv.dtype is not dtype:
            gv = O.to_dtype(gv, dtype)
    return zeros_grad(g), gv


def check_fill_value(value):
    """torch's rule: ``fill_`` takes a number or a 0-dim tensor (``copy_`` broadcasts)."""
    if is_tensor(value) and len(value.shape) != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{len(value.shape)} dimensions.")


def _fill_meta(self, value):
    check_fill_value(value)
    return self


defop("fill_(Tensor(a!) self, Tensor value) -> Tensor(a!)", meta=_fill_meta,
      setup=_fill_setup, backward=_fill_bw, scalar_ok=("value",), overlap_ok=("value",))


def _grad_for(g, shape, dtype):
    """``g`` summed down to ``shape`` and cast to ``dtype`` (the gradient of a broadcast input)."""
    g = g.sum_to_size(shape)
    if g.dtype is not dtype and dtype.is_floating_point:
        g = O.to_dtype(g, dtype)
    return g


def check_cast(api, result, out):
    """``RuntimeError`` naming ``api`` when an in-place op's result dtype cannot be written into
    ``out``'s dtype (``torch.can_cast``'s rule; torch's words)."""
    if not can_cast(result, out):
        raise RuntimeError(f"{api}: result type {result} can't be cast to the desired output type "
                           f"{out}; use the out-of-place op instead")


def _arith_inplace_meta(api, floating=False, bool_rule=None):
    """Fake rule of an in-place arithmetic op: ``other`` broadcasts to ``self``, the
    out-of-place op's result dtype (floating for true division) casts to ``self``'s, and the
    out-of-place op's bool refusals (``bool_rule``: its name) hold."""
    def meta(self, other):
        _inplace_meta(self, other)
        r = result_dtype(self, other)
        if bool_rule is not None:
            check_bool_operands(bool_rule, self, other, r)
        check_cast(api, float_dtype(r) if floating else r, self.dtype)
        return self
    return meta


def _add_setup(ctx, inputs, output):
    o = inputs[1]
    ctx.other = (o.shape, o.dtype) if is_tensor(o) else None


defop("add_(Tensor(a!) self, Tensor other) -> Tensor(a!)", meta=_arith_inplace_meta("add_"),
      setup=_add_setup,
      backward=lambda ctx, g: (g, _grad_for(g, *ctx.other) if ctx.other is not None else None),
      scalar_ok=("other",), partial=("other",))


defop("sub_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
      meta=_arith_inplace_meta("sub_", bool_rule="sub"), setup=_add_setup,
      backward=lambda ctx, g: (g, O.neg(_grad_for(g, *ctx.other)) if ctx.other is not None
                               else None),
      scalar_ok=("other",), partial=("other",))


def _mul_setup(ctx, inputs, output):
    # runs before the write (in-place autograd entry): keep the original self only when the
    # gradient of ``other`` needs it (torch saves ``original_self`` the same way)
    x, o = inputs[0], inputs[1]
    if is_tensor(o):
        keep = len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1]
        # a clone with history (not detached): double backward differentiates through it
        ctx.save_for_backward(o, O.clone(x) if keep else None)
        ctx.scalar = None
    else:
        ctx.save_for_backward(None, None)
        ctx.scalar = o


def _scaling_bw(scale, other_grad):
    """Backward of ``mul_``/``div_``: ``self``'s gradient is ``scale(g, other)`` (cast to
    ``g``'s dtype), ``other``'s is ``other_grad(g, original self, other)`` reduced to its shape."""
    def bw(ctx, g):
        o, x0 = ctx.saved_tensors
        if o is None:
            return scale(g, ctx.scalar), None
        ga = scale(g, o) if ctx.needs_input_grad[0] else None
        if ga is not None and ga.dtype is not g.dtype:
            ga = O.to_dtype(ga, g.dtype)
        gb = _grad_for(other_grad(g, x0, o), o.shape, o.dtype) if x0 is not None else None
        return ga, gb
    return bw


_mul_bw = _scaling_bw(lambda g, o: O.mul(g, o), lambda g, x0, o: O.mul(g, x0))
# d(x / o)/do = -x / o**2, with the original x, in torch's order (div's own formula:
# -grad * ((x / o) / o), which o * o does not underflow)
_div_bw = _scaling_bw(lambda g, o: O.div(g, o),
                      lambda g, x0, o: O.mul(O.neg(g), O.div(O.div(x0, o), o)))


defop("mul_(Tensor(a!) self, Tensor other) -> Tensor(a!)", meta=_arith_inplace_meta("mul_"),
      setup=_mul_setup, backward=_mul_bw, scalar_ok=("other",), partial=("other",))
defop("div_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
      meta=_arith_inplace_meta("div_", floating=True), setup=_mul_setup, backward=_div_bw,
      scalar_ok=("other",), partial=("other",))

__all__ = ["Device"]


# -- resize ----------------------------------------------------------------------------------------
def resize_sizes(api, sizes) -> tuple:
    """``resize_(2, 3)``, ``resize_((2, 3))`` or ``resize_([2, 3])`` -> ``(2, 3)``; a negative
    size is a ``RuntimeError``, no size a ``TypeError`` (torch's)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    elif not sizes:
        raise TypeError(f'{api}() missing 1 required positional arguments: "size"')
    out = []
    for s in sizes:
        if is_tensor(s) or isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{api}(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__}")
        out.append(s.__index__())
    if any(s < 0 for s in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(s for s in out if s < 0)}: {out}")
    return tuple(out)


def resize_tensor(t, shape: tuple, public: bool = True):
    """Give ``t`` the shape ``shape`` in place (``Tensor.resize_``; ``out=``'s resize with
    ``public=False``), as torch: the same shape keeps the strides; another one gives row-major
    strides over the same storage from the same offset, so the elements keep their row-major
    order while the size shrinks or stays; a storage too small for the new size grows (a new
    root array holding the old bytes first; the new elements are uninitialised), and the base
    and live views sharing it are pointed at the new root. ``RuntimeError`` for a tensor that
    requires grad ("cannot resize variables that require grad", also under ``no_grad``).
    ``public``: the method's call, which also bumps the version counter (torch's ``resize_``
    does; an ``out=`` write bumps it once, with the copy)."""
    from .. import _tensor_base as tb
    from .._backend import Storage, contiguous_strides
    if public and t.needs_grad:
        raise RuntimeError("cannot resize variables that require grad")
    st = t.storage_ref
    if tuple(t.raw_shape) != shape:
        stride = contiguous_strides(shape)
        numel = 1
        for s in shape:
            numel *= s
        need = (t.offset + numel) * t.raw_dtype.itemsize if numel else 0
        if t.native is None:                       # fake: the storage's size only
            sh = tb.shared_storage(st)               # (x.data: x's storage's size)
            if need > sh.nbytes and type(sh) is Storage:
                sh.nbytes = need
            tb.set_layout(t, shape, stride)
        else:
            be = t.backend
            if need > st.nbytes:
                _grow_storage(t, st, be, need)
            tb.set_layout(t, shape, stride)
            tb.set_native(t, be.as_strided(st.root, shape, stride, t.offset))
    if public:
        st.version += 1
    return t


def _grow_storage(t, st, be, need: int) -> None:
    """A new root array of at least ``need`` bytes for storage ``st`` (in its root's dtype), the
    old bytes copied first; the tensors known to share ``st``'s memory (``t``'s base and the
    base's live views; the owner of a ``.data`` alias, the aliases and their views:
    ``storage_tensors``) get native arrays over it, as torch's tensors over one storage."""
    from .. import _tensor_base as tb
    from .._backend import Storage
    st = tb.shared_storage(st)     # (through x.data: x's storage, whose root and size grow)
    root = st.root
    rdt = be.dtype_of(root)
    item = rdt.itemsize
    old_n = st.nbytes // item
    new_n = -(-need // item)
    new = be.empty((new_n,), rdt, t.raw_device)
    if old_n:
        be.assign(be.as_strided(new, (old_n,), (1,), 0), be.as_strided(root, (old_n,), (1,), 0))
    st.root = new
    if type(st) is Storage:
        st.nbytes = new_n * item
    for u in tb.storage_tensors(t):
        if u is not t and u.native is not None:
            tb.set_native(u, be.as_strided(new, u.raw_shape, u.stride_tuple, u.offset))
