"""Data never becomes code: values that reach generated source (compile's output structure and
arguments, guard keys, dispatch defaults and keyword arguments) are bound by name, never pasted as
their ``repr``. An object whose ``repr`` is Python code must come back as itself, unexecuted."""

from __future__ import annotations

import builtins
import collections
import enum

import pytest
import tensorplay as tp
from tensorplay import library
from tensorplay.library import custom_op

pytestmark = pytest.mark.usefixtures("cpu")

_FLAG = "_tensorplay_codegen_pwned"
_CODE = f"__import__('builtins').setattr(__import__('builtins'), {_FLAG!r}, 1) or 0"


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    HIGH = 3


class CodeRepr:
    """Hashable; its repr is a Python expression with a side effect."""

    def __repr__(self):
        return _CODE

    def __hash__(self):
        return 7

    def __eq__(self, other):
        return isinstance(other, CodeRepr)


@pytest.fixture(autouse=True)
def _not_executed():
    yield
    assert not hasattr(builtins, _FLAG), "a repr() was executed as code"


KEYS = [Color.RED, Level.HIGH, float("nan"), float("inf"), -float("inf"), CodeRepr(),
        (1, Color.RED), "it's \"quoted\"\n", b"bytes", 2**60, True, None, frozenset({1})]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_compiled_output_dict_keys_come_back_as_themselves(key):
    f = tp.compile(lambda x: {key: x * 2.0, "other": x + 1.0})
    for _ in range(2):                       # capture, then the cached graph
        out = f(tp.ones(2))
        (k, v), (k2, v2) = out.items()
        assert k is key                      # the very object (NaN is only equal to itself)
        assert v.tolist() == [2.0, 2.0] and k2 == "other" and v2.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("value", [Level.HIGH, CodeRepr(), Color.RED, 2**70, 1.5])
def test_compiled_constant_outputs_and_scalar_arguments(value):
    f = tp.compile(lambda x: (x * 1.0, value))
    y, v = f(tp.ones(1))
    assert v is value
    g = tp.compile(lambda x: x * Level.HIGH)
    assert g(tp.ones(2)).tolist() == [3.0, 3.0]


def test_namedtuple_output_keeps_its_type():
    Pair = collections.namedtuple("Pair", "a b")
    f = tp.compile(lambda x: Pair(x + 1.0, x * 3.0))
    out = f(tp.ones(1))
    assert type(out) is Pair and out.a.tolist() == [2.0] and out.b.tolist() == [3.0]


def test_keyword_only_arguments_named_like_keywords_inside_compile():
    op = library.define("tc_codegen::kw(Tensor x, *, float class=2.0, float lambda=1.0) -> Tensor")
    op.register_kernel(None, lambda x, **kw: x * kw["class"] + kw["lambda"])
    op.register_fake(lambda x, **kw: x.new_empty(x.shape))
    f = tp.compile(lambda x: op(x, **{"class": 3.0}))
    assert f(tp.ones(2)).tolist() == [4.0, 4.0]
    assert "class" not in f._last.source.replace("__", "")  # passed as a bound name


@custom_op("tc_codegen::dflt", mutates_args=())
def dflt(x: tp.Tensor, tag: str = _CODE, scale: float = float("nan")) -> tp.Tensor:
    return x * 0.0 + float(len(tag))


def test_dispatch_defaults_are_values_not_source():
    assert dflt(tp.ones(1)).tolist() == [float(len(_CODE))]
    w = tp.ones(1, requires_grad=True)
    assert dflt(w).tolist() == [float(len(_CODE))]     # the autograd entry too
    assert _CODE not in type(dflt)._call_source


def test_string_default_with_quotes_and_newlines_through_define():
    op = library.define('tc_codegen::s(Tensor x, str s="a\\"b\\n\') + 1 #") -> Tensor')
    op.register_kernel(None, lambda x, s: x * 0.0 + len(s))
    assert op(tp.ones(1)).tolist() == [float(len('a"b\n\') + 1 #'))]


class _FakeCupy:
    """Stands in for CuPy: records the C source a fused kernel would compile; the "kernel" returns
    the arguments it is called with."""

    __name__ = "cupy"

    def __init__(self):
        self.sources = []

    def dtype(self, name):
        import numpy
        return numpy.dtype(name)

    def ElementwiseKernel(self, in_params, out_params, body, name, **kw):  # noqa: N802 - CuPy's name
        self.sources.append((in_params, body))
        return lambda *a: a


class _Float(float):
    def __repr__(self):
        return _CODE


def _cuda_fuse(const):
    """The cuda plugin's CuPy fuser (the backend side of compile's fusion protocol) on a one-step
    chain ``in0 * const``, with a stand-in CuPy."""
    from tensorplay.backends import ElementwiseExpr, Step
    from tensorplay_cuda.cupy_fusion import cupy_fuser
    cp = _FakeCupy()
    backend = type("B", (), {"np": cp, "kernels": lambda self: {}})()
    expr = ElementwiseExpr(1, (Step("mul", (("in", 0), ("const", const))),),
                           (0,), (tp.float32,), tp.device("cpu"))
    return cp, cupy_fuser(expr, backend)


@pytest.mark.parametrize("const, fused", [(2.5, True), (_Float(2.5), True), (Level.HIGH, True),
                                          (float("nan"), False), (True, False)])
def test_cuda_fuser_passes_constants_as_kernel_arguments_never_as_source(const, fused):
    import numpy
    cp, fn = _cuda_fuse(const)
    assert (fn is not None) == fused
    if fused:
        assert cp.sources == [("T in0, T c0",
                               "T t0 = in0 * c0;\nout0 = t0;")]
        x = numpy.ones(2, dtype=numpy.float32)
        got = fn([x])                                # the stand-in kernel returns its arguments
        assert got[0] is x and got[1] == numpy.float32(float(const))
        assert type(got[1]) is numpy.float32


def test_cuda_fuser_declines_an_int_too_large_for_a_float():
    cp, fn = _cuda_fuse(10**400)
    assert fn is None and cp.sources == []
