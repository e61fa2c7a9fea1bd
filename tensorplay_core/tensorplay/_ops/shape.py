"""Joining tensors: ``cat`` and ``stack`` (torch semantics)."""

from __future__ import annotations

from .. import _dtype
from ._define import defop, ops as O
from ._shapes import out_like, wrap_dim


def _cat_meta(tensors, dim=0):
    ts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors)
    if not ts:
        raise RuntimeError("cat: expected a non-empty list of tensors")
    ref = ts[0]
    d = wrap_dim(dim, ref.ndim, "cat: ")
    for i, t in enumerate(ts):
        if t.ndim != ref.ndim or any(a != b for j, (a, b) in enumerate(zip(t.shape, ref.shape))
                                     if j != d):
            raise RuntimeError(f"cat: sizes of tensors must match except in dimension {d}; tensor "
                               f"{i} has shape {tuple(t.shape)}, tensor 0 has {tuple(ref.shape)}")
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    shape = list(ref.shape)
    shape[d] = sum(t.shape[d] for t in ts)
    return out_like(tuple(shape), dt, ref)


def _cat_setup(ctx, inputs, output):
    ctx.sizes = [t.shape for t in inputs[0]]
    ctx.dim = inputs[1] if len(inputs) > 1 else 0


def _cat_bw(ctx, g):
    d = wrap_dim(ctx.dim, g.ndim)
    out, start = [], 0
    for s in ctx.sizes:
        if len(s) == 1 and s[0] == 0 and g.ndim != 1:
            out.append(None)
            continue
        out.append(O.narrow(g, d, start, s[d]))
        start += s[d]
    return out, None


defop("cat(Tensor[] tensors, SymInt dim=0) -> Tensor", meta=_cat_meta, setup=_cat_setup,
      backward=_cat_bw)


def _stack_meta(tensors, dim=0):
    if not tensors:
        raise RuntimeError("stack: expected a non-empty list of tensors")
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if tuple(t.shape) != tuple(ref.shape):
            raise RuntimeError(f"stack: expects each tensor to be equal size, but got "
                               f"{tuple(ref.shape)} at entry 0 and {tuple(t.shape)} at entry {i}")
    d = wrap_dim(dim, ref.ndim + 1, "stack: ")
    dt = ref.dtype
    for t in tensors[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    shape = list(ref.shape)
    shape.insert(d, len(tensors))
    return out_like(tuple(shape), dt, ref)


def _stack_setup(ctx, inputs, output):
    ctx.n = len(inputs[0])
    ctx.dim = inputs[1] if len(inputs) > 1 else 0


def _stack_bw(ctx, g):
    d = wrap_dim(ctx.dim, g.ndim)
    return [O.squeeze(O.narrow(g, d, i, 1), [d]) for i in range(ctx.n)], None


defop("stack(Tensor[] tensors, SymInt dim=0) -> Tensor", meta=_stack_meta, setup=_stack_setup,
      backward=_stack_bw)
