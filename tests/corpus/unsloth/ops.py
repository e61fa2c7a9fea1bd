"""Unsloth's host code, migrated from ``torch.autograd.Function`` to tensorplay.library.

Upstream: https://github.com/unslothai/unsloth @ 015bdef0d94a, unsloth/kernels/*.py (Apache-2.0, see
kernels.py / LICENSE). Unsloth writes its host code inside ``Fast_X.forward`` / ``backward``;
those bodies are kept line for line as the bodies of a forward and a backward ``triton_op``.
``torch.`` -> ``tensorplay.`` is not marked; every raw launch becomes ``wrap_triton(k)[grid]``
(marked); every other line that had to change says ``# CHANGED: why``. ``with
torch_gpu_device(device):`` (a ``torch.cuda.device`` guard) is left out: tensorplay launches on
the tensors' device.

The kernels launched are unsloth 2026.8.19's, read from its wheel (kernels.py): the release whose
kernels are that commit's, so no host line changed for them.

Unsloth's kernels compute only the input gradient of the norms (the weights are frozen in LoRA);
the backward formulas below return ``None`` for the weights, as upstream does.
"""
# ruff: noqa  -- host code kept as upstream wrote it, apart from the CHANGED lines

from __future__ import annotations

import triton

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

from .kernels import (BLOCK_SIZE, INT32_SAFETY_BUFFER, _approx_backward_kernel, _approx_forward_kernel,
                      _cross_entropy_backward, _cross_entropy_forward, _DWf_DW_dfg_kernel,
                      _exact_backward_kernel, _exact_forward_kernel, _fg_kernel,
                      _gemma_rms_layernorm_forward, _rms_layernorm_backward, _rms_layernorm_forward,
                      layernorm_backward, layernorm_forward)

# --- unsloth/kernels/utils.py ------------------------------------------------------------------

MAX_FUSED_SIZE: int = 65536
next_power_of_2 = triton.next_power_of_2


def calculate_settings(
    n: int,
) -> (
    int,
    int,
):
    BLOCK_SIZE: int = next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(
            f"Cannot launch Triton kernel since n = {n} exceeds "
            f"the maximum CUDA blocksize = {MAX_FUSED_SIZE}."
        )
    num_warps: int = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


def is_cdna():
    return False  # CHANGED: upstream reads torch.cuda.get_device_properties(...).gcnArchName (ROCm)


# --- rms_layernorm.py: Fast_RMS_Layernorm ------------------------------------------------------

@triton_op("unsloth::rms_layernorm", mutates_args=())
def rms_layernorm(X: Tensor, W: Tensor, eps: float, gemma: bool = False) -> tuple[Tensor, Tensor]:
    shape = X.shape
    dim: int = shape[-1]
    X = X.reshape(-1, dim)
    n_rows: int
    n_cols: int
    n_rows, n_cols = X.shape
    BLOCK_SIZE: int
    num_warps: int
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    device = X.device

    Y = tensorplay.empty((n_rows, n_cols), dtype = X.dtype, device = device)
    r = tensorplay.empty(n_rows, dtype = tensorplay.float32, device = device)

    fx = _gemma_rms_layernorm_forward if gemma else _rms_layernorm_forward
    wrap_triton(fx)[(n_rows,)](  # CHANGED: wrap_triton
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        W.stride(0),
        r,
        r.stride(0),
        n_cols,
        eps,
        BLOCK_SIZE = BLOCK_SIZE,
        num_warps = num_warps,
    )
    return Y.view(*shape), r  # CHANGED: r is an output (saved for the backward op; no ctx here)


@triton_op("unsloth::rms_layernorm_backward", mutates_args=())
def rms_layernorm_bwd(dY: Tensor, X: Tensor, W: Tensor, r: Tensor, eps: float, gemma: bool) -> Tensor:
    shape = dY.shape
    dim: int = shape[-1]
    # CHANGED: .contiguous(): the kernel steps through a row of dY by 1 (only its row stride is
    # passed); upstream takes dY as autograd hands it, and a gradient may be an expanded tensor
    # (that of a sum(): stride (0, 0)), which the GEMMA branch passes on as it is
    dY = dY.reshape(-1, dim).contiguous()
    X = X.reshape(-1, dim)  # CHANGED: upstream saved the reshaped X on ctx
    n_rows: int
    n_cols: int
    n_rows, n_cols = dY.shape
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)  # CHANGED: was kept on ctx
    # dW = X
    # CHANGED: .clone(): upstream writes dX over dY (not gemma); an op may not mutate its inputs
    dX = tensorplay.empty_like(dY) if gemma else dY.clone()
    if not gemma:  # CHANGED: the kernel reads dY where it writes dX: give it the copy
        dY = dX

    wrap_triton(_rms_layernorm_backward)[(n_rows,)](  # CHANGED: wrap_triton
        dY,
        dY.stride(0),
        dX,
        dX.stride(0),
        X,
        X.stride(0),
        W,
        W.stride(0),
        r,
        r.stride(0),
        # dW, dW.stride(0),
        n_cols,
        eps,
        GEMMA = gemma,
        BLOCK_SIZE = BLOCK_SIZE,
        num_warps = num_warps,
    )
    dX = dX.view(*shape)
    return dX


def _rms_setup(ctx, inputs, output):
    X, W, eps, gemma = inputs
    ctx.eps, ctx.GEMMA = eps, gemma
    ctx.save_for_backward(X, W, output[1])
    # CHANGED: the Function returned only Y and kept r on ctx; as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[1])


def _rms_backward(ctx, dY, dr):
    X, W, r = ctx.saved_tensors
    return rms_layernorm_bwd(dY, X, W, r, ctx.eps, ctx.GEMMA), None, None, None


rms_layernorm.register_autograd(_rms_backward, setup_context=_rms_setup)


# --- layernorm.py: Fast_Layernorm --------------------------------------------------------------

@triton_op("unsloth::layernorm", mutates_args=())
def layernorm(X: Tensor, W: Tensor, b: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    shape = X.shape
    dim = shape[-1]
    X = X.view(-1, dim)
    n_rows, n_cols = X.shape
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    device = X.device
    Y = tensorplay.empty((n_rows, n_cols), dtype = X.dtype, device = device)
    r = tensorplay.empty(n_rows, dtype = tensorplay.float32, device = device)
    mu = tensorplay.empty(n_rows, dtype = tensorplay.float32, device = device)

    wrap_triton(layernorm_forward)[(n_rows,)](  # CHANGED: wrap_triton
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        b,
        r,
        mu,
        n_cols,
        eps,
        BLOCK_SIZE = BLOCK_SIZE,
        num_warps = num_warps,
    )
    return Y.view(*shape), r, mu  # CHANGED: r, mu are outputs (saved for the backward op)


@triton_op("unsloth::layernorm_backward", mutates_args=())
def layernorm_bwd(dY: Tensor, X: Tensor, W: Tensor, b: Tensor, r: Tensor, mu: Tensor, eps: float) -> Tensor:
    shape = dY.shape
    dim = shape[-1]
    dY = dY.reshape(-1, dim).clone()  # CHANGED: .clone(): the kernel writes dX over dY; reshape: dY may be a broadcast grad
    X = X.view(-1, dim)  # CHANGED: upstream saved the reshaped X on ctx
    n_rows, n_cols = dY.shape
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)  # CHANGED: was kept on ctx

    wrap_triton(layernorm_backward)[(n_rows,)](  # CHANGED: wrap_triton
        dY,
        dY.stride(0),
        X,
        X.stride(0),
        W,
        b,
        r,
        mu,
        n_cols,
        eps,
        BLOCK_SIZE = BLOCK_SIZE,
        num_warps = num_warps,
    )
    dX = dY.view(*shape)
    return dX


def _ln_setup(ctx, inputs, output):
    X, W, b, eps = inputs
    ctx.eps = eps
    ctx.save_for_backward(X, W, b, output[1], output[2])
    # CHANGED: the Function returned only Y and kept r, mu on ctx; as op outputs they are declared non-differentiable
    ctx.mark_non_differentiable(output[1], output[2])


def _ln_backward(ctx, dY, dr, dmu):
    X, W, b, r, mu = ctx.saved_tensors
    return layernorm_bwd(dY, X, W, b, r, mu, ctx.eps), None, None, None


layernorm.register_autograd(_ln_backward, setup_context=_ln_setup)


# --- swiglu.py / geglu.py ----------------------------------------------------------------------
# Upstream calls these from fast_lora.py's autograd Functions (forward: h = f(e, g); backward:
# the kernel overwrites DW, e, g with h, df (= dL/dg) and de (= dL/de)).

def swiglu_fg_kernel(e, g):
    batch, seq_len, hd = e.shape
    n_elements = e.numel()
    h = tensorplay.empty((batch, seq_len, hd), dtype = e.dtype, device = e.device)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    wrap_triton(_fg_kernel)[grid](  # CHANGED: wrap_triton
        e,
        g,
        h,
        n_elements,
        BLOCK_SIZE = BLOCK_SIZE,
        LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
    )
    return h


def swiglu_DWf_DW_dfg_kernel(DW, e, g):
    batch_seq_len, hd = e.shape  # Flattened to 2D, so 1st dim is bsz * seq_len
    n_elements = e.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    wrap_triton(_DWf_DW_dfg_kernel)[grid](  # CHANGED: wrap_triton
        DW,
        e,
        g,
        n_elements,
        BLOCK_SIZE = BLOCK_SIZE,
        LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
    )
    return DW, e, g


def geglu_exact_forward_kernel(gate, up):
    batch, seq_len, hd = gate.shape
    n_elements = gate.numel()
    device = gate.device
    out = tensorplay.empty((batch, seq_len, hd), dtype = gate.dtype, device = device)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    wrap_triton(_exact_forward_kernel)[grid](  # CHANGED: wrap_triton
        gate,
        up,
        out,
        n_elements,
        BLOCK_SIZE = BLOCK_SIZE,
        LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
    )
    return out


def geglu_exact_backward_kernel(DW, e, g):
    batch_seq_len, hd = e.shape
    n_elements = e.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    wrap_triton(_exact_backward_kernel)[grid](  # CHANGED: wrap_triton
        DW,
        e,
        g,
        n_elements,
        BLOCK_SIZE = BLOCK_SIZE,
        LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
    )
    return DW, e, g


def geglu_approx_forward_kernel(gate, up):
    batch, seq_len, hd = gate.shape
    n_elements = gate.numel()
    device = gate.device
    out = tensorplay.empty((batch, seq_len, hd), dtype = gate.dtype, device = device)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    wrap_triton(_approx_forward_kernel)[grid](  # CHANGED: wrap_triton
        gate,
        up,
        out,
        n_elements,
        BLOCK_SIZE = BLOCK_SIZE,
        LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
    )
    return out


def geglu_approx_backward_kernel(DW, e, g):
    batch_seq_len, hd = e.shape
    n_elements = e.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    wrap_triton(_approx_backward_kernel)[grid](  # CHANGED: wrap_triton
        DW,
        e,
        g,
        n_elements,
        BLOCK_SIZE = BLOCK_SIZE,
        LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
    )
    return DW, e, g


def _gated(name, forward, backward):
    """A forward op h = f(e, g) (3-D, as fast_lora calls it) and its backward op."""
    @triton_op(f"unsloth::{name}", mutates_args=())
    def fwd(e: Tensor, g: Tensor) -> Tensor:
        return forward(e.contiguous(), g.contiguous())

    @triton_op(f"unsloth::{name}_backward", mutates_args=())
    def bwd(DW: Tensor, e: Tensor, g: Tensor) -> tuple[Tensor, Tensor]:
        shape = e.shape
        # CHANGED: .clone(): the kernel overwrites DW, e, g with h, df, de; an op may not mutate
        # its inputs (fast_lora hands it buffers it owns)
        DW, e, g = (t.reshape(-1, shape[-1]).clone() for t in (DW, e, g))
        h, df, de = backward(DW, e, g)
        return de.view(*shape), df.view(*shape)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def formula(ctx, DW):
        e, g = ctx.saved_tensors
        return bwd(DW, e, g)

    fwd.register_autograd(formula, setup_context=setup)
    return fwd


swiglu = _gated("swiglu", swiglu_fg_kernel, swiglu_DWf_DW_dfg_kernel)
geglu_exact = _gated("geglu_exact", geglu_exact_forward_kernel, geglu_exact_backward_kernel)
geglu_approx = _gated("geglu_approx", geglu_approx_forward_kernel, geglu_approx_backward_kernel)


# --- cross_entropy_loss.py: Fast_CrossEntropyLoss ----------------------------------------------

@triton_op("unsloth::cross_entropy", mutates_args=())
def cross_entropy(logits: Tensor, labels: Tensor, logit_softcapping: float = 0, logit_scaling: float = 0) -> tuple[Tensor, Tensor]:
    n_rows: int
    vocab_size: int
    n_rows, vocab_size = logits.shape
    device = logits.device
    labels = labels.to(device)

    div, mod = divmod(vocab_size, MAX_FUSED_SIZE)
    n_chunks: int = div + (mod != 0)
    losses = tensorplay.empty(n_rows, dtype = tensorplay.float32, device = device)

    DO_SOFTCAPPING: bool = bool(logit_softcapping != 0)
    DO_LOGIT_SCALING: bool = bool(logit_scaling != 0)

    BLOCK_SIZE: int
    num_warps: int
    if n_chunks == 1:
        # For small vocabs <= 65336 like Llama, Mistral
        BLOCK_SIZE, num_warps = calculate_settings(vocab_size)
        if is_cdna():
            num_warps = num_warps // 2
        logsumexp = tensorplay.empty(n_rows, dtype = tensorplay.float32, device = device)

        wrap_triton(_cross_entropy_forward)[(n_rows,)](  # CHANGED: wrap_triton
            logits,
            logits.stride(0),
            losses,
            logsumexp,
            labels,
            VOCAB_SIZE = vocab_size,
            BLOCK_SIZE = BLOCK_SIZE,
            DO_SOFTCAPPING = DO_SOFTCAPPING,
            SOFTCAP = logit_softcapping,
            DO_LOGIT_SCALING = DO_LOGIT_SCALING,
            LOGIT_SCALE = logit_scaling,
            num_warps = num_warps,
        )
    else:
        # CHANGED: the chunked kernel (vocab > 65536, Gemma's 256K) is not in the corpus
        raise NotImplementedError("unsloth::cross_entropy: vocab > 65536 is not in the corpus")

    return losses, logsumexp  # CHANGED: logsumexp is an output (saved for the backward op)


@triton_op("unsloth::cross_entropy_backward", mutates_args=())
def cross_entropy_bwd(dlosses: Tensor, logits: Tensor, logsumexp: Tensor, labels: Tensor, logit_softcapping: float, logit_scaling: float) -> Tensor:
    n_rows: int
    vocab_size: int
    n_rows, vocab_size = logits.shape
    # CHANGED: .clone(): upstream writes dlogits over the saved logits; an op may not mutate its inputs
    logits = logits.clone()
    dlosses = dlosses.contiguous()  # CHANGED: the gradient of a sum() arrives expanded (stride 0)
    DO_SOFTCAPPING = bool(logit_softcapping != 0)  # CHANGED: was kept on ctx
    DO_LOGIT_SCALING = bool(logit_scaling != 0)  # CHANGED: was kept on ctx

    BLOCK_SIZE: int = 4096
    div: int
    mod: int
    div, mod = divmod(vocab_size, BLOCK_SIZE)
    n_blocks: int = div + (mod != 0)

    wrap_triton(_cross_entropy_backward)[  # CHANGED: wrap_triton
        (
            n_rows,
            n_blocks,
        )
    ](
        logits,
        logits.stride(0),
        dlosses,
        dlosses.stride(0),
        logsumexp,
        labels,
        VOCAB_SIZE = vocab_size,
        BLOCK_SIZE = BLOCK_SIZE,
        DO_SOFTCAPPING = DO_SOFTCAPPING,
        SOFTCAP = logit_softcapping,
        DO_LOGIT_SCALING = DO_LOGIT_SCALING,
        LOGIT_SCALE = logit_scaling,
        num_warps = 8,
    )
    return logits


def _ce_setup(ctx, inputs, output):
    logits, labels, logit_softcapping, logit_scaling = inputs
    ctx.logit_softcapping, ctx.logit_scaling = logit_softcapping, logit_scaling
    ctx.save_for_backward(logits, output[1], labels)
    # CHANGED: the Function returned only the losses and kept logsumexp on ctx; as an op output it is declared non-differentiable
    ctx.mark_non_differentiable(output[1])


def _ce_backward(ctx, dlosses, dlogsumexp):
    logits, logsumexp, labels = ctx.saved_tensors
    dlogits = cross_entropy_bwd(dlosses, logits, logsumexp, labels, ctx.logit_softcapping, ctx.logit_scaling)
    return dlogits, None, None, None


cross_entropy.register_autograd(_ce_backward, setup_context=_ce_setup)
