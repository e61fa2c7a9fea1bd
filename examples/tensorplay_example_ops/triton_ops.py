"""Triton ops of the example pack (``tensorplay.library.triton_op``), imported by the pack's
``tensorplay_register_ops`` hook when present.

Cheap to import: no triton here. The ``@triton.jit`` kernels live in ``triton_kernels`` and are
imported by the first call of one of these ops (``_kernels()``). The ops are defined only when
``triton`` and ``tensorplay-triton`` are installed (``AVAILABLE``; ``UNAVAILABLE_REASON`` says why
not otherwise).

============================================ =====================================================
op                                           what
============================================ =====================================================
``fused_add_mul_relu(x, y, scale=1.0)``      ``relu((x + y) * scale)`` in one kernel;
                                             explicit autograd formula
``fused_add_mul_relu_out(x, y, scale, out)`` the same written into ``out`` (declared mutated,
                                             ``mutates_args=("out",)``; any layout, written
                                             through its strides), returns nothing
``softmax_rows(x)``                          softmax over the last dimension, one program per
                                             row; explicit autograd formula
============================================ =====================================================

None registers a fake kernel: a ``triton_op``'s body run on fake tensors (launches skipped by
``wrap_triton``) is its fake kernel, and ``tensorplay check`` verifies that it matches the real
outputs (``test_faketensor``).

Where the kernels run -- per call, from the tensors' device (``tensorplay-triton``'s rule), with no
environment variable needed and whatever was imported first:

* cpu tensors: Triton's interpreter (so CI machines without a GPU run and check these ops);
* cuda tensors: the compiled kernels (unless ``TRITON_INTERPRET=1`` was set when
  ``triton_kernels`` was imported: then they are interpreted there too, through host copies).
"""

from __future__ import annotations

import importlib.util
import os
import threading

import tensorplay
from tensorplay import library
from tensorplay.plugins import SampleInput

from ._samples import register_samples

Tensor = tensorplay.Tensor

__all__ = ["AVAILABLE", "UNAVAILABLE_REASON", "kernels_interpreted"]


def _missing() -> str | None:
    for mod, dist in (("triton", "triton"), ("tensorplay_triton", "tensorplay-triton")):
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{dist} is not installed (pip install tensorplay-triton)"
    return None


UNAVAILABLE_REASON = _missing()
AVAILABLE = UNAVAILABLE_REASON is None

_K: list = []
_lock = threading.Lock()


def _truthy(v) -> bool:
    return (v or "").strip().lower() in ("1", "true", "on", "yes")


def _will_interpret() -> bool:
    """Whether the kernels were (or, once imported, will be) decorated for the interpreter only."""
    if _K:
        return _K[0].interpreted
    return _truthy(os.environ.get("TRITON_INTERPRET"))


def kernels_interpreted(device="cpu") -> bool:
    """True when the Triton kernels of this pack run through Triton's interpreter on ``device``
    (``"cpu"``: always; ``"cuda"``: only if ``TRITON_INTERPRET=1`` was set when they were loaded)."""
    return tensorplay.device(device).type == "cpu" or _will_interpret()


class _Kernels:
    """The wrapped kernels, loaded once."""

    def __init__(self, tk, interpreted):
        self.fused = library.wrap_triton(tk.fused_add_mul_relu_kernel)
        self.softmax = library.wrap_triton(tk.softmax_rows_kernel)
        self.interpreted = interpreted
        self.module = tk


def _kernels() -> _Kernels:
    if _K:
        return _K[0]
    with _lock:
        if _K:
            return _K[0]
        from . import triton_kernels as tk
        k = _Kernels(tk, interpreted=None)
        k.interpreted = bool(k.fused.interpreted)
        _K.append(k)
        return k


def _check_pair(api, x, y):
    if x.shape != y.shape:
        raise ValueError(f"{api}: x and y must have the same shape, got {tuple(x.shape)} and "
                         f"{tuple(y.shape)} (broadcast first: y.expand(x.shape).contiguous())")
    if x.dtype != y.dtype:
        raise TypeError(f"{api}: x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{api}: expected floating-point tensors, got {x.dtype}")


def _check_out(api, x, y, out):
    """The argument checks of an out-variant, in order, each with its message."""
    _check_pair(api, x, y)
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"{api}: out must have shape {tuple(x.shape)} and dtype {x.dtype}, "
                         f"got {tuple(out.shape)} {out.dtype}")


def _contig(t):
    return t if t.is_contiguous() else t.contiguous()


_BLOCK = 1024     # elements per program of the fused kernel


def _launch_fused(x, y, scale, out):
    n = x.numel()
    if n == 0:
        return
    _kernels().fused[((n + _BLOCK - 1) // _BLOCK,)](x, y, out, float(scale), n, BLOCK_SIZE=_BLOCK)


if AVAILABLE:
    # -- fused_add_mul_relu ----------------------------------------------------------------------

    @library.triton_op("example::fused_add_mul_relu", mutates_args=())
    def fused_add_mul_relu(x: Tensor, y: Tensor, scale: float = 1.0) -> Tensor:
        """``relu((x + y) * scale)`` in one Triton kernel (1024 elements per program).

        ``x`` and ``y``: same shape, same floating dtype, one device. Returns a new contiguous
        tensor. Differentiable (explicit formula).
        """
        _check_pair("example::fused_add_mul_relu", x, y)
        x, y = _contig(x), _contig(y)
        out = tensorplay.empty(x.shape, dtype=x.dtype, device=x.device)
        _launch_fused(x, y, scale, out)
        return out

    def _fused_setup(ctx, inputs, output):
        ctx.scale = inputs[2] if len(inputs) > 2 else 1.0
        ctx.save_for_backward(output)

    def _fused_backward(ctx, grad):
        (out,) = ctx.saved_tensors
        g = grad * (out > 0).to(grad.dtype) * ctx.scale
        return g, g, None

    fused_add_mul_relu.register_autograd(_fused_backward, setup_context=_fused_setup)

    # -- fused_add_mul_relu_out: mutates a declared argument -----------------------------------

    @library.triton_op("example::fused_add_mul_relu_out", mutates_args=("out",))
    def fused_add_mul_relu_out(x: Tensor, y: Tensor, scale: float, out: Tensor) -> None:
        """Write ``relu((x + y) * scale)`` into ``out`` (declared mutated); returns nothing.

        ``x``, ``y``: same shape, same floating dtype; ``out``: ``x``'s shape and dtype, any
        layout (as torch's ``out=`` ops): a contiguous ``out`` is written by the kernel directly,
        any other (a transposed view, a column slice) through its strides, via one contiguous
        scratch tensor and ``out.copy_`` (one extra pass). Raises ``ValueError``/``TypeError``
        for wrong shapes or dtypes and ``RuntimeError`` for an ``out`` whose elements share
        memory (an ``expand``ed tensor), as torch does. An ``out`` that is a leaf requiring grad
        (or a view of one) is written and stays a leaf (``custom_op``'s rule for written
        arguments, same as torch.library.custom_op). Not differentiable: a non-leaf ``out`` that
        requires grad (any layout) gets a history whose backward raises naming the op.
        """
        shape, dt = x.shape, x.dtype
        # one combined test on the per-call path; the checks in order (and their messages) only
        # when it fails
        if y.shape != shape or out.shape != shape or y.dtype != dt or out.dtype != dt or \
                not dt.is_floating_point:
            _check_out("example::fused_add_mul_relu_out", x, y, out)
        n = x.numel()
        if n:
            # the kernel writes n consecutive elements from out's first one: a strided out gets
            # them through a contiguous scratch copy
            dst = out if out.is_contiguous() else tensorplay.empty(shape, dtype=dt,
                                                                     device=out.device)
            _kernels().fused[((n + _BLOCK - 1) // _BLOCK,)](
                x if x.is_contiguous() else x.contiguous(),
                y if y.is_contiguous() else y.contiguous(), dst, float(scale), n,
                BLOCK_SIZE=_BLOCK)
            if dst is not out:
                # dst came from a launch (no history): a copy recorded under grad would give
                # out a history with no path to x and y (silently zero gradients); unrecorded,
                # out is written outside the graph like the contiguous case, and gets the
                # history whose backward raises naming the op
                with tensorplay.no_grad():
                    out.copy_(dst)

    # -- softmax_rows ---------------------------------------------------------------------------

    @library.triton_op("example::softmax_rows", mutates_args=())
    def softmax_rows(x: Tensor) -> Tensor:
        """Softmax over the last dimension (one Triton program per row, float32 accumulation).

        Any rank >= 1 and floating dtype; returns a new contiguous tensor of ``x``'s shape.
        Differentiable (explicit formula: ``dx = y * (g - sum(g * y, -1))``).
        """
        if x.ndim < 1:
            raise ValueError("example::softmax_rows: expected a tensor with at least 1 dimension")
        if not x.dtype.is_floating_point:
            raise TypeError(f"example::softmax_rows: expected a floating-point tensor, got {x.dtype}")
        x = _contig(x)
        out = tensorplay.empty(x.shape, dtype=x.dtype, device=x.device)
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols if n_cols else 0
        if n_rows:
            block = 1 << max(0, (n_cols - 1).bit_length())
            _kernels().softmax[(n_rows,)](out, x, n_cols, n_cols, n_cols, BLOCK_SIZE=block)
        return out

    def _softmax_setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def _softmax_backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(-1, keepdim=True))

    softmax_rows.register_autograd(_softmax_backward, setup_context=_softmax_setup)

    __all__ += ["fused_add_mul_relu", "fused_add_mul_relu_out", "softmax_rows"]

    # -- sample inputs (small when interpreted: ~0.7 ms per program instance) -------------------

    def _wanted(device) -> bool:
        return tensorplay.device(device).type in ("cpu", "cuda")

    def _big(device) -> bool:
        return tensorplay.device(device).type == "cuda" and not _will_interpret()

    @register_samples("example::fused_add_mul_relu")
    def _fused_samples(device):
        if not _wanted(device):
            return []
        r = tensorplay.randn
        if _big(device):
            return [SampleInput((r(1024, 4096, device=device), r(1024, 4096, device=device)),
                                {"scale": 0.5}, name="1024x4096, scale=0.5"),
                    SampleInput((r(32, 64, device=device, dtype=tensorplay.float16),
                                 r(32, 64, device=device, dtype=tensorplay.float16)),
                                name="32x64 float16"),
                    SampleInput((r(512, 1024, device=device).t(), r(1024, 512, device=device)),
                                {"scale": 2.0}, name="1024x512 transposed x")]
        return [SampleInput((r(32, 64, device=device), r(32, 64, device=device)), {"scale": 0.5},
                            name="32x64, scale=0.5"),
                SampleInput((r(1000, device=device), r(1000, device=device)), name="(1000,)"),
                SampleInput((r(16, 8, device=device).t(), r(8, 16, device=device)),
                            {"scale": 2.0}, name="8x16 transposed x")]

    @register_samples("example::fused_add_mul_relu_out")
    def _fused_out_samples(device):
        if not _wanted(device):
            return []
        r = tensorplay.randn
        shape = (1024, 4096) if _big(device) else (32, 64)
        return [SampleInput((r(*shape, device=device), r(*shape, device=device), 1.5,
                             tensorplay.empty(shape, device=device)),
                            name=f"{shape[0]}x{shape[1]} into out"),
                SampleInput((r(*shape, device=device), r(*shape, device=device), 0.5,
                             tensorplay.empty(shape[::-1], device=device).t()),
                            name=f"{shape[0]}x{shape[1]} into a transposed out")]

    @register_samples("example::softmax_rows")
    def _softmax_samples(device):
        if not _wanted(device):
            return []
        r = tensorplay.randn
        if _big(device):
            return [SampleInput((r(1024, 4096, device=device),), name="1024x4096"),
                    SampleInput((r(32, 128, 1000, device=device),), name="32x128x1000"),
                    SampleInput((r(64, 256, device=device, dtype=tensorplay.float16),),
                                name="64x256 float16")]
        return [SampleInput((r(8, 100, device=device),), name="8x100"),
                SampleInput((r(2, 3, 33, device=device),), name="2x3x33"),
                SampleInput((r(40, 6, device=device).t(),), name="6x40 transposed view")]
