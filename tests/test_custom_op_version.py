"""The version counter of a custom op's written arguments: one bump per written argument per call.

torch (``torch/_library/custom_ops.py``): a mutating ``custom_op`` gets an ``ADInplaceOrView``
kernel that calls ``increment_version`` once on each argument its schema writes, then
redispatches below ``ADInplaceOrView`` (``_AutoDispatchBelowADInplaceOrView``), so the in-place
ops the kernel itself calls (``add_``, ``copy_``, ``fill_``) bump nothing, and a write through the
array (``.numpy()``) is counted by that one bump. ``x._version`` after ``inc(x)`` is 1, however the
kernel writes. TensorPlay used to add the kernel's own bumps to the op's (2 for one ``add_``).

What must not change: a tensor saved for backward and then written by the op fails backward
("modified by an inplace operation"), and where autograd records the kernel's own tensorplay
ops (grad mode on: CompositeImplicitAutograd), a tensor the kernel's graph saved between two of
its writes is still refused (each such write stays counted)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.testing import drop_ops

_count = itertools.count()


@pytest.fixture
def ns(cpu):
    prefix = f"opver{next(_count)}"
    yield prefix
    drop_ops(prefix)


# how the kernel writes its argument ``x`` (once)
WRITES = {
    "add_": lambda x: x.add_(1),
    "copy_": lambda x: x.copy_(x + 1),
    "fill_": lambda x: x.fill_(2.0),
    "mul_": lambda x: x.mul_(3.0),
    "numpy": lambda x: np.add(x.detach().numpy(), 1, out=x.detach().numpy()),
    "view": lambda x: x[0:2].add_(1),                 # through a view of the argument
    "nothing": lambda x: None,                         # declared, not written: torch bumps too
}


def _op(ns, write, name="w"):
    @lib.custom_op(f"{ns}::{name}", mutates_args=("x",))
    def op(x: tp.Tensor) -> None:
        write(x)
    return op


@pytest.mark.parametrize("grad", ["grad_on", "no_grad"])
@pytest.mark.parametrize("how", sorted(WRITES))
def test_one_bump_per_call_whatever_the_kernel_writes_with(ns, how, grad):
    op = _op(ns, WRITES[how])
    x = tp.ones(4)
    v0 = x._version
    with tp.no_grad() if grad == "no_grad" else tp.enable_grad():
        op(x)
        assert x._version == v0 + 1
        op(x)
        assert x._version == v0 + 2


def test_the_reported_case(ns):
    @lib.custom_op(f"{ns}::inc", mutates_args=("x",))
    def inc(x: tp.Tensor) -> None:
        x.add_(1)

    y = tp.ones(3)
    inc(y)
    assert y._version == 1 and y.tolist() == [2.0, 2.0, 2.0]


def test_several_writes_in_a_kernel_that_autograd_cannot_record_bump_once(ns):
    def twice(x):
        x.mul_(2.0)
        x.add_(1.0)
        x.numpy()[0] = 7.0

    op = _op(ns, twice)
    x = tp.ones(4)
    with tp.no_grad():
        op(x)
    assert x._version == 1 and x.tolist() == [7.0, 3.0, 3.0, 3.0]
    leaf = tp.ones(4, requires_grad=True)      # a written leaf: the kernel runs with grad off
    op(leaf)
    assert leaf._version == 1 and leaf.is_leaf and leaf.grad_fn is None
    # grad mode on, the kernel's ops may be recorded: where it writes an argument several
    # times, each write stays counted (torch: 1; its kernels are never recorded), so that a
    # tensor the kernel's graph saved between them is still checked (test below)
    plain = tp.ones(4)
    op(plain)
    assert plain._version == 2


def test_each_written_argument_is_bumped_once(ns):
    @lib.custom_op(f"{ns}::two", mutates_args=("a", "b"))
    def two(a: tp.Tensor, b: tp.Tensor, c: tp.Tensor) -> None:
        a.add_(c)
        b.copy_(c)

    a, b, c = tp.ones(3), tp.ones(3), tp.ones(3)
    two(a, b, c)
    assert (a._version, b._version, c._version) == (1, 1, 0)
    # one storage written through two arguments: two bumps of the shared counter (torch bumps
    # each argument; views share their base's counter)
    base = tp.zeros(4)
    two(base[0:2], base[2:4], tp.ones(2))
    assert base._version == 2 and base.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_list_and_optional_written_arguments(ns):
    @lib.custom_op(f"{ns}::many", mutates_args=("xs", "o"))
    def many(xs: list[tp.Tensor], o: tp.Tensor | None) -> None:
        for x in xs:
            x.add_(1)
            x.add_(1)
        if o is not None:
            o.fill_(5.0)

    xs = [tp.zeros(2), tp.zeros(3)]
    o = tp.zeros(1)
    with tp.no_grad():
        many(xs, o)
        assert [x._version for x in xs] == [1, 1] and o._version == 1
        many(xs, None)
        assert [x._version for x in xs] == [2, 2] and o._version == 1
        many([xs[0], xs[0]], None)              # the same tensor twice: two arguments
        assert xs[0]._version == 4


def test_a_custom_op_called_inside_another_kernel_adds_no_bump_of_its_own(ns):
    inner = _op(ns, WRITES["add_"], "inner")

    @lib.custom_op(f"{ns}::outer", mutates_args=("x",))
    def outer(x: tp.Tensor) -> None:
        inner(x)
        inner(x)

    x = tp.ones(2)
    with tp.no_grad():
        outer(x)
    assert x._version == 1 and x.tolist() == [3.0, 3.0]


# ------------------------------------------------------------------ autograd's checks still hold

@pytest.mark.parametrize("grad", ["grad_on", "no_grad"])
@pytest.mark.parametrize("how", sorted(WRITES))
def test_a_tensor_saved_before_the_call_fails_backward(ns, how, grad):
    op = _op(ns, WRITES[how])
    w = tp.ones(4, requires_grad=True)
    x = w * 1.0                                 # a non-leaf that requires grad
    y = (x * x).sum()                           # saves x
    with tp.no_grad() if grad == "no_grad" else tp.enable_grad():
        op(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_a_write_after_the_kernel_saved_the_tensor_still_fails_backward(ns):
    # grad on, an input requires grad: the kernel's tensorplay ops are recorded
    # (CompositeImplicitAutograd), and its graph saves `out` between two writes
    @lib.custom_op(f"{ns}::stats", mutates_args=("out",))
    def stats(w: tp.Tensor, out: tp.Tensor) -> tp.Tensor:
        out.mul_(2.0)
        y = out * w                             # saves out (for w's gradient)
        out.add_(1.0)                           # ... which is then written again
        return y

    w = tp.ones(3, requires_grad=True)
    out = tp.ones(3)
    y = stats(w, out)
    assert out.tolist() == [3.0] * 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_save_after_the_kernel_s_last_write_is_still_valid(ns):
    @lib.custom_op(f"{ns}::stats2", mutates_args=("out",))
    def stats2(w: tp.Tensor, out: tp.Tensor) -> tp.Tensor:
        out.mul_(2.0)
        out.add_(1.0)
        return out * w                          # saves out after its last write

    w = tp.ones(3, requires_grad=True)
    out = tp.ones(3)
    stats2(w, out).sum().backward()
    assert w.grad.tolist() == [3.0] * 3
