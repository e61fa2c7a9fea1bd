"""Found by a fresh user's review (session 52), each checked against torch 2.13 (cpu):

* ``put_``/``index_put_`` with ``accumulate=True`` under ``tensorplay.compile``: an internal
  DispatchError (a host read of the index values during the capture); the graph must add, and
  check each index tensor's range per dim each time it runs (``x[0, 4]`` of a 4x3 ``x`` must not
  reach ``x[1, 1]`` through the flattened index);
* ``index_add`` out of range: torch raises RuntimeError for an int64 index into a ``self`` of 2
  or more dims, IndexError for a 1-D ``self`` or an int32 index;
* ``index_add`` shapes: a 2-D index, a source whose size along ``dim`` is not the number of
  indices, a source of another shape apart from ``dim`` were accepted or failed inside NumPy.
"""

import numpy as np
import pytest

import tensorplay as tp


def _put_acc(x, i, v):
    return x.clone().put_(i, v, accumulate=True)


def _index_put_acc(x, i, j, v):
    return x.clone().index_put_((i, j), v, accumulate=True)


def test_put_accumulate_compiles_and_adds_repeats():
    f = tp.compile(_put_acc)
    out = f(tp.zeros(4), tp.tensor([1, 1, -1]), tp.ones(3))
    assert out.tolist() == [0.0, 2.0, 0.0, 1.0]
    # the graph runs again with other values: still right, still checked
    assert f(tp.zeros(4), tp.tensor([0, 2, 2]), tp.ones(3)).tolist() == [1.0, 0.0, 2.0, 0.0]
    with pytest.raises(IndexError, match="out of bounds"):
        f(tp.zeros(4), tp.tensor([0, 4, 1]), tp.ones(3))


def test_index_put_accumulate_compiles_and_checks_each_dim():
    f = tp.compile(_index_put_acc)
    x = tp.zeros(4, 3)
    out = f(x, tp.tensor([0, 0, 3]), tp.tensor([1, 1, -1]), tp.tensor([1.0, 2.0, 5.0]))
    want = np.zeros((4, 3), np.float32)
    want[0, 1] = 3.0
    want[3, 2] = 5.0
    assert np.array_equal(np.asarray(out.tolist(), np.float32), want)
    # x[0, 4]: the flattened index 4 is in range (x[1, 1]); the per-dim check refuses it
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, tp.tensor([0, 0, 0]), tp.tensor([0, 4, 0]), tp.ones(3))
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, tp.tensor([0, -5, 0]), tp.tensor([0, 0, 0]), tp.ones(3))


def test_index_put_accumulate_eager_still_checks_each_dim():
    x = tp.zeros(4, 3)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 3"):
        x.index_put_((tp.tensor([0]), tp.tensor([4])), tp.ones(1), accumulate=True)
    assert float(x.abs().sum()) == 0.0


@pytest.mark.parametrize("shape,dtype,exc", [
    ((4, 3), "int64", RuntimeError),
    ((4, 3, 2), "int64", RuntimeError),
    ((4, 3), "int32", IndexError),
    ((4,), "int64", IndexError),
    ((4,), "int32", IndexError),
])
def test_index_add_out_of_range_error_class_is_torchs(shape, dtype, exc):
    x = tp.zeros(*shape)
    src = tp.ones(*((1,) + shape[1:]))
    for bad in (4, -1):
        with pytest.raises(exc) as e:
            x.index_add(0, tp.tensor([bad], dtype=getattr(tp, dtype)), src)
        # (IndexError is no RuntimeError subclass: the class is exactly torch's)
        assert type(e.value) is exc or issubclass(type(e.value), exc) and not (
            exc is RuntimeError and isinstance(e.value, IndexError))


@pytest.mark.parametrize("shape,dim,index,src,exc,words", [
    ((3, 2), 0, [[0, 0]], (2, 2), IndexError, "Index is supposed to be a vector"),
    ((3, 2), 0, [0, 1], (3, 2), RuntimeError, "Number of indices (2) should be equal to "
                                              "source.size(dim): (3)"),
    ((3, 20), 0, [0, 1], (2, 20, 1), RuntimeError, "source tensor shape must match self tensor "
                                                   "shape"),
    ((3, 20), 0, [0, 1], (2, 10), RuntimeError, "source tensor shape must match self tensor "
                                                "shape"),
    ((3, 20), 0, 1, (20,), RuntimeError, "Number of indices (1) should be equal to "
                                         "source.size(dim): (20)"),
    ((3,), 0, [1], (), RuntimeError, "source tensor shape must match self tensor shape"),
    ((3,), 0, [1], (2,), RuntimeError, "Number of indices (1) should be equal to "
                                       "source.size(dim): (2)"),
    ((3, 4), 1, [0, 1, 2], (3, 2), RuntimeError, "Number of indices (3) should be equal to "
                                                 "source.size(dim): (2)"),
])
def test_index_add_shapes_are_checked_as_torch(shape, dim, index, src, exc, words):
    x = tp.zeros(*shape)
    for call in (lambda: x.index_add(dim, tp.tensor(index), tp.ones(*src)),
                 lambda: x.clone().index_add_(dim, tp.tensor(index), tp.ones(*src))):
        with pytest.raises(exc) as e:
            call()
        assert words in str(e.value), str(e.value)
    with tp.fake.FakeTensorMode():
        fx = tp.zeros(*shape)
        with pytest.raises(exc) as e:
            fx.index_add(dim, tp.tensor(index), tp.ones(*src))
        assert words in str(e.value), str(e.value)


def test_index_add_shapes_torch_accepts():
    x = tp.zeros(3, 20)
    # a 0-dim index and a source with one row along dim (torch takes it)
    out = x.index_add(0, tp.tensor(1), tp.ones(1, 20))
    assert out[1].tolist() == [1.0] * 20 and float(out.sum()) == 20.0
    # x[i] of a 2-D index still has its gradient (the backward's index_add takes it flattened)
    w = tp.zeros(5, 3, requires_grad=True)
    w[tp.tensor([[0, 1], [1, 4]])].sum().backward()
    assert w.grad.tolist() == [[1.0] * 3, [2.0] * 3, [0.0] * 3, [0.0] * 3, [1.0] * 3]


def test_gather_of_a_1d_tensor_takes_a_0dim_index_as_torch():
    # torch: index and input of at most one dim each need not have the same number of dims
    x = tp.arange(12.0, requires_grad=True)
    out = x.gather(0, tp.tensor(5))
    assert out.shape == () and out.item() == 5.0
    out.backward()
    assert x.grad.tolist() == [0.0] * 5 + [1.0] + [0.0] * 6
    with pytest.raises(RuntimeError, match="out of bounds"):
        tp.arange(12.0).gather(0, tp.tensor(12))
