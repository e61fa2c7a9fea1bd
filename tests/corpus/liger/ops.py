"""Liger-Kernel's host code, migrated from ``torch.autograd.Function`` to tensorplay.library.

Upstream: https://github.com/linkedin/Liger-Kernel @ ead96b618e5c, src/liger_kernel/ops/*.py (BSD 2-Clause,
see kernels.py / LICENSE). The host functions (``rms_norm_forward``, ``swiglu_backward``, ...)
keep upstream's structure, names and comments; what a torch user migrating has to do is:

* ``torch.`` becomes ``tensorplay.`` (not marked below: a mechanical rename);
* every raw launch ``kernel[grid](...)`` becomes ``wrap_triton(kernel)[grid](...)`` (marked);
* each ``LigerXFunction(torch.autograd.Function)`` becomes a ``triton_op`` for the forward, one
  for the backward, and ``register_autograd``; values the Function kept on ``ctx`` that are
  not tensors or op arguments (``BLOCK_SIZE``, ``num_warps``) are recomputed in the backward;
* every other line that had to change carries ``# CHANGED: why``.

Branches for devices tensorplay has no backend for (xpu, npu), DTensor, Blackwell-only tiling and
``device_context`` (a ``torch.cuda.device`` guard; tensorplay launches on the tensors' device)
are left out: they are unreachable here, not adaptations.
"""
# ruff: noqa: E501

from __future__ import annotations

import math

import triton

import tensorplay
from tensorplay import Tensor
from tensorplay.library import triton_op, wrap_triton

from .._host import sm_count
from .kernels import (_CASTING_MODE_GEMMA, _CASTING_MODE_LLAMA, _CASTING_MODE_NONE,
                      _geglu_tanh_backward_kernel, _geglu_tanh_forward_kernel,
                      _layer_norm_backward_kernel, _layer_norm_forward_kernel,
                      _relu_squared_backward_kernel, _relu_squared_forward_kernel,
                      _rms_norm_backward_kernel, _rms_norm_forward_kernel,
                      _softmax_multi_block_backward_kernel, _softmax_multi_block_forward_kernel,
                      _softmax_single_block_backward_kernel, _softmax_single_block_forward_kernel,
                      _swiglu_backward_kernel, _swiglu_forward_kernel, _triton_rope)


# --- src/liger_kernel/ops/utils.py -------------------------------------------------------------

def is_hip() -> bool:
    return False  # CHANGED: upstream reads torch.version.hip; tensorplay has no ROCm backend


def calculate_settings(n):
    # reference: https://github.com/unslothai/unsloth/blob/fd753fed99ed5f10ef8a9b7139588d9de9ddecfb/unsloth/kernels/utils.py#L43

    MAX_FUSED_SIZE = 65536
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(
            f"Cannot launch Triton kernel since n = {n} exceeds the recommended Triton blocksize = {MAX_FUSED_SIZE}."
        )

    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32 if not is_hip() else 16
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


# CHANGED: upstream's torch_to_triton_dtype is keyed by torch dtypes
torch_to_triton_dtype = {
    tensorplay.float32: triton.language.float32,
    tensorplay.float16: triton.language.float16,
    tensorplay.bfloat16: triton.language.bfloat16,
}


# --- rms_norm.py -------------------------------------------------------------------------------

_str_to_casting_mode = {
    "llama": _CASTING_MODE_LLAMA.value,
    "gemma": _CASTING_MODE_GEMMA.value,
    "none": _CASTING_MODE_NONE.value,
}


def rms_norm_forward(X, W, eps, offset, casting_mode, row_mode):
    if not isinstance(casting_mode, int):
        assert casting_mode in _str_to_casting_mode, f"Invalid casting mode: {casting_mode}"
        casting_mode = _str_to_casting_mode[casting_mode]
    else:
        assert casting_mode in _str_to_casting_mode.values(), f"Invalid casting mode: {casting_mode}"

    shape = X.shape
    dim = shape[-1]
    X = X.view(-1, dim)
    n_rows, n_cols = X.shape
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    Y = tensorplay.empty((n_rows, n_cols), dtype=X.dtype, device=X.device)
    # RSTD is to cache rstd for each row
    # RSTD is always computed/stored in fp32 if we are using Llama or Gemma casting mode
    rstd_dtype = tensorplay.float32 if casting_mode in (_CASTING_MODE_LLAMA.value, _CASTING_MODE_GEMMA.value) else X.dtype
    RSTD = tensorplay.empty(n_rows, dtype=rstd_dtype, device=X.device)

    if W is not None:
        # Check constraints.
        assert X.shape[1] == W.shape[0], (
            "Incompatible hidden size dimension between tensor1.shape[1] and tensor2.shape[0]"
        )
        elementwise_affine = True
    else:
        elementwise_affine = False

    # CHANGED: the block-row kernel (n_rows >= 32768 and BLOCK_SIZE <= 256) is not in the corpus
    wrap_triton(_rms_norm_forward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        W.stride(0) if elementwise_affine else 0,
        RSTD,
        RSTD.stride(0),
        n_cols,
        eps,
        offset,
        casting_mode,
        elementwise_affine=elementwise_affine,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return Y.view(*shape), X, RSTD, BLOCK_SIZE, num_warps, casting_mode


def rms_norm_backward(dY, X, W, RSTD, offset, casting_mode, BLOCK_SIZE, num_warps, in_place, row_mode):
    shape = dY.shape
    dim = shape[-1]
    dY = dY.view(-1, dim)
    n_rows, n_cols = dY.shape

    sm_count_ = sm_count(X.device)  # CHANGED: torch.cuda.get_device_properties(...).multi_processor_count

    if W is not None:
        # fp32 for numerical stability especially.
        _dW = tensorplay.empty((sm_count_, n_cols), dtype=tensorplay.float32, device=W.device)
        elementwise_affine = True
    else:
        _dW = None
        elementwise_affine = False

    if n_cols > BLOCK_SIZE:
        raise RuntimeError("This layer norm doesn't support feature dim >= 64KB.")
    rows_per_program = math.ceil(n_rows / sm_count_)
    grid = (sm_count_,)

    if in_place is True:
        dX = dY
    else:
        dX = tensorplay.zeros_like(dY)

    wrap_triton(_rms_norm_backward_kernel)[grid](  # CHANGED: wrap_triton
        dY,
        dY.stride(0),
        dX,
        dX.stride(0),
        X,
        X.stride(0),
        torch_to_triton_dtype[X.dtype],
        W,
        W.stride(0) if elementwise_affine else 0,
        RSTD,
        RSTD.stride(0),
        _dW,
        _dW.stride(0) if elementwise_affine else 0,
        n_rows,
        n_cols,
        offset,
        rows_per_program,
        casting_mode,
        elementwise_affine=elementwise_affine,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    dX = dX.view(*shape)

    if elementwise_affine:
        dW = _dW.sum(dim=0).to(W.dtype)
    else:
        dW = None

    return dX, dW


@triton_op("liger::rms_norm", mutates_args=())
def rms_norm(X: Tensor, W: Tensor, eps: float, offset: float = 0.0, casting_mode: str = "llama") -> tuple[Tensor, Tensor]:
    X = X.contiguous()  # CHANGED: @ensure_contiguous (a decorator for autograd.Function methods)
    Y, X, RSTD, BLOCK_SIZE, num_warps, casting_mode = rms_norm_forward(X, W, eps, offset, casting_mode, None)
    return Y, RSTD  # CHANGED: RSTD is an output (the op's backward needs it; ctx is not available)


@triton_op("liger::rms_norm_backward", mutates_args=())
def rms_norm_bwd(dY: Tensor, X: Tensor, W: Tensor, RSTD: Tensor, offset: float, casting_mode: str) -> tuple[Tensor, Tensor]:
    dY, X = dY.contiguous(), X.contiguous()  # CHANGED: @ensure_contiguous
    BLOCK_SIZE, num_warps = calculate_settings(X.shape[-1])  # CHANGED: was kept on ctx
    mode = _str_to_casting_mode[casting_mode]  # CHANGED: was kept on ctx
    # CHANGED: in_place=False: upstream writes dX into dY by default; an op may not mutate its inputs
    return rms_norm_backward(dY, X.view(-1, X.shape[-1]), W, RSTD, offset, mode, BLOCK_SIZE, num_warps, False, None)


def _rms_norm_setup(ctx, inputs, output):
    X, W, eps, offset, casting_mode = inputs
    ctx.offset, ctx.casting_mode = offset, casting_mode
    ctx.save_for_backward(X, W, output[1])


def _rms_norm_backward(ctx, dY, dRSTD):
    X, W, RSTD = ctx.saved_tensors
    dX, dW = rms_norm_bwd(dY, X, W, RSTD, ctx.offset, ctx.casting_mode)
    return dX, dW, None, None, None


rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


# --- layer_norm.py -----------------------------------------------------------------------------

def layer_norm_forward(X, W, B, eps):
    shape = X.shape
    dim = shape[-1]
    X = X.view(-1, dim)
    n_rows, n_cols = X.shape

    # Calculate optimal block size and warp configuration
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    # Allocate output tensors
    Y = tensorplay.empty((n_rows, n_cols), dtype=X.dtype, device=X.device)
    Mean = tensorplay.empty(n_rows, dtype=X.dtype, device=X.device)
    RSTD = tensorplay.empty(n_rows, dtype=X.dtype, device=X.device)

    # Validate input dimensions
    if X.shape[1] != W.shape[0]:
        raise ValueError(
            f"Incompatible dimensions: input feature size (X.shape[1]={X.shape[1]}) "
            f"must match weight size (W.shape[0]={W.shape[0]})"
        )

    # Launch kernel with one thread block per row for optimal performance
    grid = (n_rows,)
    wrap_triton(_layer_norm_forward_kernel)[grid](  # CHANGED: wrap_triton
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        W.stride(0),
        B,
        B.stride(0),
        Mean,
        Mean.stride(0),
        RSTD,
        RSTD.stride(0),
        n_cols,
        eps,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )

    return Y.view(*shape), X, Mean, RSTD, BLOCK_SIZE, num_warps


def layer_norm_backward(dY, X, W, B, Mean, RSTD):
    shape = dY.shape
    dim = shape[-1]
    dY = dY.view(-1, dim)
    n_rows, n_cols = dY.shape

    sm_count_ = sm_count(X.device)  # CHANGED: torch.cuda.get_device_properties(...).multi_processor_count

    # fp32 for numerical stability especially.
    _DW = tensorplay.empty((sm_count_, n_cols), dtype=tensorplay.float32, device=W.device)
    _DB = tensorplay.empty((sm_count_, n_cols), dtype=tensorplay.float32, device=W.device)

    # Calculate optimal block size and warp configuration
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    if n_cols > BLOCK_SIZE:
        raise RuntimeError(f"Feature dimension {n_cols} exceeds maximum supported size of {BLOCK_SIZE}.")
    rows_per_program = math.ceil(n_rows / sm_count_)
    grid = (sm_count_,)

    # Allocate gradient tensors
    DX = tensorplay.empty((n_rows, n_cols), dtype=X.dtype, device=X.device)

    kernel_args = {"num_warps": num_warps}

    # Launch kernel with one thread block per row for optimal performance
    wrap_triton(_layer_norm_backward_kernel)[grid](  # CHANGED: wrap_triton
        X,
        X.stride(0),
        W,
        Mean,
        Mean.stride(0),
        RSTD,
        RSTD.stride(0),
        DX,
        DX.stride(0),
        _DW,
        _DW.stride(0),
        _DB,
        _DB.stride(0),
        dY,
        dY.stride(0),
        n_rows,
        n_cols,
        rows_per_program=rows_per_program,
        BLOCK_SIZE=BLOCK_SIZE,
        **kernel_args,
    )

    DX = DX.view(*shape)
    DW = _DW.sum(dim=0).to(W.dtype)
    DB = _DB.sum(dim=0).to(B.dtype)

    return DX, DW, DB


@triton_op("liger::layer_norm", mutates_args=())
def layer_norm(X: Tensor, W: Tensor, B: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    X, W, B = X.contiguous(), W.contiguous(), B.contiguous()  # CHANGED: @ensure_contiguous
    Y, X, Mean, RSTD, BLOCK_SIZE, num_warps = layer_norm_forward(X, W, B, eps)
    return Y, Mean, RSTD  # CHANGED: Mean, RSTD are outputs (ctx is not available in an op)


@triton_op("liger::layer_norm_backward", mutates_args=())
def layer_norm_bwd(dY: Tensor, X: Tensor, W: Tensor, B: Tensor, Mean: Tensor, RSTD: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    dY, X = dY.contiguous(), X.contiguous()  # CHANGED: @ensure_contiguous
    return layer_norm_backward(dY, X.view(-1, X.shape[-1]), W, B, Mean, RSTD)


def _layer_norm_setup(ctx, inputs, output):
    X, W, B, eps = inputs
    ctx.save_for_backward(X, W, B, output[1], output[2])


def _layer_norm_backward(ctx, dY, dMean, dRSTD):
    X, W, B, Mean, RSTD = ctx.saved_tensors
    DX, DW, DB = layer_norm_bwd(dY, X, W, B, Mean, RSTD)
    return DX, DW, DB, None


layer_norm.register_autograd(_layer_norm_backward, setup_context=_layer_norm_setup)


# --- swiglu.py ---------------------------------------------------------------------------------

def swiglu_forward(a, b, gate_multiplier: float = 1.0):
    ori_shape = a.shape

    n_cols = ori_shape[-1]
    a = a.view(-1, n_cols)
    b = b.view(-1, n_cols)
    c = tensorplay.empty_like(a)
    n_rows = a.shape[0]

    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    wrap_triton(_swiglu_forward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        a,
        b,
        c,
        c.stride(-2),
        float(gate_multiplier),
        n_cols=n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return a, b, c.view(*ori_shape)


def swiglu_backward(a, b, dc, gate_multiplier: float = 1.0):
    ori_shape = dc.shape
    n_cols = ori_shape[-1]
    dc = dc.view(-1, n_cols)
    n_rows = dc.shape[0]

    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    wrap_triton(_swiglu_backward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        dc,
        a,
        b,
        dc.stride(-2),
        float(gate_multiplier),
        n_cols=n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return a.view(*ori_shape), b.view(*ori_shape)


@triton_op("liger::swiglu", mutates_args=())
def swiglu(a: Tensor, b: Tensor) -> Tensor:
    a, b = a.contiguous(), b.contiguous()  # CHANGED: @ensure_contiguous
    a, b, c = swiglu_forward(a, b)
    return c


@triton_op("liger::swiglu_backward", mutates_args=())
def swiglu_bwd(a: Tensor, b: Tensor, dc: Tensor) -> tuple[Tensor, Tensor]:
    # CHANGED: upstream's kernel writes da, db over its saved a, b; an op may not mutate its inputs
    a, b, dc = a.contiguous().clone(), b.contiguous().clone(), dc.contiguous()
    return swiglu_backward(a.view(-1, a.shape[-1]), b.view(-1, b.shape[-1]), dc)


def _ab_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _swiglu_backward(ctx, dc):
    a, b = ctx.saved_tensors
    return swiglu_bwd(a, b, dc)


swiglu.register_autograd(_swiglu_backward, setup_context=_ab_setup)


# --- geglu.py ----------------------------------------------------------------------------------

def geglu_forward(a, b):
    ori_shape = a.shape

    n_cols = ori_shape[-1]
    a = a.view(-1, n_cols)
    b = b.view(-1, n_cols)
    c = tensorplay.empty_like(a)
    n_rows = a.shape[0]

    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    wrap_triton(_geglu_tanh_forward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        a,
        b,
        c,
        c.stride(-2),
        n_cols=n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return a, b, c.view(*ori_shape)


def geglu_backward(a, b, dc):
    ori_shape = dc.shape
    n_cols = ori_shape[-1]
    dc = dc.view(-1, n_cols)
    n_rows = dc.shape[0]

    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    wrap_triton(_geglu_tanh_backward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        dc,
        a,
        b,
        dc.stride(-2),
        n_cols=n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )

    return a.view(*ori_shape), b.view(*ori_shape)


@triton_op("liger::geglu", mutates_args=())
def geglu(a: Tensor, b: Tensor) -> Tensor:
    a, b = a.contiguous(), b.contiguous()  # CHANGED: @ensure_contiguous
    a, b, c = geglu_forward(a, b)
    return c


@triton_op("liger::geglu_backward", mutates_args=())
def geglu_bwd(a: Tensor, b: Tensor, dc: Tensor) -> tuple[Tensor, Tensor]:
    # CHANGED: upstream's kernel writes da, db over its saved a, b; an op may not mutate its inputs
    a, b, dc = a.contiguous().clone(), b.contiguous().clone(), dc.contiguous()
    return geglu_backward(a.view(-1, a.shape[-1]), b.view(-1, b.shape[-1]), dc)


def _geglu_backward(ctx, dc):
    a, b = ctx.saved_tensors
    return geglu_bwd(a, b, dc)


geglu.register_autograd(_geglu_backward, setup_context=_ab_setup)


# --- relu_squared.py ---------------------------------------------------------------------------

def relu_squared_forward(X):
    ori_shape = X.shape
    n_cols = ori_shape[-1]
    X_2d = X.view(-1, n_cols)
    n_rows = X_2d.shape[0]

    Y = tensorplay.empty_like(X_2d)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    wrap_triton(_relu_squared_forward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        Y,
        Y.stride(-2),
        X_2d,
        X_2d.stride(-2),
        n_cols=n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return Y.view(*ori_shape)


def relu_squared_backward(X, dY):
    ori_shape = dY.shape
    n_cols = ori_shape[-1]
    X_2d = X.view(-1, n_cols)
    dY_2d = dY.view(-1, n_cols)
    n_rows = dY_2d.shape[0]

    dX = tensorplay.empty_like(dY_2d)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)

    wrap_triton(_relu_squared_backward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
        dX,
        dX.stride(-2),
        dY_2d,
        dY_2d.stride(-2),
        X_2d,
        X_2d.stride(-2),
        n_cols=n_cols,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return dX.view(*ori_shape)


@triton_op("liger::relu_squared", mutates_args=())
def relu_squared(X: Tensor) -> Tensor:
    return relu_squared_forward(X.contiguous())  # CHANGED: @ensure_contiguous


@triton_op("liger::relu_squared_backward", mutates_args=())
def relu_squared_bwd(X: Tensor, dY: Tensor) -> Tensor:
    return relu_squared_backward(X.contiguous(), dY.contiguous())  # CHANGED: @ensure_contiguous


def _relu_squared_backward(ctx, dY):
    (X,) = ctx.saved_tensors
    return relu_squared_bwd(X, dY)


relu_squared.register_autograd(_relu_squared_backward, setup_context=_ab_setup)


# --- softmax.py --------------------------------------------------------------------------------

def _softmax_forward(x: Tensor) -> tuple[Tensor, int, int, bool]:
    *batch, n_cols = x.shape
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]

    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    y2d = tensorplay.empty_like(x2d)

    if n_cols <= BLOCK_SIZE:
        wrap_triton(_softmax_single_block_forward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
            y2d, y2d.stride(0), x2d, x2d.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
        )
        multi_block_launch = False
    else:
        wrap_triton(_softmax_multi_block_forward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
            y2d, y2d.stride(0), x2d, x2d.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
        )
        multi_block_launch = True

    return y2d.view(*batch, n_cols), BLOCK_SIZE, num_warps, multi_block_launch


def _softmax_backward(
    dy: Tensor,
    y: Tensor,
    BLOCK_SIZE: int,
    num_warps: int,
    multi_block_launch: bool,
) -> Tensor:
    *batch, n_cols = dy.shape
    dy2d = dy.contiguous().view(-1, n_cols)
    y2d = y.contiguous().view(-1, n_cols)
    n_rows = dy2d.shape[0]
    dx2d = tensorplay.empty_like(dy2d)

    if not multi_block_launch and n_cols <= BLOCK_SIZE:
        wrap_triton(_softmax_single_block_backward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
            dy2d,
            dy2d.stride(0),
            y2d,
            y2d.stride(0),
            dx2d,
            dx2d.stride(0),
            n_cols,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
        )
    else:
        wrap_triton(_softmax_multi_block_backward_kernel)[(n_rows,)](  # CHANGED: wrap_triton
            dy2d,
            dy2d.stride(0),
            y2d,
            y2d.stride(0),
            dx2d,
            dx2d.stride(0),
            n_cols,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
        )

    return dx2d.view(*batch, n_cols)


@triton_op("liger::softmax", mutates_args=())
def softmax(input_: Tensor) -> Tensor:
    y, BLOCK_SIZE, num_warps, multi_block_launch = _softmax_forward(input_.contiguous())
    return y


@triton_op("liger::softmax_backward", mutates_args=())
def softmax_bwd(grad_output: Tensor, y: Tensor) -> Tensor:
    BLOCK_SIZE, num_warps = calculate_settings(y.shape[-1])  # CHANGED: was kept on ctx
    return _softmax_backward(grad_output, y, BLOCK_SIZE, num_warps, y.shape[-1] > BLOCK_SIZE)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward_formula(ctx, grad_output):
    (y,) = ctx.saved_tensors
    return softmax_bwd(grad_output, y)


softmax.register_autograd(_softmax_backward_formula, setup_context=_softmax_setup)


# --- rope.py -----------------------------------------------------------------------------------

def rope_forward(q, k, cos, sin):
    # transpose it back to the physical shape because Triton looks at the physical storage
    # note: q and k are incontiguous before the transformation and will become contiguous after transpose
    q = q.transpose(1, 2)
    k = k.transpose(1, 2)

    batch_size, seq_len, n_q_head, head_dim = q.shape
    n_kv_head = k.shape[2]
    pad_hd = triton.next_power_of_2(head_dim)
    pad_n_q_head = triton.next_power_of_2(n_q_head)
    pad_n_kv_head = triton.next_power_of_2(n_kv_head)
    BLOCK_SIZE = max(pad_n_q_head, pad_n_kv_head)

    n_row = batch_size * seq_len

    # ensure tensors passed into the kernel are contiguous. It will be no-op if they are already contiguous
    # CHANGED: .clone(): the kernel rotates q and k in place; an op may not mutate its inputs
    q = q.contiguous().clone()
    k = k.contiguous().clone()
    cos = cos.contiguous()
    sin = sin.contiguous()
    cos_batch_size = cos.shape[0]

    wrap_triton(_triton_rope)[(n_row,)](  # CHANGED: wrap_triton
        q,
        q.stride(1),
        k,
        k.stride(1),
        cos,
        cos.stride(-2),
        sin,
        sin.stride(-2),
        seq_len,
        batch_size,
        cos_batch_size,
        n_q_head,
        n_kv_head,
        head_dim,
        pad_n_q_head,
        pad_n_kv_head,
        pad_hd,
        BLOCK_SIZE=BLOCK_SIZE,
        BACKWARD_PASS=False,
    )
    return q.transpose(1, 2), k.transpose(1, 2), cos, sin


def rope_backward(dq, dk, cos, sin):
    dq = dq.transpose(1, 2)
    dk = dk.transpose(1, 2)

    batch_size, seq_len, n_q_head, head_dim = dq.shape
    cos_batch_size = cos.shape[0]
    n_kv_head = dk.shape[2]
    pad_hd = triton.next_power_of_2(head_dim)
    pad_n_q_head = triton.next_power_of_2(n_q_head)
    pad_n_kv_head = triton.next_power_of_2(n_kv_head)
    BLOCK_SIZE = max(pad_n_q_head, pad_n_kv_head)

    n_row = batch_size * seq_len

    # ensure dq and dk are contiguous
    # CHANGED: .clone(): the kernel rotates dq and dk in place; an op may not mutate its inputs
    dq = dq.contiguous().clone()
    dk = dk.contiguous().clone()

    # backward is similar to forward except swapping few ops
    wrap_triton(_triton_rope)[(n_row,)](  # CHANGED: wrap_triton
        dq,
        dq.stride(1),
        dk,
        dk.stride(1),
        cos,
        cos.stride(-2),
        sin,
        sin.stride(-2),
        seq_len,
        batch_size,
        cos_batch_size,
        n_q_head,
        n_kv_head,
        head_dim,
        pad_n_q_head,
        pad_n_kv_head,
        pad_hd,
        BLOCK_SIZE=BLOCK_SIZE,
        BACKWARD_PASS=True,
    )
    return dq.transpose(1, 2), dk.transpose(1, 2)


@triton_op("liger::rope", mutates_args=())
def rope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    q, k, cos, sin = rope_forward(q, k, cos, sin)
    return q, k


@triton_op("liger::rope_backward", mutates_args=())
def rope_bwd(dq: Tensor, dk: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    return rope_backward(dq, dk, cos.contiguous(), sin.contiguous())


def _rope_setup(ctx, inputs, output):
    q, k, cos, sin = inputs
    ctx.save_for_backward(cos, sin)


def _rope_backward(ctx, dq, dk):
    cos, sin = ctx.saved_tensors
    dq, dk = rope_bwd(dq, dk, cos, sin)
    return dq, dk, None, None


rope.register_autograd(_rope_backward, setup_context=_rope_setup)
