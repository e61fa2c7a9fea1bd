"""Gradients of ``clamp`` with tensor bounds where the bounds meet or cross, as torch 2.13
computes them (its clamp_backward_min_max: ``min`` gets the gradient where ``x < min`` and
``min < max``; ``max`` where ``x > max``, or everywhere ``max < min``). Measured with
2.13.0+cpu on x = [-0.0, 0.0, 1, -1, 2] (session 58, a fresh user's report)."""

from __future__ import annotations

import math

import tensorplay as tp

X = [-0.0, 0.0, 1.0, -1.0, 2.0]


def _grads(lo, hi, fn=None):
    x = tp.tensor(X, requires_grad=True)
    a = tp.full((5,), lo, requires_grad=True)
    b = tp.full((5,), hi, requires_grad=True)
    f = fn or (lambda x, a, b: tp.clamp(x, a, b))
    out = f(x, a, b)
    out.sum().backward()
    return out.tolist(), x.grad.tolist(), a.grad.tolist(), b.grad.tolist()


def test_equal_bounds_below_them_the_gradient_goes_nowhere():
    out, gx, ga, gb = _grads(0.0, 0.0)
    assert out == [0.0, 0.0, 0.0, 0.0, 0.0]
    assert gx == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert ga == [0.0] * 5                     # was 1.0 at x = -1
    assert gb == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_crossed_bounds_give_max_all_of_it():
    out, gx, ga, gb = _grads(1.0, 0.0)
    assert out == [0.0] * 5
    assert gx == [0.0] * 5 and ga == [0.0] * 5
    assert gb == [1.0] * 5                     # was 1.0 only where x > max


def test_ordinary_bounds_unchanged():
    out, gx, ga, gb = _grads(-0.5, 0.5)
    assert out == [-0.0, 0.0, 0.5, -0.5, 0.5]
    assert gx == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert ga == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert gb == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_one_tensor_as_both_bounds():
    x = tp.tensor(X, requires_grad=True)
    y = tp.zeros(5, requires_grad=True)
    tp.clamp(x, y, y).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert y.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_a_nan_input_keeps_its_value_with_crossed_bounds():
    x = tp.tensor([math.nan, 3.0], requires_grad=True)
    out = tp.clamp(x, tp.tensor([1.0, 1.0]), tp.tensor([0.0, 0.0]))
    r = out.tolist()
    assert math.isnan(r[0]) and r[1] == 0.0


def test_compiled_clamp_has_the_same_gradients():
    c = tp.compile(lambda x, a, b: tp.clamp(x, a, b))
    for lo, hi in ((0.0, 0.0), (1.0, 0.0), (-0.5, 0.5)):
        assert _grads(lo, hi, c) == _grads(lo, hi)
