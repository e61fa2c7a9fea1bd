"""``Library.define``/``define`` + ``impl`` ops without a formula under autograd: torch 2.13's
autograd fallback (session 57, fresh56b/02).

torch runs such an op's kernel with grad mode on (no custom_op wrapper around it), so inside the
kernel ``x.numpy()`` of a tensor that requires grad raises "Can't call numpy() on Tensor that
requires grad" at the call, and an in-place torch op on a written leaf that requires grad
raises "a leaf Variable that requires grad is being used in an in-place operation". TensorPlay
ran these kernels as ``custom_op`` kernels (``.numpy()`` allowed, the outputs marked), so an
``out=`` overload writing through NumPy silently returned ``out`` without the op's gradient.
``custom_op`` kernels keep torch's ``custom_op`` rule (opaque: ``.numpy()`` allowed).
Measured with torch 2.13.0+cpu.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.testing import drop_ops

_count = itertools.count()
NUMPY = "Can't call numpy\\(\\) on Tensor that requires grad"
LEAF = "a leaf Variable that requires grad is being used in an in-place operation"


@pytest.fixture
def ns(cpu):
    name = f"deffb{next(_count)}"
    yield name
    drop_ops(name)


def _np_sin(ns, define_lib):
    """``ns::sin`` and ``ns::sin.out`` with kernels through NumPy (torch's define example)."""
    define_lib.define("sin(Tensor x) -> Tensor")
    define_lib.define("sin.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
    define_lib.impl("sin", lambda x: tp.from_numpy(np.sin(x.numpy())), "cpu")

    def sin_out(x, *, out):
        np.sin(x.numpy(), out=out.numpy())
        return out
    define_lib.impl("sin.out", sin_out, "cpu")
    return getattr(tp.ops, ns).sin


def test_out_overload_through_numpy_raises_at_the_call(ns):
    # the reported case: out= silently carried no history, the loss lost the op's gradient
    with lib.Library(ns, "FRAGMENT") as L:
        op = _np_sin(ns, L)
        x = tp.tensor([0.5, 1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match=NUMPY):
            op(x, out=tp.empty(2))
        # the functional overload too (it raised only in backward)
        with pytest.raises(RuntimeError, match=NUMPY):
            op(x)
        # a written leaf that requires grad, the input plain: out.numpy() refuses
        with pytest.raises(RuntimeError, match=NUMPY):
            op(tp.tensor([0.5, 1.0]), out=tp.zeros(2, requires_grad=True))
        # under no_grad, and with inputs that need no grad, the kernel runs
        with tp.no_grad():
            r = op(x, out=tp.empty(2))
        assert r.tolist() == pytest.approx([math.sin(0.5), math.sin(1.0)])
        assert not r.requires_grad
        assert op(tp.tensor([0.5]), out=tp.empty(1)).tolist() == pytest.approx([math.sin(0.5)])


def test_module_level_define_same_rule(ns):
    lib.define(f"{ns}::twice_", "(Tensor(a!) x) -> ()")

    @lib.impl(f"{ns}::twice_", "cpu")
    def _(x):
        x.numpy()[...] *= 2
    op = getattr(tp.ops, ns).twice_
    for x in (tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True) * 1):
        with pytest.raises(RuntimeError, match=NUMPY):
            op(x)
    x = tp.ones(2)
    op(x)
    assert x.tolist() == [2.0, 2.0]


def test_kernel_in_place_op_on_a_written_leaf_refuses(ns):
    # torch: the kernel's own in-place op sees the leaf (grad mode on): the leaf error. A
    # custom_op writes it silently (its kernel runs opaque, grad off): unchanged below
    with lib.Library(ns, "FRAGMENT") as L:
        L.define("tw(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
        L.define("dbl_(Tensor(a!) x) -> ()")

        def tw(x, *, out):
            out.copy_(x * 2)
            return out
        L.impl("tw", tw, "cpu")
        def dbl_(x):
            x.mul_(2)              # -> (): returns None (torch raises for anything else)
        L.impl("dbl_", dbl_, "cpu")
        ops = getattr(tp.ops, ns)
        leaf = tp.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=LEAF):
            ops.tw(tp.ones(2), out=leaf)
        with pytest.raises(RuntimeError, match=LEAF):
            ops.dbl_(tp.ones(2, requires_grad=True))
        assert leaf.is_leaf and leaf.grad_fn is None
        # a non-leaf written by tensorplay ops records the write's exact history (as torch)
        x = tp.tensor([0.5, 1.0], requires_grad=True)
        out = ops.tw(x, out=tp.empty(2))
        (out + x).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        y = tp.tensor([1.0, 3.0], requires_grad=True)
        z = y * 1
        ops.dbl_(z)
        z.sum().backward()
        assert y.grad.tolist() == [2.0, 2.0]


def test_custom_op_keeps_its_opaque_kernel(ns):
    # neighbour: torch's custom_op runs the kernel with grad off (numpy allowed there), a
    # written leaf is written silently
    @lib.custom_op(f"{ns}::np_sin_into", mutates_args={"out"})
    def np_sin_into(x: tp.Tensor, out: tp.Tensor) -> None:
        np.sin(x.numpy(), out=out.numpy())
    x = tp.tensor([0.5, 1.0], requires_grad=True)
    o = tp.empty(2)
    np_sin_into(x, o)
    assert o.tolist() == pytest.approx([math.sin(0.5), math.sin(1.0)])
    leaf = tp.zeros(2, requires_grad=True)
    np_sin_into(tp.tensor([0.5, 1.0]), leaf)
    assert leaf.is_leaf and leaf.tolist() == pytest.approx([math.sin(0.5), math.sin(1.0)])


def test_library_define_returns_torch_name(ns):
    # torch's Library.define returns the schema's operator name as written, without the
    # overload (torch 2.13: 'foo', 'foo' for 'foo.out(...)', 'ns::bar' when written so)
    with lib.Library(ns, "FRAGMENT") as L:
        assert L.define("foo(Tensor x) -> Tensor") == "foo"
        assert L.define("foo.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)") == "foo"
        assert L.define(f"{ns}::bar(Tensor x) -> Tensor") == f"{ns}::bar"
        assert L.define(f"{ns}::bar.ov(Tensor x) -> Tensor") == f"{ns}::bar"
        assert L.define(" sp (Tensor x) -> Tensor") == "sp"
        ops = getattr(tp.ops, ns)
        assert ops.foo.out.name == f"{ns}::foo.out" and ops.bar.ov.name == f"{ns}::bar.ov"
        assert ops.sp.name == f"{ns}::sp"
