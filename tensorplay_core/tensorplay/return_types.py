"""Named tuples returned by ops with several outputs (same names as ``torch.return_types``).

``values, indices = x.max(1)`` and ``x.max(1).values`` both work; each is a plain tuple subclass
(``typing.NamedTuple``, so type checkers know both fields are tensors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["max", "min", "sort", "topk"]


class max(NamedTuple):  # noqa: A001
    """``(values, indices)`` of ``Tensor.max(dim)``."""
    values: Tensor
    indices: Tensor


class min(NamedTuple):  # noqa: A001
    """``(values, indices)`` of ``Tensor.min(dim)``."""
    values: Tensor
    indices: Tensor


class sort(NamedTuple):
    """``(values, indices)`` of ``Tensor.sort``."""
    values: Tensor
    indices: Tensor


class topk(NamedTuple):
    """``(values, indices)`` of ``Tensor.topk``."""
    values: Tensor
    indices: Tensor
