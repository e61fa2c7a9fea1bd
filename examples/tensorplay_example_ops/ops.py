"""The ``example::`` ops: device-agnostic kernels written with tensorplay ops, each with a fake
kernel and sample inputs. Imported by the plugin's ``tensorplay_register_ops`` hook.

The kernels only use tensorplay ops, so they run on every device that has a plugin (cpu via
NumPy, cuda via CuPy) and are differentiable without a formula (CompositeImplicitAutograd);
``rms_norm`` registers an explicit formula anyway, the way a production op saves memory and time.
"""

from __future__ import annotations

import math

import tensorplay
from tensorplay import library
from tensorplay.plugins import SampleInput

from ._samples import register_samples

__all__ = ["weighted_sum", "rms_norm", "gelu", "softmax_cross_entropy", "add_relu_"]

Tensor = tensorplay.Tensor



def g(t):
    """``t`` asking for grad: samples whose differentiable inputs do are gradient-checked."""
    return t.requires_grad_()

# -- weighted_sum: the README's first example, verbatim (namespace "example") ------------

@tensorplay.library.custom_op("example::weighted_sum", mutates_args=())
def weighted_sum(x, weight):
    return (x * weight).sum()


@weighted_sum.register_fake
def _(x, weight):
    # a 0-d result of the dtype sum gives the product: the promoted floating dtype, int64 for
    # integers and bool (as torch's sum); broadcasting is checked by the real kernel
    dt = tensorplay.promote_types(x.dtype, weight.dtype)
    return x.new_empty((), dtype=dt if dt.is_floating_point or dt.is_complex else tensorplay.int64)


@register_samples("example::weighted_sum")
def _weighted_sum_samples(device):
    r = tensorplay.randn
    return [
        # differentiable inputs ask for grad (as torch.library.opcheck's samples do): the
        # autograd and gradient checks then cover this composite op
        SampleInput((g(r(32, 64, device=device)), g(r(64, device=device))),
                    name="32x64, weight (64,)"),
        SampleInput((r(512, 1024, device=device), r(512, 1024, device=device)),
                    name="512x1024, elementwise weight"),
        SampleInput((r(1024, 4096, device=device), r(4096, device=device)),
                    name="1024x4096, weight (4096,)"),
        SampleInput((g(r(64, 32, device=device).t()), g(r(64, device=device))),
                    name="32x64 transposed view, weight (64,)"),
        SampleInput((r(0, 64, device=device), r(64, device=device)), name="0x64 (empty batch)"),
    ]


# -- rms_norm: explicit autograd formula ---------------------------------------------------------

def check_rms_norm(x, weight):
    """The inputs ``example::rms_norm`` takes, checked by every kernel and the fake kernel alike
    (so eager calls, fake tensors and ``tensorplay.compile`` refuse the same inputs with the same
    words): ``TypeError`` for a non-floating ``x`` or ``weight``, ``ValueError`` for a 0-d ``x``
    or a ``weight`` whose shape is not ``(H,)``. Returns the result dtype."""
    _need_floating("example::rms_norm", "x", x)
    _need_floating("example::rms_norm", "weight", weight)
    if x.ndim == 0:
        raise ValueError("example::rms_norm: x must have at least one dimension (..., H), got a "
                         "0-d tensor")
    if tuple(weight.shape) != tuple(x.shape[-1:]):
        raise ValueError(f"example::rms_norm: weight must have shape {tuple(x.shape[-1:])} (the "
                         f"last dimension of x), got {tuple(weight.shape)}")
    return tensorplay.promote_types(x.dtype, weight.dtype)


def _opmath(t):
    """``t`` in float32 when it is float16/bfloat16 (squares of half values overflow: torch's
    norms compute in float32 too), else ``t``."""
    return t.float() if t.dtype in (tensorplay.float16, tensorplay.bfloat16) else t


@library.custom_op("example::rms_norm", mutates_args=())
def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """RMS normalisation over the last dimension: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    ``x``: (..., H) floating; ``weight``: (H,) floating, same device; result: ``x``'s shape, dtype
    ``promote_types(x, weight)``. float16/bfloat16 compute in float32 and round once. Raises
    ``TypeError`` for integer or bool inputs and ``ValueError`` for a 0-d ``x`` or another weight
    shape, eagerly and under ``tensorplay.compile`` alike.
    """
    dt = check_rms_norm(x, weight)
    xf, wf = _opmath(x), _opmath(weight)
    r = tensorplay.rsqrt((xf * xf).mean(-1, keepdim=True) + eps)
    return (xf * r * wf).to(dt)


@rms_norm.register_fake
def _(x, weight, eps=1e-6):
    return x.new_empty(x.shape, dtype=check_rms_norm(x, weight))


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(ctx, grad):
    # y = w * x * r with r = (mean(x^2) + eps)^-1/2 over the last dim (size H):
    #   dx = r * (g w) - x * r^3 * mean((g w) * x)     dw = sum over rows of g * x * r
    x, weight = ctx.saved_tensors
    x, weight, grad = _opmath(x), _opmath(weight), _opmath(grad)   # (cast back by the engine)
    r = tensorplay.rsqrt((x * x).mean(-1, keepdim=True) + ctx.eps)
    gw = grad * weight
    dx = gw * r - x * (r * r * r) * (gw * x).mean(-1, keepdim=True)
    dw = (grad * x * r).reshape(-1, x.shape[-1]).sum(0)
    return dx, dw, None


rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


@register_samples("example::rms_norm")
def _rms_norm_samples(device):
    r = tensorplay.randn
    return [
        SampleInput((r(32, 64, device=device), r(64, device=device)), name="32x64"),
        SampleInput((r(1024, 4096, device=device), r(4096, device=device)),
                    {"eps": 1e-5}, name="1024x4096, eps=1e-5"),
        SampleInput((r(4, 128, 768, device=device), r(768, device=device)), name="4x128x768"),
        SampleInput((r(64, 256, device=device, dtype=tensorplay.float64),
                     r(256, device=device, dtype=tensorplay.float64)), name="64x256 float64"),
        SampleInput((r(32, 96, device=device)[:, :64], r(64, device=device)),
                    name="32x64 column slice of 32x96"),
        SampleInput((r(0, 64, device=device), r(64, device=device)), name="0x64 (empty batch)"),
    ]


# -- gelu: composite (autograd from its tensorplay ops) -------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _need_floating(api, name, t):
    """``TypeError`` naming the op, the argument and its dtype unless ``t`` is floating. Called
    by the real and the fake kernel alike, so eager calls, fake tensors and ``tensorplay.compile``
    refuse the same inputs with the same words."""
    if not t.dtype.is_floating_point:
        raise TypeError(f"{api}: {name} must be a floating-point tensor, got {t.dtype} "
                        f"(convert it first, e.g. {name}.float())")


@library.custom_op("example::gelu", mutates_args=())
def gelu(x: Tensor) -> Tensor:
    """GELU, tanh approximation: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (same as
    ``torch.nn.functional.gelu(x, approximate="tanh")``). Any shape, floating dtype; the result
    has ``x``'s shape and dtype, laid out as ``x`` (torch's elementwise rule).

    Raises ``TypeError`` for an integer or bool ``x`` (torch's gelu refuses them too; without
    the check the arithmetic would promote them to float32, which the fake kernel cannot
    know)."""
    _need_floating("example::gelu", "x", x)
    inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + tensorplay.tanh(inner))


@gelu.register_fake
def _(x):
    _need_floating("example::gelu", "x", x)
    # elementwise ops lay their result out as their input (torch's rule): empty_like's default
    # (preserve_format) says the same
    return tensorplay.empty_like(x)


@register_samples("example::gelu")
def _gelu_samples(device):
    r = tensorplay.randn
    return [
        SampleInput((g(r(32, 64, device=device)),), name="32x64"),
        SampleInput((r(256, 4096, device=device),), name="256x4096"),
        SampleInput((g(r(128, 64, device=device).t()),), name="64x128 transposed view"),
        SampleInput((r(1024, 512, device=device).t(),), name="512x1024 transposed view"),
        SampleInput((r(0, 64, device=device),), name="0x64 (empty batch)"),
    ]


# -- softmax_cross_entropy ---------------------------------------------------------------------

_SCE = "example::softmax_cross_entropy"


def _check_sce(logits, target):
    """The metadata checks of ``softmax_cross_entropy``, shared by its kernel and its fake kernel
    so that eager calls and ``tensorplay.compile`` refuse the same arguments the same way."""
    if logits.ndim != 2 or target.shape != logits.shape[:1]:
        raise ValueError(f"{_SCE}: expected logits (N, C) and target (N,), got "
                         f"{tuple(logits.shape)} and {tuple(target.shape)}")
    _need_floating(_SCE, "logits", logits)
    if target.dtype is not tensorplay.int64:
        # torch's cross_entropy wants Long class indices too ("expected scalar type Long but
        # found Int"); accepting int32 only in eager would make compiled calls differ
        raise TypeError(f"{_SCE}: target must be int64 class indices, got {target.dtype} "
                        f"(convert it first: target.long())")


@library.custom_op("example::softmax_cross_entropy", mutates_args=())
def softmax_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """Mean cross-entropy of ``logits`` (N, C) floating against class indices ``target`` (N,)
    int64 in ``[0, C)``; returns a 0-d tensor of ``logits``' dtype (same as
    ``torch.nn.functional.cross_entropy`` with ``reduction="mean"``; there is no
    ``ignore_index``). Differentiable in ``logits``; N = 0 gives NaN, as in torch.

    Raises ``ValueError`` for other shapes, ``TypeError`` for non-floating ``logits`` or a
    ``target`` that is not int64 (eager and compiled alike), ``IndexError`` naming the first
    target outside ``[0, C)`` (torch: "Target 5 is out of bounds."; reading the values costs
    one device synchronisation per call)."""
    _check_sce(logits, target)
    c = logits.shape[-1]
    bad = (target < 0) | (target >= c)
    if bad.any().item():
        first = target[bad][0].item()
        raise IndexError(f"{_SCE}: target {first} is out of bounds for {c} classes (class "
                         f"indices must be in [0, {c}))")
    logp = tensorplay.log_softmax(logits, -1)
    classes = tensorplay.arange(c, device=logits.device)
    onehot = (target.unsqueeze(-1) == classes).to(logp.dtype)
    return -(onehot * logp).sum(-1).mean()


@softmax_cross_entropy.register_fake
def _(logits, target):
    _check_sce(logits, target)    # the values (the range of target) are checked when it runs
    return logits.new_empty(())


def _targets(n, c, device):
    return (tensorplay.rand(n, device=device) * c).to(tensorplay.int64).clamp(0, c - 1)


@register_samples("example::softmax_cross_entropy")
def _sce_samples(device):
    r = tensorplay.randn
    return [
        SampleInput((g(r(32, 10, device=device)), _targets(32, 10, device)), name="32x10"),
        SampleInput((r(256, 1000, device=device), _targets(256, 1000, device)), name="256x1000"),
        SampleInput((r(1024, 128, device=device) * 4, _targets(1024, 128, device)),
                    name="1024x128, wide logits"),
        SampleInput((g(r(10, 32, device=device).t()), _targets(32, 10, device)),
                    name="32x10 transposed logits"),
        # an empty batch: the mean of no rows is NaN, as in torch
        SampleInput((r(0, 10, device=device), _targets(0, 10, device)), name="0x10 (empty batch)"),
    ]


# -- add_relu_: a mutating op ---------------------------------------------------------------------

@library.custom_op("example::add_relu_", mutates_args=("x",))
def add_relu_(x: Tensor, y: Tensor) -> None:
    """In place: ``x = relu(x + y)``; ``y`` broadcasts to ``x``'s shape. Returns None. ``x`` is
    declared mutated, so ``tensorplay.compile`` treats calls as barriers and ``x._version`` is
    bumped on every call."""
    x.add_(y)
    x.relu_()


@add_relu_.register_fake
def _(x, y):
    return None


@register_samples("example::add_relu_")
def _add_relu_samples(device):
    r = tensorplay.randn
    return [
        SampleInput((r(32, 64, device=device), r(64, device=device)), name="32x64 + (64,)"),
        SampleInput((r(1024, 1024, device=device), r(1024, 1024, device=device)),
                    name="1024x1024 + 1024x1024"),
        SampleInput((r(64, 32, device=device).t(), r(64, device=device)),
                    name="32x64 transposed x + (64,)"),
        SampleInput((r(0, 64, device=device), r(64, device=device)), name="0x64 + (64,)"),
    ]
