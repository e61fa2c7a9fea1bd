"""Errors raised while ``tensorplay.compile`` captures a function are the errors a PyTorch user
expects: the type and message of the same code run eagerly (an ``except TypeError`` keeps
working under compile), or, for data-dependent Python (a graph break: ``fullgraph=True`` raises
it; without it the function runs eagerly), a message naming the construct the user wrote
(``bool(tensor)``, ``int(tensor)``, ...). ``CompileError`` stays for what only compile can fail
on (a missing or wrong fake kernel, a tensor leaked out of a capture)."""

from __future__ import annotations

import pytest
import tensorplay as tp
from tensorplay.errors import CompileError, DispatchError
from tensorplay.library import custom_op

pytestmark = pytest.mark.usefixtures("cpu")


# ------------------------------------------------------------------------------ ops for the tests

@custom_op("tc_cerr::scale", mutates_args=())
def scale(x: tp.Tensor, k: float) -> tp.Tensor:
    if x.dtype != tp.float32:
        raise TypeError(f"tc_cerr::scale: x must be float32, got {x.dtype}")
    return x * k


@scale.register_fake
def _(x, k):
    if x.dtype != tp.float32:       # the same refusal as the kernel: eager and fake agree
        raise TypeError(f"tc_cerr::scale: x must be float32, got {x.dtype}")
    return tp.empty_like(x)


@custom_op("tc_cerr::nofake", mutates_args=())
def nofake(x: tp.Tensor, n: int) -> tp.Tensor:
    if n > 2:
        raise ValueError(f"tc_cerr::nofake: n={n} too large")
    return x * n


@custom_op("tc_cerr::reads", mutates_args=())
def reads(x: tp.Tensor) -> tp.Tensor:
    return x * x.sum().item()


@custom_op("tc_cerr::cpu_only", mutates_args=(), device_types="cpu")
def cpu_only(x: tp.Tensor) -> tp.Tensor:
    return x + 1


@custom_op("tc_cerr::bad_fake", mutates_args=())
def bad_fake(x: tp.Tensor) -> tp.Tensor:
    return x + 1


_REAL = tp.ones(3)


@bad_fake.register_fake
def _(x):
    return _REAL             # a real tensor: fake kernels must return fake ones


def _x():
    return tp.arange(6, dtype=tp.float32).reshape(2, 3)


def _outcome(fn, compiled):
    """(type, message) of what ``fn(_x())`` raises eagerly or compiled; ("ok", "") if nothing."""
    try:
        (tp.compile(fn) if compiled else fn)(_x())
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
        return type(e), str(e)
    return "ok", ""


def _same_as_eager(fn):
    eager, comp = _outcome(fn, False), _outcome(fn, True)
    assert eager[0] != "ok", "the call must fail eagerly"
    assert comp == eager, f"\n eager:    {eager}\n compiled: {comp}"
    return eager


# ------------------------------------------------------------------ built-in ops: eager's errors

BUILTIN_BAD_CALLS = {
    # a non-number where an op takes a Tensor or a Python number
    "add_str": lambda x: tp.add(x, "a"),
    "add_list": lambda x: tp.add(x, [1, 2]),
    "add_none": lambda x: tp.add(x, None),
    "mul_operator_str": lambda x: x * "a",
    "pow_str": lambda x: x ** "a",
    "rsub_str": lambda x: "a" - x,
    # shapes
    "add_broadcast": lambda x: x + tp.ones(4),
    "matmul_shapes": lambda x: x @ tp.ones(2, 2),
    "reshape_numel": lambda x: x.reshape(4, 4),
    "view_numel": lambda x: x.view(7),
    "expand_size": lambda x: x.expand(4, 4),
    "cat_sizes": lambda x: tp.cat([x, tp.ones(3, 3)], 1),
    "stack_sizes": lambda x: tp.stack([x, tp.ones(3)]),
    "where_broadcast": lambda x: tp.where(x > 0, x, tp.ones(5)),
    "inplace_broadcast": lambda x: x[0].clone().mul_(x),
    "narrow_length": lambda x: x.narrow(0, 1, 5),
    "topk_k": lambda x: x.topk(10),
    # dims and indices
    "sum_dim": lambda x: x.sum(5),
    "argmax_dim": lambda x: x.argmax(3),
    "softmax_dim": lambda x: x.softmax(4),
    "transpose_dim": lambda x: x.transpose(0, 5),
    "squeeze_dim": lambda x: x.squeeze(7),
    "permute_dims": lambda x: x.permute(0, 0),
    "getitem_out_of_range": lambda x: x[5],
    "select_out_of_range": lambda x: x.select(0, 9),
    "getitem_str": lambda x: x["a"],
    # dtypes
    "where_float_condition": lambda x: tp.where(x, x, x),
    "masked_fill_float_mask": lambda x: x.clone().masked_fill_(x, 1.0),
    "matmul_mixed_dtypes": lambda x: tp.matmul(x, tp.ones(3, 2, dtype=tp.int64)),
    "inplace_result_type": lambda x: x.to(tp.int64).add_(1.5),
    "neg_bool": lambda x: -(x > 0),
    "to_unknown_dtype": lambda x: x.to("floatz"),
    "to_unknown_device": lambda x: x.to("nodev"),
    "to_dtype_int": lambda x: x.to(dtype=5),
    # factories (no tensor argument) and arity / keywords
    "zeros_bad_device": lambda x: tp.zeros(3, device="bogus") + x,
    "zeros_bad_device_returned": lambda x: tp.zeros(3, device="bogus"),
    "zeros_str_dtype": lambda x: tp.zeros(3, dtype="float32") + x,
    "full_str_value": lambda x: tp.full((2,), "a") + x,
    "add_unknown_keyword": lambda x: tp.add(x, 1, beta=2),
    "add_too_many": lambda x: tp.add(x, 1, 2, 3),
    "add_missing": lambda x: tp.add(x),
    "reshape_float_size": lambda x: x.reshape(2.0, 3),
    "cat_a_number": lambda x: tp.cat(3, 0),
}


@pytest.mark.parametrize("name", list(BUILTIN_BAD_CALLS))
def test_builtin_op_refusals_under_compile_are_eagers_type_and_message(name):
    _same_as_eager(BUILTIN_BAD_CALLS[name])


def test_the_reported_case_add_of_a_str_is_eagers_type_error():
    def g(x):
        return tp.add(x, "a")
    msg = "tp::add: argument 'other' must be a Tensor or a Python number, got str ('a')"
    with pytest.raises(TypeError) as eager:
        g(tp.ones(3))
    with pytest.raises(TypeError) as comp:
        tp.compile(g)(tp.ones(3))
    assert str(eager.value) == str(comp.value) == msg
    assert not isinstance(comp.value, CompileError)


def test_user_except_clause_around_a_bad_call_keeps_working_under_compile():
    def f(x):
        try:
            return x + tp.ones(5)          # RuntimeError, as in eager
        except RuntimeError:
            return x * 2
    assert f(_x()).tolist() == tp.compile(f)(_x()).tolist() == (_x() * 2).tolist()


def test_mixed_devices_are_refused_before_any_shape_check_as_in_eager():
    from tensorplay.testing.backend import MockBackend
    with MockBackend("cerrmock"):
        y = tp.ones(3).to("cerrmock")
        for fn in (lambda x: tp.cat([x, y]), lambda x: x + y, lambda x: tp.matmul(x, y)):
            typ, msg = _same_as_eager(fn)
            assert typ is DispatchError and "expected all tensors on one device" in msg


@custom_op("tc_cerr::same_shape_add", mutates_args=())
def same_shape_add(a: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
    return a + b


@same_shape_add.register_fake
def _(a, b):
    if a.shape != b.shape:
        raise ValueError("tc_cerr::same_shape_add: shapes differ")
    return tp.empty_like(a)


@pytest.mark.parametrize("f", [lambda x, y: tp.cat([x, y]), lambda x, y: same_shape_add(x, y)],
                         ids=["builtin", "custom"])
def test_inputs_on_two_devices_are_refused_for_the_devices_first_as_in_eager(f):
    # both arguments are captured (one dispatch key: the call's fast path does not compare
    # devices) and the fake run fails on the sizes, but eager refuses the devices first
    from tensorplay.testing.backend import MockBackend
    with MockBackend("cerrmock2"):
        y = tp.ones(3).to("cerrmock2")
        with pytest.raises(DispatchError, match="expected all tensors on one device") as eager:
            f(_x(), y)
        with pytest.raises(DispatchError, match="expected all tensors on one device") as comp:
            tp.compile(f)(_x(), y)
        assert str(eager.value) == str(comp.value)


def test_gather_with_a_float_index_is_torchs_runtime_error_eager_and_compiled():
    # eager used to let NumPy's IndexError ("`indices` must be an integer array") through
    typ, msg = _same_as_eager(lambda x: tp.gather(x, 1, tp.ones(2, 3)))
    # (torch's words: int32 is taken too, session 52)
    assert typ is RuntimeError and msg.startswith("gather(): Expected dtype int32/int64 for "
                                                  "index"), msg


# -------------------------------------------------------------- custom ops: eager's errors too

CUSTOM_BAD_CALLS = {
    "fake_refuses_dtype": lambda x: scale(x.to(tp.int64), 2.0),
    "str_for_float": lambda x: scale(x, "a"),
    "list_of_numbers_for_tensor": lambda x: scale([1.0, 2.0], 2.0),
    "unknown_keyword": lambda x: scale(x, k=2.0, z=1),
    "too_many": lambda x: scale(x, 2.0, 3),
    "missing": lambda x: scale(x),
    "float_for_int": lambda x: nofake(x, 3.5),
    "kernel_run_as_fake_refuses": lambda x: nofake(x, 3),
}


@pytest.mark.parametrize("name", list(CUSTOM_BAD_CALLS))
def test_custom_op_refusals_under_compile_are_eagers_type_and_message(name):
    _same_as_eager(CUSTOM_BAD_CALLS[name])


def test_custom_op_given_a_list_of_tensors_for_a_tensor_fails_as_in_eager():
    # the message shows the value: a captured tensor has no values to print, so compare the
    # words before it
    fn = lambda x: scale([x], 2.0)  # noqa: E731
    (et, em), (ct, cm) = _outcome(fn, False), _outcome(fn, True)
    assert et is ct is TypeError
    head = "custom_op('tc_cerr::scale'): argument 'x' must be Tensor, got list ("
    assert em.startswith(head) and cm.startswith(head), (em, cm)


def test_a_refusal_by_a_fake_kernel_says_in_a_note_where_it_came_from():
    with pytest.raises(TypeError, match="tc_cerr::scale: x must be float32") as ei:
        tp.compile(lambda x: scale(x, 2.0))(tp.arange(3))
    notes = " ".join(getattr(ei.value, "__notes__", ()))
    assert "tensorplay.compile" in notes and "fake kernel of tc_cerr::scale" in notes, notes
    assert "refused these inputs" in notes and "opcheck" in notes, notes


def test_a_kernel_run_as_its_fake_that_refuses_says_so_in_a_note():
    with pytest.raises(ValueError, match="n=3 too large") as ei:
        tp.compile(lambda x: nofake(x, 3))(tp.ones(2))
    notes = " ".join(getattr(ei.value, "__notes__", ()))
    assert "no fake kernel" in notes and "register_fake" in notes, notes


@pytest.mark.parametrize("fn,words", [
    (lambda x: cpu_only(x), "register_fake"),             # no fake, no default kernel
    (lambda x: reads(x), "failed on fake tensors"),       # its kernel reads data
    (lambda x: bad_fake(x), "returned a real tensor"),
], ids=["no_fake", "kernel_reads_data", "fake_returns_real"])
def test_what_only_compile_can_fail_on_stays_a_compile_error(fn, words):
    assert fn(_x()) is not None                           # eager is fine
    with pytest.raises(CompileError, match=words):
        tp.compile(fn)(_x())


def test_a_leaked_capture_tensor_stays_a_compile_error():
    kept = {"in": []}

    @tp.compile
    def f(x):
        kept["in"].append(x)          # a nested list: not an object the watch stops before
        return x + 1

    f(_x())
    with pytest.raises(CompileError, match="capture"):
        kept["in"][0] * 2


# ------------------------------------------------------------ the user's own errors: unchanged

@pytest.mark.parametrize("exc", [ValueError("bad config"), KeyError("k"), ZeroDivisionError("z"),
                                 TypeError("mine"), RuntimeError("mine too")],
                         ids=["ValueError", "KeyError", "ZeroDivisionError", "TypeError",
                              "RuntimeError"])
def test_errors_of_the_users_own_code_propagate_unchanged(exc):
    def f(x):
        x = x * 2            # ops recorded before the user's raise
        raise exc

    with pytest.raises(type(exc)) as ei:
        tp.compile(f)(_x())
    assert ei.value is exc and not getattr(exc, "__notes__", None)


def test_plain_python_errors_in_the_compiled_function_are_eagers():
    for fn in (lambda x: {}["k"], lambda x: 1 / 0, lambda x: [1][3], lambda x: int("a")):
        _same_as_eager(fn)


# ------------------------------------------------------- no internal class name in any message

@pytest.mark.parametrize("fn", [
    lambda x: x.foo,
    lambda x: setattr(x, "foo", 1),
    lambda x: x(),
    lambda x: x.shape.foo,
    lambda x: x.shape.__setitem__(0, 1),
    lambda x: complex(x),
    lambda x: format(x, ".2f"),
    lambda x: tp.add(x, 1).foo,
    lambda x: x.shape * "a",
    lambda x: "a" * x.shape,
    lambda x: x.shape.count(),
    lambda x: x.requires_grad_(1, 2),
], ids=["getattr", "setattr", "call", "shape_getattr", "shape_setitem", "complex",
        "format_spec_on_2d", "op_result_getattr", "shape_times_str", "str_times_shape",
        "shape_count_no_arg", "method_arity"])
def test_messages_name_tensor_and_tuple_not_the_capture_classes(fn):
    typ, msg = _same_as_eager(fn)
    assert "Capture" not in msg and "SizeTuple" not in msg


# ------------------------------------- data-dependent Python: named (fullgraph=True), or eager

def _halve_while_large(x):
    while x.sum() > 1:
        x = x / 2
    return x


DATA_DEPENDENT = {
    "if": (lambda x: x + 1 if x.sum() > 0 else x - 1, "bool(tensor)"),
    "while": (_halve_while_large, "bool(tensor)"),
    "not": (lambda x: not x.sum(), "bool(tensor)"),
    "item": (lambda x: x.sum().item(), "Tensor.item()"),
    "tolist": (lambda x: x.tolist(), "Tensor.tolist()"),
    "int": (lambda x: int(x.sum()), "int(tensor)"),
    "float": (lambda x: float(x.sum()), "float(tensor)"),
    "index": (lambda x: [1, 2, 3][x.sum().to(tp.int64)], "Tensor.__index__"),
    "range": (lambda x: range(x.sum().to(tp.int64)), "Tensor.__index__"),
    "numpy": (lambda x: x.numpy(), "Tensor.numpy()"),
    "format": (lambda x: f"{x.sum():.3f}", "f-string"),
    "dlpack": (lambda x: x.__dlpack__(), "Tensor.__dlpack__()"),
}


def _value_or_error(f):
    """What ``f(_x())`` gives, comparable across two runs: a tensor's or array's values, a
    Python value, the (type, message) of what it raises; a DLPack capsule by its type."""
    try:
        out = f(_x())
    except Exception as e:  # noqa: BLE001 - eager's error is the eager result to compare
        return type(e), str(e)
    if isinstance(out, tp.Tensor) or hasattr(out, "__array__"):
        return type(out), out.tolist()
    if type(out).__name__ == "PyCapsule":
        return type(out)
    return type(out), out


def _graph_break_runs_eagerly(fn):
    """Without fullgraph=True, data-dependent Python is a graph break: eager's result (or
    eager's error), the reason recorded in ``graph_skips``."""
    c = tp.compile(fn)
    assert _value_or_error(c) == _value_or_error(fn)
    reasons = list(c.graph_skips.values())
    assert reasons and all(r.startswith("runs eagerly: ") for r in reasons), reasons
    return reasons


@pytest.mark.parametrize("name", list(DATA_DEPENDENT))
def test_data_dependent_python_names_the_construct_the_user_wrote(name):
    fn, words = DATA_DEPENDENT[name]
    with pytest.raises(DispatchError) as ei:
        tp.compile(fn, fullgraph=True)(_x())
    msg = str(ei.value)
    assert words in msg, msg
    assert "tensorplay.compile" in msg and "data-dependent" in msg, msg
    if name not in ("item",):
        assert "item()" not in msg, msg      # not the method it happens to be built on
    (reason,) = _graph_break_runs_eagerly(fn)
    assert words in reason, reason           # graph_skips names the construct too


def test_numpy_asarray_of_a_captured_tensor_names_array_conversion():
    np = pytest.importorskip("numpy")
    fn = lambda x: np.asarray(x)             # noqa: E731
    with pytest.raises(DispatchError, match=r"numpy\.asarray\(tensor\)") as ei:
        tp.compile(fn, fullgraph=True)(_x())
    assert "Tensor.numpy()" not in str(ei.value)
    (reason,) = _graph_break_runs_eagerly(fn)
    assert "numpy.asarray(tensor)" in reason, reason


@pytest.mark.parametrize("fn", [
    lambda x: x.item(),                          # 6 elements: not a scalar, known without data
    lambda x: float(x),
    lambda x: int(x),
    lambda x: bool(x),
    lambda x: x.requires_grad_().numpy(),        # requires grad: refused before the data
    lambda x: x.sum().backward(),                # nothing requires grad
], ids=["item_of_6", "float_of_6", "int_of_6", "bool_of_6", "numpy_requires_grad",
        "backward_without_grad"])
def test_errors_known_without_the_data_are_eagers(fn):
    _same_as_eager(fn)
