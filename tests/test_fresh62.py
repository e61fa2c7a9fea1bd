"""Fresh-user findings of session 62, each against torch 2.13's behaviour (cpu):

* a list (or tuple, or NumPy array) used as an index becomes torch's index tensor: bool and
  uint8 data stay masks, anything else is int64 (``indexing_tensor_from_data``) -- so ``[]`` is an
  empty int64 index (``x[[]]`` has shape ``(0, ...)``, ``x[[]] = v`` writes nothing), where
  tensorplay built a float32 tensor and raised IndexError; floats truncate toward zero.
"""

import numpy as np
import pytest

import tensorplay as tp


def _x():
    return tp.arange(12).reshape(3, 4)


# --- 1. empty (and float) sequences as indices ---------------------------------------------

# (index, torch 2.13's result shape)
EMPTY_READS = [
    ([], (0, 4)),
    ((slice(None), []), (3, 0)),
    (([], []), (0,)),
    (([], 0), (0,)),
    ((0, []), (0,)),
    ((Ellipsis, []), (3, 0)),
    ((None, []), (1, 0, 4)),
    (([], None), (0, 1, 4)),
    (((),), (0, 4)),                 # an empty tuple as one entry: an empty index too
    (([0], []), (0,)),
    (([5], []), (0,)),               # nothing is read, so nothing is range-checked
    (([[]], []), (1, 0)),
    (([], [[]]), (1, 0)),
    (tp.tensor([], dtype=tp.int64), (0, 4)),
]


@pytest.mark.parametrize("index, shape", EMPTY_READS, ids=lambda v: repr(v))
def test_empty_sequence_index_reads_nothing(index, shape):
    r = _x()[index]
    assert tuple(r.shape) == shape
    assert r.dtype == tp.int64
    assert r.numel() == 0


def test_empty_list_index_of_a_float_tensor_keeps_its_dtype():
    r = tp.ones(3)[[]]
    assert tuple(r.shape) == (0,) and r.dtype == tp.float32


WRITES = [(index, value) for index in ([], (slice(None), []), ([], []), ([], 0))
          for value in (1, 1.5, tp.tensor(7))] + [
    ([], tp.ones(4, dtype=tp.int64)),           # (a row broadcasts to the (0, 4) result)
    ([], tp.ones(0, 4, dtype=tp.int64)),
    ((slice(None), []), tp.ones(3, 0, dtype=tp.int64)),
]


@pytest.mark.parametrize("index, value", WRITES, ids=lambda v: repr(v))
def test_empty_sequence_index_write_is_a_no_op(index, value):
    x = _x()
    x[index] = value
    assert x.tolist() == _x().tolist()


def test_empty_list_write_keeps_torchs_value_checks():
    x = _x()
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[[]] = tp.ones(2, 4, dtype=tp.int64)
    with pytest.raises(RuntimeError, match="dtypes match"):
        x[[]] = tp.ones(4)
    assert x.tolist() == _x().tolist()


def test_float_tensor_index_is_still_refused():
    # a tensor keeps its own dtype: only sequences are converted (torch's rule)
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        _x()[tp.tensor([])]
    x = _x()
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[tp.tensor([])] = 1
    with pytest.raises(RuntimeError, match="int32 or int64"):
        _x().index_select(0, tp.tensor([]))


def test_empty_int64_index_ops():
    e = tp.tensor([], dtype=tp.int64)
    assert tuple(_x().index_select(0, e).shape) == (0, 4)
    assert tuple(_x().index_select(1, e).shape) == (3, 0)
    x = _x()
    x.index_put_((e,), tp.tensor(1))
    assert x.tolist() == _x().tolist()


def test_empty_list_index_backward_gives_zero_grad():
    a = tp.ones(3, requires_grad=True)
    a[[]].sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


def test_float_sequence_index_truncates_to_int64():
    # torch: x[[0.0, 2.0]] is x[[0, 2]]; -0.5 truncates to 0, -1.5 to -1 (the last row)
    x = _x()
    assert x[[0.0, 2.0]].tolist() == x[[0, 2]].tolist()
    assert x[[-0.5]].tolist() == x[[0]].tolist()
    assert x[[-1.5]].tolist() == x[[-1]].tolist()
    assert x[:, [0.0]].tolist() == x[:, [0]].tolist()
    assert x[np.array([0.0, 2.0])].tolist() == x[[0, 2]].tolist()
    assert tuple(x[np.array([])].shape) == (0, 4)
    y = _x()
    y[[0.5, 1]] = 5
    assert y.tolist() == [[5] * 4, [5] * 4, [8, 9, 10, 11]]


@pytest.mark.parametrize("v", [1e20, float("nan"), float("inf")])
def test_float_sequence_index_out_of_int64_raises(v):
    with pytest.raises(RuntimeError, match="cannot be converted to type int64 without overflow"):
        _x()[[v]]


def test_bool_and_int_sequences_unchanged():
    x = _x()
    assert x[[True, False, True]].tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert x[[0, True]].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[[tp.tensor(1.0)]]     # a float tensor inside a list stays a float index


def test_empty_sequence_index_compiles():
    def f(x):
        return x[[]] + 1, x[:, []], x[[], []], x.index_select(0, tp.tensor([], dtype=tp.int64))

    def g(x):
        y = x.clone()
        y[[]] = 5
        return y

    x = _x()
    got = tp.compile(f)(x)
    assert [tuple(t.shape) for t in got] == [(0, 4), (3, 0), (0,), (0, 4)]
    assert [tuple(t.shape) for t in f(x)] == [(0, 4), (3, 0), (0,), (0, 4)]
    assert tp.compile(g)(x).tolist() == _x().tolist()
