"""``prod``'s gradient as torch 2.13's ``prod_backward``, first order and under ``create_graph``
(session 57, fresh56b/04 and /05).

torch takes one formula per call: no zero anywhere in the input: ``grad * result / input`` (an
inf gives NaN there: inf / inf); a zero somewhere: the exclusive products from both sides, for
every slice (prod(dim) of ``[[inf, 2], [3, 0]]`` gives 2 at the inf, whose row has no zero);
``prod()`` of an input with two zeros or more outside ``create_graph``: zeros. The same formula,
differentiated again, gives the higher derivatives, so ``create_graph`` changes nothing in the
first-order values (but for that last shortcut). TensorPlay took the exclusive products under
``create_graph`` always and a per-slice formula otherwise, so the two disagreed at overflow, inf
and NaN, and prod(dim) gave NaN where torch gives the product's gradient. Values measured with
torch 2.13.0+cpu (the loss ``(prod * linspace(1, 2)).sum()``).
"""

from __future__ import annotations

import math

import pytest

import tensorplay as tp

INF, NAN = math.inf, math.nan

# (dtype, input, (dim, keepdim) or None for prod(), torch's gradient, torch's gradient under
# create_graph when it differs)
TORCH = [
    ('float32', [1e-30, 1e-30, 1e+30, 1e+30], None, [0.0, 0.0, 0.0, 0.0], None),
    ('float32', [1e-30, 1e-30, 1e+30, 1e+30], (0, False), [0.0, 0.0, 0.0, 0.0], None),
    ('float32', [INF, 2.0], None, [NAN, INF], None),
    ('float32', [INF, 2.0], (0, False), [NAN, INF], None),
    ('float32', [INF, INF], None, [NAN, NAN], None),
    ('float32', [INF, INF], (0, False), [NAN, NAN], None),
    ('float32', [NAN, 2.0], None, [NAN, NAN], None),
    ('float32', [NAN, 2.0], (0, False), [NAN, NAN], None),
    ('float32', [0.0, 2.0, 3.0], None, [6.0, 0.0, 0.0], None),
    ('float32', [0.0, 2.0, 3.0], (0, False), [6.0, 0.0, 0.0], None),
    ('float32', [0.0, 0.0, 3.0], None, [0.0, 0.0, 0.0], None),
    ('float32', [0.0, 0.0, 3.0], (0, False), [0.0, 0.0, 0.0], None),
    ('float32', [0.0, 0.0, INF], None, [0.0, 0.0, 0.0],
     [NAN, NAN, 0.0]),
    ('float32', [0.0, 0.0, INF], (0, False), [NAN, NAN, 0.0], None),
    ('float32', [0.0, INF, 2.0], None, [INF, 0.0, NAN], None),
    ('float32', [0.0, INF, 2.0], (0, False), [INF, 0.0, NAN], None),
    ('float32', [INF, 2.0, 0.5], None, [NAN, INF, INF], None),
    ('float32', [INF, 2.0, 0.5], (0, False), [NAN, INF, INF], None),
    ('float32', [1e+20, 1e+20, 1e-20], None, [INF, INF, INF], None),
    ('float32', [1e+20, 1e+20, 1e-20], (0, False), [INF, INF, INF], None),
    ('float32', [[INF, 2.0], [3.0, 0.0]], None, [0.0, NAN, NAN, INF], None),
    ('float32', [[INF, 2.0], [3.0, 0.0]], (0, False), [3.0, 0.0, INF, 4.0], None),
    ('float32', [[INF, 2.0], [3.0, 0.0]], (-1, False), [2.0, INF, 0.0, 6.0], None),
    ('float32', [[1e+30, 1e+30, 1e-30], [0.0, 1.0, 2.0]], None, [0.0, 0.0, NAN, 2.0000000300949324e+30, 0.0, 0.0], None),
    ('float32', [[1e+30, 1e+30, 1e-30], [0.0, 1.0, 2.0]], (0, False), [0.0, 1.5, 4.0, 1.0000000150474662e+30, 1.500000098129063e+30, 2.0000000063421537e-30], None),
    ('float32', [[1e+30, 1e+30, 1e-30], [0.0, 1.0, 2.0]], (-1, False), [1.0, 1.0, INF, 4.0, 0.0, 0.0], None),
    ('float32', [[0.0, INF], [INF, 0.0]], None, [0.0, 0.0, 0.0, 0.0],
     [NAN, NAN, NAN, NAN]),
    ('float32', [[0.0, INF], [INF, 0.0]], (0, False), [INF, 0.0, 0.0, INF], None),
    ('float32', [[0.0, INF], [INF, 0.0]], (-1, False), [INF, 0.0, 0.0, INF], None),
    ('float64', [1e-30, 1e-30, 1e+30, 1e+30], None, [9.999999999999999e+29, 9.999999999999999e+29, 9.999999999999999e-31, 9.999999999999999e-31], None),
    ('float64', [1e-30, 1e-30, 1e+30, 1e+30], (0, False), [9.999999999999999e+29, 9.999999999999999e+29, 9.999999999999999e-31, 9.999999999999999e-31], None),
    ('float64', [INF, 2.0], None, [NAN, INF], None),
    ('float64', [INF, 2.0], (0, False), [NAN, INF], None),
    ('float64', [INF, INF], None, [NAN, NAN], None),
    ('float64', [INF, INF], (0, False), [NAN, NAN], None),
    ('float64', [NAN, 2.0], None, [NAN, NAN], None),
    ('float64', [NAN, 2.0], (0, False), [NAN, NAN], None),
    ('float64', [0.0, 2.0, 3.0], None, [6.0, 0.0, 0.0], None),
    ('float64', [0.0, 2.0, 3.0], (0, False), [6.0, 0.0, 0.0], None),
    ('float64', [0.0, 0.0, 3.0], None, [0.0, 0.0, 0.0], None),
    ('float64', [0.0, 0.0, 3.0], (0, False), [0.0, 0.0, 0.0], None),
    ('float64', [0.0, 0.0, INF], None, [0.0, 0.0, 0.0],
     [NAN, NAN, 0.0]),
    ('float64', [0.0, 0.0, INF], (0, False), [NAN, NAN, 0.0], None),
    ('float64', [0.0, INF, 2.0], None, [INF, 0.0, NAN], None),
    ('float64', [0.0, INF, 2.0], (0, False), [INF, 0.0, NAN], None),
    ('float64', [INF, 2.0, 0.5], None, [NAN, INF, INF], None),
    ('float64', [INF, 2.0, 0.5], (0, False), [NAN, INF, INF], None),
    ('float64', [1e+20, 1e+20, 1e-20], None, [1.0, 1.0, 1e+40], None),
    ('float64', [1e+20, 1e+20, 1e-20], (0, False), [1.0, 1.0, 1e+40], None),
    ('float64', [[INF, 2.0], [3.0, 0.0]], None, [0.0, NAN, NAN, INF], None),
    ('float64', [[INF, 2.0], [3.0, 0.0]], (0, False), [3.0, 0.0, INF, 4.0], None),
    ('float64', [[INF, 2.0], [3.0, 0.0]], (-1, False), [2.0, INF, 0.0, 6.0], None),
    ('float64', [[1e+30, 1e+30, 1e-30], [0.0, 1.0, 2.0]], None, [0.0, 0.0, 0.0, 2.0000000000000003e+30, 0.0, 0.0], None),
    ('float64', [[1e+30, 1e+30, 1e-30], [0.0, 1.0, 2.0]], (0, False), [0.0, 1.5, 4.0, 1e+30, 1.5000000000000002e+30, 2e-30], None),
    ('float64', [[1e+30, 1e+30, 1e-30], [0.0, 1.0, 2.0]], (-1, False), [1.0, 1.0, 1.0000000000000001e+60, 4.0, 0.0, 0.0], None),
    ('float64', [[0.0, INF], [INF, 0.0]], None, [0.0, 0.0, 0.0, 0.0],
     [NAN, NAN, NAN, NAN]),
    ('float64', [[0.0, INF], [INF, 0.0]], (0, False), [INF, 0.0, 0.0, INF], None),
    ('float64', [[0.0, INF], [INF, 0.0]], (-1, False), [INF, 0.0, 0.0, INF], None),
]


def _same(got, want, rel=1e-6):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if math.isnan(b):
            assert math.isnan(a), (got, want)
        else:
            assert a == pytest.approx(b, rel=rel, abs=0.0), (got, want)


def _loss(x, mode):
    p = x.prod() if mode is None else x.prod(mode[0], keepdim=mode[1])
    w = tp.linspace(1.0, 2.0, p.numel(), dtype=x.dtype).reshape(p.shape)
    return (p * w).sum()


@pytest.mark.parametrize("dt, v, mode, want, want_cg", TORCH)
@pytest.mark.parametrize("create_graph", [False, True])
def test_prod_gradient_is_torchs(dt, v, mode, want, want_cg, create_graph):
    x = tp.tensor(v, dtype=getattr(tp, dt), requires_grad=True)
    g, = tp.autograd.grad(_loss(x, mode), x, create_graph=create_graph)
    _same(g.flatten().tolist(), want_cg if create_graph and want_cg is not None else want)


@pytest.mark.parametrize("dt, v, mode, want", [
    # overflow: torch's exact 0, where the exclusive products gave inf and NaN
    ("float32", [1e-30, 1e-30, 1e30, 1e30], None, [0.0, 0.0, 0.0, 0.0]),
    ("float32", [0.0, 2.0, 3.0], None, [6.0, 1.5, 1.0]),
    ("float32", [0.0, 0.0, 3.0], None, [3.0, 1.5, 0.0]),
    ("float64", [0.0, 0.0, 3.0], (0, False), [3.0, 1.5, 0.0]),
    ("float32", [-0.0, 2.0, -3.0], None, [0.0, -1.5, 1.0]),
    ("float32", [[0.0, 0.0], [3.0, 4.0]], (0, False), [7 / 6, 3.0, 0.5, 5 / 3]),
    ("float64", [[1e30, 1e30, 1e-30], [0.0, 1.0, 2.0]], (0, False),
     [1.1, 1.95, 3.0, 0.5, 1.05, 1.8]),
])
def test_prod_second_derivative_is_torchs(dt, v, mode, want):
    # where the gradient is finite: the hessian-vector product of torch's formula
    x = tp.tensor(v, dtype=getattr(tp, dt), requires_grad=True)
    g, = tp.autograd.grad(_loss(x, mode), x, create_graph=True)
    u = tp.linspace(0.5, 1.5, x.numel(), dtype=x.dtype).reshape(x.shape)
    h, = tp.autograd.grad((g * u).sum(), x)
    _same(h.flatten().tolist(), want)


@pytest.mark.parametrize("v", [INF, NAN, 0.0, 3.0])
def test_prod_of_a_0dim_tensor_passes_the_gradient(v):
    # torch: a 0-dim input's gradient is grad itself (inf/inf gave NaN)
    for f in (lambda t: t.prod(), lambda t: t.prod(0), lambda t: t.prod(-1, keepdim=True)):
        x = tp.tensor(v, requires_grad=True)
        g, = tp.autograd.grad(f(x), x)
        assert g.item() == 1.0


def test_prod_dtype_argument_differentiates_in_that_dtype():
    # torch: prod_backward(grad, self.to(grad's dtype), result): float32 values whose product
    # leaves float32's range, reduced in float64, have their exact float64 gradient
    x = tp.tensor([1e-30, 1e-30, 1e30, 1e30], requires_grad=True)
    g, = tp.autograd.grad(x.prod(dtype=tp.float64), x)
    assert g.dtype is tp.float32
    _same(g.tolist(), [1.0000000150474662e+30, 1.0000000150474662e+30,
                       1.0000000031710769e-30, 1.0000000031710769e-30])


def test_div_gradient_of_the_divisor_in_torchs_order():
    # -grad * ((a / b) / b), torch's div_tensor_other_backward: -(grad * a) / (b * b) squared
    # 1e-30 to 0 in float32 (-inf, NaN); prod's second derivative goes through it
    for dt, a, b, want in (("float32", 1e-30, 1e-30, -1.0000000150474662e+30),
                           ("float32", 0.0, 1e-30, -0.0),
                           ("float32", 1e20, 1e20, -9.999999682655225e-21),
                           ("float64", 1e-30, 1e-30, -9.999999999999999e+29)):
        x = tp.tensor([a], dtype=getattr(tp, dt))
        y = tp.tensor([b], dtype=getattr(tp, dt), requires_grad=True)
        (x / y).sum().backward()
        assert y.grad.item() == want


def test_div_in_place_divisor_gradient_in_torchs_order():
    # div_'s formula, the same order (it matched out-of-place div's old -(g*a)/(b*b))
    x = tp.tensor([1e-30, 0.0, 1e20])
    y = tp.tensor([1e-30, 1e-30, 1e20], requires_grad=True)
    (x * 1).div_(y).sum().backward()
    assert y.grad.tolist() == [-1.0000000150474662e+30, -0.0, -9.999999682655225e-21]
