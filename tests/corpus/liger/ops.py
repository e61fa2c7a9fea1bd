"""Liger-Kernel's ops on tensorplay.library: the released host functions, our op wrappers.

Upstream: https://github.com/linkedin/Liger-Kernel, released as PyPI liger-kernel==0.8.5 (BSD
2-Clause, see kernels.py / LICENSE). Nothing of its code is in this file: the host functions
(``rms_norm_forward``, ``swiglu_backward``, ...: shapes, allocations, block sizes, the launches)
are 0.8.5's, read from the wheel at import and run as released with ``torch`` bound to
``tensorplay`` and the kernels passed through ``wrap_triton`` (``corpus._upstream.host``:
``HOST_BINDINGS``; what is replaced for tensorplay: ``HOST_OVERRIDES``). :data:`HOST` names them.

Ours (the migration a torch user makes): each ``LigerXFunction(torch.autograd.Function)`` becomes
a ``triton_op`` for the forward, one for the backward, and ``register_autograd``; values the
Function kept on ``ctx`` that are not tensors or op arguments (``BLOCK_SIZE``, ``num_warps``) are
recomputed in the backward; ``@ensure_contiguous`` becomes ``.contiguous()`` calls; where a
released host function writes into its arguments (in-place gradients, rotations), the op passes
it a copy (an op may not mutate its inputs). Every such line carries ``# CHANGED: why``.

Still ours (:data:`OWN_HOST`): the host functions whose released text cannot run here, each
with why.
"""
# ruff: noqa  -- the op wrappers keep the Functions' names and layout

from __future__ import annotations

from typing import Optional

import triton

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

from .._host import sm_count
from .._upstream import host
from .kernels import DIST, _dyt_bwd_kernel

# the released host functions this file calls: {module in the wheel: [names]}
HOST = {
    "liger_kernel/ops/utils.py": ["calculate_settings"],
    "liger_kernel/ops/rms_norm.py": ["_str_to_casting_mode", "rms_norm_forward", "rms_norm_backward"],
    "liger_kernel/ops/layer_norm.py": ["layer_norm_forward", "layer_norm_backward"],
    "liger_kernel/ops/swiglu.py": ["swiglu_forward", "swiglu_backward"],
    "liger_kernel/ops/geglu.py": ["geglu_forward", "geglu_backward"],
    "liger_kernel/ops/relu_squared.py": ["relu_squared_forward", "relu_squared_backward"],
    "liger_kernel/ops/softmax.py": ["_softmax_forward", "_softmax_backward"],
    "liger_kernel/ops/rope.py": ["rope_forward", "rope_backward"],
    "liger_kernel/ops/kl_div.py": ["kldiv_forward_triton", "kldiv_backward_triton"],
    "liger_kernel/ops/jsd.py": ["jsd_forward", "jsd_backward"],
    "liger_kernel/ops/tvd.py": ["tv_distance_forward_triton", "tvd_backward_triton"],
    "liger_kernel/ops/dyt.py": ["liger_dyt_fwd"],
    "liger_kernel/ops/cross_entropy.py": ["cross_entropy_forward", "cross_entropy_backward"],
    "liger_kernel/ops/sparsemax.py": ["_sparsemax_forward", "_sparsemax_backward"],
    "liger_kernel/ops/poly_norm.py": ["poly_norm_forward", "poly_norm_backward"],
    "liger_kernel/ops/fused_add_rms_norm.py": ["fused_add_rms_norm_forward", "fused_add_rms_norm_backward"],
    "liger_kernel/ops/group_norm.py": ["group_norm_forward", "group_norm_backward"],
    "liger_kernel/ops/qwen2vl_mrope.py": ["qwen2vl_mrope_forward", "qwen2vl_mrope_backward"],
}

# the host functions that stay ours: {name: why}
OWN_HOST = {
    "liger_dyt_bwd": "0.8.5's sizes its grid by infer_device() and binds NUM_SMS only on "
                     "cuda/xpu/npu: UnboundLocalError elsewhere (the cpu interpreter; a finding "
                     "about Liger, not tensorplay); ours asks _host.sm_count, 1 off cuda",
}

globals().update(host(DIST, HOST, framework=tensorplay, wrap=wrap_triton))


# --- rms_norm.py -------------------------------------------------------------------------------


@triton_op("liger::rms_norm", mutates_args=())
def rms_norm(X: Tensor, W: Tensor, eps: float, offset: float = 0.0, casting_mode: str = "llama") -> tuple[Tensor, Tensor]:
    X = X.contiguous()  # CHANGED: @ensure_contiguous (a decorator for autograd.Function methods)
    Y, X, RSTD, BLOCK_SIZE, num_warps, casting_mode = rms_norm_forward(X, W, eps, offset, casting_mode, None)
    return Y, RSTD  # CHANGED: RSTD is an output (the op's backward needs it; ctx is not available)


@triton_op("liger::rms_norm_backward", mutates_args=())
def rms_norm_bwd(dY: Tensor, X: Tensor, W: Tensor, RSTD: Tensor, offset: float, casting_mode: str) -> tuple[Tensor, Tensor]:
    dY, X = dY.contiguous(), X.contiguous()  # CHANGED: @ensure_contiguous
    BLOCK_SIZE, num_warps = calculate_settings(X.shape[-1])  # CHANGED: was kept on ctx
    mode = _str_to_casting_mode[casting_mode]  # CHANGED: was kept on ctx
    # CHANGED: in_place=False: upstream writes dX into dY by default; an op may not mutate its inputs
    return rms_norm_backward(dY, X.view(-1, X.shape[-1]), W, RSTD, offset, mode, BLOCK_SIZE, num_warps, False, None)


def _rms_norm_setup(ctx, inputs, output):
    X, W, eps, offset, casting_mode = inputs
    ctx.offset, ctx.casting_mode = offset, casting_mode
    ctx.save_for_backward(X, W, output[1])
    # CHANGED: the Function returned only Y and kept RSTD on ctx; as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[1])


def _rms_norm_backward(ctx, dY, dRSTD):
    X, W, RSTD = ctx.saved_tensors
    dX, dW = rms_norm_bwd(dY, X, W, RSTD, ctx.offset, ctx.casting_mode)
    return dX, dW, None, None, None


rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


# --- layer_norm.py -----------------------------------------------------------------------------


@triton_op("liger::layer_norm", mutates_args=())
def layer_norm(X: Tensor, W: Tensor, B: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    X, W, B = X.contiguous(), W.contiguous(), B.contiguous()  # CHANGED: @ensure_contiguous
    Y, X, Mean, RSTD, BLOCK_SIZE, num_warps = layer_norm_forward(X, W, B, eps)
    return Y, Mean, RSTD  # CHANGED: Mean, RSTD are outputs (ctx is not available in an op)


@triton_op("liger::layer_norm_backward", mutates_args=())
def layer_norm_bwd(dY: Tensor, X: Tensor, W: Tensor, B: Tensor, Mean: Tensor, RSTD: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    dY, X = dY.contiguous(), X.contiguous()  # CHANGED: @ensure_contiguous
    return layer_norm_backward(dY, X.view(-1, X.shape[-1]), W, B, Mean, RSTD)


def _layer_norm_setup(ctx, inputs, output):
    X, W, B, eps = inputs
    ctx.save_for_backward(X, W, B, output[1], output[2])
    # CHANGED: the Function returned only Y and kept Mean, RSTD on ctx; as op outputs they are declared non-differentiable
    ctx.mark_non_differentiable(output[1], output[2])


def _layer_norm_backward(ctx, dY, dMean, dRSTD):
    X, W, B, Mean, RSTD = ctx.saved_tensors
    DX, DW, DB = layer_norm_bwd(dY, X, W, B, Mean, RSTD)
    return DX, DW, DB, None


layer_norm.register_autograd(_layer_norm_backward, setup_context=_layer_norm_setup)


# --- swiglu.py ---------------------------------------------------------------------------------


@triton_op("liger::swiglu", mutates_args=())
def swiglu(a: Tensor, b: Tensor) -> Tensor:
    a, b = a.contiguous(), b.contiguous()  # CHANGED: @ensure_contiguous
    a, b, c = swiglu_forward(a, b)
    return c


@triton_op("liger::swiglu_backward", mutates_args=())
def swiglu_bwd(a: Tensor, b: Tensor, dc: Tensor) -> tuple[Tensor, Tensor]:
    # CHANGED: upstream's kernel writes da, db over its saved a, b; an op may not mutate its inputs
    a, b, dc = a.contiguous().clone(), b.contiguous().clone(), dc.contiguous()
    return swiglu_backward(a.view(-1, a.shape[-1]), b.view(-1, b.shape[-1]), dc)


def _ab_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _swiglu_backward(ctx, dc):
    a, b = ctx.saved_tensors
    return swiglu_bwd(a, b, dc)


swiglu.register_autograd(_swiglu_backward, setup_context=_ab_setup)


# --- geglu.py ----------------------------------------------------------------------------------


@triton_op("liger::geglu", mutates_args=())
def geglu(a: Tensor, b: Tensor) -> Tensor:
    a, b = a.contiguous(), b.contiguous()  # CHANGED: @ensure_contiguous
    a, b, c = geglu_forward(a, b)
    return c


@triton_op("liger::geglu_backward", mutates_args=())
def geglu_bwd(a: Tensor, b: Tensor, dc: Tensor) -> tuple[Tensor, Tensor]:
    # CHANGED: upstream's kernel writes da, db over its saved a, b; an op may not mutate its inputs
    a, b, dc = a.contiguous().clone(), b.contiguous().clone(), dc.contiguous()
    return geglu_backward(a.view(-1, a.shape[-1]), b.view(-1, b.shape[-1]), dc)


def _geglu_backward(ctx, dc):
    a, b = ctx.saved_tensors
    return geglu_bwd(a, b, dc)


geglu.register_autograd(_geglu_backward, setup_context=_ab_setup)


# --- relu_squared.py ---------------------------------------------------------------------------


@triton_op("liger::relu_squared", mutates_args=())
def relu_squared(X: Tensor) -> Tensor:
    return relu_squared_forward(X.contiguous())  # CHANGED: @ensure_contiguous


@triton_op("liger::relu_squared_backward", mutates_args=())
def relu_squared_bwd(X: Tensor, dY: Tensor) -> Tensor:
    return relu_squared_backward(X.contiguous(), dY.contiguous())  # CHANGED: @ensure_contiguous


def _relu_squared_backward(ctx, dY):
    (X,) = ctx.saved_tensors
    return relu_squared_bwd(X, dY)


relu_squared.register_autograd(_relu_squared_backward, setup_context=_ab_setup)


# --- softmax.py --------------------------------------------------------------------------------


@triton_op("liger::softmax", mutates_args=())
def softmax(input_: Tensor) -> Tensor:
    y, BLOCK_SIZE, num_warps, multi_block_launch = _softmax_forward(input_.contiguous())
    return y


@triton_op("liger::softmax_backward", mutates_args=())
def softmax_bwd(grad_output: Tensor, y: Tensor) -> Tensor:
    BLOCK_SIZE, num_warps = calculate_settings(y.shape[-1])  # CHANGED: was kept on ctx
    return _softmax_backward(grad_output, y, BLOCK_SIZE, num_warps, y.shape[-1] > BLOCK_SIZE)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward_formula(ctx, grad_output):
    (y,) = ctx.saved_tensors
    return softmax_bwd(grad_output, y)


softmax.register_autograd(_softmax_backward_formula, setup_context=_softmax_setup)


# --- rope.py -----------------------------------------------------------------------------------

def _copy_heads_major(t):
    return t.transpose(1, 2).clone().transpose(1, 2)



@triton_op("liger::rope", mutates_args=())
def rope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    # CHANGED: the kernel rotates q and k in place; an op may not mutate its inputs: a copy whose
    # transpose(1, 2) (what rope_forward launches on) is contiguous, so it copies nothing more
    q, k = _copy_heads_major(q), _copy_heads_major(k)
    q, k, cos, sin = rope_forward(q, k, cos, sin)
    return q, k


@triton_op("liger::rope_backward", mutates_args=())
def rope_bwd(dq: Tensor, dk: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    dq, dk = _copy_heads_major(dq), _copy_heads_major(dk)  # CHANGED: rotated in place, as above
    return rope_backward(dq, dk, cos.contiguous(), sin.contiguous())


def _rope_setup(ctx, inputs, output):
    q, k, cos, sin = inputs
    ctx.save_for_backward(cos, sin)


def _rope_backward(ctx, dq, dk):
    cos, sin = ctx.saved_tensors
    dq, dk = rope_bwd(dq, dk, cos, sin)
    return dq, dk, None, None


rope.register_autograd(_rope_backward, setup_context=_rope_setup)


# --- kl_div.py ---------------------------------------------------------------------------------


@triton_op("liger::kl_div", mutates_args=())
def kl_div(y_pred: Tensor, y_true: Tensor, reduction: str = "batchmean", log_target: bool = False, eps: float = 1e-10) -> Tensor:
    y_pred, y_true = y_pred.contiguous(), y_true.contiguous()  # CHANGED: @ensure_contiguous
    return kldiv_forward_triton(y_pred, y_true, log_target=log_target, reduction=reduction, eps=eps)


@triton_op("liger::kl_div_backward", mutates_args=())
def kl_div_bwd(y_true: Tensor, grad_output: Tensor, reduction: str, log_target: bool) -> Tensor:
    y_true = y_true.contiguous()  # CHANGED: @ensure_contiguous
    new_grads = tensorplay.empty_like(y_true)

    derivative = kldiv_backward_triton(y_true, grad_output, new_grads, log_target)

    if reduction == "batchmean":
        derivative = derivative / y_true.shape[0]
    elif reduction == "sum" or reduction == "none":
        pass
    elif reduction == "mean":
        derivative = derivative / (y_true.shape[0] * y_true.shape[1])
    return derivative


@kl_div_bwd.register_fake
def _kl_div_bwd_fake(y_true, grad_output, reduction, log_target):
    # CHANGED (new): the body tests grad_output == 1.0 (torch.equal), which a fake tensor
    # cannot answer; the shape does not depend on it
    return y_true.new_empty(y_true.shape)


def _kl_setup(ctx, inputs, output):
    y_pred, y_true, reduction, log_target, eps = inputs
    ctx.reduction, ctx.log_target = reduction, log_target
    ctx.save_for_backward(y_true)


def _kl_backward(ctx, grad_output):
    (y_true,) = ctx.saved_tensors
    return kl_div_bwd(y_true, grad_output, ctx.reduction, ctx.log_target), None, None, None, None


kl_div.register_autograd(_kl_backward, setup_context=_kl_setup)


# --- jsd.py ------------------------------------------------------------------------------------



@triton_op("liger::jsd", mutates_args=())
def jsd(_input: Tensor, target: Tensor, shift_labels: Optional[Tensor] = None, beta: float = 0.5, ignore_index: int = -100) -> tuple[Tensor, Tensor]:
    _input, target = _input.contiguous(), target.contiguous()  # CHANGED: @ensure_contiguous
    has_label = False
    if shift_labels is not None:
        assert shift_labels.shape == (_input.shape[0],), (
            f"the shape of shift_labels must be (BT,). Got: {shift_labels.shape}"
        )
        shift_labels = shift_labels.contiguous()
        has_label = True

    loss, dX = jsd_forward(_input, target, shift_labels, beta, ignore_index, has_label)
    return loss, dX  # CHANGED: dX (computed in the forward) is an output: ctx is not available in an op


def _save_second_output(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    # CHANGED: the Function returned only the loss and kept the forward-computed gradient on ctx;
    # as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[1])


def _jsd_backward(ctx, grad_output, grad_dX):
    (dX,) = ctx.saved_tensors
    dX = jsd_backward(dX, grad_output)
    return dX, None, None, None, None


jsd.register_autograd(_jsd_backward, setup_context=_save_second_output)


# --- tvd.py ------------------------------------------------------------------------------------


@triton_op("liger::tvd", mutates_args=())
def tvd(p: Tensor, q: Tensor, shift_labels: Optional[Tensor] = None, reduction: str = "batchmean", ignore_index: int = -100) -> tuple[Tensor, Tensor]:
    p, q = p.contiguous(), q.contiguous()  # CHANGED: @ensure_contiguous
    has_label = False
    if shift_labels is not None:
        assert shift_labels.shape == (p.shape[0],), (
            f"the shape of shift_labels must be (BT,). Got: {shift_labels.shape}"
        )
        shift_labels = shift_labels.contiguous()
        has_label = True

    loss, grads = tv_distance_forward_triton(p, q, shift_labels, reduction, ignore_index, has_label)
    return loss, grads  # CHANGED: grads (computed in the forward) is an output: ctx is not available in an op


@tvd.register_fake
def _tvd_fake(p, q, shift_labels=None, reduction="batchmean", ignore_index=-100):
    # CHANGED (new): the body counts the labels that are not ignored with .item(), which a fake
    # tensor cannot answer; the shapes do not depend on it
    BT, V = p.shape
    loss = p.new_empty((BT, V) if reduction == "none" else (BT,) if reduction == "sum" else (),
                       dtype=tensorplay.float32)
    return loss, tensorplay.empty_like(p)


def _tvd_backward(ctx, grad_output, grad_grads):
    (grads,) = ctx.saved_tensors
    return tvd_backward_triton(grad_output, grads), None, None, None, None


tvd.register_autograd(_tvd_backward, setup_context=_save_second_output)


# --- dyt.py ------------------------------------------------------------------------------------


def liger_dyt_bwd(dy, x, alpha, gamma, beta):
    """Ours (OWN_HOST): _dyt_bwd_kernel's launch on a (width-tile, program) grid, each program
    summing its rows' gradients of alpha, gamma, beta into its own row of a float32 buffer (alpha's
    per 512-column tile), the buffers reduced here."""
    shape = x.shape
    rows = x.reshape(-1, shape[-1])
    n_rows, width = rows.shape
    programs = sm_count(x.device)
    f32, dev = tensorplay.float32, x.device
    part_alpha = tensorplay.zeros(programs, triton.cdiv(width, 512), dtype=f32, device=dev)
    part_gamma = tensorplay.empty(programs, width, dtype=f32, device=dev)
    part_beta = None if beta is None else tensorplay.empty(programs, width, dtype=f32, device=dev)
    dx = tensorplay.empty_like(dy)
    launch = wrap_triton(_dyt_bwd_kernel)[lambda meta: (triton.cdiv(width, meta["BLOCK_N"]), programs)]
    launch(dy, dx, part_alpha, part_gamma, part_beta, rows, alpha, gamma, beta is not None, n_rows, width)
    d_alpha = part_alpha.sum().to(x.dtype).unsqueeze(0)
    d_beta = None if beta is None else part_beta.sum(0).to(x.dtype)
    return dx.view(shape), d_alpha, part_gamma.sum(0).to(gamma.dtype), d_beta


@triton_op("liger::dyt", mutates_args=())
def dyt(x: Tensor, alpha: Tensor, gamma: Tensor, beta: Tensor) -> Tensor:
    x, alpha, gamma, beta = (t.contiguous() for t in (x, alpha, gamma, beta))  # CHANGED: @ensure_contiguous
    return liger_dyt_fwd(x, alpha, gamma, beta)


@triton_op("liger::dyt_backward", mutates_args=())
def dyt_bwd(dy: Tensor, x: Tensor, alpha: Tensor, gamma: Tensor, beta: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    dy, x = dy.contiguous(), x.contiguous()  # CHANGED: @ensure_contiguous
    return liger_dyt_bwd(dy, x, alpha, gamma, beta)


def _dyt_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _dyt_backward(ctx, dy):
    x, alpha, gamma, beta = ctx.saved_tensors
    return dyt_bwd(dy, x, alpha, gamma, beta)


dyt.register_autograd(_dyt_backward, setup_context=_dyt_setup)


# --- cross_entropy.py --------------------------------------------------------------------------


@triton_op("liger::cross_entropy", mutates_args=())
def cross_entropy(_input: Tensor, target: Tensor, ignore_index: int = -100, lse_square_scale: float = 0.0,
                  label_smoothing: float = 0.0, reduction: str = "mean",
                  softcap: Optional[float] = None) -> tuple[Tensor, Tensor]:
    # CHANGED: the kernel writes the gradient over the logits ("a trick to store X_ptr gradient in
    # X_ptr"); an op may not mutate its inputs: a copy. The released code launches with
    # HAS_GRADIENTS=_input.requires_grad; inside an op (as inside a torch custom op) the inputs never
    # require grad, and this op always returns the gradient: the copy is marked as requiring it
    # The copy is row-major: the kernel addresses rows by stride(-2) alone (a transposed copy,
    # which clone now keeps as torch's does, was read and written in the wrong places)
    _input = _input.clone(memory_format=tensorplay.contiguous_format).requires_grad_()
    loss, z_loss, token_accuracy, predicted_tokens, _input = cross_entropy_forward(
        _input,
        target,
        None,
        ignore_index,
        lse_square_scale,
        label_smoothing,
        reduction,
        softcap,
        False,
    )
    return loss, _input.detach()  # CHANGED: the gradient (computed in the forward) is an output


@cross_entropy.register_fake
def _cross_entropy_fake(_input, target, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                        reduction="mean", softcap=None):
    # CHANGED (new): the body counts the targets that are not ignored with .item(), which a fake
    # tensor cannot answer; the shapes do not depend on it
    loss = _input.new_empty((_input.shape[0],) if reduction == "none" else ())
    return loss, _input.new_empty(_input.shape)     # (the row-major copy's gradient)


@triton_op("liger::cross_entropy_backward", mutates_args=())
def cross_entropy_bwd(grad_input: Tensor, grad_output: Tensor) -> Tensor:
    # CHANGED: a copy: the released code scales the saved gradient in place (element_mul_kernel), or
    # returns it as is when grad_output is 1; an op may not mutate, nor return, its inputs
    return cross_entropy_backward(grad_input.clone(), grad_output)


@cross_entropy_bwd.register_fake
def _cross_entropy_bwd_fake(grad_input, grad_output):
    # CHANGED (new): the body tests grad_output == 1.0 (torch.equal), which a fake tensor
    # cannot answer; the shape does not depend on it
    return grad_input.new_empty(grad_input.shape)


def _ce_backward(ctx, grad_output, grad_grad_input):
    (_input,) = ctx.saved_tensors
    return cross_entropy_bwd(_input, grad_output), None, None, None, None, None, None


cross_entropy.register_autograd(_ce_backward, setup_context=_save_second_output)


# --- sparsemax.py ------------------------------------------------------------------------------


@triton_op("liger::sparsemax", mutates_args=())
def sparsemax(x: Tensor, dim: int = -1) -> Tensor:
    x = x.contiguous()  # CHANGED: @ensure_contiguous
    y, out_flat = _sparsemax_forward(x, dim)
    return y  # CHANGED: out_flat was kept on ctx; the backward rebuilds it from y (the same values)


@triton_op("liger::sparsemax_backward", mutates_args=())
def sparsemax_bwd(grad_out: Tensor, y: Tensor, dim: int) -> Tensor:
    grad_out = grad_out.contiguous()  # CHANGED: @ensure_contiguous
    out_flat = y.transpose(dim, -1).contiguous()  # CHANGED: was kept on ctx (out_flat), see above
    out_flat = out_flat.view(-1, out_flat.shape[-1])  # CHANGED: was kept on ctx
    return _sparsemax_backward(grad_out, out_flat, dim)


def _sparsemax_setup(ctx, inputs, output):
    ctx.dim = inputs[1] if len(inputs) > 1 else -1
    ctx.save_for_backward(output)


def _sparsemax_backward_formula(ctx, grad_out):
    (y,) = ctx.saved_tensors
    return sparsemax_bwd(grad_out, y, ctx.dim), None


sparsemax.register_autograd(_sparsemax_backward_formula, setup_context=_sparsemax_setup)


# --- poly_norm.py ------------------------------------------------------------------------------


@triton_op("liger::poly_norm", mutates_args=())
def poly_norm(X: Tensor, W: Tensor, B: Tensor, eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    X = X.contiguous()  # CHANGED: @ensure_contiguous
    Y, X, RSTD, BLOCK_SIZE, num_warps = poly_norm_forward(X, W, B, eps)
    return Y, RSTD  # CHANGED: RSTD is an output (the op's backward needs it; ctx is not available)


@triton_op("liger::poly_norm_backward", mutates_args=())
def poly_norm_bwd(grad_output: Tensor, X: Tensor, W: Tensor, RSTD: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    grad_output, X = grad_output.contiguous(), X.contiguous()  # CHANGED: @ensure_contiguous
    BLOCK_SIZE, num_warps = calculate_settings(X.shape[-1])  # CHANGED: was kept on ctx
    # CHANGED: in_place=False: upstream writes dX into grad_output by default; an op may not mutate its inputs
    return poly_norm_backward(grad_output, X.view(-1, X.shape[-1]), W, RSTD, BLOCK_SIZE, num_warps, False)


def _poly_norm_setup(ctx, inputs, output):
    X, W, B = inputs[:3]
    ctx.save_for_backward(X, W, output[1])
    # CHANGED: the Function returned only Y and kept RSTD on ctx; as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[1])


def _poly_norm_backward(ctx, grad_output, dRSTD):
    X, W, RSTD = ctx.saved_tensors
    dX, dW, dB = poly_norm_bwd(grad_output, X, W, RSTD)
    return dX, dW, dB, None


poly_norm.register_autograd(_poly_norm_backward, setup_context=_poly_norm_setup)


# --- fused_add_rms_norm.py ---------------------------------------------------------------------
# (_str_to_casting_mode: rms_norm.py's, the same table, above)


@triton_op("liger::fused_add_rms_norm", mutates_args=())
def fused_add_rms_norm(X: Tensor, R: Tensor, W: Tensor, eps: float, offset: float = 0.0,
                       casting_mode: str = "llama") -> tuple[Tensor, Tensor, Tensor]:
    X, R = X.contiguous(), R.contiguous()  # CHANGED: @ensure_contiguous
    Y, S, RSTD, BLOCK_SIZE, num_warps, num_stages, casting_mode = fused_add_rms_norm_forward(
        X, R, W, eps, offset, casting_mode
    )
    return Y, S, RSTD  # CHANGED: RSTD is an output (the op's backward needs it; ctx is not available)


@triton_op("liger::fused_add_rms_norm_backward", mutates_args=())
def fused_add_rms_norm_bwd(dY: Tensor, dS_out: Tensor, S: Tensor, W: Tensor, RSTD: Tensor, offset: float,
                           casting_mode: str) -> tuple[Tensor, Tensor]:
    dY, dS_out = dY.contiguous(), dS_out.contiguous()  # CHANGED: @ensure_contiguous
    BLOCK_SIZE, num_warps = calculate_settings(S.shape[-1])  # CHANGED: was kept on ctx
    mode = _str_to_casting_mode[casting_mode]  # CHANGED: was kept on ctx
    dX, dR, dW = fused_add_rms_norm_backward(dY, dS_out, S, W, RSTD, offset, mode, BLOCK_SIZE, num_warps, 2, False)
    return dX, dW  # CHANGED: dR is dX (the Function returned it twice; an op's outputs may not alias)


def _fused_add_rms_norm_setup(ctx, inputs, output):
    X, R, W, eps, offset, casting_mode = (list(inputs) + [0.0, "llama"])[:6]
    ctx.offset, ctx.casting_mode = offset, casting_mode
    ctx.save_for_backward(output[1], W, output[2])
    # CHANGED: the Function kept RSTD on ctx; as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[2])


def _fused_add_rms_norm_backward(ctx, dY, dS_out, dRSTD):
    S, W, RSTD = ctx.saved_tensors
    dX, dW = fused_add_rms_norm_bwd(dY, dS_out, S, W, RSTD, ctx.offset, ctx.casting_mode)
    return dX, dX, dW, None, None, None


fused_add_rms_norm.register_autograd(_fused_add_rms_norm_backward, setup_context=_fused_add_rms_norm_setup)


# --- group_norm.py -----------------------------------------------------------------------------


@triton_op("liger::group_norm", mutates_args=())
def group_norm(X: Tensor, affine_scaling_weight: Tensor, affine_shifting_bias: Tensor, num_channels: int,
               num_groups: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    X = X.contiguous()  # CHANGED: @ensure_contiguous
    Y, X, Mean, RSTD, BLOCK_SIZE = group_norm_forward(
        X,
        num_channels,
        num_groups,
        affine_scaling_weight,
        affine_shifting_bias,
        eps,
    )
    return Y, Mean, RSTD  # CHANGED: Mean and RSTD are outputs (the op's backward needs them; ctx is not available)


@triton_op("liger::group_norm_backward", mutates_args=())
def group_norm_bwd(dY: Tensor, X: Tensor, W: Tensor, B: Tensor, Mean: Tensor, RSTD: Tensor, num_channels: int,
                   num_groups: int) -> tuple[Tensor, Tensor, Tensor]:
    dY, X = dY.contiguous(), X.contiguous()  # CHANGED: @ensure_contiguous
    return group_norm_backward(dY, X, W, B, Mean, RSTD, num_channels, num_groups)


def _group_norm_setup(ctx, inputs, output):
    X, W, B, num_channels, num_groups, eps = inputs
    ctx.num_channels = num_channels
    ctx.num_groups = num_groups
    ctx.save_for_backward(X, W, B, output[1], output[2])
    # CHANGED: the Function kept Mean and RSTD on ctx; as op outputs they are declared non-differentiable
    ctx.mark_non_differentiable(output[1], output[2])


def _group_norm_backward(ctx, dY, dMean, dRSTD):
    X, W, B, Mean, RSTD = ctx.saved_tensors
    DX, DW, DB = group_norm_bwd(dY, X, W, B, Mean, RSTD, ctx.num_channels, ctx.num_groups)
    return DX, DW, DB, None, None, None


group_norm.register_autograd(_group_norm_backward, setup_context=_group_norm_setup)


# --- qwen2vl_mrope.py --------------------------------------------------------------------------


@triton_op("liger::qwen2vl_mrope", mutates_args=())
def qwen2vl_mrope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, mrope_section: list[int],
                  unsqueeze_dim: int = 1) -> tuple[Tensor, Tensor]:
    # CHANGED (new): the kernel indexes cos/sin by q's batch, sequence and head sizes and reads
    # past their end when they do not match (upstream does not check; opcheck's second-shape run
    # grows q's and k's batch, not cos's dim 1): refused here, so the op is not shape-generic
    # in that sense and opcheck skips the run instead of comparing garbage
    if tuple(cos.shape) != (3, q.shape[0], q.shape[2], q.shape[3]) or tuple(sin.shape) != tuple(cos.shape):
        raise ValueError(f"cos/sin must have shape (3, bsz, seq_len, head_dim) = "
                         f"{(3, q.shape[0], q.shape[2], q.shape[3])}, got {tuple(cos.shape)}, {tuple(sin.shape)}")
    q, k = _copy_heads_major(q), _copy_heads_major(k)  # CHANGED: rotated in place (see rope)
    q, k, cos, sin = qwen2vl_mrope_forward(q, k, cos, sin, mrope_section)
    return q, k


@triton_op("liger::qwen2vl_mrope_backward", mutates_args=())
def qwen2vl_mrope_bwd(dq: Tensor, dk: Tensor, cos: Tensor, sin: Tensor, mrope_section: list[int]) -> tuple[Tensor, Tensor]:
    dq, dk = _copy_heads_major(dq), _copy_heads_major(dk)  # CHANGED: rotated in place (see rope)
    return qwen2vl_mrope_backward(dq, dk, cos.contiguous(), sin.contiguous(), mrope_section)


def _qwen2vl_mrope_setup(ctx, inputs, output):
    q, k, cos, sin, mrope_section = inputs[:5]
    ctx.save_for_backward(cos, sin)
    ctx.mrope_section = mrope_section


def _qwen2vl_mrope_backward(ctx, dq, dk):
    cos, sin = ctx.saved_tensors
    mrope_section = ctx.mrope_section
    dq, dk = qwen2vl_mrope_bwd(dq, dk, cos, sin, mrope_section)
    return dq, dk, None, None, None, None


qwen2vl_mrope.register_autograd(_qwen2vl_mrope_backward, setup_context=_qwen2vl_mrope_setup)
