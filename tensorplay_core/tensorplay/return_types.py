"""Named tuples returned by ops with several outputs (same names as ``torch.return_types``).

``values, indices = x.max(1)`` and ``x.max(1).values`` both work; each is a plain tuple subclass
(``typing.NamedTuple``, so type checkers know both fields are tensors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["aminmax", "cummax", "cummin", "frexp", "histogram", "kthvalue", "linalg_cholesky_ex",
           "linalg_eigh", "linalg_inv_ex", "linalg_lstsq", "linalg_qr", "linalg_slogdet",
           "linalg_solve_ex", "linalg_svd", "max", "median", "min", "mode", "nanmedian", "qr", "slogdet", "sort",
           "svd", "topk"]


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


# -- linear algebra (tensorplay.linalg and torch's top-level forms) ---------------------------
class linalg_slogdet(NamedTuple):  # noqa: N801
    """``(sign, logabsdet)`` of ``linalg.slogdet``."""
    sign: Tensor
    logabsdet: Tensor


class slogdet(NamedTuple):
    """``(sign, logabsdet)`` of ``tensorplay.slogdet`` (``torch.return_types.slogdet``)."""
    sign: Tensor
    logabsdet: Tensor


class linalg_inv_ex(NamedTuple):  # noqa: N801
    """``(inverse, info)`` of ``linalg.inv_ex``."""
    inverse: Tensor
    info: Tensor


class linalg_cholesky_ex(NamedTuple):  # noqa: N801
    """``(L, info)`` of ``linalg.cholesky_ex``."""
    L: Tensor
    info: Tensor


class linalg_solve_ex(NamedTuple):  # noqa: N801
    """``(result, info)`` of ``linalg.solve_ex``."""
    result: Tensor
    info: Tensor


class linalg_qr(NamedTuple):  # noqa: N801
    """``(Q, R)`` of ``linalg.qr``."""
    Q: Tensor
    R: Tensor


class qr(NamedTuple):
    """``(Q, R)`` of ``tensorplay.qr`` (``torch.return_types.qr``)."""
    Q: Tensor
    R: Tensor


class linalg_svd(NamedTuple):  # noqa: N801
    """``(U, S, Vh)`` of ``linalg.svd``."""
    U: Tensor
    S: Tensor
    Vh: Tensor


class svd(NamedTuple):
    """``(U, S, V)`` of ``tensorplay.svd`` (``torch.return_types.svd``: V, not Vh)."""
    U: Tensor
    S: Tensor
    V: Tensor


class linalg_eigh(NamedTuple):  # noqa: N801
    """``(eigenvalues, eigenvectors)`` of ``linalg.eigh``."""
    eigenvalues: Tensor
    eigenvectors: Tensor


class linalg_lstsq(NamedTuple):  # noqa: N801
    """``(solution, residuals, rank, singular_values)`` of ``linalg.lstsq``."""
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor
