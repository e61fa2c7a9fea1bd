"""Session 56 fresh-user findings on higher derivatives and sign: the second (and third)
derivative of ``prod`` at inputs holding zeros, the second derivative of ``det`` at singular
matrices, and ``sign``/``sgn`` of NaN. Expected values are torch 2.13's (cpu, float64), checked
there before they were written here, or analytic. Public API only."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay.autograd import gradcheck, gradgradcheck


def _hess(f, x):
    """Rows d(grad_i)/dx of the scalar f(x), flattened over grad's elements."""
    g, = tp.autograd.grad(f(x), x, create_graph=True)
    return [tp.autograd.grad(gi, x, retain_graph=True, allow_unused=True)[0].tolist()
            for gi in g.reshape(-1)]


def _close(a, b, tol=1e-9):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for p, q in zip(a, b):
            _close(p, q, tol)
    else:
        assert a == pytest.approx(b, abs=tol), (a, b)


# -- prod: second and third derivatives with zeros (x0*x1*x2 has a constant third derivative) ----
@pytest.mark.parametrize("v, want", [
    ([0.0, 2.0, 3.0], [[0, 3, 2], [3, 0, 0], [2, 0, 0]]),     # one zero
    ([0.0, 0.0, 3.0], [[0, 3, 0], [3, 0, 0], [0, 0, 0]]),     # two zeros
    ([0.0, 0.0, 0.0], [[0, 0, 0], [0, 0, 0], [0, 0, 0]]),
    ([1.0, 2.0, 3.0], [[0, 3, 2], [3, 0, 1], [2, 1, 0]]),     # none
])
def test_prod_hessian_with_zeros(v, want):
    x = tp.tensor(v, dtype=tp.float64, requires_grad=True)
    _close(_hess(lambda a: a.prod(), x), want)


def test_prod_dim_and_keepdim_hessian_with_zeros():
    x = tp.tensor([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]], dtype=tp.float64, requires_grad=True)
    w = tp.tensor([[1.0, 2.0]], dtype=tp.float64)
    h = _hess(lambda a: (a.prod(1) * w).sum(), x)
    _close(h, [[[0, 3, 2], [0, 0, 0]], [[3, 0, 0], [0, 0, 0]], [[2, 0, 0], [0, 0, 0]],
               [[0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 2]], [[0, 0, 0], [0, 2, 0]]])
    c = tp.tensor([1.0, 2.0, 3.0], dtype=tp.float64)
    h = _hess(lambda a: (a.prod(0, keepdim=True) * c).sum(), x)
    _close(h, [[[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [0, 2, 0]], [[0, 0, 0], [0, 0, 3]],
               [[1, 0, 0], [0, 0, 0]], [[0, 2, 0], [0, 0, 0]], [[0, 0, 3], [0, 0, 0]]])


def test_prod_third_derivative_at_zeros():
    x = tp.tensor([0.0, 0.0, 0.0], dtype=tp.float64, requires_grad=True)
    g, = tp.autograd.grad(x.prod(), x, create_graph=True)
    h, = tp.autograd.grad(g[0], x, create_graph=True)
    t, = tp.autograd.grad(h[1], x)
    assert t.tolist() == [0.0, 0.0, 1.0]


def test_prod_of_stack_second_derivative():
    a = tp.tensor(0.0, dtype=tp.float64, requires_grad=True)
    b = tp.tensor(5.0, dtype=tp.float64, requires_grad=True)
    ga, gb = tp.autograd.grad(tp.stack([a, b, a]).prod(0), (a, b), create_graph=True)
    assert [t.item() for t in tp.autograd.grad(ga, (a, b), retain_graph=True)] == [10.0, 0.0]
    assert [t.item() for t in tp.autograd.grad(gb, (a, b))] == [0.0, 0.0]


@pytest.mark.parametrize("v, dim, keepdim", [
    ([0.0, 2.0, 3.0], None, False),
    ([0.0, 0.0, 3.0], None, False),
    ([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0], [0.5, 2.0, -1.0]], 1, False),
    ([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0], [0.5, 2.0, -1.0]], 0, True),
    ([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0]], [0, 1], True),
])
def test_prod_gradgradcheck_with_zeros(v, dim, keepdim):
    x = tp.tensor(v, dtype=tp.float64, requires_grad=True)
    f = (lambda a: a.prod()) if dim is None else (lambda a: tp.prod(a, dim, keepdim=keepdim)
                                                  if isinstance(dim, int) else
                                                  a.prod(1, keepdim=keepdim).prod(0))
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_prod_first_order_unchanged():
    x = tp.tensor([[0.0, 2.0, 3.0], [1.0, 2.0, 4.0], [0.0, 0.0, 1.0]], requires_grad=True)
    x.prod(1).sum().backward()
    assert x.grad.tolist() == [[6.0, 0.0, 0.0], [8.0, 4.0, 2.0], [0.0, 0.0, 0.0]]


# -- det: second derivative at singular matrices (torch's values; det is a polynomial) ---------
def test_det_second_derivative_singular_2x2():
    x = tp.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=tp.float64, requires_grad=True)
    g, = tp.autograd.grad(tp.det(x), x, create_graph=True)
    _close(g.tolist(), [[4, -2], [-2, 1]])
    h, = tp.autograd.grad(g[0, 0], x)
    _close(h.tolist(), [[0, 0], [0, 1]])


@pytest.mark.parametrize("m, want", [
    ([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],        # rank 2
     [[-1, 4, -3], [0, -2, 2], [1, -2, 1]]),
    ([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]],        # rank 1
     [[1, -2, 1], [-2, 4, -2], [1, -2, 1]]),
])
def test_det_second_derivative_rank_deficient_3x3(m, want):
    x = tp.tensor(m, dtype=tp.float64, requires_grad=True)
    g, = tp.autograd.grad(tp.linalg.det(x), x, create_graph=True)
    h, = tp.autograd.grad(g.sum(), x)
    _close(h.tolist(), want, 1e-7)


def test_det_second_derivative_batch_mixed():
    x = tp.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]], dtype=tp.float64,
                  requires_grad=True)
    g, = tp.autograd.grad(tp.det(x).sum(), x, create_graph=True)
    h, = tp.autograd.grad((g * tp.arange(8.0, dtype=tp.float64).reshape(2, 2, 2)).sum(), x)
    _close(h.tolist(), [[[3, -2], [-1, 0]], [[7, -6], [-5, 4]]])


@pytest.mark.parametrize("m", [[[1.0, 2.0], [2.0, 4.0]],
                               [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]])
def test_det_gradgradcheck_singular(m):
    x = tp.tensor(m, dtype=tp.float64, requires_grad=True)
    assert gradgradcheck(tp.linalg.det, (x,))
    # and the values are finite (a NaN second derivative must not pass unnoticed)
    g, = tp.autograd.grad(tp.det(x), x, create_graph=True)
    h, = tp.autograd.grad(g.sum(), x)
    assert all(math.isfinite(v) for row in h.tolist() for v in row)


# -- sign / sgn of NaN: 0 (torch), not NaN (NumPy) ---------------------------------------------
@pytest.mark.parametrize("dt", [tp.float16, tp.bfloat16, tp.float32, tp.float64])
def test_sign_nan_is_zero(dt):
    x = tp.tensor([float("nan"), -float("nan"), -0.0, 0.0, -float("inf"), 2.5], dtype=dt)
    want = [0.0, 0.0, 0.0, 0.0, -1.0, 1.0]
    assert tp.sign(x).tolist() == want
    assert tp.sgn(x).tolist() == want
    y = x.clone()
    y.sign_()
    assert y.tolist() == want
    assert tp.sign(x).dtype == dt


def test_sign_ints_and_bool_unchanged():
    assert tp.sign(tp.tensor([-3, 0, 7])).tolist() == [-1, 0, 1]
    assert tp.sign(tp.tensor([True, False])).tolist() == [True, False]


@pytest.mark.parametrize("dt", [tp.float32, tp.float64, tp.float16])
def test_sign_nan_is_zero_on_large_and_strided_tensors(dt):
    # large tensors take the comparison kernel on the cpu; -0.0 and NaN give +0.0
    n = 1 << 15
    x = tp.randn(n).to(dt)
    x[::7] = float("nan")
    x[1::7] = -0.0
    x[2::7] = -float("inf")
    r = tp.sign(x)
    assert r.dtype == dt
    want = tp.where(x > 0, 1.0, tp.where(x < 0, -1.0, 0.0)).to(dt)
    assert tp.equal(r, want)
    assert not tp.signbit(r[::7]).any() and not tp.signbit(r[1::7]).any()
    s = x.reshape(256, -1).t()[::2]        # a non-contiguous view
    assert tp.equal(tp.sign(s), want.reshape(256, -1).t()[::2])


def test_sign_nan_in_a_compiled_chain():
    # the cpu fuser declines sign (NumPy's ufunc keeps NaN); the compiled result is eager's
    x = tp.tensor([float("nan"), -2.0, 0.0, 3.0] * 8)
    f = tp.compile(lambda a: tp.sign(a * 2.0) + 1.0)
    assert f(x).tolist() == [1.0, 0.0, 1.0, 2.0] * 8


def test_sign_nan_in_the_generated_triton_kernel():
    # the cuda fuser's Triton form (run here by Triton's interpreter on the cpu's arrays)
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    triton_fusion = pytest.importorskip("tensorplay_cuda.triton_fusion")
    from tensorplay.backends import ElementwiseExpr, Step
    np = pytest.importorskip("numpy")
    for dt in (tp.float32, tp.float64):
        x = tp.tensor([float("nan"), -float("nan"), -0.0, 0.0, -2.0, 3.0], dtype=dt)
        expr = ElementwiseExpr(1, (Step("sign", (("in", 0),)),), (0,), (dt,), tp.device("cpu"))
        got = triton_fusion.TritonChain(expr, tp.backends.get("cpu")).run([x.numpy()])
        assert got is not None
        assert got[0].tolist() == [0.0, 0.0, 0.0, 0.0, -1.0, 1.0]
        assert not np.signbit(got[0][:4]).any()


@pytest.mark.cuda
def test_sign_nan_on_cuda_eager_and_compiled():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"no usable CUDA device: {why}")
    for dt in (tp.float16, tp.bfloat16, tp.float32, tp.float64):
        for n in (6, 1 << 20):     # the eager large-tensor path too
            x = tp.tensor([float("nan"), -float("nan"), -0.0, 0.0, -2.0, 3.0] * (n // 6 + 1),
                          dtype=dt, device="cuda")[:n]
            want = [0.0, 0.0, 0.0, 0.0, -1.0, 1.0] * (n // 6 + 1)
            assert tp.sign(x).cpu().tolist() == want[:n]
            assert tp.sgn(x).cpu().tolist() == want[:n]
            y = x.clone()
            y.sign_()
            assert y.cpu().tolist() == want[:n]
            f = tp.compile(lambda a: tp.sign(a * 2.0) + 1.0)
            assert f(x).cpu().tolist() == [v + 1.0 for v in want[:n]]


@pytest.mark.cuda
def test_prod_and_det_second_derivatives_on_cuda():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"no usable CUDA device: {why}")
    x = tp.tensor([0.0, 2.0, 3.0], dtype=tp.float64, device="cuda", requires_grad=True)
    _close([[v for v in r] for r in _hess(lambda a: a.prod(), x)],
           [[0, 3, 2], [3, 0, 0], [2, 0, 0]])
    m = tp.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=tp.float64, device="cuda", requires_grad=True)
    g, = tp.autograd.grad(tp.det(m), m, create_graph=True)
    h, = tp.autograd.grad(g[0, 0], m)
    assert h.device.type == "cuda"
    _close(h.cpu().tolist(), [[0, 0], [0, 1]])
