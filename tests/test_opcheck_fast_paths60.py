"""opcheck's cheaper copies still catch what they caught: the expanded layout of ``test_layouts``
(one row copied, then expanded), the row-major reference copies (clones), the float64 reads of
``test_gradients`` and the grown sample of ``test_aot_dispatch_dynamic``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.testing.opcheck import run_checks

Tensor = tp.Tensor


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@lib.custom_op("fast60::rows_from_storage", mutates_args=(), device_types="cpu")
def rows_from_storage(x: Tensor) -> Tensor:
    """Doubles ``x`` (2-d), but takes the number of rows from the memory behind it: the rows
    that fit in the buffer (a kernel sizing its loop by the allocation, not by the shape). Right
    for every layout whose buffer holds all rows -- wrong for a broadcast (expanded) input, whose
    buffer holds one row."""
    a = x.detach().numpy()
    rows = min(a.shape[0], _root(a).size // max(a.shape[1], 1))
    out = np.zeros(a.shape, a.dtype)
    out[:rows] = a[:rows] * 2.0
    return tp.from_numpy(out)


@rows_from_storage.register_fake
def _(x):
    return x.new_empty(x.shape)


def test_layouts_expanded_kind_catches_a_kernel_that_misreads_broadcast_inputs():
    res = run_checks(rows_from_storage, (tp.randn(4, 6),), test_utils="test_layouts")
    r = res["test_layouts"]
    assert r.status == "fail", r.message
    # the expanded layout alone exposes it: every other layout has all rows in its buffer
    assert "with expanded inputs (x)" in r.message
    for kind in ("transposed", "storage offset", "padded slice"):
        assert f"with {kind} inputs" not in r.message, r.message


@lib.custom_op("fast60::writes_input", mutates_args=(), device_types="cpu")
def writes_input(x: Tensor) -> Tensor:
    """Writes its input (not declared) through NumPy, then returns a copy."""
    a = x.detach().numpy()
    a[...] = a * 3.0
    return tp.from_numpy(a.copy())


@writes_input.register_fake
def _(x):
    return x.new_empty(x.shape)


@pytest.mark.parametrize("test", ["test_layouts", "test_schema", "test_faketensor",
                                  "test_aot_dispatch_dynamic"])
def test_checks_run_the_op_on_copies_of_a_row_major_sample(test):
    x = tp.randn(4, 6)
    before = x.numpy().copy()
    run_checks(writes_input, (x,), test_utils=test)
    assert np.array_equal(x.numpy(), before) and x._version == 0


def test_schema_still_sees_the_undeclared_write_on_its_row_major_clone():
    res = run_checks(writes_input, (tp.randn(4, 6),), test_utils="test_schema")
    r = res["test_schema"]
    assert r.status == "fail" and "values changed" in r.message, r.message


def _scale_op(name, derivative):
    """``x * 3.0`` as custom op ``fast60::<name>``, its backward ``g * derivative``."""
    @lib.custom_op(f"fast60::{name}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x * 3.0

    @op.register_fake
    def _(x):
        return x.new_empty(x.shape)
    op.register_autograd(lambda ctx, g: g * derivative)
    return op


scale = _scale_op("scale", 3.0)
scale_wrong = _scale_op("scale_wrong", 2.5)      # the wrong derivative


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_gradients_read_in_float64_still_tell_right_from_wrong(dtype):
    x = tp.randn(5, 7).to(getattr(tp, dtype))
    ok = run_checks(scale, (x,), test_utils="test_gradients")["test_gradients"]
    assert ok.status == "pass", ok.message
    bad = run_checks(scale_wrong, (x,), test_utils="test_gradients")["test_gradients"]
    assert bad.status == "fail" and "is wrong" in bad.message, bad.message


@lib.custom_op("fast60::fixed_rows_fake", mutates_args=())
def fixed_rows_fake(x: Tensor) -> Tensor:
    return x * 2.0


@fixed_rows_fake.register_fake
def _(x):
    return x.new_empty((4, x.shape[1]))     # right for the 4-row sample only


def test_aot_second_shape_of_a_row_major_sample_still_exposes_a_size_bound_fake():
    x = tp.randn(4, 6)
    r = run_checks(fixed_rows_fake, (x,), test_utils="test_aot_dispatch_dynamic")
    msg = r["test_aot_dispatch_dynamic"].message
    assert r["test_aot_dispatch_dynamic"].status == "fail", msg
    assert "second input shape" in msg and "(5, 6)" in msg, msg
    # on the sample's own shape the fake is right: only the grown sample shows the fault
    fake = run_checks(fixed_rows_fake, (x,), test_utils="test_faketensor")["test_faketensor"]
    assert fake.status == "pass", fake.message


# test_autograd_registration runs its plain run (no grad) only where its answer decides: the
# failures it tells apart still come out as before

@lib.custom_op("fast60::scales_in_place", mutates_args=())
def scales_in_place(x: Tensor) -> Tensor:
    x.mul_(2.0)         # an undeclared in-place write into its input
    return x.clone()


@scales_in_place.register_fake
def _(x):
    return x.new_empty(x.shape)


def test_autograd_check_names_an_in_place_write_into_an_input_that_requires_grad():
    # no formula: the kernel runs under autograd, where the write into a leaf raises
    r = run_checks(scales_in_place, (tp.randn(3, 4, requires_grad=True),),
                   test_utils="test_autograd_registration")["test_autograd_registration"]
    assert r.status == "fail", r.message
    assert "writes in place into an input that requires grad" in r.message, r.message


@lib.custom_op("fast60::always_raises", mutates_args=())
def always_raises(x: Tensor) -> Tensor:
    raise ValueError("fast60: no")


@always_raises.register_fake
def _(x):
    return x.new_empty(x.shape)


always_raises.register_autograd(lambda ctx, g: g)


def test_autograd_check_tells_a_kernel_that_fails_with_and_without_grad():
    r = run_checks(always_raises, (tp.randn(3, 4),),
                   test_utils="test_autograd_registration")["test_autograd_registration"]
    assert r.status == "fail" and "(with and without grad)" in r.message, r.message
    assert "ValueError: fast60: no" in r.message
