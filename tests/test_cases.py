"""CASES.md C01-C06, C08, C10 and C12, as written (``tp`` is tensorplay, ``lib`` tensorplay.library).

Each case also checks the neighbouring inputs of the same *kind* of fault (CASES.md: "the whole
kind of fault behind it must be fixed, not the single input"). C07 and C09 are opcheck cases,
tested in tests/test_opcheck.py; C11 and C13 are compile cases.
Op namespaces are prefixed ``cases_`` and removed after each test.
"""

from __future__ import annotations

import importlib.util
import os
from typing import List, Optional, Tuple

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.errors import DispatchError, SchemaError
from tensorplay.testing import drop_ops

_HERE = os.path.dirname(os.path.abspath(__file__))


def _op(qualname):
    """The op registered as ``qualname``, through the public ``tensorplay.ops``; None if none."""
    ns, _, name = qualname.partition("::")
    return getattr(getattr(tp.ops, ns), name, None)


@pytest.fixture(autouse=True)
def _clean_registry():
    yield
    drop_ops("cases_", prefix=True)


# ------------------------------------------------------------------------------------------- C01
def test_c01_unknown_marks_every_tensor_parameter():
    def f(q, k, scale: float = 1.0):
        return q + k

    op = lib.custom_op("cases_t1::f", f, mutates_args="unknown")
    assert "Tensor(a!) q" in str(op.schema) and "Tensor(b!) k" in str(op.schema)
    assert op.mutates_args == ("q", "k")
    assert str(op.schema) == "cases_t1::f(Tensor(a!) q, Tensor(b!) k, float scale=1.0) -> Tensor"


@pytest.mark.parametrize("bad", ["q", "k", "scale", "", "all", "Unknown"])
def test_c01_any_other_bare_string_is_refused(bad):
    def f(q, k, scale: float = 1.0):
        return q + k

    with pytest.raises(ValueError, match=r"^custom_op\('cases_t1::g'\): mutates_args must be a "
                                         r"collection of parameter names or 'unknown'"):
        lib.custom_op("cases_t1::g", f, mutates_args=bad)
    assert _op("cases_t1::g") is None


def test_c01_unknown_covers_optional_and_list_tensors_only():
    def f(a, b: Optional[tp.Tensor], cs: list[tp.Tensor], n: int, s: str = "x") -> None:
        pass

    op = lib.custom_op("cases_t1::h", f, mutates_args="unknown")
    assert op.mutates_args == ("a", "b", "cs")
    assert op.schema.signature_str() == \
        '(Tensor(a!) a, Tensor(b!)? b, Tensor(c!)[] cs, SymInt n, str s="x") -> ()'


# ------------------------------------------------------------------------------------------- C02
def test_c02_builtin_generics_and_pipe_none():
    def f(xs: list[tp.Tensor], ws: list[float], n: list[int] | None = None) -> list[tp.Tensor]: ...

    assert lib.infer_schema(f, mutates_args=()) == \
        "(Tensor[] xs, float[] ws, SymInt[]? n=None) -> Tensor[]"


def test_c02_typing_forms_are_the_same():
    def f(xs: List[tp.Tensor], ws: List[float], n: Optional[List[int]] = None) -> List[tp.Tensor]: ...

    assert lib.infer_schema(f, mutates_args=()) == \
        "(Tensor[] xs, float[] ws, SymInt[]? n=None) -> Tensor[]"


# ------------------------------------------------------------------------------------------- C03
def test_c03_future_annotations_module_with_typing_imports():
    spec = importlib.util.spec_from_file_location("_future_annotations_mod",
                                                  os.path.join(_HERE, "_future_annotations_mod.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert lib.infer_schema(mod.h, mutates_args=()) == \
        "(Tensor x, SymInt[] dims, Tensor? bias=None) -> Tensor"
    op = lib.custom_op("cases_t3::h", mod.h, mutates_args=())   # registration resolves them too
    assert op.schema.signature_str() == "(Tensor x, SymInt[] dims, Tensor? bias=None) -> Tensor"
    x = tp.ones(2)
    assert op(x, [0]) is not None


# ------------------------------------------------------------------------------------------- C04
def test_c04_tuple_of_ints_suggests_list_of_int():
    def f(x, size: Tuple[int, int]): ...

    with pytest.raises(SchemaError, match=r"parameter 'size'.*use list\[int\]"):
        lib.infer_schema(f, mutates_args=())
    with pytest.raises(ValueError, match=r"^custom_op\('cases_t4::f'\): parameter 'size'.*list\[int\]"):
        lib.custom_op("cases_t4::f", f, mutates_args=())
    assert _op("cases_t4::f") is None


def test_c04_tuple_with_optional_tensor_suggests_list_of_optional():
    def f(parts: Tuple[tp.Tensor, tp.Tensor, Optional[tp.Tensor]]): ...

    with pytest.raises(SchemaError, match=r"parameter 'parts'.*use list\[Optional\[Tensor\]\]"):
        lib.infer_schema(f, mutates_args=())


def test_c04_builtin_tuple_form_too():
    def f(x, size: tuple[float, float]): ...

    with pytest.raises(SchemaError, match=r"parameter 'size'.*list\[float\]"):
        lib.infer_schema(f, mutates_args=())


# ------------------------------------------------------------------------------------------- C05
def test_c05_device_and_dtype_defaults():
    seen = {}

    def f(x: tp.Tensor, dev: tp.device = "cpu", out_dtype: tp.dtype = tp.float16) -> tp.Tensor:
        seen["dev"], seen["dtype"] = dev, out_dtype
        return x.to(out_dtype)

    s = lib.infer_schema(f, mutates_args=())
    assert 'Device dev="cpu"' in s and "ScalarType out_dtype=float16" in s
    op = lib.custom_op("cases_t5::f", f, mutates_args=())
    out = op(tp.ones(3))
    assert seen["dtype"] is tp.float16          # the dtype object itself, not a string
    assert seen["dev"] == tp.device("cpu") and isinstance(seen["dev"], tp.device)
    assert out.dtype is tp.float16
    assert op(tp.ones(3), out_dtype=tp.float64).dtype is tp.float64


# ------------------------------------------------------------------------------------------- C06
def test_c06_factory_dispatches_on_device_parameter():
    @lib.custom_op("cases_t6::ones3", mutates_args=(), device_types="cpu")
    def ones3(device: tp.device) -> tp.Tensor:
        return tp.ones(3)

    assert ones3(tp.device("cpu")).shape == (3,)
    assert ones3("cpu").shape == (3,)
    with pytest.raises(DispatchError) as ei:
        ones3(tp.device("cuda"))
    msg = str(ei.value)
    assert msg.startswith("custom_op('cases_t6::ones3'): no kernel for device 'cuda'")
    assert "(registered: cpu)" in msg and "register_kernel('cuda')" in msg


def test_c06_device_kernel_without_tensors_or_device_parameter_is_refused():
    def nodev(n: int) -> tp.Tensor:
        return tp.ones(n)

    with pytest.raises(ValueError, match=r"^custom_op\('cases_t6::nodev'\): a kernel for device "
                                         r"'cpu' cannot be reached.*'device' parameter"):
        lib.custom_op("cases_t6::nodev", nodev, mutates_args=(), device_types="cpu")
    assert _op("cases_t6::nodev") is None
    # the same fault through register_kernel later
    op = lib.custom_op("cases_t6::nodev", nodev, mutates_args=())
    with pytest.raises(ValueError, match=r"^register_kernel\('cases_t6::nodev'\): a kernel for "
                                         r"device 'cuda' cannot be reached"):
        op.register_kernel("cuda", nodev)
    assert op(2).shape == (2,)   # the device-agnostic kernel is fine


# ------------------------------------------------------------------------------------------- C08
def test_c08_mutable_optional_argument_left_at_none():
    @lib.custom_op("cases_t8::maybe_out", mutates_args=("out",))
    def maybe_out(a: tp.Tensor, b: tp.Tensor, out: tp.Tensor | None = None) -> None:
        if out is not None:
            out.copy_(a + b)

    assert maybe_out(tp.randn(3), tp.randn(3)) is None               # fine
    o = tp.zeros(3)
    v = o._version
    maybe_out(tp.ones(3), tp.ones(3), o)
    assert o._version > v
    assert o.tolist() == [2.0, 2.0, 2.0]
    assert "Tensor(a!)? out=None" in str(maybe_out.schema)
    assert maybe_out.mutates_args == ("out",)


# ------------------------------------------------------------------------------------------- C10
def test_c10_fake_that_cannot_take_parameters_is_refused_naming_it():
    @lib.custom_op("cases_t10::f", mutates_args=())
    def f(x: tp.Tensor, n: int) -> tp.Tensor:
        return x * n

    def bad(x):
        return x

    with pytest.raises(ValueError, match=r"^register_fake\('cases_t10::f'\): the fake kernel \S*bad "
                                         r"at test_cases\.py:\d+ cannot take parameter 'n'"):
        f.register_fake(bad)
    assert f.fake_impl is None
    with pytest.raises(ValueError, match=r"cannot take parameter 'n'"):
        lib.register_fake("cases_t10::f", bad)
    with pytest.raises(ValueError, match=r"^register_kernel\('cases_t10::f'\).*cannot take "
                                         r"parameter 'n'"):
        f.register_kernel("cpu", bad)
    assert "cpu" not in f.kernels

    def extra(x, n, mode):
        return x

    with pytest.raises(ValueError, match=r"requires parameter 'mode'"):
        f.register_fake(extra)

    @f.register_fake
    def _(x, n):          # the right signature is accepted
        return x.new_empty(x.shape)


def test_c10_custom_op_body_that_cannot_take_given_schema_leaves_no_op():
    def body(x):
        return x

    with pytest.raises(ValueError, match=r"cannot take parameter 'n'"):
        lib.custom_op("cases_t10::g", body, mutates_args=(), schema="(Tensor x, SymInt n) -> Tensor")
    assert _op("cases_t10::g") is None


# ------------------------------------------------------------------------------------------- C12
def test_c12_triton_op_keeps_given_schema_exactly():
    def body(x, want):
        return x, None

    op = lib.triton_op("cases_t12::f", body, mutates_args=(),
                       schema="(Tensor x, bool want) -> (Tensor, Tensor?)")
    assert op.schema.signature_str() == "(Tensor x, bool want) -> (Tensor, Tensor?)"
    assert str(op.schema) == "cases_t12::f(Tensor x, bool want) -> (Tensor, Tensor?)"
    assert op.is_triton is True
    assert op.mutates_args == ()
    assert tp.ops.cases_t12.f is op


def test_c12_triton_op_decorator_and_schema_must_agree_with_mutates_args():
    with pytest.raises(ValueError, match=r"^triton_op\('cases_t12::g'\): the schema .* disagrees "
                                         r"with mutates_args"):
        @lib.triton_op("cases_t12::g", mutates_args=("x",), schema="(Tensor x) -> Tensor")
        def g(x):
            return x
    assert _op("cases_t12::g") is None

    @lib.triton_op("cases_t12::g", mutates_args=("x",), schema="(Tensor(a!) x) -> ()")
    def g2(x):
        pass

    assert str(g2.schema) == "cases_t12::g(Tensor(a!) x) -> ()" and g2.is_triton
