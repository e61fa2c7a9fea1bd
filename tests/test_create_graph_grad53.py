"""``backward(create_graph=True)`` leaves ``.grad`` with its history, as torch's.

torch's accumulation with grad mode on (what ``create_graph=True`` sets for the backward pass)
stores ``new_grad.clone()`` (or ``grad + new_grad``) with grad recorded, so ``x.grad`` has a
``grad_fn`` and a second backward through it gives the second derivative: the usual gradient
penalty ``loss.backward(create_graph=True); x.grad.norm().backward()``. Values checked in
torch 2.13.
"""

from __future__ import annotations

import pytest

import tensorplay as tp

pytest.importorskip("numpy")


def test_grad_keeps_its_history_and_differentiates_again():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.tolist() == [3.0, 12.0]
    assert g.requires_grad and g.grad_fn is not None
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_second_create_graph_backward_adds_with_history():
    y = tp.tensor([1.0, 2.0], requires_grad=True)
    (y ** 3).sum().backward(create_graph=True)
    (y ** 2).sum().backward(create_graph=True)
    assert y.grad.tolist() == [5.0, 16.0] and y.grad.grad_fn is not None


def test_a_later_plain_backward_accumulates_the_values():
    z = tp.tensor([1.0, 2.0], requires_grad=True)
    (z ** 3).sum().backward(create_graph=True)
    z.grad.sum().backward()
    assert z.grad.tolist() == [9.0, 24.0]


def test_broadcast_leaf_and_dtype_under_create_graph():
    w = tp.tensor(2.0, requires_grad=True)
    (w.expand(3) * w).sum().backward(create_graph=True)
    assert w.grad.item() == 12.0 and w.grad.grad_fn is not None
    h = tp.tensor([1.0, 3.0], dtype=tp.float32, requires_grad=True)
    (h.double() ** 2).sum().backward(create_graph=True)
    assert h.grad.dtype is tp.float32 and h.grad.tolist() == [2.0, 6.0]
    assert h.grad.grad_fn is not None


def test_without_create_graph_grad_has_no_history():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward()
    assert not x.grad.requires_grad and x.grad.grad_fn is None
