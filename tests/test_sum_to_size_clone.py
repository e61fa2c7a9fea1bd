"""``Tensor.sum_to_size`` refuses a size the tensor does not broadcast from, and ``clone`` keeps
the strides of a dense input (``torch.preserve_format``), both with torch's rules."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorplay as tp


# -- sum_to_size -------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(5,), (2, 1, 3), (4, 3), (3, 2), (2, 2), (1, 1, 2, 3)])
def test_sum_to_size_refuses_a_size_that_does_not_expand_to_the_tensor(size):
    # torch: "size {[5]} is not expandable to size {[2, 3]}." -- the requested size must expand
    # to the tensor's (trailing dims equal or 1, no more dims than the tensor)
    x = tp.ones(2, 3)
    want = f"size {{{list(size)}}} is not expandable to size {{[2, 3]}}"
    with pytest.raises(RuntimeError, match=re.escape(want)):
        x.sum_to_size(size)
    with pytest.raises(RuntimeError, match=re.escape(want)):
        x.sum_to_size(*size)


@pytest.mark.parametrize("size, want", [
    ((2, 3), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    ((3,), [5.0, 7.0, 9.0]),
    ((1, 3), [[5.0, 7.0, 9.0]]),
    ((2, 1), [[6.0], [15.0]]),
    ((1, 1), [[21.0]]),
    ((1,), [21.0]),
    ((), 21.0),
])
def test_sum_to_size_sums_what_broadcasting_added(size, want):
    x = tp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    r = x.sum_to_size(size)
    assert tuple(r.shape) == size
    np.testing.assert_allclose(r.numpy(), np.array(want))
