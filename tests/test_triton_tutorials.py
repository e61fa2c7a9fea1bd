"""Triton's own tutorial kernels, copied unchanged, as ``tensorplay.library.triton_op``s.

The kernels below come from Triton's tutorials (``python/tutorials/`` of
https://github.com/triton-lang/triton): 01 vector add, 02 fused softmax, 03 matrix multiplication
(autotuned), 04 low-memory (seeded) dropout, 05 layer norm (forward and backward). Only the host
code around them is ours: each is wrapped as a ``triton_op`` (its body is its own fake kernel),
layer norm gets its tutorial backward through ``register_autograd``, and every op is checked
against a NumPy reference and with ``tensorplay.library.opcheck``.

On cpu this runs in CI with **no environment variable set**: ``wrap_triton`` runs cpu launches
through Triton's interpreter (sizes are tiny: ~0.7 ms per program instance). The ``cuda`` variant
(``@pytest.mark.cuda``) runs the same ops compiled on a GPU and prints per-op times against the
same kernel launched raw (``kernel[grid](...)`` through ``tensorplay_triton.install_driver()``).

The tutorial kernels are:

    Copyright 2018-2020 Philippe Tillet
    Copyright 2020-2022 OpenAI

    Permission is hereby granted, free of charge, to any person obtaining
    a copy of this software and associated documentation files
    (the "Software"), to deal in the Software without restriction,
    including without limitation the rights to use, copy, modify, merge,
    publish, distribute, sublicense, and/or sell copies of the Software,
    and to permit persons to whom the Software is furnished to do so,
    subject to the following conditions:

    The above copyright notice and this permission notice shall be
    included in all copies or substantial portions of the Software.

    THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
    EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
    MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
    IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY
    CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT,
    TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
    SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""
# ruff: noqa  -- the tutorial kernels are kept exactly as Triton wrote them (no lint rewrites)

from __future__ import annotations

import os
import time

import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
import triton.language as tl  # noqa: E402
from tensorplay import library  # noqa: E402
from tensorplay.library import triton_op, wrap_triton  # noqa: E402

Tensor = tensorplay.Tensor
_INTERPRET_ENV = os.environ.get("TRITON_INTERPRET")


# ================================================================================================
# Triton tutorial kernels (unchanged; MIT notice above)

# --- 01-vector-add.py ---------------------------------------------------------------------------

@triton.jit
def add_kernel(x_ptr,  # *Pointer* to first input vector.
               y_ptr,  # *Pointer* to second input vector.
               output_ptr,  # *Pointer* to output vector.
               n_elements,  # Size of the vector.
               BLOCK_SIZE: tl.constexpr,  # Number of elements each program should process.
               # NOTE: `constexpr` so it can be used as a shape value.
               ):
    # There are multiple 'programs' processing different data. We identify which program
    # we are here:
    pid = tl.program_id(axis=0)  # We use a 1D launch grid so axis is 0.
    # This program will process inputs that are offset from the initial data.
    # For instance, if you had a vector of length 256 and block_size of 64, the programs
    # would each access the elements [0:64, 64:128, 128:192, 192:256].
    # Note that offsets is a list of pointers:
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # Create a mask to guard memory operations against out-of-bounds accesses.
    mask = offsets < n_elements
    # Load x and y from DRAM, masking out any extra elements in case the input is not a
    # multiple of the block size.
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    # Write x + y back to DRAM.
    tl.store(output_ptr + offsets, output, mask=mask)


# --- 02-fused-softmax.py ------------------------------------------------------------------------

@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    # starting row of the program
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        # The stride represents how much we need to increase the pointer to advance 1 row
        row_start_ptr = input_ptr + row_idx * input_row_stride
        # The block size is the next power of two greater than n_cols, so we can fit each
        # row in a single block
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        # Load the row into SRAM, using a mask since BLOCK_SIZE may be > than n_cols
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        # Subtract maximum for numerical stability
        row_minus_max = row - tl.max(row, axis=0)
        # Note that exponentiation in Triton is fast but approximate (i.e., think __expf in CUDA)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        # Write back output to DRAM
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


# --- 03-matrix-multiplication.py ----------------------------------------------------------------

def get_cuda_autotune_config():
    # The tutorial's fp16 configs (its list goes on with eight more "good config for fp8 inputs",
    # left out: these ops take fp16, and each config costs an autotuning run on the interpreter).
    return [
        triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 64, 'GROUP_SIZE_M': 8}, num_stages=3,
                      num_warps=8),
        triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 256, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                      num_warps=4),
        triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                      num_warps=4),
        triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                      num_warps=4),
        triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                      num_warps=4),
        triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4,
                      num_warps=4),
        triton.Config({'BLOCK_SIZE_M': 64, 'BLOCK_SIZE_N': 32, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=5,
                      num_warps=2),
        triton.Config({'BLOCK_SIZE_M': 32, 'BLOCK_SIZE_N': 64, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=5,
                      num_warps=2),
    ]


@triton.autotune(
    configs=get_cuda_autotune_config(),
    key=['M', 'N', 'K'],
)
@triton.jit
def matmul_kernel(
        # Pointers to matrices
        a_ptr, b_ptr, c_ptr,
        # Matrix dimensions
        M, N, K,
        # The stride variables represent how much to increase the ptr by when moving by 1
        # element in a particular dimension. E.g. `stride_am` is how much to increase `a_ptr`
        # by to get the element one row down (A has M rows).
        stride_am, stride_ak,  #
        stride_bk, stride_bn,  #
        stride_cm, stride_cn,
        # Meta-parameters
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,  #
        GROUP_SIZE_M: tl.constexpr,  #
        ACTIVATION: tl.constexpr  #
):
    """Kernel for computing the matmul C = A x B.
    A has shape (M, K), B has shape (K, N) and C has shape (M, N)
    """
    # -----------------------------------------------------------
    # Map program ids `pid` to the block of C it should compute.
    # This is done in a grouped ordering to promote L2 data reuse.
    # See above `L2 Cache Optimizations` section for details.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # ----------------------------------------------------------
    # Create pointers for the first blocks of A and B.
    # We will advance this pointer as we move in the K direction
    # and accumulate
    # `a_ptrs` is a block of [BLOCK_SIZE_M, BLOCK_SIZE_K] pointers
    # `b_ptrs` is a block of [BLOCK_SIZE_K, BLOCK_SIZE_N] pointers
    # See above `Pointer Arithmetic` section for details
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # -----------------------------------------------------------
    # Iterate to compute a block of the C matrix.
    # We accumulate into a `[BLOCK_SIZE_M, BLOCK_SIZE_N]` block
    # of fp32 values for higher accuracy.
    # `accumulator` will be converted back to fp16 after the loop.
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        # Load the next block of A and B, generate a mask by checking the K dimension.
        # If it is out of bounds, set it to 0.
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        # We accumulate along the K dimension.
        accumulator = tl.dot(a, b, accumulator)
        # Advance the ptrs to the next K block.
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    # You can fuse arbitrary activation functions here
    # while the accumulator is still in FP32!
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    # -----------------------------------------------------------
    # Write back the block of the output matrix C with masks.
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


# We can fuse `leaky_relu` by providing it as an `ACTIVATION` meta-parameter in `matmul_kernel`.
@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


# --- 04-low-memory-dropout.py -------------------------------------------------------------------

@triton.jit
def _seeded_dropout(
    x_ptr,
    output_ptr,
    n_elements,
    p,
    seed,
    BLOCK_SIZE: tl.constexpr,
):
    # compute memory offsets of elements handled by this instance
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # load data from x
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    # randomly prune it
    random = tl.rand(seed, offsets)
    x_keep = random > p
    # write-back
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


# --- 05-layer-norm.py ---------------------------------------------------------------------------

@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Compute variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX,  # pointer to the input gradient
                             DY,  # pointer to the output gradient
                             DW,  # pointer to the partial sum of weights gradient
                             DB,  # pointer to the partial sum of biases gradient
                             X,  # pointer to the input
                             W,  # pointer to the weights
                             Mean,  # pointer to the mean
                             Rstd,  # pointer to the 1/std
                             Lock,  # pointer to the lock
                             stride,  # how much to increase the pointer when moving by 1 row
                             N,  # number of columns in X
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Map the program id to the elements of X, DX, and DY it should compute.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # Offset locks and weights/biases gradient pointer for parallel reduction
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    # Load data to SRAM
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # Compute dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    # Write dx
    tl.store(DX + cols, dx, mask=mask)
    # Accumulate partial sums for dw/db
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    # First store doesn't accumulate
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)

    # need a barrier to ensure all threads finished before
    # releasing the lock
    tl.debug_barrier()

    # Release the lock
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW,  # pointer to the partial sum of weights gradient
                         DB,  # pointer to the partial sum of biases gradient
                         FINAL_DW,  # pointer to the weights gradient
                         FINAL_DB,  # pointer to the biases gradient
                         M,  # GROUP_SIZE_M
                         N,  # number of columns
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Map the program id to the elements of DW and DB it should compute.
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    # Iterate through the rows of DW and DB to sum the partial sums.
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    # Write the final sum to the output.
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


# ================================================================================================
# The tutorials' host code as triton_ops (ours). Each body is its own fake kernel.

def _empty(shape, like, dtype=None):
    return tensorplay.empty(tuple(shape), dtype=dtype or like.dtype, device=like.device)


@triton_op("tut::add", mutates_args=())
def tut_add(x: Tensor, y: Tensor) -> Tensor:
    output = tensorplay.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )  # noqa: E731
    wrap_triton(add_kernel)[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


@triton_op("tut::softmax", mutates_args=())
def tut_softmax(x: Tensor) -> Tensor:
    x = x.contiguous()
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    y = tensorplay.empty_like(x)
    num_programs = min(4, n_rows)           # persistent programs, as the tutorial launches them
    wrap_triton(softmax_kernel)[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                                      BLOCK_SIZE, 2)
    return y


@triton_op("tut::matmul", mutates_args=())
def tut_matmul(a: Tensor, b: Tensor, activation: str = "") -> Tensor:
    if a.shape[1] != b.shape[0]:
        raise ValueError("tut::matmul: incompatible dimensions")
    a, b = a.contiguous(), b.contiguous()
    M, K = a.shape
    K, N = b.shape
    c = _empty((M, N), a, tensorplay.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), )  # noqa: E731
    wrap_triton(matmul_kernel)[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        ACTIVATION=activation)
    return c


@triton_op("tut::seeded_dropout", mutates_args=())
def tut_seeded_dropout(x: Tensor, p: float, seed: int) -> Tensor:
    x = x.contiguous()
    output = tensorplay.empty_like(x)
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )  # noqa: E731
    wrap_triton(_seeded_dropout)[grid](x, output, n_elements, p, seed, BLOCK_SIZE=1024)
    return output


def _ln_block(x):
    MAX_FUSED_SIZE = 65536 // x.element_size()
    N = x.shape[-1]
    BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N))
    if N > BLOCK_SIZE:
        raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
    return BLOCK_SIZE


@triton_op("tut::layer_norm", mutates_args=())
def tut_layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(y, mean, rstd)`` over the last dimension (the tutorial's forward)."""
    x = x.contiguous()
    y = tensorplay.empty_like(x)
    x_arg = x.reshape(-1, x.shape[-1])
    M, N = x_arg.shape
    mean = _empty((M,), x, tensorplay.float32)
    rstd = _empty((M,), x, tensorplay.float32)
    BLOCK_SIZE = _ln_block(x)
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    wrap_triton(_layer_norm_fwd_fused)[(M, )](x_arg, y, weight, bias, mean, rstd, x_arg.stride(0), N, eps,
                                              BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_ctas=1)
    return y, mean, rstd


@triton_op("tut::layer_norm_backward", mutates_args=())
def tut_layer_norm_backward(dy: Tensor, x: Tensor, w: Tensor, m: Tensor,
                            v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(dx, dw, db)``: the tutorial's backward (two kernels, lock-based partial sums)."""
    x, dy = x.contiguous(), dy.contiguous()
    N = w.shape[0]
    GROUP_SIZE_M = 64
    if N <= 8192: GROUP_SIZE_M = 96  # noqa: E701
    if N <= 4096: GROUP_SIZE_M = 128  # noqa: E701
    if N <= 1024: GROUP_SIZE_M = 256  # noqa: E701
    locks = tensorplay.zeros(2 * GROUP_SIZE_M, dtype=tensorplay.int32, device=w.device)
    _dw = tensorplay.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
    _db = tensorplay.zeros((GROUP_SIZE_M, N), dtype=x.dtype, device=w.device)
    dw = _empty((N,), w)
    db = _empty((N,), w)
    dx = tensorplay.empty_like(dy)
    x_arg = x.reshape(-1, x.shape[-1])
    M, N = x_arg.shape
    BLOCK_SIZE = _ln_block(x)
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    wrap_triton(_layer_norm_bwd_dx_fused)[(M, )](dx, dy, _dw, _db, x, w, m, v, locks, x_arg.stride(0), N,
                                                 BLOCK_SIZE_N=BLOCK_SIZE, GROUP_SIZE_M=GROUP_SIZE_M,
                                                 num_warps=num_warps)
    grid = lambda meta: (triton.cdiv(N, meta['BLOCK_SIZE_N']), )  # noqa: E731
    wrap_triton(_layer_norm_bwd_dwdb)[grid](_dw, _db, dw, db, min(GROUP_SIZE_M, M), N, BLOCK_SIZE_M=32,
                                            BLOCK_SIZE_N=128, num_ctas=1)
    return dx, dw, db


def _ln_setup(ctx, inputs, output):
    x, w, b, eps = inputs
    _, mean, rstd = output
    # statistics for the backward, not differentiable outputs (as torch's native_layer_norm):
    # the formula passes no gradient through them, and says so
    ctx.mark_non_differentiable(mean, rstd)
    ctx.save_for_backward(x, w, mean, rstd)


def _ln_backward(ctx, dy, dmean, drstd):
    x, w, m, v = ctx.saved_tensors
    dx, dw, db = tut_layer_norm_backward(dy, x, w, m, v)
    return dx, dw, db, None


tut_layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


# ================================================================================================
# NumPy references

def _np(t):
    return t.detach().cpu().numpy()


def _ln_ref(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    return xhat * w + b, mean[..., 0], rstd[..., 0], xhat


def _ln_grad_ref(x, w, b, eps, dy):
    _, _, rstd, xhat = _ln_ref(x, w, b, eps)
    wdy = w * dy
    n = x.shape[-1]
    c1 = (xhat * wdy).sum(-1, keepdims=True) / n
    c2 = wdy.sum(-1, keepdims=True) / n
    dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
    return dx, (dy * xhat).sum(0), dy.sum(0)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _t(a, device):
    return tensorplay.tensor(np.ascontiguousarray(a), device=device)


# ================================================================================================
# cpu: Triton's interpreter, in CI, no environment variable

def _cpu():
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return "cpu"


def _need_no_env():
    if _INTERPRET_ENV is not None:
        pytest.skip("TRITON_INTERPRET is set in this process's environment; these tests prove that "
                    "nothing needs it")


def test_no_environment_variable_and_kernels_are_plain_jit():
    _need_no_env()
    from triton.runtime.jit import JITFunction
    assert "TRITON_INTERPRET" not in os.environ
    assert type(add_kernel) is JITFunction and type(matmul_kernel.fn) is JITFunction


def test_vector_add_on_cpu():
    d = _cpu()
    r = _rng(1)
    for n in (1, 1000, 2500):
        a, b = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(_np(tut_add(_t(a, d), _t(b, d))), a + b, rtol=1e-6)


def test_fused_softmax_on_cpu():
    d = _cpu()
    x = _rng(2).standard_normal((7, 33)).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(_np(tut_softmax(_t(x, d))), e / e.sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_autotuned_matmul_on_cpu(activation):
    d = _cpu()
    r = _rng(3)
    a = r.standard_normal((20, 24)).astype(np.float16)
    b = r.standard_normal((24, 40)).astype(np.float16)
    c = _np(tut_matmul(_t(a, d), _t(b, d), activation))
    ref = a.astype(np.float32) @ b.astype(np.float32)
    if activation:
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    assert c.dtype == np.float16
    np.testing.assert_allclose(c.astype(np.float32), ref, atol=2e-2, rtol=1e-2)
    assert matmul_kernel.best_config is not None          # autotuning ran (on the host clock)


def test_seeded_dropout_on_cpu():
    d = _cpu()
    x = _rng(4).standard_normal(300).astype(np.float32) + 3.0     # no zero in x
    out1 = _np(tut_seeded_dropout(_t(x, d), 0.5, 123))
    out2 = _np(tut_seeded_dropout(_t(x, d), 0.5, 123))
    out3 = _np(tut_seeded_dropout(_t(x, d), 0.5, 512))
    np.testing.assert_array_equal(out1, out2)                 # same seed: same mask
    assert (out1 != out3).any()                               # another seed: another mask
    kept = out1 != 0
    np.testing.assert_allclose(out1[kept], x[kept] / 0.5, rtol=1e-6)
    assert 0.3 < kept.mean() < 0.7


def test_layer_norm_forward_backward_on_cpu():
    d = _cpu()
    r = _rng(5)
    M, N, eps = 6, 40, 1e-5
    x = (-2.3 + 0.5 * r.standard_normal((M, N))).astype(np.float32)
    w = r.random(N).astype(np.float32)
    b = r.random(N).astype(np.float32)
    dy = (0.1 * r.standard_normal((M, N))).astype(np.float32)
    xt = _t(x, d).requires_grad_()
    wt = _t(w, d).requires_grad_()
    bt = _t(b, d).requires_grad_()
    y, mean, rstd = tut_layer_norm(xt, wt, bt, eps)
    y_ref, mean_ref, rstd_ref, _ = _ln_ref(x, w, b, eps)
    np.testing.assert_allclose(_np(y), y_ref, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(_np(mean), mean_ref, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(_np(rstd), rstd_ref, atol=1e-4, rtol=1e-5)
    y.backward(_t(dy, d))
    dx_ref, dw_ref, db_ref = _ln_grad_ref(x, w, b, eps, dy)
    np.testing.assert_allclose(_np(xt.grad), dx_ref, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(_np(wt.grad), dw_ref, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(_np(bt.grad), db_ref, atol=1e-4, rtol=1e-4)


def _samples(device):
    r = _rng(6)
    f32 = lambda *s: _t(r.standard_normal(s).astype(np.float32), device)  # noqa: E731
    f16 = lambda *s: _t(r.standard_normal(s).astype(np.float16), device)  # noqa: E731
    return [
        (tut_add, (f32(100), f32(100)), {}),
        (tut_softmax, (f32(5, 20),), {}),
        (tut_matmul, (f16(16, 32), f16(32, 16)), {"activation": ""}),
        (tut_seeded_dropout, (f32(64), 0.25, 7), {}),
        (tut_layer_norm, (f32(4, 24), f32(24), f32(24), 1e-5), {}),
    ]


# the tutorials give a backward only for layer norm: the others are checked without autograd
_NO_GRAD = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")


def _opcheck(op, args, kwargs):
    tests = "DEFAULT" if op is tut_layer_norm else _NO_GRAD
    return library.opcheck(op, args, kwargs, test_utils=tests)


@pytest.mark.parametrize("i", range(5), ids=["add", "softmax", "matmul", "dropout", "layer_norm"])
def test_opcheck_on_cpu(i):
    op, args, kwargs = _samples(_cpu())[i]
    assert _opcheck(op, args, kwargs) == {}


# ================================================================================================
# cuda: the same ops compiled (GPU machine; run with torch blocked), timed against raw launches

def _need_cuda():
    ok, why = tensorplay.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    return "cuda"


def _median_us(fn, sync, rounds=200):
    fn()
    sync()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - t0) * 1e6)
    return float(np.median(ts))


@pytest.mark.cuda
@pytest.mark.triton
def test_tutorial_ops_compiled_on_cuda_with_times():
    d = _need_cuda()
    import cupy
    import tensorplay_triton
    tensorplay_triton.install_driver()
    r = _rng(7)
    sync = cupy.cuda.get_current_stream().synchronize
    # correctness on the GPU (compiled)
    a, b = r.standard_normal(4096).astype(np.float32), r.standard_normal(4096).astype(np.float32)
    np.testing.assert_allclose(_np(tut_add(_t(a, d), _t(b, d))), a + b, rtol=1e-6)
    x = r.standard_normal((64, 781)).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(_np(tut_softmax(_t(x, d))), e / e.sum(-1, keepdims=True),
                               rtol=1e-4, atol=1e-6)
    ma = r.standard_normal((256, 256)).astype(np.float16)
    mb = r.standard_normal((256, 256)).astype(np.float16)
    np.testing.assert_allclose(_np(tut_matmul(_t(ma, d), _t(mb, d))).astype(np.float32),
                               ma.astype(np.float32) @ mb.astype(np.float32), atol=1e-1, rtol=1e-2)
    xs = r.standard_normal(4096).astype(np.float32) + 3
    o = _np(tut_seeded_dropout(_t(xs, d), 0.5, 123))
    np.testing.assert_array_equal(o, _np(tut_seeded_dropout(_t(xs, d), 0.5, 123)))
    M, N = 64, 512
    lx = (-2.3 + 0.5 * r.standard_normal((M, N))).astype(np.float32)
    lw, lb = r.random(N).astype(np.float32), r.random(N).astype(np.float32)
    dy = (0.1 * r.standard_normal((M, N))).astype(np.float32)
    xt, wt, bt = (_t(v, d).requires_grad_() for v in (lx, lw, lb))
    y, _, _ = tut_layer_norm(xt, wt, bt, 1e-5)
    np.testing.assert_allclose(_np(y), _ln_ref(lx, lw, lb, 1e-5)[0], atol=1e-4, rtol=1e-4)
    y.backward(_t(dy, d))
    dx_ref, dw_ref, db_ref = _ln_grad_ref(lx, lw, lb, 1e-5, dy)
    np.testing.assert_allclose(_np(xt.grad), dx_ref, atol=1e-3, rtol=1e-3)
    np.testing.assert_allclose(_np(wt.grad), dw_ref, atol=1e-3, rtol=1e-3)
    np.testing.assert_allclose(_np(bt.grad), db_ref, atol=1e-3, rtol=1e-3)
    for op, args, kwargs in _samples(d):
        assert _opcheck(op, args, kwargs) == {}, op
    # per-op time vs the same kernel launched raw (the CuPy driver; tensorplay tensors give Triton
    # data_ptr() and dtype directly on cuda)
    xa, xb = _t(a, d), _t(b, d)
    out = tensorplay.empty_like(xa)
    n = 4096
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)  # noqa: E731
    t_op = _median_us(lambda: tut_add(xa, xb), sync)
    t_raw = _median_us(lambda: add_kernel[grid](xa, xb, out, n, BLOCK_SIZE=1024), sync)
    sx = _t(x, d)
    sy = tensorplay.empty_like(sx)
    t_sop = _median_us(lambda: tut_softmax(sx), sync)
    t_sraw = _median_us(lambda: softmax_kernel[(4, 1, 1)](sy, sx, 781, 781, 64, 781, 1024, 2), sync)
    print(f"\nadd 4096: triton_op {t_op:.1f} us, raw {t_raw:.1f} us ({t_op / t_raw:.2f}x)"
          f"\nsoftmax 64x781: triton_op {t_sop:.1f} us, raw {t_sraw:.1f} us ({t_sop / t_sraw:.2f}x)")
