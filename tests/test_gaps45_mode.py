"""``mode`` as torch's CPU kernel, without torch (the values below are torch 2.13's; the
differential run is tests/torch_bridge/test_mode_differential45.py): torch sorts (value, index)
pairs with ``std::sort`` by ``<`` and takes the last pair of the first longest run, so NaN
(comparing false) stays in place in rows up to 16 elements, and beyond 16 the introsort's
unstable order picks the index."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp

NAN = float("nan")


@pytest.mark.parametrize("row,value,index", [
    ([1.0, 2.0, 2.0, 1.0], 1.0, 3),                  # ties: the smaller value, its last index
    ([NAN, 1.0, NAN, 1.0], NAN, 0),
    ([NAN, NAN, 1.0], NAN, 0),
    ([1.0, NAN], 1.0, 0),
    ([NAN], NAN, 0),
    ([1.0, 1.0, 2.0, 2.0, NAN, NAN], 1.0, 1),
    ([1.0, 2.0, 2.0, 1.0] * 5, 1.0, 12),              # 20 elements: not the last 1.0 (19)
    ([3.0, 3.0, 1.0, 1.0] * 5, 1.0, 2),
    ([float(i % 3) for i in range(40)], 0.0, 39),
])
def test_rows(row, value, index):
    r = tp.mode(tp.tensor(row))
    v = r.values.item()
    assert (math.isnan(v) and math.isnan(value)) or v == value
    assert r.indices.item() == index


def test_integer_rows_and_dims():
    r = tp.mode(tp.tensor([5, 1, 5, 1, 2] * 4))
    assert (r.values.item(), r.indices.item()) == (1, 11)
    x = tp.tensor([[1.0, 2.0, 2.0, 1.0] * 5, [3.0, 3.0, 1.0, 1.0] * 5])
    r = tp.mode(x, 1, keepdim=True)
    assert r.indices.tolist() == [[12], [2]] and r.values.tolist() == [[1.0], [1.0]]
    assert tp.mode(x.t(), 0).indices.tolist() == [12, 2]
    assert tp.mode(tp.zeros(0, 20), 1).values.shape == (0,)


def test_gradient_goes_to_the_index():
    x = tp.tensor([NAN, 1.0, 1.0] * 6, requires_grad=True)
    r = tp.mode(x)
    r.values.backward()
    g = [0.0] * 18
    g[r.indices.item()] = 1.0
    assert x.grad.tolist() == g
