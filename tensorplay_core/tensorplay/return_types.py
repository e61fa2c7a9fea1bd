"""Named tuples returned by ops with several outputs (same names as ``torch.return_types``).

``values, indices = x.max(1)`` and ``x.max(1).values`` both work; each is a plain tuple subclass
(``typing.NamedTuple``, so type checkers know both fields are tensors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["aminmax", "cummax", "cummin", "frexp", "histogram", "kthvalue", "max", "median",
           "min", "mode", "nanmedian", "sort", "topk"]


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


class aminmax(NamedTuple):
    """``(min, max)`` of ``Tensor.aminmax`` (``torch.return_types.aminmax``)."""
    min: Tensor
    max: Tensor


class median(NamedTuple):
    """``(values, indices)`` of ``Tensor.median(dim)``."""
    values: Tensor
    indices: Tensor


class nanmedian(NamedTuple):
    """``(values, indices)`` of ``Tensor.nanmedian(dim)``."""
    values: Tensor
    indices: Tensor


class kthvalue(NamedTuple):
    """``(values, indices)`` of ``Tensor.kthvalue``."""
    values: Tensor
    indices: Tensor


class mode(NamedTuple):
    """``(values, indices)`` of ``Tensor.mode``."""
    values: Tensor
    indices: Tensor


class cummax(NamedTuple):
    """``(values, indices)`` of ``Tensor.cummax``."""
    values: Tensor
    indices: Tensor


class cummin(NamedTuple):
    """``(values, indices)`` of ``Tensor.cummin``."""
    values: Tensor
    indices: Tensor


class frexp(NamedTuple):
    """``(mantissa, exponent)`` of ``Tensor.frexp`` (``torch.return_types.frexp``)."""
    mantissa: Tensor
    exponent: Tensor


class histogram(NamedTuple):
    """``(hist, bin_edges)`` of ``tensorplay.histogram`` (``torch.return_types.histogram``)."""
    hist: Tensor
    bin_edges: Tensor
