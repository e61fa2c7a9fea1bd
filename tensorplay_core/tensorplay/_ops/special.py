"""Special functions as built-in ops (session 46): the gamma family (``lgamma``, ``digamma``,
``polygamma``, ``mvlgamma``), the error functions (``erfc``, ``erfcx``, ``erfinv``, ``ndtri``),
the modified Bessel functions (``i0``, ``i0e``, ``i1``, ``i1e``), ``sinc``, ``logit``,
``xlog1py``, ``heaviside``, ``ldexp`` and ``frexp``.

Each op: schema, fake rule and backward formula (torch 2.13's derivatives.yaml, written with
tensorplay ops so it runs on every device); kernels in ``_kernels/special.py``. Dtypes as
torch: the floating functions give the default float dtype for integer and bool inputs.
"""

from __future__ import annotations

import math

from .. import _dtype
from ._define import defop, ops as O
from ._shapes import (binary_meta, broadcast_shapes, elementwise_meta, first_tensor, float_dtype,
                      is_tensor,
                      out_like, shape_of, unary_meta)
from .elementwise import _red, _save_inputs, _val

_U = "(Tensor input) -> Tensor"
_LOWP = frozenset((_dtype.float16, _dtype.bfloat16))
_F = unary_meta("float")
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _save_in(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _save_in_out(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], output)


def _save_out(ctx, inputs, output):
    ctx.save_for_backward(output)


# -- gamma family -------------------------------------------------------------------------------
defop("lgamma" + _U, meta=_F, setup=_save_in,              # grad * digamma(self)
      backward=lambda ctx, g: O.mul(g, O.digamma(ctx.saved_tensors[0])))
defop("digamma" + _U, meta=_F, setup=_save_in,             # grad * polygamma(1, self)
      backward=lambda ctx, g: O.mul(g, O.polygamma(1, ctx.saved_tensors[0])))


def _polygamma_meta(n, x):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _F(x)


elementwise_meta(_polygamma_meta, (1,))    # laid out as its operand (torch's TensorIterator)


def _polygamma_setup(ctx, inputs, output):
    ctx.n = inputs[0]
    ctx.save_for_backward(inputs[1])


defop("polygamma(int n, Tensor input) -> Tensor", meta=_polygamma_meta, setup=_polygamma_setup,
      backward=lambda ctx, g: (None, O.mul(g, O.polygamma(ctx.n + 1, ctx.saved_tensors[0]))))


def _mvlgamma_meta(x, p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return _F(x)


elementwise_meta(_mvlgamma_meta, 1)


def _mvlgamma_setup(ctx, inputs, output):
    ctx.p = inputs[1]
    ctx.save_for_backward(inputs[0])


def _mvlgamma_bw(ctx, g):   # grad * sum_i digamma(self - i/2)
    x, = ctx.saved_tensors
    s = O.digamma(x)
    for i in range(1, ctx.p):
        s = O.add(s, O.digamma(O.sub(x, i / 2)))
    return O.mul(g, s), None


defop("mvlgamma(Tensor input, int p) -> Tensor", meta=_mvlgamma_meta, setup=_mvlgamma_setup,
      backward=_mvlgamma_bw)


# -- error functions ----------------------------------------------------------------------------
defop("erfc" + _U, meta=_F, setup=_save_in,                # -2/sqrt(pi) exp(-self^2) grad
      backward=lambda ctx, g: O.mul(g, O.mul(O.exp(O.neg(O.mul(ctx.saved_tensors[0],
                                                                ctx.saved_tensors[0]))),
                                             -_TWO_OVER_SQRT_PI)))


def _erfcx_bw(ctx, g):      # (2 self result - 2/sqrt(pi)) grad
    x, r = ctx.saved_tensors
    return O.mul(g, O.sub(O.mul(O.mul(x, r), 2.0), _TWO_OVER_SQRT_PI))


defop("erfcx" + _U, meta=_F, setup=_save_in_out, backward=_erfcx_bw)
defop("erfinv" + _U, meta=_F, setup=_save_out,             # sqrt(pi)/2 exp(result^2) grad
      backward=lambda ctx, g: O.mul(g, O.mul(O.exp(O.mul(ctx.saved_tensors[0],
                                                          ctx.saved_tensors[0])),
                                             _HALF_SQRT_PI)))
defop("ndtri" + _U, meta=_F, setup=_save_out,              # sqrt(2 pi) exp(result^2 / 2) grad
      backward=lambda ctx, g: O.mul(g, O.mul(O.exp(O.mul(O.mul(ctx.saved_tensors[0],
                                                                ctx.saved_tensors[0]), 0.5)),
                                             _SQRT_2PI)))


# -- modified Bessel functions of the first kind --------------------------------------------------
defop("i0" + _U, meta=_F, setup=_save_in,                  # grad * i1(self)
      backward=lambda ctx, g: O.mul(g, O.i1(ctx.saved_tensors[0])))


def _i0e_bw(ctx, g):        # grad * (i1e(self) - sgn(self) * result)
    x, r = ctx.saved_tensors
    return O.mul(g, O.sub(O.i1e(x), O.mul(O.sign(x), r)))


def _i1_bw(ctx, g):         # grad * (i0(self) - result / self), 1/2 at 0
    x, r = ctx.saved_tensors
    return O.mul(g, O.where(O.eq(x, 0), 0.5, O.sub(O.i0(x), O.div(r, x))))


def _i1e_bw(ctx, g):        # grad * (i0e(self) - result * (sgn(self) + 1/self)), 1/2 at 0
    x, r = ctx.saved_tensors
    d = O.sub(O.i0e(x), O.mul(r, O.add(O.sign(x), O.rdiv(x, 1.0))))
    return O.mul(g, O.where(O.eq(x, 0), 0.5, d))


defop("i0e" + _U, meta=_F, setup=_save_in_out, backward=_i0e_bw)
defop("i1" + _U, meta=_F, setup=_save_in_out, backward=_i1_bw)
defop("i1e" + _U, meta=_F, setup=_save_in_out, backward=_i1e_bw)


# -- sinc, logit ------------------------------------------------------------------------------------
def _sinc_bw(ctx, g):       # (cos(pi x) pi x - sin(pi x)) / (pi x^2), 0 at 0
    x, = ctx.saved_tensors
    px = O.mul(x, math.pi)
    if g.raw_dtype in _LOWP:
        # torch's order (sinc_backward), each step rounded: grad * ((x pi cos(x pi) - sin(x pi))
        # / (x * x * pi)), 0 where x * x * pi is 0
        sq = O.mul(O.mul(x, x), math.pi)
        d = O.div(O.sub(O.mul(px, O.cos(px)), O.sin(px)), sq)
        return O.where(O.eq(sq, 0), 0.0, O.mul(g, d))
    d = O.div(O.sub(O.mul(O.cos(px), px), O.sin(px)), O.mul(px, x))
    return O.mul(g, O.where(O.eq(x, 0), 0.0, d))


defop("sinc" + _U, meta=_F, setup=_save_in, backward=_sinc_bw)


def _logit_meta(x, eps=None):
    return _F(x)


elementwise_meta(_logit_meta, 1)


def _logit_setup(ctx, inputs, output):
    ctx.eps = inputs[1] if len(inputs) > 1 else None
    ctx.save_for_backward(inputs[0])


def _logit_bw(ctx, g):
    # torch's logit_backward: grad / (x (1 - x)); without eps NaN outside [0, 1], with eps 0
    # outside [eps, 1 - eps]
    x, = ctx.saved_tensors
    d = O.div(g, O.mul(x, O.rsub(x, 1.0)))
    eps = ctx.eps
    if eps is None:
        return O.where(O.logical_or(O.lt(x, 0), O.gt(x, 1)), math.nan, d), None
    return O.where(O.logical_or(O.lt(x, eps), O.gt(x, 1.0 - eps)), 0.0, d), None


defop("logit(Tensor input, float? eps=None) -> Tensor", meta=_logit_meta, setup=_logit_setup,
      backward=_logit_bw)


# -- xlog1py, heaviside, ldexp, frexp ---------------------------------------------------------------
def _xlog1py_bw(ctx, g):
    # torch 2.13: self: xlog1py(grad, other) with 0 where self == 0 and other <= -1;
    # other: grad * self / (other + 1)
    a, b = _val(ctx, 0), _val(ctx, 1)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = O.xlog1py(g, b)
        if is_tensor(b):
            ga = O.where(O.logical_and(O.eq(a, 0), O.le(b, -1)), 0.0, ga)
        elif b <= -1:
            ga = O.where(O.eq(a, 0), 0.0, ga)
        ga = _red(ga, a)
    if is_tensor(b) and len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1]:
        gb = _red(O.div(O.mul(g, a), O.add(b, 1.0)), b)
    return ga, gb


defop("xlog1py(Tensor input, Tensor other) -> Tensor", meta=binary_meta("float", "xlog1py"),
      setup=_save_inputs, backward=_xlog1py_bw, scalar_ok=("other",))


def _heaviside_meta(x, values):
    shape = broadcast_shapes(shape_of(x), shape_of(values), api="heaviside")
    if x.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return out_like(shape, x.dtype, first_tensor(x, values), (x, values))


elementwise_meta(_heaviside_meta, 2)


# torch: "derivative for aten::heaviside is not implemented" (no formula: not differentiable)
defop("heaviside(Tensor input, Tensor values) -> Tensor", meta=_heaviside_meta,
      differentiable=False)


def _ldexp_meta(x, other):
    shape = broadcast_shapes(shape_of(x), shape_of(other), api="ldexp")
    if not other.dtype.is_floating_point:
        # torch 2.13: an integer exponent scales exactly; x's floating dtype (or the default)
        dt = float_dtype(x.dtype)
    else:   # x * pow(2.0, other) at the promoted dtype
        dt = _dtype.result_type(x.dtype, 2 if x.ndim else 1, other.dtype, 2 if other.ndim else 1)
    return out_like(shape, dt, first_tensor(x, other), (x, other))


elementwise_meta(_ldexp_meta, 2)


def _ldexp_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1], output)


def _ldexp_bw(ctx, g):      # self: grad * 2^other; other: grad * result * ln 2
    x, e, r = ctx.saved_tensors
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = _red(O.mul(g, O.exp2(O.to_dtype(e, r.dtype))), x)
    if ctx.needs_input_grad[1]:
        gb = _red(O.mul(g, O.mul(r, math.log(2.0))), e)
    return ga, gb


defop("ldexp(Tensor input, Tensor other) -> Tensor", meta=_ldexp_meta, setup=_ldexp_setup,
      backward=_ldexp_bw)


def _frexp_meta(x):
    if not x.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return out_like(x.shape, x.dtype, x), out_like(x.shape, _dtype.int32, x)


def _frexp_setup(ctx, inputs, output):
    ctx.save_for_backward(output[1])


def _frexp_bw(ctx, g, _ge=None):    # mantissa: grad / 2^exponent; exponent: not differentiable
    e, = ctx.saved_tensors
    return O.div(g, O.exp2(O.to_dtype(e, g.dtype)))


defop("frexp(Tensor input) -> (Tensor mantissa, Tensor exponent)", meta=_frexp_meta,
      setup=_frexp_setup, backward=_frexp_bw)
