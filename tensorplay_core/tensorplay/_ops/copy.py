"""Copies and in-place writes: ``clone``, ``to_dtype``, ``to_device``, ``copy_``, ``fill_``,
``add_``, ``sub_``, ``mul_``, ``div_``. In-place ops bump the shared version counter (in the generated adapter)."""

from __future__ import annotations

from .._device import Device
from .._dtype import can_cast
from ._define import defop, ops as O
from ._shapes import (broadcast_shapes, check_bool_operands, float_dtype, is_tensor, out_like,
                      result_dtype)


def _clone_meta(x):
    return out_like(x.shape, x.dtype, x)


defop("clone(Tensor input) -> Tensor", meta=_clone_meta, backward=lambda ctx, g: g)


def _to_dtype_meta(x, dtype):
    return out_like(x.shape, dtype, x)


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
    arr = x.native
    return dst.wrap(dst.from_other(arr, src, device), device)


def _to_device_meta(x, device):
    if x.device.type == "meta" and device.type != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")   # torch's error
    from ..fake import make_fake
    return make_fake(x.shape, x.dtype, device)


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
    return O.mul(g, 0.0), gs


defop("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", meta=_inplace_meta, setup=_copy_setup,
      backward=_copy_bw, scalar_ok=("src",))
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
    return O.mul(g, 0.0), gv


def check_fill_value(value):
    """torch's rule: ``fill_`` takes a number or a 0-dim tensor (``copy_`` broadcasts)."""
    if is_tensor(value) and len(value.shape) != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{len(value.shape)} dimensions.")


def _fill_meta(self, value):
    check_fill_value(value)
    return self


defop("fill_(Tensor(a!) self, Tensor value) -> Tensor(a!)", meta=_fill_meta,
      setup=_fill_setup, backward=_fill_bw, scalar_ok=("value",))


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
      scalar_ok=("other",))


defop("sub_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
      meta=_arith_inplace_meta("sub_", bool_rule="sub"), setup=_add_setup,
      backward=lambda ctx, g: (g, O.neg(_grad_for(g, *ctx.other)) if ctx.other is not None
                               else None),
      scalar_ok=("other",))


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
# d(x / o)/do = -x / o**2, with the original x
_div_bw = _scaling_bw(lambda g, o: O.div(g, o),
                      lambda g, x0, o: O.neg(O.div(O.mul(g, x0), O.mul(o, o))))


defop("mul_(Tensor(a!) self, Tensor other) -> Tensor(a!)", meta=_arith_inplace_meta("mul_"),
      setup=_mul_setup, backward=_mul_bw, scalar_ok=("other",))
defop("div_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
      meta=_arith_inplace_meta("div_", floating=True), setup=_mul_setup, backward=_div_bw,
      scalar_ok=("other",))

__all__ = ["Device"]
