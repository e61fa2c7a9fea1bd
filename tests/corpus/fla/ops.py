"""flash-linear-attention's ops on tensorplay.library: the released host code, our op wrappers.

Upstream: https://github.com/fla-org/flash-linear-attention, released as PyPI fla-core==0.6.0 (MIT,
see kernels.py / LICENSE). Nothing of its code is in this file. fla writes its host code as
``XFunction(torch.autograd.Function)`` (forward / backward under ``@input_guard``) calling host
functions (``layer_norm_fwd`` ...) that launch the kernels: those are read from the wheel at import
and run as released with ``torch`` bound to ``tensorplay`` and the kernels passed through
``wrap_triton`` (``corpus._upstream.host``: ``HOST_BINDINGS``; fla's ``dispatch`` and device guard:
``HOST_SUPPLIED``). :data:`HOST` names them. The released Functions are themselves
``tensorplay.autograd.Function`` subclasses then (``torch.autograd.Function`` -> tensorplay's): the
function cases (cases.py) call their ``apply`` as fla's ``l2norm`` / ``rms_norm`` ... do.

Ours (the migration a torch user makes, for ``opcheck``): each Function becomes a forward and a
backward ``triton_op`` and ``register_autograd``; the ops call the released ``XFunction.forward(ctx,
...)`` / ``backward(ctx, ...)`` with :class:`_Ctx`, which records what ``forward`` saves (returned
as op outputs: no ctx survives an op) and hands the backward the attributes forward set. The ops
for fla.ops.utils (softmax, logsumexp, chunk_local_cumsum) call its host functions; their
backward is the released backward host function (softmax), or the same released forward in
reverse (chunk_local_cumsum's gradient is the reverse in-chunk cumsum, as fla's chunked ops
compute it), or tensorplay ops (logsumexp: fla has no backward kernel for it). Every line that
differs from a Function's use carries ``# CHANGED: why``.
"""
# ruff: noqa  -- the op wrappers keep the Functions' names and layout

from __future__ import annotations

from typing import Optional

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

from .._host import Ctx as _Ctx
from .._upstream import host
from .kernels import DIST

# the released host code this file and cases.py call: {module in the wheel: [names]}
HOST = {
    "fla/modules/norm/l2norm.py": ["L2NormFunction"],
    "fla/modules/norm/layernorm.py": ["LayerNormFunction"],
    "fla/modules/norm/fused_norm_gate.py": ["LayerNormGatedFunction"],
    "fla/modules/activations/ops.py": ["SigmoidFunction", "SwishFunction", "LogSigmoidFunction"],
    "fla/ops/utils/cumsum.py": ["chunk_local_cumsum"],
    "fla/ops/utils/logsumexp.py": ["logsumexp_fwd"],
    "fla/ops/utils/softmax.py": ["softmax_fwd", "softmax_bwd"],
    "fla/ops/simple_gla/chunk.py": ["ChunkSimpleGLAFunction"],
    "fla/modules/fused_cross_entropy/ops.py": ["FusedCrossEntropyFunction"],
    "fla/modules/token_shift.py": ["TokenShift"],
    "fla/ops/delta_rule/chunk.py": ["ChunkDeltaRuleFunction"],
    "fla/ops/gla/chunk.py": ["ChunkGLAFunction"],
}

globals().update(host(DIST, HOST, framework=tensorplay, wrap=wrap_triton))


# --- norm/l2norm.py: L2NormFunction ------------------------------------------------------------

@triton_op("fla::l2norm", mutates_args=())
def l2norm(x: Tensor, eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    ctx = _Ctx()
    y = L2NormFunction.forward(ctx, x, eps, None)
    _, rstd = ctx.saved_tensors
    return y, rstd  # CHANGED: rstd is an output (saved for the backward op; no ctx here)


@triton_op("fla::l2norm_backward", mutates_args=())
def l2norm_bwd(dy: Tensor, y: Tensor, rstd: Tensor, eps: float) -> Tensor:
    dx, _, _ = L2NormFunction.backward(_Ctx((y, rstd), eps=eps), dy)
    return dx


def _l2_setup(ctx, inputs, output):
    ctx.eps = inputs[1]
    ctx.save_for_backward(output[0], output[1])
    ctx.mark_non_differentiable(output[1])  # CHANGED: rstd, an op output, is a saved statistic


def _l2_backward(ctx, dy, drstd):
    y, rstd = ctx.saved_tensors
    return l2norm_bwd(dy, y, rstd, ctx.eps), None


l2norm.register_autograd(_l2_backward, setup_context=_l2_setup)


# --- norm/layernorm.py: LayerNormFunction ------------------------------------------------------

def _ln_ctx(x2d, weight, bias, mean, rstd, x_shape, eps, is_rms_norm, has_residual, prenorm):
    # CHANGED: what LayerNormFunction.forward kept on ctx, rebuilt for the backward op
    return _Ctx((x2d, weight, bias, mean, rstd), x_shape_og=x_shape, eps=eps, is_rms_norm=is_rms_norm,
                num_groups=1, has_residual=has_residual, prenorm=prenorm, x_dtype=x2d.dtype)


@triton_op("fla::layer_norm", mutates_args=())
def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    ctx = _Ctx()
    y = LayerNormFunction.forward(ctx, x, weight, bias, None, eps, False, False, False, 1)
    _, _, _, mean, rstd = ctx.saved_tensors
    return y, mean, rstd  # CHANGED: mean, rstd are outputs (saved for the backward op)


@triton_op("fla::layer_norm_backward", mutates_args=())
def layer_norm_bwd(dy: Tensor, x: Tensor, weight: Tensor, bias: Tensor, mean: Tensor, rstd: Tensor,
                   eps: float) -> tuple[Tensor, Tensor, Tensor]:
    ctx = _ln_ctx(x.reshape(-1, x.shape[-1]), weight, bias, mean, rstd, x.shape, eps, False, False, False)
    dx, dw, db, *_ = LayerNormFunction.backward(ctx, dy)
    return dx, dw, db


def _ln_setup(ctx, inputs, output):
    x, weight, bias, eps = inputs
    ctx.eps = eps
    ctx.save_for_backward(x, weight, bias, output[1], output[2])
    ctx.mark_non_differentiable(output[1], output[2])  # CHANGED: saved statistics as outputs


def _ln_backward(ctx, dy, dmean, drstd):
    x, weight, bias, mean, rstd = ctx.saved_tensors
    dx, dw, db = layer_norm_bwd(dy, x, weight, bias, mean, rstd, ctx.eps)
    return dx, dw, db, None


layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


# rms_norm with a residual, prenorm=True (fla's fused add + RMSNorm of a transformer block):
# (y, residual_out = x + residual)
@triton_op("fla::rms_norm_residual", mutates_args=())
def rms_norm_residual(x: Tensor, weight: Tensor, residual: Tensor, eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    ctx = _Ctx()
    y, res_out = LayerNormFunction.forward(ctx, x, weight, None, residual, eps, True, False, True, 1)
    rstd = ctx.saved_tensors[4]
    return y, res_out, rstd  # CHANGED: rstd is an output (saved for the backward op)


@triton_op("fla::rms_norm_residual_backward", mutates_args=())
def rms_norm_residual_bwd(dy: Tensor, dres_out: Tensor, res_out: Tensor, weight: Tensor, rstd: Tensor,
                          eps: float) -> tuple[Tensor, Tensor, Tensor]:
    ctx = _ln_ctx(res_out.reshape(-1, res_out.shape[-1]), weight, None, None, rstd, res_out.shape, eps,
                  True, True, True)
    dx, dw, _, dres = LayerNormFunction.backward(ctx, dy, dres_out)[:4]
    # CHANGED: .clone(): the released backward hands dx as the residual's gradient too (the same
    # tensor, x + residual's two inputs); an op's outputs may not alias each other
    return dx, dw, dres.clone()


def _rmsr_setup(ctx, inputs, output):
    ctx.eps = inputs[3]
    ctx.save_for_backward(output[1], inputs[1], output[2])
    ctx.mark_non_differentiable(output[2])  # CHANGED: rstd, a saved statistic, is an output


def _rmsr_backward(ctx, dy, dres_out, drstd):
    res_out, weight, rstd = ctx.saved_tensors
    if dy is None:  # CHANGED: only residual_out used (an op hands None for an unused output)
        dy = tensorplay.zeros_like(res_out)
    if dres_out is None:
        dres_out = tensorplay.zeros_like(res_out)
    dx, dw, dres = rms_norm_residual_bwd(dy, dres_out, res_out, weight, rstd, ctx.eps)
    return dx, dw, dres, None


rms_norm_residual.register_autograd(_rmsr_backward, setup_context=_rmsr_setup)


# --- norm/fused_norm_gate.py: LayerNormGatedFunction -------------------------------------------

@triton_op("fla::layer_norm_gated", mutates_args=())
def layer_norm_gated(x: Tensor, g: Tensor, weight: Tensor, bias: Tensor, activation: str = "swish",
                     eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    ctx = _Ctx()
    y = LayerNormGatedFunction.forward(ctx, x, g, weight, bias, activation, None, eps, False, False, False)
    _, _, _, _, mean, rstd = ctx.saved_tensors
    return y, mean, rstd  # CHANGED: mean, rstd are outputs (saved for the backward op)


@triton_op("fla::layer_norm_gated_backward", mutates_args=())
def layer_norm_gated_bwd(dy: Tensor, x: Tensor, g: Tensor, weight: Tensor, bias: Tensor, mean: Tensor,
                         rstd: Tensor, activation: str, eps: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    D = x.shape[-1]
    # CHANGED: what LayerNormGatedFunction.forward kept on ctx, rebuilt for the backward op
    ctx = _Ctx((x.reshape(-1, D), g.reshape(-1, D), weight, bias, mean, rstd), x_shape_og=x.shape,
               g_shape_og=g.shape, activation=activation, eps=eps, is_rms_norm=False, has_residual=False,
               prenorm=False, x_dtype=x.dtype)
    dx, dg, dw, db, *_ = LayerNormGatedFunction.backward(ctx, dy)
    return dx, dg, dw, db


def _lng_setup(ctx, inputs, output):
    x, g, weight, bias, activation, eps = inputs
    ctx.activation, ctx.eps = activation, eps
    ctx.save_for_backward(x, g, weight, bias, output[1], output[2])
    ctx.mark_non_differentiable(output[1], output[2])  # CHANGED: saved statistics as outputs


def _lng_backward(ctx, dy, dmean, drstd):
    x, g, weight, bias, mean, rstd = ctx.saved_tensors
    dx, dg, dw, db = layer_norm_gated_bwd(dy, x, g, weight, bias, mean, rstd, ctx.activation, ctx.eps)
    return dx, dg, dw, db, None, None


layer_norm_gated.register_autograd(_lng_backward, setup_context=_lng_setup)


# --- activations/ops.py: SigmoidFunction, SwishFunction, LogSigmoidFunction --------------------

def _activation(name, function, **attrs):
    """A forward op ``y = f(x)`` calling ``function.forward`` and its backward op calling
    ``function.backward`` (each Function saves ``x``; LogSigmoid keeps ``temperature`` on ctx)."""
    extra = tuple(attrs)

    @triton_op(f"fla::{name}", mutates_args=())
    def fwd(x: Tensor, temperature: float = 1.0) -> Tensor:
        args = (temperature,) if extra else ()
        return function.forward(_Ctx(), x, *args)

    @triton_op(f"fla::{name}_backward", mutates_args=())
    def bwd(dy: Tensor, x: Tensor, temperature: float) -> Tensor:
        out = function.backward(_Ctx((x,), temperature=temperature), dy)
        return out[0] if isinstance(out, tuple) else out

    def setup(ctx, inputs, output):
        ctx.temperature = inputs[1]
        ctx.save_for_backward(inputs[0])

    def formula(ctx, dy):
        (x,) = ctx.saved_tensors
        return bwd(dy, x, ctx.temperature), None

    fwd.register_autograd(formula, setup_context=setup)
    return fwd


# CHANGED: one signature (x, temperature) for the three ops; sigmoid and swish ignore temperature
sigmoid = _activation("sigmoid", SigmoidFunction)
swish = _activation("swish", SwishFunction)
logsigmoid = _activation("logsigmoid", LogSigmoidFunction, temperature=True)


# --- ops/utils: softmax, logsumexp, chunk_local_cumsum -----------------------------------------

@triton_op("fla::softmax", mutates_args=())
def softmax(x: Tensor) -> Tensor:
    return softmax_fwd(x.contiguous())  # CHANGED: .contiguous(): fla's callers hand dense rows


@triton_op("fla::softmax_backward", mutates_args=())
def softmax_backward(p: Tensor, dp: Tensor) -> Tensor:
    # CHANGED: .contiguous(): the kernel steps through dp's rows densely (fla's callers hand it
    # dense gradients; a sum()'s gradient arrives expanded)
    return softmax_bwd(p, dp.contiguous())


def _sm_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _sm_backward(ctx, dp):
    (p,) = ctx.saved_tensors
    return softmax_backward(p, dp)


softmax.register_autograd(_sm_backward, setup_context=_sm_setup)


@triton_op("fla::logsumexp", mutates_args=())
def logsumexp(x: Tensor, scale: Optional[float] = None) -> Tensor:
    return logsumexp_fwd(x.contiguous(), scale)  # CHANGED: .contiguous(): x.view(-1, D) needs dense rows


def _lse_setup(ctx, inputs, output):
    ctx.scale = inputs[1]
    ctx.save_for_backward(inputs[0], output)


def _lse_backward(ctx, dz):
    # ours: fla has no backward kernel for logsumexp; d/dx = scale * softmax(scale * x) * dz
    x, z = ctx.saved_tensors
    s = 1.0 if ctx.scale is None else ctx.scale
    return (x * s - z.unsqueeze(-1)).exp() * (dz.unsqueeze(-1) * s), None


logsumexp.register_autograd(_lse_backward, setup_context=_lse_setup)


@triton_op("fla::chunk_local_cumsum", mutates_args=())
def chunk_local_cumsum_op(g: Tensor, chunk_size: int, reverse: bool = False,
                          scale: Optional[float] = None) -> Tensor:
    return chunk_local_cumsum(g, chunk_size, reverse=reverse, scale=scale)


def _cs_setup(ctx, inputs, output):
    _, ctx.chunk_size, ctx.reverse, ctx.scale = inputs


def _cs_backward(ctx, do):
    # the gradient of an in-chunk cumsum is the in-chunk cumsum the other way (fla's chunked ops'
    # backward: chunk_local_cumsum(dg, chunk_size, reverse=True))
    return chunk_local_cumsum_op(do, ctx.chunk_size, not ctx.reverse, ctx.scale), None, None, None


chunk_local_cumsum_op.register_autograd(_cs_backward, setup_context=_cs_setup)


# --- ops/simple_gla/chunk.py: ChunkSimpleGLAFunction (chunked simple gated linear attention) ---
# o_t = scale * q_t S_t, S_t = exp(g_t) S_{t-1} + k_t^T v_t (per head; S_0 = initial_state),
# [B, T, H, K] / [B, T, H, V] inputs, g [B, T, H] log decays; ht = S_T

@triton_op("fla::chunk_simple_gla", mutates_args=())
def chunk_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Tensor, scale: float,
                     chunk_size: int = 64) -> tuple[Tensor, Tensor, Tensor]:
    ctx = _Ctx()
    o, ht = ChunkSimpleGLAFunction.forward(ctx, q, k, v, g, None, scale, initial_state, True, False, None,
                                           None, chunk_size)
    g_cum = ctx.saved_tensors[3]
    return o, ht, g_cum  # CHANGED: the in-chunk cumsum of g is an output (saved for the backward op)


@triton_op("fla::chunk_simple_gla_backward", mutates_args=())
def chunk_simple_gla_bwd(do: Tensor, dht: Tensor, q: Tensor, k: Tensor, v: Tensor, g_cum: Tensor,
                         initial_state: Tensor, scale: float, chunk_size: int
                         ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    # CHANGED: what ChunkSimpleGLAFunction.forward kept on ctx, rebuilt for the backward op
    ctx = _Ctx((q, k, v, g_cum, None, initial_state, None), chunk_size=chunk_size, scale=scale,
               cu_seqlens=None, state_v_first=False)
    dq, dk, dv, dg, _, _, dh0, *_ = ChunkSimpleGLAFunction.backward(ctx, do, dht)
    return dq, dk, dv, dg, dh0


def _sgla_setup(ctx, inputs, output):
    q, k, v, g, h0, scale, chunk_size = inputs
    ctx.scale, ctx.chunk_size = scale, chunk_size
    ctx.save_for_backward(q, k, v, output[2], h0)
    ctx.mark_non_differentiable(output[2])  # CHANGED: a saved intermediate as an output


def _sgla_backward(ctx, do, dht, dg_cum):
    q, k, v, g_cum, h0 = ctx.saved_tensors
    if do is None:  # CHANGED: an unused output's gradient arrives as None; the kernels read zeros
        do = tensorplay.zeros((*v.shape[:-1], v.shape[-1]), dtype=v.dtype, device=v.device)
    if dht is None:
        dht = tensorplay.zeros_like(h0)
    dq, dk, dv, dg, dh0 = chunk_simple_gla_bwd(do, dht, q, k, v, g_cum, h0, ctx.scale, ctx.chunk_size)
    return dq, dk, dv, dg, dh0, None, None


chunk_simple_gla.register_autograd(_sgla_backward, setup_context=_sgla_setup)
