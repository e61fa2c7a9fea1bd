"""Reference kernels of the elementwise ops of several arithmetic steps, computed as torch does for
float16/bfloat16: every step at float32 ("opmath"), the result rounded to the dtype once.

Composed op by op (``mul`` then ``add``), a float16/bfloat16 op rounds each intermediate to its
dtype: ``a + alpha * b`` in bf16 then differed from torch's in 15-40% of the elements (session
55). The ops here take that path's place for float16/bfloat16 operands only (``_ops.opmath``
decides; float32/float64 keep the op-by-op path, whose float32 steps are torch's own):

* ``_add_alpha(a, b, alpha)``: ``a + alpha * b`` (add/sub/rsub with ``alpha``); ``alpha``, and a
  number ``b``, converted to the dtype first, as torch's cpu kernel converts every number of an
  add (``_dtype.round_scalar``); the float32 product of two such numbers is exact;
* ``_addcmul(a, t1, t2, value)``: ``a + (value * t1) * t2``, ``value`` at float32, the last
  multiply-add fused (torch's vectorized loop: ``fmadd``);
* ``_addcdiv(a, t1, t2, value)``: ``a + (value * t1) / t2``;
* ``_lerp(a, b, w)``: ``a + w * (b - a)`` where ``|w| < 0.5``, else ``b + (w - 1) * (b - a)``
  (torch's ``lerp_vec``; ``b - (b - a) * (1 - w)`` the same value), fused; a number ``w`` at
  float32 (not rounded to the dtype).

A fused multiply-add ``x * y + z`` of float32 values is computed in float64 (the product is exact
there) and rounded to float32, then to the dtype: torch's float32 ``fmadd``. (torch's cpu kernels
compute a tail of fewer elements than one vector, and tensors that small, with the dtype's own
scalar arithmetic instead -- each step rounded; the vectorized path is followed here.)

Gradients whose torch formula is one kernel (derivatives.yaml's ``tanh_backward``,
``sigmoid_backward``, ``_softmax_backward_data``, ``_log_softmax_backward_data``) are ops here too:
``_tanh_backward(g, y)``: ``g * (1 - y * y)``; ``_sigmoid_backward(g, y)``: ``g * (1 - y) * y``
(float16: each step rounded to float16, as torch's Half vectors compute it); the softmax pair:
``y * (g - sum(g * y))`` and ``g - exp(y) * sum(g)`` along ``dim``, the sums at float32.

Operands of float32/float64 (not reached through ``_ops.opmath``, kept total) compute in their
own dtype, step by step. Every operand tensor has the result's dtype (the ops' fake rules say so;
the callers convert first, as torch's TensorIterator casts to the common dtype).
"""

from __future__ import annotations

from .. import _dtype


def bind(c) -> dict:
    """``{op name: kernel}`` of this family on the context ``c`` (``_context.Context``)."""
    F32 = c.F32
    F64 = c.nd(_dtype.float64)
    f32 = F32.type
    dt_of = c.dt_of
    xp = c.xp
    round_scalar = _dtype.round_scalar

    def lowp(x) -> bool:
        # float16, or bfloat16 (ml_dtypes': a kind 'V' dtype of 2 bytes)
        return x.dtype.itemsize == 2

    def up(x):
        return x.astype(F32)

    def fma_to(x, y, z, dt):
        """``x * y + z`` (float32 arrays, or float32 scalars) rounded to float32 once, then to
        ``dt``."""
        r = x.astype(F64) * y.astype(F64) if hasattr(x, "astype") else \
            float(x) * y.astype(F64)
        r += z.astype(F64)
        return r.astype(F32).astype(dt)

    def _add_alpha(a, b, alpha):
        dt = a.dtype
        if not lowp(a):
            return a + b * alpha
        t = dt_of(a)
        al = f32(round_scalar(alpha, t))
        if hasattr(b, "dtype"):
            r = up(a) + up(b) * al      # (exact product: two 8/11-bit significands)
        else:
            r = up(a) + f32(round_scalar(b, t)) * al
        return r.astype(dt)

    def _addcmul(a, t1, t2, value):
        dt = a.dtype
        if not lowp(a):
            return a + (t1 * value) * t2
        p = up(t1) * f32(value)
        return fma_to(p, up(t2), up(a), dt)

    def _addcdiv(a, t1, t2, value):
        dt = a.dtype
        if not lowp(a):
            return a + (t1 * value) / t2
        return (up(a) + (up(t1) * f32(value)) / up(t2)).astype(dt)

    def _lerp(a, b, w):
        dt = a.dtype
        tensor_w = hasattr(w, "dtype")
        if not lowp(a):
            d = b - a
            if not tensor_w:
                return a + w * d if abs(w) < 0.5 else b - d * (1 - w)
            small = xp.abs(w) < 0.5
            return xp.where(small, a + w * d, b - d * (1 - w))
        a32, b32 = up(a), up(b)
        d = b32 - a32
        if not tensor_w:
            w32 = f32(w)
            if abs(w32) < 0.5:
                return fma_to(w32, d, a32, dt)
            return fma_to(w32 - f32(1), d, b32, dt)
        w32 = up(w)
        small = xp.abs(w32) < f32(0.5)
        coeff = xp.where(small, w32, w32 - f32(1))
        base = xp.where(small, a32, b32)
        return fma_to(coeff, d, base, dt)

    # -- gradients whose torch formula is one kernel (``*_backward`` in derivatives.yaml) ------
    def _tanh_backward(g, y):        # g * (1 - y * y)
        if not lowp(g):
            return g * (1 - y * y)
        y32 = up(y)
        return (up(g) * (f32(1) - y32 * y32)).astype(g.dtype)

    def _sigmoid_backward(g, y):     # g * (1 - y) * y
        dt = g.dtype
        if not lowp(g):
            return g * (1 - y) * y
        y32 = up(y)
        if dt.kind == "f":
            # float16: torch's kernel computes with Half vectors, each step rounded to float16
            # (bfloat16's converts to float32); one float16 op of two float16 values is exact
            # at float32 before its rounding
            t = (f32(1) - y32).astype(dt).astype(F32)
            return (((up(g) * t).astype(dt).astype(F32)) * y32).astype(dt)
        return (up(g) * (f32(1) - y32) * y32).astype(dt)

    def _softmax_backward_data(g, y, dim):        # y * (g - sum(g * y, dim))
        if not lowp(g):
            return y * (g - xp.sum(g * y, axis=dim, keepdims=True))
        g32, y32 = up(g), up(y)
        return (y32 * (g32 - xp.sum(g32 * y32, axis=dim, keepdims=True))).astype(g.dtype)

    def _log_softmax_backward_data(g, y, dim):    # g - exp(y) * sum(g, dim)
        if not lowp(g):
            return g - xp.exp(y) * xp.sum(g, axis=dim, keepdims=True)
        g32 = up(g)
        return (g32 - xp.exp(up(y)) * xp.sum(g32, axis=dim, keepdims=True)).astype(g.dtype)

    return dict(_add_alpha=_add_alpha, _addcmul=_addcmul, _addcdiv=_addcdiv, _lerp=_lerp,
                _tanh_backward=_tanh_backward, _sigmoid_backward=_sigmoid_backward,
                _softmax_backward_data=_softmax_backward_data,
                _log_softmax_backward_data=_log_softmax_backward_data)
