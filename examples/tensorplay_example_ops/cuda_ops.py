"""CUDA kernels of the example pack (CuPy), imported by the pack's ``tensorplay_register_ops`` hook.

Cheap to import: no CuPy or numpy here. ``cuda_kernels`` (which imports CuPy) is loaded by a
kernel's first call, and its CuPy kernels are compiled by NVRTC on their first launch.

* ``example::bias_gelu(x, bias)`` -- new op: ``gelu(x + bias)`` (tanh approximation) with
  ``bias`` broadcasting against ``x``. Its ``cuda`` kernel is a ``cupy.ElementwiseKernel``; every
  other device uses the device-agnostic kernel written with tensorplay ops. It has a fake kernel
  and an explicit autograd formula (tensorplay ops, so the same formula serves cpu and cuda).
* ``example::rms_norm`` (defined in ``ops``) gains a ``cuda`` kernel: a ``cupy.RawKernel`` with
  one thread block per row. Its autograd formula and fake kernel are the ones from ``ops``.

Both cuda kernels run on the GPU of their tensor arguments (``tensorplay_cuda.device_of``) and on
CuPy's current stream of that GPU.
"""

from __future__ import annotations

import math

import tensorplay
from tensorplay import library
from tensorplay.plugins import SampleInput

from ._samples import register_samples
from .ops import check_rms_norm, rms_norm

__all__ = ["bias_gelu"]

Tensor = tensorplay.Tensor

_C = math.sqrt(2.0 / math.pi)
_A = 0.044715


def _broadcast(a, b, api):
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise ValueError(f"{api}: shapes {tuple(a)} and {tuple(b)} do not broadcast "
                             f"(dimension -{i}: {x} vs {y})")
        out.append(max(x, y) if 1 not in (x, y) else x * y)
    return tuple(reversed(out))


def _same_cuda_device(api, a, b):
    if a.device is not b.device:        # devices are interned
        raise RuntimeError(f"{api}: expected all tensors on one device, found {a.device} and "
                           f"{b.device}; move them with .to({str(a.device)!r}) first")


_MODS: list = []


def _cuda():
    """``(tensorplay_cuda, cuda_kernels)``, imported on the first cuda call (CuPy comes with)."""
    if not _MODS:
        import tensorplay_cuda

        from . import cuda_kernels
        _MODS[:] = [tensorplay_cuda, cuda_kernels]
    return _MODS


_NATIVE: dict = {}


def _native(dtype):
    n = _NATIVE.get(dtype)
    if n is None:
        import numpy
        n = _NATIVE[dtype] = numpy.dtype(dtype.name)
    return n


# -- bias_gelu -------------------------------------------------------------------------------------

@library.custom_op("example::bias_gelu", mutates_args=())
def bias_gelu(x: Tensor, bias: Tensor) -> Tensor:
    """``gelu(x + bias)``, tanh approximation (``torch.nn.functional.gelu(x + bias,
    approximate="tanh")``): the fused bias + activation of a transformer MLP.

    ``x``: (..., H) floating; ``bias``: any shape broadcasting against ``x`` (usually (H,)),
    floating, same device. Result: the broadcast shape, dtype ``promote_types(x, bias)``,
    contiguous. On cuda it is one ``cupy.ElementwiseKernel`` launch; elsewhere tensorplay ops.
    """
    _need_floating_pair(x, bias)
    u = x + bias
    # contiguous on every device, as the cuda kernel's result and the fake kernel say
    # (elementwise ops lay their result out as their inputs: a transposed x gives a transposed u)
    return (0.5 * u * (1.0 + tensorplay.tanh(_C * (u + _A * u * u * u)))).contiguous()


def _need_floating_pair(x, bias):
    """``TypeError`` unless both are floating: checked by every kernel and the fake kernel
    alike, so eager calls refuse what ``tensorplay.compile`` refuses (torch's gelu takes no
    integers)."""
    if not (x.dtype.is_floating_point and bias.dtype.is_floating_point):
        raise TypeError(f"example::bias_gelu: x and bias must be floating, got {x.dtype} and "
                        f"{bias.dtype}")


@bias_gelu.register_fake
def _(x, bias):
    _need_floating_pair(x, bias)
    shape = _broadcast(x.shape, bias.shape, "example::bias_gelu")
    return x.new_empty(shape, dtype=tensorplay.promote_types(x.dtype, bias.dtype))


@bias_gelu.register_kernel("cuda")
def _bias_gelu_cuda(x, bias):
    tc, ck = _cuda()
    _same_cuda_device("example::bias_gelu", x, bias)
    _need_floating_pair(x, bias)
    dx, db = x.dtype, bias.dtype
    dt = dx if dx is db else tensorplay.promote_types(dx, db)
    with tc.device_of(x):
        out = ck.bias_gelu(tc.as_cupy(x), tc.as_cupy(bias), _native(dt))
        return tc.from_cupy(out)


def _bias_gelu_setup(ctx, inputs, output):
    x, bias = inputs
    ctx.save_for_backward(x, bias)


def _bias_gelu_backward(ctx, grad):
    # y = 0.5 u (1 + t), t = tanh(c (u + a u^3)):  dy/du = 0.5 (1 + t) + 0.5 u (1 - t^2) c (1 + 3a u^2)
    x, bias = ctx.saved_tensors
    u = x + bias
    t = tensorplay.tanh(_C * (u + _A * u * u * u))
    du = 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * _C * (1.0 + 3.0 * _A * u * u)
    gu = grad * du
    gx = gu.sum_to_size(x.shape) if ctx.needs_input_grad[0] else None
    gb = gu.sum_to_size(bias.shape) if ctx.needs_input_grad[1] else None
    if gx is not None and gx.dtype is not x.dtype:
        gx = gx.to(x.dtype)
    if gb is not None and gb.dtype is not bias.dtype:
        gb = gb.to(bias.dtype)
    return gx, gb


bias_gelu.register_autograd(_bias_gelu_backward, setup_context=_bias_gelu_setup)


@register_samples("example::bias_gelu")
def _bias_gelu_samples(device):
    r = tensorplay.randn
    return [
        SampleInput((r(32, 64, device=device), r(64, device=device)), name="32x64 + (64,)"),
        SampleInput((r(256, 4096, device=device), r(4096, device=device)),
                    name="256x4096 + (4096,)"),
        SampleInput((r(1024, 512, device=device).t(), r(1024, device=device)),
                    name="512x1024 transposed view + (1024,)"),
        SampleInput((r(8, 16, 32, device=device, dtype=tensorplay.float64),
                     r(16, 1, device=device, dtype=tensorplay.float64)),
                    name="8x16x32 float64 + (16, 1)"),
        SampleInput((r(0, 64, device=device), r(64, device=device)), name="0x64 + (64,)"),
    ]


# -- rms_norm: a RawKernel for cuda ------------------------------------------------------------------

@rms_norm.register_kernel("cuda")
def _rms_norm_cuda(x, weight, eps=1e-6):
    tc, ck = _cuda()
    _same_cuda_device("example::rms_norm", x, weight)
    dt = check_rms_norm(x, weight)
    with tc.device_of(x):
        out = ck.rms_norm(tc.as_cupy(x), tc.as_cupy(weight), float(eps), _native(dt))
        return tc.from_cupy(out)
