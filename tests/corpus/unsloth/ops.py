"""Unsloth's ops on tensorplay.library: the released host code, our op wrappers.

Upstream: https://github.com/unslothai/unsloth, released as PyPI unsloth==2026.8.19 (Apache-2.0,
see kernels.py / LICENSE). Nothing of its code is in this file. Unsloth writes its host code in
``Fast_X(torch.autograd.Function).forward`` / ``backward`` (and, for the gated MLPs, in the
functions fast_lora.py calls, ``swiglu_fg_kernel`` ...): those are read from the wheel at import
and run as released with ``torch`` bound to ``tensorplay`` and the kernels passed through
``wrap_triton`` (``corpus._upstream.host``: ``HOST_BINDINGS``; what is replaced for tensorplay:
``HOST_OVERRIDES``). :data:`HOST` names them.

Ours (the migration a torch user makes): each Function becomes a forward and a backward
``triton_op`` and ``register_autograd``; the ops call the released ``Fast_X.forward(ctx, ...)`` /
``backward(ctx, ...)`` with :class:`_Ctx`, which records what ``forward`` saves (returned as op
outputs: no ctx survives an op) and hands the backward what it needs (``BLOCK_SIZE`` /
``num_warps`` recomputed with the released ``calculate_settings``); where the released backward
writes into its arguments (dX over dY, dlogits over the saved logits, fast_lora's buffers), the op
passes it a copy (an op may not mutate its inputs). Every such line carries ``# CHANGED: why``.

Unsloth's kernels compute only the input gradient of the norms (the weights are frozen in LoRA);
the backward formulas below return ``None`` for the weights, as upstream does.
"""
# ruff: noqa  -- the op wrappers keep the Functions' names and layout

from __future__ import annotations

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

from .._host import Ctx as _Ctx
from .._upstream import host
from .kernels import DIST

# the released host code this file calls: {module in the wheel: [names]}
HOST = {
    "unsloth/kernels/utils.py": ["calculate_settings"],
    "unsloth/kernels/rms_layernorm.py": ["Fast_RMS_Layernorm"],
    "unsloth/kernels/layernorm.py": ["Fast_Layernorm"],
    "unsloth/kernels/swiglu.py": ["swiglu_fg_kernel", "swiglu_DWf_DW_dfg_kernel"],
    "unsloth/kernels/geglu.py": ["geglu_exact_forward_kernel", "geglu_exact_backward_kernel",
                                 "geglu_approx_forward_kernel", "geglu_approx_backward_kernel"],
    "unsloth/kernels/cross_entropy_loss.py": ["Fast_CrossEntropyLoss"],
}

# the host functions that stay ours: none
OWN_HOST: dict[str, str] = {}

globals().update(host(DIST, HOST, framework=tensorplay, wrap=wrap_triton))


# --- rms_layernorm.py: Fast_RMS_Layernorm ------------------------------------------------------

@triton_op("unsloth::rms_layernorm", mutates_args=())
def rms_layernorm(X: Tensor, W: Tensor, eps: float, gemma: bool = False) -> tuple[Tensor, Tensor]:
    ctx = _Ctx()
    Y = Fast_RMS_Layernorm.forward(ctx, X, W, eps, gemma)
    X, W, r = ctx.saved_tensors
    return Y, r  # CHANGED: r is an output (saved for the backward op; no ctx here)


@triton_op("unsloth::rms_layernorm_backward", mutates_args=())
def rms_layernorm_bwd(dY: Tensor, X: Tensor, W: Tensor, r: Tensor, eps: float, gemma: bool) -> Tensor:
    dim = X.shape[-1]
    BLOCK_SIZE, num_warps = calculate_settings(dim)  # CHANGED: was kept on ctx
    ctx = _Ctx((X.reshape(-1, dim), W, r), eps=eps, GEMMA=gemma, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    # CHANGED: a contiguous copy: the released backward writes dX over dY (not gemma), and an op
    # may not mutate its inputs; and the kernel steps through a row of dY by 1 (only its row stride
    # is passed), while a gradient may arrive expanded (that of a sum(): stride (0, 0))
    dY = dY.contiguous().clone()
    dX, _, _, _ = Fast_RMS_Layernorm.backward(ctx, dY)
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
    ctx = _Ctx()
    Y = Fast_Layernorm.forward(ctx, X, W, b, eps)
    X, W, b, r, mu = ctx.saved_tensors
    return Y, r, mu  # CHANGED: r, mu are outputs (saved for the backward op)


@triton_op("unsloth::layernorm_backward", mutates_args=())
def layernorm_bwd(dY: Tensor, X: Tensor, W: Tensor, b: Tensor, r: Tensor, mu: Tensor, eps: float) -> Tensor:
    dim = X.shape[-1]
    BLOCK_SIZE, num_warps = calculate_settings(dim)  # CHANGED: was kept on ctx
    ctx = _Ctx((X.view(-1, dim), W, b, r, mu), eps=eps, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    # CHANGED: a contiguous copy: the kernel writes dX over dY; dY may be a broadcast gradient
    dY = dY.contiguous().clone()
    dX, _, _, _, _ = Fast_Layernorm.backward(ctx, dY)
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
    ctx = _Ctx()
    losses = Fast_CrossEntropyLoss.forward(ctx, logits, labels, logit_softcapping, logit_scaling)
    logits, logsumexp, labels = ctx.saved_tensors
    return losses, logsumexp  # CHANGED: logsumexp is an output (saved for the backward op)


@triton_op("unsloth::cross_entropy_backward", mutates_args=())
def cross_entropy_bwd(dlosses: Tensor, logits: Tensor, logsumexp: Tensor, labels: Tensor, logit_softcapping: float, logit_scaling: float) -> Tensor:
    # CHANGED: .clone(): the released backward writes dlogits over the saved logits; an op may not
    # mutate its inputs
    logits = logits.clone()
    dlosses = dlosses.contiguous()  # CHANGED: the gradient of a sum() arrives expanded (stride 0)
    ctx = _Ctx((logits, logsumexp, labels),  # CHANGED: what the Function kept on ctx
               DO_SOFTCAPPING=bool(logit_softcapping != 0), logit_softcapping=logit_softcapping,
               DO_LOGIT_SCALING=bool(logit_scaling != 0), logit_scaling=logit_scaling)
    dlogits, _, _, _ = Fast_CrossEntropyLoss.backward(ctx, dlosses)
    return dlogits


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
