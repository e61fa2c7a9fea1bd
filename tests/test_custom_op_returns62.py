"""A custom op's result is checked against its schema's returns at the call (as torch does).

torch 2.13 converts a custom op's result to its schema's return types when the kernel returns,
so a kernel that forgot an output (``-> tuple[Tensor, Tensor]`` returning one tensor), returns a
number where a Tensor is declared, or returns a tensor from ``-> None`` raises at the call
(``TypeError`` for a non-sequence where several outputs are declared, ``RuntimeError``
otherwise); the same holds for ``register_fake``'s result under ``torch.compile``. TensorPlay
used to hand back whatever the kernel returned: ``a, b = pair(x)`` split the rows of a 2x2
result, and ``compile(lambda t: pair(t)[1])`` returned row 1.

The check is structural (a class test and a length: Tensor, Tensor-or-None, a list, a tuple of
the declared length, None for ``-> ()``); aliasing and mutation stay trusted at the call (the
contract: eager execution trusts ``mutates_args``), and ``opcheck`` reports them.

Also here: ``tensorplay.library.impl(lib, "op", "CPU")``, torch's older form of ``impl`` (a
``Library`` first, a dispatch key last; a decorator), which torch 2.13 still accepts.
"""

from __future__ import annotations

import collections
import itertools
import re

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay import Tensor
from tensorplay.fake import FakeTensorMode
from tensorplay.testing import drop_ops

_count = itertools.count()


@pytest.fixture
def ns(cpu):
    prefix = f"ret62n{next(_count)}"
    yield prefix
    drop_ops(prefix)


def _both(exc_info):
    """The error is a RuntimeError and a TypeError: torch raises either, depending on the case."""
    assert isinstance(exc_info.value, RuntimeError)
    assert isinstance(exc_info.value, TypeError)


# ---------------------------------------------------------------------------------------------
# the reported cases

def test_tuple_declared_one_tensor_returned_raises(ns):
    @lib.custom_op(f"{ns}::pair", mutates_args=())
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x.clone()             # forgot the second output

    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError) as e:
        pair(x)
    _both(e)
    msg = str(e.value)
    assert f"{ns}::pair" in msg                      # the op
    assert "(Tensor, Tensor)" in msg                 # the schema's returns
    assert "Tensor of shape (2, 2)" in msg           # what the kernel returned
    assert "tuple of 2" in msg                       # the fix
    with pytest.raises(TypeError):
        a, b = pair(x)                                # no longer splits the rows


def test_tensor_declared_number_returned_raises(ns):
    @lib.custom_op(f"{ns}::notensor", mutates_args=())
    def notensor(x: Tensor) -> Tensor:
        return 3.0

    with pytest.raises(RuntimeError) as e:
        notensor(tp.ones(2))
    assert "float" in str(e.value) and "-> Tensor" in str(e.value)
    assert f"{ns}::notensor" in str(e.value)


def test_none_declared_tensor_returned_raises(ns):
    @lib.custom_op(f"{ns}::nothing", mutates_args=())
    def nothing(x: Tensor) -> None:
        return x.clone()

    with pytest.raises(RuntimeError) as e:
        nothing(tp.ones(2))
    assert "-> ()" in str(e.value) and "return None" in str(e.value)


def test_compiled_call_raises(ns):
    @lib.custom_op(f"{ns}::pair", mutates_args=())
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x.clone()

    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    f = tp.compile(lambda t: pair(t)[1])
    with pytest.raises(RuntimeError) as e:
        f(x)
    assert f"{ns}::pair" in str(e.value) and "(Tensor, Tensor)" in str(e.value)


# ---------------------------------------------------------------------------------------------
# every return kind: what fails, what passes (and passes unchanged)

T2 = "tuple[Tensor, Tensor]"
BAD = [
    ("Tensor", lambda x: 3.0),
    ("Tensor", lambda x: (x.clone(),)),
    ("Tensor", lambda x: [x.clone()]),
    ("Tensor", lambda x: x.numpy()),
    ("Optional[Tensor]", lambda x: 3.0),
    ("list[Tensor]", lambda x: x.clone()),
    ("list[Tensor]", lambda x: None),
    ("None", lambda x: x.clone()),
    ("None", lambda x: ()),
    (T2, lambda x: x.clone()),
    (T2, lambda x: (x.clone(),)),
    (T2, lambda x: (x.clone(), x + 1, x + 2)),
    (T2, lambda x: None),
    ("tuple[Tensor, Tensor, Tensor]", lambda x: [x.clone(), x + 1]),
]


def _define(ns, name, ann, body, **kw):
    g = {"Tensor": Tensor, "Optional": __import__("typing").Optional, "body": body}
    exec(f"def {name}(x: Tensor) -> {ann}:\n    return body(x)\n", g)
    return lib.custom_op(f"{ns}::{name}", g[name], mutates_args=(), **kw)


@pytest.mark.parametrize("ann,body", BAD)
def test_bad_results_raise(ns, ann, body):
    op = _define(ns, "bad", ann, body)
    x = tp.ones(2)
    with pytest.raises(RuntimeError) as e:
        op(x)
    _both(e)
    with tp.no_grad(), pytest.raises(RuntimeError):
        op(x)
    # through autograd (an input that requires grad) too
    with pytest.raises(RuntimeError) as e:
        op(tp.ones(2, requires_grad=True))
    assert f"{ns}::bad" in str(e.value)


NT = collections.namedtuple("NT", "a b")
GOOD = [
    ("Tensor", lambda x: x + 1),
    ("Tensor", lambda x: None),                   # torch: an undefined tensor, returned as None
    ("Optional[Tensor]", lambda x: None),
    ("Optional[Tensor]", lambda x: x + 1),
    ("list[Tensor]", lambda x: [x + 1, x + 2]),
    ("list[Tensor]", lambda x: []),
    ("list[Tensor]", lambda x: (x + 1,)),         # torch takes a tuple for a list
    ("None", lambda x: None),
    (T2, lambda x: (x + 1, x + 2)),
    (T2, lambda x: [x + 1, x + 2]),               # torch takes a list for a tuple
    (T2, lambda x: NT(x + 1, x + 2)),
    (T2, lambda x: (x + 1, None)),
    ("tuple[Tensor, int]", lambda x: (x + 1, 3)),
    ("int", lambda x: 3),
]


@pytest.mark.parametrize("ann,body", GOOD)
def test_good_results_pass_unchanged(ns, ann, body):
    op = _define(ns, "good", ann, body)
    x = tp.ones(2)
    r = op(x)
    expected = body(x)
    assert type(r) is type(expected)
    if isinstance(expected, Tensor):
        assert r.tolist() == expected.tolist()
    elif isinstance(expected, (tuple, list)):
        assert len(r) == len(expected)
        for a, b in zip(r, expected):
            assert type(a) is type(b)
            assert (a.tolist() == b.tolist()) if isinstance(a, Tensor) else a == b
    else:
        assert r == expected


def test_single_parenthesised_return_takes_a_tensor_or_a_one_tuple(ns):
    # "-> (Tensor)" is one output: torch returns the tensor; a 1-tuple (tuple[Tensor]) is
    # what the annotation says
    op = _define(ns, "one", "tuple[Tensor]", lambda x: (x + 1,))
    assert op(tp.ones(2))[0].tolist() == [2.0, 2.0]
    op2 = _define(ns, "one2", "tuple[Tensor]", lambda x: x + 1)
    assert op2(tp.ones(2)).tolist() == [2.0, 2.0]
    op3 = _define(ns, "one3", "tuple[Tensor]", lambda x: (x + 1, x + 2))
    with pytest.raises(RuntimeError):
        op3(tp.ones(2))


def test_schema_given_as_text(ns):
    @lib.custom_op(f"{ns}::s", mutates_args=(), schema="(Tensor x) -> (Tensor, Tensor)")
    def s(x):
        return x + 1

    with pytest.raises(RuntimeError) as e:
        s(tp.ones(2))
    assert "(Tensor, Tensor)" in str(e.value)


@pytest.mark.parametrize("ret,good,bad", [
    ("Tensor[]?", [None, []], [3.0]),
    ("Tensor?[]", [[None]], [None]),
    ("Tensor?", [None], [[]]),
])
def test_optional_and_list_schemas(ns, ret, good, bad):
    for i, v in enumerate(good + bad):
        @lib.custom_op(f"{ns}::o{i}", mutates_args=(), schema=f"(Tensor x) -> {ret}")
        def o(x, v=v):
            return v

        if i < len(good):
            assert o(tp.ones(1)) == v
        else:
            with pytest.raises(RuntimeError, match=re.escape(f"-> {ret}")):
                o(tp.ones(1))


def test_library_define_op_checked(ns):
    with lib.Library(ns, "FRAGMENT") as L:
        L.define("two(Tensor x) -> (Tensor, Tensor)")
        L.impl("two", lambda x: x + 1, "CPU")
        with pytest.raises(RuntimeError) as e:
            getattr(tp.ops, ns).two(tp.ones(2))
        assert f"{ns}::two" in str(e.value) and "cpu" in str(e.value)


def test_mutating_op_checked(ns):
    @lib.custom_op(f"{ns}::inc", mutates_args=("x",))
    def inc(x: Tensor) -> None:
        x.add_(1)
        return x                   # declared -> None

    x = tp.zeros(2)
    with pytest.raises(RuntimeError) as e:
        inc(x)
    assert "-> ()" in str(e.value)


def test_register_autograd_op_checked(ns):
    @lib.custom_op(f"{ns}::sq", mutates_args=())
    def sq(x: Tensor) -> tuple[Tensor, Tensor]:
        return x * x

    sq.register_autograd(lambda ctx, g1, g2: g1)
    with pytest.raises(RuntimeError) as e:
        sq(tp.ones(2, 2, requires_grad=True))
    assert "(Tensor, Tensor)" in str(e.value)


# ---------------------------------------------------------------------------------------------
# fake kernels: register_fake's result is checked too

def _pair_with_a_one_output_fake(ns):
    @lib.custom_op(f"{ns}::pair", mutates_args=(), device_types="cpu")
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x + 1, x + 2

    @pair.register_fake
    def _(x):
        return x.new_empty(x.shape)          # forgot the second output

    return pair


def test_fake_kernel_result_checked_under_fake_mode(ns):
    pair = _pair_with_a_one_output_fake(ns)
    x = tp.ones(2, 2)
    assert len(pair(x)) == 2                 # the real kernel is right
    with FakeTensorMode():
        fx = tp.empty(2, 2)
        with pytest.raises(RuntimeError) as e:
            pair(fx)
    assert "fake" in str(e.value) and "(Tensor, Tensor)" in str(e.value)


def test_fake_kernel_result_checked_under_compile(ns):
    pair = _pair_with_a_one_output_fake(ns)
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert pair(x)[1].tolist() == [[3.0, 4.0], [5.0, 6.0]]
    with pytest.raises(RuntimeError) as e:
        tp.compile(lambda t: pair(t)[1])(x)
    assert "fake" in str(e.value) and f"{ns}::pair" in str(e.value)


def test_good_fake_and_compile_unchanged(ns):
    @lib.custom_op(f"{ns}::pair", mutates_args=(), device_types="cpu")
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x + 1, x + 2

    @pair.register_fake
    def _(x):
        return x.new_empty(x.shape), x.new_empty(x.shape)

    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    f = tp.compile(lambda t: pair(t)[1] * 2)
    assert f(x).tolist() == [[6.0, 8.0], [10.0, 12.0]]
    assert f(x + 1).tolist() == [[8.0, 10.0], [12.0, 14.0]]


def test_opcheck_still_reports_the_structure(ns):
    @lib.custom_op(f"{ns}::pair", mutates_args=())
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x.clone()

    res = lib.opcheck(pair, (tp.ones(2, 2),), test_utils=("test_schema",),
                      raise_exception=False)
    assert "(Tensor, Tensor)" in res["test_schema"]


# ---------------------------------------------------------------------------------------------
# aliasing stays trusted at the call (the contract); opcheck reports it

def test_returned_input_not_checked_at_call_but_by_opcheck(ns):
    @lib.custom_op(f"{ns}::aliasy", mutates_args=())
    def aliasy(x: Tensor) -> Tensor:
        return x

    x = tp.randn(3)
    assert aliasy(x) is x
    res = lib.opcheck(aliasy, (x,), test_utils=("test_schema",), raise_exception=False)
    assert "alias" in res["test_schema"]


# ---------------------------------------------------------------------------------------------
# impl(lib, name, dispatch_key): torch's older form

def test_impl_with_library_object(ns):
    L = lib.Library(ns, "DEF")
    try:
        L.define("mul4(Tensor x) -> Tensor")

        @lib.impl(L, "mul4", "CPU")
        def mul4(x):
            return x * 4

        assert mul4(tp.ones(1)).tolist() == [4.0]       # returns the function (torch's wrap)
        assert getattr(tp.ops, ns).mul4(tp.ones(2)).tolist() == [4.0, 4.0]
        assert lib.get_kernel(f"{ns}::mul4", "cpu") is mul4
    finally:
        L.close()
    assert not hasattr(getattr(tp.ops, ns), "mul4")   # undone with the library


def test_impl_with_library_object_default_key(ns):
    with lib.Library(ns, "FRAGMENT") as L:
        L.define("add1(Tensor x) -> Tensor")

        @lib.impl(L, "add1")
        def add1(x):
            return x + 1

        assert getattr(tp.ops, ns).add1(tp.ones(2)).tolist() == [2.0, 2.0]
        assert lib.get_kernel(f"{ns}::add1", "default") is add1


def test_impl_with_library_object_and_function_is_refused(ns):
    with lib.Library(ns, "FRAGMENT") as L:
        L.define("f(Tensor x) -> Tensor")
        with pytest.raises(TypeError, match="decorator"):
            lib.impl(L, "f", lambda x: x)
        with pytest.raises(TypeError):
            lib.impl(L, "f", "CPU", lambda x: x)
        with pytest.raises(TypeError):
            lib.impl(L, "f", "CPU", lib=L)


def test_impl_without_types_still_refused(ns):
    lib.define(f"{ns}::g", "(Tensor x) -> Tensor")
    with pytest.raises(TypeError):
        lib.impl(f"{ns}::g")
