"""Session 46 (h-ops46), torch-free: divergences from torch a user could meet and torch functions
that were missing. Companion of tests/torch_bridge/test_ops_differential46.py (against torch).

1. ``relu``: torch's ``x < 0 ? 0 : x`` (``relu(-0.0)`` is ``-0.0``, NaN passes) on every path
   (the cpu kernel at every size and layout, float16/32/64, the compiled chain), and its backward
   torch's ``threshold_backward`` (``g`` where the output is not ``<= 0``, else exactly 0: an
   infinite or NaN gradient at a zero output gives 0, not NaN), eager and with ``create_graph``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp

INF, NAN = math.inf, math.nan


def _signbits(t):
    return np.signbit(t.detach().float().numpy() if t.dtype is tp.float16 else
                      t.detach().numpy()).tolist()


# -- 1. relu ----------------------------------------------------------------------------------
_RELU_IN = [-0.0, 0.0, -1.0, NAN, 2.0, -INF, INF, -3.5]
_RELU_OUT_SIGN = [True, False, False, None, False, False, False, False]   # None: NaN


@pytest.mark.parametrize("dtype", [tp.float16, tp.float32, tp.float64])
@pytest.mark.parametrize("reps", [1, 3, 600, 9000])   # sizes 8 .. 72000: each cpu kernel path
@pytest.mark.parametrize("layout", ["contiguous", "strided", "2d"])
def test_relu_signed_zero_and_nan(dtype, reps, layout):
    vals = _RELU_IN * reps
    if layout == "strided":
        x = tp.tensor([v for v in vals for _ in (0, 1)], dtype=dtype)[::2]
    elif layout == "2d":
        x = tp.tensor(vals, dtype=dtype).reshape(-1, 8).t()
    else:
        x = tp.tensor(vals, dtype=dtype)
    y = tp.relu(x)
    assert y.dtype is dtype and y.shape == x.shape
    flat = y.reshape(-1) if layout != "2d" else y.t().reshape(-1)
    got = flat.tolist()
    signs = np.signbit(np.asarray(got, dtype=np.float64)).tolist()
    for i, v in enumerate(vals):
        if math.isnan(v):
            assert math.isnan(got[i])
        else:
            assert got[i] == max(v, 0.0)
            assert signs[i] == _RELU_OUT_SIGN[i % 8], (i, v, got[i])
    # the method, the in-place form and the module-level function agree
    assert _signbits(x.relu()) == _signbits(y)
    z = x.clone()
    z.relu_()
    assert _signbits(z) == _signbits(y)


def test_relu_zero_dim_and_ints():
    assert _signbits(tp.relu(tp.tensor(-0.0))) is True
    assert tp.relu(tp.tensor(-0.0)).dtype is tp.float32
    assert tp.relu(tp.tensor([-2, 0, 3])).tolist() == [0, 0, 3]
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        tp.relu(tp.tensor([True]))


def test_relu_compiled_keeps_negative_zero():
    @tp.compile
    def f(x, y):
        return (x * y).relu() + 0.0 * x

    @tp.compile
    def g(x):
        return (x * 1.0).relu()

    x = tp.tensor([-0.0, 0.0, -1.0, NAN, 2.0] * 1000)
    r = g(x)
    assert _signbits(r)[:3] == [True, False, False]
    assert math.isnan(r[3].item()) and r[4].item() == 2.0
    assert _signbits(g(x))[:3] == [True, False, False]     # (the cached, fused run)
    a = tp.tensor([1.0, -1.0, 2.0] * 100)
    b = tp.tensor([-0.0, 0.0, -3.0] * 100)
    r = f(a, b)            # 1 * -0.0 = -0.0 -> relu -> -0.0; + (0 * 1 = 0): -0.0 + 0.0 = +0.0
    assert r[:3].tolist() == [0.0, 0.0, 0.0]


def _relu_grad(x, g, create_graph=False):
    x = x.detach().requires_grad_()
    y = tp.relu(x)
    (gx,) = tp.autograd.grad(y, [x], g, create_graph=create_graph)
    return gx


@pytest.mark.parametrize("dtype", [tp.float16, tp.float32, tp.float64])
@pytest.mark.parametrize("reps", [1, 600, 9000])
@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_backward_is_threshold_backward(dtype, reps, create_graph):
    # output 0 (x <= 0) -> gradient exactly 0 whatever g is (inf, -inf, NaN); output > 0 or NaN
    # -> g passes (inf, NaN included)
    xs = [0.0, -1.0, -0.0, 0.0, 2.0, NAN, 3.0, -INF]
    gs = [INF, -INF, NAN, 1.0, INF, 5.0, NAN, NAN]
    want = [0.0, 0.0, 0.0, 0.0, INF, 5.0, NAN, 0.0]
    x = tp.tensor(xs * reps, dtype=dtype)
    g = tp.tensor(gs * reps, dtype=dtype)
    gx = _relu_grad(x, g, create_graph)
    assert gx.dtype is dtype
    got = gx.tolist()
    for i, w in enumerate(want * reps):
        if math.isnan(w):
            assert math.isnan(got[i]), i
        else:
            assert got[i] == w and not np.signbit(got[i]), (i, got[i], w)


def test_relu_backward_broadcast_gradient():
    # sum's gradient is a broadcast (stride-0) tensor; an inf there must still give 0 at zeros
    x = tp.tensor([[-1.0, 2.0], [0.0, -0.0]], requires_grad=True)
    (tp.relu(x) * INF).sum().backward()
    # d/dy of (y * inf) is inf everywhere; relu's backward zeroes it where the output is 0
    assert x.grad.tolist() == [[0.0, INF], [0.0, 0.0]]


def test_relu_double_backward():
    x = tp.tensor([-1.0, 2.0, 0.0], requires_grad=True)
    y = tp.relu(x)
    (gx,) = tp.autograd.grad(y.sum(), [x], create_graph=True)
    assert gx.tolist() == [0.0, 1.0, 0.0]
    assert gx.requires_grad is False or gx.grad_fn is not None


def _need_cuda():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


@pytest.mark.cuda
@pytest.mark.parametrize("reps", [1, 600, 300000])   # the CuPy kernel and the large (Triton) path
def test_relu_cuda_matches_cpu(reps):
    _need_cuda()
    xs = [0.0, -1.0, -0.0, 0.0, 2.0, NAN, 3.0, -INF]
    gs = [INF, -INF, NAN, 1.0, INF, 5.0, NAN, NAN]
    for dtype in (tp.float16, tp.float32, tp.float64):
        x = tp.tensor(xs * reps, dtype=dtype)
        g = tp.tensor(gs * reps, dtype=dtype)
        yc = tp.relu(x.to("cuda"))
        assert _signbits(yc.cpu()) == _signbits(tp.relu(x))
        a = np.asarray(_relu_grad(x.to("cuda"), g.to("cuda")).cpu().tolist())
        b = np.asarray(_relu_grad(x, g).tolist())
        assert np.array_equal(a, b, equal_nan=True)
