"""Fuzzing the schema language end to end: every schema the parser accepts can be defined as an
op and called; the parser raises only ``SchemaError``, in time linear in the text.

The schema strategies are those of ``test_schema`` (every base type, list/optional shapes, alias
annotations, defaults of every kind, keyword-only arguments, names that are Python keywords);
here each accepted schema is also given to ``tensorplay.library.define`` and the op is called
with arguments of the declared types (defaults left out at random), and the kernel must receive
exactly the schema's arguments.

``TENSORPLAY_FUZZ_EXAMPLES`` raises the number of examples for a long local run.
"""

from __future__ import annotations

import itertools
import keyword
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorplay as tp
from tensorplay import library
# _type_info / FunctionSchema: the private schema module's own units (the grammar itself), fuzzed
# here; the public side (library.define/custom_op/infer_schema) is fuzzed beside them
from tensorplay._schema import FunctionSchema, _type_info
from tensorplay.errors import SchemaError

from test_schema import canonical_schemas  # the grammar's strategies (same test suite)

pytestmark = pytest.mark.usefixtures("cpu")

_N = int(os.environ.get("TENSORPLAY_FUZZ_EXAMPLES", "120"))
_SETTINGS = settings(max_examples=_N, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_COUNTER = itertools.count()
_RETURNS = ["()", "Tensor", "Tensor[]", "(Tensor, Tensor)", "SymInt", "float", "(Tensor a, bool b)"]


def _value(type_text: str, draw):
    """A call value of schema type ``type_text`` (a list of the declared size for lists)."""
    info = _type_info(type_text)
    t = tp.ones(2)
    one = {"Tensor": t, "SymInt": 3, "int": 3, "float": 1.5, "bool": True, "str": "s",
           "Scalar": 2, "ScalarType": tp.float32, "Device": "cpu", "Layout": "strided",
           "MemoryFormat": "contiguous_format"}[info.base]
    if info.is_list:
        if info.list_optional and draw(st.booleans()):
            return None
        n = info.size if info.size is not None else draw(st.integers(0, 2))
        return [None if info.elem_optional and draw(st.booleans()) else one for _ in range(n)]
    if info.elem_optional and draw(st.booleans()):
        return None
    return one


def _output(type_text: str):
    info = _type_info(type_text)
    one = {"Tensor": tp.zeros(1), "SymInt": 7, "float": 0.5, "bool": False}[info.base]
    return [one] if info.is_list else one


@_SETTINGS
@given(canonical_schemas(), st.sampled_from(_RETURNS), st.data())
def test_every_accepted_schema_is_definable_and_callable(text, returns, data):
    parsed = FunctionSchema.parse(text)
    rets = FunctionSchema.parse(f"() -> {returns}")
    name = f"tpfuzz::op{next(_COUNTER)}"
    sch = FunctionSchema(name, "", parsed.arguments, rets.returns, rets.returns_tuple)
    op = library.define(str(sch))           # must not raise: the schema was accepted
    seen = []

    def kernel(*args, **kwargs):
        seen.append((args, kwargs))
        outs = [_output(r.type) for r in sch.returns]
        if not sch.returns:
            return None
        return outs[0] if not sch.returns_tuple else tuple(outs)

    op.register_kernel(None, kernel)
    args, kwargs, expect = [], {}, []
    omitted = False
    for a in sch.arguments:
        # a positional argument after an omitted one has to go by keyword
        leave_out = a.has_default and data.draw(st.booleans())
        v = a.default if leave_out else _value(a.type, data.draw)
        expect.append(v)
        if leave_out:
            omitted = omitted or not a.kwarg_only
            continue
        if a.kwarg_only:
            kwargs[a.name] = v           # by the schema's name, as torch: **{"from": v}
        elif omitted:
            py = a.name + "_" if keyword.iskeyword(a.name) or a.name.startswith("__") else a.name
            if py != a.name:
                # renamed positional parameter after an omitted default: pass all positionally
                args, kwargs, expect = None, None, None
                break
            kwargs[a.name] = v
        else:
            args.append(v)
    if args is None:
        return
    out = op(*args, **kwargs)
    assert len(seen) == 1
    got_args, got_kwargs = seen[0]
    positional = [a for a in sch.arguments if not a.kwarg_only]
    assert len(got_args) == len(positional)
    assert sorted(got_kwargs) == sorted(a.name for a in sch.arguments if a.kwarg_only)
    got = list(got_args) + [got_kwargs[a.name] for a in sch.arguments if a.kwarg_only]
    for a, g, e in zip(sch.arguments, got, expect):
        if isinstance(e, (list, tuple)):
            assert list(g) == list(e) or all(x is y for x, y in zip(g, e)), a.name
        elif isinstance(e, float) and e != e:
            assert g != g, a.name
        else:
            assert g is e or g == e, a.name
    if not sch.returns:
        assert out is None


_GARBAGE = st.one_of(
    st.text(max_size=60),
    st.text(st.sampled_from(list("()[]?!*,=->: Tensor int float x a 0 1 \" \\ . e + nan inf")),
            max_size=80))


@_SETTINGS
@given(_GARBAGE)
def test_garbage_raises_only_schema_error(text):
    try:
        s = FunctionSchema.parse(text)
    except SchemaError:
        return
    assert FunctionSchema.parse(str(s)) == s


@pytest.mark.parametrize("text", [
    "(int x=" + "1" * 5000 + ") -> ()",          # over Python's int-string limit
    "(float x=" + "9" * 400 + ") -> ()",         # too large for a float
    "(float[] x=[1, " + "9" * 400 + "]) -> ()",
    "(SymInt[] x=[" + "1" * 4400 + "]) -> ()",
])
def test_numeric_literals_out_of_range_raise_schema_error(text):
    with pytest.raises(SchemaError):
        FunctionSchema.parse(text)


def test_parse_time_is_linear_in_the_argument_count():
    # the process's CPU time, best of three, and only a ratio (8x the arguments: 8x linear, 64x
    # quadratic): no wall-clock threshold, which a loaded machine can break
    def cost(n):
        text = "ns::f(" + ", ".join(f"Tensor a{i}" for i in range(n)) + ") -> Tensor"
        t0 = time.process_time()
        s = FunctionSchema.parse(text)
        assert len(s.arguments) == n
        return time.process_time() - t0
    cost(100)
    small, big = min(cost(1500) for _ in range(3)), min(cost(12000) for _ in range(3))
    assert big < 8 * small * 3, f"1,500 args: {small:.3f} s, 12,000 args: {big:.3f} s (quadratic?)"


# ------------------------------------------------------------------ schemas Python finds awkward

def test_default_before_a_required_argument_is_definable_and_callable():
    # accepted by torch's parser; the op takes y positionally after x, or by keyword
    op = library.define("tc_fuzz::gap(Tensor? x=None, Tensor y, SymInt n=2, float s) -> Tensor")
    op.register_kernel(None, lambda x, y, n, s: (y if x is None else x + y) * n * s)
    y = tp.ones(2)
    assert op(None, y, 2, 1.0).tolist() == [2.0, 2.0]
    assert op(y=y, s=0.5).tolist() == [1.0, 1.0]
    assert op(y, y, 1, 1.0).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match=r"tc_fuzz::gap\(\) missing 1 required argument: 'y'"):
        op(s=1.0)
    with pytest.raises(TypeError, match=r"missing 1 required argument: 's'"):
        op(y=y)
    w = tp.ones(2, requires_grad=True)              # through the autograd entry
    op.register_autograd(lambda ctx, g: (None, g * 2.0, None, None))
    op(y=w, s=1.0).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_renamed_parameters_never_collide():
    op = library.define("tc_fuzz::ren(Tensor from, Tensor from_, Tensor __x, Tensor __x_) -> Tensor")
    op.register_kernel(None, lambda a, b, c, d: a + 2 * b + 4 * c + 8 * d)
    one = tp.ones(1)
    assert op(one, one * 0, one * 0, one * 0).tolist() == [1.0]
    assert op(one * 0, one, one * 0, one * 0).tolist() == [2.0]
    assert op(one * 0, one * 0, one * 0, one).tolist() == [8.0]
    w = tp.ones(1, requires_grad=True)
    op.register_autograd(lambda ctx, g: (g, g * 2, g * 4, g * 8))
    op(one, w, one, one).backward()
    assert w.grad.tolist() == [2.0]


def test_keyword_only_python_keywords_are_passed_by_their_schema_name():
    op = library.define("tc_fuzz::cls(Tensor x, *, SymInt class, float lambda=1.0) -> Tensor")
    op.register_kernel(None, lambda x, **kw: x * kw["class"] + kw["lambda"])
    x = tp.ones(1)
    assert op(x, **{"class": 3}).tolist() == [4.0]            # as in torch
    assert op(x, **{"class": 3, "lambda": 0.0}).tolist() == [3.0]
    assert op(x, class_=2).tolist() == [3.0]                  # the Python-safe spelling too
    with pytest.raises(TypeError, match=r"missing 1 required argument: 'class'"):
        op(x)
    with pytest.raises(TypeError, match=r"multiple values for argument 'class'"):
        op(x, class_=1, **{"class": 2})
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'klass'"):
        op(x, **{"class": 1, "klass": 2})
    w = tp.ones(1, requires_grad=True)
    op.register_autograd(lambda ctx, g: (g * 5.0, None, None))
    op(w, **{"class": 5}).backward()
    assert w.grad.tolist() == [5.0]
