"""FlagGems' ops on tensorplay.library: the released host functions, our op wrappers.

Upstream: https://github.com/FlagOpen/FlagGems, released as PyPI flag-gems==5.0.2 (Apache-2.0, see
kernels.py / LICENSE). Nothing of its code is in this file. FlagGems registers aten-style host
functions (``softmax(self, dim, half_to_float)`` / ``softmax_backward(grad_output, output, dim,
input_dtype)``, ``rms_norm_forward`` / ``rms_norm_backward`` ...) into torch's dispatcher, where
torch's own autograd formulas call the backward: those functions are read from the wheel at import
and run as released with ``torch`` bound to ``tensorplay`` and the kernels passed through
``wrap_triton`` (``corpus._upstream.host``: ``HOST_BINDINGS``; ``torch_device_fn``:
``HOST_SUPPLIED``). :data:`HOST` names them; they are reached as ``gems.<name>`` (``softmax``,
``layer_norm`` ... are also the names of this file's ops).

Ours (the migration a torch user makes): each forward is paired with its backward through
``triton_op`` + ``register_autograd`` (the wiring torch's derivatives.yaml did). Other changes:
``# CHANGED: why``.
"""
# ruff: noqa  -- the op wrappers keep upstream's names and layout

from __future__ import annotations

import math
import types

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

from .._upstream import host
from .kernels import DIST

# the released host functions this file calls: {module in the wheel: [names]}
HOST = {
    "flag_gems/ops/softmax.py": ["softmax", "softmax_backward"],
    "flag_gems/ops/log_softmax.py": ["log_softmax", "log_softmax_backward"],
    "flag_gems/ops/rms_norm.py": ["rms_norm_forward", "rms_norm_backward"],
    "flag_gems/ops/layernorm.py": ["layer_norm", "layer_norm_backward"],
    "flag_gems/ops/groupnorm.py": ["group_norm", "group_norm_backward"],
}

# the host functions that stay ours: none
OWN_HOST: dict[str, str] = {}

gems = types.SimpleNamespace(**host(DIST, HOST, framework=tensorplay, wrap=wrap_triton))


# --- ops/softmax.py ----------------------------------------------------------------------------


@triton_op("flaggems::softmax", mutates_args=())
def softmax(x: Tensor, dim: int) -> Tensor:
    return gems.softmax(x, dim)


@triton_op("flaggems::softmax_backward", mutates_args=())
def softmax_bwd(grad_output: Tensor, output: Tensor, dim: int) -> Tensor:
    return gems.softmax_backward(grad_output, output.contiguous(), dim, output.dtype)


def _save_out_dim(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def _softmax_backward(ctx, grad_output):
    (out,) = ctx.saved_tensors
    return softmax_bwd(grad_output, out, ctx.dim), None


softmax.register_autograd(_softmax_backward, setup_context=_save_out_dim)


# --- ops/log_softmax.py ------------------------------------------------------------------------


@triton_op("flaggems::log_softmax", mutates_args=())
def log_softmax(x: Tensor, dim: int) -> Tensor:
    return gems.log_softmax(x, dim)


@triton_op("flaggems::log_softmax_backward", mutates_args=())
def log_softmax_bwd(grad_output: Tensor, output: Tensor, dim: int) -> Tensor:
    return gems.log_softmax_backward(grad_output, output.contiguous(), dim, output.dtype)


def _log_softmax_backward(ctx, grad_output):
    (out,) = ctx.saved_tensors
    return log_softmax_bwd(grad_output, out, ctx.dim), None


log_softmax.register_autograd(_log_softmax_backward, setup_context=_save_out_dim)


# --- ops/rms_norm.py: RmsNorm ------------------------------------------------------------------

@triton_op("flaggems::rms_norm", mutates_args=())
def rms_norm(x: Tensor, normalized_shape: list[int], weight: Tensor, eps: float = 1e-5) -> tuple[Tensor, Tensor]:
    y, inv_rms = gems.rms_norm_forward(x, normalized_shape, weight, eps)
    return y, inv_rms  # CHANGED: inv_rms is an output (saved for the backward op; no ctx here)


@triton_op("flaggems::rms_norm_backward", mutates_args=())
def rms_norm_bwd(dy: Tensor, x: Tensor, inv_rms: Tensor, weight: Tensor, normalized_shape: list[int], eps: float) -> tuple[Tensor, Tensor]:
    return gems.rms_norm_backward(dy, x, inv_rms, normalized_shape, weight, eps)


def _rms_setup(ctx, inputs, output):
    x, normalized_shape, weight, eps = inputs
    ctx.normalized_shape, ctx.eps = normalized_shape, eps
    ctx.save_for_backward(x, output[1], weight)
    # CHANGED: the Function returned only y and kept inv_rms on ctx; as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[1])


def _rms_backward(ctx, dy, dinv_rms):
    x, inv_rms, weight = ctx.saved_tensors
    dx, dw = rms_norm_bwd(dy, x, inv_rms, weight, ctx.normalized_shape, ctx.eps)
    return dx, None, dw, None


rms_norm.register_autograd(_rms_backward, setup_context=_rms_setup)


# --- ops/layernorm.py --------------------------------------------------------------------------


@triton_op("flaggems::layer_norm", mutates_args=())
def layer_norm(input: Tensor, normalized_shape: list[int], weight: Tensor, bias: Tensor, eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    return gems.layer_norm(input, normalized_shape, weight, bias, eps)


@triton_op("flaggems::layer_norm_backward", mutates_args=())
def layer_norm_bwd(grad_out: Tensor, input: Tensor, normalized_shape: list[int], mean: Tensor, rstd: Tensor, weight: Tensor, bias: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    # CHANGED: torch's native_layer_norm_backward hands FlagGems a (M, N) input; flatten here
    input = input.reshape(-1, math.prod(normalized_shape))
    dx, dw, db = gems.layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, [True, True, True])
    return dx.view(*grad_out.shape), dw, db


def _ln_setup(ctx, inputs, output):
    input, normalized_shape, weight, bias, eps = inputs
    ctx.normalized_shape = normalized_shape
    ctx.save_for_backward(input, output[1], output[2], weight, bias)
    # CHANGED: torch's formula for native_layer_norm takes only the output's gradient; mean, rstd are declared non-differentiable
    ctx.mark_non_differentiable(output[1], output[2])


def _ln_backward(ctx, grad_out, dmean, drstd):
    input, mean, rstd, weight, bias = ctx.saved_tensors
    dx, dw, db = layer_norm_bwd(grad_out, input, ctx.normalized_shape, mean, rstd, weight, bias)
    return dx, None, dw, db, None


layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


# --- ops/groupnorm.py --------------------------------------------------------------------------


@triton_op("flaggems::group_norm", mutates_args=())
def group_norm(input: Tensor, weight: Tensor, bias: Tensor, group: int, eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    N, C = input.shape[0], input.shape[1]  # CHANGED: torch's native_group_norm passes N, C, HxW
    HxW = input.numel() // (N * C)
    return gems.group_norm(input, weight, bias, N, C, HxW, group, eps)


@triton_op("flaggems::group_norm_backward", mutates_args=())
def group_norm_bwd(grad_out: Tensor, input: Tensor, mean: Tensor, rstd: Tensor, weight: Tensor, group: int) -> tuple[Tensor, Tensor, Tensor]:
    N, C = input.shape[0], input.shape[1]  # CHANGED: torch's native_group_norm_backward passes N, C, HxW
    HxW = input.numel() // (N * C)
    return gems.group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, [True, True, True])


def _gn_setup(ctx, inputs, output):
    input, weight, bias, group, eps = inputs
    ctx.group = group
    ctx.save_for_backward(input, output[1], output[2], weight)
    # CHANGED: torch's formula for native_group_norm takes only the output's gradient; mean, rstd are declared non-differentiable
    ctx.mark_non_differentiable(output[1], output[2])


def _gn_backward(ctx, grad_out, dmean, drstd):
    input, mean, rstd, weight = ctx.saved_tensors
    dx, dw, db = group_norm_bwd(grad_out, input, mean, rstd, weight, ctx.group)
    return dx, dw, db, None, None


group_norm.register_autograd(_gn_backward, setup_context=_gn_setup)
