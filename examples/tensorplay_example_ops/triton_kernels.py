"""Triton kernels of the example pack (``@triton.jit``). Imports triton: loaded lazily by
``triton_ops`` on the first call of a Triton op, never by ``import tensorplay``.

Compiled or interpreted is decided per launch by ``tensorplay-triton`` from the tensors' device:
cpu tensors run through Triton's interpreter, cuda tensors run compiled (no environment variable
needed).
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["fused_add_mul_relu_kernel", "softmax_rows_kernel"]


@triton.jit
def fused_add_mul_relu_kernel(x_ptr, y_ptr, out_ptr, scale, n_elements,
                              BLOCK_SIZE: tl.constexpr):
    """``out = relu((x + y) * scale)`` over ``n_elements`` contiguous elements."""
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if x.dtype != tl.float64:          # compile-time: half types compute in float32
        x = x.to(tl.float32)
        y = y.to(tl.float32)
    r = tl.maximum((x + y) * scale, 0.0)
    tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_rows_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                        BLOCK_SIZE: tl.constexpr):
    """Softmax of each row (one program per row; ``BLOCK_SIZE >= n_cols``), computed in float32
    (float64 inputs in float64)."""
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    if x.dtype != tl.float64:          # compile-time: float16/bfloat16/float32 compute in float32
        x = x.to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
