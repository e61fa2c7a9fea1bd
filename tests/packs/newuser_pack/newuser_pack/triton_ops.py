"""A Triton forward with its own Triton backward kernel (``tensorplay.library.triton_op`` +
``wrap_triton``): ``scale_add(x, y, alpha) = alpha * x + y``. The ``@triton.jit`` kernels live in
``triton_kernels`` and are imported on the first call (on a machine without a GPU they run in
Triton's interpreter: ``TRITON_INTERPRET=1``)."""

from __future__ import annotations

import importlib.util

import tensorplay as tp
from tensorplay import library
from tensorplay.plugins import SampleInput

from ._samples import samples

Tensor = tp.Tensor
AVAILABLE = all(importlib.util.find_spec(m) is not None for m in ("triton", "tensorplay_triton"))
BLOCK = 64


def _k():
    from . import triton_kernels as tk
    return library.wrap_triton(tk.scale_add_kernel), library.wrap_triton(tk.scale_kernel)


if AVAILABLE:
    @library.triton_op("newuser::scale_add", mutates_args=())
    def scale_add(x: Tensor, y: Tensor, alpha: float = 1.0) -> Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = tp.empty(x.shape, dtype=x.dtype, device=x.device)
        n = x.numel()
        fwd, _ = _k()
        fwd[(max(1, -(-n // BLOCK)),)](x, y, out, alpha, n, BLOCK_SIZE=BLOCK)
        return out

    def _setup(ctx, inputs, output):
        ctx.alpha = inputs[2]

    def _backward(ctx, g):
        g = g.contiguous()
        dx = tp.empty(g.shape, dtype=g.dtype, device=g.device)
        n = g.numel()
        _, scale = _k()
        scale[(max(1, -(-n // BLOCK)),)](g, dx, ctx.alpha, n, BLOCK_SIZE=BLOCK)
        return dx, g.clone(), None

    scale_add.register_autograd(_backward, setup_context=_setup)

    @samples("newuser::scale_add")
    def _(device):
        r = tp.randn
        return [SampleInput((r(4, 8), r(4, 8)), {"alpha": 0.5}, name="4x8"),
                SampleInput((r(8, 4).t(), r(4, 8)), name="4x8 transposed x"),
                SampleInput((r(0, 8), r(0, 8)), name="0x8")]
