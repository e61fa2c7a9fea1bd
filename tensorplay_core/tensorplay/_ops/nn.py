"""``softmax`` and ``log_softmax`` along a dimension (numerically stable, torch semantics)."""

from __future__ import annotations

from .. import _dtype
from ._define import defop, fused, ops as O
from ._shapes import float_dtype, out_like, wrap_dim


def _sm_meta_of(api):
    """The fake rule of ``softmax``/``log_softmax`` (``api``: the op named in its errors)."""
    def meta(x, dim):
        wrap_dim(dim, x.ndim, f"{api}(): ")
        if not x.dtype.is_floating_point:   # same check as the array kernel (torch refuses too)
            raise RuntimeError(f"{api}(): expected a floating point input, got {x.dtype} (not "
                               f"implemented for integer/bool tensors, as in torch); convert "
                               f"it first, e.g. x.float().{api}(dim)")
        return out_like(x.shape, float_dtype(x.dtype), x)
    return meta


_sm_meta = _sm_meta_of("softmax")
_LOWP = frozenset((_dtype.float16, _dtype.bfloat16))


def _sm_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def _softmax_bw(ctx, g):
    y, = ctx.saved_tensors
    if g.raw_dtype in _LOWP:   # torch's one kernel, at float32 (_ops/opmath)
        return O._softmax_backward_data(g, y, ctx.dim), None
    r = fused("_softmax_backward", g, y, args=(ctx.dim,))   # one kernel call instead of four
    if r is not None:
        return r, None
    return O.mul(y, O.sub(g, O.sum(O.mul(g, y), [ctx.dim], True))), None


def _log_softmax_bw(ctx, g):
    y, = ctx.saved_tensors
    if g.raw_dtype in _LOWP:   # torch's one kernel, at float32 (_ops/opmath)
        return O._log_softmax_backward_data(g, y, ctx.dim), None
    r = fused("_log_softmax_backward", g, y, args=(ctx.dim,))
    if r is not None:
        return r, None
    return O.sub(g, O.mul(O.exp(y), O.sum(g, [ctx.dim], True))), None


defop("softmax(Tensor self, SymInt dim) -> Tensor", meta=_sm_meta, setup=_sm_setup,
      backward=_softmax_bw)
defop("log_softmax(Tensor self, SymInt dim) -> Tensor", meta=_sm_meta_of("log_softmax"),
      setup=_sm_setup,
      backward=_log_softmax_bw)



def clamp_with_torch_gradients(x, lo, hi, out):
    """``out`` (``clamp(x, lo, hi)`` computed as ``minimum(maximum(x, lo), hi)``; a bound may
    be None or a number) with torch's clamp gradients (its clamp_backward_min_max): all of it
    to ``x`` where ``lo <= x <= hi`` (a tie with a bound included: ``maximum``/``minimum`` would
    share it with the bound), to ``lo`` where ``x < lo < hi``, to ``hi`` where ``x > hi`` or
    (both bounds given, ``x`` not NaN) ``hi < lo``; elsewhere none -- with ``lo == hi`` a value
    below them gives its gradient to nobody, as in torch. Each selected value equals ``out``
    there, so the values are ``out``'s (a NaN ``x`` keeps its NaN: torch's ``hi`` gets its
    gradient there too, this does not). Used when a bound is a tensor and something records
    history."""
    inside = below = above = None
    if lo is not None:
        inside = O.ge(x, lo)
        below = O.lt(x, lo)
        if hi is not None:
            below = O.logical_and(below, O.lt(lo, hi))
    if hi is not None:
        m = O.le(x, hi)
        inside = m if inside is None else O.logical_and(inside, m)
        above = O.gt(x, hi)
        if lo is not None:
            # crossed bounds: the result is hi everywhere (x not NaN), and so is the gradient's
            above = O.logical_or(above, O.logical_and(O.lt(hi, lo), O.eq(x, x)))
    r = out.detach()
    if above is not None:
        r = O.where(above, hi, r)
    if below is not None:
        r = O.where(below, lo, r)
    return O.where(inside, x, r)
