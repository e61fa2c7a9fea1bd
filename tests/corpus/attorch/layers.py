"""attorch's autograd Functions, migrated from ``torch.autograd.Function`` to ``tensorplay.autograd.Function``.

Upstream: https://github.com/BobMcDear/attorch @ 67c2772baf33, attorch/{act_layers,glu_layer,
softmax_layers,rms_norm_layer,layer_norm_layer,p_loss_layers,
cross_entropy_loss_layer,nll_loss_layer}.py (MIT, see kernels.py / LICENSE).
Each ``*AutoGrad`` class is upstream's, body for body; what a torch user migrating has to do is:

* ``torch.`` becomes ``tensorplay.`` (not marked below: a mechanical rename);
* every raw launch ``kernel[grid](...)`` becomes ``wrap_triton(kernel)[grid](...)`` (marked): a raw
  launch on cpu tensors is refused (compiled Triton cannot run there), ``wrap_triton`` interprets it;
* ``@custom_fwd(device_type='cuda')`` / ``@custom_bwd`` (torch.amp) are dropped (marked): tensorplay
  has no autocast, and upstream's branch for autocast off is what runs;
* every other line that had to change carries ``# CHANGED: why``.

The methods' docstrings (argument lists) are left out here; read them upstream.

Unlike the Liger/Unsloth/FlagGems host code (``triton_op`` + ``register_autograd``), these are the
library's own ``autograd.Function``s: the kernels launch from ``forward``/``backward`` directly, the
saved tensors are decided by ``input.requires_grad`` inside ``forward`` (as torch keeps it there),
and the ``nn.Module`` classes around them are left out (tensorplay has no ``nn``).
"""
# ruff: noqa  -- host code kept as upstream wrote it, apart from the CHANGED lines

from __future__ import annotations

from random import randint
from typing import Any, Optional, Tuple

import tensorplay
from tensorplay import Tensor
from tensorplay.library import wrap_triton
from triton import cdiv

from .act_kernels import act_func_backward_kernel, act_func_forward_kernel
from .cross_entropy_loss_kernels import cross_entropy_loss_backward_kernel, \
    cross_entropy_loss_forward_kernel
from .glu_kernels import glu_backward_kernel, glu_forward_kernel
from .layer_norm_kernels import layer_norm_backward_kernel, layer_norm_forward_kernel
from .nll_loss_kernels import nll_loss_backward_kernel, nll_loss_forward_kernel, \
    BLOCK_SIZE_BATCH_heuristic as NLL_BLOCK_SIZE_BATCH_heuristic  # CHANGED: renamed (softmax's is imported too)
from .p_loss_kernels import p_loss_backward_kernel, p_loss_forward_kernel
from .rms_norm_kernels import rms_norm_backward_kernel, rms_norm_forward_kernel
from .softmax_kernels import BLOCK_SIZE_BATCH_heuristic, softmax_backward_kernel, softmax_forward_kernel
from .utils import get_output_dtype

Context = Any  # CHANGED: attorch/types.py's `Context = Any` (its Device alias names torch.device)

# CHANGED (ours): the pointer parameters whose strides these kernels take, for
# wrap_triton(kernel, strided=...): tensorplay refuses a non-contiguous tensor for any other
# pointer (Triton sees only its base pointer); torch hands every one over unchecked.
_SOFTMAX_FWD_STRIDED = ("input_pointer", "output_pointer")
_SOFTMAX_BWD_STRIDED = ("output_grad_pointer", "output_pointer", "input_grad_pointer")
_NORM_FWD_STRIDED = ("input_pointer", "output_pointer")
_NORM_BWD_STRIDED = ("output_grad_pointer", "input_pointer", "input_grad_pointer", "weight_grad_pointer")
_LN_BWD_STRIDED = _NORM_BWD_STRIDED + ("bias_grad_pointer",)
_CE_FWD_STRIDED = ("input_pointer",)
_CE_BWD_STRIDED = ("input_pointer", "input_grad_pointer")
_NLL_FWD_STRIDED = ("input_pointer", "target_pointer", "output_pointer")
_NLL_BWD_STRIDED = ("output_grad_pointer", "target_pointer", "input_grad_pointer")


# --- attorch/act_layers.py:20-117 ---------------------------------------------------------------

class ActFuncAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for activation functions.
    """
    @staticmethod
    # CHANGED: @custom_fwd(device_type='cuda') dropped (no autocast)
    def forward(
        ctx: Context,
        input: Tensor,
        act_func: str,
        drop_p: float,
        training: bool,
        ) -> Tensor:
        param = None
        if '_' in act_func:
            comps = act_func.split('_')
            act_func = '_'.join(comps[:-1])
            param = float(comps[-1])

        ctx.param = param
        ctx.act_func = act_func
        ctx.drop_p = drop_p
        ctx.dropout = drop_p > 0 and training
        seed = randint(0, 65535) if ctx.dropout else 0
        ctx.seed = seed

        if input.requires_grad:
            ctx.save_for_backward(input)

        flattened_input = input.flatten()
        size = len(flattened_input)
        output = tensorplay.empty_like(flattened_input)

        # Launches 1D grid where each program operates over
        # BLOCK_SIZE elements.
        grid = lambda META: (cdiv(size, META['BLOCK_SIZE']),)
        wrap_triton(act_func_forward_kernel)[grid](flattened_input, output, size,  # CHANGED: wrap_triton
                                                   drop_p, seed, param,
                                                   act_func, ctx.dropout)

        return output.view_as(input)

    @staticmethod
    # CHANGED: @custom_bwd(device_type='cuda') dropped (no autocast)
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        (input,) = ctx.saved_tensors
        flattened_input = input.flatten()
        output_grad = output_grad.flatten()

        size = len(flattened_input)
        input_grad = tensorplay.empty_like(flattened_input)

        # Launches 1D grid where each program operates over
        # BLOCK_SIZE elements.
        grid = lambda META: (cdiv(size, META['BLOCK_SIZE']),)
        wrap_triton(act_func_backward_kernel)[grid](output_grad, flattened_input, input_grad,  # CHANGED: wrap_triton
                                                    size, ctx.drop_p, ctx.seed, ctx.param,
                                                    ctx.act_func, ctx.dropout)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad.view_as(input), None, None, None


# --- attorch/glu_layer.py:19-111 ----------------------------------------------------------------

class GLUAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for gated linear unit.
    """
    @staticmethod
    # CHANGED: @custom_fwd(device_type='cuda') dropped (no autocast)
    def forward(
        ctx: Context,
        input: Tensor,
        dim: int,
        act_func: str,
        ) -> Tensor:
        param = None
        if '_' in act_func:
            comps = act_func.split('_')
            act_func = '_'.join(comps[:-1])
            param = float(comps[-1])

        input1, input2 = input.chunk(2, dim=dim)
        input1 = input1.contiguous()
        input2 = input2.contiguous()

        requires_grad = input.requires_grad
        size = input1.numel()
        output = tensorplay.empty_like(input1)

        ctx.param = param
        ctx.act_func = act_func
        ctx.dim = dim
        ctx.size = size
        if requires_grad:
            ctx.save_for_backward(input1, input2)

        # Launches 1D grid where each program operates over
        # BLOCK_SIZE elements.
        grid = lambda META: (cdiv(size, META['BLOCK_SIZE']),)
        wrap_triton(glu_forward_kernel)[grid](input1, input2, output, size, param, act_func)  # CHANGED: wrap_triton

        return output

    @staticmethod
    # CHANGED: @custom_bwd(device_type='cuda') dropped (no autocast)
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        (input1, input2) = ctx.saved_tensors
        input1_grad = tensorplay.empty_like(input1)
        input2_grad = tensorplay.empty_like(input2)

        # Launches 1D grid where each program operates over
        # BLOCK_SIZE elements.
        grid = lambda META: (cdiv(ctx.size, META['BLOCK_SIZE']),)
        wrap_triton(glu_backward_kernel)[grid](output_grad, input1, input2,  # CHANGED: wrap_triton
                                               input1_grad, input2_grad,
                                               ctx.size, ctx.param, ctx.act_func)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return tensorplay.concat([input1_grad, input2_grad], dim=ctx.dim), None, None


# --- attorch/softmax_layers.py:18-94 ------------------------------------------------------------

class SoftmaxAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for softmax and related functions.
    """
    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        neg: bool,
        log: bool,
        ) -> Tensor:
        flattened_input = input.unsqueeze(0) if input.ndim == 1 else input
        flattened_input = flattened_input.flatten(0, -2)
        batch_dim, feat_dim = flattened_input.shape

        output_dtype = get_output_dtype(input.dtype, autocast='fp32')
        output = tensorplay.empty_like(flattened_input, dtype=output_dtype)

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(batch_dim, META['BLOCK_SIZE_BATCH']),)
        wrap_triton(softmax_forward_kernel, strided=_SOFTMAX_FWD_STRIDED)[grid](flattened_input, output, batch_dim, feat_dim,  # CHANGED: wrap_triton, strided (see top)
                                                  *flattened_input.stride(), *output.stride(),
                                                  neg=neg, log=log)

        ctx.neg = neg
        ctx.log = log
        if input.requires_grad:
            ctx.save_for_backward(output)

        return output.view_as(input)

    @staticmethod
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        (output,) = ctx.saved_tensors
        flattened_output_grad = output_grad.view_as(output)

        batch_dim, feat_dim = output.shape
        input_grad = tensorplay.empty_like(output)

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(batch_dim, META['BLOCK_SIZE_BATCH']),)
        wrap_triton(softmax_backward_kernel, strided=_SOFTMAX_BWD_STRIDED)[grid](flattened_output_grad, output, input_grad,  # CHANGED: wrap_triton, strided (see top)
                                                   batch_dim, feat_dim,
                                                   *flattened_output_grad.stride(),
                                                   *output.stride(), *input_grad.stride(),
                                                   neg=ctx.neg, log=ctx.log)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad.view_as(output_grad), None, None


# --- attorch/rms_norm_layer.py:19-134 -----------------------------------------------------------

class RMSNormAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for root mean square normalization.
    """
    @staticmethod
    # CHANGED: @custom_fwd(device_type='cuda') dropped (no autocast)
    def forward(
        ctx: Context,
        input: Tensor,
        weight: Optional[Tensor] = None,
        eps: Optional[float] = None,
        ) -> Tensor:
        flattened_input = input.unsqueeze(0) if input.ndim == 1 else input
        flattened_input = flattened_input.flatten(0, -2)
        batch_dim, feat_dim = flattened_input.shape
        eps = tensorplay.finfo(input.dtype).eps if eps is None else eps

        output = tensorplay.empty_like(flattened_input)

        scale_by_weight = weight is not None
        requires_grad = (input.requires_grad or
                         (scale_by_weight and weight.requires_grad))

        if requires_grad:
            inv_rms = tensorplay.empty(batch_dim,
                                       device=input.device,
                                       dtype=tensorplay.float32)

        else:
            inv_rms = None

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(batch_dim, META['BLOCK_SIZE_BATCH']),)
        wrap_triton(rms_norm_forward_kernel, strided=_NORM_FWD_STRIDED)[grid](flattened_input, weight,  # CHANGED: wrap_triton, strided (see top)
                                                   inv_rms, output,
                                                   batch_dim, feat_dim,
                                                   *flattened_input.stride(), *output.stride(),
                                                   eps,
                                                   scale_by_weight=scale_by_weight,
                                                   save_stats=requires_grad)

        ctx.scale_by_weight = scale_by_weight
        if requires_grad:
            ctx.save_for_backward(flattened_input, inv_rms, weight)

        return output.view_as(input)

    @staticmethod
    # CHANGED: @custom_bwd(device_type='cuda') dropped (no autocast)
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        scale_by_weight = ctx.scale_by_weight
        (flattened_input, inv_rms, weight) = ctx.saved_tensors
        flattened_output_grad = output_grad.view_as(flattened_input)

        batch_dim, feat_dim = flattened_output_grad.shape
        input_grad = tensorplay.empty_like(flattened_output_grad)

        if scale_by_weight:
            BLOCK_SIZE_BATCH = BLOCK_SIZE_BATCH_heuristic({'batch_dim': batch_dim,
                                                           'feat_dim': feat_dim})
            out_batch_dim = cdiv(batch_dim, BLOCK_SIZE_BATCH)

            weight_grad = tensorplay.empty((out_batch_dim, feat_dim),
                                           device=flattened_input.device)

        else:
            weight_grad = None

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(batch_dim, META['BLOCK_SIZE_BATCH']),)
        wrap_triton(rms_norm_backward_kernel, strided=_NORM_BWD_STRIDED)[grid](flattened_output_grad, flattened_input,  # CHANGED: wrap_triton, strided (see top)
                                                    inv_rms, weight,
                                                    input_grad, weight_grad,
                                                    batch_dim, feat_dim,
                                                    *flattened_output_grad.stride(),
                                                    *flattened_input.stride(),
                                                    *input_grad.stride(),
                                                    *weight_grad.stride() if scale_by_weight else (1, 1),
                                                    scale_by_weight=scale_by_weight)

        if scale_by_weight:
            weight_grad = weight_grad.sum(dim=0)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad.view_as(output_grad), weight_grad, None


# --- attorch/layer_norm_layer.py:19-157 ---------------------------------------------------------

class LayerNormAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for layer normalization.
    """
    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        weight: Optional[Tensor] = None,
        bias: Optional[Tensor] = None,
        eps: float = 1e-5,
        autocast_to_fp32: bool = True,
        ) -> Tensor:
        flattened_input = input.unsqueeze(0) if input.ndim == 1 else input
        flattened_input = flattened_input.flatten(0, -2)
        batch_dim, feat_dim = flattened_input.shape

        output_dtype = get_output_dtype(input.dtype,
                                        autocast='fp32' if autocast_to_fp32 else None)
        output = tensorplay.empty_like(flattened_input, dtype=output_dtype)

        scale_by_weight = weight is not None
        add_bias = scale_by_weight and bias is not None
        requires_grad = (input.requires_grad or
                         (scale_by_weight and weight.requires_grad) or
                         (add_bias and bias.requires_grad))

        if requires_grad:
            mean = tensorplay.empty(batch_dim,
                                    device=input.device,
                                    dtype=tensorplay.float32)
            inv_std = tensorplay.empty(batch_dim,
                                       device=input.device,
                                       dtype=tensorplay.float32)

        else:
            mean = inv_std = None

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(batch_dim, META['BLOCK_SIZE_BATCH']),)
        wrap_triton(layer_norm_forward_kernel, strided=_NORM_FWD_STRIDED)[grid](flattened_input, weight, bias,  # CHANGED: wrap_triton, strided (see top)
                                                     mean, inv_std, output,
                                                     batch_dim, feat_dim,
                                                     *flattened_input.stride(), *output.stride(),
                                                     eps,
                                                     scale_by_weight=scale_by_weight,
                                                     add_bias=add_bias,
                                                     save_stats=requires_grad)

        ctx.scale_by_weight = scale_by_weight
        ctx.add_bias = add_bias
        ctx.output_dtype = output_dtype
        if requires_grad:
            ctx.save_for_backward(flattened_input, mean, inv_std, weight)

        return output.view_as(input)

    @staticmethod
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        scale_by_weight, add_bias = ctx.scale_by_weight, ctx.add_bias
        (flattened_input, mean, inv_std, weight) = ctx.saved_tensors
        flattened_output_grad = output_grad.view_as(flattened_input)

        batch_dim, feat_dim = flattened_output_grad.shape
        input_grad = tensorplay.empty_like(flattened_output_grad,
                                           dtype=ctx.output_dtype)

        if scale_by_weight:
            BLOCK_SIZE_BATCH = BLOCK_SIZE_BATCH_heuristic({'batch_dim': batch_dim,
                                                           'feat_dim': feat_dim})
            out_batch_dim = cdiv(batch_dim, BLOCK_SIZE_BATCH)

            weight_grad = tensorplay.empty((out_batch_dim, feat_dim),
                                           device=flattened_input.device)
            if add_bias:
                bias_grad = tensorplay.empty((out_batch_dim, feat_dim),
                                             device=flattened_input.device)

            else:
                bias_grad = None

        else:
            weight_grad = bias_grad = None

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(batch_dim, META['BLOCK_SIZE_BATCH']),)
        wrap_triton(layer_norm_backward_kernel, strided=_LN_BWD_STRIDED)[grid](flattened_output_grad, flattened_input,  # CHANGED: wrap_triton, strided (see top)
                                                      mean, inv_std, weight,
                                                      input_grad, weight_grad, bias_grad,
                                                      batch_dim, feat_dim,
                                                      *flattened_output_grad.stride(),
                                                      *flattened_input.stride(),
                                                      *input_grad.stride(),
                                                      *weight_grad.stride() if scale_by_weight else (1, 1),
                                                      *bias_grad.stride() if scale_by_weight and add_bias else (1, 1),
                                                      scale_by_weight=scale_by_weight,
                                                      add_bias=add_bias)

        if scale_by_weight:
            weight_grad = weight_grad.sum(dim=0)
            if add_bias:
                bias_grad = bias_grad.sum(dim=0)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad.view_as(output_grad), weight_grad, bias_grad, None, None


# --- attorch/p_loss_layers.py:18-119 ------------------------------------------------------------

class PLossAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for p-losses.
    """
    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        target: Tensor,
        p_loss: int,
        reduction: str,
        param: float = 1.0,
        ) -> Tensor:
        assert input.shape == target.shape, \
            f'Input shape {input.shape} and target shape {target.shape} not equal'

        output_dtype = get_output_dtype(input.dtype, autocast='fp32')

        ctx.p_loss = p_loss
        ctx.reduction = reduction
        ctx.param = param
        ctx.output_dtype = output_dtype
        if input.requires_grad or target.requires_grad:
            ctx.save_for_backward(input, target)

        flattened_input = input.flatten()
        flattened_target = target.flatten()
        size = len(flattened_input)

        output = (tensorplay.empty_like(flattened_input, dtype=output_dtype) if reduction == 'none'
                  else tensorplay.empty(cdiv(size, 32), dtype=output_dtype, device=input.device))

        # Launches 1D grid where each program operates over
        # BLOCK_SIZE elements.
        grid = lambda META: (cdiv(size, META['BLOCK_SIZE']),)
        wrap_triton(p_loss_forward_kernel)[grid](flattened_input, flattened_target, output,  # CHANGED: wrap_triton
                                                 param, size, p_loss=p_loss, reduction=reduction)

        if reduction != 'none':
            BLOCK_SIZE = p_loss_forward_kernel.best_config.kwargs['BLOCK_SIZE']
            output = output[:cdiv(size, BLOCK_SIZE)].sum()

        else:
            output = output.view_as(input)

        return output

    @staticmethod
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        (input, target) = ctx.saved_tensors
        flattened_input = input.flatten()
        flattened_target = target.flatten()
        output_grad = output_grad.flatten()

        size = len(flattened_input)
        input_grad = tensorplay.empty_like(flattened_input, dtype=ctx.output_dtype)
        target_grad = tensorplay.empty_like(flattened_target, dtype=ctx.output_dtype)

        # Launches 1D grid where each program operates over
        # BLOCK_SIZE elements.
        grid = lambda META: (cdiv(size, META['BLOCK_SIZE']),)
        wrap_triton(p_loss_backward_kernel)[grid](output_grad, flattened_input, flattened_target,  # CHANGED: wrap_triton
                                                  input_grad, target_grad, ctx.param, size,
                                                  p_loss=ctx.p_loss, reduction=ctx.reduction)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad.view_as(input), target_grad.view_as(input), None, None, None


# --- attorch/cross_entropy_loss_layer.py:20-121 ------------------------------------------------

class CrossEntropyLossAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for cross entropy loss.
    """
    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        target: Tensor,
        weight: Optional[Tensor] = None,
        ) -> Tensor:
        assert input.ndim == 2, f'Inputs of rank other than 2 not valid'
        assert len(input) == len(target), \
            f'Incompatible input shape ({input.shape}) and target shape ({target.shape})'
        assert weight is None or len(weight) == input.shape[1], \
            f'Dimensionality of weight vector ({len(weight)}) and input features ({input.shape[1]}) not equal'

        batch_dim, feat_dim = input.shape
        BLOCK_SIZE_BATCH = BLOCK_SIZE_BATCH_heuristic({'batch_dim': batch_dim,
                                                       'feat_dim': feat_dim})
        out_batch_dim = batch_dim // BLOCK_SIZE_BATCH
        weighted = weight is not None

        output_dtype = get_output_dtype(input.dtype, autocast='fp32')
        output = tensorplay.empty(out_batch_dim,
                                  dtype=output_dtype,
                                  device=input.device)

        if weighted:
            sum_weights = tensorplay.empty_like(output, dtype=tensorplay.float32)

        else:
            sum_weights = None

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(len(input), META['BLOCK_SIZE_BATCH']),)
        wrap_triton(cross_entropy_loss_forward_kernel, strided=_CE_FWD_STRIDED)[grid](  # CHANGED: wrap_triton, strided (see top)
            input, target, weight, sum_weights, output,
            batch_dim, feat_dim,
            *input.stride(),
            weighted=weighted)
        output = output.sum()

        if weighted:
            sum_weights = sum_weights.sum()
            output /= sum_weights

        ctx.sum_weights = sum_weights
        ctx.weight = weight
        ctx.output_dtype = output_dtype
        if input.requires_grad:
            ctx.save_for_backward(input, target)

        return output

    @staticmethod
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        (input, target) = ctx.saved_tensors
        batch_dim, feat_dim = input.shape
        input_grad = tensorplay.empty_like(input, dtype=ctx.output_dtype)

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(len(input), META['BLOCK_SIZE_BATCH']),)
        wrap_triton(cross_entropy_loss_backward_kernel, strided=_CE_BWD_STRIDED)[grid](  # CHANGED: wrap_triton, strided (see top)
            output_grad, target, input, ctx.weight,
            ctx.sum_weights, input_grad,
            batch_dim, feat_dim,
            *input.stride(),
            *input_grad.stride(),
            weighted=ctx.weight is not None)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad, None, None


# --- attorch/nll_loss_layer.py:19-142 ----------------------------------------------------------

class NLLLossAutoGrad(tensorplay.autograd.Function):
    """
    Autodiff for negative log likelihood loss.
    """
    @staticmethod
    def forward(
        ctx: Context,
        input: Tensor,
        target: Tensor,
        reduction: str,
        weight: Optional[Tensor] = None,
        ) -> Tensor:
        assert len(input) == len(target) and input.shape[2:] == target.shape[1:], \
            f'Incompatible input shape ({input.shape}) and target shape ({target.shape})'
        assert weight is None or len(weight) == input.shape[1], \
            f'Dimensionality of weight vector ({len(weight)}) and input features ({input.shape[1]}) not equal'

        flattened_input = input.unsqueeze(-1) if input.ndim == 2 else input
        flattened_input = flattened_input.flatten(2, -1)

        flattened_target = target.unsqueeze(-1) if target.ndim == 1 else target
        flattened_target = flattened_target.flatten(1, -1)

        batch_dim, _, spatial_dim = flattened_input.shape
        BLOCK_SIZE_BATCH = NLL_BLOCK_SIZE_BATCH_heuristic({'batch_dim': batch_dim,  # CHANGED: renamed, see imports
                                                           'spatial_dim': spatial_dim})
        out_batch_dim = batch_dim // BLOCK_SIZE_BATCH

        output_dtype = get_output_dtype(input.dtype, autocast='fp32')
        sum_weights = (tensorplay.empty(out_batch_dim, dtype=tensorplay.float32, device=input.device)
                       if reduction == 'mean' else None)
        output = (tensorplay.empty_like(flattened_target, dtype=output_dtype)
                  if reduction == 'none' else
                  tensorplay.empty(out_batch_dim, dtype=output_dtype, device=input.device))

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(len(input), META['BLOCK_SIZE_BATCH']),)
        wrap_triton(nll_loss_forward_kernel, strided=_NLL_FWD_STRIDED)[grid](  # CHANGED: wrap_triton, strided (see top)
            input, target, weight, sum_weights, output,
            batch_dim, spatial_dim,
            *flattened_input.stride(),
            *flattened_target.stride(),
            *output.stride() if reduction == 'none' else (1, 1),
            reduction=reduction,
            weighted=weight is not None)

        if reduction != 'none':
            output = output.sum()

            if reduction == 'mean' and weight is not None:
                sum_weights = sum_weights.sum()
                output /= sum_weights

        else:
            output = output.view_as(target)

        ctx.sum_weights = sum_weights
        ctx.reduction = reduction
        ctx.weight = weight
        ctx.output_dtype = output_dtype
        if input.requires_grad:
            ctx.save_for_backward(input, flattened_target)

        return output

    @staticmethod
    def backward(
        ctx: Context,
        output_grad: Tensor,
        ) -> Tuple[Optional[Tensor], ...]:
        (input, flattened_target) = ctx.saved_tensors
        flattened_input = input.view(len(flattened_target), -1,
                                     flattened_target.shape[-1])
        output_grad = (output_grad.view_as(flattened_target)
                       if output_grad.ndim > 0 else output_grad)

        batch_dim, _, spatial_dim = flattened_input.shape
        input_grad = tensorplay.zeros_like(flattened_input, dtype=ctx.output_dtype)

        # Launches 1D grid where each program operates over BLOCK_SIZE_BATCH rows.
        grid = lambda META: (cdiv(len(input), META['BLOCK_SIZE_BATCH']),)
        wrap_triton(nll_loss_backward_kernel, strided=_NLL_BWD_STRIDED)[grid](  # CHANGED: wrap_triton, strided (see top)
            output_grad, flattened_target, ctx.weight,
            ctx.sum_weights, input_grad,
            batch_dim, spatial_dim,
            *output_grad.stride() if ctx.reduction == 'none' else (1, 1),
            *flattened_target.stride(),
            *input_grad.stride(),
            reduction=ctx.reduction,
            weighted=ctx.weight is not None)

        # Pads output with None because a gradient is necessary for
        # all input arguments.
        return input_grad.view_as(input), None, None, None
