"""``t.grad = g`` is checked at the assignment, as torch checks it (a fresh user's wrong-shape
``.grad`` was refused only at the next ``backward``, and an int64 ``.grad`` on a float32 leaf
was taken): the same errors, types and words as torch 2.13."""

from __future__ import annotations

import pytest

import tensorplay as tp


def _leaf():
    return tp.ones(2, requires_grad=True)


@pytest.mark.parametrize("g,words", [
    (lambda: tp.ones(3), r"attempting to assign a gradient of size '\[3\]' to a tensor of size '\[2\]'"),
    (lambda: tp.ones(1), r"attempting to assign a gradient of size '\[1\]' to a tensor of size '\[2\]'"),
    (lambda: tp.ones(2, 1), r"of size '\[2, 1\]' to a tensor of size '\[2\]'"),
    (lambda: tp.ones(2, dtype=tp.float64), "attempting to assign a gradient with dtype .*float64"),
    (lambda: tp.ones(2, dtype=tp.int64), "with dtype .*int64.* to a tensor with dtype .*float32"),
    # dtype first, as torch
    (lambda: tp.ones(3, dtype=tp.float64), "with dtype"),
])
def test_wrong_grad_is_refused_at_assignment(g, words):
    x = _leaf()
    with pytest.raises(RuntimeError, match=words):
        x.grad = g()
    assert x.grad is None          # unchanged
    (x * 2).sum().backward()       # and backward runs as if nothing was assigned
    assert x.grad.tolist() == [2.0, 2.0]


def test_wrong_grad_refused_on_any_tensor():
    y = _leaf() * 2                                 # not a leaf
    with pytest.raises(RuntimeError, match="of size"):
        y.grad = tp.ones(3)
    z = tp.ones(2)                                  # does not require grad
    with pytest.raises(RuntimeError, match="of size"):
        z.grad = tp.ones(3)


def test_non_tensor_and_self():
    x = _leaf()
    with pytest.raises(TypeError, match="Tensor or None but got grad of type int"):
        x.grad = 3
    with pytest.raises(TypeError, match="list"):
        x.grad = [1.0, 1.0]
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x


def test_fitting_grads_are_taken():
    x = _leaf()
    g = tp.full((2,), 5.0)
    x.grad = g
    assert x.grad is g
    (x * 2).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    x.grad = None
    assert x.grad is None
    x.grad = tp.zeros(4)[::2]          # another layout is fine (torch too)
    x.grad = x.detach()                # torch takes a tensor sharing the memory at assignment
    del x.grad
    assert x.grad is None
    i = tp.ones(2, dtype=tp.int64)
    i.grad = tp.ones(2, dtype=tp.int64)
    assert i.grad.dtype == tp.int64


def test_deepcopy_keeps_grad():
    import copy
    x = _leaf()
    (x * 3).sum().backward()
    assert copy.deepcopy(x).grad.tolist() == [3.0, 3.0]
