"""The gaps PyTorch's documented custom-op examples found (issue 26, section 3), and their
neighbours: ``tensorplay.testing`` as an attribute, ``from tensorplay.testing import opcheck``,
the implicit fake of a mutating op that returns nothing, ``infer_schema`` with ``{}`` and a bare
``op_name``, ``get_kernel`` of built-in ops with torch's overload names, ``tensorplay.Tag`` on ops,
and ``tensorplay.empty_strided``. The examples themselves are in test_torch_docs_examples.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library
from tensorplay.errors import CompileError, SchemaError


@pytest.fixture(autouse=True)
def _drop():
    yield
    tp.testing.drop_ops("gaps")


# -- tensorplay.testing -------------------------------------------------------------------------

def test_testing_is_an_attribute_imported_lazily():
    code = textwrap.dedent("""
        import json, sys
        import tensorplay
        before = "tensorplay.testing" in sys.modules
        t = tensorplay.testing
        print(json.dumps({"before": before, "after": "tensorplay.testing" in sys.modules,
                          "same": t is sys.modules["tensorplay.testing"],
                          "numpy": "numpy" in sys.modules,
                          "missing": not hasattr(tensorplay, "no_such_name")}))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r == {"before": False, "after": True, "same": True, "numpy": False, "missing": True}


def test_from_testing_import_opcheck_is_the_function():
    from tensorplay.testing import opcheck

    assert callable(opcheck) and opcheck.__name__ == "opcheck"

    @library.custom_op("gaps::twice", mutates_args=())
    def twice(x: tp.Tensor) -> tp.Tensor:
        return x * 2

    assert opcheck(twice, (tp.randn(3),)) == {}


# -- implicit fake of a mutating op returning nothing --------------------------------------------

def _sin_out():
    @library.custom_op("gaps::sin_out", mutates_args={"out"}, device_types="cpu")
    def sin_out(x: tp.Tensor, out: tp.Tensor) -> None:
        np.sin(x.numpy(), out=out.numpy())
    return sin_out


def test_mutating_op_returning_nothing_compiles_without_a_fake():
    sin_out = _sin_out()

    @tp.compile(fullgraph=True)
    def f(x):
        out = tp.empty(3)
        sin_out(x, out)
        return out * 2

    x = tp.randn(3)
    assert tp.allclose(f(x), x.sin() * 2)
    with tp.fake.FakeTensorMode():        # the generated fake: nothing to return, nothing done
        assert sin_out(tp.empty(3), tp.empty(3)) is None


def test_no_implicit_fake_for_an_op_returning_a_tensor_or_mutating_nothing():
    @library.custom_op("gaps::np_sin", mutates_args=(), device_types="cpu")
    def np_sin(x: tp.Tensor) -> tp.Tensor:
        return tp.from_numpy(np.sin(x.numpy()))

    @library.custom_op("gaps::log_it", mutates_args=(), device_types="cpu")
    def log_it(x: tp.Tensor) -> None:     # returns nothing, mutates nothing: suspicious (torch)
        pass

    for op in (np_sin, log_it):
        with pytest.raises(CompileError, match="register_fake"):
            tp.compile(lambda x, op=op: op(x), fullgraph=True)(tp.randn(3))


def test_mutating_op_returning_nothing_without_device_types_needs_no_fake():
    """torch's mutable custom-op example, names changed: ``custom_op`` without
    ``device_types`` (its body serves every device) writing ``out`` through NumPy and returning
    nothing. torch generates the trivial fake for any op that returns nothing and mutates its
    arguments, so opcheck and compile pass with no ``register_fake``; the body, which reads
    data, must not be run as the fake."""
    @library.custom_op("gaps::numpy_sin_out_any", mutates_args={"out"})
    def numpy_sin_out(x: tp.Tensor, out: tp.Tensor) -> None:
        assert x.device == out.device
        np.sin(x.numpy(), out=out.numpy())

    x = tp.randn(3)
    out = tp.empty(3)
    assert tp.testing.opcheck(numpy_sin_out, (x, out)) == {}

    @tp.compile(fullgraph=True)
    def f(x):
        o = tp.empty_like(x)
        numpy_sin_out(x, o)
        return o * 2

    assert tp.allclose(f(x), x.sin() * 2)
    with tp.fake.FakeTensorMode():
        assert numpy_sin_out(tp.empty(3), tp.empty(3)) is None
    numpy_sin_out(x, out)                 # eager still runs the body
    assert tp.allclose(out, x.sin())


def test_registered_fake_wins_over_the_implicit_one():
    sin_out = _sin_out()
    seen = []
    sin_out.register_fake(lambda x, out: seen.append(x.shape))
    with tp.fake.FakeTensorMode():
        sin_out(tp.empty(2), tp.empty(2))
    assert seen == [(2,)]


# -- infer_schema ---------------------------------------------------------------------------------

def test_infer_schema_accepts_empty_dict_and_bare_op_name():
    def f(x: tp.Tensor, n: int) -> tp.Tensor: ...
    assert library.infer_schema(f, mutates_args={}) == "(Tensor x, SymInt n) -> Tensor"
    assert library.infer_schema(f, mutates_args={}, op_name="f") == "f(Tensor x, SymInt n) -> Tensor"
    assert (library.infer_schema(f, mutates_args=(), op_name="ns::f")
            == "ns::f(Tensor x, SymInt n) -> Tensor")
    with pytest.raises(ValueError, match="collection of parameter names"):
        library.infer_schema(f, mutates_args={"x": True})      # a non-empty dict stays ambiguous
    with pytest.raises(SchemaError, match="not an operator name"):
        library.infer_schema(f, mutates_args={}, op_name="f(")

    @library.custom_op("gaps::with_dict", mutates_args={})
    def with_dict(x: tp.Tensor) -> tp.Tensor:
        return x + 1
    assert str(with_dict.schema) == "gaps::with_dict(Tensor x) -> Tensor"


# -- get_kernel with overload names ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["tp::add", "tp::add.Tensor", "tp::add.Scalar", "tp::add.default"])
def test_get_kernel_builtin_with_overload_names(name):
    k = library.get_kernel(name, "cpu")
    x = tp.tensor([1.0, 2.0])
    assert k(x, x).tolist() == [2.0, 4.0]


def test_get_kernel_builtin_sin_and_missing_device():
    k = library.get_kernel("tp::sin", "CPU")
    assert tp.allclose(k(tp.tensor([0.5])), tp.tensor([0.5]).sin())
    with pytest.raises(LookupError, match="no_such_op"):
        library.get_kernel("tp::no_such_op.Tensor", "cpu")


def test_get_kernel_custom_op_overloads():
    @library.custom_op("gaps::inc", mutates_args=(), device_types="cpu")
    def inc(x: tp.Tensor) -> tp.Tensor:
        return x + 1

    assert library.get_kernel("gaps::inc.default", "cpu") is library.get_kernel("gaps::inc", "cpu")
    with pytest.raises(LookupError, match="'gaps::inc' has no overload 'Tensor'; its overloads: "
                                          "default"):
        library.get_kernel("gaps::inc.Tensor", "cpu")


# -- Tag --------------------------------------------------------------------------------------------

def test_tags_on_custom_op_and_define():
    assert tp.Tag.inplace == "inplace" and tp.Tag.out.name == "out"
    for name in ("pointwise", "needs_fixed_stride_order", "nondeterministic_seeded",
                 "pt2_compliant_tag", "core", "inplace_view", "data_dependent_output"):
        assert getattr(tp.Tag, name).value == name

    @library.custom_op("gaps::tagged", mutates_args=(),
                       tags=(tp.Tag.pointwise, tp.Tag.needs_fixed_stride_order))
    def tagged(x: tp.Tensor) -> tp.Tensor:
        return x * 1

    assert tagged.tags == (tp.Tag.pointwise, tp.Tag.needs_fixed_stride_order)
    # Tag.inplace / Tag.out schemas must have their tag's shape (torch 2.13's Library.define
    # checks it; tests/test_tagged_mutable_ops.py)
    library.define("gaps::one_tag(Tensor(a!) x) -> Tensor(a!)", tags=tp.Tag.inplace)
    assert tp.ops.gaps.one_tag.tags == (tp.Tag.inplace,)
    with library.Library("gaps", "FRAGMENT") as lib:
        lib.define("viaLib(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", tags=[tp.Tag.out])
        assert tp.ops.gaps.viaLib.tags == (tp.Tag.out,)
        with pytest.raises(ValueError, match="Tag.out"):
            lib.define("badLib(Tensor x) -> Tensor", tags=[tp.Tag.out])


def test_nondeterministic_tag_enum_is_read_as_the_string():
    @library.custom_op("gaps::noisy", mutates_args=(), tags=tp.Tag.nondeterministic_seeded)
    def noisy(x: tp.Tensor) -> tp.Tensor:
        return x + tp.rand_like(x)

    # opcheck compares a seeded-nondeterministic op by metadata only: passes with the enum member
    assert library.opcheck(noisy, (tp.randn(4),), test_utils=("test_layouts",)) == {}


# -- empty_strided ----------------------------------------------------------------------------------

@pytest.mark.parametrize("size,stride,span", [((2, 3), (3, 1), 6), ((2, 3), (1, 2), 6),
                                              ((2, 3), (4, 1), 7), ((0, 3), (3, 1), 0),
                                              ((), (), 1), ((4,), (0,), 1)])
def test_empty_strided(size, stride, span):
    t = tp.empty_strided(size, stride, dtype=tp.float64)
    assert (t.shape, t.stride(), t.dtype, t.storage_offset()) == (size, stride, tp.float64, 0)
    assert t._base is None and t.is_leaf
    if all(st or n <= 1 for n, st in zip(size, stride)):   # writable: no overlapping elements
        t.fill_(1.5)
        assert t.tolist() == tp.full(size, 1.5, dtype=tp.float64).tolist()
    with tp.fake.FakeTensorMode():
        f = tp.empty_strided(size, stride)
        assert (f.shape, f.stride()) == (size, stride)
    m = tp.empty_strided(size, stride, device="meta")
    assert (m.shape, m.stride(), m.device.type) == (size, stride, "meta")


def test_empty_strided_errors_and_requires_grad():
    assert tp.empty_strided((2,), (1,), requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="same length"):
        tp.empty_strided((2, 3), (1,))
    with pytest.raises(ValueError, match="non-negative"):
        tp.empty_strided((2,), (-1,))
    with pytest.raises(TypeError, match="empty_strided"):
        tp.empty_strided((2.0,), (1,))


# -- data-dependent output sizes: get_ctx().new_dynamic_size() and nonzero ---------------------

def _custom_nonzero():
    @library.custom_op("gaps::nz", mutates_args=())
    def nz(x: tp.Tensor) -> tp.Tensor:
        return tp.tensor(np.stack(np.nonzero(x.numpy(force=True)), axis=1), device=x.device)

    @nz.register_fake
    def _(x):
        nnz = library.get_ctx().new_dynamic_size()
        return x.new_empty([nnz, x.dim()], dtype=tp.int64)
    return nz


@pytest.mark.parametrize("values", [[0, 1, 2, 0, 0, 1], [[0.0, 1.5], [2.0, 0.0]], [0, 0], [],
                                    [[True, False, True]]])
def test_nonzero_matches_numpy(values):
    x = tp.tensor(values)
    ref = np.stack(np.nonzero(np.asarray(values)), axis=1) if np.asarray(values).ndim else None
    out = x.nonzero()
    assert out.dtype == tp.int64 and out.shape == ref.shape and out.is_contiguous()
    assert out.tolist() == ref.tolist()
    cols = tp.nonzero(x, as_tuple=True)
    assert len(cols) == x.ndim and [c.tolist() for c in cols] == [list(r) for r in ref.T]


def test_nonzero_zero_dim_and_no_grad():
    assert tp.tensor(3.0).nonzero().shape == (1, 0)
    assert tp.tensor(0.0).nonzero().shape == (0, 0)
    x = tp.randn(3, requires_grad=True)
    assert not x.nonzero().requires_grad


def test_new_dynamic_size_in_fake_mode_and_its_bounds():
    nz = _custom_nonzero()
    with tp.fake.FakeTensorMode():
        for out in (tp.empty(4, 2).nonzero(), nz(tp.empty(5))):
            assert out.dtype == tp.int64 and len(out.shape) == 2
            assert tp.fake.is_dynamic_size(out.shape[0]) and not tp.fake.is_dynamic_size(out.shape[1])
    ctx = library.get_ctx()
    a, b = ctx.new_dynamic_size(), ctx.new_dynamic_size(min=1, max=10)
    assert a != b and tp.fake.is_dynamic_size(a) and not tp.fake.is_dynamic_size(10)
    with pytest.raises(ValueError, match="min"):
        ctx.new_dynamic_size(min=-1)
    with pytest.raises(ValueError, match="max"):
        ctx.new_dynamic_size(min=3, max=2)


@pytest.mark.parametrize("which", ["custom", "builtin"])
def test_compile_data_dependent_op_takes_the_real_size(which):
    nz = _custom_nonzero() if which == "custom" else tp.nonzero
    f = tp.compile(lambda x: nz(x) * 2 + 1, fullgraph=True)
    for values in ([0, 1, 2, 0, 0, 1], [3, 0, 3], [0, 0]):   # one graph, sizes from the data
        x = tp.tensor(values)
        assert f(x).tolist() == (x.nonzero() * 2 + 1).tolist()
    assert f.captures == 1


@pytest.mark.parametrize("read", [lambda t: t.shape[0], lambda t: t.numel(), lambda t: t.size(0),
                                  lambda t: list(t.shape)])
def test_compile_breaks_the_graph_reading_a_data_dependent_size(read):
    # a graph break, as torch.compile's: the function runs eagerly (the reason kept), and
    # fullgraph=True raises it, naming the size as torch does (u0), never its placeholder int
    nz = _custom_nonzero()
    fn = lambda x: tp.zeros(read(nz(x)))        # noqa: E731
    f = tp.compile(fn)
    assert f(tp.tensor([0, 1, 1])).tolist() == fn(tp.tensor([0, 1, 1])).tolist()
    assert "data-dependent" in next(iter(f.graph_skips.values()))
    with pytest.raises(CompileError, match=r"data-dependent .*new_dynamic_size.* outside the "
                                           r"compiled function") as e:
        tp.compile(fn, fullgraph=True)(tp.tensor([0, 1, 1]))
    assert isinstance(e.value, tp.errors.GraphBreak) and re.search(r"\(u\d+", str(e.value))
    # the static dimension stays readable
    g = tp.compile(lambda x: tp.zeros(nz(x).shape[1]) + 1)
    assert g(tp.tensor([0, 1, 1])).tolist() == [1.0]


def test_opcheck_accepts_a_data_dependent_fake():
    """A fake with a data-dependent size (new_dynamic_size) passes test_faketensor whatever size
    the real kernel returns there; a wrong static dimension is still reported."""
    nz = _custom_nonzero()
    assert library.opcheck(nz, (tp.tensor([0.0, 1.0, 2.0]),)) == {}
    assert library.opcheck(nz, (tp.tensor([0.0, 0.0]),)) == {}

    @library.custom_op("gaps::nz_bad", mutates_args=())
    def nz_bad(x: tp.Tensor) -> tp.Tensor:
        return tp.tensor(np.stack(np.nonzero(x.numpy(force=True)), axis=1), device=x.device)

    @nz_bad.register_fake
    def _(x):
        return x.new_empty([library.get_ctx().new_dynamic_size(), x.dim() + 1], dtype=tp.int64)
    failures = library.opcheck(nz_bad, (tp.tensor([0.0, 1.0]),), raise_exception=False)
    assert "shape (1, 1) vs fake" in failures["test_faketensor"]


def test_builtin_op_answers_torch_overload_names_and_nothing_else():
    """``tensorplay.ops.tp.add.Tensor`` / ``.Scalar`` are ``tp::add`` (torch's OpOverload
    spellings of one built-in); a custom op or a lower-case misspelling is an AttributeError."""
    add = tp.ops.tp.add
    assert add.Tensor is add and add.Scalar is add and add.default is add
    assert tp.library.get_kernel(add.Tensor, "cpu") is tp.library.get_kernel("tp::add", "cpu")
    with pytest.raises(AttributeError, match="regster_fake"):
        add.regster_fake  # noqa: B018
    op = tp.library.custom_op("gapsovl::f", lambda x: x.clone(), mutates_args=(),
                              schema="(Tensor x) -> Tensor")
    with pytest.raises(AttributeError, match="Tensor"):
        op.Tensor  # noqa: B018
