"""The differences from torch 2.13 that session 40's differential run left open (issue 41).

1. A Python number on the left of ``//`` and ``%`` (``7 // t``) is "weak" as on the right: a
   0-dim tensor keeps its dtype (it gave int64). Checked for every reflected operator: a 0-dim
   operand gives what a one-element 1-dim operand gives (torch promotes them alike against a
   number), plus torch's own answers for the cases that were wrong.
2. ``all``/``any`` of a uint8 tensor give uint8 (torch's one exception), bool for the rest.
3. torch functions a user expects: the ``logical_*`` methods, ``logical_xor``, ``clamp_min``/
   ``clamp_max`` (and their in-place forms), ``clip``/``clip_``, ``remainder``/``floor_divide``
   as functions, ``var_mean``/``std_mean``, and a number as the first argument of ``pow``,
   the bitwise ops and the arithmetic functions torch accepts it in.
4. A zero float remainder has the sign of the dividend (torch's ``fmod``-based kernel), not of
   the divisor (NumPy's and Python's rule).

Expected values are torch 2.13's (checked by hand against it) or derived from a neighbour case
that already matches torch; nothing here imports torch.
"""

from __future__ import annotations

import math

import pytest
import tensorplay as tp
from tensorplay import fake

pytestmark = pytest.mark.usefixtures("cpu")

DTYPES = [tp.int8, tp.uint8, tp.int16, tp.int32, tp.int64, tp.float16, tp.bfloat16, tp.float32,
          tp.bool]
REFLECTED = ["__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
             "__rpow__", "__rand__", "__ror__", "__rxor__", "__rlshift__", "__rrshift__"]
NUMBERS = [7, -3, 2.5, True, 0]


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:   # noqa: BLE001 - a refusal is an outcome to compare
        return ("raised", type(e).__name__)
    if r is NotImplemented:
        return ("NotImplemented",)
    return ("ok", r.dtype, r.reshape(-1).tolist())


def _same_values(a, b):
    return all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(a, b))


# -- 1. a number on the left is weak, 0-dim or not ------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("name", REFLECTED)
def test_a_reflected_operator_treats_a_0d_tensor_as_a_1d_one(dt, name):
    v = True if dt is tp.bool else 3
    for n in NUMBERS:
        zero_d = _outcome(lambda: getattr(tp.tensor(v, dtype=dt), name)(n))
        one_d = _outcome(lambda: getattr(tp.tensor([v], dtype=dt), name)(n))
        assert zero_d[:2] == one_d[:2], (n, name, dt, zero_d, one_d)
        if zero_d[0] == "ok":
            assert _same_values(zero_d[2], one_d[2]), (n, name, dt, zero_d, one_d)


@pytest.mark.parametrize("expr, dtype, value", [
    ("7 // tp.tensor(3, dtype=tp.int8)", tp.int8, 2),
    ("7 % tp.tensor(3, dtype=tp.int8)", tp.int8, 1),
    ("-3 // tp.tensor(3, dtype=tp.int16)", tp.int16, -1),
    ("7 % tp.tensor(3, dtype=tp.int32)", tp.int32, 1),
    ("-3 // tp.tensor(3, dtype=tp.uint8)", tp.uint8, 84),     # -3 wraps to 253, as torch
    ("-3 % tp.tensor(3, dtype=tp.uint8)", tp.uint8, 1),
    ("2.5 // tp.tensor(3, dtype=tp.float16)", tp.float16, 0.0),
    ("2.5 % tp.tensor(3, dtype=tp.bfloat16)", tp.bfloat16, 2.5),
    ("7 // tp.tensor(2, dtype=tp.int8)", tp.int8, 3),
    ("2.5 % tp.tensor(2, dtype=tp.int8)", tp.float32, 0.5),
    ("7 % tp.tensor(True)", tp.int64, 0),
])
def test_reflected_floor_divide_and_remainder_as_torch(expr, dtype, value):
    r = eval(expr)
    assert (r.dtype, r.shape, r.item()) == (dtype, (), value)


def test_reflected_floor_divide_and_remainder_under_fake_and_compile():
    t = tp.tensor(3, dtype=tp.int8)
    with fake.FakeTensorMode() as m:
        ft = m.from_tensor(t)
        assert (7 // ft).dtype is tp.int8 and (7 % ft).dtype is tp.int8
    f = tp.compile(lambda x: (7 // x, 7 % x))
    for _ in range(2):
        q, r = f(t)
        assert (q.dtype, q.item(), r.dtype, r.item()) == (tp.int8, 2, tp.int8, 1)


# -- 2. all/any of uint8 are uint8 ---------------------------------------------------------------

def test_all_any_of_uint8_give_uint8():
    x = tp.tensor([[1, 0], [2, 3]], dtype=tp.uint8)
    cases = [(x.all(), [0]), (x.any(), [1]), (x.all(1), [0, 1]), (x.any(0, keepdim=True), [1, 1]),
             (tp.all(x, dim=0), [1, 0]), (tp.any(x, 1, True), [1, 1]), (x.all((0, 1)), [0]),
             (tp.tensor(7, dtype=tp.uint8).all(), [1]),
             (tp.tensor([], dtype=tp.uint8).all(), [1]), (tp.tensor([], dtype=tp.uint8).any(), [0])]
    for r, want in cases:
        assert r.dtype is tp.uint8 and r.reshape(-1).tolist() == want
    assert x.any(0, keepdim=True).shape == (1, 2)
    assert bool(x.any()) and not bool(x.all())


@pytest.mark.parametrize("dt", [tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.bfloat16,
                                tp.float32, tp.float64, tp.bool], ids=str)
def test_all_any_of_other_dtypes_give_bool(dt):
    x = tp.tensor([[1, 0], [1, 1]], dtype=dt)
    for r in (x.all(), x.any(), x.all(0), tp.any(x, 1, True)):
        assert r.dtype is tp.bool


def test_all_any_of_uint8_under_fake_and_compile():
    x = tp.tensor([[1, 0], [2, 3]], dtype=tp.uint8)
    with fake.FakeTensorMode() as m:
        fx = m.from_tensor(x)
        assert fx.all().dtype is tp.uint8 and fx.any(1).dtype is tp.uint8
    f = tp.compile(lambda t: (t.all(1), t.any()))
    for _ in range(2):
        a, b = f(x)
        assert (a.dtype, a.tolist(), b.dtype, b.item()) == (tp.uint8, [0, 1], tp.uint8, 1)


# -- 3. torch functions and methods a user expects -----------------------------------------------

def test_logical_methods_and_logical_xor():
    x = tp.tensor([1, 5, 0], dtype=tp.int8)
    f = tp.tensor([1.0, 0.0, 0.0])
    assert x.logical_and(f).tolist() == [True, False, False]
    assert x.logical_or(f).tolist() == [True, True, False]
    assert x.logical_xor(f).tolist() == [False, True, False]
    assert tp.logical_xor(x, f).tolist() == [False, True, False]
    assert x.logical_not().tolist() == [False, False, True]
    assert tp.logical_xor(x, tp.tensor([0, 5, 0])).dtype is tp.bool
    for r in (x.logical_and(f), x.logical_xor(f), x.logical_not()):
        assert r.dtype is tp.bool
    # in place: the bool answer written in self's dtype (torch's logical_and_ on floats)
    y = tp.tensor([1.0, 5.0, 0.0])
    assert y.logical_and_(tp.tensor([0, 1, 1])) is y and y.tolist() == [0.0, 1.0, 0.0]
    z = tp.tensor([1.0, 0.0, 0.0])
    assert z.logical_xor_(tp.tensor([0.0, 2.0, 0.0])).tolist() == [1.0, 1.0, 0.0]
    assert z.logical_or_(tp.tensor([0, 0, 3])).tolist() == [1.0, 1.0, 1.0]
    w = x.clone()
    assert w.logical_not_() is w and w.tolist() == [0, 0, 1] and w.dtype is tp.int8
    with fake.FakeTensorMode() as m:
        assert tp.logical_xor(m.from_tensor(x), m.from_tensor(f)).dtype is tp.bool


def test_clamp_min_max_and_their_in_place_forms():
    x = tp.tensor([1, 5, 9], dtype=tp.int8)
    f = tp.tensor([1.0, 5.0, 9.0])
    assert (tp.clamp_min(x, 4).dtype, tp.clamp_min(x, 4).tolist()) == (tp.int8, [4, 5, 9])
    r = tp.clamp_min(x, 4.5)
    assert (r.dtype, r.tolist()) == (tp.float32, [4.5, 5.0, 9.0])
    r = x.clamp_min(tp.tensor([3, 4, 5]))
    assert (r.dtype, r.tolist()) == (tp.int64, [3, 5, 9])
    assert tp.clamp_max(f, 4).tolist() == [1.0, 4.0, 4.0]
    assert x.clamp_max(4).tolist() == [1, 4, 4]
    y = x.clone()
    assert y.clamp_min_(4) is y and y.tolist() == [4, 5, 9] and y.dtype is tp.int8
    y = x.clone()
    assert y.clamp_max_(4) is y and y.tolist() == [1, 4, 4]
    g = f.clone()
    assert g.clamp_max_(tp.tensor(2.0)).tolist() == [1.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.clone().clamp_min_(4.5)
    with pytest.raises(RuntimeError, match="overflow"):
        tp.clamp_min(x, 300)
    with pytest.raises(TypeError):
        tp.clamp_min(x, None)
    with pytest.raises(TypeError):
        x.clamp_max()


def test_clip_is_clamp():
    x = tp.tensor([1, 5, 9], dtype=tp.int8)
    f = tp.tensor([1.0, 5.0, 9.0])
    y = x.clone()
    assert y.clip_(2, 6) is y and y.tolist() == [2, 5, 6]
    assert tp.clip(f, 2, 6).tolist() == [2.0, 5.0, 6.0]
    assert tp.clip(f, max=2).tolist() == [1.0, 2.0, 2.0]
    assert f.clip(min=3).tolist() == [3.0, 5.0, 9.0]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        x.clone().clip_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.clone().clip_(0.5, 2)


def test_clamp_min_backward():
    w = tp.tensor([1.0, 5.0, 9.0], requires_grad=True)
    tp.clamp_min(w, 4.0).sum().backward()
    assert w.grad.tolist() == [0.0, 1.0, 1.0]


def test_remainder_and_floor_divide_functions_take_a_number_on_either_side():
    x = tp.tensor([1, 2, 3], dtype=tp.int8)
    for r, dt, want in [(tp.remainder(7, x), tp.int8, [0, 1, 1]),
                        (tp.remainder(x, 2), tp.int8, [1, 0, 1]),
                        (tp.remainder(7.5, x), tp.float32, [0.5, 1.5, 1.5]),
                        (tp.remainder(-7, tp.tensor(3, dtype=tp.uint8)), tp.uint8, [0]),
                        (tp.remainder(7, tp.tensor([True])), tp.int64, [0]),
                        (tp.floor_divide(7, tp.tensor(3, dtype=tp.int8)), tp.int8, [2]),
                        (tp.floor_divide(x, 2), tp.int8, [0, 1, 1]),
                        (tp.remainder(x, tp.tensor([2, 2, 2], dtype=tp.int8)), tp.int8, [1, 0, 1])]:
        assert (r.dtype, r.reshape(-1).tolist()) == (dt, want)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tp.remainder(x, 0)
    with pytest.raises(TypeError):
        tp.remainder(7, 2)


@pytest.mark.parametrize("fname, number, dt, want_dt, want", [
    ("pow", 2, tp.float32, tp.float32, [2.0, 32.0, 512.0]),
    ("pow", 2.5, tp.int8, tp.float32, [2.5, 2.5 ** 5, 2.5 ** 9]),
    ("pow", -1, tp.int8, tp.int8, [-1, -1, -1]),
    ("pow", 5, tp.int8, tp.int8, [5, 53, 101]),      # 5 ** 5 and 5 ** 9 wrapped to int8
    ("bitwise_and", 5, tp.int8, tp.int8, [1, 5, 1]),
    ("bitwise_or", 3, tp.uint8, tp.uint8, [3, 7, 11]),
    ("bitwise_xor", -1, tp.int8, tp.int8, [-2, -6, -10]),
    ("bitwise_left_shift", 1, tp.uint8, tp.uint8, [2, 32, 0]),
    ("bitwise_right_shift", -128, tp.int8, tp.int8, [-64, -4, -1]),
    ("add", 5, tp.int8, tp.int8, [6, 10, 14]),
    ("sub", 5, tp.int8, tp.int8, [4, 0, -4]),
    ("mul", 2.5, tp.int8, tp.float32, [2.5, 12.5, 22.5]),
    ("div", 5, tp.int8, tp.float32, [5.0, 1.0, 5 / 9]),
])
def test_a_number_first_argument_as_torch(fname, number, dt, want_dt, want):
    x = tp.tensor([1, 5, 9], dtype=dt)
    r = getattr(tp, fname)(number, x)
    assert r.dtype is want_dt
    assert r.tolist() == pytest.approx(want, rel=1e-6)
    # the op record itself (tp.ops.tp.<name>) takes it as well, and a 0-dim tensor keeps its dtype
    r0 = getattr(tp.ops.tp, fname)(number, x[1])
    assert r0.dtype is want_dt and r0.item() == pytest.approx(want[1], rel=1e-6)


def test_a_number_first_argument_with_bool_tensors():
    b = tp.tensor([True, False])
    r = tp.pow(2, b)
    assert (r.dtype, r.tolist()) == (tp.int64, [2, 1])
    r = tp.bitwise_and(5, b)
    assert (r.dtype, r.tolist()) == (tp.int64, [1, 0])
    r = tp.bitwise_and(True, b)
    assert (r.dtype, r.tolist()) == (tp.bool, [True, False])
    with pytest.raises(RuntimeError):
        tp.bitwise_and(5.0, tp.tensor([1, 2], dtype=tp.int8))
    with pytest.raises((RuntimeError, NotImplementedError)):
        tp.pow(True, b)
    with pytest.raises(RuntimeError):
        tp.sub(True, b)


def test_a_number_first_argument_is_refused_where_torch_refuses_it():
    x = tp.tensor([1, 2], dtype=tp.int8)
    for fname in ("pow", "bitwise_and", "bitwise_left_shift", "add"):
        with pytest.raises(TypeError, match="must be Tensor"):
            getattr(tp, fname)(2, 3)
        with pytest.raises(TypeError, match="must be Tensor"):
            getattr(tp, fname)("2", x)
    for fname in ("maximum", "eq", "logical_and"):
        with pytest.raises(TypeError, match="must be Tensor"):
            getattr(tp, fname)(2, x)


def test_a_number_first_argument_under_autograd_fake_and_compile():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    tp.pow(2.0, w).sum().backward()
    assert w.grad.tolist() == pytest.approx([2 * math.log(2), 4 * math.log(2)])
    x = tp.tensor([1, 2], dtype=tp.int8)
    with fake.FakeTensorMode() as m:
        fx = m.from_tensor(x)
        assert tp.bitwise_left_shift(1, fx).dtype is tp.int8
        assert tp.pow(2, fx).dtype is tp.int8 and tp.remainder(7, fx).dtype is tp.int8
    f = tp.compile(lambda t: (tp.pow(2, t), tp.bitwise_xor(-1, t), tp.remainder(7, t)))
    for _ in range(2):
        p, q, r = f(x)
        assert (p.tolist(), q.tolist(), r.tolist()) == ([2, 4], [-2, -3], [0, 1])
        assert p.dtype is q.dtype is r.dtype is tp.int8


X2 = [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]


@pytest.mark.parametrize("args, kwargs, shape, var, mean", [
    ((), {}, (), [8.0], [4.0]),
    ((1,), {}, (2,), [7 / 3, 28 / 3], [7 / 3, 17 / 3]),
    ((1, True), {}, (2,), [7 / 3, 28 / 3], [7 / 3, 17 / 3]),         # (dim, unbiased)
    ((True,), {}, (), [8.0], [4.0]),                                   # (unbiased)
    ((False,), {}, (), [20 / 3], [4.0]),
    ((1, True, True), {}, (2, 1), [7 / 3, 28 / 3], [7 / 3, 17 / 3]),   # (dim, unbiased, keepdim)
    ((), {"dim": 0, "correction": 0, "keepdim": True}, (1, 3), [1.0, 2.25, 6.25],
     [2.0, 3.5, 6.5]),
    (([0, 1],), {"unbiased": False}, (), [20 / 3], [4.0]),
    ((None,), {"keepdim": True}, (1, 1), [8.0], [4.0]),
    ((-1,), {"correction": 0.5}, (2,), [14 / 3 / 2.5, 56 / 3 / 2.5], [7 / 3, 17 / 3]),
])
def test_var_mean_and_std_mean(args, kwargs, shape, var, mean):
    x = tp.tensor(X2)
    r = tp.var_mean(x, *args, **kwargs)
    assert type(r) is tuple and len(r) == 2
    v, m = r
    assert v.shape == m.shape == shape == tp.var(x, *args, **kwargs).shape
    assert v.reshape(-1).tolist() == pytest.approx(var)
    assert m.reshape(-1).tolist() == pytest.approx(mean)
    s, m2 = tp.std_mean(x, *args, **kwargs)
    assert s.shape == m2.shape == shape
    assert s.reshape(-1).tolist() == pytest.approx([math.sqrt(e) for e in var])
    assert m2.reshape(-1).tolist() == pytest.approx(mean)


def test_var_mean_edge_cases_and_errors():
    v, m = tp.var_mean(tp.tensor(3.0))
    assert math.isnan(v.item()) and m.item() == 3.0 and v.shape == ()
    v, m = tp.var_mean(tp.tensor([[1.0, 2.0], [3.0, 5.0]], dtype=tp.float16), 1)
    assert v.dtype is m.dtype is tp.float16
    with pytest.raises(RuntimeError, match="floating point"):
        tp.var_mean(tp.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="floating point"):
        tp.std_mean(tp.tensor([1, 2]))
    with pytest.raises(TypeError):
        tp.var_mean(tp.tensor(X2), 1, True, correction=1)
    w = tp.tensor(X2, requires_grad=True)
    v, m = tp.var_mean(w, 1)
    (v.sum() + m.sum()).backward()
    x = tp.tensor(X2)
    want = [[2 * (e - sum(r) / 3) / 2 + 1 / 3 for e in r] for r in X2]
    assert w.grad.tolist() == [pytest.approx(r) for r in want]
    with fake.FakeTensorMode() as mode:
        v, m = tp.std_mean(mode.from_tensor(x), 0, keepdim=True)
        assert v.shape == m.shape == (1, 3)


# -- 4. a zero float remainder has the dividend's sign --------------------------------------------

def _signs(t):
    return [math.copysign(1.0, v) for v in t.tolist()]


@pytest.mark.parametrize("dt", [tp.float32, tp.float64, tp.float16, tp.bfloat16], ids=str)
def test_a_zero_remainder_has_the_sign_of_the_dividend(dt):
    a = tp.tensor([4.0, -4.0, 0.0, -0.0, 3.0, -3.0], dtype=dt)
    for b in (-2.0, 2.0, 1.5, -1.5, 3.0, -3.0, float("inf"), -float("inf")):
        for r in (a % b, tp.remainder(a, tp.full((6,), b, dtype=dt)), a.remainder(b)):
            zeros = [i for i, v in enumerate(r.tolist()) if v == 0]
            assert zeros, (b, r)
            assert [_signs(r)[i] for i in zeros] == [_signs(a)[i] for i in zeros], (b, r)
    # the non-zero remainders keep the divisor's sign (Python's rule) and inf divisors torch's
    r = tp.tensor([5.5, -5.5, 1.0, -1.0], dtype=dt) % -2.0
    assert r.tolist() == [-0.5, -1.5, -1.0, -1.0]
    r = tp.tensor([4.0, -4.0], dtype=dt) % float("inf")
    assert r.tolist() == [4.0, float("inf")]


def test_zero_remainder_sign_in_place_reflected_and_compiled():
    a = tp.tensor([4.0, -4.0, -0.0])
    a %= 2.0
    assert _signs(a) == [1.0, -1.0, -1.0]
    assert _signs(4.0 % tp.tensor([-2.0, 2.0])) == [1.0, 1.0]
    assert _signs(-4.0 % tp.tensor([-2.0, 2.0])) == [-1.0, -1.0]
    # 0-dim operands (the kernel's other branch: NumPy gives a scalar there)
    for dt in (tp.float32, tp.float64, tp.float16, tp.bfloat16):
        assert [math.copysign(1.0, (tp.tensor(x, dtype=dt) % y).item())
                for x, y in ((-4.0, 2.0), (4.0, -2.0), (-0.0, 3.0), (3.0, -3.0))] == [-1, 1, -1, 1]
    f = tp.compile(lambda t: t % -2.0 + 0.0 * t)
    for _ in range(2):
        assert _signs(f(tp.tensor([4.0, -4.0]))) == [1.0, -1.0]


# -- found on the way: a dim named twice in a reduction ------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x.sum((0, 0)), lambda x: x.mean((1, -1)), lambda x: x.amax((0, -2)),
    # (not prod: torch's prod takes one int dim, x.prod((1, 1)) is a TypeError there: see
    # tests/test_dims_writes55.py)
    lambda x: x.all((0, 0)), lambda x: x.std((1, 1)), lambda x: x.var((0, 0)),
    lambda x: tp.var_mean(x, (0, 0)), lambda x: tp.std_mean(x, [1, -1], keepdim=True),
])
def test_a_dim_named_twice_is_refused_as_torch(call):
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
        call(x)
    with fake.FakeTensorMode() as m:
        with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
            call(m.from_tensor(x))


@pytest.mark.parametrize("fn", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("dim", [[], ()])
@pytest.mark.parametrize("correction", [None, 0])
def test_an_empty_dim_list_reduces_every_dim(fn, dim, correction):
    """torch reduces all elements for dim=[] or dim=() (as sum/mean do); the divisor is N -
    correction with N every element (it was 1: var_mean(x, []) gave (inf, mean)). Review 41."""
    x = tp.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    kw = {} if correction is None else {"correction": correction}
    got = getattr(tp, fn)(x, dim, **kw)
    want = getattr(tp, fn)(x, None, **kw)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert g.shape == w.shape and tp.allclose(g, w)
    v = x.numpy().var(ddof=1 if correction is None else 0)
    first = got[0].item()
    assert abs(first - (v if fn.startswith("var") else v ** 0.5)) < 1e-5
