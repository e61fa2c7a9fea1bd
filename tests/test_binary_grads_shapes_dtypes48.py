"""Gradients of add/sub/mul/div through every operand form their formulas tell apart: two
tensors of one shape (add's gradient handed on as is), a broadcast row or column (reduced), a 0-d
tensor, a Python number on either side, tensors of two floating dtypes (each gradient in its
input's dtype), and an integer tensor beside a floating one (no gradient for it). Expected values
are the derivatives written out in NumPy (float64), compared at the input's precision."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


def _leaf(shape, dtype, seed):
    a = np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(dtype)
    return tp.tensor(a, requires_grad=True), a.astype(np.float64)


def _reduce_to(g, shape):
    """``g`` summed down to ``shape`` (undo broadcasting), float64."""
    g = np.asarray(g, np.float64)
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdims=True)
    return g


# d(out)/d(a), d(out)/d(b) for out = a <op> b, each times the upstream gradient w
_DERIV = {
    "add": (lambda a, b, w: w, lambda a, b, w: w),
    "sub": (lambda a, b, w: w, lambda a, b, w: -w),
    "mul": (lambda a, b, w: w * b, lambda a, b, w: w * a),
    "div": (lambda a, b, w: w / b, lambda a, b, w: -w * a / (b * b)),
}
_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b}
_SHAPES = [((4, 6), (4, 6)), ((4, 6), (6,)), ((4, 6), (4, 1)), ((6,), (4, 6)), ((4, 1), (1, 6)),
           ((4, 6), ())]


@pytest.mark.parametrize("op", sorted(_OPS))
@pytest.mark.parametrize("shapes", _SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"),
                                    ("float32", "float64"), ("float64", "float32")], ids=str)
def test_two_tensor_operands(op, shapes, dtypes):
    (sa, sb), (da, db) = shapes, dtypes
    a, an = _leaf(sa, da, 1)
    b, bn = _leaf(sb, db, 2)
    out = _OPS[op](a, b)
    wn = np.random.default_rng(3).uniform(-1, 1, out.shape)
    out.backward(tp.tensor(wn.astype(str(out.dtype).replace("tensorplay.", ""))))
    fa, fb = _DERIV[op]
    ga = _reduce_to(fa(an, bn, wn) * np.ones(out.shape), sa)
    gb = _reduce_to(fb(an, bn, wn) * np.ones(out.shape), sb)
    for t, want, d in ((a, ga, da), (b, gb, db)):
        assert t.grad is not None and t.grad.shape == t.shape
        assert t.grad.dtype is getattr(tp, d)          # each gradient in its input's dtype
        tol = 1e-5 if "float32" in (da, db) else 1e-12
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", sorted(_OPS))
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("number", [2.5, 3])
def test_a_number_operand_gets_no_gradient_and_the_tensor_its_own(op, side, number):
    a, an = _leaf((3, 5), "float32", 4)
    if side == "right":
        out = _OPS[op](a, number)
        f, x, y = _DERIV[op][0], an, float(number)
    else:
        out = _OPS[op](number, a)
        f, x, y = _DERIV[op][1], float(number), an
    wn = np.random.default_rng(5).uniform(-1, 1, out.shape)
    out.backward(tp.tensor(wn.astype(np.float32)))
    want = f(x, y, wn)
    assert a.grad.dtype is tp.float32 and a.grad.shape == (3, 5)
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(want, (3, 5)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_an_integer_operand_takes_no_gradient(op):
    a, an = _leaf((3, 4), "float32", 6)
    i = tp.tensor(np.arange(12, dtype=np.int64).reshape(3, 4))
    out = _OPS[op](a, i)
    assert out.dtype is tp.float32
    out.sum().backward()
    want = np.ones((3, 4)) if op != "mul" else np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-6)
    assert i.grad is None and not i.requires_grad


def test_the_same_tensor_on_both_sides_sums_both_gradients():
    a, an = _leaf((2, 3), "float64", 7)
    (a + a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 3), 2.0))
    a.grad = None
    (a * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * an, rtol=1e-12)
    a.grad = None
    (a - a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 3)))


def test_add_hands_its_gradient_to_a_same_shape_operand_and_keeps_the_graph_reusable():
    # add saves only shapes and dtypes: the graph may run backward again after an in-place
    # change of an input (torch's AddBackward); the same-shape gradient is passed on unchanged
    a, _ = _leaf((3, 3), "float32", 8)
    b, _ = _leaf((3, 3), "float32", 9)
    y = a + b
    seen = []
    y.register_hook(lambda g: seen.append(g))
    w = tp.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))
    y.backward(w, retain_graph=True)
    with tp.no_grad():
        a.mul_(2.0)
    y.backward(w)
    np.testing.assert_array_equal(a.grad.numpy(), 2 * w.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), 2 * w.numpy())
    assert len(seen) == 2
