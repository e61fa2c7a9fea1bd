"""TensorPlay: write, ship, dispatch and check tensor operators in Python.

The public surface (re-exports only). ``import tensorplay`` imports pluggy and the core, scans
the ``tensorplay.plugins`` entry points once and loads the plugin modules; no array library
(numpy, cupy, triton) is imported until a tensor of its device, or one of its kernels, is used.
"""

from __future__ import annotations

import math as _math
from typing import TYPE_CHECKING, Any, Sequence, TypeGuard, overload

from .version import __version__  # noqa: F401 - the version string lives there

if TYPE_CHECKING:
    import builtins

    from ._registry import CustomOpDef
    from ._tensor import Tensor, _Dims, _DTypeLike, _Number, _TensorOrScalar

    _Unary = CustomOpDef[[Tensor], Tensor]
    _Binary = CustomOpDef[[Tensor, _TensorOrScalar], Tensor]   # other: a tensor or a number

from . import errors
from ._device import Device, device
from ._dtype import (DType, bfloat16, bool, dtype, float16, float32, float64, get_default_dtype,
                     int8, int16, int32, int64, promote_types, set_default_dtype, uint8,
                     uint32)
from ._dtype import (channels_last, channels_last_3d, contiguous_format, memory_format,  # noqa: E402
                     preserve_format)
from ._tensor import Tensor
from ._tensor import _times_alpha  # alpha * other with torch's checks (Tensor.add's)
from ._ops import opmath as _opmath  # add/sub with alpha of float16/bfloat16: one op
from ._ops.opmath import LOWP as _LOWP16
from ._tag import Tag
from . import _ops as _ops_pkg
from ._ops import ops as _O
from ._ops._define import write_out as _write_out  # out= of the functions below (torch's rules)
from ._ops._define import hide_out_slot as _hide_out_slot, no_extra as _no_extra  # noqa: E402

half, float, double, long, int, short = float16, float32, float64, int64, int32, int16  # noqa: A001
# torch's constants (torch.nan, torch.inf, torch.pi, torch.e): Python floats
e, inf, nan, pi = _math.e, _math.inf, _math.nan, _math.pi

from ._factories import (arange, as_tensor, cat, concat, concatenate, empty,  # noqa: E402
                         empty_like, empty_strided,
                         eye, from_dlpack, from_numpy, full, full_like, linspace, manual_seed,
                         ones, ones_like, rand, rand_like, randint, randint_like, randn,
                         randn_like, stack,
                         tensor, where, zeros, zeros_like)
from . import autograd  # noqa: E402
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from .autograd.grad_mode import inference_mode  # noqa: E402
from . import cuda, fake, library, ops, return_types  # noqa: E402
from . import plugins  # noqa: E402
from . import backends  # noqa: E402  (a device's first use: _devices.load imports it by name)
from . import _capture, _registry  # noqa: E402
from .autograd import function as _autograd_function  # noqa: E402

# Every op's table has an entry for the three dispatch keys that are not devices: "meta" (fake
# tensors), "autograd" (a call that records a graph node) and "capture" (tensorplay.compile). The
# registry that holds the tables is below the layers that build those entries and may not import
# them, so this root, which imports every layer, connects them: one call, here, before any op is
# called (ops defined above get their entries now; ops defined later, at definition).
_registry.install_entry_builders({"meta": fake.make_fake_entry,
                                  "autograd": _autograd_function.make_autograd_entry,
                                  "capture": _capture.make_capture_entry})
# likewise the overload packets (tensorplay.ops) for the op records' overloadpacket and the
# handles taken before named overloads existed
_registry.install_packet_of(ops._packet_of)


# The built-in ops below are ``CustomOpDef`` records made at import time (called positionally,
# as their schemas ``(Tensor self, Tensor other)`` say); the declarations give type checkers
# their call signatures: ``other`` may be a tensor or a Python number.
if TYPE_CHECKING:
    mul: _Binary
    pow: _Binary  # noqa: A001
    maximum: _Binary
    minimum: _Binary
    eq: _Binary
    ne: _Binary
    lt: _Binary
    le: _Binary
    gt: _Binary
    ge: _Binary
    logical_and: _Binary
    logical_or: _Binary
    bitwise_and: _Binary
    bitwise_or: _Binary
    bitwise_xor: _Binary
    bitwise_left_shift: _Binary
    bitwise_right_shift: _Binary
    remainder: _Binary
    floor_divide: _Binary
    matmul: CustomOpDef[[Tensor, Tensor], Tensor]
    neg: _Unary
    exp: _Unary
    log: _Unary
    sqrt: _Unary
    rsqrt: _Unary
    tanh: _Unary
    sigmoid: _Unary
    relu: _Unary
    abs: _Unary  # noqa: A001
    sin: _Unary
    cos: _Unary
    erf: _Unary
    clone: _Unary
    logical_not: _Unary
    bitwise_not: _Unary
    isnan: _Unary
    isinf: _Unary
    isfinite: _Unary
    floor: _Unary
    ceil: _Unary
    expm1: _Unary
    log1p: _Unary
    log2: _Unary
    log10: _Unary
    exp2: _Unary
    tan: _Unary
    asin: _Unary
    acos: _Unary
    atan: _Unary
    sinh: _Unary
    cosh: _Unary
    trunc: _Unary
    sign: _Unary
else:   # the op records themselves (run time)
    mul = _O.mul
    pow, neg, exp, log, sqrt, rsqrt = _O.pow, _O.neg, _O.exp, _O.log, _O.sqrt, _O.rsqrt  # noqa: A001
    tanh, sigmoid, relu, abs, sin, cos, erf = _O.tanh, _O.sigmoid, _O.relu, _O.abs, _O.sin, _O.cos, _O.erf  # noqa: A001
    maximum, minimum, matmul = _O.maximum, _O.minimum, _O.matmul
    eq, ne, lt, le, gt, ge = _O.eq, _O.ne, _O.lt, _O.le, _O.gt, _O.ge
    clone = _O.clone
    logical_and, logical_or, logical_not = _O.logical_and, _O.logical_or, _O.logical_not
    bitwise_and, bitwise_or, bitwise_xor = _O.bitwise_and, _O.bitwise_or, _O.bitwise_xor
    bitwise_not, bitwise_left_shift = _O.bitwise_not, _O.bitwise_left_shift
    bitwise_right_shift = _O.bitwise_right_shift
    remainder, floor_divide = _O.remainder, _O.floor_divide
    isnan, isinf, isfinite, floor, ceil = _O.isnan, _O.isinf, _O.isfinite, _O.floor, _O.ceil
    expm1, log1p, log2, log10, exp2 = _O.expm1, _O.log1p, _O.log2, _O.log10, _O.exp2
    tan, asin, acos, atan, sinh, cosh = _O.tan, _O.asin, _O.acos, _O.atan, _O.sinh, _O.cosh
    trunc, sign = _O.trunc, _O.sign


_ALPHA1 = 1       # add/sub's default alpha: ``alpha is _ALPHA1`` is the call without a scale
_add_op, _sub_op = _O.add, _O.sub     # the op records, bound once (one global read per call)


def add(input: _TensorOrScalar, other: _TensorOrScalar, _p: None = None,
        out: Any = None, *, alpha: _Number = _ALPHA1) -> Tensor:
    """``input + alpha * other``, elementwise with broadcasting and torch's dtype promotion;
    same as ``torch.add``. Without ``alpha`` this is the op itself (either operand may be a
    Python number):

        tp::add(Tensor input, Tensor other) -> Tensor

    ``alpha`` follows torch:
    a floating ``alpha`` with integral operands, or a bool ``alpha`` with a non-bool result, is a
    ``RuntimeError``; an int ``alpha`` out of the result dtype's range too. ``Tensor.add`` is the
    same computation."""
    if out is not _p:   # out= given (_p: keyword-only out's slot, see _hide_out_slot)
        _no_extra(_p, "add")
        return _write_out("add", out, add, (input, other), {"alpha": alpha}, "cast")
    if alpha is _ALPHA1:
        return _add_op(input, other)
    input = _tensor_first(input, other)
    # float16/bfloat16 results: one op (never with a dimensioned float32/float64 input)
    if ((dt := input.dtype) in _LOWP16 or dt._kind != "f" or not input.shape) and \
            _opmath.takes_alpha(input, other, alpha):
        return _opmath.add_alpha(input, other, alpha, "add")
    return _O.add(input, _times_alpha(input, other, alpha, "add"))


_hide_out_slot(add)


def sub(input: _TensorOrScalar, other: _TensorOrScalar, _p: None = None,
        out: Any = None, *, alpha: _Number = _ALPHA1) -> Tensor:
    """``input - alpha * other``, elementwise with broadcasting (same as ``torch.sub``; bool
    operands are refused as torch refuses them). ``alpha``'s rules are ``add``'s. Without
    ``alpha``: the op

        tp::sub(Tensor input, Tensor other) -> Tensor
    """
    if out is not _p:   # out= given (_p: keyword-only out's slot, see _hide_out_slot)
        _no_extra(_p, "sub")
        return _write_out("sub", out, sub, (input, other), {"alpha": alpha}, "cast")
    if alpha is _ALPHA1:
        return _sub_op(input, other)
    input = _tensor_first(input, other)
    # float16/bfloat16 results: one op (never with a dimensioned float32/float64 input)
    if ((dt := input.dtype) in _LOWP16 or dt._kind != "f" or not input.shape) and \
            _opmath.takes_alpha(input, other, alpha):
        return _opmath.add_alpha(input, other, alpha, "sub")
    return _O.sub(input, _times_alpha(input, other, alpha, "sub"))


_hide_out_slot(sub)


def _tensor_first(input, other):
    # add/sub with alpha: a Python number first becomes a 0-d tensor, which promotes as the
    # number would (torch's Scalar-self overloads)
    if isinstance(input, Tensor):
        return input
    if not isinstance(other, Tensor):
        raise TypeError(f"add(): argument 'input' must be a Tensor or a Python number with a "
                        f"Tensor 'other', got {type(input).__name__} and {type(other).__name__}")
    from ._dtype import wrapped_dtype
    return full((), input, dtype=wrapped_dtype(input), device=other.device)


# a reduction's dim/keepdim when not given (shown as None/False): torch's full sum
# ``sum(input, *, dtype)`` takes no ``out=`` and no keepdim; its ``dim`` form takes both,
# ``dim=None`` included (the methods apply the rule: Tensor._keepdim_without_dim)
from ._tensor import _NO_DIM, _NO_KEEPDIM  # noqa: E402
from ._tensor_base import index_dim as _index_dim  # noqa: E402


def _full_reduction_out(api: str) -> TypeError:
    """torch's refusal of ``out=`` for the full-reduction form of ``api`` (no ``dim``)."""
    return TypeError(f"{api}() received an invalid combination of arguments - got (Tensor, "
                     f"out=Tensor): the full {api} {api}(input) takes no out= (as torch); give "
                     f"dim ({api}(input, 0, out=o)), or write the result: o.copy_({api}(input))")


def sum(input: Tensor, dim: _Dims = _NO_DIM, keepdim: builtins.bool = _NO_KEEPDIM, *,
        dtype: _DTypeLike | None = None, out: Any = None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` (int or list; all dims when None), same as ``torch.sum``. ``out=`` only
    with ``dim`` given (``None`` included): TypeError without it, as torch."""
    if out is not None:
        if dim is _NO_DIM:
            raise _full_reduction_out("sum")
        return _write_out("sum", out, sum, (input, dim, keepdim),
                          {"dtype": dtype if dtype is not None else out.dtype}, "exact")
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input: Tensor, dim: _Dims = _NO_DIM, keepdim: builtins.bool = _NO_KEEPDIM, *,
         dtype: _DTypeLike | None = None, out: Any = None) -> Tensor:
    """Mean over ``dim``; floating inputs only (``RuntimeError`` otherwise), as ``torch.mean``."""
    if out is not None:
        return _write_out("mean", out, mean, (input, dim, keepdim), {"dtype": dtype}, "cast")
    return input.mean(dim, keepdim, dtype=dtype)


def amax(input: Tensor, dim: _Dims = (), keepdim: builtins.bool = False, *,
         out: Any = None) -> Tensor:
    """Maximum over ``dim`` (all dims when empty), values only; same as ``torch.amax``."""
    if out is not None:
        return _write_out("amax", out, amax, (input, dim, keepdim), {}, "exact")
    return input.amax(dim, keepdim)


def amin(input: Tensor, dim: _Dims = (), keepdim: builtins.bool = False, *,
         out: Any = None) -> Tensor:
    """Minimum over ``dim`` (all dims when empty), values only; same as ``torch.amin``."""
    if out is not None:
        return _write_out("amin", out, amin, (input, dim, keepdim), {}, "exact")
    return input.amin(dim, keepdim)


def round(input: Tensor, *, decimals: builtins.int = 0, out: Any = None) -> Tensor:  # noqa: A001
    """Round to ``decimals`` places, halves to even (same as ``torch.round``)."""
    if out is not None:
        return _write_out("round", out, round, (input,), {"decimals": decimals}, "found")
    return _O.round(input, decimals=decimals)


def square(input: Tensor, *, out: Any = None) -> Tensor:
    """``input * input``, elementwise, in ``input``'s dtype (an integer tensor stays integer, a
    bool one gives int64, as ``pow(input, 2)``); same as ``torch.square``."""
    if out is not None:
        return _write_out("square", out, square, (input,), {}, "cast")
    return input.square()


def reciprocal(input: Tensor, *, out: Any = None) -> Tensor:
    """``1 / input``, elementwise; integer and bool inputs give the default float dtype, division
    by zero gives ``inf`` (same as ``torch.reciprocal``)."""
    if out is not None:
        return _write_out("reciprocal", out, reciprocal, (input,), {}, "cast")
    return input.reciprocal()


def t(input: Tensor) -> Tensor:
    """The transpose of a tensor with at most 2 dims, as a view (0-d and 1-d inputs are returned
    as they are); more dims raise ``RuntimeError``. Same as ``torch.t``."""
    return input.t()


def masked_fill(input: Tensor, mask: Tensor, value: _TensorOrScalar) -> Tensor:
    """A copy of ``input`` with ``value`` (a number or a 0-d tensor) where the bool ``mask``
    (broadcastable to ``input``) is True; ``input`` is unchanged. Differentiable in ``input`` and
    a tensor ``value``. Same as ``torch.masked_fill``."""
    return input.masked_fill(mask, value)


def index_add(input: Tensor, dim: builtins.int, index: Tensor, source: Tensor, *,
              alpha: _Number = 1, out: Any = None) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at the positions ``index`` (1-D int64)
    along ``dim``; repeated indices accumulate. Same as ``torch.index_add``."""
    if out is not None:
        return _write_out("index_add", out, index_add, (input, dim, index, source),
                          {"alpha": alpha}, "exact")
    return input.index_add(dim, index, source, alpha=alpha)


def numel(input: Tensor) -> builtins.int:
    """The number of elements of ``input`` (a Python int), as ``torch.numel``."""
    return input.numel()


def is_floating_point(input: Tensor) -> builtins.bool:
    """True if ``input``'s dtype is a floating-point one (float16, bfloat16, float32, float64),
    as ``torch.is_floating_point``."""
    return input.is_floating_point()


def detach(input: Tensor) -> Tensor:
    """A tensor sharing ``input``'s storage, outside the autograd graph (``requires_grad``
    False), as ``torch.detach``."""
    return input.detach()


def swapaxes(input: Tensor, axis0: builtins.int, axis1: builtins.int) -> Tensor:
    """A view with dims ``axis0`` and ``axis1`` swapped (``transpose``); same as
    ``torch.swapaxes``."""
    return input.transpose(axis0, axis1)


def unflatten(input: Tensor, dim: builtins.int, sizes: Sequence[builtins.int]) -> Tensor:
    """Dim ``dim`` split into ``sizes`` (one may be -1), a view when the strides allow; same as
    ``torch.unflatten``."""
    return input.unflatten(dim, sizes)


def prod(input: Tensor, dim: _Dims = _NO_DIM, keepdim: builtins.bool = _NO_KEEPDIM, *,
         dtype: _DTypeLike | None = None, out: Any = None) -> Tensor:
    """Product over ``dim`` (all elements when None); ints and bools give int64 (``torch.prod``).
    ``out=`` only with an int ``dim``: TypeError otherwise, as torch."""
    if out is not None:
        if dim is None or dim is _NO_DIM:
            raise _full_reduction_out("prod")
        return _write_out("prod", out, prod, (input, dim, keepdim),
                          {"dtype": dtype if dtype is not None else out.dtype}, "exact")
    return input.prod(dim, keepdim, dtype=dtype)


def cumsum(input: Tensor, dim: builtins.int, *, dtype: _DTypeLike | None = None,
           out: Any = None) -> Tensor:
    """Cumulative sum along ``dim`` (same as ``torch.cumsum``)."""
    if out is not None:
        return _write_out("cumsum", out, cumsum, (input, dim),
                          {"dtype": dtype if dtype is not None else out.dtype}, "exact")
    return input.cumsum(dim, dtype=dtype)


def all(input: Tensor, dim: _Dims = None, keepdim: builtins.bool = False, *,
        out: Any = None) -> Tensor:  # noqa: A001
    """True where every element (over ``dim``, or all) is non-zero: bool, uint8 (1/0) for a
    uint8 ``input`` (same as ``torch.all``). An empty ``dim`` (``()`` or ``[]``) reduces no
    dim: ``input != 0``, as torch."""
    if out is not None:
        return _write_out("all", out, all, (input, dim, keepdim), {}, "bool")
    return input.all(dim, keepdim)


def any(input: Tensor, dim: _Dims = None, keepdim: builtins.bool = False, *,
        out: Any = None) -> Tensor:  # noqa: A001
    """True where some element (over ``dim``, or all) is non-zero: bool, uint8 (1/0) for a
    uint8 ``input`` (same as ``torch.any``). An empty ``dim`` reduces no dim, as ``all``."""
    if out is not None:
        return _write_out("any", out, any, (input, dim, keepdim), {}, "bool")
    return input.any(dim, keepdim)


def _max_min(fn, name, input, dim_or_other, keepdim, dim, other, out):
    """``max``/``min`` (``fn``, called ``name``) after their signature: torch's overloads."""
    if dim is not _NO_DIM:     # a keyword dim is always the dim (torch's overloads)
        if dim_or_other is not _NO_DIM:
            raise TypeError(f"{name}() got multiple values for argument 'dim'")
        dim_or_other = _index_dim(dim, f"{name}(): ") if isinstance(dim, Tensor) else dim
        if keepdim is _NO_KEEPDIM:
            keepdim = False
    method = getattr(input, name)
    if other is not None:
        return method(dim_or_other, keepdim, other=other)
    if out is not None:
        return _write_out(name, out, fn, (input, dim_or_other, keepdim), {}, "exact",
                          2 if isinstance(dim_or_other, builtins.int) else 1)
    return method(dim_or_other, keepdim)


@overload
def max(input: Tensor) -> Tensor: ...
@overload
def max(input: Tensor, dim: Tensor) -> Tensor: ...
@overload
def max(input: Tensor, dim: builtins.int, keepdim: builtins.bool = False) -> return_types.max: ...
def max(input: Tensor, dim_or_other: Any = _NO_DIM, keepdim: builtins.bool = _NO_KEEPDIM, *,
        dim: Any = _NO_DIM, other: Any = None, out: Any = None) -> Any:  # noqa: A001
    """``max(input)``: the largest element; ``max(input, dim, keepdim=False)``: the named tuple
    ``(values, indices)``; ``max(input, other)``: the elementwise maximum (as ``torch.max``)."""
    if dim is _NO_DIM and other is None and out is None:    # the common call, inline
        return input.max(dim_or_other, keepdim)
    return _max_min(max, "max", input, dim_or_other, keepdim, dim, other, out)


@overload
def min(input: Tensor) -> Tensor: ...
@overload
def min(input: Tensor, dim: Tensor) -> Tensor: ...
@overload
def min(input: Tensor, dim: builtins.int, keepdim: builtins.bool = False) -> return_types.min: ...
def min(input: Tensor, dim_or_other: Any = _NO_DIM, keepdim: builtins.bool = _NO_KEEPDIM, *,
        dim: Any = _NO_DIM, other: Any = None, out: Any = None) -> Any:  # noqa: A001
    """``min(input)``, ``min(input, dim)`` -> ``(values, indices)``, ``min(input, other)`` (as
    ``torch.min``)."""
    if dim is _NO_DIM and other is None and out is None:    # the common call, inline
        return input.min(dim_or_other, keepdim)
    return _max_min(min, "min", input, dim_or_other, keepdim, dim, other, out)


def nonzero(input: Tensor, *, as_tuple: builtins.bool = False) -> Any:
    """Indices of the nonzero elements (``(n, ndim)`` int64; ``as_tuple=True``: one 1-D tensor
    per dimension), as ``torch.nonzero``; ``n`` depends on the values."""
    return input.nonzero(as_tuple=as_tuple)


def argmax(input: Tensor, dim: builtins.int | None = None,
           keepdim: builtins.bool = False, *, out: Any = None) -> Tensor:
    """Index of the maximum (of the flattened input when ``dim`` is None), as ``torch.argmax``."""
    if out is not None:
        return _write_out("argmax", out, argmax, (input, dim, keepdim), {}, "exact")
    return _O.argmax(input, dim, keepdim)


def argmin(input: Tensor, dim: builtins.int | None = None,
           keepdim: builtins.bool = False, *, out: Any = None) -> Tensor:
    """Index of the minimum (of the flattened input when ``dim`` is None), as ``torch.argmin``."""
    if out is not None:
        return _write_out("argmin", out, argmin, (input, dim, keepdim), {}, "exact")
    return _O.argmin(input, dim, keepdim)


def sort(input: Tensor, dim: builtins.int = -1, descending: builtins.bool = False, *,
         stable: builtins.bool = False, out: Any = None) -> return_types.sort:
    """``(values, indices)`` sorted along ``dim`` (same as ``torch.sort``)."""
    if out is not None:
        return _write_out("sort", out, sort, (input, dim, descending), {"stable": stable},
                          "exact", 2)
    return input.sort(dim, descending, stable=stable)


def topk(input: Tensor, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True,
         sorted: builtins.bool = True, *, out: Any = None) -> return_types.topk:   # noqa: A002 - torch's names
    """``(values, indices)`` of the ``k`` largest (or smallest) elements along ``dim`` (same as
    ``torch.topk``; see ``Tensor.topk``)."""
    if out is not None:
        return _write_out("topk", out, topk, (input, k, dim, largest, sorted), {}, "exact", 2)
    return input.topk(k, dim, largest, sorted)


def argsort(input: Tensor, dim: builtins.int = -1, descending: builtins.bool = False, *,
            stable: builtins.bool = False) -> Tensor:
    """Indices sorting ``input`` along ``dim`` (same as ``torch.argsort``)."""
    return input.argsort(dim, descending, stable=stable)


def gather(input: Tensor, dim: builtins.int, index: Tensor, *,
           sparse_grad: builtins.bool = False, out: Any = None) -> Tensor:
    """Values of ``input`` at ``index`` along ``dim`` (same as ``torch.gather``)."""
    if out is not None:
        return _write_out("gather", out, gather, (input, dim, index),
                          {"sparse_grad": sparse_grad}, "exact")
    return _O.gather(input, dim, index, sparse_grad=sparse_grad)


def scatter_add(input: Tensor, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src`` added at ``index`` along ``dim`` (same as ``torch.scatter_add``)."""
    return _O.scatter_add(input, dim, index, src)


def scatter(input: Tensor, dim: builtins.int, index: Tensor, src: _TensorOrScalar | None = None, *,
            value: _Number | None = None, reduce: str | None = None) -> Tensor:
    """``input`` with ``src`` (tensor or number) written at ``index`` along ``dim`` (same as
    ``torch.scatter``; see ``Tensor.scatter``)."""
    return input.scatter(dim, index, src, value=value, reduce=reduce)


def softmax(input: Tensor, dim: builtins.int, dtype: _DTypeLike | None = None, *,
            out: Any = None) -> Tensor:
    """Softmax along ``dim``, same as ``torch.softmax``: a floating ``input`` (an integer or bool
    one is a ``RuntimeError``), the result in its dtype; ``dtype=`` converts ``input`` to that
    dtype first (``softmax(x_int, 0, dtype=tensorplay.float32)`` works). float16 is computed in
    float32 and rounded once, as torch."""
    if out is not None:
        return _write_out("softmax", out, softmax, (input, dim, dtype), {}, "exact", grad=False)
    return _O.softmax(input if dtype is None else input.to(dtype), dim)


def log_softmax(input: Tensor, dim: builtins.int, dtype: _DTypeLike | None = None, *,
                out: Any = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably; ``dtype=`` converts ``input`` first, as
    ``softmax``. Same as ``torch.log_softmax``."""
    if out is not None:
        return _write_out("log_softmax", out, log_softmax, (input, dim, dtype), {}, "exact",
                          grad=False)
    return _O.log_softmax(input if dtype is None else input.to(dtype), dim)


def reshape(input: Tensor, shape: Sequence[builtins.int]) -> Tensor:
    """``input`` with shape ``shape``: a view when the strides allow, else a copy (``torch.reshape``)."""
    return input.reshape(shape)


def permute(input: Tensor, dims: Sequence[builtins.int]) -> Tensor:
    """A view of ``input`` with its dimensions reordered as ``dims``; same as ``torch.permute``."""
    return input.permute(dims)


def transpose(input: Tensor, dim0: builtins.int, dim1: builtins.int) -> Tensor:
    """A view of ``input`` with ``dim0`` and ``dim1`` swapped; same as ``torch.transpose``."""
    return input.transpose(dim0, dim1)


def unsqueeze(input: Tensor, dim: builtins.int) -> Tensor:
    """A view of ``input`` with a size-1 dimension inserted at ``dim`` (``torch.unsqueeze``)."""
    return input.unsqueeze(dim)


def squeeze(input: Tensor, dim: _Dims = _NO_DIM) -> Tensor:
    """A view of ``input`` without its size-1 dimensions (or only ``dim``) (``torch.squeeze``)."""
    return input.squeeze(dim)


def div(input: _TensorOrScalar, other: _TensorOrScalar, _p: None = None,
        out: Any = None, *, rounding_mode: builtins.str | None = None) -> Tensor:
    """``input / other``, as ``torch.div``: true division by default (integer inputs give the
    default float dtype), ``rounding_mode="floor"`` or ``"trunc"`` (see ``Tensor.div``). ``x / y``
    calls the op directly; this function adds one Python call."""
    if out is not _p:   # out= given (_p: keyword-only out's slot, see _hide_out_slot)
        _no_extra(_p, "div")
        return _write_out("div", out, div, (input, other), {"rounding_mode": rounding_mode}, "cast")
    if rounding_mode is None:
        return _O.div(input, other)
    if not isinstance(input, Tensor):   # a 0-d tensor promotes as the Python number would
        from ._dtype import wrapped_dtype
        input = full((), input, dtype=wrapped_dtype(input), device=other.device)
    return input.div(other, rounding_mode=rounding_mode)


_hide_out_slot(div)


def clamp(input: Tensor, min: _TensorOrScalar | None = None,
          max: _TensorOrScalar | None = None, *, out: Any = None) -> Tensor:  # noqa: A002
    """``input`` limited to [``min``, ``max``] elementwise, either may be None (``torch.clamp``)."""
    if out is not None:
        return _write_out("clamp", out, clamp, (input, min, max), {}, "found")
    return input.clamp(min, max)


def allclose(input: Tensor, other: Tensor, rtol: builtins.float = 1e-5,
             atol: builtins.float = 1e-8, equal_nan: builtins.bool = False) -> builtins.bool:
    """True when ``|input - other| <= atol + rtol * |other|`` elementwise (shapes broadcast),
    as ``torch.allclose`` (its argument names, so ``allclose(input=..., other=...)`` works)."""
    from .testing.assertions import allclose as _ac
    return _ac(input, other, rtol=rtol, atol=atol, equal_nan=equal_nan)


def is_tensor(obj: object) -> TypeGuard[Tensor]:
    """True if ``obj`` is a ``tensorplay.Tensor``, fake ones included (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


from . import _surface  # noqa: E402  (torch's composite functions; Tensor methods forward there)
from ._surface import (addmm, as_strided, baddbmm, bmm, broadcast_tensors, broadcast_to,  # noqa: E402
                       cartesian_prod, chunk, clamp_max, clamp_min, clip, diag, dist, dot, dstack,
                       einsum, equal, finfo,
                       flatten, flip, iinfo, index_select, isclose, logical_xor, logsumexp,
                       masked_select, meshgrid, mm, multinomial, narrow, norm, outer, randperm,
                       repeat_interleave, roll, select, split, std, std_mean, tensordot, tril,
                       triu, unbind, unique, var, var_mean)

# imported eagerly: a lazy ``from .compile import ...`` would rebind ``tensorplay.compile`` to the
# submodule. Capture + cache + execution (SPEC §4); core-only imports.
from .compile import compile  # noqa: E402,A001
from ._threads import get_num_threads, set_num_threads  # noqa: E402


import builtins  # noqa: E402

__all__ = [
    "Tensor", "Device", "device", "DType", "dtype", "float16", "bfloat16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8", "uint32", "bool", "half", "float", "double", "long", "int",
    "short", "get_default_dtype", "set_default_dtype", "promote_types",
    "tensor", "as_tensor", "from_numpy", "from_dlpack", "empty", "zeros", "ones", "full", "arange",
    "rand", "randn", "empty_like", "empty_strided", "Tag", "zeros_like", "ones_like",
    "full_like", "rand_like",
    "randn_like", "randint_like", "memory_format", "preserve_format", "contiguous_format",
    "channels_last", "channels_last_3d", "manual_seed", "cat", "concat", "concatenate", "stack", "where", "eye", "linspace", "randint",
    "add", "sub", "mul", "div", "pow", "neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
    "relu", "abs", "sin", "cos", "erf", "maximum", "minimum", "matmul", "eq", "ne", "lt", "le",
    "gt", "ge", "clone", "logical_and", "logical_or", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "sum", "mean", "amax",
    "amin", "softmax", "log_softmax", "reshape", "permute", "transpose", "unsqueeze", "squeeze",
    "clamp", "allclose", "is_tensor", "compile", "isnan", "isinf", "isfinite", "floor", "ceil",
    "trunc", "sign", "square", "reciprocal", "t", "masked_fill", "index_add", "numel",
    "is_floating_point", "detach", "swapaxes", "unflatten", "expm1", "log1p", "log2", "log10", "exp2", "tan", "asin", "acos", "atan", "sinh",
    "cosh",
    "round", "prod", "cumsum", "nonzero", "all", "any", "max", "min", "argmax", "argmin", "sort",
    "argsort", "topk", "gather", "scatter_add", "return_types",
    "autograd", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    "fake", "library", "ops", "plugins", "errors", "backends", "cuda", "testing",
    "addmm", "baddbmm", "bmm", "broadcast_tensors", "broadcast_to", "chunk", "diag", "dot",
    "einsum", "equal", "finfo", "flatten", "flip", "iinfo", "index_select", "isclose",
    "logsumexp", "masked_select", "meshgrid", "mm", "multinomial", "narrow", "norm", "outer",
    "randperm", "repeat_interleave", "roll", "select", "split", "std", "tensordot", "tril",
    "triu", "unbind", "unique", "var", "scatter", "as_strided",
    "remainder", "floor_divide", "logical_xor", "clamp_min", "clamp_max", "clip", "var_mean",
    "std_mean",
    "get_num_threads", "set_num_threads",
    "cartesian_prod", "dist", "dstack", "e", "inf", "nan", "pi",
]


# -- session 44 (h-gaps44): torch's two-operand math functions, inverse hyperbolics and the
# value+index reductions (the ops: tensorplay._ops.elementwise; the methods: Tensor.atan2 ...) ---
if TYPE_CHECKING:
    atan2: CustomOpDef[[Tensor, Tensor], Tensor]
    arctan2: CustomOpDef[[Tensor, Tensor], Tensor]
    hypot: CustomOpDef[[Tensor, Tensor], Tensor]
    nextafter: CustomOpDef[[Tensor, Tensor], Tensor]
    fmax: CustomOpDef[[Tensor, Tensor], Tensor]
    fmin: CustomOpDef[[Tensor, Tensor], Tensor]
    fmod: _Binary
    copysign: _Binary
    asinh: _Unary
    arcsinh: _Unary
    acosh: _Unary
    arccosh: _Unary
    atanh: _Unary
    arctanh: _Unary
else:
    atan2 = arctan2 = _O.atan2
    hypot, nextafter, fmod, copysign = _O.hypot, _O.nextafter, _O.fmod, _O.copysign
    fmax, fmin = _O.fmax, _O.fmin
    asinh = arcsinh = _O.asinh
    acosh = arccosh = _O.acosh
    atanh = arctanh = _O.atanh


def _tensor_input(api: str, x: Any, name: str = "input") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{api}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def logaddexp(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    """``log(exp(input) + exp(other))`` computed stably; floating tensors only (TypeError for a
    number, RuntimeError for integer tensors), as ``torch.logaddexp``."""
    if out is not None:
        return _write_out("logaddexp", out, logaddexp, (input, other), {}, "cast")
    _tensor_input("logaddexp", input)
    _tensor_input("logaddexp", other, "other")
    return input.logaddexp(other)


def logaddexp2(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    """``log2(2**input + 2**other)``, as ``logaddexp`` (same as ``torch.logaddexp2``)."""
    if out is not None:
        return _write_out("logaddexp2", out, logaddexp2, (input, other), {}, "cast")
    _tensor_input("logaddexp2", input)
    _tensor_input("logaddexp2", other, "other")
    return input.logaddexp2(other)


def xlogy(input: _TensorOrScalar, other: _TensorOrScalar, *, out: Any = None) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be
    a number (not both); integers give the default float dtype (same as ``torch.xlogy``)."""
    if out is not None:
        return _write_out("xlogy", out, xlogy, (input, other), {}, "cast")
    if not isinstance(input, Tensor):
        _tensor_input("xlogy", other, "other")
        from ._ops._shapes import float_dtype, result_dtype
        input = full([], input, dtype=float_dtype(result_dtype(input, other)),
                     device=other.device)
    return input.xlogy(other)


def float_power(input: _TensorOrScalar, exponent: _TensorOrScalar, *, out: Any = None) -> Tensor:
    """``input ** exponent`` computed in float64 (the result is float64), either a number (not
    both), as ``torch.float_power``."""
    if out is not None:
        return _write_out("float_power", out, float_power, (input, exponent), {}, "exact")
    if not isinstance(input, Tensor):
        _tensor_input("float_power", exponent, "exponent")
        input = full([], input, dtype=float64, device=exponent.device)
    return input.float_power(exponent)


def aminmax(input: Tensor, *, dim: builtins.int | None = None,
            keepdim: builtins.bool = False, out: Any = None) -> return_types.aminmax:
    """``(min, max)`` (``tensorplay.return_types.aminmax``), as ``torch.aminmax``; see
    ``Tensor.aminmax``."""
    if out is not None:
        return _write_out("aminmax", out, aminmax, (input,), {"dim": dim, "keepdim": keepdim},
                          "exact", 2)
    _tensor_input("aminmax", input)
    return input.aminmax(dim=dim, keepdim=keepdim)


def median(input: Tensor, dim: builtins.int | None = _NO_DIM,
           keepdim: builtins.bool = _NO_KEEPDIM, *, out: Any = None) -> Tensor | return_types.median:
    """The lower median (of every element, or ``(values, indices)`` along ``dim``), as
    ``torch.median``; see ``Tensor.median``."""
    if out is not None:
        if dim is None or dim is _NO_DIM:   # torch's full median(input) has no out=
            raise _full_reduction_out("median")
        return _write_out("median", out, median, (input, dim, keepdim), {}, "exact", 2)
    _tensor_input("median", input)
    return input.median(dim, keepdim)


def nanmedian(input: Tensor, dim: builtins.int | None = _NO_DIM,
              keepdim: builtins.bool = _NO_KEEPDIM, *, out: Any = None) -> Tensor | return_types.nanmedian:
    """``median`` ignoring NaN, as ``torch.nanmedian``."""
    if out is not None:
        if dim is None or dim is _NO_DIM:   # torch's full nanmedian(input) has no out=
            raise _full_reduction_out("nanmedian")
        return _write_out("nanmedian", out, nanmedian, (input, dim, keepdim), {}, "exact", 2)
    _tensor_input("nanmedian", input)
    return input.nanmedian(dim, keepdim)


def kthvalue(input: Tensor, k: builtins.int, dim: builtins.int = -1,
             keepdim: builtins.bool = False, *, out: Any = None) -> return_types.kthvalue:
    """The ``k``-th smallest value along ``dim`` and its index, as ``torch.kthvalue``."""
    if out is not None:
        return _write_out("kthvalue", out, kthvalue, (input, k, dim, keepdim), {}, "exact", 2)
    _tensor_input("kthvalue", input)
    return input.kthvalue(k, dim, keepdim)


def mode(input: Tensor, dim: builtins.int = -1,
         keepdim: builtins.bool = False, *, out: Any = None) -> return_types.mode:
    """The most frequent value along ``dim`` and its last index, as ``torch.mode``."""
    if out is not None:
        return _write_out("mode", out, mode, (input, dim, keepdim), {}, "exact", 2)
    _tensor_input("mode", input)
    return input.mode(dim, keepdim)


def cummax(input: Tensor, dim: builtins.int, *, out: Any = None) -> return_types.cummax:
    """Running maximum along ``dim`` and its indices, as ``torch.cummax``."""
    if out is not None:
        return _write_out("cummax", out, cummax, (input, dim), {}, "exact", 2)
    _tensor_input("cummax", input)
    return input.cummax(dim)


def cummin(input: Tensor, dim: builtins.int, *, out: Any = None) -> return_types.cummin:
    """Running minimum along ``dim`` and its indices, as ``torch.cummin``."""
    if out is not None:
        return _write_out("cummin", out, cummin, (input, dim), {}, "exact", 2)
    _tensor_input("cummin", input)
    return input.cummin(dim)


__all__ += ["atan2", "arctan2", "hypot", "nextafter", "fmod", "copysign", "fmax", "fmin",
            "asinh", "arcsinh",
            "acosh", "arccosh", "atanh", "arctanh", "logaddexp", "logaddexp2", "xlogy",
            "float_power", "aminmax", "median", "nanmedian", "kthvalue", "mode", "cummax",
            "cummin"]

# -- session 45 (h-funcs45): torch's module-level functions over the Tensor methods (_surface) --
from ._surface import (adjoint, argwhere, atleast_1d, atleast_2d, atleast_3d,  # noqa: E402
                       column_stack, conj, conj_physical, count_nonzero, cumprod, diag_embed,
                       diagonal, dsplit, fliplr, flipud, hsplit, hstack, imag, is_complex,
                       is_conj, is_nonzero, isreal, logcumsumexp, moveaxis, movedim, nanmean,
                       nansum, positive, ravel, real, resolve_conj, resolve_neg, rot90,
                       row_stack, swapdims, take, take_along_dim, tensor_split, tile, trace,
                       vsplit, vstack, select_scatter, slice_scatter, diagonal_scatter,
                       result_type, can_cast, tril_indices, triu_indices, searchsorted,
                       bucketize, kron, block_diag, signbit, unique_consecutive,
                       combinations)
from ._surface import broadcast_shapes_ as broadcast_shapes  # noqa: E402
# -- session 46 (h-ops46): torch functions that were missing (_surface, composed of tp:: ops) ---
from ._surface import (logspace, isin, vander, histc, histogram, cov, corrcoef,  # noqa: E402
                       quantile, nanquantile, gradient, renorm)

# torch's alias names of the functions above (the same functions: out=, errors, autograd)
multiply, subtract, divide, negative, absolute, fix = mul, sub, div, neg, abs, trunc


def true_divide(dividend: _TensorOrScalar, divisor: _TensorOrScalar, *,
                out: Any = None) -> Tensor:
    """``div(dividend, divisor)``: true division (integers give the default float dtype). Same
    as ``torch.true_divide``."""
    return div(dividend, divisor, out=out)


def rsub(input: _TensorOrScalar, other: _TensorOrScalar, *, alpha: _Number = 1) -> Tensor:
    """``other - alpha * input`` (``sub`` with the operands swapped; its dtype rules and
    errors). Same as ``torch.rsub``."""
    return sub(other, input, alpha=alpha)


import inspect as _inspect  # noqa: E402


def _method_function(name: str, doc: str | None = None, out: str | None = None):
    """``tensorplay.<name>(input, *args, **kwargs)``: the Tensor method (TypeError for an input
    that is not a tensor); ``out``: the ``write_out`` rule of its ``out=`` (None: torch takes
    no ``out=``). ``doc`` None: the method's own docstring, introduced."""
    method = getattr(Tensor, name)
    if out is None:
        def f(input, *args, **kwargs):
            _tensor_input(name, input)
            return method(input, *args, **kwargs)
    else:
        def f(input, *args, out=None, **kwargs):
            if out is not None:
                return _write_out(name, out, f, (input, *args), kwargs, rule)
            _tensor_input(name, input)
            return method(input, *args, **kwargs)
        rule = out
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc if doc is not None else (
        f"``input.{name}(...)``, the Tensor method with ``input`` first (same as "
        f"``torch.{name}``); TypeError for an ``input`` that is not a tensor"
        + (", ``out=`` as torch's" if out else "") + ". The method:\n\n"
        + (_inspect.getdoc(method) or ""))
    return f


if TYPE_CHECKING:
    nan_to_num = Tensor.nan_to_num
    sgn = frac = deg2rad = rad2deg = logit = lerp = Tensor.sgn
else:
    nan_to_num = _method_function(
        "nan_to_num", "NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by "
        "default the dtype's largest and lowest finite values); integer and bool tensors are "
        "copied. Same as ``torch.nan_to_num``.")
    sgn = _method_function("sgn", "``sign(input)`` (real dtypes). Same as ``torch.sgn``.")
    frac = _method_function("frac", "``input - trunc(input)``; floating inputs only "
                            "(RuntimeError otherwise). Same as ``torch.frac``.")
    deg2rad = _method_function("deg2rad", "``input * pi / 180`` (integers give the default "
                               "float dtype). Same as ``torch.deg2rad``.")
    rad2deg = _method_function("rad2deg", "``input * 180 / pi`` (integers give the default "
                               "float dtype). Same as ``torch.rad2deg``.")
    logit = _method_function("logit", "``log(z / (1 - z))``, ``z`` clamped to ``[eps, 1 - "
                             "eps]`` when ``eps`` is given. Same as ``torch.logit``.")
    lerp = _method_function("lerp", "``input + weight * (end - input)`` evaluated as torch's "
                            "kernel; floating tensors of one dtype (RuntimeError otherwise). "
                            "Same as ``torch.lerp`` (``out=`` too).", out="cast")

# more of torch's module-level forms of Tensor methods: the in-place ones (``torch.clamp_(x, 0,
# 1)``, ``torch.zero_(x)``: no ``out=``) and the rest (``out=`` where torch takes it)
_INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "arccos_", "arcsin_", "arctan_", "arccosh_", "arcsinh_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "exp2_", "exp_",
    "expm1_", "fill_", "fix_", "floor_", "frac_", "index_put_", "log10_", "log1p_", "log2_",
    "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_",
    "round_", "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "xlogy_", "zero_")
_METHOD_FUNCTIONS = {   # name: out= rule (None: torch takes no out=)
    "addcdiv": "cast", "addcmul": "cast", "bernoulli": "found", "bincount": None,
    "cross": "found", "diagflat": None, "diff": "found", "index_copy": None, "index_fill": None,
    "index_put": None, "inner": "found", "isneginf": "found", "isposinf": "found",
    "masked_scatter": None, "msort": "found", "mv": "found", "narrow_copy": "found",
    "put": None, "scatter_reduce": "found", "split_with_sizes": None, "is_neg": None,
    "is_same_size": None, "is_signed": None}
if not TYPE_CHECKING:
    for _n in _INPLACE_FUNCTIONS:
        globals()[_n] = _method_function(_n)
    for _n, _rule in _METHOD_FUNCTIONS.items():
        globals()[_n] = _method_function(_n, out=_rule)
    del _n, _rule
arccos, arcsin, arctan = acos, asin, atan
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
ger = outer

__all__ += [*_INPLACE_FUNCTIONS, *_METHOD_FUNCTIONS, "arccos", "arcsin", "arctan", "greater",
            "greater_equal", "less", "less_equal", "not_equal", "ger"]
__all__ += ["adjoint", "argwhere", "atleast_1d", "atleast_2d", "atleast_3d", "column_stack",
            "conj", "conj_physical", "count_nonzero", "cumprod", "diag_embed", "diagonal",
            "dsplit", "fliplr", "flipud", "hsplit", "hstack", "imag", "is_complex", "is_conj",
            "is_nonzero", "isreal", "logcumsumexp", "moveaxis", "movedim", "nanmean", "nansum",
            "positive", "ravel", "real", "resolve_conj", "resolve_neg", "rot90", "row_stack",
            "swapdims", "take", "take_along_dim", "tensor_split", "tile", "trace", "vsplit",
            "vstack", "multiply", "subtract", "divide", "negative", "absolute", "fix",
            "true_divide", "rsub", "nan_to_num", "sgn", "frac", "deg2rad", "rad2deg", "logit",
            "lerp", "select_scatter", "slice_scatter", "diagonal_scatter", "broadcast_shapes",
            "result_type", "can_cast", "tril_indices", "triu_indices", "searchsorted",
            "bucketize", "kron", "block_diag", "signbit", "unique_consecutive",
            "combinations"]
__all__ += ["logspace", "isin", "vander", "histc", "histogram", "cov", "corrcoef", "quantile",
            "nanquantile", "gradient", "renorm"]


# -- linear algebra (session 46, h-linalg46): torch.linalg and torch's top-level forms -------------
from . import linalg  # noqa: E402
from .linalg import cdist, det, inverse, logdet, matrix_power, pinverse  # noqa: E402
from .linalg import top_cholesky as cholesky, top_qr as qr, top_slogdet as slogdet  # noqa: E402
from .linalg import top_svd as svd  # noqa: E402
__all__ += ["linalg", "cdist", "det", "inverse", "logdet", "matrix_power", "pinverse",
            "cholesky", "qr", "slogdet", "svd"]


# -- session 46 (h-special46): special functions (the tp:: ops of _ops/special.py, called here
# with torch's out=) and the tensorplay.special module (torch.special's names)
def lgamma(input: Tensor, *, out: Any = None) -> Tensor:
    """``log|Gamma(input)|``, elementwise (+inf at 0, the negative integers and +-inf); any
    shape and device; integer and bool inputs give the default float dtype; float16/float32
    computed in float64 and rounded once; ``out=`` as torch's. Same as ``torch.lgamma``."""
    if out is not None:
        return _write_out("lgamma", out, lgamma, (input,), {}, "cast")
    return _O.lgamma(input)


def digamma(input: Tensor, *, out: Any = None) -> Tensor:
    """``d/dx log Gamma(input)``, elementwise (-inf at +0, +inf at -0, NaN at the negative
    integers and -inf); dtypes as ``lgamma``; ``out=`` as torch's. Same as ``torch.digamma``."""
    if out is not None:
        return _write_out("digamma", out, digamma, (input,), {}, "cast")
    return _O.digamma(input)


def polygamma(n: builtins.int, input: Tensor, *, out: Any = None) -> Tensor:
    """The ``n``-th derivative of ``digamma`` at ``input``, elementwise (``n >= 0``, else
    RuntimeError); dtypes as ``lgamma``; ``out=`` as torch's. Same as ``torch.polygamma``."""
    if out is not None:
        return _write_out("polygamma", out, polygamma, (n, input), {}, "cast")
    return _O.polygamma(n, input)


def mvlgamma(input: Tensor, p: builtins.int, *, out: Any = None) -> Tensor:
    """The multivariate log-gamma function of dimension ``p`` (``p >= 1``, else RuntimeError):
    ``p(p-1)/4 log(pi) + sum_{i<p} lgamma(input - i/2)``, elementwise; dtypes as ``lgamma``;
    ``out=`` as torch's. Same as ``torch.mvlgamma``."""
    if out is not None:
        return _write_out("mvlgamma", out, mvlgamma, (input, p), {}, "cast")
    return _O.mvlgamma(input, p)


def erfc(input: Tensor, *, out: Any = None) -> Tensor:
    """``1 - erf(input)`` without cancellation (relative accuracy in the upper tail),
    elementwise; dtypes as ``lgamma``; ``out=`` as torch's. Same as ``torch.erfc``."""
    if out is not None:
        return _write_out("erfc", out, erfc, (input,), {}, "cast")
    return _O.erfc(input)


def erfinv(input: Tensor, *, out: Any = None) -> Tensor:
    """The inverse error function, elementwise (+-inf at +-1, NaN outside [-1, 1]); dtypes as
    ``lgamma``; ``out=`` as torch's. Same as ``torch.erfinv``."""
    if out is not None:
        return _write_out("erfinv", out, erfinv, (input,), {}, "cast")
    return _O.erfinv(input)


def i0(input: Tensor, *, out: Any = None) -> Tensor:
    """The modified Bessel function of the first kind of order 0, elementwise (NaN at +-inf,
    as torch's); dtypes as ``lgamma``; ``out=`` as torch's. Same as ``torch.i0``."""
    if out is not None:
        return _write_out("i0", out, i0, (input,), {}, "cast")
    return _O.i0(input)


def sinc(input: Tensor, *, out: Any = None) -> Tensor:
    """``sin(pi input) / (pi input)``, 1 at 0, elementwise; dtypes as ``lgamma``; ``out=`` as
    torch's. Same as ``torch.sinc``."""
    if out is not None:
        return _write_out("sinc", out, sinc, (input,), {}, "cast")
    return _O.sinc(input)


def heaviside(input: Tensor, values: Tensor, *, out: Any = None) -> Tensor:
    """0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0``, with
    broadcasting; both of one dtype (RuntimeError otherwise), which the result keeps; not
    differentiable; ``out=`` as torch's. Same as ``torch.heaviside``."""
    if out is not None:
        return _write_out("heaviside", out, heaviside, (input, values), {}, "cast")
    return _O.heaviside(input, values)


def ldexp(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    """``input * 2 ** other`` with broadcasting; tensors only (TypeError for a number). An
    integer ``other`` scales exactly, in ``input``'s floating dtype (the default one for
    integers); a floating one is ``input * pow(2.0, other)`` at the promoted dtype; ``out=`` as
    torch's. Same as ``torch.ldexp``."""
    if out is not None:
        return _write_out("ldexp", out, ldexp, (input, other), {}, "cast")
    return _O.ldexp(input, other)


def frexp(input: Tensor, *, out: Any = None) -> return_types.frexp:
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent`` and ``|mantissa|``
    in [0.5, 1) (0, inf and NaN kept, exponent 0); ``exponent`` is int32; floating tensors only
    (RuntimeError otherwise); TypeError for a non-tensor; ``out=`` a pair, as torch's. Same as
    ``torch.frexp``."""
    if out is not None:
        return _write_out("frexp", out, frexp, (input,), {}, "exact", 2)
    _tensor_input("frexp", input)
    return input.frexp()


# torch's module-level in-place forms of four of them (torch.erfc_(x), torch.ldexp_(x, e))
if not TYPE_CHECKING:
    for _n in ("erfc_", "i0_", "sinc_", "ldexp_"):
        globals()[_n] = _method_function(_n)
    del _n

from . import special  # noqa: E402

__all__ += ["lgamma", "digamma", "polygamma", "mvlgamma", "erfc", "erfinv", "i0", "sinc",
            "heaviside", "ldexp", "frexp", "special", "erfc_", "i0_", "sinc_", "ldexp_"]

_FLOAT32_MATMUL_PRECISION = ["highest"]


def get_float32_matmul_precision() -> builtins.str:
    """The float32 matmul precision asked for (``"highest"``, ``"high"`` or ``"medium"``;
    ``"highest"`` until set), as ``torch.get_float32_matmul_precision``. Kernel libraries read it
    to pick their own dots' precision (Cut Cross-Entropy: ``"high"`` -> TF32, else IEEE);
    tensorplay's own matmuls compute in float32 whatever it says, as torch's cpu ones do."""
    return _FLOAT32_MATMUL_PRECISION[0]


def set_float32_matmul_precision(precision: builtins.str) -> None:
    """Set what :func:`get_float32_matmul_precision` answers, as
    ``torch.set_float32_matmul_precision``: ``RuntimeError`` for a non-string; another string
    than ``"highest"``, ``"high"``, ``"medium"`` warns and changes nothing (as torch)."""
    if not isinstance(precision, builtins.str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _FLOAT32_MATMUL_PRECISION[0] = precision


__all__ += ["get_float32_matmul_precision", "set_float32_matmul_precision"]


def __getattr__(name):
    # ``tensorplay.testing`` as an attribute after ``import tensorplay`` (torch's habit), imported
    # on first access: it is not needed to run ops, and ``import tensorplay`` stays light.
    # ``xpu``, ``accelerator`` and ``compiler`` likewise: torch's names that kernel libraries read
    if name in ("testing", "xpu", "accelerator", "compiler"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'tensorplay' has no attribute {name!r}")

plugins.load_all()
