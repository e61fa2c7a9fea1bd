"""RMSNorm and LayerNorm as Triton kernels (forward and backward), Triton-tutorial style.

Shared by ``benchmarks/bench_gpu_backward.py`` (timed on cuda against the same kernels under
``torch.autograd.Function``) and ``tests/test_triton_backward.py`` (checked on cpu through Triton's
interpreter against NumPy, and with ``opcheck``).

Rows are normalised over the last dimension; one program per row for the forward and the input
gradient (the whole row in one block: ``N <= 65536 // itemsize``), and one program per block of
``BLOCK_N`` columns for the weight/bias gradients (a loop over the rows: no atomics, no locks, the
same result on every run). Statistics are accumulated in float32.

* ``bwk::rms_norm(x, w, eps) -> (y, rstd)``: ``y = x * rstd * w``, ``rstd = 1/sqrt(mean(x^2) + eps)``
  (``rstd``: float32, one per row). Differentiable through ``bwk::rms_norm_backward(dy, x, w, rstd)
  -> (dx, dw)``.
* ``bwk::layer_norm(x, w, b, eps) -> (y, mean, rstd)``: differentiable through
  ``bwk::layer_norm_backward(dy, x, w, mean, rstd) -> (dx, dw, db)``.

``torch_functions()`` returns ``torch.autograd.Function`` wrappers of the very same kernels (for
the comparison; imports torch).
"""

from __future__ import annotations

import triton
import triton.language as tl

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

BLOCK_N_DW = 64      # columns per program of the weight-gradient kernels
BLOCK_M_DW = 32      # rows per loop step of the weight-gradient kernels


@triton.jit
def _rms_fwd(X, Y, W, RSTD, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _rms_bwd_dx(DY, X, W, RSTD, DX, stride, N, BLOCK: tl.constexpr):
    # dx = rstd * g - rstd^3 * x * sum(g * x) / N, with g = dy * w
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.).to(tl.float32)
    rstd = tl.load(RSTD + row)
    g = dy * w
    c = tl.sum(g * x, axis=0) / N
    dx = rstd * g - rstd * rstd * rstd * c * x
    tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit
def _rms_bwd_dw(DY, X, RSTD, DW, stride, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # dw[j] = sum_rows dy * x * rstd
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        rmask = rows < M
        mask = rmask[:, None] & cmask[None, :]
        offs = rows[:, None] * stride + cols[None, :]
        x = tl.load(X + offs, mask=mask, other=0.).to(tl.float32)
        dy = tl.load(DY + offs, mask=mask, other=0.).to(tl.float32)
        r = tl.load(RSTD + rows, mask=rmask, other=0.)
        acc += dy * x * r[:, None]
    tl.store(DW + cols, tl.sum(acc, axis=0).to(DW.dtype.element_ty), mask=cmask)


@triton.jit
def _ln_fwd(X, Y, W, B, MEAN, RSTD, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    b = tl.load(B + cols, mask=mask).to(tl.float32)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * stride + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _ln_bwd_dx(DY, X, W, MEAN, RSTD, DX, stride, N, BLOCK: tl.constexpr):
    # dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), with g = dy * w, xhat = (x - mean) * rstd
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.load(MEAN + row)
    rstd = tl.load(RSTD + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.)
    g = dy * w
    c1 = tl.sum(xhat * g, axis=0) / N
    c2 = tl.sum(g, axis=0) / N
    dx = (g - (xhat * c1 + c2)) * rstd
    tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit
def _ln_bwd_dwdb(DY, X, MEAN, RSTD, DW, DB, stride, M, N, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        rmask = rows < M
        mask = rmask[:, None] & cmask[None, :]
        offs = rows[:, None] * stride + cols[None, :]
        x = tl.load(X + offs, mask=mask, other=0.).to(tl.float32)
        dy = tl.load(DY + offs, mask=mask, other=0.).to(tl.float32)
        mean = tl.load(MEAN + rows, mask=rmask, other=0.)
        rstd = tl.load(RSTD + rows, mask=rmask, other=0.)
        xhat = (x - mean[:, None]) * rstd[:, None]
        dw += dy * xhat
        db += dy
    tl.store(DW + cols, tl.sum(dw, axis=0).to(DW.dtype.element_ty), mask=cmask)
    tl.store(DB + cols, tl.sum(db, axis=0).to(DB.dtype.element_ty), mask=cmask)


def block_and_warps(N: int, itemsize: int) -> tuple[int, int]:
    """(BLOCK, num_warps) for a row of ``N`` elements: the whole row in one block."""
    block = triton.next_power_of_2(N)
    if block * itemsize > 65536:
        raise ValueError(f"row of {N} elements too long for these kernels (at most "
                         f"{65536 // itemsize})")
    return block, min(max(block // 256, 1), 8)


def _rows(x):
    """(x as a contiguous 2-D (M, N) tensor, M, N)."""
    x = x.contiguous()
    N = x.shape[-1]
    x2 = x.reshape(-1, N)
    return x2, x2.shape[0], N


# -- tensorplay ops ---------------------------------------------------------------------------

@triton_op("bwk::rms_norm", mutates_args=())
def rms_norm(x: Tensor, w: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """``(y, rstd)``: RMSNorm over the last dimension (``rstd``: float32, one per row)."""
    x2, M, N = _rows(x)
    y = tensorplay.empty_like(x2)
    rstd = tensorplay.empty((M,), dtype=tensorplay.float32, device=x.device)
    block, warps = block_and_warps(N, x.element_size())
    wrap_triton(_rms_fwd)[(M,)](x2, y, w, rstd, x2.stride(0), N, eps, BLOCK=block,
                                num_warps=warps)
    return y.reshape(x.shape), rstd


@triton_op("bwk::rms_norm_backward", mutates_args=())
def rms_norm_backward(dy: Tensor, x: Tensor, w: Tensor, rstd: Tensor) -> tuple[Tensor, Tensor]:
    """``(dx, dw)`` of ``bwk::rms_norm`` given the output gradient ``dy``."""
    x2, M, N = _rows(x)
    dy2 = dy.contiguous().reshape(-1, N)
    dx = tensorplay.empty_like(x2)
    dw = tensorplay.empty((N,), dtype=w.dtype, device=w.device)
    block, warps = block_and_warps(N, x.element_size())
    wrap_triton(_rms_bwd_dx)[(M,)](dy2, x2, w, rstd, dx, x2.stride(0), N, BLOCK=block,
                                   num_warps=warps)
    wrap_triton(_rms_bwd_dw)[(triton.cdiv(N, BLOCK_N_DW),)](
        dy2, x2, rstd, dw, x2.stride(0), M, N, BLOCK_M=BLOCK_M_DW, BLOCK_N=BLOCK_N_DW)
    return dx.reshape(x.shape), dw


def _rms_setup(ctx, inputs, output):
    x, w, _eps = inputs
    # rstd's gradient is never used: no zeros are made for it (as torch's Function, which
    # returns y only, makes none)
    ctx.set_materialize_grads(False)
    # rstd is a statistic for the backward, not a differentiable output (torch's native norms
    # declare the same): opcheck's test_gradients holds the formula to what it declares
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, w, output[1])


def _rms_backward(ctx, dy, _drstd):
    x, w, rstd = ctx.saved_tensors
    dx, dw = rms_norm_backward(dy, x, w, rstd)
    return dx, dw, None


rms_norm.register_autograd(_rms_backward, setup_context=_rms_setup)


@triton_op("bwk::layer_norm", mutates_args=())
def layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(y, mean, rstd)``: LayerNorm over the last dimension (statistics float32, one per row)."""
    x2, M, N = _rows(x)
    y = tensorplay.empty_like(x2)
    mean = tensorplay.empty((M,), dtype=tensorplay.float32, device=x.device)
    rstd = tensorplay.empty((M,), dtype=tensorplay.float32, device=x.device)
    block, warps = block_and_warps(N, x.element_size())
    wrap_triton(_ln_fwd)[(M,)](x2, y, w, b, mean, rstd, x2.stride(0), N, eps, BLOCK=block,
                               num_warps=warps)
    return y.reshape(x.shape), mean, rstd


@triton_op("bwk::layer_norm_backward", mutates_args=())
def layer_norm_backward(dy: Tensor, x: Tensor, w: Tensor, mean: Tensor,
                        rstd: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(dx, dw, db)`` of ``bwk::layer_norm`` given the output gradient ``dy``."""
    x2, M, N = _rows(x)
    dy2 = dy.contiguous().reshape(-1, N)
    dx = tensorplay.empty_like(x2)
    dw = tensorplay.empty((N,), dtype=w.dtype, device=w.device)
    db = tensorplay.empty((N,), dtype=w.dtype, device=w.device)
    block, warps = block_and_warps(N, x.element_size())
    wrap_triton(_ln_bwd_dx)[(M,)](dy2, x2, w, mean, rstd, dx, x2.stride(0), N, BLOCK=block,
                                  num_warps=warps)
    wrap_triton(_ln_bwd_dwdb)[(triton.cdiv(N, BLOCK_N_DW),)](
        dy2, x2, mean, rstd, dw, db, x2.stride(0), M, N, BLOCK_M=BLOCK_M_DW, BLOCK_N=BLOCK_N_DW)
    return dx.reshape(x.shape), dw, db


def _ln_setup(ctx, inputs, output):
    x, w, _b, _eps = inputs
    ctx.set_materialize_grads(False)     # mean's and rstd's gradients are never used
    _, mean, rstd = output
    ctx.mark_non_differentiable(mean, rstd)    # statistics for the backward
    ctx.save_for_backward(x, w, mean, rstd)


def _ln_backward(ctx, dy, _dmean, _drstd):
    x, w, mean, rstd = ctx.saved_tensors
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd)
    return dx, dw, db, None


layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


# -- the same kernels under torch's autograd (the comparison) ---------------------------------

def torch_functions():
    """``(rms_norm, layer_norm)``: ``torch.autograd.Function.apply``s launching the same kernels
    with ``kernel[grid]`` on torch tensors (imports torch)."""
    import torch

    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, eps):
            x2 = x.contiguous().view(-1, x.shape[-1])
            M, N = x2.shape
            y = torch.empty_like(x2)
            rstd = torch.empty(M, dtype=torch.float32, device=x.device)
            block, warps = block_and_warps(N, x.element_size())
            _rms_fwd[(M,)](x2, y, w, rstd, x2.stride(0), N, eps, BLOCK=block, num_warps=warps)
            ctx.save_for_backward(x2, w, rstd)
            ctx.shape = x.shape
            return y.view(x.shape)

        @staticmethod
        def backward(ctx, dy):
            x2, w, rstd = ctx.saved_tensors
            M, N = x2.shape
            dy2 = dy.contiguous().view(-1, N)
            dx = torch.empty_like(x2)
            dw = torch.empty(N, dtype=w.dtype, device=w.device)
            block, warps = block_and_warps(N, x2.element_size())
            _rms_bwd_dx[(M,)](dy2, x2, w, rstd, dx, x2.stride(0), N, BLOCK=block, num_warps=warps)
            _rms_bwd_dw[(triton.cdiv(N, BLOCK_N_DW),)](dy2, x2, rstd, dw, x2.stride(0), M, N,
                                                       BLOCK_M=BLOCK_M_DW, BLOCK_N=BLOCK_N_DW)
            return dx.view(ctx.shape), dw, None

    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b, eps):
            x2 = x.contiguous().view(-1, x.shape[-1])
            M, N = x2.shape
            y = torch.empty_like(x2)
            mean = torch.empty(M, dtype=torch.float32, device=x.device)
            rstd = torch.empty(M, dtype=torch.float32, device=x.device)
            block, warps = block_and_warps(N, x.element_size())
            _ln_fwd[(M,)](x2, y, w, b, mean, rstd, x2.stride(0), N, eps, BLOCK=block,
                          num_warps=warps)
            ctx.save_for_backward(x2, w, mean, rstd)
            ctx.shape = x.shape
            return y.view(x.shape)

        @staticmethod
        def backward(ctx, dy):
            x2, w, mean, rstd = ctx.saved_tensors
            M, N = x2.shape
            dy2 = dy.contiguous().view(-1, N)
            dx = torch.empty_like(x2)
            dw = torch.empty(N, dtype=w.dtype, device=w.device)
            db = torch.empty(N, dtype=w.dtype, device=w.device)
            block, warps = block_and_warps(N, x2.element_size())
            _ln_bwd_dx[(M,)](dy2, x2, w, mean, rstd, dx, x2.stride(0), N, BLOCK=block,
                             num_warps=warps)
            _ln_bwd_dwdb[(triton.cdiv(N, BLOCK_N_DW),)](dy2, x2, mean, rstd, dw, db, x2.stride(0),
                                                        M, N, BLOCK_M=BLOCK_M_DW,
                                                        BLOCK_N=BLOCK_N_DW)
            return dx.view(ctx.shape), dw, db, None

    return RMSNorm.apply, LayerNorm.apply
