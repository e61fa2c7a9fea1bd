"""The reference relu kernel (what a backend binding the core's kernels runs: MockBackend here;
cuda where its fast kernels decline) is torch's ``x < 0 ? 0 : x``, as tensorplay-cpu's own
kernel since session 46: ``relu(-0.0)`` is ``-0.0`` and NaN passes through. It gave +0.0."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay.testing.backend import MockBackend


@pytest.mark.parametrize("dtype", [tp.float16, tp.float32, tp.float64])
def test_reference_relu_is_torchs(dtype):
    vals = [-0.0, 0.0, -1.5, 2.0, math.nan, -math.inf, math.inf]
    want = tp.relu(tp.tensor(vals, dtype=dtype))       # tensorplay-cpu's kernel
    with MockBackend("relumock"):
        got = tp.relu(tp.tensor(vals, dtype=dtype, device="relumock")).cpu()
    assert got.dtype == dtype
    for g, w in zip(got.tolist(), want.tolist()):
        assert (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) ==
                                                      math.copysign(1, w))
    assert math.copysign(1, got[0].item()) == -1.0
    with MockBackend("relumock2"):
        x = tp.tensor([[1, -2], [-3, 4]], device="relumock2")
        assert tp.relu(x).cpu().tolist() == [[1, 0], [0, 4]]
