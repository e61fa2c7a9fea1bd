"""Edges a new-user review found against torch's documented behaviour (expected values and
messages are torch 2.13's): var/std with a dim of a 0-d tensor, split/chunk of a 0-d tensor,
integer division by zero as torch's RuntimeError."""

import math

import pytest

import tensorplay as tp


def test_var_of_a_zero_dim_tensor_takes_dim_0_or_minus_1():
    s = tp.tensor(2.0)
    assert math.isnan(tp.var(s, 0).item()) and math.isnan(s.std(-1).item())
    assert tp.var(s, 0, correction=0).item() == 0.0
    assert tp.var(s, 0, keepdim=True).shape == ()
    with pytest.raises(IndexError, match="Dimension out of range"):
        tp.var(s, 1)


@pytest.mark.parametrize("call, message", [
    (lambda s: s.split(1), "split expects at least a 1-dimensional tensor"),
    (lambda s: tp.split(s, [1]), "split expects at least a 1-dimensional tensor"),
    (lambda s: s.chunk(1), "chunk expects at least a 1-dimensional tensor"),
])
def test_split_and_chunk_of_a_zero_dim_tensor(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(tp.tensor(2.0))


@pytest.mark.parametrize("call", [lambda x: x // 0, lambda x: x % tp.tensor([1, 0, 1]),
                                  lambda x: tp.compile(lambda a: a // 0)(x)])
def test_integer_division_by_zero_is_torchs_runtime_error(call):
    x = tp.tensor([4, -5, 6])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call(x)
    with pytest.raises(ZeroDivisionError):      # Python's habit still works
        call(x)


def test_div_rounding_modes_as_torch():
    a, b = tp.tensor([7, -7, 7, -7]), tp.tensor([2, 2, -2, -2])
    f = tp.tensor([7.0, -7.0, 7.5, -7.5])
    assert tp.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert tp.div(a, b, rounding_mode="trunc").dtype is tp.int64
    assert tp.div(a, b, rounding_mode="floor").tolist() == [3, -4, -4, 3]
    assert tp.div(f, 2, rounding_mode="trunc").tolist() == [3.0, -3.0, 3.0, -3.0]
    assert f.div(2, rounding_mode="floor").tolist() == [3.0, -4.0, 3.0, -4.0]
    assert tp.div(7, b, rounding_mode="trunc").tolist() == [3, 3, -3, -3]
    c = a.clone()
    c.div_(b, rounding_mode="trunc")
    assert c.tolist() == [3, -3, -3, 3] and c.dtype is tp.int64
    assert tp.compile(lambda x, y: x.div(y, rounding_mode="trunc"))(a, b).tolist() == [3, -3, -3, 3]
    assert tp.div(a, b).tolist() == [3.5, -3.5, -3.5, 3.5]
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None"):
        a.div(2, rounding_mode="x")
