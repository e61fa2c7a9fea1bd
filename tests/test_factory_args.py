"""Factory arguments checked as torch does: fill values (type, range), sizes (negative, bool,
non-int, ``size=``), ``requires_grad``, dtype inference from numpy scalars. Each rule holds for
real tensors, meta tensors, ``FakeTensorMode``, fake tensors' ``new_*`` and compile capture."""

import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode, make_fake


# --- 1. fill values that are not numbers --------------------------------------------------------

BAD_FILLS = [None, "3", [1, 2], (1,), object()]


def _fill_id(v):
    """A test id for a fill value, the same in every process (an object()'s repr is its address)."""
    return "object()" if type(v) is object else repr(v)


@pytest.mark.parametrize("value", BAD_FILLS, ids=_fill_id)
@pytest.mark.parametrize("dtype", [None, tp.float32, tp.int32, tp.bool])
def test_full_refuses_non_number_fill(value, dtype):
    with pytest.raises(TypeError, match=r"full\(\).*fill_value.*Number"):
        tp.full((2,), value, dtype=dtype)


@pytest.mark.parametrize("value", BAD_FILLS, ids=_fill_id)
def test_full_like_and_new_full_refuse_non_number_fill(value):
    for x in (tp.zeros(2), tp.zeros(2, dtype=tp.int8)):
        with pytest.raises(TypeError, match=r"full_like\(\).*fill_value"):
            tp.full_like(x, value)
        with pytest.raises(TypeError, match=r"new_full\(\).*fill_value"):
            x.new_full((2,), value)


@pytest.mark.parametrize("value", [None, "3", [1, 2]], ids=repr)
def test_fake_and_meta_refuse_non_number_fill(value):
    with FakeTensorMode():
        with pytest.raises(TypeError, match="fill_value"):
            tp.full((2,), value)
        fx = tp.empty(2)
        with pytest.raises(TypeError, match="fill_value"):
            tp.full_like(fx, value)
        with pytest.raises(TypeError, match="fill_value"):
            fx.new_full((2,), value)
    with pytest.raises(TypeError, match="fill_value"):
        tp.full((2,), value, device="meta")
    with pytest.raises(TypeError, match="fill_value"):
        tp.ops.tp.full([2], value, dtype=tp.float32, device=tp.device("meta"))


def test_complex_fill_is_refused_not_truncated():
    with pytest.raises(TypeError, match="fill_value.*complex"):
        tp.full((2,), 1 + 2j)
    with pytest.raises(TypeError, match="fill_value.*complex"):
        tp.full_like(tp.zeros(2), np.complex64(1 + 1j))


def test_numeric_fills_still_work():
    assert tp.full((2,), 1.5).tolist() == [1.5, 1.5]
    assert tp.full((2,), 1.5, dtype=tp.int32).tolist() == [1, 1]     # truncation, as torch
    assert tp.full((2,), np.float32(2.5)).tolist() == [2.5, 2.5]
    assert tp.full((2,), tp.tensor(3.0)).tolist() == [3.0, 3.0]
    assert tp.full((2,), True, dtype=tp.int8).tolist() == [1, 1]


# --- 2. values the dtype cannot hold ----------------------------------------------------------

OVERFLOWS = [
    (math.nan, tp.int32), (math.inf, tp.int64), (-math.inf, tp.uint8), (1e10, tp.int8),
    (1e10, tp.int32), (300, tp.int8), (256, tp.uint8), (-129, tp.int8), (-1.5, tp.uint8),
    (2**31, tp.int32), (2**63, tp.int64), (1e10, tp.float16), (70000, tp.float16),
    (1e300, tp.float32), (2**64, tp.bfloat16), (2**64, tp.float64),
]


@pytest.mark.parametrize("value,dtype", OVERFLOWS, ids=repr)
def test_full_refuses_value_out_of_dtype_range(value, dtype):
    msg = f"value cannot be converted to type {dtype.name} without overflow"
    with pytest.raises(RuntimeError, match=msg):
        tp.full((2,), value, dtype=dtype)
    x = tp.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError, match=msg):
        tp.full_like(x, value)
    with pytest.raises(RuntimeError, match=msg):
        x.new_full((3,), value)
    with FakeTensorMode():
        with pytest.raises(RuntimeError, match=msg):
            tp.full((2,), value, dtype=dtype)
    with pytest.raises(RuntimeError, match=msg):
        tp.full((2,), value, dtype=dtype, device="meta")


def test_full_int_without_dtype_beyond_int64():
    with pytest.raises(RuntimeError, match="int64 without overflow"):
        tp.full((2,), 2**63)


def test_compile_refuses_nan_into_int():
    f = tp.compile(lambda x: tp.full(x.shape, float("nan"), dtype=tp.int32))
    with pytest.raises(RuntimeError, match="int32 without overflow"):
        f(tp.ones(2))


@pytest.mark.parametrize("value,dtype,expect", [
    (math.inf, tp.float16, math.inf), (math.nan, tp.float32, None), (-1, tp.uint8, 255),
    (-255, tp.uint8, 1), (127, tp.int8, 127), (2**63, tp.bfloat16, 2.0**63),
    (2**63, tp.bool, True), (65504, tp.float16, 65504.0), (2**63 - 1, tp.int64, 2**63 - 1),
    (1e300, tp.float64, 1e300), (-(2**31), tp.int32, -(2**31)),
])
def test_full_values_in_range(value, dtype, expect):
    got = tp.full((2,), value, dtype=dtype).tolist()
    if expect is None:
        assert all(v != v for v in got)
    else:
        assert got == [expect, expect]


def test_overflow_check_keeps_numpy_warnings_out():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tp.full((2,), math.inf, dtype=tp.float16).tolist() == [math.inf, math.inf]


# --- 3. negative sizes in every mode ------------------------------------------------------------

def _neg_calls():
    return [
        ("empty", lambda d: tp.empty(2, -3, device=d)),
        ("full", lambda d: tp.zeros(-1, device=d)),
        ("full", lambda d: tp.ones((2, -1), device=d)),
        ("full", lambda d: tp.full((-2,), 1.0, device=d)),
        ("rand", lambda d: tp.rand(-1, device=d)),
        ("randn", lambda d: tp.randn(-1, device=d)),
    ]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_negative_sizes_refused(device):
    for op, call in _neg_calls():
        with pytest.raises(ValueError, match=f"tp::{op}: negative dimensions are not allowed"):
            call(device)


def test_negative_sizes_refused_under_fake_mode_and_new_methods():
    with FakeTensorMode():
        for op, call in _neg_calls():
            with pytest.raises(ValueError, match=f"tp::{op}: negative dimensions"):
                call("cpu")
        fx = tp.empty(2)
        with pytest.raises(ValueError, match="tp::full: negative dimensions"):
            fx.new_ones(-4)
        with pytest.raises(ValueError, match="tp::empty: negative dimensions"):
            fx.new_empty((2, -1))
    fk = make_fake([2, 3], tp.float32, tp.device("cpu"))
    m = tp.empty(2, device="meta")
    for t in (fk, m, tp.ones(2)):
        with pytest.raises(ValueError, match="tp::full: negative dimensions"):
            t.new_zeros(-2)
        with pytest.raises(ValueError, match="tp::full: negative dimensions"):
            t.new_full((-2,), 1.0)


# --- 4. size spellings, requires_grad -----------------------------------------------------------

BAD_SIZES = [True, (True, 2), 2.0, (2.0, 3), None, "3", range(2, 4), (2, None)]
FACTORIES = ["empty", "zeros", "ones", "rand", "randn"]


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
@pytest.mark.parametrize("name", FACTORIES)
def test_bad_size_names_factory_and_size(size, name):
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'size'"):
        getattr(tp, name)(size)


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
def test_bad_size_in_full_and_new_methods(size):
    with pytest.raises(TypeError, match=r"full\(\): argument 'size'"):
        tp.full(size, 1.0)
    x = tp.ones(2)
    for name in ("new_empty", "new_zeros", "new_ones"):
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'size'"):
            getattr(x, name)(size)
    with pytest.raises(TypeError, match=r"new_full\(\): argument 'size'"):
        x.new_full(size, 1.0)
    with FakeTensorMode():
        with pytest.raises(TypeError, match=r"zeros\(\): argument 'size'"):
            tp.zeros(size)


def test_integer_like_sizes_still_accepted():
    class Size(tuple):
        pass
    assert tp.zeros(np.int64(2), np.int32(3)).shape == (2, 3)
    assert tp.empty((np.int64(2),)).shape == (2,)
    assert tp.ones(Size((2, 3))).shape == (2, 3)
    assert tp.full([2], 7).shape == (2,)
    assert tp.ones(2).new_ones(np.int64(3)).shape == (3,)


@pytest.mark.parametrize("name", FACTORIES)
def test_size_keyword(name):
    f = getattr(tp, name)
    assert f(size=(2, 3)).shape == (2, 3)
    assert f(size=[4]).shape == (4,)
    with pytest.raises(TypeError, match="size"):
        f(2, size=(2,))


def test_new_methods_require_size():
    x = tp.ones(2)
    for name in ("new_empty", "new_zeros", "new_ones"):
        with pytest.raises(TypeError, match=rf"{name}\(\).*'size'"):
            getattr(x, name)()
        assert getattr(x, name)(()).shape == ()


@pytest.mark.parametrize("rg", ["no", 1, None, 0.0])
def test_requires_grad_must_be_bool(rg):
    x = tp.ones(2)
    calls = {
        "empty": lambda: tp.empty(2, requires_grad=rg),
        "zeros": lambda: tp.zeros(2, requires_grad=rg),
        "ones": lambda: tp.ones(2, requires_grad=rg),
        "full": lambda: tp.full((2,), 1.0, requires_grad=rg),
        "rand": lambda: tp.rand(2, requires_grad=rg),
        "zeros_like": lambda: tp.zeros_like(x, requires_grad=rg),
        "full_like": lambda: tp.full_like(x, 1.0, requires_grad=rg),
        "new_zeros": lambda: x.new_zeros(2, requires_grad=rg),
        "new_full": lambda: x.new_full((2,), 1.0, requires_grad=rg),
        "randn_like": lambda: tp.randn_like(x, requires_grad=rg),
        "tensor": lambda: tp.tensor([1.0], requires_grad=rg),
        "eye": lambda: tp.eye(2, requires_grad=rg),
        "arange": lambda: tp.arange(2.0, requires_grad=rg),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'requires_grad' must be bool"):
            call()


def test_requires_grad_bools():
    assert tp.zeros(2, requires_grad=True).requires_grad
    assert not tp.zeros(2, requires_grad=False).requires_grad
    assert tp.ones(2).new_ones(2, requires_grad=True).requires_grad


# --- 5. dtype inferred from numpy scalars -------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [
    (np.int64(3), tp.int64), (np.int32(3), tp.int64), (np.uint8(3), tp.int64),
    # a NumPy bool_ is no Python bool: torch (2.13) reads it as a number, the default float
    (np.bool_(True), tp.float32), (np.float32(3), tp.float32), (np.float64(3), tp.float32),
    (3, tp.int64), (True, tp.bool), (3.0, tp.float32),
])
def test_full_infers_dtype_from_numpy_scalars(value, dtype):
    t = tp.full((2,), value)
    assert t.dtype is dtype
    assert t.tolist() == [value.item() if hasattr(value, "item") else value] * 2
    with FakeTensorMode():
        assert tp.full((2,), value).dtype is dtype


def test_randint_size_checks_name_randint():
    with pytest.raises(TypeError, match=r"randint\(\): argument 'size'"):
        tp.randint(0, 5, (True, 2))
    with pytest.raises(ValueError, match="tp::randint: negative dimensions"):
        tp.randint(0, 5, (-1,), device="meta")
    with FakeTensorMode():
        with pytest.raises(ValueError, match="tp::randint: negative dimensions"):
            tp.randint(0, 5, (2, -1))
    assert tp.randint(0, 5, (2, 3)).shape == (2, 3)


@pytest.mark.parametrize("dtype,value,err", [
    ("int8", 300, RuntimeError), ("int32", float("nan"), RuntimeError),
    ("int64", float("inf"), RuntimeError), ("float16", 1e10, RuntimeError),
    ("float32", "3", TypeError), ("float32", [1, 2], TypeError), ("int8", None, TypeError)])
def test_fill_in_place_checks_the_value_as_full_does(dtype, value, err):
    """Tensor.fill_ / zero_'s sibling: the same host check as full (torch: fill_ of an int8
    tensor with 300 is "value cannot be converted to type int8 without overflow")."""
    t = tp.zeros(3, dtype=getattr(tp, dtype))
    with pytest.raises(err, match="fill_|overflow"):
        t.fill_(value)
    assert t.tolist() == [0, 0, 0]          # nothing written
    t.fill_(5)
    assert t.tolist() == [5, 5, 5]
