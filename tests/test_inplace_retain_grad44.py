"""``retain_grad()`` and ``register_hook`` on a tensor whose history an in-place write rebases.

What torch 2.13 does (measured; its ``update_tensor_hooks_on_new_gradfn``), and what these tests
hold TensorPlay to:

* ``retain_grad()`` made before an in-place write that rebases the tensor's history (a built-in
  in-place method, ``copy_``, ``x[i] = v``, a write into a view of it, a custom op with
  ``mutates_args`` whose kernel writes with tensorplay ops, an ``autograd.Function`` that
  ``mark_dirty``s it) moves to the new history: ``.grad`` is the gradient of the tensor's new
  value. The same for a view whose history is regenerated after its base (or another view of
  the base) was written.
* ``register_hook`` functions registered before the write stay on the old history: they see the
  gradient of the value they were registered on (and what they return flows on from there, not
  into ``.grad``); a hook registered on a view before its base was written never runs when the
  backward goes through the view's new history.
* a shape-changing in-place method (``t_``) keeps the old history for ``retain_grad`` too (torch
  gives the gradient of the tensor as it was).

Each case failed on main (8abad1c) where it says "moved" (``.grad`` was the old value's
gradient, or None for a view).
"""

from __future__ import annotations

import itertools

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.autograd import Function
from tensorplay.testing import drop_ops

_count = itertools.count()


def _leaf(n=3):
    return tp.ones(n, requires_grad=True)


def test_retain_grad_before_mul_is_the_new_values_gradient():   # moved
    w = _leaf()
    y = w * 1
    y.retain_grad()
    y.mul_(2)
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0, 1.0]      # d sum(y_new) / d y_new
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    assert y.retains_grad


@pytest.mark.parametrize("write", ["add_", "copy_", "setitem_all", "neg_", "two_writes"])
def test_retain_grad_moves_for_each_in_place_spelling(write):   # moved
    w = _leaf()
    y = w * 1
    y.retain_grad()
    if write == "add_":
        y.add_(y)
    elif write == "copy_":
        y.copy_(w * 4)
    elif write == "setitem_all":
        y[...] = w * 4
    elif write == "neg_":
        y.neg_()
    else:
        y.mul_(2)
        y.add_(1)
    (y * tp.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert y.grad.tolist() == [1.0, 2.0, 3.0]


def test_retain_grad_after_in_place_and_twice():   # moved (the second; the first was right)
    w = _leaf()
    y = w * 1
    y.mul_(2)
    y.retain_grad()
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0] * 3 and w.grad.tolist() == [6.0] * 3
    w2 = _leaf()
    y2 = w2 * 1
    y2.retain_grad()
    y2.mul_(2)
    y2.retain_grad()                               # again, on the new history: one store
    (y2 * 3).sum().backward()
    assert y2.grad.tolist() == [3.0] * 3


def test_retained_gradient_accumulates_over_backwards_and_autograd_grad_fills_it():
    w = _leaf()
    y = w * 1
    y.retain_grad()
    y.mul_(2)
    loss = (y * 3).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert y.grad.tolist() == [6.0] * 3 and w.grad.tolist() == [12.0] * 3
    w2 = _leaf()
    y2 = w2 * 1
    y2.retain_grad()
    y2.mul_(2)
    (g,) = tp.autograd.grad((y2 * 3).sum(), w2)
    assert g.tolist() == [6.0] * 3 and y2.grad.tolist() == [3.0] * 3


def test_hook_registered_before_stays_on_the_old_value():
    w = _leaf()
    y = w * 1
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.mul_(2)
    (y * 3).sum().backward()
    assert seen == [[6.0] * 3]                     # the gradient of y before the write
    w2 = _leaf()
    y2 = w2 * 1
    y2.mul_(2)
    seen2 = []
    y2.register_hook(lambda g: seen2.append(g.tolist()))   # after: the new value's
    (y2 * 3).sum().backward()
    assert seen2 == [[3.0] * 3]


def test_hook_before_and_retain_grad_before_split():   # moved
    # the hook stays on the old history, retain_grad moves: the hook's replacement reaches w
    # but not y.grad (torch: y.grad 3, w.grad 60)
    w = _leaf()
    y = w * 1
    y.retain_grad()
    seen = []

    def hook(g):
        seen.append(g.tolist())
        return g * 10
    y.register_hook(hook)
    y.mul_(2)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0] * 3
    assert seen == [[6.0] * 3]
    assert w.grad.tolist() == [60.0] * 3


def test_base_retains_and_a_view_of_it_is_written():   # moved
    for write in ("mul_", "setitem"):
        w = _leaf(4)
        y = w * 1
        y.retain_grad()
        if write == "mul_":
            y[:2].mul_(5)
        else:
            y[1] = 7.0
        (y * 3).sum().backward()
        assert y.grad.tolist() == [3.0] * 4, write
        want = [15.0, 15.0, 3.0, 3.0] if write == "mul_" else [3.0, 0.0, 3.0, 3.0]
        assert w.grad.tolist() == want, write


def test_view_retains_and_is_written():   # moved
    w = _leaf(4)
    y = w * 1
    v = y[:2]
    v.retain_grad()
    v.mul_(5)
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    assert w.grad.tolist() == [15.0, 15.0, 0.0, 0.0]
    # through the base only, the view's new history is not reached (torch: None)
    w2 = _leaf(4)
    y2 = w2 * 1
    v2 = y2[:2]
    v2.retain_grad()
    v2.mul_(5)
    (y2 * 3).sum().backward()
    assert v2.grad is None
    assert w2.grad.tolist() == [15.0, 15.0, 3.0, 3.0]


@pytest.mark.parametrize("write", ["base", "other_view", "own_element"])
def test_view_retains_and_its_base_is_written(write):   # moved (regenerated history)
    w = _leaf(4)
    y = w * 1
    v = y[:2]
    v.retain_grad()
    if write == "base":
        y.mul_(5)
    elif write == "other_view":
        y[1:3].mul_(5)
    else:
        v[0] = 9.0
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    want = {"base": [15.0, 15.0, 0.0, 0.0], "other_view": [3.0, 15.0, 0.0, 0.0],
            "own_element": [0.0, 3.0, 0.0, 0.0]}[write]
    assert w.grad.tolist() == want


def test_hook_on_view_before_its_base_is_written_does_not_run():
    w = _leaf(4)
    y = w * 1
    v = y[:2]
    seen = []
    v.register_hook(lambda g: seen.append(g))
    y.mul_(5)
    (v * 3).sum().backward()
    assert seen == []
    assert w.grad.tolist() == [15.0, 15.0, 0.0, 0.0]


def test_shape_changing_in_place_keeps_the_old_history():
    # torch: t_() leaves a retain_grad() made before on the old history (.grad of shape (2, 3))
    w = tp.ones(2, 3, requires_grad=True)
    y = w * 1
    y.retain_grad()
    y.t_()
    (y * tp.arange(6.0).reshape(3, 2)).sum().backward()
    assert y.grad.shape == (2, 3)
    assert y.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]] == w.grad.tolist()


class _Double(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_function_mark_dirty_moves_retain_grad():   # moved
    w = _leaf()
    y = w * 1
    y.retain_grad()
    _Double.apply(y)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0] * 3 and w.grad.tolist() == [6.0] * 3


def test_function_mark_dirty_view_moves_base_and_view_retain_grad():   # moved
    w = _leaf(4)
    y = w * 1
    y.retain_grad()
    v = y[:2]
    v.retain_grad()
    _Double.apply(v)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0] * 4
    assert v.grad is None                          # its new history is not on this path
    assert w.grad.tolist() == [6.0, 6.0, 3.0, 3.0]
    w2 = _leaf(4)
    v2 = (w2 * 1)[:2]
    v2.retain_grad()
    _Double.apply(v2)
    (v2 * 3).sum().backward()
    assert v2.grad.tolist() == [3.0, 3.0] and w2.grad.tolist() == [6.0, 6.0, 0.0, 0.0]


@pytest.fixture
def ns(cpu):
    prefix = f"rg44_{next(_count)}"
    yield prefix
    drop_ops(prefix)


def test_custom_op_mutating_with_tensorplay_ops_moves_retain_grad(ns):   # moved
    @lib.custom_op(f"{ns}::double_", mutates_args=("x",))
    def double_(x: tp.Tensor) -> None:
        x.mul_(2)

    w = _leaf()
    y = w * 1
    y.retain_grad()
    double_(y)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0] * 3 and w.grad.tolist() == [6.0] * 3


def test_custom_op_writing_the_array_moves_retain_grad_to_the_raising_node(ns):
    # the kernel writes outside the graph: the new history's backward raises, after the store of
    # the new value's gradient (the old value's is never stored)
    @lib.custom_op(f"{ns}::double_native", mutates_args=("x",))
    def double_native(x: tp.Tensor) -> None:
        x.native[...] = x.native * 2

    w = _leaf()
    y = w * 1
    y.retain_grad()
    double_native(y)
    with pytest.raises(RuntimeError, match="outside the autograd graph"):
        (y * 3).sum().backward()
    assert y.grad is not None and y.grad.tolist() == [3.0] * 3


@pytest.mark.parametrize("write", ["base", "other_part"])
def test_hook_registered_on_a_view_after_its_base_was_written_runs(write):
    # the hook goes on the view's current history (torch's grad_fn getter renews it first; torch
    # 2.13 crashes when register_hook is the first to read it). On main it went on the stale
    # history and never ran.
    w = _leaf(4)
    y = w * 1
    v = y[:2]
    if write == "base":
        y.mul_(2)
    else:
        y[2:].mul_(2)
    seen = []
    v.register_hook(lambda g: seen.append(g.tolist()))
    (v * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert w.grad.tolist() == ([6.0, 6.0, 0.0, 0.0] if write == "base" else [3.0, 3.0, 0.0, 0.0])


def test_hook_replacement_on_a_view_after_its_base_was_written():
    w = _leaf(4)
    y = w * 1
    v = y[:2]
    y.mul_(2)
    v.register_hook(lambda g: g * 10)
    (v * 3).sum().backward()
    assert w.grad.tolist() == [60.0, 60.0, 0.0, 0.0]
    w2 = _leaf(4)
    y2 = w2 * 1
    v2 = y2[:2]
    y2.mul_(2)
    v2.register_hook(lambda g: g * 10)      # not on the base's path
    (y2 * 3).sum().backward()
    assert w2.grad.tolist() == [6.0] * 4


def test_retain_grad_on_a_view_after_its_base_was_written():
    w = _leaf(4)
    y = w * 1
    v = y[:2]
    y.mul_(2)
    v.retain_grad()
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0] and w.grad.tolist() == [6.0, 6.0, 0.0, 0.0]
