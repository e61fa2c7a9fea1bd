"""``split`` as ``torch.split`` (found comparing with torch 2.13): a negative size returned (),
sizes not summing to the dim's size returned the chunks that fit, an empty dim returned () where
torch returns one empty chunk, a 0 size raised ZeroDivisionError. Expected values are torch's."""

import pytest

import tensorplay as tp


def _lists(chunks):
    return [c.tolist() for c in chunks]


def test_int_sizes():
    x = tp.arange(5)
    assert _lists(x.split(2)) == [[0, 1], [2, 3], [4]]
    assert _lists(tp.split(x, 7)) == [[0, 1, 2, 3, 4]]
    assert [c.shape for c in tp.zeros(0).split(2)] == [(0,)]
    assert [c.shape for c in tp.zeros(0).split(0)] == [(0,)]
    assert [c.shape for c in tp.zeros(2, 0).split(1, dim=1)] == [(2, 0)]


def test_list_sizes():
    x = tp.arange(5)
    assert _lists(x.split((2, 3))) == [[0, 1], [2, 3, 4]]
    assert _lists(x.split([0, 5])) == [[], [0, 1, 2, 3, 4]]


@pytest.mark.parametrize("size, message", [
    (-1, "split expects split_size be non-negative"),
    (0, "split_size can only be 0 if dimension size is 0"),
    ([2, 2], "split_with_sizes expects split_sizes to sum exactly to 5"),
    ([2, 4], "split_with_sizes expects split_sizes to sum exactly to 5"),
    ([2, -1, 4], "split_with_sizes expects split_sizes have only non-negative entries"),
])
def test_bad_sizes_are_refused(size, message):
    with pytest.raises(RuntimeError, match=message):
        tp.arange(5).split(size)


def test_chunk():
    assert _lists(tp.arange(6).chunk(4)) == [[0, 1], [2, 3], [4, 5]]
    assert _lists(tp.arange(5).chunk(9)) == [[0], [1], [2], [3], [4]]
    assert [c.shape for c in tp.zeros(0).chunk(2)] == [(0,), (0,)]
    for bad in (0, -1):
        with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
            tp.arange(5).chunk(bad)
