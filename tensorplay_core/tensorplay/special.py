"""``tensorplay.special``: torch.special's functions, with its names.

Most are the built-in ``tp::`` ops themselves (``gammaln`` is ``tp::lgamma``, ``i0e`` is
``tp::i0e``, ...): each runs on every device with a plugin, on fake tensors, under autograd
(torch 2.13's derivative formulas) and inside ``tensorplay.compile``. ``ndtr``, ``log_ndtr``,
``entr``, ``multigammaln`` and ``xlogy``/``xlog1py`` with a number first are compositions of
those ops (differentiable through them).

Dtypes, devices and errors: as torch. Integer and bool tensors give the default float dtype;
float16 is computed in float64 and rounded once, bfloat16 in float32; a non-tensor ``input``
raises TypeError. None of these take ``out=`` (torch's do): write ``out.copy_(f(x))``.
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any

from ._ops import ops as _O

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
           "erfinv", "expit", "logit", "xlogy", "xlog1py", "i0", "i0e", "i1", "i1e", "ndtr",
           "ndtri", "log_ndtr", "sinc", "entr", "round", "exp2", "expm1", "log1p",
           "logsumexp", "softmax", "log_softmax"]

# the op records themselves (their docstrings: _ops/_docs.py)
gammaln = _O.lgamma
digamma = psi = _O.digamma
polygamma = _O.polygamma
erf = _O.erf
erfc = _O.erfc
erfcx = _O.erfcx
erfinv = _O.erfinv
expit = _O.sigmoid
i0 = _O.i0
i0e = _O.i0e
i1 = _O.i1
i1e = _O.i1e
ndtri = _O.ndtri
sinc = _O.sinc
exp2 = _O.exp2
expm1 = _O.expm1
log1p = _O.log1p


def _tensor(api: str, x: Any) -> None:
    from ._tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"tensorplay.special.{api}(): argument 'input' must be Tensor, not "
                        f"{type(x).__name__}")


def multigammaln(input: Tensor, p: builtins.int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{i < p} lgamma(input - i / 2)``, elementwise (any shape,
    dtype and device; integers give the default float dtype). RuntimeError for ``p < 1``. Same as
    ``torch.special.multigammaln`` (``torch.mvlgamma``)."""
    _tensor("multigammaln", input)
    return _O.mvlgamma(input, p)


def logit(input: Tensor, eps: builtins.float | None = None) -> Tensor:
    """``log(z / (1 - z))`` with ``z = input`` clamped to ``[eps, 1 - eps]`` when ``eps`` is
    given (NaN passes; ``-inf``/``inf`` at 0/1 without ``eps``), elementwise; integers give the
    default float dtype. Same as ``torch.special.logit``."""
    _tensor("logit", input)
    return _O.logit(input, eps)


def _number_first(op, input: Any, other: Tensor) -> Tensor:
    """``op(number, tensor)``: the number as a 0-dim tensor (a float one of the default dtype,
    so the tensor's dtype decides, as torch's wrapped numbers)."""
    from ._factories import tensor
    return op(tensor(input, device=other.device), other)


def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN), with
    broadcasting; either operand may be a Python number; integers give the default float dtype.
    Same as ``torch.special.xlogy``."""
    return _x_times(_O.xlogy, "xlogy", input, other)


def xlog1py(input: Any, other: Any) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN), with
    broadcasting; either operand may be a Python number; integers give the default float dtype.
    Same as ``torch.special.xlog1py``."""
    return _x_times(_O.xlog1py, "xlog1py", input, other)


def _x_times(op, api: str, input: Any, other: Any) -> Tensor:
    # xlogy/xlog1py: a number first becomes a tensor (see _number_first), else input must be one
    from ._tensor import Tensor
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        return _number_first(op, input, other)
    _tensor(api, input)
    return op(input, other)


_SQRT1_2 = math.sqrt(0.5)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, ``erfc(-input / sqrt(2)) / 2``, elementwise (relative accuracy
    in the lower tail). Same as ``torch.special.ndtr``."""
    _tensor("ndtr", input)
    return _O.mul(_O.erfc(_O.mul(input, -_SQRT1_2)), 0.5)


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(input))``, accurate in both tails: ``log(erfcx(-x / sqrt 2) / 2) - x^2 / 2``
    below -1, ``log1p(-erfc(x / sqrt 2) / 2)`` above (torch's formula). Same as
    ``torch.special.log_ndtr``."""
    _tensor("log_ndtr", input)
    lower = _O.lt(input, -1.0)
    # each branch gets a safe argument where it is not used (its gradient stays finite there)
    xl = _O.where(lower, input, -1.0)
    xu = _O.where(lower, 0.0, input)
    t = _O.mul(xl, _SQRT1_2)
    low = _O.sub(_O.log(_O.mul(_O.erfcx(_O.neg(t)), 0.5)), _O.mul(t, t))
    up = _O.log1p(_O.mul(_O.erfc(_O.mul(xu, _SQRT1_2)), -0.5))
    return _O.where(lower, low, up)


def entr(input: Tensor) -> Tensor:
    """``-input * log(input)``: 0 at 0, ``-inf`` below 0 (NaN passes), elementwise; integers
    give the default float dtype. Same as ``torch.special.entr``."""
    _tensor("entr", input)
    x = input
    pos = _O.gt(x, 0)
    safe = _O.where(pos, x, 1.0)
    r = _O.where(pos, _O.neg(_O.mul(safe, _O.log(safe))), 0.0)
    r = _O.where(_O.lt(x, 0), -math.inf, r)
    return _O.where(_O.isnan(x), x, r)


def round(input: Tensor, *, decimals: builtins.int = 0) -> Tensor:  # noqa: A001
    """Round to ``decimals`` places, halves to even. Same as ``torch.special.round``."""
    _tensor("round", input)
    return _O.round(input, decimals=decimals)


def logsumexp(input: Tensor, dim: Any, keepdim: builtins.bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, computed stably. Same as ``torch.special.logsumexp``."""
    from ._surface import logsumexp as f
    return f(input, dim, keepdim)


def softmax(input: Tensor, dim: builtins.int, *, dtype: Any = None) -> Tensor:
    """Softmax along ``dim`` (``dtype=`` converts ``input`` first). Same as
    ``torch.special.softmax``."""
    _tensor("softmax", input)
    return _O.softmax(input if dtype is None else input.to(dtype), dim)


def log_softmax(input: Tensor, dim: builtins.int, *, dtype: Any = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably. Same as ``torch.special.log_softmax``."""
    _tensor("log_softmax", input)
    return _O.log_softmax(input if dtype is None else input.to(dtype), dim)
