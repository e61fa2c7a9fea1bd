"""``tensorplay.library.opcheck`` / ``tensorplay.testing.opcheck``: deliberately broken ops are
reported by the right check with the op's name; a correct op passes; the caller's tensors are
never touched (SPEC §3, CASES C07 and C09)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.errors import OpCheckError
from tensorplay.testing.opcheck import ALL_TESTS, run_checks

Tensor = tp.Tensor
NO_AOT = ("test_schema", "test_autograd_registration", "test_faketensor")


def check(op, args, kwargs=None, tests=NO_AOT):
    return lib.opcheck(op, args, kwargs, test_utils=tests, raise_exception=False)


def only_failure(failures, name):
    assert set(failures) == {name}, failures
    return failures[name]


# ---------------------------------------------------------------------------- a correct op

@lib.custom_op("oc_good::scale_add", mutates_args=())
def scale_add(x: Tensor, y: Tensor, alpha: float = 2.0) -> Tensor:
    return x * alpha + y


@scale_add.register_fake
def _(x, y, alpha=2.0):
    return x.new_empty(x.shape)


def test_correct_op_passes_every_check():
    # the sample asks for gradients (requires_grad), so the autograd checks apply to this op
    # without a formula (its body is differentiated), as in torch's opcheck
    x, y = tp.randn(64, 32, requires_grad=True), tp.randn(64, 32, requires_grad=True)
    assert check(scale_add, (x, y), {"alpha": 0.5}) == {}
    res = run_checks(scale_add, (x, y))
    assert [r.status for r in (res[t] for t in NO_AOT + ("test_gradients",))] == ["pass"] * 4


def test_correct_op_by_qualified_name_and_single_test_name():
    x, y = tp.randn(8, 4), tp.randn(8, 4)
    assert lib.opcheck("oc_good::scale_add", (x, y), test_utils="test_schema") == {}
    assert set(run_checks(scale_add, (x, y), test_utils="test_faketensor")) == {"test_faketensor"}


def test_unknown_test_utils_is_a_value_error_listing_valid_names():
    with pytest.raises(ValueError, match="test_shcema.*test_schema"):
        lib.opcheck(scale_add, (tp.randn(2), tp.randn(2)), test_utils=["test_shcema"])


def test_not_an_op_is_a_type_error():
    with pytest.raises(TypeError, match="CustomOpDef"):
        lib.opcheck(lambda x: x, (tp.randn(2),))


# ---------------------------------------------------------------------------- test_schema

@lib.custom_op("oc_mut::sneaky_add", mutates_args=())
def sneaky_add(x: Tensor, y: Tensor) -> Tensor:
    x.add_(y)                    # writes x but does not declare it
    return x.clone()


@lib.custom_op("oc_mut::numpy_write", mutates_args=())
def numpy_write(x: Tensor) -> Tensor:
    out = x.clone()
    x.detach().numpy()[0] = 123.0    # a write the version counter cannot see
    return out


@lib.custom_op("oc_mut::list_write", mutates_args=())
def list_write(xs: list[Tensor]) -> Tensor:
    xs[1].mul_(2.0)
    return xs[0] + xs[1]


@lib.custom_op("oc_mut::declared", mutates_args=("x",))
def declared(x: Tensor, y: Tensor) -> None:
    x.add_(y)


@declared.register_fake
def _(x, y):
    return None


def test_undeclared_mutation_is_reported_by_test_schema():
    msg = only_failure(check(sneaky_add, (tp.randn(4, 4), tp.randn(4, 4)), tests=["test_schema"]),
                       "test_schema")
    assert "oc_mut::sneaky_add" in msg and "input 'x'" in msg
    assert "mutates_args=('x',)" in msg and "version" in msg
    assert "'y'" not in msg


def test_mutation_through_numpy_is_caught_by_values():
    msg = check(numpy_write, (tp.randn(5),), tests=["test_schema"])["test_schema"]
    assert "oc_mut::numpy_write" in msg and "input 'x'" in msg and "values changed" in msg


def test_mutation_of_a_list_element_names_the_element():
    msg = check(list_write, ([tp.randn(3), tp.randn(3)],), tests=["test_schema"])["test_schema"]
    assert "oc_mut::list_write" in msg and "input 'xs[1]'" in msg and "'xs'" in msg


def test_declared_mutation_is_trusted():
    assert check(declared, (tp.randn(4), tp.randn(4))) == {}
    res = run_checks(declared, (tp.randn(4), tp.randn(4)), test_utils=NO_AOT)
    assert res["test_autograd_registration"].status == "skip"


# C07: three ways to alias

@lib.custom_op("oc_alias::identity", mutates_args=())
def identity(x: Tensor) -> Tensor:
    return x


@lib.custom_op("oc_alias::first_row", mutates_args=())
def first_row(x: Tensor) -> Tensor:
    return x[0]


@lib.custom_op("oc_alias::twice", mutates_args=())
def twice(x: Tensor) -> tuple[Tensor, Tensor]:
    y = x * 2
    return y, y


@lib.custom_op("oc_alias::second_is_view", mutates_args=())
def second_is_view(x: Tensor) -> tuple[Tensor, Tensor]:
    y = x + 1
    return y, y.t()


@pytest.mark.parametrize("op,index,what", [
    (identity, "0", "is input 'x'"),
    (first_row, "0", "is a view of / shares storage with input 'x'"),
])
def test_c07_output_aliasing_an_input(op, index, what):
    msg = only_failure(lib.opcheck(op, (tp.randn(3, 4),), test_utils="test_schema",
                                   raise_exception=False), "test_schema")
    assert op.name in msg
    assert f"output {index} {what}" in msg
    assert ".clone()" in msg and "copy" in msg


@pytest.mark.parametrize("op", [twice, second_is_view])
def test_c07_outputs_aliasing_each_other(op):
    msg = only_failure(lib.opcheck(op, (tp.randn(3, 4),), test_utils="test_schema",
                                   raise_exception=False), "test_schema")
    assert op.name in msg and "output 1 shares storage with output 0" in msg
    assert ".clone()" in msg


@lib.custom_op("oc_ret::wrong_structure", mutates_args=())
def wrong_structure(x: Tensor) -> Tensor:
    return x + 1, x + 2


def test_return_structure_must_match_the_schema():
    msg = check(wrong_structure, (tp.randn(3),), tests=["test_schema"])["test_schema"]
    assert "oc_ret::wrong_structure" in msg and "-> Tensor" in msg and "tuple of 2" in msg


# ---------------------------------------------------------------------------- test_faketensor

@lib.custom_op("oc_fake::wrong_shape", mutates_args=())
def wrong_shape(x: Tensor) -> Tensor:
    return x.sum(0)


@wrong_shape.register_fake
def _(x):
    return x.new_empty(x.shape)         # forgot the reduction


@lib.custom_op("oc_fake::transposed", mutates_args=())
def transposed(x: Tensor) -> Tensor:
    return (x * 2).t()                  # fresh storage, non-contiguous result


@transposed.register_fake
def _(x):
    return x.new_empty((x.shape[1], x.shape[0]))   # right shape, contiguous strides


@lib.custom_op("oc_fake::wrong_dtype", mutates_args=())
def wrong_dtype(x: Tensor) -> Tensor:
    return x > 0


@wrong_dtype.register_fake
def _(x):
    return x.new_empty(x.shape)


@lib.custom_op("oc_fake::no_fake_numpy", mutates_args=())
def no_fake_numpy(x: Tensor) -> Tensor:
    return tp.from_numpy(np.sin(x.detach().numpy()))


def test_wrong_fake_shape_is_reported_by_test_faketensor():
    msg = only_failure(check(wrong_shape, (tp.randn(6, 5),)), "test_faketensor")
    assert "oc_fake::wrong_shape" in msg and "shape (5,) vs fake (6, 5)" in msg
    assert "register_fake" in msg


def test_c09_noncontiguous_result_with_contiguous_fake_is_reported():
    msg = only_failure(check(transposed, (tp.randn(6, 5),)), "test_faketensor")
    assert "oc_fake::transposed" in msg and "strides (1, 5) vs fake (6, 1)" in msg


def test_wrong_fake_dtype_is_reported():
    msg = check(wrong_dtype, (tp.randn(6),))["test_faketensor"]
    assert "oc_fake::wrong_dtype" in msg and "dtype" in msg and "bool" in msg


def test_missing_fake_for_a_kernel_that_needs_data():
    msg = check(no_fake_numpy, (tp.randn(6),), tests=["test_faketensor"])["test_faketensor"]
    assert "oc_fake::no_fake_numpy" in msg
    assert "No fake kernel is registered" in msg and "register_fake" in msg


# ---------------------------------------------------------------------------- test_autograd_registration

@lib.custom_op("oc_ag::numpy_tanh", mutates_args=())
def numpy_tanh(x: Tensor) -> Tensor:
    return tp.from_numpy(np.tanh(x.detach().numpy()))


@numpy_tanh.register_fake
def _(x):
    return x.new_empty(x.shape)


@lib.custom_op("oc_ag::numpy_no_detach", mutates_args=())
def numpy_no_detach(x: Tensor) -> Tensor:
    return tp.from_numpy(np.tanh(x.numpy()))


@lib.custom_op("oc_ag::drops_w", mutates_args=())
def drops_w(x: Tensor, w: Tensor) -> Tensor:
    # w leaves the graph through .detach() (a kernel that goes through .numpy() instead makes
    # the whole op non-differentiable: backward raises, test_library's TestKernelViaNumpy)
    return x * w.detach().clone()


@drops_w.register_fake
def _(x, w):
    return x.new_empty(x.shape)


@lib.custom_op("oc_ag::formula_drops", mutates_args=())
def formula_drops(x: Tensor, w: Tensor) -> Tensor:
    return x * w


formula_drops.register_autograd(lambda ctx, g: (g * ctx.w, None),
                                 setup_context=lambda ctx, inputs, out: setattr(ctx, "w", inputs[1]))


@lib.custom_op("oc_ag::formula_bad_shape", mutates_args=())
def formula_bad_shape(x: Tensor, w: Tensor) -> Tensor:
    return x * w


formula_bad_shape.register_autograd(lambda ctx, g: (g, g.T))   # w is (4,), g.T is (4, 3)


@lib.custom_op("oc_ag::formula_broadcast_grad", mutates_args=())
def formula_broadcast_grad(x: Tensor, w: Tensor) -> Tensor:
    return x * w


# w is (4,), g is (3, 4): (4,) expands to (3, 4), so the engine sums it to (4,) (torch's
# validate_outputs does the same): a legal formula
formula_broadcast_grad.register_autograd(lambda ctx, g: (g, g))


@lib.custom_op("oc_ag::ints", mutates_args=())
def ints(x: Tensor) -> Tensor:
    return x + 1


def test_kernel_leaving_the_graph_through_numpy_is_reported():
    msg = only_failure(check(numpy_tanh, (tp.randn(8, 3, requires_grad=True),)),
                       "test_autograd_registration")
    assert "oc_ag::numpy_tanh" in msg and "breaks the autograd graph" in msg
    assert "register_autograd" in msg and "output 0" in msg


def test_numpy_call_on_an_input_that_requires_grad_is_reported():
    msg = check(numpy_no_detach, (tp.randn(8, requires_grad=True),),
                tests=["test_autograd_registration"])["test_autograd_registration"]
    assert "oc_ag::numpy_no_detach" in msg and "breaks the autograd graph" in msg


def test_dropped_gradient_names_the_argument():
    msg = only_failure(check(drops_w, (tp.randn(3, 4, requires_grad=True), tp.randn(4))),
                       "test_autograd_registration")
    assert "oc_ag::drops_w" in msg and "no gradient reached input 'w'" in msg
    assert "input 'x'" not in msg


def test_formula_returning_none_is_a_declaration_not_a_dropped_gradient():
    # register_autograd's contract (and torch's opcheck): an explicit None from a registered
    # formula says "no gradient for this input" (a rotary table, class weights, a mask)
    res = run_checks(formula_drops, (tp.randn(3, 4), tp.randn(3, 4)),
                     test_utils="test_autograd_registration")
    assert res["test_autograd_registration"].status == "pass", res


def test_formula_with_wrong_gradient_shape():
    msg = check(formula_bad_shape, (tp.randn(3, 4), tp.randn(4)),
                tests=["test_autograd_registration"])["test_autograd_registration"]
    assert "oc_ag::formula_bad_shape" in msg and "[4, 3]" in msg and "[4]" in msg
    assert check(formula_broadcast_grad, (tp.randn(3, 4), tp.randn(4)),
                 tests=["test_autograd_registration"]) == {}


def test_missing_formula_is_legal_and_integer_ops_are_skipped():
    assert check(scale_add, (tp.randn(3), tp.randn(3)), tests=["test_autograd_registration"]) == {}
    res = run_checks(ints, (tp.arange(5),), test_utils="test_autograd_registration")
    assert res["test_autograd_registration"].status == "skip"


# ---------------------------------------------------------------------------- inputs are cloned

@lib.custom_op("oc_clone::strides_seen", mutates_args=("out",))
def strides_seen(x: Tensor, out: Tensor) -> None:
    _SEEN.append((x.stride(), x.storage_offset(), x.requires_grad))
    out.copy_(x * 3)
    x.detach().numpy()[...] = 0     # undeclared write, on the clone only


_SEEN: list = []


def test_callers_tensors_are_never_modified():
    base = tp.randn(5, 7)
    x = base.t()[1:]                # non-contiguous view with an offset
    out = tp.zeros(6, 5)
    x_vals, out_vals = x.numpy().copy(), out.numpy().copy()
    vx, vo = x._version, out._version
    _SEEN.clear()
    failures = check(strides_seen, (x, out),
                     tests=["test_schema", "test_autograd_registration", "test_faketensor"])
    assert "test_schema" in failures       # the undeclared write was seen on a clone...
    assert np.array_equal(x.numpy(), x_vals) and np.array_equal(out.numpy(), out_vals)
    assert (x._version, out._version) == (vx, vo)      # ...and never on the caller's tensors
    assert _SEEN and all(s[:2] == (x.stride(), x.storage_offset()) for s in _SEEN)


def test_requires_grad_flags_of_the_caller_are_kept():
    x = tp.randn(4, requires_grad=True)
    y = tp.randn(4)
    assert check(scale_add, (x, y)) == {}
    assert x.requires_grad and not y.requires_grad and x.grad is None and y.grad is None


def test_kernel_raising_fails_every_check_without_raising():
    @lib.custom_op("oc_raise::boom", mutates_args=())
    def boom(x: Tensor) -> Tensor:
        raise RuntimeError("kaboom")

    failures = check(boom, (tp.randn(2, requires_grad=True),))
    assert set(failures) == set(NO_AOT)
    assert all("oc_raise::boom" in m and "kaboom" in m for m in failures.values())
    # it raises without grad too: not an autograd matter, so no advice about .numpy()
    assert ".numpy()" not in failures["test_autograd_registration"]


# ---------------------------------------------------------------------------- raising and aot

def test_raise_exception_raises_opcheck_error_with_failures():
    with pytest.raises(OpCheckError) as ei:
        lib.opcheck(identity, (tp.randn(3),), test_utils="test_schema")
    err = ei.value
    assert isinstance(err, RuntimeError)
    assert set(err.failures) == {"test_schema"}
    assert "oc_alias::identity" in str(err) and "1 of 1 checks failed" in str(err)
    # no failure, no exception
    assert lib.opcheck(scale_add, (tp.randn(3), tp.randn(3)), test_utils=NO_AOT) == {}


def test_aot_check_is_a_failure_when_compile_is_unavailable(monkeypatch):
    import tensorplay.testing as testing_pkg
    monkeypatch.setitem(sys.modules, "tensorplay.testing.aot", None)   # import -> ImportError
    monkeypatch.delattr(testing_pkg, "aot", raising=False)
    msg = only_failure(lib.opcheck(scale_add, (tp.randn(3), tp.randn(3)),
                                   test_utils="test_aot_dispatch_dynamic",
                                   raise_exception=False), "test_aot_dispatch_dynamic")
    assert "oc_good::scale_add" in msg and "not available" in msg and "tensorplay.compile" in msg


def test_aot_check_is_delegated_with_clones_and_tolerances(monkeypatch):
    seen = []

    def fake_check(op, args, kwargs, atol=None, rtol=None):
        seen.append((op, args, kwargs, atol, rtol))
        return None if op is scale_add else f"{op.name}: eager and compiled outputs differ"

    mod = types.ModuleType("tensorplay.testing.aot")
    mod.check = fake_check
    monkeypatch.setitem(sys.modules, "tensorplay.testing.aot", mod)
    import tensorplay.testing as testing_pkg
    monkeypatch.setattr(testing_pkg, "aot", mod, raising=False)
    x, y = tp.randn(3, requires_grad=True), tp.randn(3)
    assert lib.opcheck(scale_add, (x, y), {"alpha": 3.0}, atol=1e-3, rtol=1e-4) == {}
    op, args, kwargs, atol, rtol = seen[-1]
    assert op is scale_add and (atol, rtol) == (1e-3, 1e-4) and kwargs == {"alpha": 3.0}
    assert args[0] is not x and args[0].requires_grad and not args[1].requires_grad
    msg = lib.opcheck(ints, (tp.arange(3),), test_utils="DEFAULT",
                      raise_exception=False)["test_aot_dispatch_dynamic"]
    assert "oc_ag::ints" in msg and "differ" in msg


# ---------------------------------------------------------------------------- built-in ops

@pytest.mark.parametrize("name,make", [
    ("add", lambda: (tp.randn(4, 3), tp.randn(3))),
    ("matmul", lambda: (tp.randn(4, 3), tp.randn(3, 5))),
    ("softmax", lambda: (tp.randn(4, 3), 1)),
    ("transpose", lambda: (tp.randn(4, 3), 0, 1)),      # Tensor(a) -> Tensor(a): declared view
    ("add_", lambda: (tp.randn(4, 3), tp.randn(4, 3))),  # Tensor(a!) -> Tensor(a!)
])
def test_builtin_ops_pass_and_schema_declared_aliases_are_allowed(name, make):
    op = getattr(tp.ops.tp, name)
    assert lib.opcheck(op, make(), test_utils=NO_AOT, raise_exception=False) == {}
