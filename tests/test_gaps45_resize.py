"""``Tensor.resize_`` as torch's: in place, row-major order kept while the size shrinks or stays,
the storage grown (views follow it), the same shape keeps its strides, the version bumped, a
tensor requiring grad refused. tests/torch_bridge/test_gaps45_torch.py compares with torch."""

from __future__ import annotations

import pytest

import tensorplay as tp


@pytest.mark.parametrize("sizes", [((2, 3),), (2, 3), ([2, 3],)])
def test_same_numel_keeps_row_major_order(sizes):
    x = tp.arange(1.0, 7.0)
    r = x.resize_(*sizes)
    assert r is x and x.shape == (2, 3) and x.stride() == (3, 1)
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert tp.kthvalue(x, 2, 0).values.tolist() == [4.0, 5.0, 6.0]


def test_shrink_keeps_leading_elements_and_the_storage():
    x = tp.arange(10)
    y = x.view(2, 5)
    x.resize_(2, 2)
    assert x.tolist() == [[0, 1], [2, 3]]
    x[1, 1] = 99
    assert y[0, 3].item() == 99          # still the same storage


def test_same_shape_keeps_strides():
    y = tp.arange(6.0).view(2, 3).t()
    y.resize_(3, 2)
    assert y.stride() == (1, 3) and y.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    y.resize_(2, 2)
    assert y.stride() == (2, 1) and y.tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_grow_keeps_old_elements_and_views_follow():
    x = tp.arange(6.0)
    v = x[2:4]
    v.resize_(10)
    assert v.shape == (10,) and v.storage_offset() == 2 and v.stride() == (1,)
    assert v[:4].tolist() == [2.0, 3.0, 4.0, 5.0]
    v[0] = 100.0
    v[9] = 7.0                      # a new element, past the old storage
    assert x.tolist() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0]
    w = x.view(2, 3)
    x.resize_(20)
    x[0] = -1.0
    assert w[0, 0].item() == -1.0 and x[11].item() == 7.0


def test_version_bumped_and_empty_and_zero_dim():
    x = tp.arange(6.0)
    v = x._version
    x.resize_(3)
    assert x._version == v + 1
    assert tp.empty(0).resize_(2, 0).shape == (2, 0)
    assert tp.ones(3).resize_([]).shape == ()


def test_refusals():
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tp.ones(3, requires_grad=True).resize_(2)
    with tp.no_grad(), pytest.raises(RuntimeError, match="require grad"):
        tp.ones(3, requires_grad=True).resize_(2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        tp.ones(3).resize_(2, -1)
    with pytest.raises(TypeError):
        tp.ones(3).resize_()


def test_fake_tensor_resize():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode():
        x = tp.empty(2, 3)
        x.resize_(4, 5)
        assert x.shape == (4, 5) and x.stride() == (5, 1)
