"""Where a gradient is accumulated into ``.grad`` (session 54's in-place accumulation, as torch's
AccumulateGrad): every path owns its first ``.grad`` and adds into it later, and a ``.grad`` set by
hand that cannot take the gradient is refused rather than written through. Each expectation was
read off torch 2.13 (cpu) running the same calls, except the refusals, which torch makes at the
assignment itself and tensorplay at the next backward."""

import pytest

import tensorplay as tp


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("how", ["method", "function"])
def test_backward_inputs_never_keeps_the_callers_gradient_tensor(how, create_graph):
    x = tp.ones(3, requires_grad=True)
    go = tp.ones(3)
    if how == "method":
        x.backward(go, inputs=[x], create_graph=create_graph)
    else:
        tp.autograd.backward([x], [go], inputs=[x], create_graph=create_graph)
    (x * 5).sum().backward()
    assert go.tolist() == [1.0, 1.0, 1.0]          # the caller's tensor is untouched
    assert x.grad.tolist() == [6.0, 6.0, 6.0]


def test_backward_inputs_adds_into_the_same_grad_tensor():
    x = tp.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    (x * 2).sum().backward(inputs=[x])
    assert x.grad is g and g.tolist() == [4.0, 4.0, 4.0]


def test_backward_inputs_after_create_graph_keeps_the_grad_fn():
    x = tp.ones(3, requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    g = x.grad
    assert g.grad_fn is not None
    (x * 2).sum().backward(inputs=[x])
    assert x.grad is g and g.grad_fn is not None
    assert g.tolist() == [4.0, 4.0, 4.0]


def test_backward_inputs_of_a_non_leaf_accumulates():
    x = tp.ones(3, requires_grad=True)
    y = x * 2
    (y * 3).sum().backward(inputs=[y], retain_graph=True)
    assert y.grad.tolist() == [3.0, 3.0, 3.0]
    (y * 3).sum().backward(inputs=[y])
    assert y.grad.tolist() == [6.0, 6.0, 6.0]
    assert x.grad is None


@pytest.mark.parametrize("bad, exc, why", [
    (lambda x: x, RuntimeError, "can't assign Variable as its own grad"),
    (lambda x: tp.zeros(3, dtype=tp.float64), RuntimeError, "with dtype"),
    (lambda x: tp.zeros(1), RuntimeError, "of size"),
    (lambda x: tp.zeros(2, 3), RuntimeError, "of size"),
    (lambda x: 3.0, TypeError, "Tensor or None"),
], ids=["itself", "float64", "shape (1,)", "shape (2, 3)", "a number"])
def test_a_grad_that_does_not_fit_is_refused_at_assignment(bad, exc, why):
    # torch's checks at ``x.grad = ...`` (session 57; before, backward refused it)
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(exc, match=why):
        x.grad = bad(x)
    assert x.grad is None


@pytest.mark.parametrize("path", ["backward", "inputs"])
def test_a_grad_sharing_the_tensors_memory_is_refused_not_written_through(path):
    # a view of the tensor itself passes the assignment (as in torch); accumulating into it
    # would write the tensor, so backward refuses it
    x = tp.ones(3, requires_grad=True)
    x.grad = x[:]
    with pytest.raises(RuntimeError, match="the .grad assigned to a tensor .*own memory"):
        if path == "backward":
            (x * 2).sum().backward()
        else:
            (x * 2).sum().backward(inputs=[x])
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_a_grad_set_by_hand_that_fits_is_accumulated_into():
    x = tp.ones(3, requires_grad=True)
    mine = tp.zeros(3)
    x.grad = mine
    (x * 2).sum().backward()
    assert x.grad is mine and mine.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("call, shape", [
    (lambda x: x.logsumexp([0, tp.tensor(1)]), (4,)),
    (lambda x: x.logsumexp([tp.tensor(0), tp.tensor(1)]), (4,)),
    (lambda x: x.sum((tp.tensor(0), 2)), (3,)),
    (lambda x: x.amax([0, tp.tensor(1)]), (4,)),
    (lambda x: tp.ones(1, 2, 1).squeeze((0, tp.tensor(2))), (2,)),
], ids=["logsumexp mixed", "logsumexp tensors", "sum tuple", "amax", "squeeze"])
def test_0_dim_int_tensors_inside_a_dim_list_are_dims(call, shape):
    assert tuple(call(tp.ones(2, 3, 4)).shape) == shape
