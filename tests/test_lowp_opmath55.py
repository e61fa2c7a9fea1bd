"""float16/bfloat16 elementwise ops of several arithmetic steps compute at float32 and round once
(session 55: ``x.add_(y, alpha=0.3)``, ``addcmul``, ``addcdiv``, ``lerp``, ``rsub`` in bf16 gave
torch's value in only 60-85% of the elements: each step was rounded to bf16).

The expected values are written out here with NumPy float32 arithmetic and ml_dtypes conversions
(no torch, public tensorplay API only), as torch 2.13's cpu kernels compute them (checked
against torch on 4096-element arrays, every element equal):

* ``add``/``sub``/``rsub`` with ``alpha``: ``a + alpha * b`` at float32, ``alpha`` (and a number
  ``other``) first converted to the tensors' dtype, as every number of an add;
* ``addcmul``: ``a + (value * t1) * t2``, ``value`` at float32, the last multiply-add fused
  (torch's vectorized loop: one rounding of ``a + p * t2``);
* ``addcdiv``: ``a + (value * t1) / t2`` at float32;
* ``lerp``: ``a + w * (b - a)`` where ``|w| < 0.5``, else ``b - (b - a) * (1 - w)``, ``w`` at
  float32 (a number is not rounded to the tensors' dtype), the multiply-add fused;

then the float32 result rounded to the dtype once. A fused multiply-add is computed here in
float64 (the product of two float32 numbers is exact there), rounded to float32.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")

import tensorplay as tp  # noqa: E402

F32, F64 = np.float32, np.float64
NATIVE = {tp.bfloat16: np.dtype(ml_dtypes.bfloat16), tp.float16: np.dtype(np.float16)}
DTYPES = [tp.bfloat16, tp.float16]
N = 257                      # not a multiple of any vector width


def rnd(x, dt):
    """float32 value(s) rounded to ``dt`` once (as float32)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=F32).astype(NATIVE[dt]).astype(F32)


def num(s, dt):
    """A Python number as torch converts it to ``dt``: double -> float32 -> dt."""
    return F32(rnd(F32(s), dt))


def fma(x, y, z):
    """``x * y + z`` of float32 arrays rounded to float32 once."""
    return (np.asarray(x, F64) * np.asarray(y, F64) + np.asarray(z, F64)).astype(F32)


def data(dt, *shapes, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    return [rnd(rng.standard_normal(s).astype(F32) + F32(shift), dt) for s in shapes]


def T(x, dt):
    return tp.tensor(np.asarray(x, F32).tolist(), dtype=dt)


def bits(t, dt):
    """A tensor's values as float32 (exact for float16/bfloat16)."""
    assert t.dtype == dt
    return np.asarray(t.float().tolist(), dtype=F32)


def same(t, expected, dt):
    got = bits(t, dt)
    exp = rnd(expected, dt)
    assert got.shape == exp.shape
    bad = ~((got == exp) | (np.isnan(got) & np.isnan(exp)))
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements differ, e.g. got "
                           f"{got[bad][:4]} expected {exp[bad][:4]}")


# -- add / sub / rsub with alpha ---------------------------------------------------------------
def add_expected(a, b, alpha, dt):
    return a + num(alpha, dt) * b


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("alpha", [0.3, -1.7, 2, 1e-3])
def test_add_alpha_forms(dt, alpha):
    a, b = data(dt, N, N)
    exp = add_expected(a, b, alpha, dt)
    same(tp.add(T(a, dt), T(b, dt), alpha=alpha), exp, dt)
    same(T(a, dt).add(T(b, dt), alpha=alpha), exp, dt)
    x = T(a, dt)
    r = x.add_(T(b, dt), alpha=alpha)
    assert r is x
    same(x, exp, dt)
    out = tp.empty(N, dtype=dt)
    r = tp.add(T(a, dt), T(b, dt), alpha=alpha, out=out)
    assert r is out
    same(out, exp, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("alpha", [0.3, 3])
def test_sub_rsub_alpha_forms(dt, alpha):
    a, b = data(dt, N, N)
    exp = a - num(alpha, dt) * b
    same(tp.sub(T(a, dt), T(b, dt), alpha=alpha), exp, dt)
    same(T(a, dt).sub(T(b, dt), alpha=alpha), exp, dt)
    x = T(a, dt)
    x.sub_(T(b, dt), alpha=alpha)
    same(x, exp, dt)
    out = tp.empty(N, dtype=dt)
    tp.sub(T(a, dt), T(b, dt), alpha=alpha, out=out)
    same(out, exp, dt)
    # rsub(input, other, alpha) = other - alpha * input
    same(tp.rsub(T(b, dt), T(a, dt), alpha=alpha), exp, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_add_alpha_broadcast_and_numbers(dt):
    a, b = data(dt, (5, 7), (7,))
    exp = add_expected(a, b, 0.3, dt)
    same(tp.add(T(a, dt), T(b, dt), alpha=0.3), exp, dt)
    x = T(a, dt)
    x.sub_(T(b, dt), alpha=0.3)
    same(x, a - num(0.3, dt) * b, dt)
    # a number other: converted to dt, as alpha
    for s in (2.7, 0.1, -3.3):
        same(tp.add(T(a, dt), s, alpha=0.3), a + num(s, dt) * num(0.3, dt), dt)
        x = T(a, dt)
        x.add_(s, alpha=0.3)
        same(x, a + num(s, dt) * num(0.3, dt), dt)
    # a 0-dim float32 other takes the dimensioned tensor's dtype (rounded to it first)
    z = tp.tensor(2.7, dtype=tp.float32)
    same(tp.add(T(a, dt), z, alpha=0.3), a + num(2.7, dt) * num(0.3, dt), dt)
    # ... and so does a 0-dim float32 input, and a dimensioned integer one
    same(tp.sub(z, T(b, dt), alpha=0.3), num(2.7, dt) - num(0.3, dt) * b, dt)
    ints = np.arange(-3, 4, dtype=np.int64)
    bb = b[0]
    same(tp.add(tp.tensor(ints.tolist()), T(bb, dt), alpha=0.3),
         ints.astype(F32) + num(0.3, dt) * bb, dt)
    same(T(bb, dt).sub(tp.tensor(ints.tolist()), alpha=0.3), bb - num(0.3, dt) * ints, dt)


# -- addcmul / addcdiv -------------------------------------------------------------------------
def addcmul_expected(a, t1, t2, value):
    return fma(F32(value) * t1, t2, a)


def addcdiv_expected(a, t1, t2, value):
    return a + (F32(value) * t1) / t2


def _check_addc_forms(name, exp, dt, a, t1, t2, value):
    """``tp.<name>``, the method, the in-place method (returns self) and ``out=`` all give ``exp``."""
    same(getattr(tp, name)(T(a, dt), T(t1, dt), T(t2, dt), value=value), exp, dt)
    same(getattr(T(a, dt), name)(T(t1, dt), T(t2, dt), value=value), exp, dt)
    x = T(a, dt)
    assert getattr(x, name + "_")(T(t1, dt), T(t2, dt), value=value) is x
    same(x, exp, dt)
    out = tp.empty(N, dtype=dt)
    getattr(tp, name)(T(a, dt), T(t1, dt), T(t2, dt), value=value, out=out)
    same(out, exp, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("value", [0.7, -2.3, 1])
def test_addcmul_forms(dt, value):
    a, t1, t2 = data(dt, N, N, N)
    _check_addc_forms("addcmul", addcmul_expected(a, t1, t2, value), dt, a, t1, t2, value)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("value", [0.7, -2.3, 1])
def test_addcdiv_forms(dt, value):
    a, t1, t2 = data(dt, N, N, N)
    t2 = rnd(t2 + F32(3.0) * np.sign(t2), dt)        # away from zero
    _check_addc_forms("addcdiv", addcdiv_expected(a, t1, t2, value), dt, a, t1, t2, value)


@pytest.mark.parametrize("dt", DTYPES)
def test_addc_broadcast(dt):
    a, t1, t2 = data(dt, (4, 6), (6,), (4, 1))
    same(tp.addcmul(T(a, dt), T(t1, dt), T(t2, dt), value=0.7),
         addcmul_expected(a, t1, t2, 0.7), dt)
    t2 = rnd(t2 + F32(3.0), dt)
    x = T(a, dt)
    x.addcdiv_(T(t1, dt), T(t2, dt), value=0.7)
    same(x, addcdiv_expected(a, t1, t2, 0.7), dt)
    # input broadcast up to the tensors' shape (out of place only)
    s, u, v = data(dt, (6,), (4, 6), (4, 6), seed=3)
    same(tp.addcmul(T(s, dt), T(u, dt), T(v, dt), value=0.7), addcmul_expected(s, u, v, 0.7), dt)


# -- lerp --------------------------------------------------------------------------------------
def lerp_expected(a, b, w):
    w = np.asarray(w, F32)
    d = b - a
    small = np.abs(w) < F32(0.5)
    return np.where(small, fma(w, d, a), fma(w - F32(1), d, b))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("w", [0.3, 0.7, -0.2, 1.4, 0.5])
def test_lerp_scalar_weight_forms(dt, w):
    a, b = data(dt, N, N)
    exp = lerp_expected(a, b, np.full(N, w, F32))
    same(tp.lerp(T(a, dt), T(b, dt), w), exp, dt)
    same(T(a, dt).lerp(T(b, dt), w), exp, dt)
    x = T(a, dt)
    assert x.lerp_(T(b, dt), w) is x
    same(x, exp, dt)
    out = tp.empty(N, dtype=dt)
    tp.lerp(T(a, dt), T(b, dt), w, out=out)
    same(out, exp, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_lerp_tensor_weight_forms(dt):
    a, b = data(dt, N, N)
    w = rnd(np.random.default_rng(5).uniform(-0.5, 1.5, N).astype(F32), dt)
    exp = lerp_expected(a, b, w)
    same(tp.lerp(T(a, dt), T(b, dt), T(w, dt)), exp, dt)
    x = T(a, dt)
    x.lerp_(T(b, dt), T(w, dt))
    same(x, exp, dt)
    out = tp.empty(N, dtype=dt)
    tp.lerp(T(a, dt), T(b, dt), T(w, dt), out=out)
    same(out, exp, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_lerp_broadcast(dt):
    a, b, w = data(dt, (3, 8), (8,), (3, 1), seed=2)
    w = rnd(np.abs(w), dt)
    same(tp.lerp(T(a, dt), T(b, dt), T(w, dt)), lerp_expected(a, b, w), dt)
    x = T(a, dt)
    x.lerp_(T(b, dt), 0.3)
    same(x, lerp_expected(a, b, np.full((3, 8), 0.3, F32)), dt)


# -- gradients: torch's formulas, each of their ops rounded to the dtype -----------------------
@pytest.mark.parametrize("dt", DTYPES)
def test_gradients(dt):
    a, b, c, g = data(dt, N, N, N, N, seed=7)
    G = T(g, dt)

    def leaves(*xs):
        return [T(x, dt).requires_grad_() for x in xs]

    A, B = leaves(a, b)
    tp.add(A, B, alpha=0.3).backward(G)
    same(A.grad, g, dt)
    same(B.grad, g * F32(0.3), dt)           # grad * alpha (mul's number: at float32)
    A, B = leaves(a, b)
    tp.sub(A, B, alpha=0.3).backward(G)
    same(B.grad, -g * F32(0.3), dt)
    A, B, C = leaves(a, b, c)
    tp.addcmul(A, B, C, value=0.7).backward(G)
    same(A.grad, g, dt)
    same(B.grad, g * rnd(c * F32(0.7), dt), dt)    # grad * (tensor2 * value)
    same(C.grad, g * rnd(b * F32(0.7), dt), dt)
    c3 = rnd(c + F32(3.0) * np.sign(c), dt)
    A, B, C = leaves(a, b, c3)
    tp.addcdiv(A, B, C, value=0.7).backward(G)
    same(B.grad, g * rnd(num(0.7, dt) / c3, dt), dt)   # grad * (value / tensor2)
    same(C.grad, -g * rnd(rnd(b * F32(0.7), dt) / rnd(c3 * c3, dt), dt), dt)
    A, B = leaves(a, b)
    tp.lerp(A, B, 0.3).backward(G)
    same(A.grad, g * F32(0.7), dt)           # grad * (1 - weight), weight a double
    same(B.grad, g * F32(0.3), dt)
    A, B, W = leaves(a, b, c)
    tp.lerp(A, B, W).backward(G)
    same(A.grad, g * rnd(F32(1) - c, dt), dt)
    same(B.grad, g * c, dt)
    same(W.grad, g * rnd(b - a, dt), dt)


# -- float32 keeps its own values (no float64 step: the op-by-op float32 arithmetic) -----------
def test_float32_unchanged():
    a, b, c = data(tp.bfloat16, N, N, N)
    f = tp.float32
    x = tp.tensor(a.tolist(), dtype=f)
    x.add_(tp.tensor(b.tolist(), dtype=f), alpha=0.3)
    assert np.array_equal(np.asarray(x.tolist(), F32), a + b * F32(0.3))
    r = tp.addcmul(tp.tensor(a.tolist(), dtype=f), tp.tensor(b.tolist(), dtype=f),
                   tp.tensor(c.tolist(), dtype=f), value=0.7)
    assert np.array_equal(np.asarray(r.tolist(), F32), a + (F32(0.7) * b) * c)


# -- compiled: the same values as eager ---------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
def test_compiled_matches_eager(dt):
    a, b, c = data(dt, N, N, N, seed=11)

    def f(x, y, z):
        return tp.addcmul(x, y, z, value=0.7), tp.lerp(x, y, 0.3), tp.add(x, y, alpha=0.3)

    cf = tp.compile(f)
    args = (T(a, dt), T(b, dt), T(c, dt))
    for _ in range(2):
        got = cf(*args)
        for r, exp in zip(got, (addcmul_expected(a, b, c, 0.7),
                                 lerp_expected(a, b, np.full(N, 0.3, F32)),
                                 add_expected(a, b, 0.3, dt))):
            same(r, exp, dt)


# -- ops whose torch kernels round an operand or a step to the dtype (torch 2.13's cpu kernels:
# TensorIterator converts numbers and 0-dim tensors to the common dtype; the vectorized
# float16/bfloat16 arithmetic of logit, of bf16 pow by 3 / -2 and bf16 log in xlogy rounds each
# step), and float16 composites that torch computes at float32 (sigmoid, rsqrt) ---------------
def pos(dt, n=N, seed=9, lo=0.05, hi=0.95):
    return rnd(np.random.default_rng(seed).uniform(lo, hi, n).astype(F32), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_float16_composites_round_once(dt):
    x, = data(dt, N, seed=4)
    q = pos(dt, lo=0.05, hi=3.0)
    with np.errstate(over="ignore"):
        same(tp.sigmoid(T(x, dt)), F32(1) / (F32(1) + np.exp(-x)), dt)
    same(tp.rsqrt(T(q, dt)), F32(1) / np.sqrt(q), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_number_operands_rounded(dt):
    x, = data(dt, N, seed=4)
    q = pos(dt, lo=0.05, hi=3.0)
    same(tp.fmod(T(x, dt), 0.7), np.fmod(x, num(0.7, dt)), dt)
    same(tp.fmod(T(x, dt), tp.tensor(0.7)), np.fmod(x, num(0.7, dt)), dt)
    same(tp.pow(T(q, dt), 0.7), q ** num(0.7, dt), dt)
    same(tp.atan2(T(x, dt), tp.tensor(0.7)), np.arctan2(x, num(0.7, dt)), dt)
    same(tp.hypot(T(x, dt), tp.tensor(0.7)), np.hypot(x, num(0.7, dt)), dt)


def test_bfloat16_pow_steps():
    dt = tp.bfloat16
    x, = data(dt, N, seed=4)
    same(T(x, dt) ** 3, rnd(x * x, dt) * x, dt)
    with np.errstate(divide="ignore"):
        same(T(x, dt) ** -2, F32(1) / rnd(x * x, dt), dt)
    same(T(x, dt) ** 2, x * x, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_xlogy_and_logit_steps(dt):
    x, = data(dt, N, seed=4)
    q = pos(dt, lo=0.05, hi=3.0)
    same(tp.xlogy(T(x, dt), T(q, dt)), x * rnd(np.log(q), dt), dt)
    same(tp.xlogy(T(x, dt), 2.7), x * rnd(np.log(num(2.7, dt)), dt), dt)
    same(tp.special.xlog1py(T(x, dt), T(q, dt)), x * rnd(np.log1p(q), dt), dt)
    p = pos(dt)
    same(tp.logit(T(p, dt)), np.log(rnd(p / rnd(F32(1) - p, dt), dt)), dt)
    lo = num(0.1, dt)
    hi = rnd(F32(1) - lo, dt)
    pc = np.clip(p, lo, hi)
    same(tp.logit(T(p, dt), eps=0.1), np.log(rnd(pc / rnd(F32(1) - pc, dt), dt)), dt)


@pytest.mark.parametrize("dt", [tp.float16, tp.bfloat16])
@pytest.mark.parametrize("alpha", [2, 0.5])
def test_sub_with_a_bool_operand_and_alpha_is_refused_as_torch(dt, alpha):
    # torch: "Subtraction, the `-` operator, with a bool tensor is not supported" (RuntimeError),
    # also when the other operand is float16/bfloat16 and alpha is given; add keeps bool rules
    b, f = tp.ones(3, dtype=tp.bool), tp.ones(3, dtype=dt)
    for x, y in ((b, f), (f, b)):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            tp.sub(x, y, alpha=alpha)
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            x.sub(y, alpha=alpha)
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        f.clone().sub_(b, alpha=alpha)
    assert tp.add(b, f, alpha=2).tolist() == [3.0, 3.0, 3.0]
    assert tp.add(f, b, alpha=2).dtype == dt
