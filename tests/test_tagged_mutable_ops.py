"""Tagged mutable custom ops (PyTorch 2.13): ``Tag.inplace`` and ``Tag.out``.

torch 2.13's rules (docs.pytorch.org/docs/main/library.html, "Choosing the kind of custom op";
tutorial python_custom_ops_mutable): a ``Tag.inplace`` op mutates its first positional Tensor
argument, only it, and returns that very tensor; its schema is ``(Tensor(a!) x, ...) ->
Tensor(a!)``. A ``Tag.out`` op writes keyword-only ``out=`` Tensors and returns them in
declaration order: ``(Tensor x, *, Tensor(a!) out) -> Tensor(a!)``. Both get a fake kernel from
their tag and schema (no ``register_fake`` needed); ``Tag.out`` ops refuse autograd, as torch's
built-in ``out=`` ops do. The kernels below write with ``copy_`` (not ``Tensor.sin_`` nor
``tp.sin(out=)``, a separate gap).
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import Tag, Tensor, library
from tensorplay.testing import drop_ops


@pytest.fixture
def ns(cpu):
    name = "tagmut"
    yield name
    drop_ops(name)


def _sin_(ns, name="sin_"):
    @library.custom_op(f"{ns}::{name}", mutates_args={"x"}, tags=tp.Tag.inplace)
    def sin_(x: Tensor) -> Tensor:
        x.copy_(x.sin())
        return x
    return sin_


def _sin_out(ns, name="sin_out"):
    @library.custom_op(f"{ns}::{name}", mutates_args={"out"}, tags=tp.Tag.out)
    def sin_out(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x.sin())
        return out
    return sin_out


# ---------------------------------------------------------------------------------------------
# from review 41 (tests/test_review41.py, commit e2441fe)

def test_tagged_in_place_op_returning_its_argument_passes_opcheck(ns):
    """The mechanism of the test above without the missing tensor methods: a ``Tag.inplace``
    op that writes its first argument and returns it (torch 2.13's tagged in-place custom op)
    fails opcheck's test_schema ("output 0 is input 'x': outputs of a custom op must not alias
    its inputs") although eager calls work."""
    @library.custom_op(f"{ns}::sin_", mutates_args={"x"}, tags=tp.Tag.inplace)
    def sin_(x: Tensor) -> Tensor:
        x.copy_(x.sin())
        return x

    x = tp.randn(3)
    expected = x.sin()
    assert sin_(x) is x and tp.allclose(x, expected)
    assert library.opcheck(sin_, (tp.randn(3),)) == {}


def test_tagged_out_op_returning_its_out_argument_passes_opcheck(ns):
    sin_out = _sin_out(ns)
    x = tp.randn(5)
    out = tp.empty_like(x)
    assert sin_out(x, out=out) is out
    tp.testing.assert_close(out, x.sin())
    assert library.opcheck(sin_out, (tp.randn(3),), {"out": tp.empty(3)}) == {}
    assert library.opcheck(sin_out, (tp.randn(2, 3).t(),), {"out": tp.empty(3, 2)}) == {}


# ---------------------------------------------------------------------------------------------
# schemas

def test_inferred_schemas_declare_the_returned_alias(ns):
    assert str(_sin_(ns).schema) == f"{ns}::sin_(Tensor(a!) x) -> Tensor(a!)"
    assert str(_sin_out(ns).schema) == f"{ns}::sin_out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"

    @library.custom_op(f"{ns}::add_", mutates_args={"x"}, tags=[Tag.inplace])
    def add_(x: Tensor, y: Tensor, alpha: float = 1.0) -> Tensor:
        x.copy_(x + y * alpha)
        return x
    assert add_.schema.signature_str() == \
        "(Tensor(a!) x, Tensor y, float alpha=1.0) -> Tensor(a!)"

    @library.custom_op(f"{ns}::two_out", mutates_args=("o1", "o2"), tags=Tag.out)
    def two_out(x: Tensor, *, o1: Tensor, o2: Tensor) -> tuple[Tensor, Tensor]:
        o1.copy_(x.sin())
        o2.copy_(x.cos())
        return o1, o2
    assert two_out.schema.signature_str() == \
        "(Tensor x, *, Tensor(a!) o1, Tensor(b!) o2) -> (Tensor(a!), Tensor(b!))"
    x, o1, o2 = tp.randn(4), tp.empty(4), tp.empty(4)
    r = two_out(x, o1=o1, o2=o2)
    assert r[0] is o1 and r[1] is o2
    assert library.opcheck(two_out, (x,), {"o1": o1, "o2": o2}) == {}


def test_infer_schema_takes_tags(ns):
    def f(x: Tensor, y: Tensor) -> Tensor: ...

    def g(x: Tensor, *, out: Tensor) -> Tensor: ...
    assert library.infer_schema(f, mutates_args={"x"}, tags=Tag.inplace) == \
        "(Tensor(a!) x, Tensor y) -> Tensor(a!)"
    assert library.infer_schema(g, mutates_args={"out"}, tags=(Tag.out,), op_name="foo") == \
        "foo(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"
    # without the tag: the plain (non-aliasing) return, as before
    assert library.infer_schema(f, mutates_args={"x"}) == "(Tensor(a!) x, Tensor y) -> Tensor"


def test_explicit_schema_and_define(ns):
    @library.custom_op(f"{ns}::sin_", mutates_args={"x"}, tags=Tag.inplace,
                       schema="(Tensor(a!) x) -> Tensor(a!)")
    def sin_(x):
        x.copy_(x.sin())
        return x
    x = tp.randn(3)
    assert sin_(x) is x
    assert library.opcheck(sin_, (tp.randn(3),)) == {}

    op = library.define(f"{ns}::neg_out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
                        tags=Tag.out)

    @library.impl(op, "cpu")
    def _(x, *, out):
        out.native[...] = -x.native     # writes through the array: needs no fake
        return out
    x, out = tp.randn(3), tp.empty(3)
    assert op(x, out=out) is out
    tp.testing.assert_close(out, -x)
    assert library.opcheck(op, (tp.randn(3),), {"out": tp.empty(3)}) == {}


@pytest.mark.parametrize("case", [
    "inplace_first_not_mutated", "inplace_other_mutated", "inplace_first_not_tensor",
    "inplace_returns_none", "inplace_returns_two", "out_positional", "out_no_mutation",
    "out_returns_none", "out_optional", "both_tags"])
def test_tagged_schemas_torch_refuses_are_refused(ns, case):
    name = f"{ns}::bad"
    with pytest.raises(ValueError) as ei:
        if case == "inplace_first_not_mutated":
            @library.custom_op(name, mutates_args={"y"}, tags=Tag.inplace)
            def f(x: Tensor, y: Tensor) -> Tensor: ...
        elif case == "inplace_other_mutated":
            @library.custom_op(name, mutates_args={"x", "y"}, tags=Tag.inplace)
            def f(x: Tensor, y: Tensor) -> Tensor: ...
        elif case == "inplace_first_not_tensor":
            @library.custom_op(name, mutates_args={"xs"}, tags=Tag.inplace)
            def f(xs: list[Tensor]) -> Tensor: ...
        elif case == "inplace_returns_none":
            @library.custom_op(name, mutates_args={"x"}, tags=Tag.inplace)
            def f(x: Tensor) -> None: ...
        elif case == "inplace_returns_two":
            @library.custom_op(name, mutates_args={"x"}, tags=Tag.inplace)
            def f(x: Tensor) -> tuple[Tensor, Tensor]: ...
        elif case == "out_positional":
            @library.custom_op(name, mutates_args={"out"}, tags=Tag.out)
            def f(x: Tensor, out: Tensor) -> Tensor: ...
        elif case == "out_no_mutation":
            @library.custom_op(name, mutates_args=(), tags=Tag.out)
            def f(x: Tensor) -> Tensor: ...
        elif case == "out_returns_none":
            @library.custom_op(name, mutates_args={"out"}, tags=Tag.out)
            def f(x: Tensor, *, out: Tensor) -> None: ...
        elif case == "out_optional":
            @library.custom_op(name, mutates_args={"out"}, tags=Tag.out)
            def f(x: Tensor, *, out: Tensor | None = None) -> Tensor: ...
        else:
            @library.custom_op(name, mutates_args={"x"}, tags=(Tag.inplace, Tag.out))
            def f(x: Tensor) -> Tensor: ...
    msg = str(ei.value)
    assert name in msg and ("Tag.inplace" in msg or "Tag.out" in msg)
    arg = {"inplace_first_not_mutated": "'x'", "inplace_other_mutated": "'y'",
           "inplace_first_not_tensor": "'xs'", "out_positional": "'out'",
           "out_optional": "'out'"}.get(case)
    if arg:
        assert arg in msg
    with pytest.raises(LookupError):
        library.get_kernel(name, "default")     # nothing was registered


@pytest.mark.parametrize("schema,mutates", [
    ("(Tensor(a!) x) -> Tensor", ("x",)),         # the return does not declare the alias
    ("(Tensor(a!) x) -> Tensor(a)", ("x",)),      # a read-only alias of a written argument
    ("(Tensor(a!) x, Tensor(b!) y) -> Tensor(b!)", ("x", "y")),
])
def test_given_inplace_schema_is_validated(ns, schema, mutates):
    with pytest.raises(ValueError, match=rf"{ns}::bad.*Tag\.inplace"):
        library.define(f"{ns}::bad", schema, tags=Tag.inplace)
    with pytest.raises(ValueError, match=rf"{ns}::bad.*Tag\.inplace"):
        library.custom_op(f"{ns}::bad", lambda x, y=None: x, mutates_args=mutates,
                          tags=Tag.inplace, schema=schema)


def test_given_out_schema_is_validated(ns):
    with pytest.raises(ValueError, match=rf"{ns}::bad.*Tag\.out.*'o2'"):
        library.define(f"{ns}::bad(Tensor x, *, Tensor(a!) o1, Tensor(b!) o2) -> "
                       f"(Tensor(b!), Tensor(a!))", tags=Tag.out)


# ---------------------------------------------------------------------------------------------
# eager

def test_eager_returns_the_argument_and_bumps_its_version_once(ns):
    sin_, sin_out = _sin_(ns), _sin_out(ns)
    x = tp.randn(4)
    v = x._version
    assert sin_(x) is x and x._version == v + 1
    out = tp.empty(4)
    v = out._version
    assert sin_out(x, out=out) is out and out._version == v + 1
    # a view is written through: the base sees it
    base = tp.zeros(2, 3)
    row = base[1]
    assert sin_(row) is row
    assert base._version == row._version


def test_kernel_returning_another_tensor_is_refused(ns):
    @library.custom_op(f"{ns}::bad_", mutates_args={"x"}, tags=Tag.inplace)
    def bad_(x: Tensor) -> Tensor:
        x.copy_(x.sin())
        return x.clone()
    with pytest.raises(RuntimeError, match=rf"{ns}::bad_.*Tag\.inplace.*'x'"):
        bad_(tp.randn(3))
    failures = library.opcheck(bad_, (tp.randn(3),), raise_exception=False,
                               test_utils="test_schema")
    assert "test_schema" in failures

    @library.custom_op(f"{ns}::bad_out", mutates_args={"out"}, tags=Tag.out)
    def bad_out(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x.sin())
        return out[:]           # a view of out, not out: torch refuses it
    with pytest.raises(RuntimeError, match=rf"{ns}::bad_out.*Tag\.out.*'out'"):
        bad_out(tp.randn(3), out=tp.empty(3))


def test_opcheck_still_catches_an_undeclared_alias(ns):
    """A tagged op whose output is another input than the declared one, and an untagged op
    returning its mutated argument, still fail test_schema."""
    @library.custom_op(f"{ns}::untagged", mutates_args={"x"})
    def untagged(x: Tensor) -> Tensor:
        x.copy_(x.sin())
        return x
    f = library.opcheck(untagged, (tp.randn(3),), raise_exception=False,
                        test_utils="test_schema")
    assert "must not alias" in f["test_schema"]


# ---------------------------------------------------------------------------------------------
# fake and compile

def test_numpy_kernels_need_no_fake(ns):
    """Only returns that are the mutated arguments: the fake comes from tag and schema (torch:
    'In-place and out= custom ops get an autogenerated fake kernel')."""
    @library.custom_op(f"{ns}::np_sin_", mutates_args={"x"}, tags=Tag.inplace)
    def np_sin_(x: Tensor) -> Tensor:
        a = x.numpy()
        np.sin(a, out=a)
        return x

    @library.custom_op(f"{ns}::np_sin_out", mutates_args={"out"}, tags=Tag.out)
    def np_sin_out(x: Tensor, *, out: Tensor) -> Tensor:
        np.sin(x.detach().numpy(), out=out.numpy())
        return out

    with tp.fake.FakeTensorMode():
        fx = tp.empty(2, 3)
        assert np_sin_(fx) is fx
        fo = tp.empty(2, 3)
        assert np_sin_out(fx, out=fo) is fo
    m = tp.empty(3, device="meta")
    assert np_sin_(m) is m
    x = tp.randn(3)
    assert library.opcheck(np_sin_, (x,)) == {}
    assert library.opcheck(np_sin_out, (x,), {"out": tp.empty(3)}) == {}


def test_compile_capture_replay_and_second_shape(ns):
    sin_, sin_out = _sin_(ns), _sin_out(ns)

    def f(x):
        y = x * 2
        r = sin_(y)
        o = tp.empty_like(x)
        s = sin_out(r, out=o)
        return r + 1, s, r is y, s is o

    cf = tp.compile(f)
    for shape in [(3,), (3,), (5, 2)]:
        x = tp.randn(*shape)
        got, want = cf(x), f(x)
        tp.testing.assert_close(got[0], want[0])
        tp.testing.assert_close(got[1], want[1])
        assert got[2] is True and got[3] is True

    def g(x):
        return sin_(x)

    cg = tp.compile(g)
    for shape in [(4,), (6,)]:
        x = tp.randn(*shape)
        want = x.sin()
        r = cg(x)
        tp.testing.assert_close(x, want)    # the caller's tensor was written
        tp.testing.assert_close(r, want)


# ---------------------------------------------------------------------------------------------
# autograd

def test_out_op_refuses_autograd_as_torch_out_ops(ns):
    sin_out = _sin_out(ns)
    x = tp.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        sin_out(x, out=tp.empty(3))
    with tp.no_grad():
        out = tp.empty(3)
        assert sin_out(x, out=out) is out
    with pytest.raises(RuntimeError):
        sin_out.register_autograd(lambda ctx, g: g)


def test_inplace_op_under_autograd_keeps_the_mutating_op_rule(ns):
    """As every mutating custom op (tests/test_custom_op_mutation_autograd.py): a non-leaf
    written with tensorplay ops gets the write's history; a leaf requiring grad is written
    without error and stays a leaf."""
    @library.custom_op(f"{ns}::add_", mutates_args={"x"}, tags=Tag.inplace)
    def add_(x: Tensor, y: Tensor) -> Tensor:
        x.copy_(x + y)
        return x

    a = tp.randn(3, requires_grad=True)
    y = tp.randn(3, requires_grad=True)
    h = a * 2
    r = add_(h, y)
    assert r is h
    r.sum().backward()
    tp.testing.assert_close(a.grad, tp.full((3,), 2.0))
    tp.testing.assert_close(y.grad, tp.ones(3))

    leaf = tp.randn(3, requires_grad=True)
    v = leaf._version
    assert add_(leaf, tp.ones(3)) is leaf
    assert leaf.is_leaf and leaf._version == v + 1


def test_a_registered_fake_still_overrides_the_generated_one(ns):
    """torch allows register_fake on tagged ops (it overrides the generated fake)."""
    sin_ = _sin_(ns)
    seen = []

    @sin_.register_fake
    def _(x):
        seen.append(tuple(x.shape))
        return x
    with tp.fake.FakeTensorMode():
        fx = tp.empty(2)
        assert sin_(fx) is fx
    assert seen == [(2,)]
    assert library.opcheck(sin_, (tp.randn(3),)) == {}
