"""Factory ops (no tensor inputs): they dispatch on their ``device`` argument. The public
functions with torch's signatures live in ``tensorplay/_factories.py``."""

from __future__ import annotations

from ..fake import make_fake
from ._define import defop
from ._shapes import (check_arange, check_eye, check_fill, check_linspace, check_nonnegative,
                      check_randint)


# the fake rules refuse what the kernels refuse (negative sizes; a fill value the dtype cannot
# hold), so meta tensors, FakeTensorMode and compile capture fail the same way as real calls
def _full_meta(size, fill_value, *, dtype, device):
    check_nonnegative("full", size)
    check_fill("full", fill_value, dtype)
    return make_fake(tuple(size), dtype, device)


def _alloc_meta(op):
    def meta(size, *, dtype, device):
        check_nonnegative(op, size)
        return make_fake(tuple(size), dtype, device)
    return meta


_empty_meta = _alloc_meta("empty")


def _arange_meta(start, end, step, *, dtype, device):
    return make_fake((check_arange(start, end, step),), dtype, device)


defop("empty(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor", meta=_empty_meta,
      differentiable=False, tags=("nondeterministic_bitwise",))   # uninitialised memory
defop("full(SymInt[] size, Scalar fill_value, *, ScalarType dtype, Device device) -> Tensor",
      meta=_full_meta, differentiable=False)
defop("arange(Scalar start, Scalar end, Scalar step, *, ScalarType dtype, Device device) -> Tensor",
      meta=_arange_meta, differentiable=False)
defop("rand(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor", meta=_alloc_meta("rand"),
      differentiable=False, tags=("nondeterministic_seeded",))
defop("randn(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor",
      meta=_alloc_meta("randn"),
      differentiable=False, tags=("nondeterministic_seeded",))


def _eye_meta(n, m, *, dtype, device):
    check_eye(n, m)
    return make_fake((n, m), dtype, device)


def _linspace_meta(start, end, steps, *, dtype, device):
    check_linspace(steps)
    return make_fake((steps,), dtype, device)


def _randint_meta(low, high, size, *, dtype, device):
    check_randint(low, high)
    check_nonnegative("randint", size)
    return make_fake(tuple(size), dtype, device)


defop("eye(SymInt n, SymInt m, *, ScalarType dtype, Device device) -> Tensor", meta=_eye_meta,
      differentiable=False)
defop("linspace(Scalar start, Scalar end, SymInt steps, *, ScalarType dtype, Device device) -> "
      "Tensor", meta=_linspace_meta, differentiable=False)
defop("randint(SymInt low, SymInt high, SymInt[] size, *, ScalarType dtype, Device device) -> "
      "Tensor", meta=_randint_meta, differentiable=False, tags=("nondeterministic_seeded",))
