"""Elementwise built-in ops: arithmetic, comparisons, math functions, ``where``.

Each op: schema, fake rule (broadcast shape + torch dtype promotion, contiguous strides) and
backward formula written with tensorplay ops (so it runs on every device).
"""

from __future__ import annotations

import math

from .. import _dtype
from .._tensor_base import TensorBase
from ._define import defop, fused, ops as O
from ._shapes import (TensorStandIn, binary_meta, broadcast_shapes, elementwise_meta,
                      first_tensor, float_dtype, is_tensor, out_like, result_dtype, shape_of,
                      unary_meta)
from ._shapes import zeros_grad


# is_tensor's test, inline: the formulas below run once per recorded op in every backward,
# and a call frame per operand is ~0.4 k instructions there
_TENSORISH = (TensorBase, TensorStandIn)


def _red(g, x):
    """Gradient ``g`` reduced to the shape of input ``x`` (undo broadcasting); None for scalars."""
    # a tensor's shape and dtype read through its slots (raw_shape/raw_dtype), not the public
    # properties: a property read is ~0.4 k instructions more, and this runs per operand of
    # every recorded binary op in every backward
    if x.__class__ is _Meta:
        xs, xd = x.shape, x.dtype
    elif isinstance(x, TensorBase):
        xs, xd = x.raw_shape, x.raw_dtype
    elif isinstance(x, TensorStandIn):
        xs, xd = x.shape, x.dtype
    else:
        return None
    gs = g.raw_shape
    if gs != xs:
        lead = len(gs) - len(xs)
        if lead > 0 and gs[lead:] == xs:
            # only leading dims to drop (a bias): sum_to_size's own result, without parsing
            g = O.sum(g, list(range(lead)), False)
        else:
            g = g.sum_to_size(xs)
    if g.raw_dtype is not xd and xd.is_floating_point:
        g = O.to_dtype(g, xd)
    return g


_NO_SCALARS = (None, None)


def _save_inputs(ctx, inputs, output):
    a, b = inputs[0], inputs[1]
    ta, tb = isinstance(a, _TENSORISH), isinstance(b, _TENSORISH)
    ctx.save_for_backward(a if ta else None, b if tb else None)
    ctx.scalars = _NO_SCALARS if ta and tb else (None if ta else a, None if tb else b)


class _Meta(TensorStandIn):
    """Shape/dtype of a tensor input whose values the backward does not need (``_red`` reads
    only these): like torch's AddBackward/MulBackward-with-a-scalar, nothing is saved, so such a
    graph may be backpropagated again and in-place changes of the input are not an error."""

    __slots__ = ("shape", "dtype")

    def __init__(self, x):
        self.shape = x.shape
        self.dtype = x.dtype


_new = object.__new__


def _save_meta(ctx, inputs, output):
    # two operands, unrolled: a comprehension is a frame of its own (recorded per add/sub call);
    # each _Meta filled here, as its __init__ would (no frame for it)
    # (a tensor's fields read through its slots: see _red)
    a, b = inputs[0], inputs[1]
    if isinstance(a, TensorBase):
        ma = _new(_Meta)
        ma.shape = a.raw_shape
        ma.dtype = a.raw_dtype
        a = ma
    elif isinstance(a, TensorStandIn):
        a = _Meta(a)
    if isinstance(b, TensorBase):
        mb = _new(_Meta)
        mb.shape = b.raw_shape
        mb.dtype = b.raw_dtype
        b = mb
    elif isinstance(b, TensorStandIn):
        b = _Meta(b)
    ctx.vals = (a, b)


def _save_mul(ctx, inputs, output):
    """mul/div: the tensors when both are tensors; only ``self``'s shape/dtype with a scalar."""
    a, b = inputs[0], inputs[1]
    if isinstance(b, _TENSORISH):
        # _save_inputs with a tensor ``b``, inline
        ta = isinstance(a, _TENSORISH)
        ctx.save_for_backward(a if ta else None, b)
        ctx.scalars = _NO_SCALARS if ta else (a, None)
        ctx.vals = None
    elif isinstance(a, TensorBase):
        ma = _new(_Meta)
        ma.shape = a.raw_shape
        ma.dtype = a.raw_dtype
        ctx.vals = (ma, b)
    else:
        ctx.vals = (_Meta(a), b)


def _save_out(ctx, inputs, output):
    ctx.save_for_backward(output)


def _val(ctx, i):
    t = ctx.saved_tensors[i]
    return t if t is not None else ctx.scalars[i]


# -- binary arithmetic --------------------------------------------------------------------------
def _add_bw(ctx, g):
    a, b = ctx.vals
    # an operand of g's shape and dtype takes g as is (_red's answer, without its frame)
    gs, gd = g.raw_shape, g.raw_dtype
    return (g if a.__class__ is _Meta and a.shape == gs and a.dtype is gd else _red(g, a),
            g if b.__class__ is _Meta and b.shape == gs and b.dtype is gd else _red(g, b))


def _sub_bw(ctx, g):
    a, b = ctx.vals
    return _red(g, a), (_red(O.neg(g), b) if isinstance(b, _TENSORISH) else None)


def _rsub_bw(ctx, g):   # other - self
    a, b = ctx.vals
    return _red(O.neg(g), a), _red(g, b)


def _mul_bw(ctx, g):
    v = ctx.vals
    if v is not None:
        # tensor * number: only the tensor's gradient, g * number (reduced/cast when g's shape
        # or dtype differs from the tensor's)
        a, b = v
        ga = O.mul(g, b)
        if ga.shape != a.shape or (ga.dtype is not a.dtype and a.dtype.is_floating_point):
            ga = _red(ga, a)
        return ga, None
    st = ctx.saved_tensors   # once (each read checks the saved versions)
    a = st[0] if st[0] is not None else ctx.scalars[0]
    b = st[1] if st[1] is not None else ctx.scalars[1]
    ga = _red(O.mul(g, b), a) if ctx.needs_input_grad[0] else None
    gb = _red(O.mul(g, a), b) if len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1] else None
    return ga, gb


def _div_bw(ctx, g):
    v = ctx.vals
    a, b = v if v is not None else (_val(ctx, 0), _val(ctx, 1))
    ga = _red(O.div(g, b), a)
    gb = None
    if isinstance(b, _TENSORISH):
        # torch's order (div_tensor_other_backward), each step rounded as its ops do:
        # -grad * ((self / other) / other). (-(grad * self) / (other * other) overflowed or
        # underflowed where torch's does not: other = 1e-30 in float32 squares to 0)
        gb = _red(O.mul(O.neg(g), O.div(O.div(a, b), b)), b)
    return ga, gb


def _rdiv_bw(ctx, g):   # s / a
    a, s = _val(ctx, 0), _val(ctx, 1)
    if g.raw_dtype in _LOWP and not isinstance(s, _TENSORISH):
        # torch's ``s / x`` is ``x.reciprocal() * s``: mul's gradient ``grad * s``, then
        # reciprocal's ``-grad * (result * result)``, each step rounded as torch's ops do
        r = O.rdiv(a, 1)
        return _red(O.mul(O.neg(O.mul(g, s)), O.mul(r, r)), a), None
    return _red(O.neg(O.div(O.mul(g, s), O.mul(a, a))), a), None


def _pow_save(ctx, inputs, output):
    # the output is saved too (through save_for_backward, so a second backward after it was
    # freed raises torch's error and an in-place change of it is detected)
    ctx.save_for_backward(*[x if is_tensor(x) else None for x in inputs[:2]], output)
    ctx.scalars = [None if is_tensor(x) else x for x in inputs[:2]]


def _pow_bw(ctx, g):
    a, e = _val(ctx, 0), _val(ctx, 1)
    if is_tensor(e):
        # torch's pow_backward_self / pow_backward_exponent: 0 where the exponent is 0 (self's),
        # 0 where self is 0 and the exponent >= 0 (the exponent's: not 0 * log(0))
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = O.mul(g, O.mul(e, O.pow(a, O.sub(e, 1))))
            ga = _red(O.where(O.eq(e, 0), 0.0, ga), a)
        if ctx.needs_input_grad[1]:
            r = ctx.saved_tensors[2]
            zero = O.eq(a, 0) if is_tensor(a) else a == 0
            gl = O.mul(g, O.mul(r, O.log(a) if is_tensor(a) else math.log(a) if a > 0 else
                                math.nan if a < 0 else -math.inf))
            if is_tensor(a) or zero:
                gl = O.where(O.logical_and(O.ge(e, 0), zero), 0.0, gl)
            gb = _red(gl, e)
        return ga, gb
    if e == 0:   # torch's pow_backward: zeros where the exponent is 0 (g * 0: NaN at an inf g)
        return zeros_grad(g), None
    return _red(O.mul(g, O.mul(O.pow(a, e - 1), float(e))), a), None


def _rpow_bw(ctx, g):   # s ** a
    a, s = _val(ctx, 0), _val(ctx, 1)
    return _red(O.mul(g, O.mul(ctx.saved_tensors[2], math.log(s))), a), None


# the first argument is torch's function's name for it ("input": tp.exp(input=x) as torch.exp);
# the in-place ops (methods) keep "self"
_B = "(Tensor input, Tensor other) -> Tensor"
# number_self: torch also takes a Python number first (add(5, t), pow(2, t), remainder(7, t),
# bitwise_and(5, t): its Scalar-self overloads), computed as the reflected operator does
defop("add" + _B, meta=binary_meta("same", "add"),
      setup=_save_meta, backward=_add_bw, scalar_ok=("other",), number_self="__radd__")
defop("sub" + _B, meta=binary_meta("same", "sub"),
      setup=_save_meta, backward=_sub_bw, scalar_ok=("other",), number_self="__rsub__")
defop("rsub" + _B, meta=binary_meta("same", "rsub"),
      setup=_save_meta, backward=_rsub_bw, scalar_ok=("other",))
defop("mul" + _B, meta=binary_meta("same", "mul"),
      setup=_save_mul, backward=_mul_bw, scalar_ok=("other",), number_self="__rmul__")
defop("div" + _B, meta=binary_meta("float", "div"), setup=_save_mul, backward=_div_bw,
      scalar_ok=("other",), number_self="__rtruediv__")
defop("rdiv" + _B, meta=binary_meta("float", "rdiv"), setup=_save_inputs, backward=_rdiv_bw,
      scalar_ok=("other",))
defop("pow(Tensor input, Tensor exponent) -> Tensor", meta=binary_meta("same", "pow"),
      setup=_pow_save, backward=_pow_bw, scalar_ok=("exponent",), number_self="__rpow__")
defop("rpow" + _B, meta=binary_meta("same", "rpow"),
      setup=_pow_save, backward=_rpow_bw, scalar_ok=("other",))


def _zero_bw(ctx, g):   # div(rounding_mode=...): zeros (exact, not g * 0)
    a, b = _val(ctx, 0), _val(ctx, 1)
    z = zeros_grad(g)
    return _red(z, a), (_red(z, b) if is_tensor(b) else None)


def _floor_divide_bw(ctx, g):
    # torch has no derivative for floor_divide (``//``): its output requires grad and backward
    # through it raises (div with rounding_mode has one: zeros, the _div_floor op)
    raise RuntimeError(
        "derivative for aten::floor_divide is not implemented (tensorplay's floor_divide, "
        "``//``, has no gradient, as torch's); use div(a, b, rounding_mode='floor') for a "
        "floor division whose gradient is zeros, or detach its operands")


def _remainder_bw(ctx, g):   # self - floor(self / other) * other
    a, b = _val(ctx, 0), _val(ctx, 1)
    gb = None
    if is_tensor(b) and ctx.needs_input_grad[1]:
        gb = _red(O.neg(O.mul(g, O._div_floor(a, b))), b)   # torch: self.div(other, floor)
    return _red(g, a), gb


defop("floor_divide" + _B, meta=binary_meta("same", "floor_divide"),
      backward=_floor_divide_bw, scalar_ok=("other",), number_self="__rfloordiv__")
# torch's div(..., rounding_mode='floor'/'trunc'): floor_divide's values, gradient zeros
# (derivatives.yaml: div.Tensor_mode): Tensor.div's rounding modes call it
defop("_div_floor" + _B, meta=binary_meta("same", "floor_divide"), kernel="floor_divide",
      setup=_save_inputs, backward=_zero_bw, scalar_ok=("other",))
defop("remainder" + _B, meta=binary_meta("same", "remainder"),
      setup=_save_inputs, backward=_remainder_bw, scalar_ok=("other",), number_self="__rmod__")


def _minmax_bw(pick_gt: bool):
    def bw(ctx, g):
        a, b = _val(ctx, 0), _val(ctx, 1)
        # torch's formulas: where(a == b, g / 2, g).masked_fill(a loses, 0) for each operand
        # (a NaN on either side: g to both), clamp's where(x within the bound, g, 0): exact
        # zeros, where g * mask gave NaN under an inf/NaN gradient (session 48)
        if is_tensor(b):
            r = fused("_minmax_backward", g, a, b, args=(pick_gt,))   # one kernel call
            if r is not None:
                return _red(r[0], a), _red(r[1], b)
            share = O.where(O.eq(a, b), O.mul(g, 0.5), g)
            a_loses, b_loses = (O.lt(a, b), O.gt(a, b)) if pick_gt else (O.gt(a, b), O.lt(a, b))
            return _red(O.where(a_loses, 0.0, share), a), _red(O.where(b_loses, 0.0, share), b)
        if not ctx.needs_input_grad[0]:
            return None, None
        r = fused("_clamp_backward", g, a, args=(b, pick_gt))
        if r is None:
            r = O.where(O.ge(a, b) if pick_gt else O.le(a, b), g, 0.0)
        return _red(r, a), None
    return bw


defop("maximum" + _B, meta=binary_meta("same", "maximum"),
      setup=_save_inputs, backward=_minmax_bw(True),
      scalar_ok=("other",))
defop("minimum" + _B, meta=binary_meta("same", "minimum"),
      setup=_save_inputs, backward=_minmax_bw(False),
      scalar_ok=("other",))

for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    defop(_name + _B, meta=binary_meta("bool", _name), scalar_ok=("other",), differentiable=False)
for _name in ("logical_and", "logical_or"):
    defop(_name + _B, meta=binary_meta("bool", _name), scalar_ok=("other",), differentiable=False)
defop("logical_not(Tensor input) -> Tensor", meta=unary_meta("bool"), differentiable=False)


# -- bitwise ------------------------------------------------------------------------------------
# torch's kernels: and/or/xor/not on integer and bool dtypes (on bool: the logical ops), shifts on
# integer dtypes; every other result dtype is "not implemented". No gradient (integer results).
_LOGICAL_FOR = {"bitwise_and": "logical_and", "bitwise_or": "logical_or",
                "bitwise_xor": "ne", "bitwise_not": "logical_not"}


def check_bitwise_dtype(api: str, dt, shift: bool = False) -> None:
    """torch's refusal of bitwise op ``api`` for result dtype ``dt``: floating dtypes always,
    bool for the shifts. ``RuntimeError`` naming the op and torch's name of the dtype."""
    if not dt.is_floating_point and not (shift and dt.name == "bool"):
        return
    name = _dtype.scalar_type_name(dt)
    if shift:
        raise RuntimeError(f"{api}: not implemented for '{name}' (as in torch: shifts take "
                           f"integer tensors only); cast the operands to an integer dtype "
                           f"first, e.g. x.long()")
    raise RuntimeError(f"{api}: not implemented for '{name}' (as in torch: bitwise ops take "
                       f"integer and bool tensors only); cast the operands to an integer dtype "
                       f"first (e.g. x.long()), or use tp.{_LOGICAL_FOR[api]} to combine truth "
                       f"values")


def _bitwise_meta(api: str, shift: bool = False):
    """Fake rule of a broadcasting bitwise op: torch's promotion, then its dtype refusal."""
    def meta(a, b):
        shape = broadcast_shapes(shape_of(a), shape_of(b), api=api)
        dt = result_dtype(a, b)
        check_bitwise_dtype(api, dt, shift)
        return out_like(shape, dt, first_tensor(a, b), (a, b))
    return elementwise_meta(meta, 2)


def _bitwise_not_meta(x):
    check_bitwise_dtype("bitwise_not", x.dtype)
    return out_like(x.shape, x.dtype, x, (x,))


elementwise_meta(_bitwise_not_meta, 1)


_REFLECTED = {"bitwise_and": "__rand__", "bitwise_or": "__ror__", "bitwise_xor": "__rxor__",
              "bitwise_left_shift": "__rlshift__", "bitwise_right_shift": "__rrshift__"}
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    defop(_name + _B, meta=_bitwise_meta(_name), scalar_ok=("other",), differentiable=False,
          number_self=_REFLECTED[_name])
for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    defop(_name + _B, meta=_bitwise_meta(_name, shift=True), scalar_ok=("other",),
          differentiable=False, number_self=_REFLECTED[_name])
defop("bitwise_not(Tensor input) -> Tensor", meta=_bitwise_not_meta, differentiable=False)

defop("sign(Tensor input) -> Tensor", meta=unary_meta(), backward=lambda ctx, g: zeros_grad(g))

# -- unary math -------------------------------------------------------------------------------
_U = "(Tensor input) -> Tensor"


def _bool_refused(message):
    """Fake rule of a unary op torch refuses bool tensors for; also the error path of its array
    kernel (which raises TypeError on bool): torch's ``message``."""
    same = unary_meta()

    def meta(x):
        if x.dtype.name == "bool":
            raise RuntimeError(message)
        return same(x)
    return elementwise_meta(meta, 1)


_neg_meta = _bool_refused("Negation, the `-` operator, on a bool tensor is not supported. If you "
                          "are trying to invert a mask, use the `~` or `logical_not()` operator "
                          "instead.")
_relu_meta = _bool_refused("Boolean inputs not supported for relu")


defop("neg" + _U, meta=_neg_meta, backward=lambda ctx, g: O.neg(g))
defop("exp" + _U, meta=unary_meta("float"), setup=_save_out,
      backward=lambda ctx, g: O.mul(g, ctx.saved_tensors[0]))
defop("log" + _U, meta=unary_meta("float"), setup=lambda c, i, o: c.save_for_backward(i[0]),
      backward=lambda ctx, g: O.div(g, ctx.saved_tensors[0]))
defop("sqrt" + _U, meta=unary_meta("float"), setup=_save_out,
      backward=lambda ctx, g: O.div(g, O.mul(ctx.saved_tensors[0], 2.0)))
defop("rsqrt" + _U, meta=unary_meta("float"), setup=_save_out,
      backward=lambda ctx, g: O.mul(O.mul(g, O.pow(ctx.saved_tensors[0], 3)), -0.5))


# -- the norms' root (session 48) ----------------------------------------------------------------
# ``s ** (1/p)`` elementwise (``sqrt`` for p = 2) whose gradient is torch's at a norm's root: 0
# where the root is 0. ``linalg.vector_norm`` (so ``norm``, ``dist``, ``renorm``, ``cdist``) takes
# it over the sum of ``|x|**p``, ``std`` over the variance: one op with history where composing
# the mask took four (eq, where, sqrt/pow, where).
def _norm_root_meta(x, p):
    if p == 0:
        raise RuntimeError("_norm_root: p must not be 0 (the 0-norm is a count, no root)")
    return out_like(x.shape, float_dtype(x.dtype), x, (x,))


def _norm_root_save(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.p = inputs[1]


def _norm_root_bw(ctx, g):
    """torch's norm backward at the root (``norm_backward``, ``std_backward``):
    ``g * r**(1-p) / p`` (``g / (2 r)`` for p = 2), 0 where the root ``r`` is 0."""
    r = ctx.saved_tensors[0]
    p = ctx.p
    d = fused("_norm_root_backward", g, r, args=(p,))   # one kernel call instead of four
    if d is not None:
        return d, None
    if p == 2:
        d = O.div(g, O.mul(r, 2.0))
    else:
        d = O.mul(g, O.div(O.pow(r, 1.0 - p), p))
    return O.where(O.eq(r, 0), 0.0, d), None


defop("_norm_root(Tensor self, float p) -> Tensor", meta=elementwise_meta(_norm_root_meta, 1),
      setup=_norm_root_save, backward=_norm_root_bw)


def norm_root(s, p):
    """The root of a norm or of a variance, ``s ** (1/p)`` (``sqrt`` for p = 2), as its callers
    take it (``linalg.vector_norm``, ``Tensor.std``, ``std_mean``): ``tp::_norm_root`` when ``s``
    records history (its gradient masked where the root is 0, as torch's); the plain
    ``sqrt``/``pow`` otherwise (nothing to mask; ``tensorplay.compile``'s fusers take those into
    a chain)."""
    if s.requires_grad:
        return O._norm_root(s, p)
    return O.sqrt(s) if p == 2 else O.pow(s, 1.0 / p)
# float16/bfloat16 gradients: torch's one-kernel tanh_backward/sigmoid_backward (_ops/opmath);
# float32/float64 op by op, as before
_LOWP = frozenset((_dtype.float16, _dtype.bfloat16))


def _tanh_bw(ctx, g):
    y = ctx.saved_tensors[0]
    if g.raw_dtype in _LOWP:
        return O._tanh_backward(g, y)
    return O.mul(g, O.rsub(O.mul(y, y), 1.0))


def _sigmoid_bw(ctx, g):
    y = ctx.saved_tensors[0]
    if g.raw_dtype in _LOWP:
        return O._sigmoid_backward(g, y)
    return O.mul(g, O.mul(y, O.rsub(y, 1.0)))


defop("tanh" + _U, meta=unary_meta("float"), setup=_save_out, backward=_tanh_bw)
defop("sigmoid" + _U, meta=unary_meta("float"), setup=_save_out, backward=_sigmoid_bw)
def _relu_bw(g, y):
    # torch's threshold_backward(g, y, 0): g where the output is not <= 0 (NaN passes), else
    # exactly 0, also for an infinite or NaN g (a product with the mask gave NaN there). One
    # kernel call (the cpu's selects g's bits with an integer product, as fast as the float one);
    # op by op (create_graph, captures, 2-byte floats) a `where`
    r = fused("_threshold_backward", g, y)
    return r if r is not None else O.where(O.le(y, 0), 0.0, g)


defop("relu" + _U, meta=_relu_meta, setup=_save_out,
      backward=lambda ctx, g: _relu_bw(g, ctx.saved_tensors[0]))
# abs of a bool tensor gives it back (torch refuses it): the eager kernel is the array API's abs
# itself, no frame of ours, and a dtype test there would cost ~0.2 µs on every abs call
defop("abs" + _U, meta=unary_meta(), setup=lambda c, i, o: c.save_for_backward(i[0]),
      backward=lambda ctx, g: O.mul(g, O.sign(ctx.saved_tensors[0])))
defop("sin" + _U, meta=unary_meta("float"), setup=lambda c, i, o: c.save_for_backward(i[0]),
      backward=lambda ctx, g: O.mul(g, O.cos(ctx.saved_tensors[0])))
defop("cos" + _U, meta=unary_meta("float"), setup=lambda c, i, o: c.save_for_backward(i[0]),
      backward=lambda ctx, g: O.neg(O.mul(g, O.sin(ctx.saved_tensors[0]))))
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
defop("erf" + _U, meta=unary_meta("float"), setup=lambda c, i, o: c.save_for_backward(i[0]),
      backward=lambda ctx, g: O.mul(g, O.mul(O.exp(O.neg(O.mul(ctx.saved_tensors[0],
                                                                ctx.saved_tensors[0]))),
                                             _TWO_OVER_SQRT_PI)))


# torch.expm1 ... torch.cosh: integer and bool inputs give the default float dtype; backward
# formulas as torch's derivatives.yaml (in terms of the saved input or result)
def _save_in(c, i, o):
    c.save_for_backward(i[0])


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_F = unary_meta("float")
defop("expm1" + _U, meta=_F, setup=_save_out,        # grad * (result + 1)
      backward=lambda ctx, g: O.mul(g, O.add(ctx.saved_tensors[0], 1.0)))
defop("log1p" + _U, meta=_F, setup=_save_in,         # grad / (self + 1)
      backward=lambda ctx, g: O.div(g, O.add(ctx.saved_tensors[0], 1.0)))
defop("log2" + _U, meta=_F, setup=_save_in,          # grad / (self * ln 2)
      backward=lambda ctx, g: O.div(g, O.mul(ctx.saved_tensors[0], _LN2)))
defop("log10" + _U, meta=_F, setup=_save_in,         # grad / (self * ln 10)
      backward=lambda ctx, g: O.div(g, O.mul(ctx.saved_tensors[0], _LN10)))
def _exp2_bw(ctx, g):   # grad * result * ln 2 (float16/bfloat16: torch's order, (g * r) * ln 2)
    r = ctx.saved_tensors[0]
    if g.raw_dtype in _LOWP:
        return O.mul(O.mul(g, r), _LN2)
    return O.mul(g, O.mul(r, _LN2))


defop("exp2" + _U, meta=_F, setup=_save_out, backward=_exp2_bw)
defop("tan" + _U, meta=_F, setup=_save_out,          # grad * (1 + result**2)
      backward=lambda ctx, g: O.mul(g, O.add(O.mul(ctx.saved_tensors[0],
                                                   ctx.saved_tensors[0]), 1.0)))
defop("asin" + _U, meta=_F, setup=_save_in,          # grad * rsqrt(1 - self**2)
      backward=lambda ctx, g: O.mul(g, O.rsqrt(O.rsub(O.mul(ctx.saved_tensors[0],
                                                            ctx.saved_tensors[0]), 1.0))))
defop("acos" + _U, meta=_F, setup=_save_in,          # -grad * rsqrt(1 - self**2)
      backward=lambda ctx, g: O.neg(O.mul(g, O.rsqrt(O.rsub(O.mul(ctx.saved_tensors[0],
                                                                  ctx.saved_tensors[0]), 1.0)))))
defop("atan" + _U, meta=_F, setup=_save_in,          # grad / (self**2 + 1)
      backward=lambda ctx, g: O.div(g, O.add(O.mul(ctx.saved_tensors[0],
                                                   ctx.saved_tensors[0]), 1.0)))
defop("sinh" + _U, meta=_F, setup=_save_in,          # grad * cosh(self)
      backward=lambda ctx, g: O.mul(g, O.cosh(ctx.saved_tensors[0])))
defop("cosh" + _U, meta=_F, setup=_save_in,          # grad * sinh(self)
      backward=lambda ctx, g: O.mul(g, O.sinh(ctx.saved_tensors[0])))


# -- where --------------------------------------------------------------------------------------
def _where_meta(cond, a, b):
    from ._shapes import broadcast_shapes, out_like, result_dtype, shape_of, first_tensor
    from .._dtype import result_type as binary_result_dtype, wrapped_dtype as _wrapped_dtype
    if cond.dtype.name != "bool":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype.scalar_type_name(cond.dtype)}"
                           f" (torch's rule); pass a mask such as `cond != 0`")
    shape = broadcast_shapes(cond.shape, shape_of(a), shape_of(b), api="where")
    if is_tensor(a) or is_tensor(b):
        dt = result_dtype(a, b)
    else:
        dt = binary_result_dtype(_wrapped_dtype(a), 0, _wrapped_dtype(b), 0)
    return out_like(shape, dt, first_tensor(a, b, cond), (cond, a, b))


elementwise_meta(_where_meta, 3)


def _where_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.shapes = [_Meta(x) if is_tensor(x) else None for x in inputs[1:]]   # not the tensors


def _where_bw(ctx, g):
    cond, = ctx.saved_tensors
    a, b = ctx.shapes
    # torch's where(condition, grad, 0): the untaken branch gets an exact 0 even where grad is
    # inf or NaN (``g * 0`` gave NaN there: a norm's masked power under an infinite gradient)
    return (None, _red(O.where(cond, g, 0.0), a) if a is not None else None,
            _red(O.where(cond, 0.0, g), b) if b is not None else None)


defop("where(Tensor condition, Tensor self, Tensor other) -> Tensor", meta=_where_meta,
      setup=_where_setup, backward=_where_bw, scalar_ok=("self", "other"))


# -- classification and rounding ------------------------------------------------------------------
for _name in ("isnan", "isinf", "isfinite"):
    defop(_name + _U, meta=unary_meta("bool"), differentiable=False)


def _zero_grad(ctx, g):   # floor/ceil/trunc/round: piecewise constant (torch: zeros_like(grad))
    return zeros_grad(g)


defop("floor" + _U, meta=unary_meta(), backward=_zero_grad)
defop("ceil" + _U, meta=unary_meta(), backward=_zero_grad)
defop("trunc" + _U, meta=unary_meta(), backward=_zero_grad)
_same_meta = unary_meta()


def _round_meta(x, *, decimals=0):
    return _same_meta(x)


defop("round(Tensor self, *, int decimals=0) -> Tensor", meta=elementwise_meta(_round_meta, 1),
      backward=lambda ctx, g: (zeros_grad(g), None))


# -- two-operand math and inverse hyperbolics (session 44: torch.atan2 ... torch.atanh) ----------
# dtypes as torch's kernels: atan2/copysign give the default float dtype for integer and bool
# operands; hypot/nextafter take floating operands only (NotImplementedError, as torch's
# "hypot_cpu" not implemented for 'Long'); fmod keeps integer dtypes and refuses bool. Backward
# formulas as torch 2.13's (derivatives.yaml, checked against torch's gradients).
def _floating_only_meta(api: str):
    def meta(a, b):
        shape = broadcast_shapes(shape_of(a), shape_of(b), api=api)
        dt = result_dtype(a, b)
        if not dt.is_floating_point:
            raise NotImplementedError(
                f'"{api}" not implemented for \'{_dtype.scalar_type_name(dt)}\' (as '
                f"torch: floating tensors only); convert the operands first, e.g. x.float()")
        if api == "nextafter" and dt is _dtype.bfloat16:
            # its step is bfloat16's spacing: the float32 "opmath" of the other bf16 ops would
            # step by float32's and round back to the input
            raise NotImplementedError("nextafter: bfloat16 is not supported by tensorplay (torch "
                                      "has it); convert to float32 first, or step the bits")
        return out_like(shape, dt, first_tensor(a, b), (a, b))
    return elementwise_meta(meta, 2)


def _fmod_meta(a, b):
    shape = broadcast_shapes(shape_of(a), shape_of(b), api="fmod")
    dt = result_dtype(a, b)
    if dt is _dtype.bool:
        raise NotImplementedError("\"fmod\" not implemented for 'Bool' (as torch: bool operands "
                                  "have no fmod kernel); cast one operand to an integer dtype "
                                  "first, e.g. x.long()")
    return out_like(shape, dt, first_tensor(a, b), (a, b))


elementwise_meta(_fmod_meta, 2)


def _atan2_bw(ctx, g):   # d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2); 0 where a = b = 0
    a, b = ctx.saved_tensors
    den = O.add(O.mul(a, a), O.mul(b, b))
    recip = O.where(O.eq(den, 0), 0.0, O.rdiv(den, 1.0))
    ga = _red(O.mul(O.mul(g, b), recip), a) if ctx.needs_input_grad[0] else None
    gb = _red(O.mul(O.mul(g, O.neg(a)), recip), b) if ctx.needs_input_grad[1] else None
    return ga, gb


def _hypot_save(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1], output)


def _hypot_bw(ctx, g):   # grad * self / result, grad * other / result
    a, b, r = ctx.saved_tensors
    if g.raw_dtype in _LOWP:   # torch's order, each step rounded: (grad * self) / result
        ga = _red(O.div(O.mul(g, a), r), a) if ctx.needs_input_grad[0] else None
        gb = _red(O.div(O.mul(g, b), r), b) if ctx.needs_input_grad[1] else None
        return ga, gb
    ga = _red(O.mul(g, O.div(a, r)), a) if ctx.needs_input_grad[0] else None
    gb = _red(O.mul(g, O.div(b, r)), b) if ctx.needs_input_grad[1] else None
    return ga, gb


def _fmod_bw(ctx, g):   # grad; -grad * trunc(self / other)
    a, b = _val(ctx, 0), _val(ctx, 1)
    gb = None
    if is_tensor(b) and ctx.needs_input_grad[1]:
        gb = _red(O.neg(O.mul(g, O.trunc(O.div(a, b)))), b)
    return _red(g, a), gb


def _copysign_save(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], output)
    ctx.other = _Meta(inputs[1]) if is_tensor(inputs[1]) else None


def _copysign_bw(ctx, g):   # grad * result / self (0 where self is 0); other: zeros
    a, r = ctx.saved_tensors
    ratio = O.where(O.eq(a, 0), 0.0, O.div(r, a))
    gb = _red(zeros_grad(g), ctx.other) if ctx.other is not None else None
    return _red(O.mul(g, ratio), a), gb


def _nextafter_bw(ctx, g):   # torch 2.13: grad where self != other (else 0); zeros for other
    a, b = ctx.saved_tensors
    ga = _red(O.where(O.eq(a, b), 0.0, g), a) if ctx.needs_input_grad[0] else None
    gb = _red(zeros_grad(g), b) if ctx.needs_input_grad[1] else None
    return ga, gb


def _fmax_fmin_bw(pick_ge):
    # torch 2.13's derivatives.yaml: the gradient goes to ``input`` where it is picked -- it is
    # >= (fmin: <=) other, a tie included, or other is NaN -- and to ``other`` elsewhere
    def bw(ctx, g):
        a, b = ctx.saved_tensors
        to_a = O.logical_or(O.ge(a, b) if pick_ge else O.le(a, b), O.isnan(b))
        ga = _red(O.where(to_a, g, 0.0), a) if ctx.needs_input_grad[0] else None
        gb = _red(O.where(to_a, 0.0, g), b) if ctx.needs_input_grad[1] else None
        return ga, gb
    return bw


defop("fmax" + _B, meta=binary_meta("same", "fmax"), setup=_save_inputs,
      backward=_fmax_fmin_bw(True))
defop("fmin" + _B, meta=binary_meta("same", "fmin"), setup=_save_inputs,
      backward=_fmax_fmin_bw(False))
defop("atan2" + _B, meta=binary_meta("float", "atan2"), setup=_save_inputs, backward=_atan2_bw)
defop("hypot" + _B, meta=_floating_only_meta("hypot"), setup=_hypot_save, backward=_hypot_bw)
defop("nextafter" + _B, meta=_floating_only_meta("nextafter"), setup=_save_inputs,
      backward=_nextafter_bw)
defop("fmod" + _B, meta=_fmod_meta, setup=_save_inputs, backward=_fmod_bw, scalar_ok=("other",))
defop("copysign" + _B, meta=binary_meta("float", "copysign"), setup=_copysign_save,
      backward=_copysign_bw, scalar_ok=("other",))
defop("asinh" + _U, meta=_F, setup=_save_in,          # grad * rsqrt(self**2 + 1)
      backward=lambda ctx, g: O.mul(g, O.rsqrt(O.add(O.mul(ctx.saved_tensors[0],
                                                           ctx.saved_tensors[0]), 1.0))))
defop("acosh" + _U, meta=_F, setup=_save_in,          # grad * rsqrt(self**2 - 1)
      backward=lambda ctx, g: O.mul(g, O.rsqrt(O.sub(O.mul(ctx.saved_tensors[0],
                                                           ctx.saved_tensors[0]), 1.0))))
defop("atanh" + _U, meta=_F, setup=_save_in,          # grad / (1 - self**2)
      backward=lambda ctx, g: O.div(g, O.rsub(O.mul(ctx.saved_tensors[0],
                                                    ctx.saved_tensors[0]), 1.0)))


# xlogy (session 44: an op with torch's formulas; Tensor.xlogy was a composite whose log ran at
# ``other``'s dtype before promotion and whose gradients were NaN where torch's are 0)
def _xlogy_bw(ctx, g):
    # torch 2.13: self: xlogy(grad, other) with 0 where self == 0 and other <= 0;
    # other: grad * self / other
    a, b = _val(ctx, 0), _val(ctx, 1)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = O.xlogy(g, b)
        if is_tensor(b):
            ga = O.where(O.logical_and(O.eq(a, 0), O.le(b, 0)), 0.0, ga)
        elif b <= 0:
            ga = O.where(O.eq(a, 0), 0.0, ga)
        ga = _red(ga, a)
    if is_tensor(b) and len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1]:
        gb = _red(O.div(O.mul(g, a), b), b)
    return ga, gb


defop("xlogy" + _B, meta=binary_meta("float", "xlogy"), setup=_save_inputs, backward=_xlogy_bw,
      scalar_ok=("other",))
