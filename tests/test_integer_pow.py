"""Integer ``pow`` as torch's (found comparing with torch 2.13): a tensor exponent's negative
entries give torch's ``powi`` values (1 ** -n = 1, (-1) ** -n = +-1, else 0) where NumPy raised
ValueError; a negative *number* exponent of an integer op raises torch's RuntimeError (a uint8
base wrapped -1 to 255 and returned garbage; other integers raised ValueError). Expected values
are torch's."""

import pytest

import tensorplay as tp


@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.int16, tp.int8])
def test_tensor_exponent_with_negative_entries(dtype):
    base = tp.tensor([2, -2, 1, -1, 0, 3, -1], dtype=dtype)
    e = tp.tensor([-1, -1, -2, -3, -1, 2, -4], dtype=dtype)
    r = base ** e
    assert r.dtype is dtype and r.tolist() == [0, 0, 1, -1, 0, 9, 1]
    assert tp.pow(base, e).tolist() == [0, 0, 1, -1, 0, 9, 1]


def test_mixed_integer_dtypes_and_broadcasting():
    base = tp.tensor([[1], [2], [-1]], dtype=tp.int64)
    e = tp.tensor([-1, 0, 3], dtype=tp.int8)
    assert (base ** e).tolist() == [[1, 1, 1], [0, 1, 8], [-1, 1, -1]]
    assert (tp.tensor([1, -2], dtype=tp.int64) ** tp.tensor([-1, 2])).tolist() == [1, 4]


def test_number_base_with_an_integer_tensor_exponent():
    assert (2 ** tp.tensor([-1, 2])).tolist() == [0, 4]
    assert (1 ** tp.tensor([-3, 2])).tolist() == [1, 1]
    assert ((-1) ** tp.tensor([-3, -2])).tolist() == [-1, 1]


@pytest.mark.parametrize("dtype", [tp.uint8, tp.int8, tp.int32, tp.int64])
def test_negative_number_exponent_of_an_integer_tensor_is_refused(dtype):
    x = tp.tensor([2, 3], dtype=dtype)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        x ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tp.pow(x, -2)


def test_floating_results_are_unchanged():
    assert (tp.tensor([2, 4]) ** -1.0).tolist() == [0.5, 0.25]
    assert (tp.tensor([2.0, 4.0]) ** tp.tensor([-1, -2])).tolist() == [0.5, 0.0625]
    assert (tp.tensor([2, 3], dtype=tp.uint8) ** 2).tolist() == [4, 9]


def test_integer_pow_in_compile_matches_eager():
    def f(b, e):
        return b ** e + 1

    b = tp.tensor([2, -2, 1, -1])
    e = tp.tensor([-1, 3, -2, -3])
    assert tp.compile(f)(b, e).tolist() == f(b, e).tolist() == [1, -7, 2, 0]


def test_number_exponent_out_of_the_dtype_range_is_refused():
    # torch converts the exponent to the base's dtype, checked (it used to wrap: 200 -> -56)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8"):
        tp.tensor([7, -7], dtype=tp.int8) ** 200
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8"):
        tp.tensor([2, 0], dtype=tp.uint8) ** 256
    assert (tp.tensor([7, 0], dtype=tp.uint8) ** 255).tolist() == [183, 0]
