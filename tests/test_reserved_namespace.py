"""The ``tp`` namespace is reserved for the core (built-ins come from the core and the device
plugins), and device spellings are validated at registration (user-tester defects r4, r6)."""

from __future__ import annotations

import itertools

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.fake import FakeTensorMode
from tensorplay.library import Library
from tensorplay.testing import drop_ops

_count = itertools.count()
RESERVED = r"reserved: built-in operators \('tp::'\) .* provided by the tensorplay core and the " \
           r"device plugins"


def _op(qualname):
    """The op registered as ``qualname``, through the public ``tensorplay.ops``; None if none."""
    ns, _, name = qualname.partition("::")
    return getattr(getattr(tp.ops, ns), name, None)


@pytest.fixture
def ns():
    name = f"trsv{next(_count)}"
    yield name
    drop_ops(name)   # and its open DEF library


def _state(name):
    op = _op(name)
    return (op.kernel_stacks(), op.fake_impl, op.backward_fn,
            {k: op.is_kernel_enabled(k) for k in op.kernel_stacks()}, dict(op.table))


# ------------------------------------------------------------------------------- reserved ns
@pytest.mark.parametrize("name, call", [
    ("tp::add", lambda: lib.register_fake("tp::add", lambda a, b, alpha=1: a)),
    ("tp::mul", lambda: lib.register_kernel("tp::mul", "cpu", lambda a, b: "hijacked")),
    ("tp::exp", lambda: lib.impl("tp::exp", "cpu", lambda a: "user-exp")),
    ("tp::exp", lambda: lib.impl("tp::exp", None, lambda a: "user-exp")),
    ("tp::add", lambda: lib.register_autograd("tp::add", lambda ctx, g: (g, g))),
    ("tp::add", lambda: tp.ops.tp.add.register_fake(lambda a, b, alpha=1: a)),
    ("tp::mul", lambda: tp.ops.tp.mul.register_kernel("cpu", lambda a, b: a)),
    ("tp::add", lambda: tp.ops.tp.add.register_autograd(lambda ctx, g: (g, g))),
    ("tp::mul", lambda: tp.ops.tp.mul.set_kernel_enabled("cpu", False)),
])
def test_builtin_op_registrations_refused_naming_the_op(name, call):
    before = _state(name)
    with pytest.raises(ValueError, match=rf"'{name}' is a built-in operator; it is {RESERVED}"):
        call()
    assert _state(name) == before


def test_builtins_unchanged_after_refusals(cpu):
    for call in (lambda: lib.register_fake("tp::add", lambda a, b, alpha=1: a),
                 lambda: lib.impl("tp::mul", "cpu", lambda a, b: "hijacked"),
                 lambda: lib.impl("tp::exp", "cpu", lambda a: "user-exp")):
        with pytest.raises(ValueError):
            call()
    with FakeTensorMode():
        assert (tp.empty(2, 1) + tp.empty(3)).shape == (2, 3)
    assert (tp.ones(1) * tp.ones(1)).tolist() == [1.0]
    assert abs(tp.zeros(1).exp().item() - 1.0) < 1e-6


@pytest.mark.parametrize("kind", ["DEF", "FRAGMENT", "IMPL"])
def test_library_of_tp_namespace_refused(kind):
    with pytest.raises(ValueError, match=rf"^Library\('tp', '{kind}'\): the namespace 'tp' is "
                                         + RESERVED):
        Library("tp", kind)
    assert "tp" not in Library._live_defs


@pytest.mark.parametrize("call", [
    lambda: lib.define("tp::evil(Tensor x) -> Tensor"),
    lambda: lib.define("tp::evil", "(Tensor x) -> Tensor"),
    lambda: lib.custom_op("tp::evil", lambda x: x.clone(), mutates_args=()),
    lambda: lib.triton_op("tp::evil", lambda x: x.clone(), mutates_args=()),
])
def test_new_ops_in_tp_namespace_refused(call):
    with pytest.raises(ValueError, match=r"the namespace 'tp' \(operator 'tp::evil'\) is "
                                         + RESERVED):
        call()
    assert _op("tp::evil") is None


def test_redefining_builtin_names_the_core():
    with pytest.raises(ValueError, match=r"^custom_op\('tp::add'\): 'tp::add' is a built-in "
                                         r"operator and cannot be redefined: built-in operators "
                                         r"are provided by the tensorplay core and the device "
                                         r"plugins"):
        lib.custom_op("tp::add", lambda x, y: x, mutates_args=())


def test_core_install_path_still_works_and_get_kernel_reads_builtins(cpu):
    """A backend's load binds the built-in kernels through the core's path (the reserved
    namespace refuses the public registration APIs only); reading them is allowed. The load is
    a registration of the shipped test backend, MockBackend."""
    pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend
    op = tp.ops.tp.mul
    with MockBackend("mockreserved"):
        assert (tp.ones(2, device="mockreserved") * 3).tolist() == [3.0, 3.0]
        assert lib.get_kernel("tp::mul", "mockreserved") is op.kernels["mockreserved"]
    assert (tp.ones(2) * 3).tolist() == [3.0, 3.0]
    assert lib.get_kernel("tp::mul", "cpu") is op.kernels["cpu"]


def test_user_namespaces_unaffected(ns):
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    lib.impl(op, "cpu", lambda x: x + 1)
    op.register_fake(lambda x: x.new_empty(x.shape))
    with op.set_kernel_enabled("cpu", False):
        pass
    with Library(ns, "FRAGMENT") as L:
        L.define("g(Tensor x) -> Tensor")


# ------------------------------------------------------------------------------- device spellings
@pytest.mark.parametrize("spelling, suggestion", [
    ("CUPA", "cuda"), ("Bogus", None), ("gpu", "cuda"), ("cdua", "cuda"), ("tpu", None),
    ("Cpuu", "cpu"), ("defualt", "default"),
])
def test_unknown_dispatch_keys_refused_with_accepted_and_closest(ns, spelling, suggestion):
    L = Library(ns, "DEF")
    try:
        L.define("foo(Tensor x) -> Tensor")
        with pytest.raises(ValueError) as ei:
            L.impl("foo", lambda x: x * 3, spelling)
        msg = str(ei.value)
        assert f"unknown device type or dispatch key {spelling!r}" in msg
        assert "accepted: 'cpu', 'cuda'" in msg and "'CompositeExplicitAutograd'" in msg
        assert "'default'" in msg
        if suggestion:
            assert msg.endswith(f"Did you mean {suggestion!r}?")
        else:
            assert "Did you mean" not in msg
        assert tp.ops.__getattr__(ns).foo.kernels == {}
    finally:
        L.close()


def test_custom_op_device_types_gpu_refused(ns):
    with pytest.raises(ValueError, match=rf"^custom_op\('{ns}::bar'\): unknown device type or "
                                         r"dispatch key 'gpu' \(no installed plugin provides it\); "
                                         r"accepted: .*Did you mean 'cuda'\?$"):
        lib.custom_op(f"{ns}::bar", lambda x: x.clone(), mutates_args=(), device_types="gpu")
    assert _op(f"{ns}::bar") is None


@pytest.mark.parametrize("spelling", ["cpu", "CPU", "cuda", "CUDA", "cuda:1", "default",
                                      "CompositeExplicitAutograd", "compositeimplicitautograd",
                                      None])
def test_known_spellings_still_accepted(ns, spelling):
    lib.custom_op(f"{ns}::f", lambda x: x.clone(), mutates_args=(), device_types=spelling)


def test_plugin_provided_device_type_accepted(ns, monkeypatch):
    # private on purpose: the table of plugin-provided device types (no public call declares a
    # provider without installing a plugin)
    from tensorplay import _devices
    monkeypatch.setitem(_devices.providers, "npx", [])
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    op.register_kernel("NPX", lambda x: x)
    assert "npx" in op.kernels


@pytest.mark.parametrize("spelling", ["tpu", "TPU", "gpu", "Bogus", "cdua", "mps:0"])
def test_device_of_unknown_type_raises(spelling):
    with pytest.raises(ValueError, match=rf"^tensorplay.device: unknown device type {spelling!r}"
                                         r".*; accepted: 'cpu', 'cuda', .*'meta'"):
        tp.device(spelling)


def test_device_known_types_and_interning():
    assert tp.device("cpu") is tp.device("cpu")
    with pytest.raises(RuntimeError, match="lower case.*use 'cpu'"):
        tp.device("CPU")           # as torch: device types are spelled in lower case
    assert tp.device("meta").type == "meta"
    assert tp.device("cuda:1") is tp.device("cuda", 1)
