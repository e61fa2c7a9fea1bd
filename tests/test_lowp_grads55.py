"""float16/bfloat16 GRADIENTS as torch computes them (session 55, the fresh user: d tanh(x)/dx at
-2 in bf16 was 0.0703125 where torch's is 0.06884765625; ``3 / x``, ``hypot``, ``sigmoid``,
``softmax``/``log_softmax``, ``exp2``, ``sinc`` off torch's in 30-60% of the elements).

torch's rule, from derivatives.yaml: a formula that is ONE kernel (``tanh_backward``,
``sigmoid_backward``, ``_softmax_backward_data``, ``_log_softmax_backward_data``) computes at
float32 and rounds once (sigmoid's in float16: each step rounded, its Half vectors); a formula
written with ops rounds after each op, in the formula's order:

* ``div``, other: ``-grad * ((self / other) / other)``;
* ``s / x`` (torch: ``x.reciprocal() * s``): ``-(grad * s) * (r * r)``, ``r = 1 / x`` rounded;
* ``hypot``: ``(grad * self) / result``, ``(grad * other) / result``;
* ``exp2``: ``(grad * result) * ln 2``;
* ``sinc``: ``grad * ((x pi cos(x pi) - sin(x pi)) / ((x * x) * pi))``.

Expected values: NumPy float32 arithmetic and ml_dtypes roundings (no torch; checked against
torch 2.13's cpu gradients on these inputs, every element equal). Sizes multiples of 32: torch's
vectorized loop (a tail shorter than a vector may round differently in torch itself).
Also: ``lerp`` with a 0-dim weight tensor of another dtype (torch: it takes part like a number).
"""

from __future__ import annotations

import math

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")

import tensorplay as tp  # noqa: E402

F32 = np.float32
NATIVE = {tp.bfloat16: np.dtype(ml_dtypes.bfloat16), tp.float16: np.dtype(np.float16)}
DTYPES = [tp.bfloat16, tp.float16]
N = 128


def rnd(x, dt):
    """float32 value(s) rounded to ``dt`` once (as float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=F32).astype(NATIVE[dt]).astype(F32)


def data(dt, shape, seed, scale=2.0, shift=0.0):
    rng = np.random.default_rng(seed)
    return rnd(rng.standard_normal(shape).astype(F32) * F32(scale) + F32(shift), dt)


def T(x, dt, rg=False):
    t = tp.tensor(np.asarray(x, F32).tolist(), dtype=dt)
    return t.requires_grad_() if rg else t


def npy(t):
    return np.asarray(t.detach().float().tolist(), dtype=F32)


def grads(fn, dt, *arrays, seed=99):
    """(output, gradients) of ``fn`` on ``arrays`` (as ``dt`` leaves) under a gradient ``g``."""
    ins = [T(a, dt, True) for a in arrays]
    out = fn(*ins)
    g = data(dt, tuple(out.shape), seed, scale=1.0)
    gs = tp.autograd.grad(out, ins, T(g, dt))
    return npy(out), g, [npy(x) for x in gs]


def same(got, want):
    got, want = np.asarray(got, F32), np.asarray(want, F32)
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    assert not bad.any(), (f"{int(bad.sum())}/{bad.size} differ, first at "
                           f"{np.flatnonzero(bad)[:4].tolist()}: {got[bad][:4]} != {want[bad][:4]}")


# -- one-kernel gradients: at float32, rounded once ---------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
def test_tanh_grad_is_one_rounding(dt):
    x = data(dt, N, 1)
    y, g, (gx,) = grads(lambda a: a.tanh(), dt, x)
    same(gx, rnd(g * (F32(1) - y * y), dt))


def test_tanh_grad_at_minus_two_bf16():   # the fresh user's example (torch: 0.06884765625)
    x = tp.tensor([-2.0] * 64, dtype=tp.bfloat16, requires_grad=True)
    x.tanh().sum().backward()
    assert x.grad[0].item() == 0.06884765625
    x = tp.tensor(-2.0, dtype=tp.bfloat16, requires_grad=True)
    x.tanh().backward()
    assert x.grad.item() == 0.06884765625


@pytest.mark.parametrize("dt", DTYPES)
def test_sigmoid_grad(dt):
    x = data(dt, N, 2)
    y, g, (gx,) = grads(lambda a: a.sigmoid(), dt, x)
    if dt is tp.float16:   # torch's Half kernel: each step rounded
        want = rnd(rnd(g * rnd(F32(1) - y, dt), dt) * y, dt)
    else:
        want = rnd(g * (F32(1) - y) * y, dt)
    same(gx, want)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_grads(dt, dim):
    x = data(dt, N, 3).reshape(4, 32)
    y, g, (gx,) = grads(lambda a: a.softmax(dim), dt, x)
    s = (g * y).sum(dim, keepdims=True, dtype=F32)
    same(gx, rnd(y * (g - s), dt))
    y, g, (gx,) = grads(lambda a: a.log_softmax(dim), dt, x)
    same(gx, rnd(g - np.exp(y) * g.sum(dim, keepdims=True, dtype=F32), dt))


# -- composite gradients: torch's op order, each op rounded -------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
def test_div_other_grad(dt):
    a, b = data(dt, N, 4), rnd(np.abs(data(dt, N, 5)) + F32(0.1), dt)
    _, g, (ga, gb) = grads(lambda x, y: x / y, dt, a, b)
    same(ga, rnd(g / b, dt))
    same(gb, rnd(-g * rnd(rnd(a / b, dt) / b, dt), dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("s", [3.0, 0.7, 1])
def test_number_over_tensor_grad(dt, s):
    x = data(dt, N, 6)
    _, g, (gx,) = grads(lambda a: s / a, dt, x)
    r = rnd(F32(1) / x, dt)
    same(gx, rnd(-rnd(g * F32(s), dt) * rnd(r * r, dt), dt))
    _, g, (gx,) = grads(lambda a: a.reciprocal(), dt, x)
    same(gx, rnd(-g * rnd(r * r, dt), dt))


def test_three_over_x_bf16():   # the fresh user's example (torch: -6.125)
    x = tp.tensor(0.7, dtype=tp.bfloat16, requires_grad=True)
    (3.0 / x).backward()
    assert x.grad.item() == -6.125


@pytest.mark.parametrize("dt", DTYPES)
def test_hypot_grads(dt):
    a, b = data(dt, N, 7), data(dt, N, 8)
    r, g, (ga, gb) = grads(tp.hypot, dt, a, b)
    same(ga, rnd(rnd(g * a, dt) / r, dt))
    same(gb, rnd(rnd(g * b, dt) / r, dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_exp2_and_sinc_grads(dt):
    x = data(dt, N, 9)
    r, g, (gx,) = grads(lambda a: a.exp2(), dt, x)
    same(gx, rnd(rnd(g * r, dt) * F32(math.log(2.0)), dt))
    x[5] = 0.0
    _, g, (gx,) = grads(lambda a: a.sinc(), dt, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        px = rnd(x * F32(math.pi), dt)
        num = rnd(rnd(px * rnd(np.cos(px), dt), dt) - rnd(np.sin(px), dt), dt)
        sq = rnd(rnd(x * x, dt) * F32(math.pi), dt)
        want = np.where(sq == 0, F32(0), rnd(g * rnd(num / sq, dt), dt))
    same(gx, want)


# -- a second backward through the one-kernel gradients -----------------------------------------
@pytest.mark.parametrize("name", ["tanh", "sigmoid", "softmax", "log_softmax"])
def test_double_backward_bf16_close_to_float32(name):
    def f(a):
        return getattr(a, name)() if name in ("tanh", "sigmoid") else getattr(a, name)(-1)
    x = data(tp.bfloat16, (2, 32), 10, scale=1.0)
    res = []
    for dt in (tp.bfloat16, tp.float32):
        xt = T(x, dt, True)
        (gx,) = tp.autograd.grad((f(xt) * T(np.linspace(-1, 1, 64).reshape(2, 32), dt)).sum(),
                                 [xt], create_graph=True)
        (gg,) = tp.autograd.grad((gx * gx).sum(), [xt])
        assert gg.dtype is dt
        res.append(npy(gg))
    np.testing.assert_allclose(res[0], res[1], rtol=0.05, atol=0.05)


# -- float32 keeps its values ---------------------------------------------------------------------
def test_float32_grads_unchanged():
    x = np.random.default_rng(11).standard_normal(64).astype(F32)
    g = np.random.default_rng(12).standard_normal(64).astype(F32)
    xt = T(x, tp.float32, True)
    y = xt.tanh()
    (gx,) = tp.autograd.grad(y, [xt], T(g, tp.float32))
    yn = npy(y)
    same(npy(gx), g * (F32(1) - yn * yn))
    xt = T(x, tp.float32, True)
    (gx,) = tp.autograd.grad(3.0 / xt, [xt], T(g, tp.float32))
    same(npy(gx), -((g * F32(3)) / (x * x)))


# -- lerp with a 0-dim weight tensor of another dtype -------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("w", [0.3, 0.7])
def test_lerp_zero_dim_weight_tensor(dt, w):
    a, b = data(dt, 64, 12), data(dt, 64, 13)
    at, bt, wt = T(a, dt, True), T(b, dt, True), tp.tensor(w, requires_grad=True)
    r = tp.lerp(at, bt, wt)
    assert r.dtype is dt
    # the weight converted to dt first (torch's common dtype), then the opmath lerp
    wl = rnd(F32(w), dt)
    d = b - a
    base, coeff = (a, wl) if abs(wl) < 0.5 else (b, wl - F32(1))
    same(npy(r), rnd((np.float64(coeff) * d.astype(np.float64) + base).astype(F32), dt))
    ga, gb, gw = tp.autograd.grad(r.sum(), [at, bt, wt])
    assert ga.dtype is dt and gb.dtype is dt and gw.dtype is tp.float32
    x = T(a, dt)
    assert x.lerp_(T(b, dt), tp.tensor(w, dtype=tp.float64)) is x and x.dtype is dt
    same(npy(x), npy(r))


def test_lerp_weight_dtype_rules():
    a, b = tp.ones(4, dtype=tp.bfloat16), tp.zeros(4, dtype=tp.bfloat16)
    with pytest.raises(RuntimeError, match="weight"):
        tp.lerp(a, b, tp.tensor([0.3]))          # a dimensioned weight must match
    assert tp.lerp(a, b, tp.tensor(1)).dtype is tp.bfloat16
    a0, b0 = tp.tensor(1.0, dtype=tp.bfloat16), tp.tensor(2.0, dtype=tp.bfloat16)
    assert tp.lerp(a0, b0, tp.tensor(0.3)).dtype is tp.float32   # all 0-dim: promoted


@pytest.mark.parametrize("dt", DTYPES)
def test_cumsum_grad_is_reversed_cumsum(dt):
    # torch's cumsum_backward: grad.flip(dim).cumsum(dim).flip(dim), the sums at float32 and
    # each element rounded once (total - cumsum(g) + g rounded three times)
    x = data(dt, (4, 32), 14)
    for dim in (1, 0):
        _, g, (gx,) = grads(lambda a: a.cumsum(dim), dt, x, seed=dim)
        flip = np.flip(g, dim)
        same(gx, rnd(np.flip(np.cumsum(flip, dim, dtype=F32), dim), dt))
    # with dtype=float32: the gradient converted to the input's dtype first
    xt = T(x, dt, True)
    g32 = np.random.default_rng(3).standard_normal((4, 32)).astype(F32)
    (gx,) = tp.autograd.grad(xt.cumsum(1, dtype=tp.float32), [xt], T(g32, tp.float32))
    g = rnd(g32, dt)
    same(npy(gx), rnd(np.flip(np.cumsum(np.flip(g, 1), 1, dtype=F32), 1), dt))
