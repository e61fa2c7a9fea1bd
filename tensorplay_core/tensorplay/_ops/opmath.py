"""float16/bfloat16 ops of several arithmetic steps as torch computes them: at float32, rounded
once (the kernels: ``tensorplay/_kernels/opmath.py``, which states each op's arithmetic).

``add``/``sub``/``rsub`` with ``alpha``, ``addcmul``, ``addcdiv`` and ``lerp`` (their in-place,
out-of-place and ``out=`` forms) are composed of built-in ops; composed op by op, a float16/
bfloat16 result rounded every intermediate (``alpha * other``, ``value * tensor1``, ``end - self``)
to its dtype (session 55: 15-40% of the elements off torch's). For such a result the composing
code calls the helpers below instead (``add_alpha``, ``addc``, ``lerp``), which call one op each;
float32/float64 keep their op-by-op path (its float32 steps are torch's own, and no call costs
more). Each op's gradient is torch's formula (``derivatives.yaml``) written with built-in ops, so
its steps round as torch's do.
"""

from __future__ import annotations

from .. import _dtype
from .._tensor_base import TensorBase
from ._define import defop, ops as O
from ._shapes import broadcast_shapes, elementwise_meta, is_tensor, out_like, shape_of
from .elementwise import _Meta, _red

LOWP = frozenset((_dtype.float16, _dtype.bfloat16))


# -- the helpers the composing code calls ------------------------------------------------------
def takes_alpha(self, other, alpha) -> bool:
    """Whether ``self + alpha * other`` is an ``_add_alpha`` call (``add_alpha``): a
    float16/bfloat16 result, a non-bool number ``alpha``, a tensor or non-bool number ``other``.
    Otherwise the caller's op-by-op path (which also raises torch's errors)."""
    ac = alpha.__class__
    if ac is not float and ac is not int or not isinstance(self, TensorBase):
        return False
    sd = self.raw_dtype
    if isinstance(other, TensorBase):
        od = other.raw_dtype
        # a bool operand takes the op-by-op path: it raises torch's errors (``sub`` of a bool
        # tensor) or computes add's bool rules
        if sd not in LOWP and od not in LOWP or sd._kind == "b" or od._kind == "b":
            return False
        return _dtype.result_type(sd, 2 if self.raw_shape else 1,
                                  od, 2 if other.raw_shape else 1) in LOWP
    oc = other.__class__
    return sd in LOWP and (oc is float or oc is int)


def add_alpha(self, other, alpha, api):
    """``self + alpha * other`` (``api`` "add"; "sub": ``self - alpha * other``) as one op, where
    ``takes_alpha`` says so. Operands of another dtype are converted to the result's first
    (torch's common dtype)."""
    sd = self.raw_dtype
    if isinstance(other, TensorBase):
        od = other.raw_dtype
        rt = _dtype.result_type(sd, 2 if self.raw_shape else 1, od, 2 if other.raw_shape else 1)
        if od is not rt:
            other = O.to_dtype(other, rt)
    else:
        rt = sd
    if sd is not rt:
        self = O.to_dtype(self, rt)
    return O._add_alpha(self, other, -alpha if api == "sub" else alpha)


def addc(self, t1, t2, value, api, rt):
    """``self + value * t1 * t2`` (``api`` "addcmul") or ``self + value * t1 / t2`` ("addcdiv")
    for a float16/bfloat16 result dtype ``rt`` (``t1``, ``t2`` already of it)."""
    if self.raw_dtype is not rt:
        self = O.to_dtype(self, rt)
    return (O._addcmul if api == "addcmul" else O._addcdiv)(self, t1, t2, float(value))


def lerp(self, end, weight):
    """``lerp`` of float16/bfloat16 ``self`` and ``end`` (checked to be of one dtype, ``weight``
    too when a tensor)."""
    if not isinstance(weight, TensorBase):
        weight = float(weight)
    return O._lerp(self, end, weight)


# -- fake rules ----------------------------------------------------------------------------------
def _same_dtype_meta(api, n_tensors):
    def meta(*args):
        ts = args[:n_tensors]
        dt = ts[0].dtype
        for t in ts[1:]:
            if is_tensor(t) and t.dtype != dt:
                raise RuntimeError(f"{api}: expected all tensors of dtype {dt}, got {t.dtype}")
        if not dt.is_floating_point:
            raise RuntimeError(f"{api}: floating tensors only, got {dt}")
        shape = broadcast_shapes(*(shape_of(t) for t in ts), api=api)
        return out_like(shape, dt, ts[0], ts)
    return elementwise_meta(meta, n_tensors)


# -- add/sub/rsub with alpha -------------------------------------------------------------------
def _add_alpha_setup(ctx, inputs, output):
    a, b, alpha = inputs
    ctx.vals = (_Meta(a), _Meta(b) if is_tensor(b) else None, alpha)


def _add_alpha_bw(ctx, g):
    # torch: self: grad; other: grad * alpha (then reduced to other's shape)
    ma, mb, alpha = ctx.vals
    return _red(g, ma), (_red(O.mul(g, alpha), mb) if mb is not None else None), None


defop("_add_alpha(Tensor self, Tensor other, float alpha) -> Tensor",
      meta=_same_dtype_meta("add", 2), setup=_add_alpha_setup, backward=_add_alpha_bw,
      scalar_ok=("other",))


# -- addcmul / addcdiv -------------------------------------------------------------------------
def _addc_setup(ctx, inputs, output):
    a, t1, t2, value = inputs
    ctx.save_for_backward(t1, t2)
    ctx.vals = (_Meta(a), value)


def _addcmul_bw(ctx, g):
    # torch: tensor1: grad * (tensor2 * value); tensor2: grad * (tensor1 * value)
    ma, value = ctx.vals
    t1, t2 = ctx.saved_tensors
    need = ctx.needs_input_grad
    g1 = _red(O.mul(g, O.mul(t2, value)), t1) if need[1] else None
    g2 = _red(O.mul(g, O.mul(t1, value)), t2) if need[2] else None
    return _red(g, ma), g1, g2, None


def _addcdiv_bw(ctx, g):
    # torch: tensor1: grad * (value / tensor2), the number a tensor of tensor2's dtype (ATen's
    # Scalar / Tensor); tensor2: -grad * (value * tensor1 / (tensor2 * tensor2))
    ma, value = ctx.vals
    t1, t2 = ctx.saved_tensors
    need = ctx.needs_input_grad
    g1 = g2 = None
    if need[1]:
        v = O.full([], value, dtype=t2.dtype, device=t2.device)
        g1 = _red(O.mul(g, O.div(v, t2)), t1)
    if need[2]:
        g2 = _red(O.mul(O.neg(g), O.div(O.mul(t1, value), O.mul(t2, t2))), t2)
    return _red(g, ma), g1, g2, None


defop("_addcmul(Tensor self, Tensor tensor1, Tensor tensor2, float value) -> Tensor",
      meta=_same_dtype_meta("addcmul", 3), setup=_addc_setup, backward=_addcmul_bw)
defop("_addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, float value) -> Tensor",
      meta=_same_dtype_meta("addcdiv", 3), setup=_addc_setup, backward=_addcdiv_bw)


# -- lerp --------------------------------------------------------------------------------------
def _lerp_setup(ctx, inputs, output):
    a, b, w = inputs
    if is_tensor(w):
        ctx.save_for_backward(a, b, w)
        ctx.vals = None
    else:
        ctx.vals = (_Meta(a), _Meta(b), w)


def _lerp_bw(ctx, g):
    v = ctx.vals
    if v is not None:
        # torch's lerp.Scalar: self: grad * (1 - weight) (a double); end: grad * weight
        ma, mb, w = v
        return _red(O.mul(g, 1.0 - w), ma), _red(O.mul(g, w), mb), None
    # lerp.Tensor: self: grad * (1 - weight); end: grad * weight; weight: grad * (end - self)
    a, b, w = ctx.saved_tensors
    need = ctx.needs_input_grad
    ga = _red(O.mul(g, O.rsub(w, 1)), a) if need[0] else None
    gb = _red(O.mul(g, w), b) if need[1] else None
    gw = _red(O.mul(g, O.sub(b, a)), w) if need[2] else None
    return ga, gb, gw


defop("_lerp(Tensor self, Tensor end, Tensor weight) -> Tensor",
      meta=_same_dtype_meta("lerp", 3), setup=_lerp_setup, backward=_lerp_bw,
      scalar_ok=("weight",))


# -- gradients whose torch formula is one kernel -------------------------------------------------
# Composed op by op, a float16/bfloat16 gradient of tanh, sigmoid, softmax or log_softmax rounded
# every intermediate (``y * y``, ``1 - y``, ``exp(y)``...) to its dtype: 30-60% of the elements
# off torch's, whose ``tanh_backward``, ``sigmoid_backward``, ``_softmax_backward_data`` and
# ``_log_softmax_backward_data`` are one kernel each, at float32 (session 55). The formulas of
# those ops call these for a float16/bfloat16 gradient (``backward_op``); float32/float64 keep
# their fused kernel or op-by-op path. Each has torch's gradient formulas (a second backward).
def backward_op(g) -> bool:
    """Whether the gradient ``g`` takes the one-kernel ops below (float16/bfloat16)."""
    return g.raw_dtype in LOWP


def _bw_meta(api):
    meta = _same_dtype_meta(api, 2)

    def m(g, y, *dim):
        return meta(g, y)
    return elementwise_meta(m, 2)


def _save_gy(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.dim = inputs[2] if len(inputs) > 2 else None


def _tanh_backward_bw(ctx, gg):
    # torch: grad_output: tanh_backward(grad, output); output: -2 * output * grad * grad_output
    g, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (_red(O._tanh_backward(gg, y), g) if need[0] else None,
            _red(O.mul(O.mul(O.mul(y, -2.0), gg), g), y) if need[1] else None)


def _sigmoid_backward_bw(ctx, gg):
    # torch: grad_output: sigmoid_backward(grad, output);
    # output: grad * grad_output * (-2 * output + 1)
    g, y = ctx.saved_tensors
    need = ctx.needs_input_grad
    return (_red(O._sigmoid_backward(gg, y), g) if need[0] else None,
            _red(O.mul(O.mul(gg, g), O.add(O.mul(y, -2.0), 1.0)), y) if need[1] else None)


def _softmax_backward_data_bw(ctx, gg):
    # out = y * (g - sum(g * y)): grad_output: _softmax_backward_data(grad, y);
    # output: grad * (g - sum(g * y)) - g * sum(grad * y)
    g, y = ctx.saved_tensors
    d = [ctx.dim]
    need = ctx.needs_input_grad
    gy = None
    if need[1]:
        gy = _red(O.sub(O.mul(gg, O.sub(g, O.sum(O.mul(g, y), d, True))),
                        O.mul(g, O.sum(O.mul(gg, y), d, True))), y)
    return (_red(O._softmax_backward_data(gg, y, ctx.dim), g) if need[0] else None), gy, None


def _log_softmax_backward_data_bw(ctx, gg):
    # out = g - exp(y) * sum(g): grad_output: grad - sum(grad * exp(y));
    # output: -sum(g) * exp(y) * grad
    g, y = ctx.saved_tensors
    d = [ctx.dim]
    need = ctx.needs_input_grad
    e = O.exp(y)
    gg_g = _red(O.sub(gg, O.sum(O.mul(gg, e), d, True)), g) if need[0] else None
    gg_y = _red(O.mul(O.mul(O.neg(O.sum(g, d, True)), e), gg), y) if need[1] else None
    return gg_g, gg_y, None


defop("_tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
      meta=_bw_meta("tanh_backward"), setup=_save_gy, backward=_tanh_backward_bw)
defop("_sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
      meta=_bw_meta("sigmoid_backward"), setup=_save_gy, backward=_sigmoid_backward_bw)
defop("_softmax_backward_data(Tensor grad_output, Tensor output, SymInt dim) -> Tensor",
      meta=_bw_meta("_softmax_backward_data"), setup=_save_gy, backward=_softmax_backward_data_bw)
defop("_log_softmax_backward_data(Tensor grad_output, Tensor output, SymInt dim) -> Tensor",
      meta=_bw_meta("_log_softmax_backward_data"), setup=_save_gy,
      backward=_log_softmax_backward_data_bw)
