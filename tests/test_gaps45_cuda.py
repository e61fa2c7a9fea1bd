"""Session 45 (h-gaps45) on cuda: out= (same-device outs written and resized, a cpu out for a
cuda result refused), Tensor.resize_ growing a cuda storage, mode's host path and the empty index
results give the cpu's results. Runs on a GPU machine (skips, saying why, where cuda is
unavailable) and on conftest's GPU stand-in everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from _cuda_vs_cpu import DEVICES, need

import tensorplay as tp


@pytest.fixture(params=DEVICES)
def dev(request):
    """cuda, or conftest's GPU stand-in (the kernels' device branch, in CI too)."""
    need(request.param, request)
    return request.param


X = np.arange(12.0).reshape(3, 4) / 4.0


def test_out_on_cuda(dev):
    x = tp.tensor(X, device=dev)
    o = tp.empty(0, device=dev)
    assert tp.mul(x, 2, out=o) is o and o.device.type == dev and o.shape == (3, 4)
    assert np.allclose(o.cpu().numpy(), X * 2)
    # sort's out= must have the result's dtype (torch's rule; x is float64)
    v, i = tp.sort(x, 1, descending=True, out=(tp.empty(0, dtype=x.dtype, device=dev),
                                              tp.empty(0, dtype=tp.int64, device=dev)))
    assert v.cpu().tolist() == tp.sort(tp.tensor(X), 1, descending=True).values.tolist()
    assert tp.zeros(2, 3, out=tp.empty(0, dtype=tp.int64, device=dev)).device.type == dev
    with pytest.raises(RuntimeError, match="cross-device"):
        tp.exp(x, out=tp.empty(0))
    with pytest.warns(UserWarning, match="resized"):
        o = tp.add(x, 1, out=tp.zeros(2, device=dev))      # grows the storage
    assert np.allclose(o.cpu().numpy(), X + 1)


def test_resize_grows_a_cuda_storage(dev):
    x = tp.arange(6.0, device=dev)
    v = x[2:4]
    v.resize_(10)
    v[9] = 7.0
    v[0] = 100.0
    assert x.cpu().tolist() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0]
    assert v[:4].cpu().tolist() == [100.0, 3.0, 4.0, 5.0] and v[9].item() == 7.0


def test_mode_and_empty_index_results_match_cpu(dev):
    row = [1.0, 2.0, 2.0, 1.0] * 5 + [float("nan"), 3.0]
    for dev_rows in ([row], [row[:6]]):
        c = tp.mode(tp.tensor(dev_rows), 1)
        g = tp.mode(tp.tensor(dev_rows, device=dev), 1)
        assert g.indices.cpu().tolist() == c.indices.tolist()
    x = tp.zeros(3, 4, 5, device=dev)
    assert x[tp.tensor([3], device=dev), 5:1].shape == (1, 0, 5)
