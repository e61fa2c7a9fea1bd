"""Dispatch rules (SPEC §3, ARCHITECTURE "_dispatch.py"): device from every tensor argument, mixed
devices, ops without tensors, bad argument types, the generated call path.

A second real device is simulated with the shipped test backend
(``tensorplay.testing.backend.MockBackend``): device types ``sim`` (two indices) and ``sim2``,
NumPy-backed, registered for this module, with kernels registered for ``"sim"``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import pickle
import re
import traceback
import types
import typing
import warnings

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay import _dispatch   # resolve_key's private unit tests (see below)
from tensorplay import Tensor
from tensorplay.errors import DispatchError
from tensorplay.fake import FakeTensorMode, make_fake
from tensorplay.testing import drop_ops

_count = itertools.count()


@pytest.fixture
def ns():
    name = f"tdsp{next(_count)}"
    yield name
    drop_ops(name)


@pytest.fixture(scope="module", autouse=True)
def sim_devices():
    """The simulated devices ``sim`` (``sim:0``, ``sim:1``) and ``sim2`` for this module."""
    pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend
    with MockBackend("sim", device_count=2), MockBackend("sim2"):
        yield


def on(t: Tensor, device: str) -> Tensor:
    """``t`` copied to ``device`` (a simulated second device type)."""
    return t.to(device)


def _tagged(tag):
    """A kernel that returns which kernel ran (the 1-element tensor [tag])."""
    def kernel(*args, **kwargs):
        return tp.tensor([float(tag)])
    return kernel


@pytest.fixture
def op4(ns):
    """``(Tensor x, Tensor[] ys, Tensor? z=None, *, Tensor? w=None) -> Tensor`` with cpu=1, sim=2,
    default=3 kernels."""
    op = lib.define(f"{ns}::f(Tensor x, Tensor[] ys, Tensor? z=None, *, Tensor? w=None) -> Tensor")
    op.register_kernel("cpu", _tagged(1))
    op.register_kernel("sim", _tagged(2))
    op.register_kernel(None, _tagged(3))
    return op


def which(out) -> int:
    return int(out.tolist()[0])


# ============================================================== device from every tensor argument
class TestDeviceFromArguments:
    def test_first_positional_tensor(self, op4):
        assert which(op4(tp.ones(2), [])) == 1
        assert which(op4(on(tp.ones(2), "sim"), [])) == 2

    def test_keyword_tensor(self, op4):
        assert which(op4(x=on(tp.ones(2), "sim"), ys=[])) == 2

    @pytest.mark.parametrize("where", ["ys", "z", "w"])
    def test_every_other_tensor_argument_is_checked(self, op4, where):
        a, b = tp.ones(2), on(tp.ones(2), "sim")
        kw = {"x": a, "ys": [a, a], "z": a, "w": a}
        kw[where] = [a, b] if where == "ys" else b
        with pytest.raises(DispatchError) as ei:
            op4(**kw)
        msg = str(ei.value)
        assert msg.startswith(f"custom_op('{op4.name}'): expected all tensors on one device, "
                              f"found tensors on cpu, sim")
        assert "Move them with .to(device)" in msg

    def test_all_on_one_device_agree(self, op4):
        s = on(tp.ones(2), "sim")
        assert which(op4(s, [s, s], s, w=s)) == 2
        assert which(op4(s, [s, None] if False else [s], None, w=None)) == 2

    def test_device_without_concrete_kernel_uses_default_slot(self, op4):
        s = on(tp.ones(2), "sim2")
        assert which(op4(s, [])) == 3

    def test_zero_dim_cpu_tensor_joins_another_device(self, op4):
        s = on(tp.ones(2), "sim")
        assert which(op4(s, [tp.tensor(1.0)])) == 2
        assert which(op4(tp.tensor(1.0), [s])) == 2     # the device tensor decides

    def test_a_cpu_scalar_seen_first_does_not_hide_a_real_cpu_tensor(self, op4):
        s = on(tp.ones(2), "sim")
        with pytest.raises(DispatchError, match=r"found tensors on cpu, sim"):
            op4(tp.tensor(1.0), [tp.ones(2), s])
        with pytest.raises(DispatchError, match=r"found tensors on cpu, sim"):
            op4(s, [tp.tensor(1.0), tp.ones(2)])

    def test_different_indices_of_one_type_are_mixed(self, op4):
        with pytest.raises(DispatchError, match=r"found tensors on sim:0, sim:1"):
            op4(on(tp.ones(2), "sim:0"), [on(tp.ones(2), "sim:1")])

    def test_meta_tensor_with_real_tensor_is_mixed(self, op4):
        m = tp.empty(2, device="meta")
        with pytest.raises(DispatchError, match=r"found tensors on cpu, meta"):
            op4(tp.ones(2), [m])

    def test_fake_tensors_dispatch_to_fake_kernel(self, op4):
        seen = []

        @op4.register_fake
        def _(x, ys, z=None, *, w=None):
            seen.append((x.device, len(ys)))
            return x.new_empty(x.shape)

        with FakeTensorMode() as mode:
            fx = mode.from_tensor(tp.ones(2))
            out = op4(fx, [fx], w=fx)
        assert out._data is None and out.shape == (2,) and seen == [(tp.device("cpu"), 1)]
        m = make_fake((3,), tp.float32, "meta")
        assert op4(m, [m]).device == tp.device("meta")

    def test_autograd_inputs_redispatch_to_device_kernel(self, ns):
        @lib.custom_op(f"{ns}::sq", mutates_args=())
        def sq(x: tp.Tensor) -> tp.Tensor:
            return x * x

        seen = []

        @sq.register_kernel("cpu")
        def _(x):
            seen.append("cpu")
            return x * x

        x = tp.tensor([3.0], requires_grad=True)
        y = sq(x)
        assert seen == ["cpu"] and y.requires_grad
        y.sum().backward()
        assert x.grad.tolist() == [6.0]


# ============================================================== resolve_key (the slow path)
# Unit tests of _dispatch's own slow-path rule (kept private on purpose: the stubs reach key
# combinations, such as fake tensors standing for an absent cuda device, that no public call on
# this machine can build); the same rules through public calls are in TestDeviceFromArguments.
class _Stub:
    """Just what resolve_key reads from a tensor."""

    def __init__(self, dev: str, ndim: int = 1):
        self.device = tp.device(dev)
        self.dispatch_key = self.backend_key = self.device.type
        self.ndim = ndim


class TestResolveKey:
    @pytest.fixture
    def op(self, ns):
        return lib.define(f"{ns}::f(Tensor x, Tensor y) -> Tensor")

    def test_mixed_devices_error_names_both(self, op):
        with pytest.raises(DispatchError, match=rf"^custom_op\('{op.name}'\): expected all tensors "
                                                r"on one device, found tensors on cpu, cuda"):
            _dispatch.resolve_key(op, [_Stub("cpu"), _Stub("cuda")])
        with pytest.raises(DispatchError, match=r"found tensors on cuda:0, cuda:1"):
            _dispatch.resolve_key(op, [_Stub("cuda:0"), _Stub("cuda:1")])

    def test_fake_tensors_count_with_the_device_they_stand_for(self, op):
        fake_cuda = _Stub("cuda")
        fake_cuda.dispatch_key = fake_cuda.backend_key = "meta"
        with pytest.raises(DispatchError, match=r"found tensors on cpu, cuda"):
            _dispatch.resolve_key(op, [_Stub("cpu"), fake_cuda])
        fake_cpu = _Stub("cpu")
        fake_cpu.dispatch_key = fake_cpu.backend_key = "meta"
        assert _dispatch.resolve_key(op, [_Stub("cpu"), fake_cpu]) == "meta"
        assert _dispatch.resolve_key(op, [_Stub("cpu", 0), fake_cuda]) == "meta"

    def test_cpu_scalar_joins(self, op):
        assert _dispatch.resolve_key(op, [_Stub("cpu", 0), _Stub("cuda")]) == "cuda"
        assert _dispatch.resolve_key(op, [_Stub("cuda"), _Stub("cpu", 0)]) == "cuda"

    def test_priorities(self, op):
        a, b = _Stub("cpu"), _Stub("cpu")
        b.dispatch_key = "autograd"
        assert _dispatch.resolve_key(op, [a, b]) == "autograd"
        b.dispatch_key = "capture"
        assert _dispatch.resolve_key(op, [a, b]) == "capture"

    def test_no_tensors_uses_device_or_mode(self, op):
        assert _dispatch.resolve_key(op, [], None) == "default"
        assert _dispatch.resolve_key(op, [], tp.device("cuda", 1)) == "cuda"
        assert _dispatch.resolve_key(op, [], "cpu") == "cpu"
        with FakeTensorMode():
            assert _dispatch.resolve_key(op, [], "cpu") == "meta"


# ============================================================== ops without tensor arguments
class TestNoTensorOps:
    def test_dispatch_on_device_parameter(self, ns):
        @lib.custom_op(f"{ns}::fac", mutates_args=(), device_types="cpu")
        def fac(n: int, device: tp.device = "cpu") -> tp.Tensor:
            return tp.full((n,), 1.0)

        fac.register_kernel("sim", lambda n, device="cpu": tp.full((n,), 2.0))
        assert fac(2).tolist() == [1.0, 1.0]                       # the default value
        assert fac(1, tp.device("cpu")).tolist() == [1.0]
        assert fac(1, "sim").tolist() == [2.0]
        assert fac(1, device=tp.device("sim", 3)).tolist() == [2.0]
        with pytest.raises(DispatchError, match=rf"^custom_op\('{ns}::fac'\): no kernel for device "
                                                r"'cuda' \(registered: cpu, sim\)"):
            fac(1, "cuda")

    def test_parameter_named_device_of_another_type(self, ns):
        @lib.custom_op(f"{ns}::fac", mutates_args=(), device_types="cpu")
        def fac(n: int, device: str = "cpu") -> tp.Tensor:     # SPEC: "a parameter named device"
            return tp.zeros(n)

        assert fac(2).shape == (2,)
        with pytest.raises(DispatchError, match=r"no kernel for device 'cuda' \(registered: cpu\)"):
            fac(1, "cuda:1")

    def test_device_parameter_of_wrong_type_is_type_error_naming_it(self, ns):
        @lib.custom_op(f"{ns}::fac", mutates_args=(), device_types="cpu")
        def fac(n: int, dev: tp.device) -> tp.Tensor:
            return tp.zeros(n)

        for bad in (3.5, object(), [1]):
            with pytest.raises(TypeError, match=rf"^custom_op\('{ns}::fac'\): argument 'dev' must "
                                                r"be a device"):
                fac(1, bad)

    def test_fake_mode_routes_factories_to_fake_kernel(self, ns):
        @lib.custom_op(f"{ns}::fac", mutates_args=(), device_types="cpu")
        def fac(n: int, device: tp.device) -> tp.Tensor:
            return tp.zeros(n)

        @fac.register_fake
        def _(n, device):
            return tp.empty(n)

        with FakeTensorMode():
            out = fac(4, "cpu")
        assert out._data is None and out.shape == (4,)

    def test_no_device_parameter_uses_default_slot(self, ns):
        op = lib.custom_op(f"{ns}::f", lambda n: tp.zeros(n), mutates_args=(),
                           schema="(SymInt n) -> Tensor")
        assert op(3).shape == (3,)
        op2 = lib.define(f"{ns}::g(SymInt n) -> Tensor")
        with pytest.raises(DispatchError, match=r"no device-agnostic kernel registered.*cannot "
                                                r"pick a device"):
            op2(3)

    def test_all_optional_tensors_none_dispatch_on_default(self, ns):
        op = lib.define(f"{ns}::f(Tensor? x=None) -> Tensor")
        op.register_kernel(None, lambda x=None: tp.zeros(1) if x is None else x)
        assert op().tolist() == [0.0]
        assert op(tp.ones(1)).tolist() == [1.0]


# ============================================================== bad argument types
class TestBadArguments:
    @pytest.mark.parametrize("kwargs, name, typ", [
        (dict(x=3, ys=[]), "x", "Tensor"),
        (dict(x="a", ys=[]), "x", "Tensor"),
        (dict(x=None, ys=[]), "x", "Tensor"),
        (dict(ys=3), "ys", r"Tensor\[\]"),
        (dict(ys=[1.0]), "ys", r"Tensor\[\]"),
        (dict(ys=[None]), "ys", r"Tensor\[\]"),
        (dict(ys=[], z="s"), "z", r"Tensor\?"),
        (dict(ys=[], w=3), "w", r"Tensor\?"),
    ])
    def test_type_error_names_the_argument(self, op4, kwargs, name, typ):
        kwargs.setdefault("x", tp.ones(1))
        with pytest.raises(TypeError, match=rf"^custom_op\('{op4.name}'\): argument '{name}' must "
                                            rf"be {typ}, got "):
            op4(**kwargs)

    def test_missing_and_unknown_arguments_name_the_op(self, op4):
        with pytest.raises(TypeError, match=rf"^{op4.name}\(\) missing 1 required positional "
                                            r"argument: 'ys'"):
            op4(tp.ones(1))
        with pytest.raises(TypeError, match=rf"^{op4.name}\(\) got an unexpected keyword argument 'q'"):
            op4(tp.ones(1), [], q=1)
        # arity counts the caller's arguments (x, ys, z), not a hidden self
        with pytest.raises(TypeError, match=rf"{op4.name}\(\) takes from 2 to 3 positional "
                                            r"arguments but 4 were given"):
            op4(tp.ones(1), [], None, None)          # w is keyword-only

    @pytest.mark.parametrize("bad", [lambda x: [x, 3], lambda x: [3, x], lambda x: [x, x, "a"],
                                     lambda x: [x, None]])
    def test_every_element_of_a_tensor_list_is_checked(self, ns, bad):
        """A Tensor[] argument (alone, or after another tensor) refuses a non-tensor element
        wherever it is, naming the argument, with no chained AttributeError in the report."""
        x = tp.ones(1)
        only = lib.define(f"{ns}::only(Tensor[] xs) -> Tensor")
        only.register_kernel(None, lambda xs: xs[0])
        after = lib.define(f"{ns}::after(Tensor a, Tensor[] xs) -> Tensor")
        after.register_kernel(None, lambda a, xs: a)
        for call in (lambda: only(bad(x)), lambda: after(x, bad(x))):
            with pytest.raises(TypeError, match=r"argument 'xs' must be Tensor\[\]") as ei:
                call()
            e = ei.value
            assert e.__context__ is None or e.__suppress_context__, repr(e.__context__)
        assert only([x, x]).tolist() == [1.0]

    def test_a_non_tensor_argument_error_is_not_chained(self, ns):
        one = lib.define(f"{ns}::one(Tensor x) -> Tensor")
        one.register_kernel(None, lambda x: x)
        with pytest.raises(TypeError, match="argument 'x' must be Tensor") as ei:
            one(3)
        assert ei.value.__suppress_context__ or ei.value.__context__ is None
        assert "During handling" not in "".join(
            traceback.format_exception(type(ei.value), ei.value, ei.value.__traceback__))

    def test_list_of_optional_tensors_accepts_none(self, ns):
        op = lib.define(f"{ns}::f(Tensor x, Tensor?[] ys) -> Tensor")
        op.register_kernel(None, lambda x, ys: tp.tensor([float(len(ys))]))
        assert op(tp.ones(1), [None, tp.ones(1)]).tolist() == [2.0]
        with pytest.raises(TypeError, match=r"argument 'ys' must be Tensor\?\[\]"):
            op(tp.ones(1), [3])


# ============================================================== the generated call path
class TestGeneratedCall:
    def test_call_has_the_op_signature(self, op4):
        sig = inspect.signature(op4)
        assert list(sig.parameters) == ["x", "ys", "z", "w"]
        assert list(inspect.signature(op4.func).parameters) == ["x", "ys", "z", "w"]
        assert sig.parameters["w"].kind is inspect.Parameter.KEYWORD_ONLY
        assert sig.parameters["z"].default is None

    def test_fast_path_is_a_plain_lookup(self, op4):
        src = type(op4)._call_source
        # then the kernel's result gets one class test against the schema's return (-> Tensor)
        assert re.search(r"\n    try:\n        (__f) = __table\[_*k\]\n    except KeyError:\n"
                         r"        \1 = None\n    if \1 is None:\n        \1 = __miss\(_*k\)\n"
                         r"    (__r) = \1\(x, ys, z, w=w\)\n"
                         r"    if \2.__class__ is not __T: __badret\(__op, _*k, \2\)\n"
                         r"    return \2$", src), src
        for slow in ("lock", "hook", "import", "isinstance", "inspect"):
            assert slow not in src

    def test_an_op_is_called_like_a_function(self, op4):
        """The op is a functools.partial of its generated function (called through partial's C
        call path, no per-call method lookup): ``op(*a) == op.func(*a)``, no bound arguments."""
        assert isinstance(op4, functools.partial) and "__call__" not in type(op4).__dict__
        assert op4.args == () and op4.keywords == {}
        assert op4.func.__code__.co_filename.startswith("<tensorplay dispatch")

    def test_an_op_is_not_a_method_and_copies_as_itself(self, ns):
        op = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=(),
                           schema="(Tensor x) -> Tensor")

        class Holder:
            fn = op
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # partial warns here on Python 3.13
            assert Holder().fn is op and Holder.fn is op
            assert Holder().fn(tp.ones(1)).tolist() == [2.0]
        assert copy.copy(op) is op and copy.deepcopy([op])[0] is op
        assert pickle.loads(pickle.dumps(op)) is op
        assert copy.deepcopy(tp.ops.tp.add) is tp.ops.tp.add

    def test_a_key_missing_from_the_table_is_resolved_once_with_a_clean_error(self, ns):
        """A plain-dict table: a device key not in it goes to ``op.entry`` (device-agnostic
        fallback, then remembered in the table), and a missing kernel raises DispatchError
        without a chained KeyError from the lookup."""
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with pytest.raises(DispatchError, match="no device-agnostic kernel|no kernel") as ei:
            op(tp.ones(1))
        assert ei.value.__context__ is None and ei.value.__cause__ is None
        op.register_kernel(None, lambda x: x + 1)
        op.table.pop("cpu", None)
        assert op(tp.ones(1)).tolist() == [2.0]
        assert op.table["cpu"] is op.entry("cpu") is op.entry("default")
        with pytest.raises(DispatchError):
            lib.define(f"{ns}::g(Tensor x) -> Tensor").entry("cpu")

    def test_a_partial_of_an_op_keeps_the_op(self, ns):
        """functools.partial flattens a partial without an instance dict into its function: an
        op must stay the op inside one (it follows a redefinition, pickles by name)."""
        src = "import tensorplay as tp\ndef f(x):\n    return x + {}\n"
        mod = types.ModuleType(f"{ns}_mod")
        exec(compile(src.format(1), f"/virtual/{ns}_mod.py", "exec"), mod.__dict__)
        op = lib.custom_op(f"{ns}::f", mod.f, mutates_args=(), schema="(Tensor x) -> Tensor")
        p = functools.partial(op)
        assert p.func is op and functools.partial(tp.add).func is tp.add
        exec(compile(src.format(100), f"/virtual/{ns}_mod.py", "exec"), mod.__dict__)
        new = lib.custom_op(f"{ns}::f", mod.f, mutates_args=(), schema="(Tensor x) -> Tensor")
        assert p(tp.ones(1)).tolist() == [101.0] == functools.partial(op)(tp.ones(1)).tolist()
        assert tp.compile(lambda a: p(a))(tp.ones(1)).tolist() == [101.0]
        # the old handle describes what it runs
        assert inspect.signature(op) == inspect.signature(new)
        q = pickle.loads(pickle.dumps(functools.partial(tp.add, other=2.0)))
        assert q.func is tp.add and q(tp.ones(1)).tolist() == [3.0]

    def test_an_op_is_no_method_descriptor_and_has_no_state_to_restore(self, op4):
        import pydoc
        assert not inspect.ismethoddescriptor(op4) and not inspect.isroutine(op4)
        assert "CustomOpDef" in pydoc.render_doc(op4)       # the class page, not just the repr
        with pytest.raises(TypeError, match="not restored from state"):
            op4.__setstate__((print, (), None, None))
        with pytest.raises(TypeError):
            vars(op4)
        from tensorplay._registry import CustomOpDef
        assert typing.get_args(CustomOpDef[[int], int]) == ((int,), int)

    def test_pickling_checks_the_name_is_still_that_op(self, ns):
        with lib.Library(ns, "DEF") as L:
            L.define("g(Tensor x) -> Tensor")
            g = getattr(getattr(tp.ops, ns), "g")
            blob = pickle.dumps(g)
            assert pickle.loads(blob) is g
        with pytest.raises(pickle.PicklingError, match="no longer registered"):
            pickle.dumps(g)
        with lib.Library(ns, "DEF") as L:
            L.define("g(Tensor x, Tensor y) -> Tensor")
            with pytest.raises(pickle.UnpicklingError, match=r"g\(Tensor x\) -> Tensor"):
                pickle.loads(blob)

    def test_table_is_the_same_dict_forever(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        table = op.table
        h = lib.Library(ns, "IMPL")
        h.impl("f", lambda x: x, "cpu")
        op.register_fake(lambda x: x)
        with op.set_kernel_enabled("cpu", False):
            assert op.table is table
        h._destroy()
        assert op.table is table and "cpu" not in table and "meta" in table

    def test_keyword_parameter_names_are_renamed_safely(self, ns):
        op = lib.define(f"{ns}::f(Tensor self, SymInt lambda_=1) -> Tensor")
        op.register_kernel(None, lambda self, lambda_=1: self * lambda_)
        assert op(tp.ones(1), 3).tolist() == [3.0]

    def test_keyword_only_arguments_named_like_python_keywords(self, ns):
        op = lib.define(f"{ns}::f(Tensor x, SymInt in=2, *, SymInt from=1, SymInt __x=2) -> Tensor")
        seen = []

        def kernel(x, in_, **kw):          # kernels get keyword-only args by their schema name
            seen.append(sorted(kw))
            return x * in_ * kw["from"] * kw["__x"]

        op.register_kernel(None, kernel)
        op.register_fake(lambda x, in_, **kw: x.new_empty(x.shape))
        assert op(tp.ones(1), from_=3).tolist() == [12.0]
        assert seen == [["__x", "from"]]
        x = tp.ones(1, requires_grad=True)
        op(x, 1, from_=5, __x_=1).sum().backward()          # through the autograd entry
        assert x.grad.tolist() == [5.0]
        assert op(tp.empty(2, device="meta"), from_=2).shape == (2,)

    @pytest.mark.parametrize("names", [("k", "t"), ("__k", "__t"), ("__op", "__table"),
                                       ("__slow", "__bad"), ("__e", "__d0")])
    def test_parameter_names_never_clash_with_generated_locals(self, ns, names):
        a, b = names
        op = lib.define(f"{ns}::f(Tensor {a}, Tensor[] {b}, SymInt n=2) -> Tensor")
        op.register_kernel("cpu", lambda *args: args[0] * args[2] + len(args[1]))
        assert op(tp.ones(1), [tp.ones(1)]).tolist() == [3.0]
        with pytest.raises(DispatchError, match=r"found tensors on cpu, sim"):
            op(tp.ones(1), [on(tp.ones(1), "sim")])

    def test_mutated_arguments_bump_versions(self, ns):
        @lib.custom_op(f"{ns}::fill", mutates_args=("out", "outs"))
        def fill(x: tp.Tensor, out: tp.Tensor, outs: list[tp.Tensor]) -> None:
            out.copy_(x)

        x, o, a, b = tp.ones(2), tp.zeros(2), tp.zeros(1), tp.zeros(1)
        vx, vo, va = x._version, o._version, a._version
        fill(x, o, [a, b])
        assert o._version > vo and a._version > va and b._version > 0
        assert x._version == vx             # inputs not declared mutated are not touched
        assert o.tolist() == [1.0, 1.0]

    def test_redefinition_gets_its_own_call(self, ns):
        op1 = lib.custom_op(f"{ns}::f", lambda x: x + 1, mutates_args=())
        op2 = lib.custom_op(f"{ns}::f", lambda x, y: x + y, mutates_args=(),
                            schema="(Tensor x, Tensor y) -> Tensor")
        assert type(op1) is not type(op2)
        assert op2(tp.ones(1), tp.ones(1)).tolist() == [2.0]
        assert isinstance(op2.func, types.FunctionType) and op2.func is not op1.func
        # the old handle runs the current definition (its schema), never the dead one
        assert op1(tp.ones(1), tp.ones(1)).tolist() == [2.0]


# ============================================================== a real second device (GPU machines)
@pytest.fixture
def cuda_ok():
    try:
        tp.backends.get("cuda")
    except Exception as e:  # noqa: BLE001 - any reason the device is unusable: skip with it
        pytest.skip(f"no usable CUDA device: {type(e).__name__}: {e}")


@pytest.mark.cuda
def test_real_cuda_dispatch_rules(ns, cuda_ok):
    op = lib.define(f"{ns}::f(Tensor x, Tensor? y=None) -> Tensor")
    op.register_kernel("cpu", lambda x, y=None: tp.tensor([1.0]))
    op.register_kernel("cuda", lambda x, y=None: tp.tensor([2.0]))
    c = tp.ones(2, device="cuda")
    assert which(op(c)) == 2 and which(op(tp.ones(2))) == 1
    assert which(op(c, tp.tensor(3.0))) == 2                 # cpu scalar joins cuda
    with pytest.raises(DispatchError, match=r"found tensors on cpu, cuda:0"):
        op(c, tp.ones(2))
    with pytest.raises(DispatchError, match=r"found tensors on cpu, cuda:0"):
        op(tp.ones(2), c)

    @lib.custom_op(f"{ns}::fac", mutates_args=(), device_types=["cpu", "cuda"])
    def fac(n: int, device: tp.device) -> tp.Tensor:
        return tp.zeros(n, device=device)

    assert fac(2, "cuda").device.type == "cuda" and fac(2, "cpu").device.type == "cpu"

    @lib.custom_op(f"{ns}::sq", mutates_args=())
    def sq(x: tp.Tensor) -> tp.Tensor:
        return x * x

    x = tp.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    sq(x).sum().backward()
    assert x.grad.device.type == "cuda" and x.grad.cpu().tolist() == [2.0, 4.0]


# ============================================================== non-tensor argument types
class TestArgumentTypes:
    """Non-tensor arguments are checked at call time with torch's message."""

    @pytest.fixture
    def typed(self, ns):
        @lib.custom_op(f"{ns}::typed", mutates_args=())
        def typed(x: tp.Tensor, n: int, s: float, b: bool, sizes: list[int],
                  name: str = "a", o: int | None = None, ws: list[float] | None = None) -> tp.Tensor:
            return x * 1.0
        return typed

    def test_accepted_values(self, typed):
        x = tp.ones(1)
        for call in [lambda: typed(x, 1, 2, True, [1, 2]),            # float takes an int
                     lambda: typed(x, 1, 2.5, False, (3,), "b", 4, [1, 2.5]),
                     lambda: typed(x, 1, 2.0, True, [], o=None, ws=None)]:
            assert call().tolist() == [1.0]

    def test_int_takes_a_bool(self, ns):
        # torch 2.13's custom ops take True/False (and numpy bools) for int, int[] and int?
        # (a bool is an int: the dispatcher converts it); floats stay refused
        np = pytest.importorskip("numpy")

        @lib.custom_op(f"{ns}::scale", mutates_args=())
        def scale(x: tp.Tensor, n: int, sizes: list[int], o: int | None = None) -> tp.Tensor:
            return x * n * sum(sizes) * (1 if o is None else o)

        assert scale(tp.ones(1), True, [True, 2]).tolist() == [3.0]
        assert scale(tp.ones(1), np.bool_(True), [1], o=False).tolist() == [0.0]
        assert scale(tp.ones(1, requires_grad=True), True, [2]).tolist() == [2.0]
        with pytest.raises(TypeError, match="type 'int' for argument 'n' but instead found "
                                            "type 'float'"):
            scale(tp.ones(1), 1.0, [1])

    @pytest.mark.parametrize("args, kwargs, expected, arg, found", [
        ((1.5, 2.0, True, []), {}, "int", "n", "float"),
        ((1, "2", True, []), {}, "float", "s", "str"),
        ((1, 2.0, 1, []), {}, "bool", "b", "int"),
        ((1, 2.0, True, 3), {}, "int[]", "sizes", "int"),
        ((1, 2.0, True, [1, 2.5]), {}, "int[]", "sizes", "list"),
        ((1, 2.0, True, []), {"name": 3}, "str", "name", "int"),
        ((1, 2.0, True, []), {"o": 1.0}, "int?", "o", "float"),
        ((1, 2.0, True, []), {"ws": ["a"]}, "float[]?", "ws", "list"),
        ((None, 2.0, True, []), {}, "int", "n", "NoneType"),
    ])
    def test_refused_with_torchs_message(self, typed, args, kwargs, expected, arg, found):
        msg = (f"Expected a value of type '{expected}' for argument '{arg}' but instead found "
               f"type '{found}'.")
        with pytest.raises(TypeError, match=re.escape(msg)):
            typed(tp.ones(1), *args, **kwargs)

    def test_numpy_scalars_fit_their_kind(self, typed):
        np = pytest.importorskip("numpy")
        assert typed(tp.ones(1), np.int64(1), np.float32(2), np.bool_(True),
                     [np.int32(1)]).tolist() == [1.0]
        with pytest.raises(TypeError, match="type 'int' for argument 'n'"):
            typed(tp.ones(1), np.float64(1.0), 2.0, True, [])

    def test_checked_on_the_autograd_path_too(self, typed):
        with pytest.raises(TypeError, match="argument 'n'"):
            typed(tp.ones(1, requires_grad=True), 1.5, 2.0, True, [])

    def test_arity_errors_count_the_callers_arguments(self, typed, ns):
        with pytest.raises(TypeError, match=r"takes from 5 to 8 positional arguments but 9 were "
                                            r"given"):
            typed(tp.ones(1), 1, 2.0, True, [], "a", None, None, 0)
        op = lib.define(f"{ns}::one(Tensor x) -> Tensor")
        op.register_kernel(None, lambda x: x)
        with pytest.raises(TypeError, match=rf"{ns}::one\(\) takes 1 positional argument but 2 "
                                            r"were given"):
            op(tp.ones(1), tp.ones(1))
        with pytest.raises(TypeError, match=rf"{ns}::one\(\) missing 1 required positional "
                                            r"argument: 'x'"):
            op()


# ============================================================== writes through overlapping memory
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


class TestOverlappingWrites:
    """Writing an expanded tensor (a stride-0 dimension of size > 1) is refused, as in torch."""

    @pytest.mark.parametrize("name, write", [
        ("add_", lambda e: e.add_(1.0)), ("sub_", lambda e: e.sub_(1.0)),
        ("mul_", lambda e: e.mul_(2.0)), ("div_", lambda e: e.div_(2.0)),
        ("copy_", lambda e: e.copy_(tp.ones(2, 3))),
        # fill_ with a Tensor value (torch refuses it; with a number, and zero_, it writes:
        # tests/test_left49.py)
        ("fill_", lambda e: e.fill_(tp.tensor(1.0))),
    ])
    def test_builtin_in_place_ops(self, name, write):
        base = tp.zeros(3)
        e = base.expand(2, 3)
        with pytest.raises(RuntimeError, match=rf"^{name}: argument 'self' .*"
                                               + re.escape(_OVERLAP)):
            write(e)
        assert base.tolist() == [0.0, 0.0, 0.0] and base._version == 0   # nothing written

    def test_custom_op_declaring_mutation(self, ns):
        @lib.custom_op(f"{ns}::bump_", mutates_args=("x", "ys"))
        def bump_(x: tp.Tensor, ys: list[tp.Tensor]) -> None:
            x.add_(1.0)
            for y in ys:
                y.add_(1.0)

        ok = tp.zeros(2)
        with pytest.raises(RuntimeError, match=rf"{ns}::bump_: argument 'x' \(shape \(4, 2\), "
                                               r"stride \(0, 1\)\): unsupported operation"):
            bump_(ok.expand(4, 2), [])
        with pytest.raises(RuntimeError, match=rf"{ns}::bump_: argument 'ys'"):
            bump_(tp.zeros(2), [tp.zeros(2), tp.zeros(1).expand(2)])
        assert ok.tolist() == [0.0, 0.0]

    def test_other_layouts_and_size_one_broadcasts_are_written(self, ns):
        @lib.custom_op(f"{ns}::inc_", mutates_args=("x",))
        def inc_(x: tp.Tensor) -> None:
            x.add_(1.0)

        t = tp.zeros(3, 4)
        inc_(t.transpose(0, 1))
        inc_(t[:, 1:3])
        one = tp.zeros(1)
        inc_(one.expand(1))                     # stride 0 on a size-1 dimension: one element
        one.expand(1, 1).add_(1.0)
        assert t[0].tolist() == [1.0, 2.0, 2.0, 1.0] and one.tolist() == [2.0]

    def test_reading_an_expanded_tensor_is_fine(self, ns):
        @lib.custom_op(f"{ns}::into_", mutates_args=("out",))
        def into_(x: tp.Tensor, out: tp.Tensor) -> None:
            out.copy_(x)

        out = tp.zeros(2, 3)
        into_(tp.ones(3).expand(2, 3), out)
        assert out.tolist() == [[1.0] * 3] * 2
        out.add_(tp.ones(3).expand(2, 3))
        assert out.tolist() == [[2.0] * 3] * 2
