"""Cut Cross-Entropy's ops on tensorplay.library: the released host code, our op wrappers.

Upstream: https://github.com/apple/ml-cross-entropy, released as PyPI cut-cross-entropy==25.1.1
(Apple's sample-code licence, see kernels.py / LICENSE). Nothing of its code is in this file. The
library's host code (``cce_lse_forward_kernel``, ``indexed_neg_dot_forward_kernel``,
``cce_backward_kernel``: shapes, allocations, lock arrays, the launches; ``cce.py``'s
``LinearCrossEntropyFunction(torch.autograd.Function)`` and ``cce_linear_cross_entropy``, the
library's entry point) is read from the wheel at import and run as released with ``torch`` bound
to ``tensorplay`` and the kernels passed through ``wrap_triton`` (``corpus._upstream.host``:
``HOST_BINDINGS``). :data:`HOST` names them. The released Function is then a
``tensorplay.autograd.Function``: the function cases (cases.py) call ``cce_linear_cross_entropy``
itself, as a user of the library does.

Ours (the migration a torch user makes, for ``opcheck``): the log-sum-exp of ``e @ c.T`` (the
forward host function) and the loss (``LinearCrossEntropyFunction``) each become a forward and a
backward ``triton_op`` and ``register_autograd``; the loss ops call the released
``LinearCrossEntropyFunction.forward(ctx, ...)`` / ``backward(ctx, ...)`` with ``_Ctx``, which
records what ``forward`` saves (the log-sum-exp, returned as an op output: no ctx survives an op).
The log-sum-exp's backward is the released ``cce_backward_kernel`` with no targets (its kernel's
``HAS_TARGETS=False`` branch: the softmax, the gradient of the log-sum-exp). Every line that
differs from the Function's use carries ``# CHANGED: why``.
"""
# ruff: noqa  -- the op wrappers keep the Function's names and layout

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
    "cut_cross_entropy/cce_lse_forward.py": ["cce_lse_forward_kernel"],
    "cut_cross_entropy/cce_backward.py": ["cce_backward_kernel"],
    "cut_cross_entropy/cce.py": ["cce_linear_cross_entropy", "LinearCrossEntropyFunction", "CCEParams"],
    "cut_cross_entropy/utils.py": ["_handle_eps"],
}

globals().update(host(DIST, HOST, framework=tensorplay, wrap=wrap_triton))


def _needing_grad(c: Tensor) -> Tensor:
    # CHANGED: cce_backward_kernel computes dC only when `c.requires_grad` (the Function's saved
    # c kept its flag); an op's inputs carry no autograd state, so the backward op asks for dC
    # on an alias of c that requires grad (nothing is recorded: the op body runs without grad)
    return c.detach().requires_grad_()


# --- cce_lse_forward.py / cce_backward.py: the log-sum-exp of e @ c.T --------------------------

@triton_op("cce::lse", mutates_args=())
def lse(e: Tensor, c: Tensor, softcap: Optional[float] = None) -> Tensor:
    return cce_lse_forward_kernel(e.contiguous(), c, softcap=softcap)  # CHANGED: its callers pass e contiguous


@triton_op("cce::lse_backward", mutates_args=())
def lse_bwd(dlse: Tensor, e: Tensor, c: Tensor, lse: Tensor, softcap: Optional[float]) -> tuple[Tensor, Tensor]:
    # no targets, no filter: d lse_i / d logits_ij = softmax_ij
    de, dc = cce_backward_kernel(dlse, e.contiguous(), _needing_grad(c), lse, None, softcap, None)
    return de, dc


def _lse_setup(ctx, inputs, output):
    e, c, softcap = inputs
    ctx.softcap = softcap
    ctx.save_for_backward(e, c, output)


def _lse_backward(ctx, dlse):
    e, c, out = ctx.saved_tensors
    de, dc = lse_bwd(dlse, e, c, out, ctx.softcap)
    return de, dc, None


lse.register_autograd(_lse_backward, setup_context=_lse_setup)


# --- cce.py: LinearCrossEntropyFunction ----------------------------------------------------------

def _params(targets, softcap, reduction, filter_eps, e):
    # CHANGED: the CCEParams cce_linear_cross_entropy builds, for 2-D e and no ignored targets
    # (valids None, shift False): op arguments are tensors and numbers, not a dataclass
    return CCEParams(targets, None, softcap, reduction, _handle_eps(filter_eps, e.dtype), False,
                     targets.size())


@triton_op("cce::linear_cross_entropy", mutates_args=())
def linear_cross_entropy(e: Tensor, c: Tensor, targets: Tensor, softcap: Optional[float] = None,
                         reduction: str = "mean") -> tuple[Tensor, Tensor]:
    ctx = _Ctx()
    # CHANGED: filter_eps=None: "auto" makes the forward also return the vocabulary's average
    # logit (for the backward's ordering), kept on ctx; the function cases run "auto"
    loss = LinearCrossEntropyFunction.forward(ctx, e.contiguous(), c, _params(targets, softcap, reduction, None, e))
    return loss, ctx.saved_tensors[2]  # CHANGED: lse is an output (saved for the backward op)


@triton_op("cce::linear_cross_entropy_backward", mutates_args=())
def linear_cross_entropy_bwd(grad_out: Tensor, e: Tensor, c: Tensor, targets: Tensor, lse: Tensor,
                             softcap: Optional[float], reduction: str) -> tuple[Tensor, Tensor]:
    ctx = _Ctx((e.contiguous(), _needing_grad(c), lse, targets, None, None),
               params=_params(targets, softcap, reduction, None, e))  # CHANGED: what forward kept on ctx
    de, dc, _ = LinearCrossEntropyFunction.backward(ctx, grad_out)
    return de, dc


def _lce_setup(ctx, inputs, output):
    e, c, targets, softcap, reduction = inputs
    ctx.softcap, ctx.reduction = softcap, reduction
    ctx.save_for_backward(e, c, targets, output[1])
    ctx.mark_non_differentiable(output[1])  # CHANGED: lse, an op output, is a saved statistic


def _lce_backward(ctx, grad_out, dlse):
    e, c, targets, lse_ = ctx.saved_tensors
    de, dc = linear_cross_entropy_bwd(grad_out, e, c, targets, lse_, ctx.softcap, ctx.reduction)
    return de, dc, None, None, None


linear_cross_entropy.register_autograd(_lce_backward, setup_context=_lce_setup)
