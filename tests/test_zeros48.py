"""Session 48 (h-zeros48): the zero gradients of the piecewise-constant ops (sign, floor, ceil,
trunc, round, floor_divide, ``x ** 0``), of the inputs whose values an op ignores or overwrites
(copysign's and nextafter's ``other``, copy_/fill_'s ``self``, masked_fill/masked_scatter where
the mask is set, qr's right block when only Q is used) and of ``vector_norm(x, 0)`` are exact
zeros, as torch's formulas (``zeros_like(grad)``, ``grad.masked_fill(mask, 0)``): ``grad * 0``
gave NaN where the incoming gradient is inf or NaN; maximum/minimum/clamp's losing operand
(torch's where/masked_fill, not ``g * mask``; a NaN operand gives g to both). scatter_reduce("prod")'s zero count with an
infinite ``self``. ``polygamma(n >= 2, x)`` on cpu below -2^20 (was a RuntimeError; torch gives
+-inf at the poles: every float below -2^52 is an integer). Torch-free (the values checked here
are torch 2.13's, read from it; the differential is
tests/torch_bridge/test_zeros48_differential.py).
"""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay import linalg as LA

INF, NAN = math.inf, math.nan
X = [-1.5, 0.0, 2.5, -0.5]
Y = [2.0, -3.0, 0.5, 1.0]


def _grads(fn, gval, *arrays, dtype=tp.float64):
    """The inputs' gradients of ``fn(*inputs)`` under an incoming gradient full of ``gval``."""
    ts = [tp.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(tp.full(out.shape, gval, dtype=out.dtype))
    return [t.grad for t in ts]


def _zero(t):
    return t is not None and not t.isnan().any().item() and t.eq(0).all().item()


ZERO_SELF = {
    "sign": tp.sign,
    "floor": tp.floor,
    "ceil": tp.ceil,
    "trunc": tp.trunc,
    "round": tp.round,
    "round_decimals": lambda x: tp.round(x, decimals=1),
    "pow_0": lambda x: x ** 0,
    "pow_0.0": lambda x: tp.pow(x, 0.0),
    # (floor_divide itself has no derivative, as torch's: tests/test_floor_divide_grad57.py)
    "div_floor_number": lambda x: tp.div(x, 2.0, rounding_mode="floor"),
    "div_trunc_number": lambda x: tp.div(x, 2.0, rounding_mode="trunc"),
    "copy_": lambda x: x.clone().copy_(tp.tensor(Y, dtype=tp.float64)),
    "fill_": lambda x: x.clone().fill_(2.0),
    "method_floor": lambda x: x.floor(),
}


@pytest.mark.parametrize("gval", [INF, -INF, NAN])
@pytest.mark.parametrize("name", sorted(ZERO_SELF))
def test_zero_gradient_under_inf_and_nan(name, gval):
    g, = _grads(ZERO_SELF[name], gval, X)
    assert _zero(g), g
    assert g.shape == (4,) and g.dtype is tp.float64


@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.bfloat16])
def test_zero_gradient_dtype(dtype):
    for fn in (tp.sign, tp.floor, lambda x: x ** 0):
        g, = _grads(fn, INF, X, dtype=dtype)
        assert g.dtype is dtype and _zero(g)


@pytest.mark.parametrize("gval", [INF, NAN])
def test_two_operand_zero_parts(gval):
    # div(rounding_mode='floor'): both zeros; copysign / nextafter: other's zeros (self's:
    # torch's formula, inf/NaN through a finite factor)
    ga, gb = _grads(lambda a, b: tp.div(a, b, rounding_mode="floor"), gval, X, Y)
    assert _zero(ga) and _zero(gb)
    ga, gb = _grads(tp.copysign, gval, X, Y)
    assert _zero(gb)
    if gval == INF:      # torch: [-inf, nan, inf, -inf] (g * result / self, 0 * inf at 0)
        assert ga[0].item() == -INF and ga[2].item() == INF and math.isnan(ga[1].item())
    else:
        assert ga.isnan().all().item()
    ga, gb = _grads(tp.nextafter, gval, X, Y)
    assert _zero(gb)
    # broadcast other: reduced zeros of its shape
    ga, gb = _grads(tp.copysign, gval, X, [-1.0])
    assert gb.shape == (1,) and _zero(gb)


@pytest.mark.parametrize("gval", [INF, NAN])
def test_copy_fill_source_gets_the_gradient(gval):
    ga, gb = _grads(lambda a, b: a.clone().copy_(b), gval, X, Y)
    assert _zero(ga)
    assert all(v == gval or (math.isnan(v) and math.isnan(gval)) for v in gb.tolist())
    ga, gv = _grads(lambda a, v: a.clone().fill_(v), gval, X, 2.0)
    assert _zero(ga) and gv.shape == ()


@pytest.mark.parametrize("gval", [INF, NAN])
def test_masked_fill_and_scatter(gval):
    mask = tp.tensor([True, False, True, False])
    ga, gv = _grads(lambda a, v: a.masked_fill(mask, v), gval, X, 2.0)
    assert ga[0].item() == 0 and ga[2].item() == 0
    assert all((v == gval) or math.isnan(v) for v in (ga[1].item(), ga[3].item()))
    assert gv.item() == gval or math.isnan(gval)
    if gval == INF:     # the value's gradient: the sum of g where the mask is set (2 * inf)
        assert gv.item() == INF
    ga, gs = _grads(lambda a, s: a.masked_scatter(mask, s), gval, X, Y)
    assert ga[0].item() == 0 and ga[2].item() == 0
    assert gs[2].item() == 0 and gs[3].item() == 0       # the unused tail of the source


@pytest.mark.parametrize("gval", [INF, NAN])
def test_maximum_minimum_clamp_losers_get_zero(gval):
    # torch 2.13: where(a == b, g / 2, g).masked_fill(a loses, 0); clamp: where(inside, g, 0)
    a, b = [-1.5, 0.0, 2.5, 1.0], [2.0, 0.0, 0.5, 1.0]
    ga, gb = _grads(tp.maximum, gval, a, b)
    assert ga[0].item() == 0 and gb[2].item() == 0
    ga, gb = _grads(tp.minimum, gval, a, b)
    assert ga[2].item() == 0 and gb[0].item() == 0
    g, = _grads(lambda x: tp.clamp(x, -1.0, 1.0), gval, a)
    assert g[0].item() == 0 and g[2].item() == 0
    g, = _grads(lambda x: x.clamp(min=0.0), gval, a)
    assert g[0].item() == 0
    g, = _grads(lambda x: x.clamp(max=0.0), gval, a)
    assert g[2].item() == 0 and g[3].item() == 0


def test_maximum_minimum_nan_operand_and_ties():
    # torch 2.13: a NaN on either side gives g to both operands; a tie g / 2 to each
    a = tp.tensor([NAN, 1.0, 2.0, 3.0], requires_grad=True)
    b = tp.tensor([1.0, NAN, 2.0, 1.0], requires_grad=True)
    w = tp.tensor([1.0, 2.0, 3.0, 4.0])
    tp.maximum(a, b).backward(w)
    assert a.grad.tolist() == [1.0, 2.0, 1.5, 4.0] and b.grad.tolist() == [1.0, 2.0, 1.5, 0.0]
    a.grad = b.grad = None
    tp.minimum(a, b).backward(w)
    assert a.grad.tolist() == [1.0, 2.0, 1.5, 0.0] and b.grad.tolist() == [1.0, 2.0, 1.5, 4.0]
    # broadcast operand: its gradient reduced to its shape
    a = tp.tensor([[1.0, 3.0], [2.0, 0.0]], requires_grad=True)
    b = tp.tensor([2.0], requires_grad=True)
    tp.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [[0.0, 1.0], [0.5, 0.0]] and b.grad.tolist() == [2.5]


def test_vector_norm_ord0_gradient_is_zero():
    for gval in (INF, NAN, 1.0):
        g, = _grads(lambda x: LA.vector_norm(x, 0), gval, X)
        assert g is None or _zero(g)
    x = tp.tensor([-0.0, 0.0], dtype=tp.float64, requires_grad=True)
    n = LA.vector_norm(x, 0)
    assert n.item() == 0 and not math.copysign(1.0, n.item()) < 0


def test_qr_wide_q_only():
    # A (2 x 3): with only Q used, the right block's gradient is exact zeros (torch's Q @ 0)
    a = tp.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], dtype=tp.float64, requires_grad=True)
    q, r = LA.qr(a)
    q.sum().backward()
    assert a.grad[:, 2].tolist() == [0.0, 0.0]


def test_scatter_reduce_prod_infinite_self():
    # torch 2.13: self [inf, 2, 3], index [0, 0, 1], src [0, 2, 4], prod (include_self): the
    # src zero is the only zero of its slot, so its gradient is the product of the others (inf)
    x = tp.tensor([INF, 2.0, 3.0], dtype=tp.float64, requires_grad=True)
    s = tp.tensor([0.0, 2.0, 4.0], dtype=tp.float64, requires_grad=True)
    x.scatter_reduce(0, tp.tensor([0, 0, 1]), s, "prod").sum().backward()
    assert s.grad.tolist()[0] == INF and s.grad.tolist()[2] == 2.0
    assert math.isnan(s.grad.tolist()[1])
    assert x.grad.tolist()[1:] == [4.0, 1.0]


def test_create_graph_zero_has_no_history():
    x = tp.tensor(X, dtype=tp.float64, requires_grad=True)
    for fn in (tp.floor, tp.sign, lambda t: t ** 0):
        g, = tp.autograd.grad(fn(x).sum(), x, create_graph=True)
        assert g.tolist() == [0.0] * 4 and not g.requires_grad     # as torch's


def test_fake_backward_zero_gradient():
    with fake.FakeTensorMode():
        x = tp.empty((3, 2), requires_grad=True)
        g, = tp.autograd.grad(x.floor().sum(), x)
        assert g.shape == (3, 2) and g.dtype is tp.float32


def test_layout_of_zero_gradient():
    # zeros_like(grad): the incoming gradient's layout (a transposed output's gradient)
    x = tp.tensor([[1.5, -2.5, 0.5], [3.0, 1.0, -1.0]], dtype=tp.float64, requires_grad=True)
    y = x.t().floor()
    g, = tp.autograd.grad(y, x, grad_outputs=tp.full((3, 2), INF, dtype=tp.float64))
    assert g.shape == (2, 3) and _zero(g)


def test_compiled_backward_zero_gradient():
    def f(x):
        return (x.floor() * INF).sum() + (x ** 0).sum()
    cf = tp.compile(f)
    x = tp.tensor(X, dtype=tp.float64, requires_grad=True)
    cf(x).backward()
    assert _zero(x.grad)


# -- polygamma below -2^20 -----------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", [tp.float64, tp.float32])
def test_polygamma_far_negative_poles(n, dtype):
    sign_inf = INF if n % 2 else -INF       # torch: (-1)^(n+1) n! * inf
    xs = [-2.0 ** 52, -1e30, -2.0 ** 53 - 2, -INF, -2.0 ** 20 - 1, -3.0]
    if dtype is tp.float64:
        xs.append(-1e300)
    r = tp.polygamma(n, tp.tensor(xs, dtype=dtype))
    assert r.dtype is dtype
    assert r.tolist() == [sign_inf] * len(xs)


def test_polygamma_far_negative_mixed():
    # the far lanes do not change the others (the direct sum's values) and NaN passes
    near = tp.tensor([-2.5, 2.5, 10.0, -0.25, NAN], dtype=tp.float64)
    ref = tp.polygamma(2, near).tolist()
    r = tp.polygamma(2, tp.cat([near, tp.tensor([-2.0 ** 52, -2.0 ** 21 - 0.5],
                                                dtype=tp.float64)])).tolist()
    assert r[:4] == ref[:4] and math.isnan(r[4]) and r[5] == -INF
    # -2^21 - 1/2: psi_2(x) = psi_2(1 - x) there (P_2(0) = 0), about -1/q^2, q = 2^21 + 1.5
    q = 2.0 ** 21 + 1.5
    assert r[6] == pytest.approx(-1 / q ** 2 - 1 / q ** 3, rel=0.05)
    # trigamma (n = 1) was never refused; unchanged
    assert tp.polygamma(1, tp.tensor([-2.0 ** 52], dtype=tp.float64)).item() == \
        pytest.approx(35.945908185665665, rel=1e-12)


# -- maximum/minimum: the one-kernel backward and the op-by-op one give the same gradients ------
def _minmax_cases():
    a = [[1.0, NAN, 2.0, -INF], [0.5, 3.0, 3.0, 0.0]]
    b = [[1.0, 0.0, NAN, -INF], [1.5, 2.0, 3.0, -0.0]]
    g = [[INF, 2.0, 3.0, NAN], [-INF, 1.0, 0.25, 4.0]]
    return a, b, g


@pytest.mark.parametrize("op", [tp.maximum, tp.minimum])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_minmax_fused_equals_op_by_op(op, dtype):
    a, b, g = _minmax_cases()

    def grads(create_graph):
        ta = tp.tensor(a, dtype=dtype, requires_grad=True)
        tb = tp.tensor(b, dtype=dtype, requires_grad=True)
        # create_graph: the op-by-op formula (the ops record the graph); else the one kernel
        ga, gb = tp.autograd.grad(op(ta, tb), [ta, tb], grad_outputs=tp.tensor(g, dtype=dtype),
                                  create_graph=create_graph)
        return ga.tolist(), gb.tolist()

    fused_ = grads(False)
    plain = grads(True)
    assert str(fused_) == str(plain)      # (NaN in the same places)
    ga, gb = fused_
    # ties split, losers exact zeros under inf/NaN g, a NaN operand gives g to both
    assert ga[0][0] == INF / 2 and gb[0][0] == INF / 2
    assert ga[0][1] == 2.0 and gb[0][1] == 2.0 and ga[0][2] == 3.0 and gb[0][2] == 3.0
    assert ga[1][2] == 0.125 and gb[1][2] == 0.125
    lose_a = 0 if op is tp.maximum else 1
    assert (ga[1][0], gb[1][0])[lose_a] == 0.0


def test_minmax_broadcast_and_mixed_dtypes():
    # broadcast operand (reduced); float32 with float64 (no one-kernel path: dtypes differ);
    # bfloat16 (op by op)
    a = tp.tensor([[1.0, 3.0], [2.0, 0.0]], requires_grad=True)
    b = tp.tensor([2.0], dtype=tp.float64, requires_grad=True)
    tp.maximum(a, b).backward(tp.full((2, 2), INF, dtype=tp.float64))
    assert a.grad.dtype is tp.float32 and a.grad.tolist() == [[0.0, INF], [INF, 0.0]]
    assert b.grad.tolist() == [INF]
    a = tp.tensor([1.0, 3.0, 2.0], dtype=tp.bfloat16, requires_grad=True)
    b = tp.tensor([2.0, 2.0, 2.0], dtype=tp.bfloat16, requires_grad=True)
    tp.minimum(a, b).backward(tp.full((3,), INF, dtype=tp.bfloat16))
    assert a.grad.tolist() == [INF, 0.0, INF] and b.grad.tolist() == [0.0, INF, INF]


@pytest.mark.cuda
def test_zero_gradients_on_cuda():
    """On a GPU: the zero gradients (zeros_like, where) and maximum's one-kernel backward as the
    cpu's; polygamma below -2^20 (the reflection, as on the cpu now)."""
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    for fn in (tp.floor, tp.sign, lambda x: x ** 0, lambda x: x.masked_fill(x > 0, 1.0)):
        x = tp.tensor(X, dtype=tp.float64, device="cuda", requires_grad=True)
        y = fn(x)
        y.backward(tp.full(y.shape, INF, dtype=tp.float64, device="cuda"))
        xh = tp.tensor(X, dtype=tp.float64, requires_grad=True)
        yh = fn(xh)
        yh.backward(tp.full(yh.shape, INF, dtype=tp.float64))
        assert str(x.grad.cpu().tolist()) == str(xh.grad.tolist())
    a, b, g = _minmax_cases()
    for op in (tp.maximum, tp.minimum):
        out = []
        for dev in ("cuda", "cpu"):
            ta = tp.tensor(a, dtype=tp.float64, device=dev, requires_grad=True)
            tb = tp.tensor(b, dtype=tp.float64, device=dev, requires_grad=True)
            op(ta, tb).backward(tp.tensor(g, dtype=tp.float64, device=dev))
            out.append(str([ta.grad.cpu().tolist(), tb.grad.cpu().tolist()]))
        assert out[0] == out[1]
    xs = [-2.0 ** 52, -1e300, -INF, -2.0 ** 20 - 1]
    r = tp.polygamma(3, tp.tensor(xs, dtype=tp.float64, device="cuda"))
    assert r.cpu().tolist() == [INF] * 4


def test_polygamma_at_negative_zero_is_the_pole_of_positive_zero():
    # torch 2.13: a zero of either sign is the pole at 0, (-1)^(n+1) n! * inf (psi_2(-0.0) = -inf,
    # not the +inf that (-0.0)^-3 gave the series)
    import math
    for n, want in ((1, math.inf), (2, -math.inf), (3, math.inf), (4, -math.inf)):
        for dt in (tp.float32, tp.float64):
            for z in (0.0, -0.0):
                assert tp.polygamma(n, tp.tensor([z], dtype=dt)).tolist() == [want], (n, dt, z)
