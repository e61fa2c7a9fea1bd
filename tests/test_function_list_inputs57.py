"""autograd.Function considers only its direct tensor arguments (torch's THPFunction_apply):
a tensor inside a list or tuple argument is not an input of the node, so an output computed
from it alone does not require grad, and backward through it raises as torch's does
(a fresh user's finding, session 57: the output required grad and x.grad stayed None)."""

import pytest

import tensorplay as tp
from tensorplay.autograd import Function


class FromList(Function):
    @staticmethod
    def forward(ctx, xs):
        return xs[0] * 2

    @staticmethod
    def backward(ctx, g):
        return None


def test_tensor_inside_a_list_is_not_an_input():
    x = tp.ones(2, requires_grad=True)
    r = FromList.apply([x])
    assert r.requires_grad is False
    assert r.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        r.sum().backward()
    assert x.grad is None


def test_tensor_inside_a_tuple_is_not_an_input():
    x = tp.ones(2, requires_grad=True)
    assert FromList.apply((x,)).requires_grad is False


class Mixed(Function):
    @staticmethod
    def forward(ctx, w, xs):
        ctx.seen = tuple(ctx.needs_input_grad)
        return w * xs[0]

    @staticmethod
    def backward(ctx, g):
        return g * 3, None


def test_direct_tensor_beside_a_list_keeps_its_gradient():
    w = tp.ones(2, requires_grad=True)
    x = tp.ones(2, requires_grad=True)
    r = Mixed.apply(w, [x])
    assert r.requires_grad
    r.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    assert x.grad is None


def test_needs_input_grad_is_false_for_a_list_argument():
    w = tp.ones(2, requires_grad=True)
    x = tp.ones(2, requires_grad=True)

    class Probe(Function):
        @staticmethod
        def forward(ctx, w, xs):
            Probe.seen = tuple(ctx.needs_input_grad)
            return w * 1

        @staticmethod
        def backward(ctx, g):
            return g, None

    Probe.apply(w, [x])
    assert Probe.seen == (True, False)
