"""Every built-in op's real result has its fake result's strides on inputs that are not
row-major (the sample inputs, each 2-D or larger tensor given a transposed layout with the same
values). Session 46 found tensorplay.special's polygamma, mvlgamma and logit laid out by torch's
elementwise rule in their fake rules but row-major in their real kernels: the mark that tells the
adapters to lay results out (``elementwise_meta``) was missing on fake rules that call the rule's
``out_like`` through another. This sweep finds that kind of mismatch for any op."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode
from tensorplay.testing import builtin_samples as B


def _transposed(a):
    if isinstance(a, tp.Tensor) and a.ndim >= 2:
        return a.transpose(-1, -2).contiguous().transpose(-1, -2)   # same values, column-major
    if isinstance(a, list):
        return [_transposed(x) for x in a]
    return a


def _strides(r):
    if isinstance(r, tp.Tensor):
        return [tuple(r.shape), r.stride()]
    if isinstance(r, (tuple, list)):
        return [_strides(x) for x in r]
    return None


def _fake(mode, a):
    if isinstance(a, tp.Tensor):
        return mode.from_tensor(a)
    if isinstance(a, list):
        return [_fake(mode, x) for x in a]
    return a


CASES = [(n, i) for n in B.names() for i, s in enumerate(B.samples(n))
         if s.fake and any(isinstance(a, tp.Tensor) and a.ndim >= 2 for a in s.args)]


@pytest.mark.parametrize("name,i", CASES, ids=[f"{n}#{i}" for n, i in CASES])
def test_real_result_has_the_fake_results_strides_on_transposed_inputs(name, i):
    s = B.samples(name)[i]
    args = [_transposed(a) for a in s.args]
    op = getattr(tp.ops.tp, name)
    try:
        real = op(*args, **s.kwargs)
    except Exception as e:  # noqa: BLE001 - an op that refuses these inputs must refuse fakes too
        with FakeTensorMode() as m, pytest.raises(type(e)):
            op(*[_fake(m, a) for a in args], **s.kwargs)
        return
    with FakeTensorMode() as m:
        fake = op(*[_fake(m, a) for a in args], **s.kwargs)
    assert _strides(real) == _strides(fake), name
