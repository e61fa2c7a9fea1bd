"""NumPy kernels (cpu) with explicit ``register_autograd`` formulas, as ported from reference
implementations: a layer norm that returns its statistics, a scaled softmax, rotary embeddings
(no gradient for the cos/sin tables), a quantiser (not differentiable on purpose), batch
statistics (not differentiable, one integer output) and a flatten."""

from __future__ import annotations

import os

import numpy as np

import tensorplay as tp
from tensorplay import library
from tensorplay.plugins import SampleInput

from ._samples import samples

Tensor = tp.Tensor
FAULT = os.environ.get("NEWUSER_FAULT", "")


def _raw_read(a):
    """numel() elements read in memory order from the first element's address (what a naive
    raw kernel does), staying inside the allocation (zeros past its end)."""
    import numpy as np
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    off = (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // a.itemsize
    flat = root.reshape(-1).view(a.dtype)[off:off + a.size]
    if flat.size < a.size:
        flat = np.concatenate([flat, np.zeros(a.size - flat.size, a.dtype)])
    return flat.reshape(a.shape)


def _np(t):
    return t.detach().numpy()


# -- layer_norm: (y, mean, rstd); mean/rstd marked non-differentiable --------------------------

@library.custom_op("newuser::layer_norm", mutates_args=(), device_types="cpu")
def layer_norm(x: Tensor, weight: Tensor, bias: Tensor,
               eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    xn = _np(x)
    mean = xn.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(xn.var(-1, keepdims=True) + eps)
    y = (xn - mean) * rstd * _np(weight) + _np(bias)
    return (tp.from_numpy(np.ascontiguousarray(y, dtype=xn.dtype)),
            tp.from_numpy(np.ascontiguousarray(mean, dtype=xn.dtype)),
            tp.from_numpy(np.ascontiguousarray(rstd, dtype=xn.dtype)))


@layer_norm.register_fake
def _(x, weight, bias, eps=1e-5):
    stat = tuple(x.shape[:-1]) + (1,)
    return x.new_empty(x.shape), x.new_empty(stat), x.new_empty(stat)


def _ln_setup(ctx, inputs, output):
    x, weight, bias, eps = inputs
    y, mean, rstd = output
    ctx.mark_non_differentiable(mean, rstd)      # statistics: as torch's native_layer_norm
    ctx.save_for_backward(x, weight, mean, rstd)


def _ln_backward(ctx, gy, gmean, grstd):
    x, weight, mean, rstd = ctx.saved_tensors
    xhat = (x - mean) * rstd
    g = gy * weight
    dx = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    h = x.shape[-1]
    dw = (gy * xhat).reshape(-1, h).sum(0)
    db = gy.reshape(-1, h).sum(0)
    return dx, dw, db, None


layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


@samples("newuser::layer_norm")
def _(device):
    r = tp.randn
    return [SampleInput((r(6, 16), r(16), r(16)), name="6x16"),
            SampleInput((r(16, 6).t(), r(16), r(16)), name="6x16 transposed view"),
            SampleInput((r(0, 16), r(16), r(16)), name="0x16")]


# -- scaled_softmax: softmax(x * scale) over the last dim ---------------------------------------

def _softmax_np(x, scale):
    xn = _np(x)
    if FAULT == "strides":
        # reads numel() elements from the data pointer, as a raw kernel written naively does
        xn = _raw_read(xn)
    z = xn * scale
    if FAULT == "zero_size":
        z = z - z.max()                              # a global max: no identity on empty input
    else:
        z = z - z.max(-1, keepdims=True) if z.size else z
    e = np.exp(z)
    return tp.from_numpy(np.ascontiguousarray(e / e.sum(-1, keepdims=True), dtype=xn.dtype))


@library.custom_op("newuser::scaled_softmax", mutates_args=())
def scaled_softmax(x: Tensor, scale: float = 1.0) -> Tensor:
    """Device-agnostic kernel written with tensorplay ops (what runs on every device without
    its own kernel)."""
    if FAULT == "hidden_default":
        return tp.softmax(x * scale, -1).to(tp.float64)     # a promotion bug
    return tp.softmax(x * scale, -1)


scaled_softmax.register_kernel("cpu", _softmax_np)


@scaled_softmax.register_fake
def _(x, scale=1.0):
    return x.new_empty(x.shape)


def _sm_setup(ctx, inputs, output):
    ctx.scale = inputs[1]
    ctx.save_for_backward(output)


def _sm_backward(ctx, g):
    (y,) = ctx.saved_tensors
    return ctx.scale * y * (g - (g * y).sum(-1, keepdim=True)), None


scaled_softmax.register_autograd(_sm_backward, setup_context=_sm_setup)


@samples("newuser::scaled_softmax")
def _(device):
    r = tp.randn
    return [SampleInput((r(5, 12),), {"scale": 0.5}, name="5x12"),
            SampleInput((r(12, 5).t(),), name="5x12 transposed view")]


# -- rotary: x * cos + rotate_half(x) * sin; no gradient for the cos/sin tables -----------------

@library.custom_op("newuser::rotary", mutates_args=(), device_types="cpu")
def rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    xn = _np(x)
    h = xn.shape[-1] // 2
    rot = np.concatenate([-xn[..., h:], xn[..., :h]], axis=-1)
    return tp.from_numpy(np.ascontiguousarray(xn * _np(cos) + rot * _np(sin), dtype=xn.dtype))


@rotary.register_fake
def _(x, cos, sin):
    return x.new_empty(x.shape)


def _rot_setup(ctx, inputs, output):
    x, cos, sin = inputs
    ctx.save_for_backward(cos, sin)


def _rot_backward(ctx, g):
    cos, sin = ctx.saved_tensors
    h = g.shape[-1] // 2
    gs = g * sin
    # d/dx of rotate_half(x) * sin: the transposed rotation of g * sin
    back = tp.cat([gs[..., h:], -gs[..., :h]], -1)
    return g * cos + back, None, None               # the tables get no gradient (a declaration)


rotary.register_autograd(_rot_backward, setup_context=_rot_setup)


@samples("newuser::rotary")
def _(device):
    r = tp.randn
    return [SampleInput((r(4, 8), r(4, 8), r(4, 8)), name="4x8"),
            SampleInput((r(0, 8), r(0, 8), r(0, 8)), name="0x8")]


# -- quantize: round to a grid; not differentiable on purpose ----------------------------------

@library.custom_op("newuser::quantize", mutates_args=(), device_types="cpu")
def quantize(x: Tensor, step: float = 0.25) -> Tensor:
    xn = _np(x)
    return tp.from_numpy(np.ascontiguousarray(np.round(xn / step) * step, dtype=xn.dtype))


@quantize.register_fake
def _(x, step=0.25):
    return x.new_empty(x.shape)


def _q_setup(ctx, inputs, output):
    ctx.mark_non_differentiable(output)     # the torch way to say "no gradient, on purpose"


def _q_backward(ctx, g):
    return None, None


quantize.register_autograd(_q_backward, setup_context=_q_setup)


@samples("newuser::quantize")
def _(device):
    return [SampleInput((tp.randn(3, 7),), name="3x7"),
            SampleInput((tp.randn(7, 3).t(),), {"step": 0.5}, name="3x7 transposed, step 0.5")]


# -- batch_stats: (mean, var, count) of the rows; statistics, not differentiable ---------------

@library.custom_op("newuser::batch_stats", mutates_args=(), device_types="cpu")
def batch_stats(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    xn = _np(x)
    n = xn.shape[0]
    mean = xn.mean(0) if n else np.zeros(xn.shape[1:], xn.dtype)
    var = xn.var(0) if n else np.zeros(xn.shape[1:], xn.dtype)
    return (tp.from_numpy(np.ascontiguousarray(mean, dtype=xn.dtype)),
            tp.from_numpy(np.ascontiguousarray(var, dtype=xn.dtype)),
            tp.tensor(n, dtype=tp.int64))


@batch_stats.register_fake
def _(x):
    return (x.new_empty(x.shape[1:]), x.new_empty(x.shape[1:]),
            x.new_empty((), dtype=tp.int64))


def _bs_setup(ctx, inputs, output):
    mean, var, count = output
    ctx.mark_non_differentiable(mean, var)


batch_stats.register_autograd(lambda ctx, gm, gv, gc: None, setup_context=_bs_setup)


@samples("newuser::batch_stats")
def _(device):
    return [SampleInput((tp.randn(9, 4),), name="9x4"),
            SampleInput((tp.randn(4, 9).t(),), name="9x4 transposed view")]


# -- flatten: a copy of x as 1-d ----------------------------------------------------------------

@library.custom_op("newuser::flatten", mutates_args=(), device_types="cpu")
def flatten(x: Tensor) -> Tensor:
    if FAULT == "alias":
        return tp.from_numpy(np.ravel(x.numpy()))   # a view of x's memory when x is contiguous
    return tp.from_numpy(np.array(_np(x).reshape(-1), copy=True))


@flatten.register_fake
def _(x):
    return x.new_empty((x.numel(),))


flatten.register_autograd(lambda ctx, g: g.reshape(ctx.shape),
                          setup_context=lambda ctx, inputs, output:
                          setattr(ctx, "shape", tuple(inputs[0].shape)))


@samples("newuser::flatten")
def _(device):
    return [SampleInput((tp.randn(3, 5),), name="3x5"),
            SampleInput((tp.randn(5, 3).t(),), name="3x5 transposed view")]
