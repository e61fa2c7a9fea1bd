"""Tests for tensorplay._schema: parsing, printing, infer_schema (SPEC §3; CASES C01-C05, C08, C10, C12)."""

from __future__ import annotations

import collections.abc
import importlib.util
import json
import math
import os
import re
import sys
import typing
from typing import Annotated, List, Optional, Sequence, Tuple, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_HERE = os.path.dirname(os.path.abspath(__file__))
_CORE = os.path.join(os.path.dirname(_HERE), "tensorplay_core")
if _CORE not in sys.path and importlib.util.find_spec("tensorplay") is None:
    sys.path.insert(0, _CORE)   # not installed: test the source tree (never shadow an install)

import tensorplay as tp  # noqa: E402
# The schema parser/printer's own unit tests: FunctionSchema, Argument and the helpers below are
# the private _schema module's API (the public spelling is tensorplay.library.infer_schema and
# the schema strings custom_op/define take, tested through them in test_library.py).
from tensorplay._schema import (  # noqa: E402
    NO_DEFAULT, Argument, FunctionSchema, Return, bind_check, check_schema_matches_mutates,
    infer_schema, normalize_mutates_args, parse_qualname, schema_from_function)
from tensorplay.errors import SchemaError  # noqa: E402

Tensor = tp.Tensor

parse = FunctionSchema.parse


def _load_helper(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ============================================================================ parse / print

CANONICAL = [
    'ns::op.overload(Tensor self, SymInt n=1, Tensor(a!) out, *, Tensor(b!)? out2=None, float[] ws, '
    'ScalarType dt=float16, Device dev="cpu", str mode="mean", bool flag=False) -> (Tensor, Tensor[])',
    "(Tensor x, bool want) -> (Tensor, Tensor?)",  # C12
    "() -> ()",
    "ns::f() -> Tensor",
    "(Tensor x) -> (Tensor)",
    "(float eps=-1e-05, float a=inf, float b=-inf, float c=nan, float d=1.0, float e=1e+300) -> ()",
    "(SymInt[2] k=[0, 1], int[] z=[], SymInt[]? s=None, int[2] stride=1, float[] w=[0.5, -2.0]) -> ()",
    "(Tensor(a!)[] xs, Tensor(b)? y, Tensor?[] idx, Tensor[]? maybe=None) -> (Tensor(b) values, Tensor indices)",
    "(Layout l=strided, MemoryFormat m=contiguous_format, Scalar s=1.5, Scalar t=2, Scalar u=True) -> Tensor(a)",
    '(str a="", str b="q\\"uote\\\\back\\nline", Device d="cuda:1", Device? e=None, ScalarType? dt=None) -> ()',
    "op(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
    "(SymInt? n=None, bool[] flags=[True, False], str[] names=[\"a\", \"b\"], Tensor?[] ts=[None]) -> SymInt[]",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_round_trip(text):
    s = parse(text)
    assert str(s) == text
    assert parse(str(s)) == s
    assert hash(parse(text)) == hash(s)


def test_c12_schema_exact():
    s = parse("(Tensor x, bool want) -> (Tensor, Tensor?)")
    assert str(s) == "(Tensor x, bool want) -> (Tensor, Tensor?)"
    assert [r.type for r in s.returns] == ["Tensor", "Tensor?"]
    assert s.name == "" and s.qualname == "" and s.returns_tuple


def test_fields_of_full_schema():
    s = parse(CANONICAL[0])
    assert (s.name, s.overload_name, s.qualname) == ("ns::op", "overload", "ns::op.overload")
    assert (s.namespace, s.op_name) == ("ns", "op")
    a = {x.name: x for x in s.arguments}
    assert a["self"] == Argument("self", "Tensor")
    assert a["n"].type == "SymInt" and a["n"].default == 1 and not a["n"].kwarg_only
    assert a["out"].alias == "a" and a["out"].is_write and a["out"].type == "Tensor"
    assert a["out"].default is NO_DEFAULT and not a["out"].has_default
    assert a["out2"].type == "Tensor?" and a["out2"].alias == "b" and a["out2"].default is None
    assert a["out2"].kwarg_only and a["ws"].kwarg_only and a["ws"].type == "float[]"
    assert a["dt"].default is tp.float16 and a["dt"].type == "ScalarType"
    assert isinstance(a["dev"].default, tp.device) and a["dev"].default is tp.device("cpu")
    assert a["mode"].default == "mean" and a["flag"].default is False
    assert s.mutated_args == ("out", "out2")
    assert s.returns == (Return("Tensor"), Return("Tensor[]"))
    assert s.signature_str() == CANONICAL[0][len("ns::op.overload"):]


def test_with_name_and_names():
    s = parse("(Tensor x) -> Tensor")
    assert str(s.with_name("my::f")) == "my::f(Tensor x) -> Tensor"
    t = s.with_name("my::f.out")
    assert (t.name, t.overload_name, t.namespace, t.op_name) == ("my::f", "out", "my", "f")
    assert str(t.with_name("a::b")) == "a::b(Tensor x) -> Tensor"
    for bad in ["f", "a::b::c", "a:b", "1a::b", "a::b.c.d", "", "a::"]:
        with pytest.raises(SchemaError, match="not a qualified operator name"):
            s.with_name(bad)
    assert parse_qualname("ns::op.ov") == ("ns", "op", "ov")
    assert parse("op(Tensor x) -> Tensor").namespace == ""
    assert parse("op(Tensor x) -> Tensor").op_name == "op"


def test_non_canonical_inputs_normalise():
    s = parse(" ns::f ( Tensor  x , float y = 1 , str s = 'a\"b' , *, Device d='cpu', "
              "ScalarType t=half, SymInt [ ] l = [ 1,2 ] ) -> ( Tensor out )")
    assert str(s) == ('ns::f(Tensor x, float y=1.0, str s="a\\"b", *, Device d="cpu", '
                      "ScalarType t=float16, SymInt[] l=[1, 2]) -> (Tensor out)")
    assert s.arguments[1].default == 1.0 and isinstance(s.arguments[1].default, float)
    assert s.arguments[5].default == (1, 2)


def test_string_escapes_round_trip():
    s = parse('(str a="\\t\\u0001\\x41\'") -> ()')
    assert s.arguments[0].default == "\t\x01A'"
    assert str(s) == '(str a="\\t\\u0001A\'") -> ()'
    assert parse(str(s)) == s


def test_nan_default_equality():
    assert parse("(float x=nan) -> ()") == parse("(float x=nan) -> ()")
    assert math.isnan(parse("(float x=nan) -> ()").arguments[0].default)


@pytest.mark.parametrize("type_,kind,tensor_like", [
    ("Tensor", "tensor", True), ("Tensor?", "optional_tensor", True),
    ("Tensor[]", "tensor_list", True), ("Tensor?[]", "tensor_list", True),
    ("Tensor[]?", "tensor_list", True), ("Device", "device", False), ("Device?", "device", False),
    ("Device[]", "other", False), ("SymInt", "other", False), ("ScalarType", "other", False),
])
def test_argument_kind(type_, kind, tensor_like):
    a = Argument("x", type_)
    assert a.kind == kind and a.is_tensor_like is tensor_like


@pytest.mark.parametrize("text,msg", [
    ("(Tensr x) -> Tensor", "expected a type"),
    ("(Tensor x", "expected ',' or ')'"),
    ("(Tensor x) Tensor", "expected '->'"),
    ("(Tensor x) -> ", "expected a type"),
    ("(Tensor x) -> Tensor extra", "unexpected text"),
    ("(Tensor x,) -> Tensor", "expected a type"),
    ("(Tensor) -> Tensor", "expected an argument name"),
    ("(SymInt(a) x) -> Tensor", "only allowed on Tensor"),
    ("(Tensor(a! x) -> Tensor", "closing the alias"),
    ("(Tensor x=1) -> Tensor", "does not fit type Tensor"),
    ("(Tensor x=None) -> Tensor", "optional type"),
    ("(SymInt n=1.5) -> ()", "does not fit type SymInt"),
    ("(SymInt n=True) -> ()", "does not fit type SymInt"),
    ("(bool b=1) -> ()", "does not fit type bool"),
    ("(str s=abc) -> ()", "does not fit type str"),
    ("(str s=\"abc) -> ()", "unterminated string"),
    ("(str s=\"a\\qb\") -> ()", "unknown escape"),
    ("(Device d=\"cuda:x\") -> ()", "invalid device string 'cuda:x'"),
    ("(Device d=cpu) -> ()", "does not fit type Device"),
    ("(ScalarType d=flot) -> ()", "not a dtype name"),
    ("(ScalarType d=\"float16\") -> ()", "does not fit type ScalarType"),
    ("(SymInt[2] k=[1]) -> ()", "has 2"),
    ("(SymInt[] k=[[1]]) -> ()", "nested lists"),
    ("(SymInt[] k=1.0) -> ()", "does not fit list type"),
    ("(Tensor x, *) -> ()", "keyword-only"),
    ("(*, Tensor x, *, Tensor y) -> ()", "a second '*'"),
    ("(Tensor x, Tensor x) -> ()", "appears twice"),
    ("(Tensor[][] x) -> ()", "unsupported type suffix"),
    ("(Tensor?? x) -> ()", "unsupported type suffix"),
    ("ns::(Tensor x) -> ()", "operator name after '::'"),
    ("ns::op.(Tensor x) -> ()", "overload name"),
    ("ns::op x(Tensor x) -> ()", "expected '('"),
    ("(Tensor x) -> (Tensor a b)", "',' or ')'"),
    ("(Tensor x) -> Tensor name", "unexpected text"),
    ("(Any x) -> ()", "expected a type"),
    ("", "operator name or '('"),
])
def test_parse_errors(text, msg):
    with pytest.raises(SchemaError, match=re.escape(msg)) as e:
        parse(text)
    assert "FunctionSchema.parse:" in str(e.value) and "position" in str(e.value)


def test_parse_rejects_non_str():
    with pytest.raises(SchemaError, match="expected a str"):
        parse(b"(Tensor x) -> ()")


def test_record_validation():
    with pytest.raises(SchemaError, match="only tensor types"):
        Argument("n", "SymInt", alias="a")
    with pytest.raises(SchemaError, match="needs an alias"):
        Argument("x", "Tensor", is_write=True)
    with pytest.raises(SchemaError, match="not a type"):
        Argument("x", "Tensor(a!)")
    with pytest.raises(SchemaError, match="identifier"):
        Argument("1x", "Tensor")
    with pytest.raises(SchemaError, match="follows keyword-only"):
        FunctionSchema("", "", (Argument("a", "Tensor", kwarg_only=True), Argument("b", "Tensor")), ())
    with pytest.raises(SchemaError, match="needs an operator name"):
        FunctionSchema("", "ov", (), ())
    assert Argument("w", "float[]", [1, 2]).default == (1.0, 2.0)
    # one unnamed return prints without parens unless built with returns_tuple
    assert str(FunctionSchema("", "", (), (Return("Tensor"),), False)) == "() -> Tensor"
    assert str(FunctionSchema("", "", (), (Return("Tensor", "y"),), False)) == "() -> (Tensor y)"


# ============================================================================ infer_schema

def test_spec_example():
    def op(self, n: int, out) -> Tensor: ...
    assert infer_schema(op, mutates_args=("out",), op_name="ns::op") == \
        "ns::op(Tensor self, SymInt n, Tensor(a!) out) -> Tensor"


def test_c01_unknown_marks_every_tensor():
    def f(q, k, scale: float = 1.0): return q + k
    assert infer_schema(f, mutates_args="unknown") == \
        "(Tensor(a!) q, Tensor(b!) k, float scale=1.0) -> Tensor"
    with pytest.raises(ValueError, match="collection of parameter names or 'unknown'"):
        infer_schema(f, mutates_args="q")


def test_c02_builtin_generics_and_pipe_none():
    def f(xs: list[tp.Tensor], ws: list[float], n: list[int] | None = None) -> list[tp.Tensor]: ...
    assert infer_schema(f, mutates_args=()) == "(Tensor[] xs, float[] ws, SymInt[]? n=None) -> Tensor[]"


def test_c03_future_annotations_module():
    mod = _load_helper("_future_annotations_mod")
    assert infer_schema(mod.h, mutates_args=()) == "(Tensor x, SymInt[] dims, Tensor? bias=None) -> Tensor"


def test_c04_tuple_suggests_list_form():
    def f(x, size: Tuple[int, int]): ...
    def g(parts: Tuple[Tensor, Tensor, Optional[Tensor]]): ...
    def h(v: tuple[float, ...]): ...
    def k(m: tuple[int, float]): ...
    with pytest.raises(SchemaError, match=r"parameter 'size' .*use list\[int\] instead"):
        infer_schema(f, mutates_args=())
    with pytest.raises(SchemaError, match=r"parameter 'parts' .*use list\[Optional\[Tensor\]\] instead"):
        infer_schema(g, mutates_args=())
    with pytest.raises(SchemaError, match=r"use list\[float\] instead"):
        infer_schema(h, mutates_args=())
    with pytest.raises(SchemaError, match=r"parameter 'm'.*one element type, or separate parameters"):
        infer_schema(k, mutates_args=())


def test_c05_device_and_dtype_defaults():
    def f(x, dev: tp.device = "cpu", out_dtype: tp.dtype = tp.float16): ...
    assert infer_schema(f, mutates_args=()) == \
        '(Tensor x, Device dev="cpu", ScalarType out_dtype=float16) -> Tensor'
    s = schema_from_function(f, mutates_args=())
    assert s.arguments[2].default is tp.float16
    assert s.arguments[1].default is tp.device("cpu")

    def g(dev: tp.device = tp.device("cuda", 1)): ...
    assert infer_schema(g, mutates_args=()) == '(Device dev="cuda:1") -> Tensor'


def test_c08_optional_mutated_out():
    def maybe_out(a: tp.Tensor, b: tp.Tensor, out: tp.Tensor | None = None) -> None: ...
    assert infer_schema(maybe_out, mutates_args=("out",)) == \
        "(Tensor a, Tensor b, Tensor(a!)? out=None) -> ()"


def test_alias_letters_in_parameter_order():
    def f(a, b, c, d: list[Tensor]): ...
    assert infer_schema(f, mutates_args=["d", "b"]) == \
        "(Tensor a, Tensor(a!) b, Tensor c, Tensor(b!)[] d) -> Tensor"
    assert schema_from_function(f, mutates_args={"d", "a"}).mutated_args == ("a", "d")


@pytest.mark.parametrize("ann,expected", [
    (int, "SymInt"), (float, "float"), (bool, "bool"), (str, "str"),
    (Optional[int], "SymInt?"), (Union[int, None], "SymInt?"), (Union[None, float], "float?"),
    (typing.Optional[Optional[int]], "SymInt?"), (List[int], "SymInt[]"), (list[bool], "bool[]"),
    (Sequence[float], "float[]"), (collections.abc.Sequence[int], "SymInt[]"),
    (list[Optional[Tensor]], "Tensor?[]"), (Optional[list[Tensor]], "Tensor[]?"),
    (Annotated[int, "meta"], "SymInt"), (tp.dtype, "ScalarType"), (tp.device, "Device"),
    (Optional[tp.device], "Device?"), (Tensor, "Tensor"), ("int", "SymInt"),
    ("list[Tensor]", "Tensor[]"), (list["Tensor"], "Tensor[]"), (int | None, "SymInt?"),
])
def test_annotation_mapping(ann, expected):
    def f(x): ...
    f.__annotations__["x"] = ann
    assert infer_schema(f, mutates_args=()) == f"({expected} x) -> Tensor"


def test_tensor_subclass_and_unannotated_none_default():
    class MyTensor(Tensor):
        pass

    def f(x, bias=None): ...
    f.__annotations__["x"] = MyTensor  # a local class: not resolvable from a string annotation
    assert infer_schema(f, mutates_args=("bias",)) == "(Tensor x, Tensor(a!)? bias=None) -> Tensor"


def test_unannotated_non_tensor_default_suggests_an_annotation():
    def f(x, scale=1.0): ...

    with pytest.raises(SchemaError, match=r"parameter 'scale' .* default value 1.0 does not fit "
                                          r"type Tensor; a parameter without annotation is a "
                                          r"Tensor, so annotate it, e.g. `scale: float = 1.0`"):
        infer_schema(f, mutates_args=())

    def g(x, scale: float = "a"): ...

    with pytest.raises(SchemaError, match=r"default value 'a' does not fit type float$"):
        infer_schema(g, mutates_args=())


def test_kwonly_varargs_and_defaults():
    def f(x, *args, n: int = 3, eps: float = 1e-5, tag: str = 'say "hi"', ks: list[int] = [1, 2],  # noqa: B006
          flag: bool = True, **kwargs) -> None: ...
    assert infer_schema(f, mutates_args=()) == \
        '(Tensor x, *, SymInt n=3, float eps=1e-05, str tag="say \\"hi\\"", SymInt[] ks=[1, 2], ' \
        "bool flag=True) -> ()"

    def g(x, /, y, *, z): ...
    s = schema_from_function(g, mutates_args=())
    assert [a.kwarg_only for a in s.arguments] == [False, False, True]
    assert str(s) == "(Tensor x, Tensor y, *, Tensor z) -> Tensor"


def test_float_default_from_int_and_special_values():
    def f(a: float = 1, b: float = float("inf"), c: float = -math.inf, d: float = math.nan): ...
    assert infer_schema(f, mutates_args=()) == \
        "(float a=1.0, float b=inf, float c=-inf, float d=nan) -> Tensor"


@pytest.mark.parametrize("ret,expected", [
    (None, "()"), (type(None), "()"), (Tensor, "Tensor"), (tuple[Tensor, Tensor], "(Tensor, Tensor)"),
    (Tuple[Tensor, Optional[Tensor]], "(Tensor, Tensor?)"), (tuple[Tensor], "(Tensor)"),
    (tuple[()], "()"), (list[Tensor], "Tensor[]"), (int, "SymInt"), (float, "float"),
    (Optional[Tensor], "Tensor?"), ("None", "()"),
])
def test_return_annotations(ret, expected):
    def f(x): ...
    f.__annotations__["return"] = ret
    assert infer_schema(f, mutates_args=()) == f"(Tensor x) -> {expected}"


def test_missing_return_is_tensor():
    def f(q, k, scale: float = 1.0): return q + k
    assert infer_schema(f, mutates_args=()).endswith("-> Tensor")


def test_op_name_prefix_and_bad_op_name():
    def f(x): ...
    assert infer_schema(f, mutates_args=(), op_name="a::b.ov") == "a::b.ov(Tensor x) -> Tensor"
    # a bare name (no namespace) is printed as given, as torch does (issue 26)
    assert infer_schema(f, mutates_args=(), op_name="a.b") == "a.b(Tensor x) -> Tensor"
    assert infer_schema(f, mutates_args={}, op_name="foo") == "foo(Tensor x) -> Tensor"
    for bad in ("a-b", "1x", "a.b.c", ""):
        with pytest.raises(SchemaError, match="is not an operator name"):
            infer_schema(f, mutates_args=(), op_name=bad)
    with pytest.raises(SchemaError, match="not a qualified operator name"):
        infer_schema(f, mutates_args=(), op_name="a::b::c")


@pytest.mark.parametrize("ann,msg", [
    (dict, "parameter 'x' of .* has unsupported type dict; supported:"),
    (Union[int, float], "parameter 'x'.*only supported as Optional"),
    (list, r"parameter 'x'.*give the element type"),
    (list[list[int]], "nested lists"),
    ("Undefined1", r"cannot resolve the annotation 'Undefined1' of parameter 'x'.*NameError"),
    ("list[Undefined2]", r"cannot resolve the annotation 'list\[Undefined2\]' of parameter 'x'"),
    (list["Undefined3"], r"cannot resolve the annotation 'Undefined3' of parameter 'x'"),
])
def test_unsupported_annotations(ann, msg):
    def f(x): ...
    f.__annotations__["x"] = ann
    with pytest.raises(SchemaError, match=msg):
        infer_schema(f, mutates_args=())


def test_error_names_function_site():
    def bad_fn(x: dict): ...
    line = bad_fn.__code__.co_firstlineno
    with pytest.raises(SchemaError, match=rf"bad_fn at test_schema.py:{line}"):
        infer_schema(bad_fn, mutates_args=())


@pytest.mark.parametrize("src,msg", [
    ("def f(n: int = 'a'): ...", "parameter 'n'.*does not fit type SymInt"),
    ("def f(n: int = None): ...", "parameter 'n'.*default None needs an optional"),
    ("def f(x: Tensor = 1): ...", "does not fit type Tensor"),
    ("def f(d: tp.dtype = 'float16'): ...", "does not fit type ScalarType"),
    ("def f(d: tp.device = 'cuda:x'): ...", "invalid device string 'cuda:x'"),
    ("def f(b: bool = 0): ...", "does not fit type bool"),
    ("def f(x) -> dict: ...", "return annotation dict .* is not supported"),
    ("def f(x) -> tuple[Tensor, ...]: ...", "fixed number of elements"),
    ("def f(x) -> tuple: ...", "needs its element types"),
    ("def f(x) -> Undefined9: ...", "cannot resolve the annotation 'Undefined9' of the return annotation"),
])
def test_bad_defaults_and_returns(src, msg):
    ns = {"Tensor": Tensor, "tp": tp}
    exec("from __future__ import annotations\n" + src, ns)  # noqa: S102
    with pytest.raises(SchemaError, match=msg):
        infer_schema(ns["f"], mutates_args=())


# ============================================================================ mutates_args

def test_mutates_args_errors():
    def f(x, n: int, ys: list[Tensor], o: Optional[Tensor] = None): ...
    with pytest.raises(ValueError, match=r"mutates_args must be a collection of parameter names or 'unknown'"):
        infer_schema(f, mutates_args="x")
    with pytest.raises(ValueError, match=r"collection of parameter names"):
        infer_schema(f, mutates_args=None)
    with pytest.raises(ValueError, match=r"collection of parameter names"):
        infer_schema(f, mutates_args={"x": True})
    with pytest.raises(ValueError, match=r"must contain parameter names \(str\)"):
        infer_schema(f, mutates_args=(1,))
    with pytest.raises(ValueError, match=r"\['zz', 'yy'\], which are not parameters"):
        infer_schema(f, mutates_args=("x", "zz", "yy"))
    with pytest.raises(ValueError, match=r"'n' \(SymInt\), which are not tensors"):
        infer_schema(f, mutates_args=("n",))
    assert infer_schema(f, mutates_args="unknown") == \
        "(Tensor(a!) x, SymInt n, Tensor(b!)[] ys, Tensor(c!)? o=None) -> Tensor"


def test_normalize_mutates_args_targets():
    s = parse("(Tensor a, SymInt n, Tensor? b) -> ()")
    assert normalize_mutates_args(("b", "a"), s) == ("a", "b")
    assert normalize_mutates_args("unknown", s) == ("a", "b")
    assert normalize_mutates_args("unknown", {"a": True, "n": False}) == ("a",)
    assert normalize_mutates_args(["y"], ["x", "y"]) == ("y",)

    def f(x, n: int): ...
    assert normalize_mutates_args("unknown", f) == ("x",)
    with pytest.raises(ValueError, match=r'^custom_op\("t::f"\): mutates_args names'):
        normalize_mutates_args(("n",), f, api='custom_op("t::f")')


def test_check_schema_matches_mutates():
    s = parse("t::f(Tensor(a!) x, Tensor y, SymInt n) -> ()")
    check_schema_matches_mutates(s, ("x",), "custom_op")
    with pytest.raises(ValueError, match=r"mutates_args lists \['y'\] but the schema does not mark"):
        check_schema_matches_mutates(s, ("x", "y"), "custom_op")
    with pytest.raises(ValueError, match=r"the schema writes \['x'\].*mutates_args does not list"):
        check_schema_matches_mutates(s, (), 'custom_op("t::f")')
    with pytest.raises(ValueError, match=r"mutates_args lists \['y'\]"):
        check_schema_matches_mutates(s, "unknown", "custom_op")
    with pytest.raises(ValueError, match="not tensors"):
        check_schema_matches_mutates(s, ("n",), "custom_op")


# ============================================================================ bind_check

def test_c10_bind_check_message():
    s = parse("t10::f(Tensor x, SymInt n) -> Tensor")

    def _(x): ...
    line = _.__code__.co_firstlineno
    with pytest.raises(ValueError) as e:
        bind_check(_, s, "fake kernel", 'register_fake("t10::f")')
    assert str(e.value) == (
        f'register_fake("t10::f"): the fake kernel test_c10_bind_check_message.<locals>._ at '
        f"test_schema.py:{line} cannot take parameter 'n' of (Tensor x, SymInt n) -> Tensor; "
        f"give it the same parameters as the op")


def test_bind_check_cases():
    s = parse("t::f(Tensor x, SymInt n=1, *, Tensor(a!) out, bool flag=False) -> Tensor")
    ok = [
        lambda x, n, *, out, flag: None,
        lambda a, b, out, flag: None,          # positional names need not match
        lambda x, n, out, flag, extra=3: None,  # extra with default
        lambda *args, **kwargs: None,
        lambda x, *args, out, **kw: None,
    ]
    for fn in ok:
        bind_check(fn, s, "kernel", "register_kernel")
    with pytest.raises(ValueError, match="cannot take parameter 'flag'"):
        bind_check(lambda x, n, *, out: None, s, "kernel", "register_kernel")
    with pytest.raises(ValueError, match="cannot take parameter 'out'"):
        bind_check(lambda x, n, out_, flag: None, s, "kernel", "register_kernel")
    kw_schema = parse("(Tensor x, *, Tensor out, bool flag) -> ()")
    with pytest.raises(ValueError, match="cannot take parameter 'out'"):  # positional-only 'out'
        bind_check(lambda x, out, /, flag: None, kw_schema, "kernel", "k")
    with pytest.raises(ValueError, match="requires parameter 'y', which .* does not have"):
        bind_check(lambda x, n, y, *, out, flag: None, s, "kernel", "register_kernel")
    bind_check(print, parse("(Tensor x) -> ()"), "kernel", "k")  # builtin: accepts *args


# ============================================================================ property tests

_BASES = ["Tensor", "SymInt", "int", "float", "bool", "str", "Scalar", "ScalarType", "Device",
          "Layout", "MemoryFormat"]
_DTYPE_NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
                "int64", "bool"]
_idents = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)


def _render_float(v: float) -> str:
    return "nan" if v != v else repr(v)


def _scalar_value(base):
    """(strategy of canonical default texts) for one element of ``base``; None if no literal."""
    return {
        "SymInt": st.integers(-10**6, 10**6).map(str),
        "int": st.integers(-10**6, 10**6).map(str),
        "float": st.floats().map(_render_float),
        "bool": st.sampled_from(["True", "False"]),
        "str": st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=6).map(json.dumps),
        "Scalar": st.one_of(st.integers(-99, 99).map(str), st.floats().map(_render_float),
                            st.sampled_from(["True", "False"])),
        "ScalarType": st.sampled_from(_DTYPE_NAMES),
        "Device": st.sampled_from(['"cpu"', '"cuda"', '"cuda:1"', '"meta"']),
        "Layout": st.just("strided"),
        "MemoryFormat": st.sampled_from(["contiguous_format", "channels_last"]),
    }.get(base)


@st.composite
def _type_and_default(draw, allow_default=True):
    base = draw(st.sampled_from(_BASES))
    shape = draw(st.sampled_from(["", "?", "[]", "[N]", "?[]", "[]?"]))
    size = draw(st.integers(0, 3)) if shape == "[N]" else None
    type_text = base + shape.replace("N", str(size))
    alias = ""
    if base == "Tensor" and draw(st.booleans()):
        alias = f"({draw(st.sampled_from(['a', 'b', 'zz']))}{draw(st.sampled_from(['', '!']))})"
    printed = base + alias + type_text[len(base):]
    default = None
    if allow_default and draw(st.booleans()):
        accepts_none = shape in ("?", "[]?")
        elem = _scalar_value(base)
        if accepts_none and draw(st.booleans()):
            default = "None"
        elif "[" in shape:
            n = size if size is not None else draw(st.integers(0, 3))
            if elem is None and shape != "?[]" and n:
                return type_text, printed, None  # no literal for a non-empty Tensor list
            items = [("None" if shape == "?[]" and (elem is None or draw(st.booleans())) else draw(elem))
                     for _ in range(n)]
            default = "[" + ", ".join(items) + "]"
        elif elem is not None:
            default = draw(elem)
    return type_text, printed, default


@st.composite
def canonical_schemas(draw):
    n = draw(st.integers(0, 5))
    names = draw(st.lists(_idents, min_size=n, max_size=n, unique=True))
    n_kw = draw(st.integers(0, n))
    parts = []
    for i, name in enumerate(names):
        if i == n - n_kw and n_kw:
            parts.append("*")
        _, printed, default = draw(_type_and_default())
        parts.append(f"{printed} {name}" + (f"={default}" if default is not None else ""))
    kind = draw(st.sampled_from(["empty", "single", "tuple"]))
    if kind == "empty":
        rets = "()"
    elif kind == "single":
        rets = draw(_type_and_default(allow_default=False))[1]
    else:
        k = draw(st.integers(1, 3))
        items = []
        for _ in range(k):
            r = draw(_type_and_default(allow_default=False))[1]
            if draw(st.booleans()):
                r += " " + draw(_idents)
            items.append(r)
        rets = "(" + ", ".join(items) + ")"
    prefix = draw(st.sampled_from(["", "ns::op", "my_lib::f2.out", "plain"]))
    return f"{prefix}({', '.join(parts)}) -> {rets}"


_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(canonical_schemas())
def test_property_round_trip(text):
    s = parse(text)
    assert str(s) == text
    assert parse(str(s)) == s


@_FAST
@given(canonical_schemas(), st.data())
def test_property_mutations_raise_only_schema_error(text, data):
    op = data.draw(st.sampled_from(["truncate", "delete", "insert", "replace"]))
    i = data.draw(st.integers(0, len(text)))
    ch = data.draw(st.sampled_from(list("()[]?!*,=-> :.'\"\\ax1") + ["Tensor", "None", "[[", "(a!)"]))
    if op == "truncate":
        mutated = text[:i]
    elif op == "delete":
        mutated = text[:i] + text[i + 1:]
    elif op == "insert":
        mutated = text[:i] + ch + text[i:]
    else:
        mutated = text[:i] + ch + text[i + 1:]
    try:
        s = parse(mutated)
    except SchemaError:
        return
    assert parse(str(s)) == s  # whatever parses must print to something that parses back


@_FAST
@given(st.text(max_size=40))
def test_property_random_text_raises_only_schema_error(text):
    try:
        s = parse(text)
    except SchemaError:
        return
    assert parse(str(s)) == s


_PY_TYPES = [
    # (annotation source, schema type, default sources)
    (None, "Tensor", []), ("Tensor", "Tensor", []), ("Optional[Tensor]", "Tensor?", ["None"]),
    ("Tensor | None", "Tensor?", ["None"]), ("int", "SymInt", ["0", "-3", "7"]),
    ("float", "float", ["1.0", "1e-05", "-2.5", "3"]), ("bool", "bool", ["True", "False"]),
    ("str", "str", ["'mean'", '"x"', "''"]), ("list[int]", "SymInt[]", ["[1, 2]", "[]", "(3,)"]),
    ("List[float]", "float[]", ["[0.5]"]), ("Sequence[bool]", "bool[]", ["[True]"]),
    ("list[Tensor]", "Tensor[]", []), ("list[Optional[Tensor]]", "Tensor?[]", []),
    ("Optional[int]", "SymInt?", ["None", "4"]), ("list[int] | None", "SymInt[]?", ["None", "[1]"]),
    ("tp.dtype", "ScalarType", ["tp.float16", "tp.float32"]),
    ("tp.device", "Device", ["'cpu'", "'cuda:0'"]), ("Optional[tp.device]", "Device?", ["None"]),
]
_PY_RETURNS = [(None, "Tensor"), ("None", "()"), ("Tensor", "Tensor"),
               ("tuple[Tensor, Tensor]", "(Tensor, Tensor)"), ("list[Tensor]", "Tensor[]"),
               ("Tuple[Tensor, Optional[Tensor], int]", "(Tensor, Tensor?, SymInt)")]


@st.composite
def python_functions(draw):
    n = draw(st.integers(0, 5))
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
                          .filter(lambda s: s not in {"if", "in", "is", "or", "as", "def", "for",
                                                      "and", "not", "del", "try", "tp"}),
                          min_size=n, max_size=n, unique=True))
    star = draw(st.integers(0, n))
    future = draw(st.booleans())
    params, expected, tensors = [], [], []
    seen_default = False
    for i, name in enumerate(names):
        if i == star:
            params.append("*")
            if draw(st.booleans()):
                params[-1] = "*_args"   # '_' prefix: never one of the drawn names
        ann, stype, defaults = draw(st.sampled_from(_PY_TYPES))
        src = name + (f": {ann}" if ann else "")
        default = None
        positional = i < star
        if defaults and (draw(st.booleans()) or (positional and seen_default)):
            default = draw(st.sampled_from(defaults))
        elif positional and seen_default:
            ann, stype, default = "Optional[Tensor]", "Tensor?", "None"
            src = f"{name}: {ann}"
        if default is not None:
            src += f" = {default}"
            seen_default = seen_default or positional
        params.append(src)
        expected.append((name, stype, not positional))
        if stype.startswith("Tensor"):
            tensors.append(name)
    if draw(st.booleans()):
        params.append("**_kw")
    ret_ann, ret_type = draw(st.sampled_from(_PY_RETURNS))
    src = (("from __future__ import annotations\n" if future else "")
           + f"def fn({', '.join(params)})" + (f" -> {ret_ann}" if ret_ann else "") + ": ...\n")
    mutated = draw(st.lists(st.sampled_from(tensors), unique=True)) if tensors else []
    return src, expected, ret_type, mutated


@_FAST
@given(python_functions())
def test_property_infer_schema_parses(case):
    src, expected, ret_type, mutated = case
    ns = {"Tensor": Tensor, "tp": tp, "Optional": Optional, "List": List, "Sequence": Sequence,
          "Tuple": Tuple}
    exec(src, ns)  # noqa: S102
    text = infer_schema(ns["fn"], mutates_args=mutated)
    s = parse(text)
    assert str(s) == text
    assert [(a.name, a.type, a.kwarg_only) for a in s.arguments] == expected
    assert text.endswith("-> " + ret_type)
    order = [name for name, _, _ in expected if name in mutated]
    assert s.mutated_args == tuple(order)
    assert [a.alias for a in s.arguments if a.is_write] == list("abcdefghijklmnopqrstuvwxyz"[:len(order)])
