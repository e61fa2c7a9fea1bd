"""Reductions: ``sum``, ``mean``, ``amax``, ``amin``, ``argmax`` (torch semantics; empty dim list
means every dimension)."""

from __future__ import annotations

from .. import _dtype
from ._define import defop, ops as O
from ._shapes import out_like, reduce_shape, wrap_dim


def _sum_meta(x, dim=None, keepdim=False, *, dtype=None):
    shape, _ = reduce_shape(x.shape, dim, keepdim)
    dt = dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)
    return out_like(shape, dt, x)


def _mean_meta(x, dim=None, keepdim=False, *, dtype=None):
    if dtype is None and not x.dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be a floating "
                           f"point dtype, got {x.dtype}")
    shape, _ = reduce_shape(x.shape, dim, keepdim)
    return out_like(shape, dtype or x.dtype, x)


def _red_setup(ctx, inputs, output):
    x = inputs[0]
    ctx.shape = x.shape
    ctx.dims = inputs[1] if len(inputs) > 1 else None
    ctx.keepdim = inputs[2] if len(inputs) > 2 else False
    ctx.dtype = x.dtype


def _expand_back(g, shape, dims, keepdim):
    if not keepdim and len(shape):
        nd = len(shape)
        ds = sorted(wrap_dim(d, nd) for d in dims) if dims else list(range(nd))
        for d in ds:
            g = O.unsqueeze(g, d)
    return O.expand(g, list(shape))


def _sum_bw(ctx, g):
    return _expand_back(g, ctx.shape, ctx.dims, ctx.keepdim).to(ctx.dtype), None, None


def _mean_bw(ctx, g):
    n = 1
    _, dset = reduce_shape(ctx.shape, ctx.dims, ctx.keepdim)
    for d in dset:
        if d < len(ctx.shape):      # a 0-dim input "reduces" its dim 0 over one element
            n *= ctx.shape[d]
    return O.div(_expand_back(g, ctx.shape, ctx.dims, ctx.keepdim), float(max(n, 1))), None, None


def _ext_meta(x, dim=(), keepdim=False, api="amax"):
    shape, dset = reduce_shape(x.shape, dim, keepdim)
    if x.numel() == 0:   # also the error path of the array kernel: torch's messages
        if not dim:
            raise RuntimeError(f"{api}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        for d in sorted(dset):
            if x.shape[d] == 0:
                raise RuntimeError(f"{api}(): Expected reduction dim {d} to have non-zero size.")
    return out_like(shape, x.dtype, x)


def _amin_meta(x, dim=(), keepdim=False):
    return _ext_meta(x, dim, keepdim, "amin")


def _ext_setup(ctx, inputs, output):
    _red_setup(ctx, inputs, output)
    ctx.save_for_backward(inputs[0], output)


def _ext_bw(ctx, g):
    x, out = ctx.saved_tensors
    outk = _expand_back(out, ctx.shape, ctx.dims, ctx.keepdim)
    mask = O.to_dtype(O.eq(x, outk), g.dtype)
    count = _expand_back(O.sum(mask, ctx.dims or [], True), ctx.shape, ctx.dims or [], True)
    return O.div(O.mul(_expand_back(g, ctx.shape, ctx.dims, ctx.keepdim), mask), count), None, None


defop("sum(Tensor self, SymInt[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      meta=_sum_meta, setup=_red_setup, backward=_sum_bw)
defop("mean(Tensor self, SymInt[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      meta=_mean_meta, setup=_red_setup, backward=_mean_bw)
defop("amax(Tensor self, SymInt[] dim=[], bool keepdim=False) -> Tensor", meta=_ext_meta,
      setup=_ext_setup, backward=_ext_bw)
defop("amin(Tensor self, SymInt[] dim=[], bool keepdim=False) -> Tensor", meta=_amin_meta,
      setup=_ext_setup, backward=_ext_bw)


def _argmax_meta(x, dim=None, keepdim=False):
    shape, _ = reduce_shape(x.shape, None if dim is None else [dim], keepdim)
    if dim is None and not keepdim:
        shape = ()
    return out_like(shape, _dtype.int64, x)


defop("argmax(Tensor self, SymInt? dim=None, bool keepdim=False) -> Tensor", meta=_argmax_meta,
      differentiable=False)


def max_with_indices(x, dim, keepdim=False):
    """``(values, indices)`` of the maximum along ``dim`` (same as ``torch.max(x, dim)``)."""
    values = O.amax(x, [dim], keepdim)
    idx = O.argmax(x, dim, keepdim)
    return values, idx
