"""Index kernels check bounds only for the elements they read or write (torch's rule): an
out-of-range integer index whose result (or written region) has no elements gives the empty
result / writes nothing, while any read or write of an element still checks every index.
tests/torch_bridge/test_indexing_differential44.py compares the spellings with torch."""

from __future__ import annotations

import pytest

import tensorplay as tp


def test_empty_result_ignores_out_of_range_index():
    x = tp.arange(60.0).reshape(3, 4, 5)
    r = x[tp.tensor([3]), 5:1]
    assert r.shape == (1, 0, 5) and r.dtype is tp.float32
    assert tp.zeros(3, 0)[tp.tensor([5])].shape == (1, 0)
    assert tp.zeros(3, 0)[tp.tensor([-7])].shape == (1, 0)
    assert tp.zeros(3, 0, 2)[:, :, tp.tensor([9])].shape == (3, 0, 1)


def test_empty_write_ignores_out_of_range_index_but_checks_values():
    y = tp.arange(60.0).reshape(3, 4, 5)
    before = y.tolist()
    y[tp.tensor([3]), 5:1] = 1.0
    y[tp.tensor([3]), 5:1] = tp.ones(1, 0, 5)
    assert y.tolist() == before
    # the values must broadcast all the same (torch's RuntimeError, as a non-empty write's)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        y[tp.tensor([3]), 5:1] = tp.ones(2, 3, 5)


def test_gradient_through_empty_result():
    x = tp.ones(3, 4, 5, requires_grad=True)
    x[tp.tensor([3]), 5:1].sum().backward()
    assert x.grad.shape == (3, 4, 5) and x.grad.abs().sum().item() == 0.0


def test_index_add_with_nothing_added():
    r = tp.zeros(3, 0).index_add(0, tp.tensor([5]), tp.zeros(1, 0))
    assert r.shape == (3, 0)


def test_reads_and_writes_of_elements_still_check_bounds():
    x = tp.arange(60.0).reshape(3, 4, 5)
    with pytest.raises(IndexError):
        x[tp.tensor([3])]
    with pytest.raises(IndexError):
        x[tp.tensor([3]), 1:3]
    with pytest.raises((IndexError, RuntimeError)):
        x[tp.tensor([3])] = 1.0
    with pytest.raises((IndexError, RuntimeError)):
        tp.zeros(3, 2).index_add(0, tp.tensor([5]), tp.zeros(1, 2))


def test_index_select_checks_every_index_even_for_an_empty_result():
    # torch: index_select(zeros(3, 0), 0, tensor([5])) is refused although nothing is read
    with pytest.raises(RuntimeError, match="out of bounds"):
        tp.index_select(tp.zeros(3, 0), 0, tp.tensor([5]))
    assert tp.index_select(tp.zeros(3, 0), 0, tp.tensor([2])).shape == (1, 0)
