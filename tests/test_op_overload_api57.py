"""Overloads as torch users reach them (fresh56b 08, 12): a ``tensorplay.ops.ns.op`` handle
taken before named overloads were defined sees them (torch's handle is the packet), and the
overload objects answer torch's ``OpOverload`` attributes: ``name()``, ``_schema``,
``__name__``, ``_overloadname``, ``overloadpacket``; the packet ``__name__`` and
``_qualified_op_name``."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.errors import DispatchError


@pytest.fixture
def lib():
    lib = tp.library.Library("api57ov", "DEF")
    yield lib
    lib._destroy()


def _define_op(lib):
    lib.define("op(Tensor x) -> Tensor")
    lib.impl("op", lambda x: x + 1, "CPU")


def _define_out(lib):
    lib.define("op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
    lib.impl("op.out", lambda x, *, out: out.copy_(x + 5), "CPU")


def test_handle_taken_before_overloads_sees_them(lib):
    _define_op(lib)
    my_op = tp.ops.api57ov.op          # e.g. a module-level alias
    _define_out(lib)
    x = tp.zeros(2)
    assert my_op(x).tolist() == [1.0, 1.0]
    assert my_op(x, out=tp.empty(2)).tolist() == [5.0, 5.0]
    assert my_op.out(x, out=tp.empty(2)).tolist() == [5.0, 5.0]
    assert my_op.out is tp.ops.api57ov.op.out
    assert my_op.overloads() == ["default", "out"]
    # no overload takes it: the packet's error (TypeError and RuntimeError, as torch's)
    with pytest.raises(DispatchError, match="no overload takes these arguments"):
        my_op(x, bogus=1)
    with pytest.raises(TypeError):
        my_op(x, bogus=1)


def test_handle_errors_of_the_default_kernel_are_its_own(lib):
    lib.define("op(Tensor x) -> Tensor")

    def kernel(x):
        raise TypeError("the kernel's own error")
    lib.impl("op", kernel, "CPU")
    my_op = tp.ops.api57ov.op
    _define_out(lib)
    with pytest.raises(TypeError, match="the kernel's own error"):
        my_op(tp.zeros(2))


def test_default_defined_after_its_overload(lib):
    _define_out(lib)
    _define_op(lib)
    assert tp.ops.api57ov.op(tp.zeros(1), out=tp.empty(1)).tolist() == [5.0]
    assert tp.ops.api57ov.op.default(tp.zeros(1)).tolist() == [1.0]
    assert tp.ops.api57ov.op(tp.zeros(1)).tolist() == [1.0]


def test_last_overload_gone_the_handle_is_plain_again():
    lib = tp.library.Library("api57ov2", "DEF")
    lib.define("op(Tensor x) -> Tensor")
    lib.impl("op", lambda x: x + 1, "CPU")
    my_op = tp.ops.api57ov2.op
    lib2 = tp.library.Library("api57ov2", "FRAGMENT")
    lib2.define("op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
    lib2.impl("op.out", lambda x, *, out: out.copy_(x + 5), "CPU")
    assert my_op(tp.zeros(1), out=tp.empty(1)).tolist() == [5.0]
    lib2._destroy()
    with pytest.raises(TypeError, match="out"):
        my_op(tp.zeros(1), out=tp.empty(1))
    with pytest.raises(AttributeError):
        my_op.out
    assert my_op(tp.zeros(1)).tolist() == [1.0]
    lib._destroy()


def test_overload_object_attributes(lib):
    _define_op(lib)
    _define_out(lib)
    p = tp.ops.api57ov.op
    d, o = p.default, p.out
    assert d.name() == "api57ov::op" and o.name() == "api57ov::op.out"
    assert d.name == "api57ov::op"            # still tensorplay's string field
    assert str(o._schema) == "api57ov::op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"
    assert str(d._schema) == "api57ov::op(Tensor x) -> Tensor"
    assert (d._overloadname, o._overloadname) == ("default", "out")
    assert (d.__name__, o.__name__) == ("op.default", "op.out")
    assert p.__name__ == "op" and p._qualified_op_name == "api57ov::op"
    assert o.overloadpacket.overloads() == ["default", "out"]
    assert o.overloadpacket.name == "api57ov::op"


def test_op_without_overloads_is_its_own_packet(lib):
    _define_op(lib)
    op = tp.ops.api57ov.op
    assert op.overloadpacket is op
    assert op.name() == "api57ov::op" and op.__name__ == "op.default"
