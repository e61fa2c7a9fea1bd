"""A number beside an integer or bool tensor is converted to its dtype checked, as torch does
(session 60, a new user's findings): ``where(m, int8_t, 200)``, ``int8_t.where(m, 200)`` and
``addcmul(int8_t, a, b, value=200)`` wrapped to -56 where torch raises "value cannot be
converted to type int8_t without overflow"; ``add(bool_t, bool_t, alpha=2.5)`` was accepted
where torch refuses a float alpha for every integral result, bool included. In range values,
and an unsigned dtype's negative (two's complement, as torch), still work.
"""
import pytest

import tensorplay as tp


@pytest.fixture
def x8():
    return tp.tensor([1, 3, -2], dtype=tp.int8)


@pytest.mark.parametrize("call", [
    lambda x, m: tp.where(m, x, 200), lambda x, m: tp.where(m, 200, x),
    lambda x, m: x.where(m, 200), lambda x, m: tp.where(m, x, -129),
    lambda x, m: tp.addcmul(x, x, x, value=200), lambda x, m: tp.addcmul(x, x, x, value=-300),
], ids=["where-other", "where-input", "method", "where-low", "addcmul", "addcmul-low"])
def test_an_int_out_of_an_integer_dtypes_range_is_refused(x8, call):
    with pytest.raises(RuntimeError, match="overflow"):
        call(x8, x8 > 0)


def test_in_range_ints_and_unsigned_negatives_still_work(x8):
    m = x8 > 0
    assert tp.where(m, x8, 100).tolist() == [1, 3, 100]
    assert x8.where(m, -128).tolist() == [1, 3, -128]
    assert tp.addcmul(x8, x8, x8, value=2).tolist() == [3, 21, 6]
    u8 = tp.tensor([1, 2, 3], dtype=tp.uint8)
    assert tp.where(u8 > 1, u8, -1).tolist() == [255, 2, 3]          # torch's two's complement
    assert tp.where(m, x8, 2.5).dtype == tp.float32                 # a float promotes: no check


@pytest.mark.parametrize("alpha", [2.5, 1.0])
def test_a_float_alpha_with_bool_tensors_is_refused(alpha):
    b = tp.tensor([True, False])
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        tp.add(b, b, alpha=alpha)
    assert tp.add(b, b, alpha=2).tolist() == [True, False]
    assert tp.add(b, b, alpha=True).tolist() == [True, False]


def test_index_add_of_bool_tensors_takes_a_float_alpha_as_torch():
    # torch's index_add (unlike add/sub) accepts a float alpha for bool: bool(alpha) scales
    b = tp.zeros(2, 3, dtype=tp.bool)
    r = b.index_add(0, tp.tensor([0, 1]), tp.ones(2, 3, dtype=tp.bool), alpha=0.5)
    assert r.dtype == tp.bool and r.tolist() == [[True] * 3, [True] * 3]
