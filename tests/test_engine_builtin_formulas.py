"""The engine calls a built-in op's formula itself (no ``apply`` frame) when one gradient reaches
the node, and frees what the node saved: every shape a formula's result takes must still reach
the right inputs -- one gradient per tensor input, a (tensor, number) call whose number gets none,
a reduction whose extra arguments get none, a bare gradient of a one-input op, None for an input
that needs none -- and the node's saved tensors must be freed (a second backward raises torch's
error) unless the graph is retained."""

import pytest

import tensorplay as tp


def _leaf(*shape, value=2.0):
    return tp.full(shape, value, requires_grad=True)


def test_each_formula_result_shape_reaches_its_inputs():
    a, b = _leaf(2, 3), _leaf(2, 3, value=3.0)
    ((a * b) * 3.0).sum().backward()                 # tensor-tensor, tensor-number, sum
    assert a.grad.tolist() == [[9.0] * 3] * 2 and b.grad.tolist() == [[6.0] * 3] * 2
    a.grad = b.grad = None
    (a.sum(1, keepdim=True) * b).mean().backward()   # sum with dim: its other args get none
    assert a.grad.tolist() == [[1.5] * 3] * 2
    assert b.grad.tolist() == [[1.0] * 3] * 2
    a.grad = b.grad = None
    (a.exp().neg() + b.relu()).sum().backward()      # one-input formulas
    assert a.grad.allclose(-(a.detach().exp()))
    assert b.grad.tolist() == [[1.0] * 3] * 2


def test_an_input_that_needs_no_gradient_gets_none():
    a = _leaf(3)
    c = tp.ones(3)
    (a * c + c * 2.0).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and c.grad is None


def test_saved_tensors_freed_after_backward_kept_with_retain_graph():
    a = _leaf(3)
    y = (a * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert a.grad.tolist() == [8.0, 8.0, 8.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_multi_output_node_and_intermediate_hooks():
    x = tp.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
    values, idx = x.max(1)                            # two outputs: the general path
    h = values * 2.0
    seen = []
    h.register_hook(lambda g: seen.append(g.tolist()))
    h.retain_grad()
    h.sum().backward()
    assert seen == [[1.0, 1.0]] and h.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [[0.0, 2.0, 0.0], [2.0, 0.0, 0.0]]


def test_create_graph_records_the_formulas():
    x = _leaf(2, value=3.0)
    (g,) = tp.autograd.grad((x * x * x).sum(), x, create_graph=True)
    assert g.tolist() == [27.0, 27.0] and g.requires_grad
    g.sum().backward()
    assert x.grad.tolist() == [18.0, 18.0]


def test_formula_dtype_mismatch_and_undefined_gradients():
    x = _leaf(3)
    y = x.to(tp.float64) * 2.0                        # the gradient arrives in float64
    y.sum().backward()
    assert x.grad.dtype == tp.float32 and x.grad.tolist() == [2.0, 2.0, 2.0]
    a, b = _leaf(2), _leaf(2)
    out = tp.stack([a * 1.0, b * 1.0])
    out[0].sum().backward()                           # b's branch gets zeros or nothing
    assert a.grad.tolist() == [1.0, 1.0]
    assert b.grad is None or b.grad.tolist() == [0.0, 0.0]
