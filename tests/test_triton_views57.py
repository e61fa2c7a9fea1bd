"""Triton kernels that take their tensors' strides run on views, as through torch's
``wrap_triton`` (a fresh user's finding, session 57: Triton's fused-softmax tutorial on a row
slice and a ``tl.dot`` matmul on a transposed operand were refused unless re-wrapped with
``strided=``). A kernel that is given a view but none of its strides is still refused: it would
read the wrong elements. Runs on cpu through Triton's interpreter, and on cuda when there is one."""

import numpy as np
import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

import tensorplay as tp  # noqa: E402
from tensorplay.library import wrap_triton  # noqa: E402
from tensorplay_triton import TritonLaunchError  # noqa: E402


def _devices():
    return ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def _need(device):
    ok, why = tp.plugins.device_status(device)
    if not ok:
        pytest.skip(why)


# Triton's fused-softmax tutorial kernel, as published (row strides as arguments)
from test_triton_tutorials import softmax_kernel  # noqa: E402


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k * BK + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k * BK + rk)[None, :] < K), other=0.)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k * BK + rk)[:, None] < K) & (rn[None, :] < N), other=0.)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@pytest.mark.parametrize("device", ["cpu"])
def test_softmax_tutorial_on_a_row_slice(device):
    _need(device)
    big = np.random.RandomState(0).randn(8, 100).astype(np.float32)
    x = tp.tensor(big, device=device)[:, :81]            # stride (100, 1)
    y = tp.empty_like(x)
    wrap_triton(softmax_kernel)[(8, 1, 1)](y, x, x.stride(0), y.stride(0), 8, 81,
                                            triton.next_power_of_2(81), 2)
    ref = np.exp(big[:, :81] - big[:, :81].max(1, keepdims=True))
    np.testing.assert_allclose(y.cpu().numpy(), ref / ref.sum(1, keepdims=True), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("device", ["cpu"])
def test_matmul_on_a_transposed_operand(device):
    # (cpu only: on cuda a view still needs strided= -- the first GPU run found this launch
    # wrong through the compiled path; see _wrap._non_contiguous)
    _need(device)
    an = np.random.RandomState(1).randn(20, 33).astype(np.float32)
    bn = np.random.RandomState(2).randn(20, 17).astype(np.float32)
    a = tp.tensor(an, device=device).t()                  # (33, 20), stride (1, 33)
    b = tp.tensor(bn, device=device)
    c = tp.empty(33, 17, device=device)
    wrap_triton(matmul_kernel)[(3, 2)](a, b, c, 33, 17, 20, a.stride(0), a.stride(1), b.stride(0),
                                       b.stride(1), c.stride(0), c.stride(1), BM=16, BN=16, BK=16)
    np.testing.assert_allclose(c.cpu().numpy(), an.T @ bn, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", _devices())
def test_a_view_without_its_strides_is_still_refused(device):
    _need(device)
    x = tp.randn(8, 16, device=device).t()                # (16, 8), stride (1, 16)
    out = tp.empty(128, device=device)
    with pytest.raises(TritonLaunchError, match=r"'x_ptr' is a non-contiguous .*does not pass its "
                                                r"strides.*contiguous\(\)"):
        wrap_triton(copy_kernel)[(1,)](x, out, 128, BLOCK=128)


@pytest.mark.parametrize("device", _devices())
def test_a_value_equal_to_the_stride_in_a_size_parameter_is_not_taken(device):
    # (an int equal to the view's stride, passed as a size the body reads: not a stride)
    _need(device)
    x = tp.randn(8, 16, device=device).t()                # (16, 8), stride (1, 16)
    out = tp.empty(128, device=device)
    with pytest.raises(TritonLaunchError, match=r"'x_ptr' is a non-contiguous"):
        wrap_triton(copy_kernel)[(8,)](x, out, 16, BLOCK=16)


# Liger's pattern: the row stride of W is passed, but the body never reads it (W is made
# contiguous by the host code's decorator); a padded or expanded W must still be refused
@triton.jit
def rows_times_w(Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, W_row_stride, n_cols,
                 BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    x = tl.load(X_ptr + row * X_row_stride + c, mask=m)
    w = tl.load(W_ptr + c, mask=m)
    tl.store(Y_ptr + row * Y_row_stride + c, x * w, mask=m)


@pytest.mark.parametrize("device", _devices())
def test_a_stride_passed_but_never_read_is_not_taken(device):
    _need(device)
    x = tp.randn(4, 8, device=device)
    y = tp.empty(4, 8, device=device)
    for w in (tp.randn(16, device=device)[::2], tp.randn(1, device=device).expand(8)):
        with pytest.raises(TritonLaunchError, match=r"'W_ptr' is a non-contiguous"):
            wrap_triton(rows_times_w)[(4,)](y, y.stride(0), x, x.stride(0), w, w.stride(0), 8,
                                            BLOCK=8)
    xs = tp.randn(4, 16, device=device)[:, :8]          # X's row stride is read: taken
    w = tp.randn(8, device=device)
    k = wrap_triton(rows_times_w)
    if device == "cuda":
        # (the stride rule is Triton's interpreter's only for now: a cuda view still needs
        # strided=, test_a_cuda_view_still_needs_strided)
        with pytest.raises(TritonLaunchError, match=r"'X_ptr' is a non-contiguous"):
            k[(4,)](y, y.stride(0), xs, xs.stride(0), w, w.stride(0), 8, BLOCK=8)
        k = wrap_triton(rows_times_w, strided=["X_ptr"])
    k[(4,)](y, y.stride(0), xs, xs.stride(0), w, w.stride(0), 8, BLOCK=8)
    np.testing.assert_allclose(y.cpu().numpy(), xs.cpu().numpy() * w.cpu().numpy(), rtol=1e-6)


@pytest.mark.cuda
def test_a_cuda_view_still_needs_strided():
    _need("cuda")
    an = np.random.RandomState(1).randn(20, 33).astype(np.float32)
    a = tp.tensor(an, device="cuda").t()
    b = tp.tensor(np.ones((20, 17), np.float32), device="cuda")
    c = tp.empty(33, 17, device="cuda")
    with pytest.raises(TritonLaunchError, match=r"'a_ptr' is a non-contiguous cuda"):
        wrap_triton(matmul_kernel)[(3, 2)](a, b, c, 33, 17, 20, a.stride(0), a.stride(1),
                                           b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                           BM=16, BN=16, BK=16)
