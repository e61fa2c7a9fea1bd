"""The op record (``CustomOpDef``): a declared record with typed kernel stacks, registration
handles that undo exactly their own entry, and a public read API for tools.

The low-level pushes ``op._add_kernel`` / ``_set_fake`` / ``_set_autograd`` used below are the
registry's own units (the public ``register_*`` APIs take no owner or priority: those come from
the plugin platform's ``registering_as``), tested here on purpose."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.library import Kernel, KernelHandle, Library, RegistrationHandle
from tensorplay.testing import drop_ops

_COUNTER = itertools.count()


@pytest.fixture
def ns():
    name = f"rec{next(_COUNTER)}"
    yield name
    drop_ops(name)


def _k1(x):
    return x + 1


def _k2(x):
    return x + 2


def _fake(x):
    return x.new_empty(x.shape)


def _bwd(ctx, g):
    return g


# ------------------------------------------------------------------------------- declared record

def test_record_is_declared_no_attribute_can_be_added(ns):
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    assert dataclasses.is_dataclass(op)
    names = {f.name for f in dataclasses.fields(op)}
    assert {"name", "schema", "owner", "version", "where", "defined_by", "table"} <= names
    assert not hasattr(op, "__dict__")
    with pytest.raises(AttributeError, match="some_tool_field"):
        op.some_tool_field = 1
    with pytest.raises(AttributeError, match="'__doc__' .* is read-only"):
        op.__doc__ = "replaced"
    assert not hasattr(op, "some_tool_field")
    op.owner = "x"                      # a declared field is writable (by the registry)
    # fields that were written and never read are gone
    for dead in ("_capture_kernel", "_autograd_kernel", "_py_signature", "_fn", "_fake_owner",
                 "_autograd_owner", "plugin_field"):
        assert dead not in names


def test_definition_fields_are_public(ns):
    @lib.custom_op(f"{ns}::f", mutates_args=())
    def f(x: tp.Tensor) -> tp.Tensor:
        """Doc of f."""
        return x + 1

    line = f.__wrapped__.__code__.co_firstlineno
    assert f.defined_by == "custom_op" and f.where.endswith(f":{line}")
    assert f.opname == "f" and f.namespace == ns and f.owner is None and f.plugin is None
    assert f.__doc__ == "Doc of f." and f(tp.zeros(1)).tolist() == [1.0]
    d = lib.define(f"{ns}::g(Tensor x) -> Tensor")
    assert d.defined_by == "define" and not hasattr(d, "__wrapped__")


def test_redefinition_keeps_doc_and_forwards(ns):
    def make(v):
        @lib.custom_op(f"{ns}::f", mutates_args=())
        def f(x: tp.Tensor) -> tp.Tensor:
            """Doc."""
            return x + v
        return f

    old, new = make(1), make(2)
    assert old.__doc__ == "Doc." and old(tp.zeros(1)).tolist() == [2.0]   # forwards to new
    assert new.version == old.version + 1


# ------------------------------------------------------------------------------- kernel stacks

def test_kernel_entries_are_typed_with_source(ns):
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    h = op.register_kernel("cpu", _k1)
    (k,) = op.kernel_stack("cpu")
    assert isinstance(k, Kernel) and k == Kernel(_k1, None, 0, f"{__name__}:_k1")
    assert op.kernel_stacks() == {"cpu": (k,)} and h is _k1
    assert op.active_kernel("cpu") is _k1 and op.active_kernel("cuda") is None
    with op.set_kernel_enabled("cpu", False):
        assert op.active_kernel("cpu") is None and not op.is_kernel_enabled("cpu")
        assert op.kernels == {"cpu": _k1}          # registered, but disabled
    assert op.is_kernel_enabled("cpu")


def test_low_level_registration_returns_a_handle_on_its_entry(ns):
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    h = op._add_kernel("cpu", _k1, "some-plugin", 3)
    assert isinstance(h, KernelHandle) and isinstance(h, RegistrationHandle)
    assert h.kernel == Kernel(_k1, "some-plugin", 3, f"{__name__}:_k1")
    assert op.kernel_owner("cpu") == "some-plugin"
    h.destroy()
    h.destroy()                                      # idempotent
    assert op.kernel_stacks() == {} and op.kernel_owner("cpu") is None


def test_same_function_in_two_libraries_is_undone_precisely(ns):
    """Each registration is its own entry: closing one Library leaves the other's kernel."""
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    a, b = Library(ns, "IMPL"), Library(ns, "IMPL")
    a.impl("f", _k1, "cpu")
    b.impl("f", _k1, "cpu")
    b.close()
    assert op.kernels == {"cpu": _k1} and op(tp.zeros(1)).tolist() == [1.0]
    a.close()
    assert op.kernels == {}


@pytest.mark.parametrize("order", list(itertools.permutations(range(5))))
def test_handles_undo_in_any_order(ns, order):
    """Kernels, fake kernels and formulas from several registrations, undone in every order:
    after each undo, what remains active is the newest remaining registration of each kind."""
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    regs = []   # (kind, fn, handle)
    for i, (kind, fn) in enumerate([("cpu", _k1), ("fake", _fake), ("cpu", _k2),
                                    ("autograd", _bwd), ("cpu", _k1)]):
        L = Library(ns, "IMPL")
        if kind == "cpu":
            L.impl("f", fn, "cpu")
        elif kind == "fake":
            lib.register_fake(op, fn, lib=L)
        else:
            lib.register_autograd(op, fn, lib=L)
        regs.append((kind, fn, L))
    live = list(range(5))
    for i in order:
        regs[i][2].close()
        live.remove(i)
        want = {kind: [regs[j][1] for j in live if regs[j][0] == kind]
                for kind in ("cpu", "fake", "autograd")}
        assert [k.fn for k in op.kernel_stack("cpu")] == want["cpu"]
        assert op.active_kernel("cpu") is (want["cpu"][-1] if want["cpu"] else None)
        assert op.fake_impl is (want["fake"][-1] if want["fake"] else None)
        assert op.backward_fn is (want["autograd"][-1] if want["autograd"] else None)
        assert op.has_autograd is bool(want["autograd"]) and op.has_fake is bool(want["fake"])
    assert op.kernel_stacks() == {} and op.table.get("cpu") is None


def test_fake_and_formula_entries_carry_owner_and_source(ns):
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    assert op.fake_kernel is None and not op.has_fake and not op.has_autograd
    h = op._set_fake(_fake, "pkg-x")
    assert op.fake_kernel == Kernel(_fake, "pkg-x", 0, f"{__name__}:_fake")
    s = op._set_autograd(_bwd, None)
    assert op.backward_fn is _bwd and op.setup_context_fn is None and op.has_autograd
    h.destroy()
    s.destroy()
    assert op.fake_kernel is None and op.backward_fn is None


def test_replace_keeps_the_entry_and_its_undo(ns):
    """A stand-in replaced by its real kernel (plugin metadata kernels) keeps owner, priority and
    place; undoing the registration removes the real kernel."""
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    low = op._add_kernel("cpu", _k2, None, 0)
    h = op._add_kernel("cpu", _k1, "p", 1, source="pkg.mod:k")
    assert op.kernel_stack("cpu")[-1].source == "pkg.mod:k"
    h.replace(_k2, source="pkg.mod:k")
    assert op.kernel_stack("cpu")[-1] == Kernel(_k2, "p", 1, "pkg.mod:k")
    low.destroy()
    assert op.kernel_stack("cpu") == (Kernel(_k2, "p", 1, "pkg.mod:k"),)
    h.destroy()
    assert op.kernel_stacks() == {}


def test_adopted_registrations_stay_undoable(ns):
    """Adopting (a plugin module imported before the platform) changes owners in place: the
    handles made before still remove their entries."""
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    mine = op._add_kernel("cpu", _k1)
    other = op._add_kernel("cuda", _k2)
    fk = op._set_fake(_fake)
    op.adopt("pkg-x", lambda fn: fn in (_k1, _fake))
    assert op.owner == "pkg-x" and op.plugin == "pkg-x"
    assert op.kernel_owner("cpu") == "pkg-x" and op.kernel_owner("cuda") is None
    assert op.fake_kernel.owner == "pkg-x"
    mine.destroy()
    fk.destroy()
    assert set(op.kernel_stacks()) == {"cuda"} and op.fake_impl is None
    other.destroy()
    assert op.kernel_stacks() == {}


def test_builtin_read_api():
    add = tp.ops.tp.add
    assert add.is_builtin and add.has_fake and add.has_autograd and add.fake_impl is None
    assert add.has_array_kernel and add.defined_by == "core" and add.owner is None
    with pytest.raises(AttributeError):
        add.extra = 1


def test_replace_after_destroy_does_not_come_back(ns):
    """A lazy kernel imported after its plugin was rolled back stays out of the stack."""
    op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
    h = op._add_kernel("cpu", _k1, "p", 0)
    h.destroy()
    h.replace(_k2)
    assert op.kernel_stacks() == {} and op.table.get("cpu") is None
