"""Factory ops (no tensor inputs): they dispatch on their ``device`` argument. The public
functions with torch's signatures live in ``tensorplay/_factories.py``."""

from __future__ import annotations

from ..fake import make_fake
from ._define import defop


def _full_meta(size, fill_value, *, dtype, device):
    return make_fake(tuple(size), dtype, device)


def _empty_meta(size, *, dtype, device):
    return make_fake(tuple(size), dtype, device)


def _arange_meta(start, end, step, *, dtype, device):
    import math
    n = max(0, math.ceil((end - start) / step))
    return make_fake((n,), dtype, device)


defop("empty(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor", meta=_empty_meta,
      differentiable=False)
defop("full(SymInt[] size, Scalar fill_value, *, ScalarType dtype, Device device) -> Tensor",
      meta=_full_meta, differentiable=False)
defop("arange(Scalar start, Scalar end, Scalar step, *, ScalarType dtype, Device device) -> Tensor",
      meta=_arange_meta, differentiable=False)
defop("rand(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor", meta=_empty_meta,
      differentiable=False)
defop("randn(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor", meta=_empty_meta,
      differentiable=False)
