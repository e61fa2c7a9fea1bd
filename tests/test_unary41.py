"""Unary math as torch has it (session 41): the in-place methods of every unary elementwise op
(``x.sin_()``, PyTorch's own mutable-op tutorial) and the new built-in unary ops (``expm1``,
``log1p``, ``log2``, ``log10``, ``exp2``, ``tan``, ``asin``, ``acos``, ``atan``, ``sinh``,
``cosh``, ``trunc``). Values against NumPy float64 references; gradients by finite differences
(``tensorplay.autograd.gradcheck``)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay.autograd import gradcheck

# -- part 1: in-place forms of the existing unary ops -------------------------------------------

# name -> (NumPy float64 reference, input values in the op's domain)
_POS = [0.25, 0.5, 1.5, 3.0]
_ANY = [-2.5, -0.75, 0.3, 1.7]
INPLACE = {
    "neg": (np.negative, _ANY), "abs": (np.abs, _ANY), "exp": (np.exp, _ANY),
    "log": (np.log, _POS), "sqrt": (np.sqrt, _POS), "rsqrt": (lambda a: 1 / np.sqrt(a), _POS),
    "sin": (np.sin, _ANY), "cos": (np.cos, _ANY), "tanh": (np.tanh, _ANY),
    "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), _ANY),
    "erf": (np.vectorize(__import__("math").erf), _ANY), "floor": (np.floor, _ANY),
    "ceil": (np.ceil, _ANY), "round": (np.round, [-2.5, -0.5, 0.5, 1.5, 2.7]),
    "reciprocal": (np.reciprocal, _ANY), "sign": (np.sign, [-2.0, 0.0, 3.0]),
    "square": (np.square, _ANY),
}
# ops whose gradient is zero almost everywhere (finite differences away from the jumps agree)
_STEP = {"floor", "ceil", "round", "sign"}


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_in_place_returns_self_writes_the_value_and_bumps_the_version(name, dtype):
    ref, vals = INPLACE[name]
    dt = getattr(tp, dtype)
    x = tp.tensor(vals, dtype=dt)
    v = x._version
    out = getattr(x, name + "_")()
    assert out is x and x.dtype is dt and x._version == v + 1
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(np.array(x.tolist()), ref(np.array(vals)), rtol=tol, atol=tol)
    # the same value as the out-of-place op, bit for bit
    assert x.tolist() == getattr(tp.tensor(vals, dtype=dt), name)().tolist()


def test_in_place_writes_through_a_view():
    base = tp.tensor([[0.0, 1.0], [2.0, 3.0]])
    base[1].sin_()
    np.testing.assert_allclose(np.array(base.tolist()), [[0, 1], np.sin([2.0, 3.0])], rtol=1e-6)
    base[:, 0].neg_()
    assert base.tolist()[0] == [-0.0, 1.0]


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                                  "sigmoid", "erf", "reciprocal"])
def test_integer_in_place_of_a_floating_function_is_refused_writing_nothing(name):
    x = tp.tensor([1, 2, 3], dtype=tp.int64)
    with pytest.raises(RuntimeError, match=f"{name}_.*can't be cast"):
        getattr(x, name + "_")()
    assert x.tolist() == [1, 2, 3] and x._version == 0


@pytest.mark.parametrize("name,want", [("neg", [1, -2, -3]), ("abs", [1, 2, 3]),
                                       ("sign", [-1, 1, 1]), ("square", [1, 4, 9]),
                                       ("floor", [-1, 2, 3]), ("ceil", [-1, 2, 3]),
                                       ("round", [-1, 2, 3])])
def test_integer_in_place_of_a_same_dtype_op_works(name, want):
    x = tp.tensor([-1, 2, 3], dtype=tp.int32)
    assert getattr(x, name + "_")() is x
    assert x.tolist() == want and x.dtype is tp.int32 and x._version == 1


def test_round_in_place_takes_decimals():
    x = tp.tensor([1.2345, -2.5678], dtype=tp.float64)
    assert x.round_(decimals=2) is x
    np.testing.assert_allclose(x.tolist(), [1.23, -2.57])


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_gradient_through_in_place_equals_the_out_of_place_one(name):
    vals = INPLACE[name][1]
    a = tp.tensor(vals, dtype=tp.float64, requires_grad=True)
    b = tp.tensor(vals, dtype=tp.float64, requires_grad=True)
    y = a * 1.0
    getattr(y, name + "_")()
    assert y.grad_fn is not None
    (y * tp.tensor([1.0, 2.0, 3.0, 4.0, 5.0][:len(vals)], dtype=tp.float64)).sum().backward()
    z = getattr(b, name)()
    (z * tp.tensor([1.0, 2.0, 3.0, 4.0, 5.0][:len(vals)], dtype=tp.float64)).sum().backward()
    np.testing.assert_allclose(a.grad.tolist(), b.grad.tolist(), rtol=1e-12, atol=1e-12)

    def f(t):
        u = t.clone()
        return getattr(u, name + "_")()
    x = tp.tensor(vals, dtype=tp.float64, requires_grad=True)
    if name not in _STEP:
        assert gradcheck(f, (x,))


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_on_a_leaf_requiring_grad_is_refused(name):
    w = tp.tensor(INPLACE[name][1], requires_grad=True)
    before = w.tolist()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        getattr(w, name + "_")()
    assert w.tolist() == before and w._version == 0
    with tp.no_grad():
        assert getattr(w, name + "_")() is w


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_under_fake_tensor_mode(name):
    with fake.FakeTensorMode():
        x = tp.ones(2, 3)
        assert getattr(x, name + "_")() is x
        assert x.shape == (2, 3) and x.dtype is tp.float32 and x._version == 1
    if name in ("exp", "sin", "reciprocal"):
        with fake.FakeTensorMode():
            i = tp.ones(3, dtype=tp.int32)
            with pytest.raises(RuntimeError, match="can't be cast"):
                getattr(i, name + "_")()


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_inside_compile(name):
    def f(x):
        y = x * 1.0
        getattr(y, name + "_")()
        return y + 1

    vals = INPLACE[name][1]
    x = tp.tensor(vals)
    assert tp.compile(f)(x).tolist() == f(x).tolist()
    assert f(x).tolist() == (getattr(tp.tensor(vals), name)() + 1).tolist()


def test_pytorch_mutable_op_tutorial_line():
    x = tp.randn(3)
    want = x.sin().tolist()
    assert x.sin_() is x and x.tolist() == want


# -- part 2: new built-in unary ops ---------------------------------------------------------------

_LN2, _LN10 = np.log(2.0), np.log(10.0)
# name -> (NumPy float64 reference, values in the domain, d/dx as a function of x)
NEW = {
    "expm1": (np.expm1, [-3.0, -1e-8, 0.0, 1e-5, 0.7, 4.0], np.exp),
    "log1p": (np.log1p, [-0.75, -1e-9, 0.0, 1e-6, 2.5, 100.0], lambda a: 1 / (1 + a)),
    "log2": (np.log2, [0.125, 0.5, 1.0, 3.0, 1024.0], lambda a: 1 / (a * _LN2)),
    "log10": (np.log10, [0.01, 0.5, 1.0, 7.0, 1000.0], lambda a: 1 / (a * _LN10)),
    "exp2": (np.exp2, [-3.5, -1.0, 0.0, 0.5, 10.0], lambda a: np.exp2(a) * _LN2),
    "tan": (np.tan, [-1.2, -0.4, 0.0, 0.3, 1.4], lambda a: 1 + np.tan(a) ** 2),
    "asin": (np.arcsin, [-0.9, -0.2, 0.0, 0.5, 0.95], lambda a: 1 / np.sqrt(1 - a * a)),
    "acos": (np.arccos, [-0.9, -0.2, 0.0, 0.5, 0.95], lambda a: -1 / np.sqrt(1 - a * a)),
    "atan": (np.arctan, [-20.0, -0.7, 0.0, 0.4, 3.0], lambda a: 1 / (1 + a * a)),
    "sinh": (np.sinh, [-3.0, -0.5, 0.0, 1e-4, 2.0], np.cosh),
    "cosh": (np.cosh, [-3.0, -0.5, 0.0, 1e-4, 2.0], np.sinh),
    "trunc": (np.trunc, [-2.7, -0.5, 0.0, 0.4, 1.5, 3.99], lambda a: 0 * a),
}
FLOATING = sorted(n for n in NEW if n != "trunc")
# relative tolerance of each dtype against the float64 reference (a few ulp)
_RTOL = {"float64": 1e-13, "float32": 4e-7, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.mark.parametrize("name", sorted(NEW))
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_new_op_values_against_numpy(name, dtype):
    ref, vals, _ = NEW[name]
    dt = getattr(tp, dtype)
    x = tp.tensor(vals, dtype=dt)
    # the reference takes the input as rounded to the dtype
    xin = np.array(x.to(tp.float64).tolist())
    for y in (getattr(tp, name)(x), getattr(x, name)()):
        assert y.dtype is dt and y.shape == x.shape
        np.testing.assert_allclose(np.array(y.to(tp.float64).tolist()), ref(xin),
                                   rtol=_RTOL[dtype], atol=1e-300)


@pytest.mark.parametrize("name", FLOATING)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_and_bool_inputs_give_the_default_float_dtype(name, dtype):
    vals = [0, 1] if dtype == "bool" else [0, 1, 2] if name not in ("asin", "acos") else [0, 1]
    x = tp.tensor(vals, dtype=getattr(tp, dtype))
    y = getattr(tp, name)(x)
    assert y.dtype is tp.float32
    with np.errstate(divide="ignore"):            # log2(0) = -inf, as torch
        want = NEW[name][0](np.array(vals, dtype=np.float64))
    np.testing.assert_allclose(np.array(y.tolist()), want, rtol=4e-7)
    tp.set_default_dtype(tp.float64)
    try:
        assert getattr(tp, name)(x).dtype is tp.float64
    finally:
        tp.set_default_dtype(tp.float32)


def test_special_values_as_torch():
    inf, nan = float("inf"), float("nan")
    r = tp.log1p(tp.tensor([-1.0, -2.0, inf])).tolist()
    assert r[0] == -inf and np.isnan(r[1]) and r[2] == inf
    assert tp.log2(tp.tensor([0.0, -1.0])).tolist()[0] == -inf
    assert np.isnan(tp.log10(tp.tensor([-1.0])).tolist()[0])
    assert np.isnan(tp.asin(tp.tensor([1.5])).tolist()[0])
    assert np.isnan(tp.acos(tp.tensor([-1.5])).tolist()[0])
    assert tp.atan(tp.tensor([inf, -inf])).tolist() == pytest.approx([np.pi / 2, -np.pi / 2])
    assert tp.expm1(tp.tensor([-inf, inf])).tolist() == [-1.0, inf]
    assert tp.exp2(tp.tensor([-inf, 200.0])).tolist() == [0.0, inf]
    assert tp.cosh(tp.tensor([100.0])).tolist() == [inf]
    assert np.isnan(tp.trunc(tp.tensor([nan])).tolist()[0])
    # signs of zero kept: expm1/log1p/sinh/tan/asin/atan/trunc of -0.0 are -0.0
    for name in ("expm1", "log1p", "sinh", "tan", "asin", "atan", "trunc"):
        z = getattr(tp, name)(tp.tensor([-0.0])).tolist()[0]
        assert z == 0.0 and np.signbit(z), name
    assert np.signbit(tp.trunc(tp.tensor([-0.5])).tolist()[0])


def test_trunc_keeps_integer_dtypes_and_rounds_toward_zero():
    for dt in (tp.int64, tp.int32, tp.int8, tp.uint8):
        x = tp.tensor([1, 5, 7], dtype=dt)
        y = tp.trunc(x)
        assert y.dtype is dt and y.tolist() == [1, 5, 7]
    x = tp.tensor([-7, 2], dtype=tp.int16)
    assert x.trunc_() is x and x.tolist() == [-7, 2] and x._version == 1
    assert tp.trunc(tp.tensor([-2.7, 2.7, -0.2])).tolist() == [-2.0, 2.0, -0.0]


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_op_gradients(name):
    ref, vals, deriv = NEW[name]
    x = tp.tensor(vals, dtype=tp.float64, requires_grad=True)
    y = getattr(tp, name)(x)
    w = np.arange(1.0, len(vals) + 1)
    (y * tp.tensor(w.tolist(), dtype=tp.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), w * deriv(np.array(vals)), rtol=1e-12,
                               atol=1e-300)
    if name != "trunc":
        assert gradcheck(getattr(tp, name), (tp.tensor(vals, dtype=tp.float64,
                                                       requires_grad=True),))
        assert tp.autograd.gradgradcheck(getattr(tp, name),
                                         (tp.tensor(vals, dtype=tp.float64,
                                                    requires_grad=True),))
    else:
        v = tp.tensor([0.3, -1.7, 2.2], dtype=tp.float64, requires_grad=True)
        assert gradcheck(tp.trunc, (v,))


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_op_in_place_forms(name):
    ref, vals, _ = NEW[name]
    x = tp.tensor(vals, dtype=tp.float64)
    want = getattr(tp, name)(x).tolist()
    assert getattr(x, name + "_")() is x and x.tolist() == want and x._version == 1
    if name != "trunc":
        i = tp.tensor([0, 1], dtype=tp.int32)
        with pytest.raises(RuntimeError, match=f"{name}_.*can't be cast"):
            getattr(i, name + "_")()
        assert i.tolist() == [0, 1] and i._version == 0
    w = tp.tensor(vals, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(w, name + "_")()
    a = tp.tensor(vals, dtype=tp.float64, requires_grad=True)
    y = a * 1.0
    getattr(y, name + "_")()
    y.sum().backward()
    b = tp.tensor(vals, dtype=tp.float64, requires_grad=True)
    getattr(b, name)().sum().backward()
    assert a.grad.tolist() == b.grad.tolist()


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_op_on_fake_tensors_and_in_compile(name):
    with fake.FakeTensorMode():
        x = tp.ones(2, 3, dtype=tp.float16)
        assert getattr(tp, name)(x).dtype is tp.float16
        i = tp.ones(4, dtype=tp.int64)
        y = getattr(tp, name)(i)
        assert y.shape == (4,) and y.dtype is (tp.int64 if name == "trunc" else tp.float32)
        assert getattr(x, name + "_")() is x and x._version == 1

    def f(t):
        u = getattr(tp, name)(t) * 2
        getattr(u, name + "_")() if name in ("atan", "trunc", "sinh") else None
        return u + 1

    vals = NEW[name][1]
    for dt in (tp.float32, tp.float64):
        x = tp.tensor(vals, dtype=dt)
        got, want = tp.compile(f)(x), f(x)
        assert got.dtype is want.dtype
        np.testing.assert_allclose(got.tolist(), want.tolist(), rtol=_RTOL["float32"])


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_ops_are_public_documented_and_pass_opcheck(name):
    from tensorplay.testing import builtin_samples
    assert name in tp.__all__
    doc = getattr(tp, name).__doc__
    assert f"torch.{name}" in doc
    assert f"torch.Tensor.{name}_" in getattr(tp.Tensor, name + "_").__doc__
    op = getattr(tp.ops.tp, name)
    samples = builtin_samples.samples(name, "cpu")
    assert len(samples) >= 3
    for s in samples:
        assert tp.library.opcheck(op, s.args, s.kwargs, raise_exception=False) == {}, s.name
