"""Bad arguments to ``autograd.grad`` / ``autograd.backward`` / ``Tensor.backward`` raise
``TypeError`` naming the argument, as torch does (issue 28: ``tp.autograd.grad(3, x)`` raised
``AttributeError``)."""

from __future__ import annotations

import pytest

import tensorplay as tp


def _x():
    return tp.tensor([1.0, 2.0], requires_grad=True)


@pytest.mark.parametrize("outputs", [3, 2.5, "y", None, object(), [3], (None,)])
def test_grad_outputs_must_be_tensors(outputs):
    x = _x()
    with pytest.raises(TypeError, match=r"autograd\.grad.*outputs"):
        tp.autograd.grad(outputs, x)


@pytest.mark.parametrize("inputs", [3, "x", None, [3], [None]])
def test_grad_inputs_must_be_tensors(inputs):
    x = _x()
    with pytest.raises(TypeError, match=r"autograd\.grad.*inputs"):
        tp.autograd.grad((x * 2).sum(), inputs)


@pytest.mark.parametrize("grad_outputs", [1.0, [1.0], "g", [object()]])
def test_grad_outputs_gradients_must_be_tensors_or_none(grad_outputs):
    x = _x()
    with pytest.raises(TypeError, match=r"autograd\.grad.*grad_outputs"):
        tp.autograd.grad((x * 2).sum(), x, grad_outputs=grad_outputs)


def test_grad_empty_sequences_refused():
    x = _x()
    with pytest.raises(RuntimeError, match="inputs"):
        tp.autograd.grad((x * 2).sum(), [])


@pytest.mark.parametrize("tensors", [3, None, [1.0], ["a"]])
def test_backward_tensors_must_be_tensors(tensors):
    with pytest.raises(TypeError, match=r"backward.*tensors"):
        tp.autograd.backward(tensors)


@pytest.mark.parametrize("gradient", [2.0, "g", [2.0]])
def test_backward_gradient_must_be_tensor(gradient):
    x = _x()
    with pytest.raises(TypeError, match=r"backward.*grad"):
        (x * 2).sum().backward(gradient)
    with pytest.raises(TypeError, match=r"backward.*grad"):
        tp.autograd.backward((x * 2).sum(), grad_tensors=gradient)


def test_backward_inputs_must_be_tensors():
    x = _x()
    with pytest.raises(TypeError, match=r"backward.*inputs"):
        (x * 2).sum().backward(inputs=[3])


def test_good_calls_still_work():
    x = _x()
    (g,) = tp.autograd.grad([(x * 2).sum()], [x], grad_outputs=[None])
    assert g.tolist() == [2.0, 2.0]
    (g,) = tp.autograd.grad((x * 2).sum(), x, grad_outputs=tp.tensor(3.0))
    assert g.tolist() == [6.0, 6.0]
    tp.autograd.backward([(x * 2).sum()], grad_tensors=[None])
    assert x.grad.tolist() == [2.0, 2.0]
