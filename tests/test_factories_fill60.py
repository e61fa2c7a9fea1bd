"""``full``'s dtype from its fill value as torch infers it, and the fill factories' per-call
paths (``full``, ``full_like``, ``ones_like``, ``zeros_like``, ``empty_like``, ``new_*``)
giving torch's results on every spelling: values, dtypes, layouts, ``requires_grad``, errors.

torch's rule for ``full(size, value)`` without ``dtype``: a Python ``bool`` gives bool, an int
(NumPy integer scalars included) int64, anything else the default float dtype -- a NumPy
``bool_`` scalar too (it is no Python bool: torch reads it as a number); a 0-dim tensor is read
as its value (bool, integer -> int64, floating -> the default float).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp


@pytest.fixture
def default_float64():
    old = tp.get_default_dtype()
    tp.set_default_dtype(tp.float64)
    try:
        yield
    finally:
        tp.set_default_dtype(old)


def test_full_numpy_bool_scalar_gives_the_default_float_dtype():
    r = tp.full((2,), np.True_)
    assert r.dtype == tp.float32 and r.tolist() == [1.0, 1.0]
    assert tp.full((3,), np.False_).tolist() == [0.0, 0.0, 0.0]


def test_full_numpy_bool_scalar_follows_set_default_dtype(default_float64):
    assert tp.full((1,), np.True_).dtype == tp.float64


def test_full_python_bool_and_numpy_ints_keep_their_kinds():
    assert tp.full((2,), True).dtype == tp.bool
    assert tp.full((2,), np.int32(3)).dtype == tp.int64
    assert tp.full((2,), np.float16(1.5)).dtype == tp.float32


@pytest.mark.parametrize("value, dtype, expected", [
    (lambda: tp.tensor(True), tp.bool, [True, True]),
    (lambda: tp.tensor(3, dtype=tp.int32), tp.int64, [3, 3]),
    (lambda: tp.tensor(7), tp.int64, [7, 7]),
    (lambda: tp.tensor(2.5, dtype=tp.float16), tp.float32, [2.5, 2.5]),
    (lambda: tp.tensor(2.5, dtype=tp.float64), tp.float32, [2.5, 2.5]),
])
def test_full_zero_dim_tensor_value_gives_its_kinds_dtype(value, dtype, expected):
    r = tp.full((2,), value())
    assert r.dtype == dtype and r.tolist() == expected


def test_full_zero_dim_float_tensor_follows_set_default_dtype(default_float64):
    assert tp.full((2,), tp.tensor(1.5, dtype=tp.float16)).dtype == tp.float64


def test_full_zero_dim_tensor_value_with_a_dtype_is_converted():
    r = tp.full((2,), tp.tensor(2.5), dtype=tp.int64)
    assert r.dtype == tp.int64 and r.tolist() == [2, 2]


# -- the range check's window: every value the dtype's kind takes unchanged passes, anything else
# gets torch's treatment (check_fill): the edges on both sides, each factory spelling --------------

_INT_RANGES = [(tp.int8, -128, 127), (tp.uint8, 0, 255), (tp.int16, -32768, 32767),
               (tp.int32, -2**31, 2**31 - 1), (tp.int64, -2**63, 2**63 - 1)]


def _spellings(value, dtype):
    src = tp.zeros(3, dtype=dtype)
    return [lambda: tp.full((3,), value, dtype=dtype), lambda: tp.full_like(src, value),
            lambda: tp.full_like(tp.zeros(3), value, dtype=dtype),
            lambda: src.new_full((3,), value)]


@pytest.mark.parametrize("dtype, lo, hi", _INT_RANGES)
def test_integer_fill_values_at_the_edges_of_the_dtype(dtype, lo, hi):
    for value in (lo, hi):
        for make in _spellings(value, dtype):
            r = make()
            assert r.dtype == dtype and r.tolist() == [value] * 3
    for value in (lo - 1, hi + 1):
        if dtype == tp.uint8 and value == -1:
            continue          # torch wraps -1 into uint8 (below)
        for make in _spellings(value, dtype):
            with pytest.raises(RuntimeError, match="overflow"):
                make()


def test_uint8_takes_minus_one_as_255_and_refuses_minus_256():
    for make in _spellings(-1, tp.uint8):
        assert make().tolist() == [255] * 3
    for make in _spellings(-256, tp.uint8):
        with pytest.raises(RuntimeError, match="overflow"):
            make()


@pytest.mark.parametrize("dtype", [tp.int8, tp.int32, tp.int64, tp.uint8])
def test_floats_into_integers_truncate_and_non_finite_ones_are_refused(dtype):
    for make in _spellings(2.75, dtype):
        assert make().tolist() == [2] * 3
    for value in (math.nan, math.inf, -math.inf):
        for make in _spellings(value, dtype):
            with pytest.raises(RuntimeError, match="overflow"):
                make()


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float32, tp.float64])
def test_float_fill_values_special_ones_and_the_half_range(dtype):
    for value in (math.nan, math.inf, -math.inf, -0.0, 65504.0, -65504.0, 0.5, 3):
        for make in _spellings(value, dtype):
            got = make().tolist()
            if value != value:
                assert all(v != v for v in got)
            else:
                want = tp.tensor([value], dtype=dtype).item()     # the dtype's rounding
                assert got == [want] * 3
                assert [math.copysign(1.0, v) for v in got] == [math.copysign(1.0, value)] * 3


def test_float16_refuses_values_beyond_its_range_bfloat16_takes_them():
    for make in _spellings(70000.0, tp.float16):
        with pytest.raises(RuntimeError, match="overflow"):
            make()
    for make in _spellings(70000.0, tp.bfloat16):
        assert make().tolist() == [70144.0] * 3     # the nearest bfloat16


def test_bool_dtype_takes_any_number_as_its_truth():
    for value, want in ((2, True), (0, False), (0.5, True), (-0.0, False), (2**62, True)):
        for make in _spellings(value, tp.bool):
            assert make().tolist() == [want] * 3


def test_float64_takes_ints_beyond_a_c_long_as_floats_and_refuses_beyond_uint64():
    for make in _spellings(2**63, tp.float64):
        assert make().tolist() == [float(2**63)] * 3
    for make in _spellings(2**64, tp.float64):
        with pytest.raises(RuntimeError, match="overflow"):
            make()


def test_full_default_int64_refuses_beyond_int64_as_torch():
    assert tp.full((1,), 2**63 - 1).tolist() == [2**63 - 1]
    with pytest.raises(RuntimeError, match="overflow"):
        tp.full((1,), 2**63)


# -- the *_like factories' inline fast case --------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda t: tp.empty_like(t), lambda t: tp.zeros_like(t), lambda t: tp.ones_like(t),
    lambda t: tp.full_like(t, 2.0), lambda t: tp.full_like(t, 2.0, dtype=tp.float64)])
def test_like_factories_refuse_what_is_no_tensor_with_torchs_type_error(make):
    for t in ([1.0, 2.0], np.zeros(2), 3.0, None):
        with pytest.raises(TypeError, match="must be Tensor"):
            make(t)


@pytest.mark.parametrize("value", [0, 1, -0.0, 7])
def test_like_factories_take_shape_dtype_and_strides_of_the_source(value):
    """preserve_format: a dense source's strides are kept (row-major, transposed, NHWC); a
    source that is not dense (a slice) gets row-major strides here (its dims' order)."""
    x = tp.zeros(2, 3, 4, 5, dtype=tp.float16)
    cases = [(x, x.stride()), (x.transpose(1, 3), x.transpose(1, 3).stride()),
             (x.contiguous(memory_format=tp.channels_last), (60, 1, 15, 3)),
             (x[:, :, ::2], (30, 10, 5, 1))]
    for src, strides in cases:
        for r in (tp.full_like(src, value), tp.zeros_like(src), tp.ones_like(src),
                  tp.empty_like(src)):
            assert r.shape == src.shape and r.dtype == tp.float16 and r.stride() == strides
        r = tp.full_like(src, value)
        assert set(r.flatten().tolist()) == {value}
        assert math.copysign(1.0, r.flatten()[0].item()) == math.copysign(1.0, value)


def test_like_factories_requires_grad_and_device_arguments():
    x = tp.ones(2, 3)
    for r in (tp.ones_like(x, requires_grad=True), tp.full_like(x, 2.0, requires_grad=True),
              tp.zeros_like(x, requires_grad=True), tp.empty_like(x, requires_grad=True)):
        assert r.requires_grad and r.is_leaf and r.shape == (2, 3)
    for dev in ("cpu", tp.device("cpu"), "cpu:0"):
        assert tp.full_like(x, 1.5, device=dev).device == tp.device("cpu")
        assert tp.full((2,), 1.5, device=dev).device == tp.device("cpu")
        assert tp.ones(2, device=dev).device == tp.device("cpu")
    with pytest.raises(TypeError):
        tp.ones_like(x, requires_grad=1)
    with pytest.raises(TypeError):
        tp.full((2,), 1.0, requires_grad="yes")


def test_a_string_device_is_read_again_after_the_canonical_devices_are_forgotten():
    """The factories remember a device spelling's Device; its canonical device is read from the
    Device per call, so forgetting the canonical devices (a backend registered or removed) is
    seen by the next call."""
    from tensorplay import _device
    for _ in range(2):
        assert tp.zeros(2, device="cpu").device == tp.device("cpu")
        _device.forget_canonical()
    assert tp.full((2,), 1, device="cpu").device == tp.device("cpu")
    for _ in range(2):     # an unknown spelling is never remembered: refused each time
        with pytest.raises(tp.errors.DeviceUnavailableError, match="nosuchdevice60"):
            tp.zeros(2, device="nosuchdevice60")


@pytest.mark.parametrize("api", ["full", "full_like"])
@pytest.mark.parametrize("value", ["1-d", "2-d", "requires_grad"])
def test_a_tensor_fill_value_is_a_number_only_when_0_dim_and_without_grad(api, value):
    # torch: "full(): argument 'fill_value' (position 2) must be Number, not Tensor"; a 1-element
    # 1-d tensor was read as its number and a 0-dim one requiring grad lost its grad silently
    v = {"1-d": tp.tensor([1.0]), "2-d": tp.tensor([[3]]),
         "requires_grad": tp.tensor(2.0, requires_grad=True)}[value]
    call = (lambda f: tp.full((2,), f)) if api == "full" else (lambda f: tp.full_like(tp.ones(2), f))
    with pytest.raises(TypeError, match="must be Number, not Tensor"):
        call(v)
    assert call(tp.tensor(2.0)).tolist() == [2.0, 2.0]          # 0-dim, no grad: its number
