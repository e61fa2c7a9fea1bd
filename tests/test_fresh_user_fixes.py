"""Defects a fresh user hit (numpy ops in opcheck, named-tuple results of composite ops,
redefined ops, plugin sample hooks, CLI messages, torch habits): each has a test here that
failed before its fix, plus tests of the neighbouring cases."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.errors import OpCheckError
from tensorplay.testing.opcheck import run_checks

Tensor = tp.Tensor


# ------------------------------------------------------------- 1a. Tensor.numpy() and grad mode

def test_numpy_on_a_leaf_requiring_grad_works_under_no_grad():
    x = tp.randn(3, requires_grad=True)
    with tp.no_grad():
        a = x.numpy()
    assert a.shape == (3,)
    assert np.shares_memory(a, x.detach().numpy())


def test_numpy_on_a_tensor_requiring_grad_raises_with_grad_enabled():
    x = tp.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()
    assert x.detach().numpy().shape == (3,)
    assert x.numpy(force=True).shape == (3,)


def test_numpy_on_a_tensor_not_requiring_grad_works_with_grad_enabled():
    assert tp.ones(2).numpy().tolist() == [1.0, 1.0]


# ------------------------------------ 1b. opcheck of numpy ops without floating outputs / formula

@lib.custom_op("fix_na::argmax", mutates_args=())
def np_argmax(x: Tensor) -> Tensor:
    return tp.from_numpy(np.asarray(np.argmax(x.numpy(), axis=-1)))


@np_argmax.register_fake
def _(x):
    return x.new_empty(x.shape[:-1], dtype=tp.int64)


@lib.custom_op("fix_na::argmax_positive", mutates_args=())
def np_argmax_positive(x: Tensor) -> tuple[Tensor, Tensor]:
    a = x.numpy()
    return tp.from_numpy(np.asarray(np.argmax(a, axis=-1))), tp.from_numpy(a > 0)


@np_argmax_positive.register_fake
def _(x):
    return x.new_empty(x.shape[:-1], dtype=tp.int64), x.new_empty(x.shape, dtype=tp.bool)


@lib.custom_op("fix_na::square", mutates_args=())
def np_square(x: Tensor) -> Tensor:
    return tp.from_numpy(np.square(x.numpy()))


@np_square.register_fake
def _(x):
    return tp.empty_like(x)


@lib.custom_op("fix_na::square_ok", mutates_args=())
def np_square_ok(x: Tensor) -> Tensor:
    return tp.from_numpy(np.square(x.detach().numpy()))


@np_square_ok.register_fake
def _(x):
    return tp.empty_like(x)


np_square_ok.register_autograd(lambda ctx, g: g * 2 * ctx.x,
                               setup_context=lambda ctx, inputs, out: setattr(ctx, "x", inputs[0]))


def test_opcheck_passes_a_numpy_op_with_only_integer_outputs():
    assert lib.opcheck(np_argmax, (tp.randn(3, 4),)) == {}
    res = run_checks(np_argmax, (tp.randn(3, 4),), test_utils="test_autograd_registration")
    r = res["test_autograd_registration"]
    assert r.status == "skip" and "no floating-point tensor outputs" in r.message


def test_opcheck_passes_a_numpy_op_with_integer_and_bool_outputs():
    assert lib.opcheck(np_argmax_positive, (tp.randn(3, 4),)) == {}


def test_opcheck_of_a_numpy_op_with_floating_output_and_no_formula_fails_with_the_fix():
    with pytest.raises(OpCheckError) as ei:
        lib.opcheck(np_square, (tp.randn(5, requires_grad=True),))
    msg = ei.value.failures["test_autograd_registration"]
    # (compiling it with an input that requires grad hits the same x.numpy() refusal)
    assert "test_autograd_registration" in ei.value.failures
    assert set(ei.value.failures) <= {"test_autograd_registration", "test_aot_dispatch_dynamic"}
    assert "fix_na::square" in msg and "leaves the autograd graph" in msg
    assert "register_autograd" in msg and "detach" in msg
    assert "mark_non_differentiable" in msg


def test_opcheck_passes_a_numpy_op_with_a_formula_that_detaches():
    assert lib.opcheck(np_square_ok, (tp.randn(5),)) == {}


def test_cli_check_reports_an_integer_numpy_op_as_not_applicable():
    res = run_checks(np_argmax, (tp.randn(2, 3),))
    assert all(r.status in ("pass", "skip") for r in res.values()), res


# ------------------------------------------- 2. composite ops returning named tuples / sequences

@lib.custom_op("fix_nt::max0", mutates_args=())
def max0(x: Tensor) -> tuple[Tensor, Tensor]:
    return x.max(dim=0)


@lib.custom_op("fix_nt::minmax", mutates_args=())
def minmax(x: Tensor) -> list[Tensor]:
    return [x.min(dim=0).values, x.max(dim=0).values]


@lib.custom_op("fix_nt::plain_tuple", mutates_args=())
def plain_tuple(x: Tensor) -> tuple[Tensor, Tensor]:
    v, i = x.max(dim=1)
    return v, i


def test_compile_of_a_composite_op_returning_a_named_tuple():
    x = tp.randn(3, 2)
    eager = max0(x)
    got = tp.compile(lambda t: max0(t))(x)
    assert type(got) is type(eager)
    assert got.values.tolist() == eager.values.tolist()
    assert got.indices.tolist() == eager.indices.tolist()
    assert got.indices.dtype == tp.int64


def test_compile_uses_the_named_tuple_fields_inside_the_function():
    x = tp.randn(4, 3)
    f = tp.compile(lambda t: max0(t).values * 2 + max0(t).indices)
    assert tp.allclose(f(x), max0(x).values * 2 + max0(x).indices)


def test_opcheck_passes_composite_ops_returning_named_tuples_lists_tuples():
    for op in (max0, minmax, plain_tuple):
        assert lib.opcheck(op, (tp.randn(3, 2),)) == {}, op.name


def test_compile_of_a_composite_op_returning_a_list():
    x = tp.randn(3, 2)
    got = tp.compile(lambda t: minmax(t))(x)
    assert [g.tolist() for g in got] == [e.tolist() for e in minmax(x)]


def test_compile_of_a_composite_named_tuple_op_backward():
    x = tp.randn(3, 2, requires_grad=True)
    f = tp.compile(lambda t: max0(t).values.sum())
    f(x).backward()
    x2 = x.detach().clone().requires_grad_(True)
    max0(x2).values.sum().backward()
    assert tp.allclose(x.grad, x2.grad)


def test_compile_error_names_a_fake_tensor_made_outside():
    from tensorplay import fake as fk
    from tensorplay.errors import CompileError, DispatchError
    fake = fk.from_real(tp.ones(2))            # a fake cpu tensor: fine eagerly, not in a graph
    with pytest.raises(CompileError, match="fake/meta tensor"):
        tp.compile(lambda t: t + fake)(tp.ones(2))
    # a meta-device tensor with a cpu one is refused eagerly for the devices: so it is here
    meta = tp.empty(2, device="meta")
    with pytest.raises(DispatchError, match="expected all tensors on one device"):
        tp.compile(lambda t: t + meta)(tp.ones(2))


# ------------------------------------------------------- 3. the old handle of a redefined op

def _define(name, k):
    @lib.custom_op(name, mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x + k
    return f


def test_old_handle_of_a_redefined_op_runs_the_current_definition():
    d1 = _define("fix_redef::dup", 1)
    assert d1(tp.zeros(1)).tolist() == [1.0]
    d2 = _define("fix_redef::dup", 100)
    assert d1(tp.zeros(1)).tolist() == [100.0]
    assert d2(tp.zeros(1)).tolist() == [100.0]
    assert tp.ops.fix_redef.dup(tp.zeros(1)).tolist() == [100.0]
    d3 = _define("fix_redef::dup", 1000)
    assert d1(tp.zeros(1)).tolist() == [1000.0] == d2(tp.zeros(1)).tolist()
    assert d3.version == 2


def test_old_handle_of_a_redefined_op_in_compile_and_autograd():
    d1 = _define("fix_redef::dup2", 1)
    _define("fix_redef::dup2", 5)
    assert tp.compile(lambda t: d1(t) * 2)(tp.zeros(2)).tolist() == [10.0, 10.0]
    x = tp.ones(2, requires_grad=True)
    d1(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_registering_on_the_old_handle_of_a_redefined_op_raises():
    d1 = _define("fix_redef::dup3", 1)
    d2 = _define("fix_redef::dup3", 2)
    with pytest.raises(RuntimeError, match=r"fix_redef::dup3.*redefined") as ei:
        d1.register_fake(lambda x: tp.empty_like(x))
    assert "new handle" in str(ei.value)
    with pytest.raises(RuntimeError, match="redefined"):
        d1.register_autograd(lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="redefined"):
        d1.register_kernel("cpu", lambda x: x)
    d2.register_fake(lambda x: tp.empty_like(x))     # the live handle still registers


def test_undoing_a_redefinition_gives_the_old_handle_its_own_kernel_back():
    # private on purpose: unregister_op is the undo a plugin rollback runs on a redefinition;
    # no public call undoes a custom_op redefinition alone
    from tensorplay import _registry
    d1 = _define("fix_redef::dup4", 1)
    d2 = _define("fix_redef::dup4", 2)
    _registry.unregister_op(d2)
    assert tp.ops.fix_redef.dup4 is d1
    assert d1(tp.zeros(1)).tolist() == [1.0]
    d1.register_fake(lambda x: tp.empty_like(x))


# ------------------------------------------------------------- 7a. strings are not dtypes

@pytest.mark.parametrize("make", [
    lambda: tp.ones(2, dtype="float32"), lambda: tp.zeros(2, dtype="int64"),
    lambda: tp.empty(2, dtype="float64"), lambda: tp.full((2,), 1.0, dtype="float32"),
    lambda: tp.arange(3, dtype="int32"), lambda: tp.tensor([1.0], dtype="float64"),
    lambda: tp.randn(2, dtype="float32"), lambda: tp.ones_like(tp.ones(2), dtype="float64"),
    lambda: tp.ones(2).to("float64"), lambda: tp.ones(2).to(dtype="float16"),
    lambda: tp.ones(2).to("cpu", "float64"), lambda: tp.ones(2).sum(dtype="float64"),
    lambda: tp.set_default_dtype("float64"),
])
def test_a_string_dtype_is_a_type_error_as_in_torch(make):
    with pytest.raises(TypeError, match=r"not the string '\w+'.*tensorplay\.\w+"):
        make()
    assert tp.get_default_dtype() is tp.float32


def test_real_dtypes_and_device_strings_still_work():
    assert tp.ones(2, dtype=tp.float64).dtype is tp.float64
    assert tp.ones(2, dtype=float).dtype is tp.float64
    assert tp.ones(2, dtype=np.dtype("int32")).dtype is tp.int32
    assert tp.ones(2).to(np.float64).dtype is tp.float64
    assert tp.ones(2).to("cpu").device.type == "cpu"
    assert tp.tensor(np.ones(2, dtype=np.float16)).dtype is tp.float16
    with pytest.raises(TypeError, match="cannot interpret"):
        tp.ones(2, dtype=object())


def test_schema_dtype_defaults_by_name_still_parse():
    @lib.custom_op("fix_dt::cast", mutates_args=(),
                   schema="(Tensor x, ScalarType dtype=float64) -> Tensor")
    def cast(x, dtype=tp.float64):
        return x.to(dtype)
    assert cast(tp.ones(2)).dtype is tp.float64


# ------------------------------------------------------------------ 7b. tensorplay.inference_mode

def test_inference_mode_as_context_manager_and_decorators():
    x = tp.ones(2, requires_grad=True)
    with tp.inference_mode():
        assert not tp.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert tp.is_grad_enabled() and (x * 2).requires_grad

    @tp.inference_mode()
    def f(t):
        return t * 2, tp.is_grad_enabled()

    @tp.inference_mode
    def g(t):
        return t * 3, tp.is_grad_enabled()
    for fn in (f, g):
        y, enabled = fn(x)
        assert not enabled and not y.requires_grad
    assert g.__name__ == "g" and tp.is_grad_enabled()


def test_inference_mode_false_leaves_grad_mode_and_restores_on_error():
    x = tp.ones(2, requires_grad=True)
    with tp.inference_mode(False):
        assert tp.is_grad_enabled() and (x * 2).requires_grad
    with tp.no_grad():
        with tp.inference_mode(False):
            assert not tp.is_grad_enabled()
    with pytest.raises(ValueError):
        with tp.inference_mode():
            raise ValueError
    assert tp.is_grad_enabled()
    assert "inference_mode" in tp.__all__


# ------------------------------------------------------------------------- 7c. topk

def test_topk_values_indices_as_torch():
    x = tp.tensor([[3.0, 1.0, 2.0, 7.0], [0.0, 5.0, 4.0, -1.0]])
    r = x.topk(2)
    assert type(r) is tp.return_types.topk
    assert r.values.tolist() == [[7.0, 3.0], [5.0, 4.0]]
    assert r.indices.tolist() == [[3, 0], [1, 2]] and r.indices.dtype is tp.int64
    v, i = tp.topk(x, 1, dim=0, largest=False)
    assert v.tolist() == [[0.0, 1.0, 2.0, -1.0]] and i.tolist() == [[1, 0, 0, 1]]
    assert tp.topk(x, 0).values.shape == (2, 0)
    assert tp.tensor([4, 9, 1]).topk(2).values.tolist() == [9, 4]
    s = tp.tensor(2.5).topk(1)
    assert s.values.item() == 2.5 and s.indices.item() == 0


def test_topk_matches_numpy_and_counts_nan_largest():
    a = np.random.default_rng(0).standard_normal((4, 7))
    r = tp.tensor(a).topk(3, dim=1)
    assert np.allclose(r.values.numpy(), -np.sort(-a, axis=1)[:, :3])
    n = tp.tensor([1.0, float("nan"), 3.0]).topk(2)
    assert np.isnan(n.values.tolist()[0]) and n.values.tolist()[1] == 3.0
    assert n.indices.tolist() == [1, 2]


def test_topk_out_of_range_k_eager_and_fake():
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tp.ones(3).topk(4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tp.ones(3).topk(-1)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        tp.ones(2, 3, device="meta").topk(3, dim=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tp.ones(2, 3).topk(1, dim=2)
    m = tp.ones(2, 5, device="meta").topk(2)
    assert m.values.shape == (2, 2) and m.indices.dtype is tp.int64


def test_topk_backward_and_compile_and_opcheck():
    x = tp.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
    (x.topk(2).values * tp.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 10.0], [0.0, 1.0, 10.0]]
    y = tp.randn(3, 4)
    got = tp.compile(lambda t: t.topk(2, dim=0))(y)
    assert type(got) is tp.return_types.topk
    assert got.values.tolist() == y.topk(2, dim=0).values.tolist()
    assert lib.opcheck(tp.ops.tp.topk, (tp.randn(3, 4), 2)) == {}


@lib.custom_op("fix_nt::dict_fake", mutates_args=())
def dict_fake(x: Tensor) -> Tensor:
    return x * 2


@dict_fake.register_fake
def _(x):
    return {"a": x.new_empty(x.shape)}     # wrong on purpose: not what the schema declares


def test_compile_error_names_the_op_whose_output_the_capture_could_not_follow():
    # the call checks the fake's result against the schema (-> Tensor) before the capture
    # follows it, as torch does (session 62): the error names the op and its fake kernel
    from tensorplay.errors import OpReturnError
    for fn in (lambda t: dict_fake(t)["a"], lambda t: dict_fake(t)["a"] + 1):
        with pytest.raises(OpReturnError, match=r"fix_nt::dict_fake: its fake kernel .* returned "
                                                r"dict .* -> Tensor"):
            tp.compile(fn)(tp.ones(2))
