"""``div(..., rounding_mode='trunc')`` rounds the quotient of the operands *as converted to the
result dtype*: a negative divisor of an unsigned tensor wraps (-3 is 253 in uint8, so
``[1, 5, 255] / -3`` is ``[0, 0, 1]``), and a number or 0-dim tensor outside a signed result's
range wraps too (200 is -56 in int8). TensorPlay added the trunc correction from the signs of
the unconverted operands and gave ``[1, 1, 2]``. Expected values were computed with torch 2.13.0+cpu
(session 61); the uint32 ones from Python integer arithmetic, as torch 2.13 has no uint32 div."""

from __future__ import annotations

import pytest

import tensorplay as tp

U8 = [1, 5, 255]


def _u8():
    return tp.tensor(U8, dtype=tp.uint8)


def _eager(f):
    return f


# each check runs eagerly and through tensorplay.compile
RUNNERS = pytest.mark.parametrize("run", [_eager, tp.compile], ids=["eager", "compile"])


def _check(got, values, dtype):
    assert got.dtype == dtype
    assert got.tolist() == values


@RUNNERS
@pytest.mark.parametrize("divisor", ["int", "0dim_int64", "0dim_int8", "big_negative"])
def test_uint8_trunc_by_negative_number(run, divisor):
    # torch: div(uint8 [1, 5, 255], -3 / tensor(-3) / tensor(-3, int8), 'trunc') -> [0, 0, 1]
    # (uint8); -300 wraps to 212 -> [0, 0, 1] (torch wraps, it does not raise)
    b = {"int": -3, "0dim_int64": tp.tensor(-3), "0dim_int8": tp.tensor(-3, dtype=tp.int8),
         "big_negative": -300}[divisor]
    _check(run(lambda a: tp.div(a, b, rounding_mode="trunc"))(_u8()), [0, 0, 1], tp.uint8)
    _check(run(lambda a: a.div(b, rounding_mode="trunc"))(_u8()), [0, 0, 1], tp.uint8)


@RUNNERS
@pytest.mark.parametrize("divisor", ["int", "0dim"])
def test_uint8_trunc_in_place(run, divisor):
    # torch: uint8 [1, 5, 255].div_(-3 / tensor(-3), rounding_mode='trunc') -> [0, 0, 1]
    b = -3 if divisor == "int" else tp.tensor(-3)

    def f(a):
        a = a.clone()
        a.div_(b, rounding_mode="trunc")
        return a
    _check(run(f)(_u8()), [0, 0, 1], tp.uint8)


@RUNNERS
def test_uint8_trunc_neighbours(run):
    # torch: uint8 [1, 5, 255] / uint8 [3, 253, 7] trunc -> [0, 0, 36]; / 300 (wraps to 44) ->
    # [0, 0, 5]; uint8 [1, 5, 255, 200] / int8 [-7, 5, -128, 127] promotes to int16 -> [0, 1, -1, 1]
    a = _u8()
    _check(run(lambda a, b: tp.div(a, b, rounding_mode="trunc"))(
        a, tp.tensor([3, 253, 7], dtype=tp.uint8)), [0, 0, 36], tp.uint8)
    _check(run(lambda a: tp.div(a, 300, rounding_mode="trunc"))(a), [0, 0, 5], tp.uint8)
    _check(run(lambda a, b: tp.div(a, b, rounding_mode="trunc"))(
        tp.tensor([1, 5, 255, 200], dtype=tp.uint8), tp.tensor([-7, 5, -128, 127], dtype=tp.int8)),
        [0, 1, -1, 1], tp.int16)


@RUNNERS
@pytest.mark.parametrize("divisor", ["int", "0dim"])
def test_uint8_floor_remainder_fmod_by_negative(run, divisor):
    # torch: uint8 [1, 5, 255] with -3: floor div, // -> [0, 0, 1]; %, fmod -> [1, 5, 2]
    b = -3 if divisor == "int" else tp.tensor(-3)
    a = _u8()
    _check(run(lambda a: tp.div(a, b, rounding_mode="floor"))(a), [0, 0, 1], tp.uint8)
    _check(run(lambda a: tp.floor_divide(a, b))(a), [0, 0, 1], tp.uint8)
    _check(run(lambda a: a // b)(a), [0, 0, 1], tp.uint8)
    _check(run(lambda a: tp.remainder(a, b))(a), [1, 5, 2], tp.uint8)
    _check(run(lambda a: a % b)(a), [1, 5, 2], tp.uint8)
    _check(run(lambda a: tp.fmod(a, b))(a), [1, 5, 2], tp.uint8)


@RUNNERS
def test_signed_trunc_by_number_outside_the_range(run):
    # torch: int8 [-7, 7, 100] trunc by 200 (wraps to -56) -> [0, 0, -1], by -300 (-44) ->
    # [0, 0, -2]; tensor(200) (wraps to -56 in int8) / int8 [3, -3, 7] -> [-18, 18, -8]
    a = tp.tensor([-7, 7, 100], dtype=tp.int8)
    _check(run(lambda a: tp.div(a, 200, rounding_mode="trunc"))(a), [0, 0, -1], tp.int8)
    _check(run(lambda a: tp.div(a, -300, rounding_mode="trunc"))(a), [0, 0, -2], tp.int8)
    _check(run(lambda a, b: tp.div(a, b, rounding_mode="trunc"))(
        tp.tensor(200), tp.tensor([3, -3, 7], dtype=tp.int8)), [-18, 18, -8], tp.int8)


@RUNNERS
def test_signed_trunc_unchanged(run):
    # torch: int32 [-7, 7, -8, 8, 0, -1] trunc by 3 -> [-2, 2, -2, 2, 0, 0], by -3 -> negated;
    # int64 [-7, 7, -8, 8, 0, -1] / [2, -2, -3, 3, -5, 4] -> [-3, -3, 2, 2, 0, 0];
    # int8 [-128, 127, -7] / [-1, -1, 2] -> [-128, -127, -3] (-128 / -1 wraps)
    x = tp.tensor([-7, 7, -8, 8, 0, -1], dtype=tp.int32)
    _check(run(lambda a: tp.div(a, 3, rounding_mode="trunc"))(x), [-2, 2, -2, 2, 0, 0], tp.int32)
    _check(run(lambda a: tp.div(a, -3, rounding_mode="trunc"))(x), [2, -2, 2, -2, 0, 0], tp.int32)
    _check(run(lambda a, b: tp.div(a, b, rounding_mode="trunc"))(
        tp.tensor([-7, 7, -8, 8, 0, -1]), tp.tensor([2, -2, -3, 3, -5, 4])),
        [-3, -3, 2, 2, 0, 0], tp.int64)
    _check(run(lambda a, b: tp.div(a, b, rounding_mode="trunc"))(
        tp.tensor([-128, 127, -7], dtype=tp.int8), tp.tensor([-1, -1, 2], dtype=tp.int8)),
        [-128, -127, -3], tp.int8)


def test_uint32_trunc_is_floor():
    # torch 2.13 has no uint32 div; -3 wraps to 2**32 - 3, so trunc (= floor for unsigned
    # values) is [v // (2**32 - 3)] = [0, 0, 1] for [1, 5, 2**32 - 1]
    a = tp.tensor([1, 5, 2**32 - 1], dtype=tp.uint32)
    _check(tp.div(a, -3, rounding_mode="trunc"), [0, 0, 1], tp.uint32)
    _check(tp.div(a, tp.tensor(-3), rounding_mode="trunc"), [0, 0, 1], tp.uint32)
