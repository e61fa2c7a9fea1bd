"""Operator overloads (``ns::name.overload``), as torch.library has them: defining, registering
kernels/fakes/formulas on, looking up, calling (``tensorplay.ops.ns.name.overload``, the packet's
``.default``/``.overloads()`` and argument-based resolution) and checking (opcheck) an overload.

Public API only; each test gets its own namespace, dropped afterwards.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.errors import AlreadyDefinedError
from tensorplay.library import Library
from tensorplay.testing import drop_ops

_count = itertools.count()


@pytest.fixture
def ns():
    name = f"tovl{next(_count)}"
    yield name
    drop_ops(name)


def _ops(ns):
    return getattr(tp.ops, ns)


def test_docs_example_define_impl_call_with_an_overload_name(ns):
    # torch.library.define's docs example, with only the names changed ("mylib::sin" ->
    # "<ns>::sin.alt", torch -> tensorplay)
    tp_ = tp
    tp_.library.define(f"{ns}::sin.alt", "(Tensor x) -> Tensor")

    @tp_.library.impl(f"{ns}::sin.alt", "cpu")
    def f(x):
        return tp_.from_numpy(np.sin(x.numpy()))

    x = tp_.randn(3)
    y = getattr(tp_.ops, ns).sin.alt(x)
    assert tp_.allclose(y, x.sin())


def test_library_define_overload_returns_torch_name_and_registers_it(ns):
    with Library(ns, "DEF") as L:
        # torch 2.13 returns the schema's name without the overload (session 57)
        assert L.define("op(Tensor x) -> Tensor") == "op"
        assert L.define("op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)") == "op"
        L.impl("op", lambda x: x * 2, "CompositeExplicitAutograd")

        def op_out(x, *, out):
            out.copy_(x * 2)
            return out
        L.impl("op.out", op_out, "CompositeExplicitAutograd")
        pkt = _ops(ns).op
        assert pkt.overloads() == ["default", "out"]
        x = tp.arange(3.0)
        assert pkt.default(x).tolist() == [0.0, 2.0, 4.0]
        o = tp.zeros(3)
        r = pkt.out(x, out=o)
        assert r is o and o.tolist() == [0.0, 2.0, 4.0]
        # the packet resolves by the arguments: out= picks the out overload (torch's rule)
        o2 = tp.zeros(3)
        assert pkt(x, out=o2) is o2 and o2.tolist() == [0.0, 2.0, 4.0]
        assert pkt(x).tolist() == [0.0, 2.0, 4.0]
        with pytest.raises(AttributeError, match=r"is the overload 'out', not an overload packet"):
            pkt.out.default
        assert pkt.out.overloadname == "out" and pkt.default.overloadname == "default"
        assert str(pkt.out.schema) == f"{ns}::op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"
        assert pkt.out.name == f"{ns}::op.out"
    # closing the library removes the overloads too
    assert getattr(_ops(ns), "op", None) is None


def test_mutating_overload_bumps_version_and_writes(ns):
    lib.define(f"{ns}::scale", "(Tensor x, float s) -> Tensor")
    lib.define(f"{ns}::scale.inplace", "(Tensor(a!) x, float s) -> ()")
    lib.impl(f"{ns}::scale", "default", lambda x, s: x * s)

    @lib.impl(f"{ns}::scale.inplace", "cpu")
    def _(x, s):
        x.mul_(s)

    x = tp.ones(2)
    v = x._version
    assert _ops(ns).scale.inplace(x, 3.0) is None
    assert x.tolist() == [3.0, 3.0] and x._version > v
    assert _ops(ns).scale.inplace.mutates_args == ("x",)
    assert _ops(ns).scale.default.mutates_args == ()


def test_packet_resolution_by_types_and_errors_name_the_overloads(ns):
    lib.define(f"{ns}::pick.Tensor", "(Tensor x, Tensor other) -> Tensor")
    lib.define(f"{ns}::pick.Scalar", "(Tensor x, float other) -> Tensor")
    lib.impl(f"{ns}::pick.Tensor", "default", lambda x, other: x + other)
    lib.impl(f"{ns}::pick.Scalar", "default", lambda x, other: x * other)
    pkt = _ops(ns).pick
    assert pkt.overloads() == ["Tensor", "Scalar"]
    x = tp.ones(2)
    assert pkt(x, tp.ones(2)).tolist() == [2.0, 2.0]     # .Tensor
    assert pkt(x, 5).tolist() == [5.0, 5.0]               # .Scalar (an int is a float)
    assert pkt(x, other=4.0).tolist() == [4.0, 4.0]
    with pytest.raises(TypeError) as ei:
        pkt(x, "nope")
    msg = str(ei.value)
    assert f"{ns}::pick" in msg and f"{ns}::pick.Tensor" in msg and f"{ns}::pick.Scalar" in msg
    assert "other" in msg
    with pytest.raises(TypeError, match=r"no overload"):
        pkt(x)
    # no default overload: .default is an AttributeError naming the overloads
    with pytest.raises(AttributeError, match=r"Tensor, Scalar"):
        pkt.default
    with pytest.raises(AttributeError, match=r"no overload 'Bogus'"):
        pkt.Bogus


def test_single_default_op_is_its_own_packet(ns):
    @lib.custom_op(f"{ns}::one", mutates_args=())
    def one(x: tp.Tensor) -> tp.Tensor:
        return x + 1
    # an op without named overloads: tensorplay.ops.ns.name is the op itself (no packet in the
    # call path), .default is it and overloads() lists just "default"
    assert _ops(ns).one is one
    assert one.default is one and one.overloads() == ["default"]
    lib.define(f"{ns}::one.twice", "(Tensor x) -> Tensor")
    assert _ops(ns).one is not one and _ops(ns).one.default is one
    assert _ops(ns).one.overloads() == ["default", "twice"]


def test_register_fake_autograd_kernel_by_overload_name(ns):
    lib.define(f"{ns}::sq", "(Tensor x) -> Tensor")
    lib.define(f"{ns}::sq.cube", "(Tensor x) -> Tensor")
    lib.register_kernel(f"{ns}::sq.cube", "cpu", lambda x: x * x * x)
    lib.impl(f"{ns}::sq", "default", lambda x: x * x)

    @lib.register_fake(f"{ns}::sq.cube")
    def _(x):
        return tp.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def bwd(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x
    lib.register_autograd(f"{ns}::sq.cube", bwd, setup_context=setup)
    cube = _ops(ns).sq.cube
    assert cube.has_autograd and cube.fake_impl is not None
    assert not _ops(ns).sq.default.has_autograd       # registrations go to the overload only
    x = tp.tensor([2.0], requires_grad=True)
    cube(x).sum().backward()
    assert x.grad.tolist() == [12.0]
    assert lib.get_kernel(f"{ns}::sq.cube", "cpu") is not None
    with pytest.raises(LookupError, match=r"no overload 'nope'.*default, cube"):
        lib.get_kernel(f"{ns}::sq.nope", "cpu")


def test_opcheck_on_an_overload_names_it(ns):
    lib.define(f"{ns}::tw.out", "(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")

    @lib.impl(f"{ns}::tw.out", "default")
    def _(x, *, out):
        out.copy_(x * 2)
        return out

    x = tp.randn(3)
    assert lib.opcheck(f"{ns}::tw.out", (x,), {"out": tp.empty(3)}) == {}
    assert lib.opcheck(_ops(ns).tw.out, (x,), {"out": tp.empty(3)}) == {}

    # a wrong overload kernel: the failure names the overload
    lib.define(f"{ns}::tw.bad", "(Tensor x) -> Tensor")
    lib.impl(f"{ns}::tw.bad", "default", lambda x: x.view(-1))    # returns an alias
    res = lib.opcheck(f"{ns}::tw.bad", (x,), raise_exception=False)
    assert res and any(f"{ns}::tw.bad" in str(v) for v in res.values())


def test_packet_is_not_an_op_for_registration(ns):
    lib.define(f"{ns}::p.a", "(Tensor x) -> Tensor")
    lib.define(f"{ns}::p.b", "(Tensor x, Tensor y) -> Tensor")
    with pytest.raises(TypeError, match=r"overload packet.*\.a.*\.b|overload packet"):
        lib.register_fake(_ops(ns).p, lambda x: x)
    with pytest.raises(LookupError, match=rf"{ns}::p.*no default overload.*a, b"):
        lib.impl(f"{ns}::p", "default", lambda x: x)


@pytest.mark.parametrize("name, match", [
    ("X::f.g.h", r"not a valid operator name"),                # two dots
    ("X::f.", r"not a valid operator name"),                   # empty overload
    ("X::.g", r"not a valid operator name"),
    ("X::f.1a", r"not a valid operator name"),
    ("X::f.default", r"'default' is the overload of 'X::f' itself"),
    ("X::f.overloads", r"overload name 'overloads' is reserved"),
    ("X::f.name", r"overload name 'name' is reserved"),
    ("X::f.__call__", r"overload name '__call__' is reserved"),
])
def test_invalid_overload_names_are_clear_errors(ns, name, match):
    name = name.replace("X", ns)
    with pytest.raises(ValueError, match=match.replace("X", ns)):
        lib.define(name, "(Tensor x) -> Tensor")
    assert getattr(_ops(ns), "f", None) is None


def test_overload_names_torch_uses_are_fine(ns):
    # torch's own overload names (aten::add.Tensor/.Scalar/.out, pow.Tensor_Scalar, ...) and
    # names that happen to be attributes of Python's type (mro) are ordinary overloads
    for ov in ("Tensor", "Scalar", "out", "Tensor_Scalar", "mro", "int"):
        lib.define(f"{ns}::g.{ov}", "(Tensor x) -> Tensor")
    assert _ops(ns).g.overloads() == ["Tensor", "Scalar", "out", "Tensor_Scalar", "mro", "int"]
    assert _ops(ns).g.mro.name == f"{ns}::g.mro"


def test_overload_already_defined_is_refused(ns):
    lib.define(f"{ns}::f.out", "(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
    with pytest.raises(AlreadyDefinedError, match=rf"'{ns}::f.out' is already defined"):
        lib.define(f"{ns}::f.out", "(Tensor x) -> Tensor")
    with pytest.raises(AlreadyDefinedError, match=rf"'{ns}::f.out' is already defined"):
        with Library(ns, "FRAGMENT") as L:
            L.define("f.out(Tensor y) -> Tensor")


def test_custom_op_still_takes_plain_names_with_a_hint(ns):
    with pytest.raises(ValueError, match=r"custom_op.*Library\.define|define"):
        lib.custom_op(f"{ns}::op.out", lambda x: x, mutates_args=())


def test_dir_lists_names_without_overloads(ns):
    lib.define(f"{ns}::d", "(Tensor x) -> Tensor")
    lib.define(f"{ns}::d.two", "(Tensor x) -> Tensor")
    lib.define(f"{ns}::e.only", "(Tensor x) -> Tensor")
    assert dir(_ops(ns)) == ["d", "e"]
    assert _ops(ns).e.overloads() == ["only"]
    assert repr(_ops(ns).d).startswith(f"<tensorplay op packet {ns}::d")


OVERLOAD_PACK = '''
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        lib.define("ovlpack::twice(Tensor x) -> Tensor")
        lib.define("ovlpack::twice.leaky(Tensor x) -> Tensor")
        lib.impl("ovlpack::twice", "default", lambda x: x * 2)
        lib.impl("ovlpack::twice.leaky", "default", lambda x: x[1:])   # aliases its input

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        if op.name.startswith("ovlpack::"):
            return [((tp.randn(8, 4, device=device),), {})]
        return None
'''


def test_cli_check_names_the_overload(plugin_env):
    import subprocess
    import sys
    make, env = plugin_env
    make("ovl-pack", "ovl_pack", OVERLOAD_PACK)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "tensorplay.cli", "check", "--plugin",
                               "ovl-pack", "--test-utils",
                               "test_schema,test_autograd_registration,test_faketensor", *args],
                              capture_output=True, text=True, env=env, timeout=120)
    p = cli()
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    leaky = next(line for line in lines if line.startswith("ovlpack::twice.leaky"))
    assert "FAIL" in leaky
    plain = next(line for line in lines if line.startswith("ovlpack::twice "))
    assert "FAIL" not in plain and "ok" in plain
    # one overload selected by its qualified name
    p2 = cli("ovlpack::twice")
    assert p2.returncode == 0, p2.stdout + p2.stderr
    assert "ovlpack::twice.leaky" not in p2.stdout


def test_a_packet_takes_a_bool_for_an_int_or_float_and_its_refusal_is_a_runtime_error():
    # a second fresh user (session 56): torch's packet picks .int / .float for True, and
    # raises RuntimeError when no overload fits (tensorplay's is also a TypeError)
    lib = tp.library.Library("ov56b", "DEF")
    lib.define("h.int(Tensor x, int n) -> Tensor")
    lib.define("h.float(Tensor x, float n) -> Tensor")
    lib.define("s.Scalar(Tensor x, float s) -> Tensor")
    lib.impl("h.int", lambda x, n: x * n, "CPU")
    lib.impl("h.float", lambda x, n: x * n * 10, "CPU")
    lib.impl("s.Scalar", lambda x, s: x * s, "CPU")
    x = tp.ones(2)
    assert tp.ops.ov56b.h(x, True).tolist() == [1.0, 1.0]        # the first that fits: .int
    assert tp.ops.ov56b.s(x, True).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="no overload takes these arguments"):
        tp.ops.ov56b.h(x, "two")
    with pytest.raises(TypeError):
        tp.ops.ov56b.h(x, "two")
    lib._destroy()
