"""``Tensor.to(device)`` / ``.cpu()`` / ``.cuda()`` copy with torch's ``preserve_format``: a dense
tensor keeps its strides, another gets dense strides in its stride order; fakes say the same.
Before, every cross-device copy was row-major: the H100 run of session 46 showed it, as cuda
results laid out by the elementwise rule were compared with ``x.cpu()``'s row-major copies.
A MockBackend device stands in for a second device here; the cuda run of
tests/test_layout46.py checks the same on a GPU."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode
from tensorplay.testing.backend import MockBackend


@pytest.fixture(scope="module")
def mock():
    with MockBackend("tomock") as be:
        yield be


MAKES = {
    "transposed": (lambda d: tp.randn(4, 3, device=d).t(), (1, 3)),
    "permuted 4-d": (lambda d: tp.randn(2, 4, 5, 3, device=d).permute(0, 3, 1, 2), (60, 1, 15, 3)),
    "sliced then transposed": (lambda d: tp.randn(8, 3, device=d)[::2].t(), (1, 3)),
    "expanded": (lambda d: tp.randn(3, device=d).expand(4, 3), (3, 1)),
    "row-major": (lambda d: tp.randn(4, 3, device=d), (3, 1)),
}


@pytest.mark.parametrize("case", list(MAKES))
@pytest.mark.parametrize("src,dst", [("cpu", "tomock"), ("tomock", "cpu")])
def test_to_device_keeps_a_dense_layout(mock, case, src, dst):
    make, want = MAKES[case]
    x = make(src)
    y = x.cpu() if dst == "cpu" else x.to(dst)
    assert y.device.type == dst and y.shape == x.shape and y.stride() == want
    assert y._base is None                      # a fresh tensor, not a view of a copy
    assert y.tolist() == x.tolist()
    y.add_(1)                                   # its own memory
    assert y.tolist() != x.tolist()
    with FakeTensorMode() as m:
        f = m.from_tensor(x).to(dst)
    assert f.stride() == want


def test_to_device_gradient_flows_back_through_the_layout(mock):
    w = tp.randn(4, 3, requires_grad=True)
    (w.t().to("tomock") * tp.arange(4.0, device="tomock")).sum().backward()
    assert w.grad.tolist() == [[float(i)] * 3 for i in range(4)]
