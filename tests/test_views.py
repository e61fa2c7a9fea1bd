"""Views share storage with their base: torch's strides, observable aliasing, one ``_version``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake


def _x():
    return tp.arange(12.0).reshape(3, 4)


VIEWS = {
    "index_int": (lambda x: x[1], (4,), (1,), 4),
    "index_slice": (lambda x: x[1:, ::2], (2, 2), (4, 2), 4),
    "index_none_ellipsis": (lambda x: x[None, ..., 1], (1, 3), (12, 4), 1),
    "index_neg": (lambda x: x[-1, -2], (), (), 10),
    "view": (lambda x: x.view(4, 3), (4, 3), (3, 1), 0),
    "view_infer": (lambda x: x.view(-1), (12,), (1,), 0),
    "reshape_viewable": (lambda x: x.reshape(2, 6), (2, 6), (6, 1), 0),
    "permute": (lambda x: x.permute(1, 0), (4, 3), (1, 4), 0),
    "transpose": (lambda x: x.transpose(0, 1), (4, 3), (1, 4), 0),
    "t": (lambda x: x.t(), (4, 3), (1, 4), 0),
    "expand": (lambda x: x[:, :1].expand(3, 5), (3, 5), (4, 0), 0),
    "unsqueeze": (lambda x: x.unsqueeze(1), (3, 1, 4), (4, 4, 1), 0),
    "squeeze": (lambda x: x[:1].squeeze(0), (4,), (1,), 0),
    "narrow": (lambda x: x.narrow(1, 1, 2), (3, 2), (4, 1), 1),
    "chained": (lambda x: x.t()[1:].unsqueeze(0)[0, :, 1], (3,), (1,), 5),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_metadata_and_aliasing(name):
    fn, shape, stride, offset = VIEWS[name]
    x = _x()
    v = fn(x)
    assert (v.shape, v.stride(), v.storage_offset()) == (shape, stride, offset)
    assert v._storage is x._storage
    # the materialized values are exactly the storage elements the metadata points at
    flat = np.arange(12.0)
    ref = np.lib.stride_tricks.as_strided(flat[offset:], shape, [s * 8 for s in stride])
    assert v.tolist() == ref.tolist()
    # fake rule gives the same metadata
    fv = fn(fake.from_real(x))
    assert (fv.shape, fv.stride(), fv.storage_offset()) == (shape, stride, offset)
    # aliasing is observable both ways and the version counter is shared
    if name == "expand":
        return
    before = x._version
    v.fill_(-1.0)
    assert x._version == v._version == before + 1
    flat = x.reshape(-1).tolist()
    assert flat.count(-1.0) == max(v.numel(), 1)
    x.zero_()
    assert v._version == x._version and set(np.asarray(v.tolist()).reshape(-1)) <= {0.0}


def test_writes_through_a_view_are_seen_by_other_views():
    x = tp.zeros(2, 3)
    a, b = x[0], x.t()
    a[1] = 5.0
    assert b[1, 0].item() == 5.0 and x[0, 1].item() == 5.0
    b[2] = tp.tensor([7.0, 8.0])
    assert x.tolist() == [[0.0, 5.0, 7.0], [0.0, 0.0, 8.0]]
    x.view(-1)[4] = 1.0
    assert x[1, 1].item() == 1.0
    assert a._version == b._version == x._version == 3


def test_reshape_copies_only_when_it_must():
    x = _x()
    assert x.reshape(12)._storage is x._storage
    t = x.t()
    r = t.reshape(12)
    assert r._storage is not x._storage and r.is_contiguous()
    assert r.tolist() == np.arange(12.0).reshape(3, 4).T.reshape(12).tolist()
    with pytest.raises(RuntimeError, match=r"view.*Use \.reshape"):
        t.view(12)
    with pytest.raises(RuntimeError, match="invalid for input of size 12"):
        x.view(5, -1)


def test_view_errors():
    x = _x()
    with pytest.raises(RuntimeError, match="expand"):
        x.expand(2, 4)
    with pytest.raises(RuntimeError, match="permut"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(RuntimeError, match=r"t\(\) expects"):
        tp.zeros(2, 2, 2).t()


def test_advanced_indexing_copies():
    x = _x()
    g = x[tp.tensor([2, 0])]
    assert g.tolist() == [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
    assert g._storage is not x._storage
    m = x[x > 9]
    assert m.tolist() == [10.0, 11.0]
    x[x > 9] = 0.0
    assert x.reshape(-1).tolist()[-2:] == [0.0, 0.0]
    x[:, [0, 3]] = -1.0
    assert x[1].tolist() == [-1.0, 5.0, 6.0, -1.0]


def test_detach_shares_storage_and_version():
    x = tp.ones(3)
    d = x.detach()
    d.add_(1)
    assert x.tolist() == [2.0, 2.0, 2.0] and x._version == d._version == 1


def test_inplace_on_expanded_view_of_numpy_memory():
    a = np.zeros((2, 3))
    t = tp.from_numpy(a)
    t[:, 1:].add_(tp.tensor([1.0, 2.0]))
    assert a.tolist() == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]
