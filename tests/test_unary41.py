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
