"""tensorplay.library: every public function's documented behaviour and each error path (SPEC §3,
the owner's documentation in shared/seeds). Dispatch rules are in test_dispatch.py, the CASES in
test_cases.py, concurrency in test_registration_threads.py.

Each test gets its own namespace (fixture ``ns``); its ops are removed afterwards.
"""

from __future__ import annotations

import itertools
import re
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorplay as tp
import tensorplay.library as lib
from tensorplay import _registry   # unregister_op's own undo-order tests (TestRedefinition)
from tensorplay.errors import DispatchError, SchemaError
from tensorplay.fake import FakeTensorMode
from tensorplay.library import CustomOpDef, Kernel, Library
from tensorplay.testing import drop_ops

_count = itertools.count()


def _cleanup(prefix: str) -> None:
    drop_ops(prefix)   # its ops (redefinitions included) and its open DEF library


def _op(qualname):
    """The op registered as ``qualname``, through the public ``tensorplay.ops``; None if none."""
    ns, _, name = qualname.partition("::")
    return getattr(getattr(tp.ops, ns), name, None)


@pytest.fixture
def ns():
    name = f"tlib{next(_count)}"
    yield name
    _cleanup(name)


def _other_module(name: str, src: str) -> types.ModuleType:
    """A module object named ``name`` whose functions say they come from ``<name>.py``."""
    m = types.ModuleType(name)
    exec(compile(src, f"/virtual/{name}.py", "exec"), m.__dict__)
    return m


# =============================================================================== custom_op
class TestCustomOp:
    def test_decorator_form_returns_callable_op_with_attributes(self, ns):
        @lib.custom_op(f"{ns}::add1", mutates_args=())
        def add1(x: tp.Tensor, n: float = 1.0) -> tp.Tensor:
            """Adds n."""
            return x + n

        assert isinstance(add1, CustomOpDef)
        assert add1.name == f"{ns}::add1" and add1.namespace == ns
        assert str(add1.schema) == f"{ns}::add1(Tensor x, float n=1.0) -> Tensor"
        assert add1.mutates_args == () and add1.device_types == ("default",)
        assert add1.__doc__ == "Adds n." and add1.__wrapped__.__name__ == "add1"
        assert add1(tp.zeros(2)).tolist() == [1.0, 1.0]
        assert add1(tp.zeros(2), 2.5).tolist() == [2.5, 2.5]
        assert add1(x=tp.zeros(1), n=3.0).tolist() == [3.0]
        assert tp.ops.__getattr__(ns).add1 is add1
        assert add1.version == 0 and add1.is_triton is False

    def test_positional_fn_form(self, ns):
        def body(x, weight):
            return (x * weight).sum()

        op = lib.custom_op(f"{ns}::weighted_sum", body, mutates_args=())
        assert isinstance(op, CustomOpDef)
        assert op(tp.ones(3), tp.full((3,), 2.0)).item() == 6.0
        assert op.kernels == {"default": body}

    def test_tags_are_kept(self, ns):
        op = lib.custom_op(f"{ns}::t", lambda x: x, mutates_args=(), tags=("pointwise", "x"))
        assert op.tags == ("pointwise", "x")
        op2 = lib.custom_op(f"{ns}::t2", lambda x: x, mutates_args=(), tags="pointwise")
        assert op2.tags == ("pointwise",)
        with pytest.raises(TypeError, match=r"^custom_op\('.*::t3'\): tags must be"):
            lib.custom_op(f"{ns}::t3", lambda x: x, mutates_args=(), tags=3)

    @pytest.mark.parametrize("bad", ["add", "a::b::c", "1a::b", "a:b", "a::", "::b", " a::b",
                                     "a::b ", "a::b-c", "a b::c", "", "a::1b"])
    def test_bad_names_are_value_errors_naming_the_rule(self, bad):
        with pytest.raises(ValueError) as ei:
            lib.custom_op(bad, lambda x: x, mutates_args=())
        msg = str(ei.value)
        assert msg.startswith(f"custom_op({bad!r}): {bad!r} is not a valid operator name")
        assert "exactly one '::'" in msg and "identifiers" in msg
        assert _op(bad) is None

    def test_overload_names_are_refused_with_a_hint(self, ns):
        # custom_op takes no overload names (as torch's); define/Library.define do
        with pytest.raises(ValueError, match=r"Overload names .* are defined with "
                                             r"tensorplay.library.define or Library.define"):
            lib.custom_op(f"{ns}::op.out", lambda x: x, mutates_args=())
        with pytest.raises(ValueError, match=r"not a valid operator name"):
            lib.custom_op(123, lambda x: x, mutates_args=())

    def test_fn_must_be_callable(self, ns):
        with pytest.raises(TypeError, match=r"^custom_op\('.*::f'\): fn must be a function"):
            lib.custom_op(f"{ns}::f", "not a function", mutates_args=())
        deco = lib.custom_op(f"{ns}::f", mutates_args=())
        with pytest.raises(TypeError, match=r"expected a function to decorate, got 3"):
            deco(3)
        assert _op(f"{ns}::f") is None

    def test_mutates_args_is_required(self, ns):
        with pytest.raises(TypeError, match="mutates_args"):
            lib.custom_op(f"{ns}::f", lambda x: x)

    @pytest.mark.parametrize("value, msg", [
        ("x", r"mutates_args must be a collection of parameter names or 'unknown', got the string 'x'"),
        (None, r"mutates_args must be a collection of parameter names or 'unknown', got None"),
        (5, r"mutates_args must be a collection of parameter names or 'unknown', got 5"),
        (("z",), r"mutates_args names \['z'\], which are not parameters of the op \(parameters: "
                 r"\['x', 'n'\]\)"),
        (("n",), r"mutates_args names 'n' \(SymInt\), which are not tensors"),
        ((1,), r"mutates_args must contain parameter names \(str\), got \[1\]"),
    ])
    def test_mutates_args_errors(self, ns, value, msg):
        def f(x, n: int) -> None:
            pass

        with pytest.raises(ValueError, match=rf"^custom_op\('{ns}::f'\): {msg}"):
            lib.custom_op(f"{ns}::f", f, mutates_args=value)
        assert _op(f"{ns}::f") is None

    def test_mutates_args_accepts_any_collection_and_orders_by_parameter(self, ns):
        def f(a, b, c) -> None:
            pass

        op = lib.custom_op(f"{ns}::f", f, mutates_args={"c", "a"})
        assert op.mutates_args == ("a", "c")
        assert op.schema.signature_str() == "(Tensor(a!) a, Tensor b, Tensor(b!) c) -> ()"
        op2 = lib.custom_op(f"{ns}::g", f, mutates_args=["b"])
        assert op2.schema.signature_str() == "(Tensor a, Tensor(a!) b, Tensor c) -> ()"

    # ---- schema=
    def test_schema_without_name_is_named_and_kept_exactly(self, ns):
        def body(x, y):
            return x + y

        op = lib.custom_op(f"{ns}::f", body, mutates_args=(),
                           schema="(Tensor x, Tensor y) -> Tensor")
        assert str(op.schema) == f"{ns}::f(Tensor x, Tensor y) -> Tensor"
        assert op(tp.ones(1), tp.ones(1)).tolist() == [2.0]

    def test_schema_with_name_and_wins_over_annotations(self, ns):
        def body(x: tp.Tensor, n: float) -> tp.Tensor:      # annotations say float ...
            return x * n

        op = lib.custom_op(f"{ns}::f", body, mutates_args=(),
                           schema=f"{ns}::f(Tensor x, SymInt n=2) -> Tensor")
        assert op.schema.signature_str() == "(Tensor x, SymInt n=2) -> Tensor"   # ... schema wins
        assert op(tp.ones(1)).tolist() == [2.0]

    def test_schema_naming_another_op_is_refused(self, ns):
        with pytest.raises(ValueError, match=rf"^custom_op\('{ns}::f'\): schema .* names the "
                                             rf"operator '{ns}::g' but the op is '{ns}::f'"):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=(), schema=f"{ns}::g(Tensor x) -> Tensor")
        assert _op(f"{ns}::f") is None

    @pytest.mark.parametrize("bad", ["Tensor x", "(Tensr x) -> Tensor", "(Tensor x)", "(Tensor x) -> Tensor junk"])
    def test_malformed_schema_is_schema_error_starting_with_api(self, ns, bad):
        with pytest.raises(SchemaError, match=rf"^custom_op\('{ns}::f'\): bad schema: "
                                              rf"FunctionSchema.parse: .* at position \d+"):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=(), schema=bad)
        assert _op(f"{ns}::f") is None

    def test_schema_must_be_a_string(self, ns):
        with pytest.raises(TypeError, match=r"schema must be a str"):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=(), schema=3)

    def test_schema_must_agree_with_mutates_args(self, ns):
        def body(x, y) -> None:
            pass

        with pytest.raises(ValueError, match=r"disagrees with mutates_args=\('x',\): mutates_args "
                                             r"lists \['x'\] but the schema does not mark them"):
            lib.custom_op(f"{ns}::f", body, mutates_args=("x",), schema="(Tensor x, Tensor y) -> ()")
        with pytest.raises(ValueError, match=r"disagrees with mutates_args=\(\): the schema writes "
                                             r"\['x'\]"):
            lib.custom_op(f"{ns}::f", body, mutates_args=(), schema="(Tensor(a!) x, Tensor y) -> ()")
        with pytest.raises(ValueError, match=r"disagrees with mutates_args='unknown'"):
            lib.custom_op(f"{ns}::f", body, mutates_args="unknown", schema="(Tensor(a!) x, Tensor y) -> ()")
        assert _op(f"{ns}::f") is None
        op = lib.custom_op(f"{ns}::f", body, mutates_args="unknown",
                           schema="(Tensor(a!) x, Tensor(b!) y) -> ()")
        assert op.mutates_args == ("x", "y")

    # ---- device_types
    @pytest.mark.parametrize("spelling, keys", [
        ("cpu", ("cpu",)), ("CPU", ("cpu",)), ("cuda", ("cuda",)), ("CUDA", ("cuda",)),
        ("cuda:1", ("cuda",)), ("default", ("default",)),
        ("CompositeExplicitAutograd", ("default",)), ("CompositeImplicitAutograd", ("default",)),
        (None, ("default",)), ([], ("default",)), ((), ("default",)),
        (["cpu", "CUDA"], ("cpu", "cuda")), (("cpu", "cpu"), ("cpu",)),
        (tp.device("cpu"), ("cpu",)), ([tp.device("cuda", 0), "cpu"], ("cuda", "cpu")),
    ])
    def test_device_type_spellings(self, ns, spelling, keys):
        def body(x):
            return x * 2

        op = lib.custom_op(f"{ns}::f", body, mutates_args=(), device_types=spelling)
        assert op.device_types == keys
        assert sorted(op.kernels) == sorted(keys)
        assert all(op.kernels[k] is body for k in keys)

    @pytest.mark.parametrize("spelling, exc, msg", [
        ("bogus!", ValueError, r"'bogus!' is not a device type; expected 'cpu', 'cuda', 'default' "
                               r"or a Composite\* dispatch key"),
        (["cpu", "bogus!"], ValueError, r"'bogus!' is not a device type"),
        ("meta", ValueError, r"'meta' is not a kernel device; use register_fake\(\)"),
        ("Meta", ValueError, r"'Meta' is not a kernel device"),
        (3, TypeError, r"device_types must be a device type such as 'cpu', an iterable of them, "
                       r"or None"),
        ([3], ValueError, r"3 is not a device type"),
    ])
    def test_bad_device_types_leave_no_op(self, ns, spelling, exc, msg):
        with pytest.raises(exc, match=rf"^custom_op\('{ns}::f'\): {msg}"):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=(), device_types=spelling)
        assert _op(f"{ns}::f") is None
        with pytest.raises(AttributeError):
            getattr(tp.ops.__getattr__(ns), "f")

    def test_device_types_is_an_advertisement(self, ns):
        @lib.custom_op(f"{ns}::f", mutates_args=(), device_types="cuda")
        def f(x):
            return x + 1

        with pytest.raises(DispatchError, match=r"no kernel for device 'cpu' \(registered: cuda\)"):
            f(tp.zeros(1))
        f.register_kernel("cpu", lambda x: x + 10)      # calls pick from whatever is registered
        assert f(tp.zeros(1)).tolist() == [10.0]
        assert f.device_types == ("cuda",)

    # ---- redefinition
    def test_redefinition_from_same_module_replaces_and_bumps_version(self, ns):
        def v1(x):
            return x + 1

        def v2(x):
            return x + 2

        op1 = lib.custom_op(f"{ns}::f", v1, mutates_args=())
        op2 = lib.custom_op(f"{ns}::f", v2, mutates_args=())
        assert op2 is not op1 and op2.version == op1.version + 1 == 1
        assert getattr(tp.ops.__getattr__(ns), "f") is op2
        assert _op(f"{ns}::f") is op2
        assert op2(tp.zeros(1)).tolist() == [2.0]
        assert op1(tp.zeros(1)).tolist() == [2.0]     # the old handle runs the current one
        op3 = lib.custom_op(f"{ns}::f", v1, mutates_args=("x",))
        assert op3.version == 2 and op3.mutates_args == ("x",)

    def test_redefinition_from_another_module_names_both_sites(self, ns):
        lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=())
        other = _other_module("someone_elses_ops", "def f(x):\n    return x\n")
        with pytest.raises(ValueError) as ei:
            lib.custom_op(f"{ns}::f", other.f, mutates_args=())
        msg = str(ei.value)
        assert msg.startswith(f"custom_op('{ns}::f'): operator '{ns}::f' is already defined at ")
        assert "test_library.py:" in msg and f"(module {__name__})" in msg
        assert "/virtual/someone_elses_ops.py:1 (module someone_elses_ops)" in msg
        assert "redefine it from the same module" in msg
        assert _op(f"{ns}::f").version == 0

    def test_builtin_cannot_be_redefined(self):
        with pytest.raises(ValueError, match=r"^custom_op\('tp::add'\): 'tp::add' is a built-in "
                                             r"operator and cannot be redefined"):
            lib.custom_op("tp::add", lambda x, y: x, mutates_args=())
        assert _op("tp::add").is_builtin

    def test_failed_redefinition_keeps_previous_definition(self, ns):
        op1 = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=(), device_types="cpu")
        with pytest.raises(ValueError):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=(), device_types=["cpu", "bogus!"])
        with pytest.raises(ValueError, match="cannot take parameter 'x'"):
            lib.custom_op(f"{ns}::f", lambda: None, mutates_args=(), schema="(Tensor x) -> Tensor")
        with pytest.raises(ValueError, match="not parameters"):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=("y",))
        assert _op(f"{ns}::f") is op1 and op1.version == 0
        assert op1(tp.zeros(1)).tolist() == [1.0]


# =============================================================================== triton_op
class TestTritonOp:
    def test_registration_flagged_and_schema_inferred_or_honoured(self, ns):
        @lib.triton_op(f"{ns}::f", mutates_args=())
        def f(x: tp.Tensor) -> tp.Tensor:
            return x * 3

        assert f.is_triton and str(f.schema) == f"{ns}::f(Tensor x) -> Tensor"
        assert f.kernels == {"default": f.__wrapped__}
        assert f(tp.ones(1)).tolist() == [3.0]   # a plain body runs like any kernel

    def test_errors_name_triton_op(self, ns):
        with pytest.raises(ValueError, match=r"^triton_op\('bad'\): 'bad' is not a valid operator"):
            lib.triton_op("bad", lambda x: x, mutates_args=())
        with pytest.raises(TypeError, match=r"^triton_op\('.*::f'\): fn must be a function"):
            lib.triton_op(f"{ns}::f", 3, mutates_args=())
        with pytest.raises(ValueError, match=r"^triton_op\('.*::f'\): mutates_args"):
            lib.triton_op(f"{ns}::f", lambda x: x, mutates_args="x")

    def test_wrap_triton_needs_the_plugin(self):
        try:
            import tensorplay_triton  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match=r"^wrap_triton: needs the tensorplay-triton "
                                                  r"plugin; install it with pip install"):
                lib.wrap_triton(object())
        else:  # plugin installed: forwards to it; idempotent on wrappers
            class Launcher:
                def __getitem__(self, grid):
                    return lambda *args, **kwargs: ("launched", grid, args)

            w = lib.wrap_triton(Launcher())
            assert lib.wrap_triton(w) is w
            with pytest.raises(TypeError, match=r"^wrap_triton: expected a Triton kernel"):
                lib.wrap_triton(3)


# =============================================================================== CustomOpDef
class TestRegisterKernel:
    def test_direct_and_decorator_forms_return_fn(self, ns):
        op = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=())

        def cpu_k(x):
            return x + 100

        assert op.register_kernel("cpu", cpu_k) is cpu_k

        @op.register_kernel(["cuda"])
        def cuda_k(x):
            return x

        assert op.kernels == {"default": op.__wrapped__, "cpu": cpu_k, "cuda": cuda_k}
        assert op(tp.zeros(1)).tolist() == [100.0]        # concrete beats device-agnostic

    def test_none_empty_and_composite_mean_default_slot(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        for spelling, add in [(None, 1.0), ((), 2.0), ("CompositeImplicitAutograd", 3.0),
                              ("CompositeExplicitAutograd", 4.0), ("DEFAULT", 5.0)]:
            op.register_kernel(spelling, lambda x, add=add: x + add)
            assert op(tp.zeros(1)).tolist() == [add]
            assert set(op.kernels) == {"default"}

    def test_reregistering_same_device_replaces(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        op.register_kernel("cpu", lambda x: x + 1)
        op.register_kernel("cpu", lambda x: x + 2)
        assert op(tp.zeros(1)).tolist() == [2.0]
        assert len(op.kernels) == 1

    def test_undo_removes_a_resolved_lazy_stand_in(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def stand_in(x):
            raise AssertionError("replaced before any call")

        def real(x):
            return x + 7

        # private: the low-level push the plugin platform uses (no owner/priority in public)
        h = op._add_kernel("cpu", stand_in, "some-plugin", 0)
        h.replace(real)             # what the plugin manager does once it imported the kernel
        src = f"{real.__module__}:{real.__qualname__}"   # Kernel.source: "module:qualname"
        assert op.kernel_stack("cpu") == (Kernel(real, "some-plugin", 0, src),)
        assert op(tp.zeros(1)).tolist() == [7.0]
        h.destroy()                 # rolling the plugin back removes the real kernel too
        assert op.kernels == {}

    def test_signature_checked_at_registration(self, ns):
        op = lib.define(f"{ns}::f(Tensor x, *, SymInt n=1) -> Tensor")
        with pytest.raises(ValueError, match=rf"^register_kernel\('{ns}::f'\): the kernel .* cannot "
                                             r"take parameter 'n' of \(Tensor x, \*, SymInt n=1\)"):
            op.register_kernel("cpu", lambda x: x)
        with pytest.raises(ValueError, match=r"expected a callable kernel"):
            op.register_kernel("cpu", 42)
        assert op.kernels == {}
        op.register_kernel("cpu", lambda x, *, n=1: x * n)       # keyword-only taken by keyword
        op.register_kernel("cuda", lambda *args, **kwargs: None)  # varargs bind anything
        assert op(tp.ones(1), n=3).tolist() == [3.0]

    def test_bad_spelling(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with pytest.raises(ValueError, match=rf"^register_kernel\('{ns}::f'\): 'x y' is not a device"):
            op.register_kernel("x y", lambda x: x)


class TestRegisterFake:
    def test_fake_used_for_fake_and_meta_tensors(self, ns):
        @lib.custom_op(f"{ns}::f", mutates_args=())
        def f(x: tp.Tensor) -> tp.Tensor:
            return x.t().contiguous()

        calls = []

        @f.register_fake
        def _(x):
            calls.append(x.shape)
            return x.new_empty((x.shape[1], x.shape[0]))

        assert f.fake_impl is _
        with FakeTensorMode() as m:
            out = f(m.from_tensor(tp.ones(2, 3)))
        assert out.shape == (3, 2) and calls == [(2, 3)] and out._data is None
        meta = tp.empty(4, 5, device="meta")
        assert f(meta).shape == (5, 4) and f(meta).device == tp.device("meta")

    def test_direct_form_and_replacement(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def fake1(x):
            return x.new_empty(x.shape)

        def fake2(x):
            return x.new_empty((1,))

        assert op.register_fake(fake1) is fake1
        assert op.register_fake(fake2) is fake2
        assert op(tp.empty(3, device="meta")).shape == (1,)

    def test_fake_signature_checked(self, ns):
        op = lib.define(f"{ns}::f(Tensor x, SymInt n) -> Tensor")
        with pytest.raises(ValueError, match=rf"^register_fake\('{ns}::f'\): the fake kernel .* "
                                             r"cannot take parameter 'n'"):
            op.register_fake(lambda x: x)
        with pytest.raises(ValueError, match=r"expected a callable fake kernel"):
            op.register_fake(7)

    def test_without_fake_composite_kernel_runs_on_fake_tensors(self, ns):
        op = lib.custom_op(f"{ns}::f", lambda x: x * 2, mutates_args=())
        assert op(tp.empty(3, device="meta")).shape == (3,)

    def test_no_fake_and_no_composite_kernel_is_a_clear_error(self, ns):
        op = lib.custom_op(f"{ns}::f", lambda x: x * 2, mutates_args=(), device_types="cpu")
        with pytest.raises(DispatchError, match=rf"^custom_op\('{ns}::f'\): no fake kernel "
                                                r"registered.*register_fake"):
            op(tp.empty(3, device="meta"))


class TestRegisterAutograd:
    def _op(self, ns):
        @lib.custom_op(f"{ns}::sq", mutates_args=())
        def sq(x: tp.Tensor) -> tp.Tensor:
            return x * x
        return sq

    def test_without_formula_kernel_body_is_differentiated(self, ns):
        sq = self._op(ns)
        x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
        sq(x).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0, 6.0]

    def test_explicit_formula_is_used(self, ns):
        sq = self._op(ns)
        seen = {}

        def setup_context(ctx, inputs, output):
            seen["inputs"], seen["output"] = inputs, output
            ctx.save_for_backward(inputs[0])

        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x * 10

        assert sq.register_autograd(backward, setup_context=setup_context) is backward
        x = tp.tensor([1.0, 2.0], requires_grad=True)
        sq(x).sum().backward()
        assert x.grad.tolist() == [10.0, 20.0]
        assert len(seen["inputs"]) == 1 and seen["output"].tolist() == [1.0, 4.0]

    def test_errors(self, ns):
        sq = self._op(ns)
        api = rf"^register_autograd\('{ns}::sq'\): "
        with pytest.raises(ValueError, match=api + r"backward must be callable, got 3"):
            sq.register_autograd(3)
        with pytest.raises(ValueError, match=api + r"setup_context must be callable"):
            sq.register_autograd(lambda ctx, g: g, setup_context="nope")
        with pytest.raises(ValueError, match=api + r"setup_context .* must take \(ctx, inputs, output\)"):
            sq.register_autograd(lambda ctx, g: g, setup_context=lambda ctx: None)
        assert sq.backward_fn is None

    def test_mutating_op_is_refused(self, ns):
        @lib.custom_op(f"{ns}::bump", mutates_args=("x",))
        def bump(x: tp.Tensor) -> None:
            x.add_(1)

        for register in (lambda: bump.register_autograd(lambda ctx, g: g),
                         lambda: lib.register_autograd(f"{ns}::bump", lambda ctx, g: g)):
            with pytest.raises(ValueError, match=rf"^register_autograd\('{ns}::bump'\): an op that "
                                                 r"mutates its inputs \(x\) cannot have an autograd"):
                register()
        assert bump.backward_fn is None


class TestSetKernelEnabled:
    def _op(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        op.register_kernel("cpu", lambda x: x + 1)
        op.register_kernel(None, lambda x: x + 100)
        return op

    def test_disabled_concrete_kernel_falls_back_to_default_slot(self, ns):
        op = self._op(ns)
        x = tp.zeros(1)
        assert op(x).tolist() == [1.0]
        with op.set_kernel_enabled("cpu", False) as ctx:
            assert ctx is not None
            assert op(x).tolist() == [100.0]
            with pytest.raises(LookupError, match=r"disabled by set_kernel_enabled"):
                lib.get_kernel(op, "cpu")
            assert lib.get_kernel(op, "default")(x).tolist() == [100.0]
        assert op(x).tolist() == [1.0]
        assert lib.get_kernel(op, "CPU")(x).tolist() == [1.0]

    def test_nesting_and_restore(self, ns):
        op = self._op(ns)
        x = tp.zeros(1)
        with op.set_kernel_enabled("CPU", False):
            with op.set_kernel_enabled("cpu", True):
                assert op(x).tolist() == [1.0]
                with op.set_kernel_enabled("cpu", False):
                    assert op(x).tolist() == [100.0]
                assert op(x).tolist() == [1.0]
            assert op(x).tolist() == [100.0]
        assert op(x).tolist() == [1.0]
        assert op.is_kernel_enabled("cpu")

    def test_restored_on_exception_and_only_applied_when_entered(self, ns):
        op = self._op(ns)
        x = tp.zeros(1)
        with pytest.raises(RuntimeError, match="boom"):
            with op.set_kernel_enabled("cpu", False):
                raise RuntimeError("boom")
        assert op(x).tolist() == [1.0]
        cm = op.set_kernel_enabled("cpu", False)       # like torch's contextmanager: lazy
        assert op(x).tolist() == [1.0]
        with cm:
            assert op(x).tolist() == [100.0]
        with cm:                                       # reusable
            assert op(x).tolist() == [100.0]
        assert op(x).tolist() == [1.0]

    def test_disabled_without_default_is_a_dispatch_error_saying_so(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        op.register_kernel("cpu", lambda x: x)
        with op.set_kernel_enabled("cpu", False):
            with pytest.raises(DispatchError, match=r"no kernel for device 'cpu' \(a kernel is "
                                                    r"registered but disabled by set_kernel_enabled\)"):
                op(tp.zeros(1))

    def test_bad_spelling(self, ns):
        op = self._op(ns)
        with pytest.raises(ValueError, match=r"'c p u' is not a device type"):
            op.set_kernel_enabled("c p u", False)


# =============================================================================== get_kernel
class TestGetKernel:
    def test_exact_key_no_fallback(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def d(x):
            return x

        def c(x):
            return x

        op.register_kernel("default", d)
        assert lib.get_kernel(op, "default") is d
        assert lib.get_kernel(f"{ns}::f", "CompositeExplicitAutograd") is d
        assert lib.get_kernel(op, "CompositeImplicitAutograd") is d
        with pytest.raises(LookupError) as ei:
            lib.get_kernel(op, "cpu")
        assert str(ei.value) == (f"get_kernel('{ns}::f', 'cpu'): no kernel registered for 'cpu' "
                                 f"(a concrete key never falls back to 'default') (registered: default)")
        op.register_kernel("cpu", c)
        assert lib.get_kernel(op, "CPU") is c and lib.get_kernel(op, tp.device("cpu")) is c

    def test_nothing_registered(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with pytest.raises(LookupError, match=r"no kernel registered for 'default' \(registered: none\)"):
            lib.get_kernel(op, "default")

    def test_unknown_op_bad_op_bad_key(self, ns):
        with pytest.raises(LookupError, match=rf"^get_kernel\('{ns}::nope'\): no operator named "
                                              rf"'{ns}::nope' is registered"):
            lib.get_kernel(f"{ns}::nope", "cpu")
        with pytest.raises(TypeError, match=r"^get_kernel\(3\): expected a CustomOpDef or a "
                                            r"qualified name"):
            lib.get_kernel(3, "cpu")
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with pytest.raises(ValueError, match=r"'meta' is not a kernel device"):
            lib.get_kernel(op, "meta")


# =============================================================================== define / impl
class TestDefine:
    def test_full_schema_pasted_as_qualname(self, ns):
        op = lib.define(f"{ns}::f(Tensor x, SymInt n) -> Tensor")
        assert isinstance(op, CustomOpDef) and op.name == f"{ns}::f"
        assert str(op.schema) == f"{ns}::f(Tensor x, SymInt n) -> Tensor"
        assert op.kernels == {} and op.device_types == ()
        with pytest.raises(DispatchError, match=rf"^custom_op\('{ns}::f'\): no kernel for device "
                                                r"'cpu' \(registered: none\)"):
            op(tp.ones(1), 2)

    def test_separate_schema_and_mutation_from_alias_annotations(self, ns):
        op = lib.define(f"{ns}::f", "(Tensor(a!) x, Tensor y) -> ()")
        assert op.mutates_args == ("x",)
        op2 = lib.define(f"{ns}::g", f"{ns}::g(Tensor x) -> Tensor")   # named schema is fine
        assert str(op2.schema) == f"{ns}::g(Tensor x) -> Tensor"

    @pytest.mark.parametrize("second", ["(Tensor x) -> Tensor", "(Tensor x, Tensor y) -> Tensor"])
    def test_second_definition_is_refused_as_torch_does(self, ns, second):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        op.register_kernel("cpu", lambda x: x + 1)
        with pytest.raises(RuntimeError, match=rf"^define\('{ns}::f'\): operator '{ns}::f' is "
                                               r"already defined at .*test_library.py:\d+ \(by "
                                               r"define, module test_library\)"):
            lib.define(f"{ns}::f", second)
        assert _op(f"{ns}::f") is op and op(tp.zeros(1)).tolist() == [1.0]

    def test_another_module_conflicts(self, ns):
        lib.define(f"{ns}::f(Tensor x) -> Tensor")
        other = _other_module("other_definer", f"import tensorplay.library as lib\n"
                                               f"def go():\n    return lib.define('{ns}::f(Tensor y) -> Tensor')\n")
        with pytest.raises(ValueError, match=r"already defined at .*test_library.py:\d+ .*this "
                                             r"definition at /virtual/other_definer.py:3"):
            other.go()

    @pytest.mark.parametrize("args, exc, msg", [
        (("X::f",), ValueError, r"give a schema"),
        (("X::f(Tensor x) -> Tensor", "(Tensor x) -> Tensor"), ValueError, r"the schema is given twice"),
        (("X::f", "X::g(Tensor x) -> Tensor"), ValueError, r"names 'X::g', not 'X::f'"),
        (("X(Tensor x) -> Tensor",), ValueError, r"'X' is not a valid operator name"),
        (("(Tensor x) -> Tensor",), ValueError, r"the schema has no operator name"),
        (("X::f.default(Tensor x) -> Tensor",), ValueError, r"'default' is the overload of"),
        (("X::f.a.b", "(Tensor x) -> Tensor"), ValueError, r"not a valid operator name"),
        (("X::f", "(Tensor x) ->"), SchemaError, r"bad schema: FunctionSchema.parse"),
        (("X::f(Tensr x) -> Tensor",), SchemaError, r"bad schema: FunctionSchema.parse: expected a type"),
        ((3,), TypeError, r"qualname must be a str"),
        (("X::f", 3), TypeError, r"schema must be a str"),
    ])
    def test_errors(self, ns, args, exc, msg):
        args = tuple(a.replace("X", ns) if isinstance(a, str) else a for a in args)
        with pytest.raises(exc, match=rf"^define\({re.escape(repr(args[0]))}\): .*{msg.replace('X', ns)}"):
            lib.define(*args)
        assert _op(f"{ns}::f") is None

    def test_lib_records_and_checks(self, ns):
        with Library(ns, "FRAGMENT") as L:
            op = lib.define(f"{ns}::f(Tensor x) -> Tensor", lib=L)
            assert _op(f"{ns}::f") is not None and L._ops == [op.name]
            with pytest.raises(ValueError, match=r"operator namespace 'other' does not match"):
                lib.define("other::f(Tensor x) -> Tensor", lib=L)
        assert _op(f"{ns}::f") is None
        with pytest.raises(RuntimeError, match=r"was closed; create a new Library"):
            lib.define(f"{ns}::g(Tensor x) -> Tensor", lib=L)
        impl_lib = Library(ns, "IMPL")
        with pytest.raises(ValueError, match=rf"Library\('{ns}', 'IMPL'\) cannot define operators"):
            lib.define(f"{ns}::g(Tensor x) -> Tensor", lib=impl_lib)
        with pytest.raises(TypeError, match=r"lib must be a tensorplay.library.Library"):
            lib.define(f"{ns}::g(Tensor x) -> Tensor", lib="mylib")
        assert _op(f"{ns}::g") is None


class TestImpl:
    def test_direct_decorator_and_spellings(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def k(x):
            return x + 1

        assert lib.impl(f"{ns}::f", "CPU", k) is k

        @lib.impl(op, "CompositeExplicitAutograd")
        def d(x):
            return x + 2

        @lib.impl(f"{ns}::f", ["CUDA"])
        def c(x):
            return x

        assert op.kernels == {"cpu": k, "default": d, "cuda": c}
        assert op(tp.zeros(1)).tolist() == [1.0]

    def test_unknown_op_and_lib(self, ns):
        with pytest.raises(LookupError, match=rf"^impl\('{ns}::nope'\): no operator named"):
            lib.impl(f"{ns}::nope", "cpu", lambda x: x)
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        L = Library(ns, "IMPL")
        lib.impl(op, "cpu", lambda x: x + 5, lib=L)
        assert op(tp.zeros(1)).tolist() == [5.0]
        L._destroy()
        assert op.kernels == {}
        with pytest.raises(ValueError, match=r"does not match the namespace"):
            lib.impl("tp::add", "cpu", lambda *a: None, lib=Library(ns, "IMPL"))


class TestModuleLevelRegistration:
    def test_register_kernel_by_object_and_name_direct_and_decorator(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def k1(x):
            return x + 1

        assert lib.register_kernel(op, "cpu", k1) is k1
        assert op.kernels["cpu"] is k1

        @lib.register_kernel(f"{ns}::f", None)
        def k2(x):
            return x + 2

        assert op.kernels["default"] is k2
        with pytest.raises(LookupError, match=rf"^register_kernel\('{ns}::zz'\)"):
            lib.register_kernel(f"{ns}::zz", "cpu", k1)
        with pytest.raises(TypeError, match=r"^register_kernel\(None\): expected a CustomOpDef"):
            lib.register_kernel(None, "cpu", k1)

    def test_register_fake_by_object_and_name(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def fk(x):
            return x.new_empty((7,))

        assert lib.register_fake(f"{ns}::f", fk) is fk

        @lib.register_fake(op)
        def fk2(x):
            return x.new_empty((8,))

        assert op.fake_impl is fk2
        assert op(tp.empty(1, device="meta")).shape == (8,)

    def test_register_autograd_as_decorator(self, ns):
        @lib.custom_op(f"{ns}::sq", mutates_args=())
        def sq(x: tp.Tensor) -> tp.Tensor:
            return x * x

        @lib.register_autograd(f"{ns}::sq", setup_context=lambda ctx, inputs, output: None)
        def _(ctx, g):
            return g * 0 + 5

        assert sq.backward_fn is _
        x = tp.tensor([1.0], requires_grad=True)
        sq(x).sum().backward()
        assert x.grad.tolist() == [5.0]

        @sq.register_autograd
        def bw2(ctx, g):
            return g * 0 + 9

        x = tp.tensor([1.0], requires_grad=True)
        sq(x).sum().backward()
        assert x.grad.tolist() == [9.0]

    def test_register_autograd_by_name(self, ns):
        @lib.custom_op(f"{ns}::sq", mutates_args=())
        def sq(x: tp.Tensor) -> tp.Tensor:
            return x * x

        lib.register_autograd(f"{ns}::sq", lambda ctx, g: g * 0 + 7,
                              setup_context=lambda ctx, inputs, output: None)
        x = tp.tensor([1.0], requires_grad=True)
        sq(x).sum().backward()
        assert x.grad.tolist() == [7.0]

    def test_lib_undoes_module_level_registrations(self, ns):
        @lib.custom_op(f"{ns}::sq", mutates_args=())
        def sq(x: tp.Tensor) -> tp.Tensor:
            return x * x

        L = Library(ns, "IMPL")
        lib.register_kernel(sq, "cpu", lambda x: x, lib=L)
        lib.register_fake(sq, lambda x: x.new_empty(()), lib=L)
        lib.register_autograd(sq, lambda ctx, g: g, lib=L)
        assert "cpu" in sq.kernels and sq.fake_impl is not None and sq.backward_fn is not None
        L._destroy()
        assert "cpu" not in sq.kernels and sq.fake_impl is None and sq.backward_fn is None
        x = tp.tensor([3.0], requires_grad=True)
        sq(x).sum().backward()
        assert x.grad.tolist() == [6.0]


# =============================================================================== Library
class TestLibrary:
    def test_def_define_impl_and_destroy(self, ns):
        L = Library(ns, "DEF")
        # torch returns the name as the schema writes it (session 57)
        assert L.define("foo(Tensor x) -> Tensor") == "foo"
        assert L.define(f"{ns}::bar(Tensor x) -> Tensor") == f"{ns}::bar"
        L.impl("foo", lambda x: x * 5, "CPU")
        L.impl(f"{ns}::bar", lambda x: x - 1)                 # default key: device-agnostic
        L.impl("foo", lambda x: x.new_empty(x.shape), "Meta")  # Meta = fake kernel
        ops_ns = tp.ops.__getattr__(ns)
        assert ops_ns.foo(tp.ones(1)).tolist() == [5.0]
        assert ops_ns.bar(tp.ones(1)).tolist() == [0.0]
        assert ops_ns.foo.fake_impl is not None
        assert sorted(dir(ops_ns)) == ["bar", "foo"]
        L._destroy()
        assert _op(f"{ns}::foo") is None
        assert _op(f"{ns}::bar") is None
        with pytest.raises(AttributeError, match=rf"tensorplay.ops.{ns} has no operator 'foo'"):
            ops_ns.foo
        L._destroy()   # idempotent
        assert "closed" in repr(L)

    def test_one_def_per_namespace_until_closed(self, ns):
        L = Library(ns, "DEF")
        with pytest.raises(RuntimeError, match=rf"^Library\('{ns}', 'DEF'\): namespace '{ns}' already "
                                             r"has a DEF library \(created at .*test_library.py:\d+\); "
                                             r"use kind='FRAGMENT'"):
            Library(ns, "DEF")
        F = Library(ns, "FRAGMENT")
        F.define("g(Tensor x) -> Tensor")
        L.close()
        L2 = Library(ns, "DEF")
        L2._destroy()
        F._destroy()

    def test_impl_library_attaches_kernels_and_undoes_only_its_own(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        op.register_kernel("cpu", lambda x: x + 1)
        with Library(ns, "IMPL") as impl_lib:
            with pytest.raises(ValueError, match=rf"Library\('{ns}', 'IMPL'\) cannot define operators"):
                impl_lib.define("g(Tensor x) -> Tensor")
            impl_lib.impl("f", lambda x: x + 2, "cpu")        # replaces while open
            assert op(tp.zeros(1)).tolist() == [2.0]
        assert op(tp.zeros(1)).tolist() == [1.0]              # the earlier kernel is back
        assert _op(f"{ns}::f") is not None

    def test_library_dispatch_key_is_impl_default(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        L = Library(ns, "IMPL", "CPU")
        L.impl("f", lambda x: x + 3)
        assert set(op.kernels) == {"cpu"}
        L._destroy()
        M = Library(ns, "IMPL", "Meta")
        M.impl("f", lambda x: x.new_empty((4,)))
        assert op(tp.empty(1, device="meta")).shape == (4,)
        M._destroy()
        with pytest.raises(ValueError, match=r"'nope!' is not a device type"):
            Library(ns, "IMPL", "nope!")

    def test_impl_errors(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        L = Library(ns, "FRAGMENT")
        api = rf"^Library\('{ns}', 'FRAGMENT'\).impl: "
        with pytest.raises(ValueError, match=api + r"operator 'tp::add' is not in namespace"):
            L.impl("tp::add", lambda *a: None, "cpu")
        with pytest.raises(LookupError, match=api + rf"no operator named '{ns}::nope'"):
            L.impl("nope", lambda x: x, "cpu")
        with pytest.raises(ValueError, match=api + r"'AutogradXLA' is not an autograd key "
                                                   r"tensorplay knows; use 'Autograd'"):
            L.impl("f", lambda x: x, "AutogradXLA")
        with pytest.raises(ValueError, match=api + r"with_keyset=True is not supported"):
            L.impl("f", lambda x: x, "cpu", with_keyset=True)
        with pytest.raises(ValueError, match=api + r"fallthrough kernels are not supported"):
            L.impl("f", lib.fallthrough_kernel, "cpu")
        with pytest.raises(TypeError, match=api + r"op_name must be a str or a CustomOpDef"):
            L.impl(3, lambda x: x, "cpu")
        with pytest.raises(ValueError, match=r"cannot take parameter 'x'"):
            L.impl(op, lambda: None, "cpu")
        assert op.kernels == {}
        L._destroy()
        with pytest.raises(RuntimeError, match=api + r"Library\('.*', 'FRAGMENT'\) \[closed\] was closed"):
            L.impl("f", lambda x: x, "cpu")
        with pytest.raises(RuntimeError, match=r"was closed"):
            L.define("g(Tensor x) -> Tensor")

    def test_constructor_errors(self):
        with pytest.raises(ValueError, match=r"^Library\('x', 'BAD'\): kind must be 'DEF', "
                                             r"'FRAGMENT' or 'IMPL'"):
            Library("x", "BAD")
        with pytest.raises(ValueError, match=r"^Library\('x::y', 'DEF'\): the namespace must be a "
                                             r"Python identifier"):
            Library("x::y", "DEF")

    def test_destroy_undoes_in_reverse_order(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        L = Library(ns, "IMPL")
        L.impl("f", lambda x: x + 1, "cpu")
        L.impl("f", lambda x: x + 2, "cpu")
        assert op(tp.zeros(1)).tolist() == [2.0]
        L._destroy()
        assert op.kernels == {}

    def test_closing_libraries_in_any_order_restores_the_right_registration(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")

        def fake_a(x):
            return x.new_empty((1,))

        def fake_b(x):
            return x.new_empty((2,))

        def fake_c(x):
            return x.new_empty((3,))

        op.register_fake(fake_a)
        la, lb = Library(ns, "IMPL"), Library(ns, "IMPL")
        lib.register_fake(op, fake_b, lib=la)
        lib.register_fake(op, fake_c, lib=lb)
        lib.register_kernel(op, "cpu", lambda x: x + 1, lib=la)
        lib.register_kernel(op, "cpu", lambda x: x + 2, lib=lb)
        assert op.fake_impl is fake_c and op(tp.zeros(1)).tolist() == [2.0]
        la._destroy()                      # the older one goes first: the newest stays active
        assert op.fake_impl is fake_c and op(tp.zeros(1)).tolist() == [2.0]
        lb._destroy()                      # then the one registered before both comes back
        assert op.fake_impl is fake_a and op.kernels == {}
        assert op(tp.empty(5, device="meta")).shape == (1,)

    def test_builtin_formula_restored_after_library_override(self):
        add = _op("tp::add")
        before = add.backward_fn
        # the public APIs refuse built-ins (the 'tp' namespace is reserved: see
        # tests/test_reserved_namespace.py); the core's own stacking still restores the formula
        with pytest.raises(ValueError, match=r"'tp::add' is a built-in operator"):
            lib.register_autograd(add, lambda ctx, g: (g, g))
        h = add._set_autograd(lambda ctx, g: (g, g), None)   # private: the core's own push
        assert add.backward_fn is not before
        h.destroy()
        assert add.backward_fn is before

    def test_fallthrough_kernel_itself(self):
        with pytest.raises(NotImplementedError, match=r"^fallthrough_kernel: "):
            lib.fallthrough_kernel()


# =============================================================================== tensorplay.ops
class TestOpsNamespace:
    def test_attribute_access_dir_and_errors(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        space = getattr(tp.ops, ns)
        assert space.f is op and "f" in dir(space) and ns in dir(tp.ops)
        assert repr(space) == f"<tensorplay.ops.{ns}>"
        assert tp.ops.tp.add is _op("tp::add")
        with pytest.raises(AttributeError, match=rf"^tensorplay.ops.{ns} has no operator 'g'"):
            space.g
        with pytest.raises(AttributeError):
            space.__wrapped__


# =============================================================================== properties

_FRAGMENTS = ["(", ")", "Tensor", "Tensor(a!)", "x", "y", ",", "->", "*", "=", "None", "?", "[]",
              "SymInt", "float", "1", "'s'", "::", "ns", " ", "()"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=10).map("".join))
def test_property_custom_op_schema_strings_only_raise_value_errors(text):
    """Any schema text either defines the op or raises a ValueError (SchemaError for malformed
    text) starting with the API name -- and a refused one registers nothing."""
    name = "tlibprop::f"
    try:
        op = lib.custom_op(name, lambda *args, **kwargs: None, mutates_args="unknown", schema=text)
    except ValueError as e:
        assert str(e).startswith(f"custom_op({name!r}): ")
        assert _op(name) is None
    else:
        assert op.schema == type(op.schema).parse(str(op.schema))
        _cleanup("tlibprop")


# ======================================================= one definition per name (issue 11, 12)
class TestOneDefinition:
    """``define`` never silently replaces an op (torch raises ``RuntimeError``); only ``custom_op``
    re-run from the module of the ``custom_op`` that made it replaces it."""

    def test_second_def_library_raises_runtime_error_as_torch(self, ns):
        L = Library(ns, "DEF")
        try:
            with pytest.raises(RuntimeError, match=rf"namespace '{ns}' already has a DEF library"):
                Library(ns, "DEF")
            with pytest.raises(ValueError):   # the type earlier releases raised still catches it
                Library(ns, "DEF")
        finally:
            L.close()

    def test_fragment_cannot_redefine_an_op_of_a_def_library(self, ns):
        L = Library(ns, "DEF")
        F = Library(ns, "FRAGMENT")
        try:
            L.define("f(Tensor x) -> Tensor")
            L.impl("f", lambda x: x * 2, "cpu")
            with pytest.raises(RuntimeError, match=rf"operator '{ns}::f' is already defined at "
                                                   rf".*test_library.py:\d+ \(by Library\('{ns}', "
                                                   r"'DEF'\).*close that Library first"):
                F.define("f(Tensor x, Tensor y) -> Tensor")
            assert tp.ops.__getattr__(ns).f(tp.ones(1)).tolist() == [2.0]   # kernels kept
        finally:
            L.close()
            F.close()
        assert _op(f"{ns}::f") is None

    def test_def_library_defining_a_name_twice(self, ns):
        with Library(ns, "DEF") as L:
            L.define("f(Tensor x) -> Tensor")
            with pytest.raises(RuntimeError, match="already defined"):
                L.define("f(Tensor x) -> Tensor")
            with pytest.raises(RuntimeError, match="already defined"):
                L.define("f(Tensor x, *, int n=1) -> Tensor")

    def test_define_over_a_custom_op_is_refused(self, ns):
        op = lib.custom_op(f"{ns}::f", lambda x: x + 3, mutates_args=())
        with pytest.raises(RuntimeError, match=rf"already defined at .* \(by custom_op, module "
                                               rf"{__name__}\).*redefine it with custom_op"):
            lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with Library(ns, "FRAGMENT") as F:
            with pytest.raises(RuntimeError, match="already defined"):
                F.define("f(Tensor x) -> Tensor")
        assert _op(f"{ns}::f") is op and op(tp.zeros(1)).tolist() == [3.0]

    def test_custom_op_over_a_defined_op_is_refused(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match=r"\(by define, module"):
            lib.custom_op(f"{ns}::f", lambda x: x, mutates_args=())
        assert _op(f"{ns}::f") is op

    @pytest.mark.parametrize("order", ["def-first", "fragment-first"])
    def test_closing_libraries_in_any_order_never_resurrects_an_op(self, ns, order):
        L = Library(ns, "DEF")
        F = Library(ns, "FRAGMENT")
        L.define("f(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError):
            F.define("f(Tensor x, Tensor y) -> Tensor")
        F.define("g(Tensor x) -> Tensor")
        for lib_ in ((L, F) if order == "def-first" else (F, L)):
            lib_.close()
        assert _op(f"{ns}::f") is None and _op(f"{ns}::g") is None
        with pytest.raises(AttributeError):
            tp.ops.__getattr__(ns).f

    def test_replaced_custom_op_undone_out_of_order_does_not_come_back(self, ns):
        op1 = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=())
        op2 = lib.custom_op(f"{ns}::f", lambda x: x + 2, mutates_args=())
        _registry.unregister_op(op1)          # the older definition goes first (a rollback)
        assert _op(f"{ns}::f") is op2
        _registry.unregister_op(op2)
        assert _op(f"{ns}::f") is None


# =========================================================== torch habits (issue 12)
@pytest.mark.parametrize("make, expected", [
    (dict, ()), (set, ()), (frozenset, ()), (list, ()), (lambda: {"x"}, ("x",)),
    (lambda: {"x": None}, ("x",)), (lambda: (n for n in ["x"]), ("x",)),
    (lambda: iter(["x"]), ("x",)), (lambda: dict.fromkeys(["x"]).keys(), ("x",)),
], ids=["{}", "set()", "frozenset()", "[]", "{'x'}", "{'x': None}", "genexpr", "iter", "keys"])
@pytest.mark.parametrize("with_schema", [False, True])
def test_mutates_args_takes_any_iterable_of_names_as_torch(ns, make, expected, with_schema):
    mutates = make()
    schema = ("(Tensor(a!) x) -> Tensor" if expected else "(Tensor x) -> Tensor") \
        if with_schema else None
    op = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=mutates, schema=schema)
    assert op.mutates_args == expected
    assert op(tp.zeros(1)).tolist() == [1.0]


def test_kernel_stack_is_a_typed_read_only_view(ns):
    op = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=(), device_types="cpu")
    first = op.kernel_stack("cpu")
    assert len(first) == 1 and first[0].owner is None and first[0].priority == 0
    with Library(ns, "IMPL") as L:
        def k2(x):
            return x + 2
        L.impl("f", k2, "cpu")
        stack = op.kernel_stack("cpu")
        assert [e.fn for e in stack][-1] is k2 and stack[0] == first[0]
        fn, owner, prio, source = stack[-1]    # unpacks like the plain tuple it is
        assert (fn, owner, prio) == (k2, None, 0)
        assert source == f"{__name__}:test_kernel_stack_is_a_typed_read_only_view.<locals>.k2"
    assert op.kernel_stack("cpu") == first and op.kernel_stack("cuda") == ()


def test_a_misspelt_namespace_names_the_known_ones_and_the_closest():
    import tensorplay as tp
    with pytest.raises(AttributeError) as e:
        tp.ops.exampel.gelu
    msg = str(e.value)
    assert "no operator is registered in namespace 'exampel'" in msg, msg
    assert "example" in msg.split("known:")[1] and "tensorplay.ops.example?" in msg, msg
