"""The backward engine's pending gradients (``autograd/graph._walk``): a node's gradients are held
as the gradient itself while only output 0 got one, and as a dict by output number otherwise.
These pin what every arrival order gives (values checked against the hand-derived gradients):
output 0 then output 1, output 1 then output 0, output 1 alone, two gradients meeting on one
output, and one gradient handed to two leaves (each leaf's ``.grad`` its own tensor)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import Function

CALLS: list = []


class TwoOut(Function):
    """``(2x, 3x)``; backward records the gradients it got (None: that output got none)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, g0, g1):
        CALLS.append((None if g0 is None else g0.tolist(), None if g1 is None else g1.tolist()))
        out = tp.zeros_like(g0 if g0 is not None else g1)
        if g0 is not None:
            out = out + g0 * 2.0
        if g1 is not None:
            out = out + g1 * 3.0
        return out


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()


def _x():
    return tp.tensor([1.0, 2.0], requires_grad=True)


@pytest.mark.parametrize("order", ["first_then_second", "second_then_first"])
def test_both_outputs_in_either_order(order):
    x = _x()
    a, b = TwoOut.apply(x)
    # the loss's sum makes one output's gradient reach the node before the other's
    loss = (a * 5.0).sum() + (b * 7.0).sum() if order == "first_then_second" else \
        (b * 7.0).sum() + (a * 5.0).sum()
    loss.backward()
    assert CALLS == [([5.0, 5.0], [7.0, 7.0])]
    np.testing.assert_allclose(x.grad.numpy(), [2 * 5.0 + 3 * 7.0] * 2)


def test_second_output_alone_materializes_the_first_as_zeros():
    x = _x()
    _, b = TwoOut.apply(x)
    (b * 7.0).sum().backward()
    assert CALLS == [([0.0, 0.0], [7.0, 7.0])]
    np.testing.assert_allclose(x.grad.numpy(), [21.0, 21.0])


def test_first_output_alone():
    x = _x()
    a, _ = TwoOut.apply(x)
    (a * 5.0).sum().backward()
    assert CALLS == [([5.0, 5.0], [0.0, 0.0])]
    np.testing.assert_allclose(x.grad.numpy(), [10.0, 10.0])


def test_gradients_meeting_on_one_output_are_summed():
    x = _x()
    a, b = TwoOut.apply(x)
    # output 0 used twice (two gradients meet on it), output 1 once
    (a * 5.0 + a * 11.0 + b).sum().backward()
    assert CALLS == [([16.0, 16.0], [1.0, 1.0])]
    np.testing.assert_allclose(x.grad.numpy(), [2 * 16.0 + 3 * 1.0] * 2)


def test_a_tensor_used_twice_sums_its_gradients():
    x = _x()
    y = x * 3.0
    (y * y).sum().backward()   # d/dx (3x)^2 = 18x: y's two uses meet on y's node
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


def test_one_gradient_handed_to_two_leaves_gives_each_its_own_grad():
    x = _x()
    w = tp.tensor([10.0, 20.0], requires_grad=True)
    z = (x + w) * 2.0              # add's backward hands the same gradient to both leaves
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0])
    assert x.grad is not w.grad
    x.grad.add_(1.0)               # writing one leaf's gradient leaves the other's alone
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0])


def test_second_backward_accumulates_with_retained_graph():
    x = _x()
    a, b = TwoOut.apply(x)
    loss = (a * 5.0).sum() + (b * 7.0).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert CALLS == [([5.0, 5.0], [7.0, 7.0])] * 2
    np.testing.assert_allclose(x.grad.numpy(), [2 * 31.0] * 2)
