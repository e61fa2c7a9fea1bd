"""Copies and in-place writes: ``clone``, ``to_dtype``, ``to_device``, ``copy_``, ``fill_``,
``add_``, ``mul_``. In-place ops bump the shared version counter (in the generated adapter)."""

from __future__ import annotations

from .._device import Device
from ..errors import DispatchError
from ._define import defop, ops as O
from ._shapes import broadcast_shapes, is_tensor, out_like


def _clone_meta(x):
    return out_like(x.shape, x.dtype, x)


defop("clone(Tensor self) -> Tensor", meta=_clone_meta, backward=lambda ctx, g: g)


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
    if x._data is None:
        return _to_device_meta(x, device)
    dst = _backend.get_backend(device.type)
    src = x._backend
    arr = x._data
    if hasattr(dst, "from_other"):
        native = dst.from_other(arr, src, device)
    else:
        native = dst.from_host(src.to_host(arr), None, device)
    return dst.wrap(native, device)


def _to_device_meta(x, device):
    from ..fake import make_fake
    return make_fake(x.shape, x.dtype, device)


def _to_device_setup(ctx, inputs, output):
    ctx.device = inputs[0].device


defop("to_device(Tensor self, Device device) -> Tensor", default=_to_device, meta=_to_device_meta,
      setup=_to_device_setup, backward=lambda ctx, g: (O.to_device(g, ctx.device), None))


def _inplace_meta(self, other):
    if is_tensor(other):
        shape = broadcast_shapes(self.shape, other.shape, api="in-place op")
        if tuple(shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {tuple(self.shape)} doesn't match the broadcast "
                               f"shape {tuple(shape)}")
    return self


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


def _copy_cross_device(self, src):
    raise DispatchError("copy_: internal")


defop("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", meta=_inplace_meta, setup=_copy_setup,
      backward=_copy_bw, scalar_ok=("src",))
defop("fill_(Tensor(a!) self, Tensor value) -> Tensor(a!)", meta=_inplace_meta,
      backward=lambda ctx, g: (O.mul(g, 0.0), None), scalar_ok=("value",))


def _add_setup(ctx, inputs, output):
    o = inputs[1]
    ctx.other = o.shape if is_tensor(o) else None


defop("add_(Tensor(a!) self, Tensor other) -> Tensor(a!)", meta=_inplace_meta, setup=_add_setup,
      backward=lambda ctx, g: (g, g.sum_to_size(ctx.other) if ctx.other is not None else None),
      scalar_ok=("other",))


def _mul_setup(ctx, inputs, output):
    o = inputs[1]
    if is_tensor(o) and o.requires_grad:
        raise RuntimeError("mul_: in-place multiplication by a tensor that requires grad is not "
                           "differentiable in tensorplay; use out = x * y instead")
    ctx.other = o


defop("mul_(Tensor(a!) self, Tensor other) -> Tensor(a!)", meta=_inplace_meta, setup=_mul_setup,
      backward=lambda ctx, g: (O.mul(g, ctx.other), None), scalar_ok=("other",))

__all__ = ["Device"]
