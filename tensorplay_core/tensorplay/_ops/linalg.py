"""``matmul`` (numpy/torch semantics for 1-D, 2-D and batched operands)."""

from __future__ import annotations

from ._define import defop, fused, ops as O
from ._shapes import broadcast_shapes, check_same_dtype, out_like


def _matmul_meta(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("matmul: both arguments need at least 1 dimension")
    sa = a.shape if a.ndim > 1 else (1,) + tuple(a.shape)
    sb = b.shape if b.ndim > 1 else tuple(b.shape) + (1,)
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                           f"multiplied ({sa[-2]}x{sa[-1]} and {sb[-2]}x{sb[-1]})")
    check_same_dtype(a.dtype, b.dtype)
    if a.dtype.name == "bool":   # torch has no bool matmul kernel (its addmm/dot refuse Bool)
        raise NotImplementedError("matmul: not implemented for 'Bool' (as in torch); cast the "
                                  "operands first, e.g. a.int() @ b.int()")
    batch = broadcast_shapes(sa[:-2], sb[:-2], api="matmul")
    shape = batch + ((sa[-2],) if a.ndim > 1 else ()) + ((sb[-1],) if b.ndim > 1 else ())
    return out_like(shape, a.dtype, a)


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


# 2-D products from this many multiply-adds on: a gradient that is one element broadcast takes
# the row/column sums below (below it, the one fused matmul kernel costs less host time)
_ONE_ELEMENT_MIN_WORK = 1 << 18


def one_element(g):
    """The single element of ``g`` as a 0-d view when ``g`` (a real tensor of at least two
    elements) is a broadcast of one element -- every stride 0, as the gradient of ``sum`` or
    ``mean`` reaches the next formula -- else None."""
    if g.native is None or any(g.stride_tuple) or g.numel() < 2:
        return None
    return O.as_strided(g, [], [])


def _matmul_bw(ctx, g):
    a, b = ctx.saved_tensors
    if a.native is not None and len(a.shape) == 2 and len(b.shape) == 2:
        (m, k), n = a.shape, b.shape[1]
        if m * k * n >= _ONE_ELEMENT_MIN_WORK and g.dtype is a.dtype:
            c = one_element(g)
            if c is not None:
                # g = c everywhere ((a @ b).sum(), .mean()): g @ b.T is b's row sums times c on
                # every row, a.T @ g a's column sums times c on every column -- a read of each
                # input instead of two m*k*n products (and no g materialised for them); the
                # gradients are broadcast views, materialised once where .grad takes them
                need = ctx.needs_input_grad
                return (O.expand(O.mul(O.sum(b, [1]), c), [m, k]) if need[0] else None,
                        O.expand(O.unsqueeze(O.mul(O.sum(a, [0]), c), 1), [k, n])
                        if need[1] else None)
        # the common case (2-D @ 2-D): gradients already have the inputs' shapes, no
        # sum_to_size/reshape (which would hand .grad a view that it then copies)
        need = ctx.needs_input_grad
        r = fused("_matmul_backward", g, a, b, args=(need[0], need[1]))   # no transpose ops
        if r is not None:
            return r
        return (O.matmul(g, O.transpose(b, 0, 1)) if need[0] else None,
                O.matmul(O.transpose(a, 0, 1), g) if need[1] else None)
    a2 = a if a.ndim > 1 else O.unsqueeze(a, 0)
    b2 = b if b.ndim > 1 else O.unsqueeze(b, -1)
    g2 = g
    if a.ndim == 1:
        g2 = O.unsqueeze(g2, -2 if b.ndim > 1 else 0)
    if b.ndim == 1:
        g2 = O.unsqueeze(g2, -1)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = O.matmul(g2, O.transpose(b2, -1, -2)).sum_to_size(a2.shape)
        ga = O.reshape(ga, list(a.shape))
    if ctx.needs_input_grad[1]:
        gb = O.matmul(O.transpose(a2, -1, -2), g2).sum_to_size(b2.shape)
        gb = O.reshape(gb, list(b.shape))
    return ga, gb


defop("matmul(Tensor input, Tensor other) -> Tensor", meta=_matmul_meta, setup=_matmul_setup,
      backward=_matmul_bw)
