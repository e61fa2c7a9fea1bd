"""torch's everyday tensor functions that are compositions of built-in ops (issue 29 §3).

Each function here is written with ``tp::`` ops only (views, ``index``, ``where``, ``matmul``,
reductions, ...), so it runs on every device, under ``FakeTensorMode`` where its ops have fake
rules, and gets autograd from its ops' formulas (torch's derivatives of these functions are the
same compositions). The package root exports them as ``tensorplay.<name>`` and ``Tensor``
methods forward here (bound as ``_tensor._surface``). Semantics, shapes and errors follow the
torch function of the same name.
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Sequence

from . import _dtype
from . import _factories as F
from ._ops import ops as O
from ._ops._define import factory_out as _factory_out, write_out as _write_out
from ._ops._shapes import broadcast_shapes, is_tensor, wrap_dim
from ._tensor_base import _NO_DIM, _NO_KEEPDIM, checked_dims, dim_list
from ._ops.elementwise import norm_root
from ._ops.indexing import index_extremes
from ._ops.sorting_topk import searchsorted_check
from ._ops.views import mark_multi_output

if TYPE_CHECKING:
    from ._tensor import Tensor, _DeviceLike, _Dims, _DTypeLike, _Number

_int = builtins.int


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _sizes(args):
    """``f(2, 3)`` or ``f((2, 3))`` -> ``[2, 3]``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return [_int(a) for a in args]


# -- shape functions -------------------------------------------------------------------------------
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims ``start_dim..end_dim`` merged into one (a view when the strides allow), as
    ``torch.flatten``; a 0-d input gives shape ``(1,)``."""
    return input.flatten(start_dim, end_dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``input`` along ``dim`` as a tuple of views (``torch.unbind``). They are
    the outputs of one function: while autograd records (grad mode on, an input requiring
    grad), writing one of them, or a view of one, in place raises RuntimeError, and so does
    using one after its base was written in place (torch's rule)."""
    d = wrap_dim(dim, input.ndim, "unbind(): ")
    # torch's outputs of one multi-view function: not writable in place while autograd records
    return mark_multi_output(tuple(O.select(input, d, i) for i in range(input.shape[d])),
                             "Unbind")


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most ``chunks`` views of equal size along ``dim`` (the last may be smaller), as
    ``torch.chunk``."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    return input.chunk(chunks, dim)


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int],
          dim: int = 0) -> tuple[Tensor, ...]:
    """Views of size ``split_size_or_sections`` (or of each listed size) along ``dim``, as
    ``torch.split``."""
    return tensor.split(split_size_or_sections, dim)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The view of ``length`` elements of ``dim`` from ``start`` (``torch.narrow``)."""
    return O.narrow(input, dim, start, length)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The view at ``index`` of ``dim``, which it removes (``torch.select``)."""
    return O.select(input, dim, index)


def flip(input: Tensor, dims: int | Sequence[int]) -> Tensor:
    """A copy with the order of elements reversed along ``dims`` (``torch.flip``); a dim out of
    range is an ``IndexError`` (a 0-d input takes 0 and -1), a dim named twice a
    ``RuntimeError``."""
    dims = [dims] if isinstance(dims, _int) else list(dims)
    out = input
    wrapped = [wrap_dim(d, input.ndim, "flip(): ") for d in dims]
    if len(set(wrapped)) != len(wrapped):
        w = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
        raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
    for d in set(wrapped) if input.ndim else ():
        n = input.shape[d]
        if n > 1:
            out = O.index(out, d, F.arange(n - 1, -1, -1, device=input.device))
    return out if out is not input else O.clone(input)


def roll(input: Tensor, shifts: int | Sequence[int],
         dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted by ``shifts`` along ``dims``, wrapping around (``torch.roll``); without
    ``dims`` the flattened tensor is rolled and the shape restored."""
    if dims is None:
        return roll(O.reshape(input, [-1]), shifts, 0).reshape(list(input.shape))
    shifts = [shifts] if isinstance(shifts, _int) else list(shifts)
    dims = [dims] if dims.__class__ is _int else dim_list(dims, "roll")   # (tensor([1]) too)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = wrap_dim(d, input.ndim, "roll(): ")
        n = input.shape[d]
        s = s % n if n else 0
        if s:
            out = O.cat([O.narrow(out, d, n - s, s), O.narrow(out, d, 0, n - s)], d)
    return out if out is not input else O.clone(input)


def _tri(input, diagonal, upper):
    if input.ndim < 2:
        raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 "
                           f"dimensions")
    r, c = input.shape[-2], input.shape[-1]
    rows = O.unsqueeze(F.arange(r, device=input.device), 1)
    cols = F.arange(c, device=input.device)
    diff = O.sub(cols, rows)          # column - row: 0 on the main diagonal
    keep = O.ge(diff, diagonal) if upper else O.le(diff, diagonal)
    zero = False if input.dtype is _dtype.bool else 0
    return O.where(keep, input, zero)


def tril(input: Tensor, diagonal: int = 0, *, out: Any = None) -> Tensor:
    """The lower triangle of the last two dims (elements with ``col - row <= diagonal``), the
    rest zero (``torch.tril``)."""
    if out is not None:
        return _write_out("tril", out, tril, (input, diagonal), {}, "exact")
    return _tri(input, diagonal, False)


def triu(input: Tensor, diagonal: int = 0, *, out: Any = None) -> Tensor:
    """The upper triangle of the last two dims (``col - row >= diagonal``), the rest zero
    (``torch.triu``)."""
    if out is not None:
        return _write_out("triu", out, triu, (input, diagonal), {}, "exact")
    return _tri(input, diagonal, True)


def diag(input: Tensor, diagonal: int = 0, *, out: Any = None) -> Tensor:
    """1-D input: the square matrix with ``input`` on diagonal ``diagonal``; 2-D input: that
    diagonal as a 1-D tensor (``torch.diag``)."""
    if out is not None:
        return _write_out("diag", out, diag, (input, diagonal), {}, "exact")
    if input.ndim == 1:
        n = input.shape[0]
        m = n + abs(diagonal)
        rows = O.unsqueeze(F.arange(m, device=input.device), 1)
        cols = F.arange(m, device=input.device)
        on = O.eq(O.sub(cols, rows), diagonal)
        # diagonal >= 0: row i holds input[i]; below the main diagonal column j holds input[j]
        line = O.cat([input, input.new_zeros(abs(diagonal))], 0) if diagonal else input
        vals = O.unsqueeze(line, 1 if diagonal >= 0 else 0)
        return O.where(on, vals, False if input.dtype is _dtype.bool else 0)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    r, c = input.shape
    if diagonal >= 0:
        n = max(min(r, c - diagonal), 0)
        start = diagonal
    else:
        n = max(min(r + diagonal, c), 0)
        start = -diagonal * c
    idx = O.add(O.mul(F.arange(n, device=input.device), c + 1), start)
    return O.index(O.reshape(input, [-1]), 0, idx)


def repeat(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """``input`` tiled ``sizes[i]`` times along each dim (leading new dims when ``sizes`` is
    longer), as ``Tensor.repeat``."""
    reps = _sizes(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = [1] * (len(reps) - input.ndim) + list(input.shape)
    x = O.reshape(input, shape)
    inter = []
    for r, s in zip(reps, shape):
        inter += [1, s]
    x = O.reshape(x, inter)
    big = []
    for r, s in zip(reps, shape):
        big += [r, s]
    x = O.expand(x, big)
    return O.reshape(x, [r * s for r, s in zip(reps, shape)])


def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None,
                      *, output_size: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times (an int, or one count per element of ``dim``)
    along ``dim`` (the flattened input when None), as ``torch.repeat_interleave``. With one
    argument, ``repeat_interleave(counts)`` (a 1-D integer tensor): ``i`` repeated
    ``counts[i]`` times, int64 (``repeat_interleave(arange(len(counts)), counts)``)."""
    if repeats is None:
        if input.ndim != 1 or input.dtype.is_floating_point or input.dtype is _dtype.bool:
            raise RuntimeError(f"repeat_interleave(repeats): repeats must be a 1-D integer "
                               f"tensor, got {input.ndim}-D {input.dtype}")
        return repeat_interleave(F.arange(input.shape[0], dtype=_dtype.int64,
                                          device=input.device), input, 0)
    if dim is None:
        input = O.reshape(input, [-1])
        dim = 0
    d = wrap_dim(dim, input.ndim, "repeat_interleave(): ")
    n = input.shape[d]
    if isinstance(repeats, _int) or (hasattr(repeats, "ndim") and repeats.ndim == 0):
        r = _int(repeats)
        x = O.unsqueeze(input, d + 1)
        shape = list(x.shape)
        shape[d + 1] = r
        x = O.expand(x, shape)
        out_shape = list(input.shape)
        out_shape[d] = n * r
        return O.reshape(x, out_shape)
    counts = repeats.tolist() if hasattr(repeats, "tolist") else list(repeats)
    if len(counts) != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {len(counts)} and input.size({d}) = {n}")
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    idx = [i for i, c in enumerate(counts) for _ in range(c)]
    return O.index(input, d, F.tensor(idx, dtype=_dtype.int64, device=input.device))


def index_select(input: Tensor, dim: int, index: Tensor, *, out: Any = None) -> Tensor:
    """The entries of ``dim`` at the 1-D integer ``index`` (a copy), as ``torch.index_select``."""
    if out is not None:
        return _write_out("index_select", out, index_select, (input, dim, index), {}, "exact")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if not input.ndim:
        # a 0-dim input is one element along dim 0: one index, a 0-dim result (torch)
        if index.numel() != 1 and index.dtype in (_dtype.int64, _dtype.int32):
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{index.numel()} value(s)")
        return O.reshape(O.index(input, dim, O.reshape(index, [-1]), api="index_select"), [])
    # (the index op applies index_select's rule: int64 or int32, no negative index; a 1-D
    # index as is: the reshape costs as much as half the op)
    out = O.index(input, dim, index if len(index.raw_shape) == 1 else O.reshape(index, [-1]),
                  api="index_select")
    if out.native is not None and not out.numel() and index.numel():
        # the index kernel checks no index for an empty result; index_select checks them all
        # (torch: index_select(zeros(3, 0), 0, tensor([5])) is refused)
        d = wrap_dim(dim, input.ndim, "index_select(): ")
        n = input.shape[d] if input.ndim else 1
        (lo, hi), = index_extremes([index])
        if lo < 0 or hi >= n:
            raise RuntimeError(f"index_select(): index {hi if hi >= n else lo} is out of bounds "
                               f"for dimension {d} with size {n}")
    return out


def masked_select(input: Tensor, mask: Tensor, *, out: Any = None) -> Tensor:
    """The elements of ``input`` where the bool ``mask`` is True, as a 1-D copy; ``input`` and
    ``mask`` broadcast (``torch.masked_select``)."""
    if out is not None:
        return _write_out("masked_select", out, masked_select, (input, mask), {}, "exact")
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = list(broadcast_shapes(tuple(input.shape), tuple(mask.shape), api="masked_select"))
    if list(input.shape) != shape:
        input = O.expand(input, shape)
    if list(mask.shape) != shape:
        mask = O.expand(mask, shape)
    return O.masked_select(input, mask)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """``input`` expanded to ``size`` (a view; -1 keeps a size), as ``torch.broadcast_to``."""
    return O.expand(input, list(size))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views), as
    ``torch.broadcast_tensors``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = list(broadcast_shapes(*[tuple(t.shape) for t in tensors], api="broadcast_tensors"))
    return tuple(t if list(t.shape) == shape else O.expand(t, shape) for t in tensors)


def meshgrid(*tensors: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D (or 0-d) tensors, as ``torch.meshgrid``; ``indexing="xy"``
    swaps the first two output dims (Cartesian), ``"ij"`` is matrix indexing."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    ts = [O.reshape(t, [-1]) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(O.expand(O.reshape(t, view), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with the given ``size``, ``stride`` and offset, as
    ``torch.as_strided`` (no bounds beyond the storage's are checked by the view)."""
    return O.as_strided(input, list(size), list(stride), storage_offset)


def dstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The tensors concatenated along their third dim (depthwise), after making each at least
    3-D as ``atleast_3d`` does (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` -> ``(m, n, 1)``, a 0-d
    tensor -> ``(1, 1, 1)``); dtypes promote as ``cat``'s. An empty sequence is a
    ``RuntimeError``. Same as ``torch.dstack``."""
    if out is not None:
        return _write_out("dstack", out, dstack, (tensors,), {}, "cast")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return O.cat([_atleast_3d(t) for t in tensors], 2)


def _atleast_3d(t):
    if t.ndim == 0:
        return O.reshape(t, [1, 1, 1])
    if t.ndim == 1:
        return O.reshape(t, [1, t.shape[0], 1])
    if t.ndim == 2:
        return O.unsqueeze(t, 2)
    return t


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The Cartesian product of 1-D tensors of one dtype: shape ``(N, k)`` for ``k`` tensors
    (``N`` the product of their lengths), rows in ``itertools.product``'s order; one tensor is
    returned as it is. A tensor that is not 1-D, mixed dtypes, or no tensor is a
    ``RuntimeError``. Same as ``torch.cartesian_prod``."""
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return O.stack([O.reshape(g, [-1]) for g in grids], 1)


# -- comparisons -----------------------------------------------------------------------------------
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and elements (a Python bool), as ``torch.equal``."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool(O.all(O.eq(input, other)).item())


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (equal infinities match; NaNs
    match only with ``equal_nan``), as ``torch.isclose``; a bool tensor."""
    if input.dtype is not getattr(other, "dtype", input.dtype):
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    same = O.eq(input, other)
    if not input.dtype.is_floating_point:
        if input.dtype is _dtype.bool:
            return same
        diff = O.abs(O.sub(O.to_dtype(input, _dtype.float64), O.to_dtype(other, _dtype.float64)))
        tol = O.add(O.mul(O.abs(O.to_dtype(other, _dtype.float64)), rtol), atol)
        return O.logical_or(same, O.le(diff, tol))
    diff = O.abs(O.sub(input, other))
    tol = O.add(O.mul(O.abs(other), rtol), atol)
    close = O.logical_and(O.le(diff, tol), O.isfinite(diff))
    out = O.logical_or(same, close)
    if equal_nan:
        out = O.logical_or(out, O.logical_and(O.isnan(input), O.isnan(other)))
    return out


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """``isclose(...).all()`` as a Python bool (``torch.allclose``)."""
    return builtins.bool(O.all(isclose(input, other, rtol, atol, equal_nan)).item())


# -- linear algebra --------------------------------------------------------------------------------
def _need(name, t, nd, what):
    if t.ndim != nd:
        raise RuntimeError(f"{name}: {what} must be a {nd}D tensor, got {t.ndim}D")


def mm(input: Tensor, mat2: Tensor, *, out: Any = None) -> Tensor:
    """Matrix product of two 2-D tensors (``torch.mm``)."""
    if out is not None:
        return _write_out("mm", out, mm, (input, mat2), {}, "exact")
    _need("mm", input, 2, "self")
    _need("mm", mat2, 2, "mat2")
    return O.matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor, *, out: Any = None) -> Tensor:
    """Batched matrix product of ``(b, n, m)`` and ``(b, m, p)`` (``torch.bmm``; no
    broadcasting)."""
    if out is not None:
        return _write_out("bmm", out, bmm, (input, mat2), {}, "exact")
    _need("bmm", input, 3, "batch1")
    _need("bmm", mat2, 3, "batch2")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch1 and batch2 must have same number of batches, got "
                           f"{input.shape[0]} and {mat2.shape[0]}")
    return O.matmul(input, mat2)


def dot(input: Tensor, tensor: Tensor, *, out: Any = None) -> Tensor:
    """Inner product of two 1-D tensors of one size and dtype (``torch.dot``; the second is
    named ``tensor`` as there). ``RuntimeError`` for other ranks, sizes or mixed dtypes."""
    if out is not None:
        return _write_out("dot", out, dot, (input, tensor), {}, "exact")
    other = tensor
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           f"tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{other.shape[0]}] to have the same number of elements, but "
                           f"got {input.shape[0]} and {other.shape[0]} elements respectively")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{input.dtype} and {other.dtype}")
    return O.matmul(input, other)


def outer(input: Tensor, vec2: Tensor, *, out: Any = None) -> Tensor:
    """``input[i] * vec2[j]`` of two 1-D tensors (``torch.outer``)."""
    if out is not None:
        return _write_out("outer", out, outer, (input, vec2), {}, "cast")
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError("outer: expected 1D tensors")
    return O.mul(O.unsqueeze(input, 1), O.unsqueeze(vec2, 0))


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: _Number = 1,
          alpha: _Number = 1, out: Any = None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` with 2-D ``mat1``/``mat2``; ``input``
    broadcasts (``torch.addmm``; ``beta=0`` ignores ``input``, NaNs included). With integer
    operands ``beta`` and ``alpha`` are truncated to integers, as torch (the result stays
    integral)."""
    if out is not None:
        return _write_out("addmm", out, addmm, (input, mat1, mat2), {"beta": beta,
                          "alpha": alpha}, "exact")
    return _low_at_f32(_scaled_sum, input, mm, mat1, mat2, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: _Number = 1,
            alpha: _Number = 1, out: Any = None) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)`` (``torch.baddbmm``)."""
    if out is not None:
        return _write_out("baddbmm", out, baddbmm, (input, batch1, batch2), {"beta": beta,
                          "alpha": alpha}, "exact")
    return _low_at_f32(_scaled_sum, input, bmm, batch1, batch2, beta, alpha)


def _low_at_f32(f, input, product, m1, m2, beta, alpha):
    """``f(input, product(m1, m2), beta, alpha)``; with float16/bfloat16 operands of one dtype
    computed in float32 and rounded once, as torch's addmm/baddbmm (rounding the product, the
    scaled terms and the sum one by one was up to 2 ulps off)."""
    dt = m1.dtype
    if dt in (_dtype.float16, _dtype.bfloat16) and m2.dtype is dt and input.dtype is dt:
        f32 = _dtype.float32
        r = f(O.to_dtype(input, f32), product(O.to_dtype(m1, f32), O.to_dtype(m2, f32)), beta,
              alpha)
        return O.to_dtype(r, dt)
    return f(input, product(m1, m2), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):
    if not prod.dtype.is_floating_point and prod.dtype is not _dtype.bool:
        # integer operands: torch converts beta and alpha to the integer type (truncating:
        # beta=0.5 is 0), the result stays integral (a float beta made it float32)
        beta, alpha = _int(beta), _int(alpha)
    if alpha != 1:
        prod = O.mul(prod, alpha)
    if beta == 0:
        if tuple(input.shape) != tuple(prod.shape):
            broadcast_shapes(tuple(input.shape), tuple(prod.shape), api="addmm")
        return prod
    return O.add(O.mul(input, beta) if beta != 1 else input, prod)


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[Sequence[int]] = 2, *,
              out: Any = None) -> Tensor:
    """Sum of products over ``dims`` (an int: the last ``dims`` of ``a`` with the first of ``b``;
    or two lists of dims), as ``torch.tensordot``."""
    if out is not None:
        return _write_out("tensordot", out, tensordot, (a, b, dims), {}, "exact")
    if isinstance(dims, _int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(range(a.ndim - dims, a.ndim))
        db = list(range(dims))
    else:
        da, db = ([d] if isinstance(d, _int) else list(d) for d in dims)
    da = [wrap_dim(d, a.ndim, "tensordot: ") for d in da]
    db = [wrap_dim(d, b.ndim, "tensordot: ") for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    ra = [d for d in range(a.ndim) if d not in da]
    rb = [d for d in range(b.ndim) if d not in db]
    k = _prod(a.shape[d] for d in da)
    am = O.reshape(O.permute(a, ra + da), [_prod(a.shape[d] for d in ra), k])
    bm = O.reshape(O.permute(b, db + rb), [k, _prod(b.shape[d] for d in rb)])
    return O.reshape(O.matmul(am, bm), [a.shape[d] for d in ra] + [b.shape[d] for d in rb])


def einsum(equation: str | Tensor, *operands: Any) -> Tensor:
    """Einstein summation (``torch.einsum``): ``"ij,jk->ik"``, implicit output (the letters
    seen once, sorted), ``...`` for broadcast dims, repeated letters in one operand take the
    diagonal. Operands are aligned to one letter order and multiplied pairwise, summing each
    letter as soon as no later operand or the output needs it. The result has the operands'
    promoted dtype (an integer one is kept by contractions: int32 operands give int32, as
    torch; a sum of one operand alone widens to int64, as sum); float16/bfloat16 are computed
    in float32 and rounded once.

    The sublist form ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])`` is torch's too: each operand
    followed by its subscripts (ints in ``[0, 52)``, ``0..25`` standing for ``a..z`` and
    ``26..51`` for ``A..Z``, or ``...``), then optionally the output's; an int out of range is
    a ``ValueError``, as torch."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    # "..." becomes upper-case letters naming the broadcast dims (right-aligned)
    nell = 0
    for t, x in zip(terms, operands):
        if "..." in t:
            nell = max(nell, x.ndim - (len(t) - 3))
    # (letters no equation has: torch's subscripts are a-z and A-Z, which the user's are)
    ell = "".join(chr(0x100 + i) for i in range(nell))

    def expand_ell(t, nd):
        if "..." not in t:
            return t
        k = nd - (len(t) - 3)
        return t.replace("...", ell[nell - k:])

    terms = [expand_ell(t, x.ndim) for t, x in zip(terms, operands)]
    for t, x in zip(terms, operands):
        if len(t) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({x.ndim}) for "
                               f"operand {terms.index(t)}")
    if arrow:
        out = expand_ell(rhs, len(rhs) - 3 + nell) if "..." in rhs else rhs
    else:
        counts = {}
        for t in terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    # repeated letters within one operand: take the diagonal
    ops_, labels = [], []
    for t, x in zip(terms, operands):
        while len(set(t)) != len(t):
            ch = next(c for c in t if t.count(c) > 1)
            i = t.index(ch)
            j = t.index(ch, i + 1)
            x = _diagonal(x, i, j)
            t = t[:i] + t[i + 1:j] + t[j + 1:] + ch
        ops_.append(x)
        labels.append(t)
    sizes = {}
    for t, x in zip(labels, ops_):
        for ch, n in zip(t, x.shape):
            if sizes.get(ch, 1) != 1 and n != 1 and sizes[ch] != n:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped) for subscript {ch!r}: {sizes[ch]} "
                                   f"and {n}")
            sizes[ch] = max(sizes.get(ch, 1), n) if n != 1 else sizes.get(ch, 1)
    # float16/bfloat16 operands are multiplied and summed in float32 and rounded once, as
    # torch's bmm accumulates (products rounded to float16 first lost ~1 ulp per term)
    low = {x.dtype for x in ops_}
    low = low.pop() if len(low) == 1 and next(iter(low)) in (_dtype.float16, _dtype.bfloat16) \
        else None
    if low is not None:
        ops_ = [O.to_dtype(x, _dtype.float32) for x in ops_]
    # a sum within one operand widens integers as sum does (torch: einsum("ij->", int32) is
    # int64); a sum over products keeps the dtype (torch's bmm: int32 @ int32 is int32)
    acc, acc_l = ops_[0], labels[0]
    acc, acc_l = _sum_unneeded(acc, acc_l, labels[1:], out, False)
    for i in range(1, len(ops_)):
        x, t = ops_[i], labels[i]
        order = acc_l + "".join(c for c in t if c not in acc_l)
        acc, acc_l = O.mul(_align(acc, acc_l, order), _align(x, t, order)), order
        acc, acc_l = _sum_unneeded(acc, acc_l, labels[i + 1:], out, True)
    r = _align_out(acc, acc_l, out, sizes, len(ops_) > 1)
    return r if low is None else O.to_dtype(r, low)


def _sublist_equation(args):
    """``(op1, sub1, op2, sub2, ..., [out])`` -> the equation string and the operands."""
    def letters(sub):
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
            elif isinstance(v, _int) and 0 <= v < 52:
                out.append(chr(ord("a") + v) if v < 26 else chr(ord("A") + v - 26))
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid "
                                 "range [0, 52)")
        return "".join(out)
    n = len(args) // 2
    operands = tuple(args[0:2 * n:2])
    terms = [letters(sub) for sub in args[1:2 * n:2]]
    eq = ",".join(terms)
    if len(args) % 2:
        eq += "->" + letters(args[-1])
    return eq, operands


def _diagonal(x, i, j):
    """The diagonal of dims ``i`` and ``j`` of ``x``, moved to the last dim."""
    n = x.shape[i]
    dims = [d for d in range(x.ndim) if d not in (i, j)] + [i, j]
    y = O.permute(x, dims)
    lead = list(y.shape[:-2])
    y = O.reshape(y, lead + [n * n])
    return O.index(y, len(lead), O.mul(F.arange(n, device=x.device), n + 1))


def _sum_unneeded(x, labels, later, out, keep_ints):
    keep = set(out)
    for t in later:
        keep |= set(t)
    drop = [i for i, c in enumerate(labels) if c not in keep]
    if not drop:
        return x, labels
    return _sum_keep_ints(x, drop, keep_ints), "".join(c for c in labels if c in keep)


def _sum_keep_ints(x, dims, keep_ints):
    """einsum's sums: over products an integer dtype is kept (torch: int32 in, int32 out),
    within one operand (``keep_ints`` False) a plain ``sum`` widens to int64."""
    if not keep_ints or x.dtype.is_floating_point or x.dtype is _dtype.bool:
        return O.sum(x, dims, False)
    return O.sum(x, dims, False, dtype=x.dtype)


def _align(x, labels, order):
    """``x`` (dims named by ``labels``) permuted to ``order`` with size-1 dims where it lacks a
    letter, so operands broadcast against each other."""
    perm = [labels.index(c) for c in order if c in labels]
    if perm != list(range(len(perm))):
        x = O.permute(x, perm)
    shape = [x.shape[perm.index(labels.index(c))] if c in labels else 1 for c in order]
    return O.reshape(x, shape) if shape != list(x.shape) else x


def _align_out(x, labels, out, sizes, keep_ints):
    extra = [i for i, c in enumerate(labels) if c not in out]
    if extra:
        x = _sum_keep_ints(x, extra, keep_ints)
        labels = "".join(c for c in labels if c in out)
    for c in out:
        if c not in labels:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               f"for any input operand")
    perm = [labels.index(c) for c in out]
    if perm != list(range(len(perm))):
        x = O.permute(x, perm)
    shape = [sizes.get(c, 1) for c in out]
    if list(x.shape) != shape:
        x = O.expand(x, shape)
    return x


# -- reductions ------------------------------------------------------------------------------------
def logsumexp(input: Tensor, dim: _Dims, keepdim: bool = False, *, out: Any = None) -> Tensor:
    """``log(sum(exp(input), dim))`` computed stably (the maximum subtracted first), as
    ``torch.logsumexp``; integer inputs give the default float dtype."""
    if out is not None:
        return _write_out("logsumexp", out, logsumexp, (input, dim, keepdim), {}, "cast")
    if dim is None:         # (torch's logsumexp has no all-dims overload; an empty list is one)
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType (as "
                        "torch; pass dim=[] or a tuple of every dim to reduce them all)")
    dims = checked_dims(dim, "logsumexp")
    if not input.dtype.is_floating_point:
        input = O.to_dtype(input, _dtype.get_default_dtype())
    if input.numel() == 0:
        return O.log(O.sum(O.exp(input), dims, keepdim))
    m = O.amax(input.detach(), dims, True)
    m = O.where(O.isinf(m), 0.0, m)     # all -inf (or an inf): no shift, as torch
    out = O.add(O.log(O.sum(O.exp(O.sub(input, m)), dims, True)), m)
    # an empty dim list reduces every dim, as sum (the squeeze named none of them: shape (1, 1))
    return out if keepdim else O.squeeze(out, [wrap_dim(d, input.ndim) for d in dims]
                                         if dims else list(range(input.ndim)))


# -- elementwise -------------------------------------------------------------------------------
def logical_xor(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    """Elementwise ``bool(input) != bool(other)`` with broadcasting, any dtypes; a bool tensor
    (same as ``torch.logical_xor``)."""
    if out is not None:
        return _write_out("logical_xor", out, logical_xor, (input, other), {}, "cast")
    return O.ne(O.logical_not(input), O.logical_not(other))


def _bound(api: str, name: str, value):
    if value is None:
        raise TypeError(f"{api}(): argument '{name}' must be a number or Tensor, not None "
                        f"(as torch.{api}; use clamp() for an optional bound)")
    return value


def clamp_min(input: Tensor, min: _Number | Tensor, *,
              out: Any = None) -> Tensor:  # noqa: A002 - torch's name
    """``clamp(input, min=min)``: elementwise maximum with a number or tensor bound, the result
    promoted with the bound (an int8 tensor with ``4.5`` gives float32; a number out of an
    integer dtype's range raises ``RuntimeError``); ``None`` raises ``TypeError``. Same as
    ``torch.clamp_min``."""
    if out is not None:
        return _write_out("clamp_min", out, clamp_min, (input, min), {}, "found")
    return input.clamp(_bound("clamp_min", "min", min), None)


def clamp_max(input: Tensor, max: _Number | Tensor, *,
              out: Any = None) -> Tensor:  # noqa: A002 - torch's name
    """``clamp(input, max=max)``, as ``clamp_min`` (same as ``torch.clamp_max``)."""
    if out is not None:
        return _write_out("clamp_max", out, clamp_max, (input, max), {}, "found")
    return input.clamp(None, _bound("clamp_max", "max", max))


def clip(input: Tensor, min: _Number | Tensor | None = None,  # noqa: A002 - torch's names
         max: _Number | Tensor | None = None, *, out: Any = None) -> Tensor:
    """Alias of ``clamp`` (same as ``torch.clip``): either bound may be None, not both
    (``RuntimeError``)."""
    if out is not None:
        return _write_out("clip", out, clip, (input, min, max), {}, "found")
    return input.clamp(min, max)


def dim_and_rest(api: str, args: tuple, dim) -> tuple[Any, tuple]:
    """``(dim, the other positional arguments)`` of ``var``/``std``/``var_mean``/``std_mean``
    called as ``f(*args, dim=dim)``: torch's overloads tell a ``dim`` given by name from the
    first positional argument, which a bool makes ``unbiased`` (``x.var(True)``), while
    ``x.var(dim=True)`` is a ``TypeError`` (no overload takes a bool ``dim``). ``_NO_DIM``:
    not given."""
    if dim is _NO_DIM:
        return (args[0], args[1:]) if args else (_NO_DIM, ())
    if args:
        raise TypeError(f"{api}() got multiple values for argument 'dim'")
    if dim.__class__ is bool:
        raise TypeError(f"{api}() received an invalid combination of arguments - got "
                        f"(dim=bool): 'dim' takes an int or a tuple of ints, as torch's "
                        f"(a bool is 'unbiased' only as the first positional argument)")
    return dim, ()


def variance_and_mean(api: str, input: Tensor, dim, args: tuple, correction, keepdim,
                      unbiased) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` of ``input`` over ``dim`` with torch's argument overloads, shared by
    ``var``/``std``/``var_mean``/``std_mean`` (``api`` names the caller in errors): ``(dim,
    unbiased, keepdim)`` positionally (the third positional is ``unbiased``, not ``keepdim``),
    ``(unbiased)`` with a bool first argument, or ``(dim, correction=c, keepdim=k)``. The
    divisor is ``max(0, N - correction)``: inf/nan when that is 0, as torch (which also warns).
    ``mean`` has ``var``'s shape (``keepdim`` applied)."""
    no_dim = dim is _NO_DIM              # (dim not passed, not even None)
    if no_dim:
        dim = None
    keep_given = keepdim is not _NO_KEEPDIM
    if not keep_given:
        keepdim = False
    if dim.__class__ is bool:                    # var(unbiased): the all-elements overload
        if args:
            raise TypeError(f"{api}(): a bool first argument is 'unbiased', and {api}(unbiased) "
                            f"takes nothing more; pass dim too: {api}(dim, unbiased, keepdim)")
        dim, unbiased, no_dim = None, dim, True
    if no_dim and unbiased is not None and keep_given:
        # torch's overloads: {api}(unbiased) has no keepdim; keepdim with unbiased needs dim
        raise TypeError(f"{api}() received an invalid combination of arguments - got unbiased= "
                        f"and keepdim= without dim: {api}(unbiased) takes no keepdim (as torch); "
                        f"pass dim=None to reduce every dim, or correction= instead of unbiased=")
    if args:
        if len(args) > 2 or args[0].__class__ is not bool:
            raise TypeError(f"{api}(): after dim, positional arguments are (unbiased: bool, "
                            f"keepdim: bool) as torch.{api}'s; got {args!r}")
        if unbiased is not None or correction is not None:
            raise TypeError(f"{api}(): 'unbiased' given twice (positionally and by name, or "
                            "with correction)")
        unbiased = args[0]
        if len(args) == 2:
            keepdim = args[1]
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{api}(): give 'unbiased' or 'correction', not both")
        correction = 1 if unbiased else 0
    elif correction is None:
        correction = 1
    if not input.dtype.is_floating_point:
        what = "std and var" if api in ("var", "std") else api
        raise RuntimeError(f"{what} only support floating point and complex dtypes "
                           f"(got {input.dtype}); cast first, e.g. x.float()")
    dims = dim_list(dim, api)
    if dims == []:
        dims = None         # an empty dim list reduces every dim (torch's rule, as sum's)
    low = input.dtype if input.dtype in (_dtype.float16, _dtype.bfloat16) else None
    if low is not None:
        # float16/bfloat16: computed in float32, rounded once (torch's opmath): the float16 sum
        # of squares overflowed to inf (std of 64x300 standard normals was inf)
        var, mu = variance_and_mean(api, O.to_dtype(input, _dtype.float32), dims, (),
                                    correction, keepdim, None)
        return O.to_dtype(var, low), O.to_dtype(mu, low)
    try:
        mu = input.mean(dims, keepdim=True)
    except TypeError:
        # a dim that is not an int: named as the caller (var, std, ...), not the mean inside
        for i, x in enumerate(dims or ()):
            if getattr(type(x), "__index__", None) is None:
                raise TypeError(f"{api}(): argument 'dim' must be tuple of ints, but found "
                                f"element of type {type(x).__name__} at pos {i}") from None
        raise
    d = input - mu
    shape = input.shape
    if dims is None:
        n = input.numel()
    elif not shape:       # a 0-d tensor takes dim 0 or -1 (torch's rule): 1 element
        for x in dims:
            wrap_dim(x, 0)         # IndexError for any other dim
        n = 1
    else:
        n = _prod(shape[wrap_dim(x, len(shape))] for x in dims)
    # torch divides by max(0, N - correction): inf or nan when that is 0, not a clamp to 1
    var = (d * d).sum(dims, keepdim) / (float(max(n - correction, 0)))
    if not keepdim and mu.shape != var.shape:
        mu = mu.reshape(var.shape)
    return var, mu


def var_mean(input: Tensor, *args: Any, dim: _Dims = _NO_DIM,
             correction: _Number | None = None, keepdim: bool = _NO_KEEPDIM,
             unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
    """The tuple ``(var, mean)`` of ``input`` over ``dim`` (all elements when None), as
    ``torch.var_mean``: ``var`` exactly ``tensorplay.var(input, ...)`` with the same arguments
    and overloads (``var_mean(x, dim, unbiased, keepdim)``, ``var_mean(x, unbiased)``,
    ``var_mean(x, dim, correction=c, keepdim=k)``; Bessel's ``correction=1`` by default, the
    divisor ``max(0, N - correction)``), ``mean`` of the same shape, both of ``input``'s
    floating dtype and device. Integer and bool input raises ``RuntimeError``; a dim out of range
    ``IndexError``; ``unbiased`` with ``correction`` ``TypeError``. Differentiable in ``input``."""
    dim, args = dim_and_rest("var_mean", args, dim)
    return variance_and_mean("var_mean", input, dim, args, correction, keepdim, unbiased)


def std_mean(input: Tensor, *args: Any, dim: _Dims = _NO_DIM,
             correction: _Number | None = None, keepdim: bool = _NO_KEEPDIM,
             unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
    """The tuple ``(std, mean)``: ``var_mean``'s arguments, the square root of its variance
    (same as ``torch.std_mean``; the std's gradient is 0 where it is 0, as torch's)."""
    dim, args = dim_and_rest("std_mean", args, dim)
    v, m = variance_and_mean("std_mean", input, dim, args, correction, keepdim, unbiased)
    return norm_root(v, 2), m


def std(input: Tensor, *args: Any, dim: _Dims = _NO_DIM, correction: _Number | None = None,
        keepdim: bool = _NO_KEEPDIM, unbiased: bool | None = None, out: Any = None) -> Tensor:
    """Standard deviation over ``dim``, ``Tensor.std``'s arguments (``torch.std``'s overloads:
    ``std(x, dim, unbiased, keepdim)``, ``std(x, unbiased)``, ``std(x, dim, correction=,
    keepdim=)``)."""
    if out is not None:
        return _write_out("std", out, std, (input, *args), {"dim": dim,
                          "correction": correction, "keepdim": keepdim, "unbiased": unbiased},
                          "cast")
    return input.std(*args, dim=dim, correction=correction, keepdim=keepdim, unbiased=unbiased)


def var(input: Tensor, *args: Any, dim: _Dims = _NO_DIM, correction: _Number | None = None,
        keepdim: bool = _NO_KEEPDIM, unbiased: bool | None = None, out: Any = None) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction``, ``Tensor.var``'s arguments
    (``torch.var``'s overloads)."""
    if out is not None:
        return _write_out("var", out, var, (input, *args), {"dim": dim,
                          "correction": correction, "keepdim": keepdim, "unbiased": unbiased},
                          "cast")
    return input.var(*args, dim=dim, correction=correction, keepdim=keepdim, unbiased=unbiased)


def norm(input: Tensor, p: _Number | str | None = "fro", dim: _Dims = None, keepdim: bool = False,
         dtype: _DTypeLike | None = None, *, out: Any = None) -> Tensor:
    """The ``p``-norm over ``dim`` (all elements when None; ``"fro"`` is the 2-norm, ``inf``
    the largest absolute value, ``-inf`` the smallest, ``0`` the count of non-zeros; ``"nuc"``
    the nuclear norm of the matrices in the two dims ``dim``, of a 2-D input when None), as
    ``torch.norm``: a floating ``input`` only (an integer or bool one is a ``RuntimeError``, as
    torch's ``linalg.vector_norm``; ``dtype=`` converts a floating input first, a narrowing one
    is a ``RuntimeError``, as torch's). The result has
    ``input``'s dtype (``dtype``'s when given). Gradients as torch's (``linalg.vector_norm``'s:
    0 at a zero norm, e.g. ``dist(x, y)`` at ``x == y``). ``Tensor.norm`` is this function."""
    if out is not None:
        return _write_out("norm", out, norm, (input, p, dim, keepdim, dtype), {}, "cast")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {input.dtype} (convert it first, e.g. x.float().norm())")
    from . import linalg as _linalg
    if dtype is not None:   # (a narrowing dtype: RuntimeError in the words of torch's norm)
        input = _linalg._norm_dtype("linalg.matrix_norm" if isinstance(p, str) and p != "fro"
                                    else "linalg.vector_norm", input, dtype)
    if input.dtype in (_dtype.float16, _dtype.bfloat16):
        # computed in float32, rounded once, as torch (a float16 sum of squares overflowed)
        return O.to_dtype(norm(O.to_dtype(input, _dtype.float32), p, dim, keepdim), input.dtype)
    if isinstance(p, str) and p != "fro":
        # "nuc" (or an unknown name): torch.norm goes to linalg.matrix_norm with dim as given,
        # None meaning every dim (its messages for a non-matrix input or another name)
        if dim is None and input.ndim > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                               f"{' '.join(str(d) for d in range(input.ndim))}")
        return _linalg.matrix_norm(input, p, (-2, -1) if dim is None else
                                   (tuple(dim) if not isinstance(dim, _int) else dim), keepdim)
    if p == "fro" or p is None:
        p = 2
    dims = [] if dim is None else dim_list(dim, "norm")
    # linalg.vector_norm: its gradients are masked as torch's norm backward (0 at a zero norm)
    return _linalg.vector_norm(input, p, dims or None, keepdim)


def dist(input: Tensor, other: Tensor, p: _Number = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast, dtypes promoted), a 0-d tensor of the
    promoted floating dtype: ``norm(input - other, p)`` over all elements (``p`` = inf: the
    largest absolute difference, 0: the count of non-zero ones). Integer inputs are a
    ``RuntimeError``, as torch's. Same as ``torch.dist``."""
    if not is_tensor(other):
        raise TypeError(f"dist(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    d = O.sub(input, other)
    if not d.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {d.dtype} instead.")
    return norm(d, p)


# -- unique ----------------------------------------------------------------------------------------
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Any:  # noqa: A002
    """The distinct elements in ascending order (of the flattened input), as ``torch.unique``;
    with ``return_inverse`` the index of each element in the result (input's shape), with
    ``return_counts`` how often each occurs. The size depends on the values.

    With ``dim``: the distinct slices along ``dim`` (``unique(x, dim=0)``: the distinct rows),
    in lexicographic order, as torch; ``return_inverse`` gives for each slice of ``input`` its
    index in the result (shape ``(input.shape[dim],)``), ``return_counts`` how often each
    result slice occurs. NaN differs from every value, itself included (each slice holding one
    is its own); ``-0.0`` equals ``0.0``. A dim out of range, or any dim of a 0-d input, is an
    ``IndexError``; another dim of size 0 while ``dim``'s is not a ``RuntimeError`` (torch's
    errors). ``sorted``
    is ignored with ``dim``: the slices are always sorted, as torch's."""
    if dim is not None:
        return _unique_dim(input, dim, return_inverse, return_counts)
    flat = O.reshape(input, [-1])
    vals, perm = O.sort(flat, 0, False, stable=True)
    real = vals.native is not None
    if real:
        # eager: first[i] says vals[i] starts a new value (the first element always)
        n = flat.shape[0]
        first = O.ne(vals, vals) if n == 0 else O.cat(
            [F.ones(1, dtype=_dtype.bool, device=input.device),
             O.ne(O.narrow(vals, 0, 1, n - 1), O.narrow(vals, 0, 0, n - 1))], 0)
    else:
        # fake tensors (tensorplay.compile): the same without reading the number of elements,
        # so that unique of a data-dependent-sized input (x[x > 0].unique()) is captured too:
        # slices, and the first element's True from an int64 equal to itself (none when empty)
        n = None
        head = O.slice(perm, 0, 0, 1, 1)
        first = O.cat([O.eq(head, head), O.ne(O.slice(vals, 0, 1, None, 1),
                                              O.slice(vals, 0, 0, -1, 1))], 0)
    out = O.masked_select(vals, first)
    res = [out]
    if return_inverse or return_counts:
        group = O.sub(O.cumsum(first, 0, dtype=_dtype.int64), 1)
    if return_inverse:
        zeros = F.zeros(n, dtype=_dtype.int64, device=input.device) if real else O.mul(perm, 0)
        inv = O.scatter_add(zeros, 0, perm, group)
        res.append(O.reshape(inv, list(input.shape)))
    if return_counts:
        res.append(_run_lengths(group, first, n))
    return res[0] if len(res) == 1 else tuple(res)


def _run_lengths(group, first, n):
    """The length of each run of equal sorted (or consecutive) elements, int64 ``(k,)``:
    ``first`` (bool ``(n,)``) marks the first element of each run, ``group`` (int64 ``(n,)``)
    numbers each element's run. On real tensors (``n`` given), the distance between one
    run's start and the next's; on fake tensors (``n`` None), without reading ``k`` (the
    number of runs, data-dependent) or ``n``, so ``tensorplay.compile`` captures it: each
    element gets its run's length, the first of each run keeps it."""
    if n is not None:
        starts = O.reshape(O.nonzero(first), [-1])
        k = starts.shape[0]
        if not k:
            return starts
        ends = O.cat([O.narrow(starts, 0, 1, k - 1),
                      F.tensor([n], dtype=_dtype.int64, device=starts.device)], 0)
        return O.sub(ends, starts)
    zeros = O.mul(group, 0)
    per_run = O.scatter_add(zeros, 0, group, O.add(zeros, 1))
    return O.masked_select(O.index(per_run, 0, group), first)


def _unique_dim(input, dim, return_inverse, return_counts):
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim, "unique(): ")
    n = input.shape[d]
    rest = [i for i in range(input.ndim) if i != d]
    m = _prod(input.shape[i] for i in rest)
    dev = input.device
    if n and not m:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    rows = O.reshape(O.permute(input, [d] + rest), [n, m])
    # lexicographic order of the rows: stable sorts by each column, the last column first
    order = F.arange(n, dtype=_dtype.int64, device=dev)
    for j in range(m - 1, -1, -1):
        order = O.index(order, 0, O.argsort(O.index(O.select(rows, 1, j), 0, order), 0, False,
                                            stable=True))
    srt = O.index(rows, 0, order)
    head = F.ones(min(n, 1), dtype=_dtype.bool, device=dev)
    first = O.cat([head, O.any(O.ne(O.narrow(srt, 0, 1, n - 1), O.narrow(srt, 0, 0, n - 1)),
                               [1], False)], 0) if n > 1 else head
    starts = O.reshape(O.nonzero(first), [-1])
    # (-1: the number of distinct slices is data-dependent; m is 0 only when n is)
    out = O.reshape(O.index(srt, 0, starts), [-1 if m else 0] + [input.shape[i] for i in rest])
    back = [0] * input.ndim                    # the inverse of the permutation [d] + rest
    for pos, i in enumerate([d] + rest):
        back[i] = pos
    res = [O.permute(out, back)]
    if return_inverse or return_counts:
        group = O.sub(O.cumsum(first, 0, dtype=_dtype.int64), 1)
    if return_inverse:
        res.append(O.scatter_add(F.zeros(n, dtype=_dtype.int64, device=dev), 0, order, group))
    if return_counts:
        res.append(_run_lengths(group, first, n if srt.native is not None else None))
    return res[0] if len(res) == 1 else tuple(res)


# -- random ----------------------------------------------------------------------------------------
def randperm(n: int, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None,
             requires_grad: bool = False, out: Any = None) -> Tensor:
    """A random permutation of ``0..n-1`` (int64 by default), as ``torch.randperm``."""
    if out is not None:
        return _factory_out("randperm", out, dtype, randperm, (n,),
                            {"requires_grad": requires_grad})
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    perm = O.argsort(F.rand(n, device=device), 0, False, stable=True)
    if dtype is not None and dtype is not _dtype.int64:
        perm = O.to_dtype(perm, dtype)
    if requires_grad:
        perm.requires_grad_(True)
    return perm


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    """``num_samples`` category indices drawn from the (unnormalised, non-negative) weights in
    the last dim of ``input`` (1-D or 2-D), as ``torch.multinomial``; without ``replacement``
    each row's indices are distinct (Gumbel top-k)."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype}")
    k = input.shape[-1]
    if not replacement and num_samples > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    p = input.detach()
    if input.numel() and p.native is not None:
        if builtins.bool(O.any(O.lt(p, 0)).item()) or \
                not builtins.bool(O.all(O.isfinite(p)).item()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if builtins.bool(O.any(O.le(O.sum(p, [-1], False), 0)).item()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = [input.shape[0]] if input.ndim == 2 else []
    if replacement:
        cdf = O.cumsum(p, -1)
        total = O.narrow(cdf, -1, k - 1, 1)
        u = O.mul(F.rand(*(rows + [num_samples, 1]), dtype=p.dtype, device=p.device),
                  O.unsqueeze(total, -2) if rows else total)
        c = O.unsqueeze(cdf, -2)
        idx = O.sum(O.to_dtype(O.ge(u, c), _dtype.int64), [-1], False)
        return O.minimum(idx, F.full([], k - 1, dtype=_dtype.int64, device=p.device))
    u = F.rand(*(rows + [k]), dtype=p.dtype, device=p.device)
    gumbel = O.neg(O.log(O.neg(O.log(O.add(O.mul(u, 1 - 1e-7), 1e-10)))))
    keys = O.where(O.gt(p, 0), O.add(O.log(p), gumbel), -math.inf)
    return O.topk(keys, num_samples, -1, True, True)[1]


def uniform_(t: Tensor, from_: float = 0.0, to: float = 1.0) -> Tensor:
    """Fill ``t`` in place with values uniform on ``[from_, to)`` (``Tensor.uniform_``)."""
    r = F.rand(*t.shape, dtype=t.dtype, device=t.device)
    return O.copy_(t, O.add(O.mul(r, to - from_), from_))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``t`` in place with normal values of ``mean`` and ``std`` (``Tensor.normal_``)."""
    r = F.randn(*t.shape, dtype=t.dtype, device=t.device)
    return O.copy_(t, O.add(O.mul(r, std), mean))


def random_(t: Tensor, from_: int = 0, to: int | None = None) -> Tensor:
    """Fill ``t`` in place with integers uniform on ``[from_, to)`` (``random_(to)``:
    ``[0, to)``; no bounds: ``[0, 2**mantissa]`` for floats, the dtype's range for ints), as
    ``Tensor.random_``."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        dt = t.dtype
        to = (2 ** {16: 11, 32: 24, 64: 53}.get(dt.itemsize * 8, 8) + 1
              if dt.is_floating_point else 2 if dt is _dtype.bool else iinfo(dt).max + 1)
    r = F.randint(from_, to, tuple(t.shape), dtype=_dtype.int64, device=t.device)
    return O.copy_(t, r)


# -- dtype information ----------------------------------------------------------------------------
class finfo:
    """Machine limits of a floating dtype (``torch.finfo``): ``bits``, ``eps``, ``max``,
    ``min``, ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``. Default: the default
    dtype."""

    _TABLE = {
        "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
        "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 1.1754943508222875e-38, 0.01),
        "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 1.1754943508222875e-38, 1e-06),
        "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-15),
    }

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __init__(self, type: _DTypeLike | None = None) -> None:  # noqa: A002 - torch's name
        d = _dtype.get_default_dtype() if type is None else _dtype.as_dtype(type)
        if d.name not in self._TABLE:
            raise TypeError(f"finfo: {d} is not a floating point dtype; use iinfo for integer "
                            f"dtypes")
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._TABLE[d.name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:.6g}, max={self.max:.6g}, "
                f"eps={self.eps:.6g}, smallest_normal={self.tiny:.6g}, tiny={self.tiny:.6g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (``torch.iinfo``): ``bits``, ``min``, ``max``, ``dtype``."""

    bits: int
    min: int
    max: int
    dtype: str

    def __init__(self, type: _DTypeLike) -> None:  # noqa: A002 - torch's name
        d = _dtype.as_dtype(type)
        if d.is_floating_point:
            raise TypeError(f"iinfo: {d} is not an integer dtype; use finfo for floating dtypes")
        self.bits = 8 if d is _dtype.bool else d.itemsize * 8
        if not d.is_signed:         # bool, uint8, uint32
            self.min, self.max = 0, (1 if d is _dtype.bool else 2 ** self.bits - 1)
        else:
            self.min, self.max = -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1
        self.dtype = d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


# -- session 45 (h-funcs45): torch's module-level functions over the Tensor methods -------------
# Each is the method of the same name (so the same result, views where the method's is a view,
# the same autograd) with torch's argument names (``torch.movedim(input=..., source=...,
# destination=...)``), a TypeError naming the argument for an input that is not a tensor, and
# ``out=`` where torch takes it (``write_out``: torch's rules).
def _input(api: str, x: Any, name: str = "input") -> None:
    if not is_tensor(x):
        raise TypeError(f"{api}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def ravel(input: Tensor) -> Tensor:
    """``input`` as 1-D, shape ``(numel,)``: a view when the strides allow (a contiguous
    input), else a copy; a 0-d input gives shape ``(1,)``. Any dtype and device. Same as
    ``torch.ravel``."""
    _input("ravel", input)
    return input.ravel()


def movedim(input: Tensor, source: int | Sequence[int],
            destination: int | Sequence[int]) -> Tensor:
    """A view of ``input`` with the dims ``source`` moved to the positions ``destination``
    (ints, or sequences of one length), the other dims in their order. RuntimeError for
    sequences of different lengths or a dim repeated, IndexError for a dim out of range. Same
    as ``torch.movedim`` (``torch.moveaxis``)."""
    _input("movedim", input)
    return input.movedim(source, destination)


moveaxis = movedim


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose(input, dim0, dim1)``: a view with the two dims exchanged; IndexError for a
    dim out of range. Same as ``torch.swapdims`` (``torch.swapaxes``)."""
    _input("swapdims", input)
    return O.transpose(input, dim0, dim1)


def adjoint(input: Tensor) -> Tensor:
    """A view with the last two dims exchanged (the conjugate transpose; TensorPlay's dtypes are
    real, so the transpose): shape ``(*, n, m)`` for ``(*, m, n)``. RuntimeError (torch's
    words) for fewer than 2 dims. Same as ``torch.adjoint``."""
    _input("adjoint", input)
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 1-D tensor." if input.ndim == 1 else
                           "tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 0-D tensor.")
    return input.adjoint()


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal ``offset`` (above the main one when positive, below when
    negative) of the planes ``dim1``/``dim2``: those dims removed and the diagonal appended
    last (length 0 when ``offset`` is past the plane). RuntimeError when ``dim1 == dim2``,
    IndexError for a dim out of range. Same as ``torch.diagonal``."""
    _input("diagonal", input)
    return input.diagonal(offset, dim1, dim2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A new tensor whose planes ``dim1``/``dim2`` (dims of the result, which has one dim more
    than ``input``) hold the last dim of ``input`` on their diagonal ``offset``, zeros
    elsewhere; differentiable. Same as ``torch.diag_embed``."""
    _input("diag_embed", input)
    return input.diag_embed(offset, dim1, dim2)


def _atleast(api: str, fn, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return tuple(fn(t) for t in tensors[0])
    if len(tensors) == 1:
        _input(api, tensors[0])
        return fn(tensors[0])
    return tuple(fn(t) for t in tensors)


def _atleast_1d(t):
    _input("atleast_1d", t)
    return O.reshape(t, [1]) if t.ndim == 0 else t


def _atleast_2d(t):
    _input("atleast_2d", t)
    if t.ndim == 0:
        return O.reshape(t, [1, 1])
    return O.unsqueeze(t, 0) if t.ndim == 1 else t


def atleast_1d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least 1 dim: a 0-d one as shape ``(1,)`` (a view), others as they
    are (the tensor itself). One tensor gives a tensor; several tensors, or one tuple/list of
    them, give a tuple (no argument: an empty tuple). TypeError for an argument that is not a
    tensor. Same as ``torch.atleast_1d``."""
    return _atleast("atleast_1d", _atleast_1d, tensors)


def atleast_2d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least 2 dims: 0-d -> ``(1, 1)``, ``(n,)`` -> ``(1, n)`` (views),
    others as they are; returns as ``atleast_1d``. Same as ``torch.atleast_2d``."""
    return _atleast("atleast_2d", _atleast_2d, tensors)


def atleast_3d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least 3 dims: 0-d -> ``(1, 1, 1)``, ``(n,)`` -> ``(1, n, 1)``,
    ``(m, n)`` -> ``(m, n, 1)`` (views), others as they are; returns as ``atleast_1d``. Same as
    ``torch.atleast_3d``."""
    def one(t):
        _input("atleast_3d", t)
        return _atleast_3d(t)
    return _atleast("atleast_3d", one, tensors)


def _stack_list(api: str, tensors) -> list:
    if is_tensor(tensors) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{api}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{api} expects a non-empty TensorList")
    for t in tensors:
        _input(api, t, "tensors")
    return tensors


def hstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The tensors concatenated horizontally: along dim 0 when they are 1-D (0-d ones count as
    ``(1,)``), along dim 1 otherwise; dtypes promote as ``cat``'s; differentiable.
    RuntimeError for an empty sequence or shapes ``cat`` refuses. Same as ``torch.hstack``."""
    if out is not None:
        return _write_out("hstack", out, hstack, (tensors,), {}, "cast")
    ts = [_atleast_1d(t) for t in _stack_list("hstack", tensors)]
    return O.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The tensors concatenated vertically (along dim 0) after making each at least 2-D as
    ``atleast_2d`` (``(n,)`` -> ``(1, n)``); otherwise as ``hstack``. Same as
    ``torch.vstack`` (``torch.row_stack``)."""
    if out is not None:
        return _write_out("vstack", out, vstack, (tensors,), {}, "cast")
    return O.cat([_atleast_2d(t) for t in _stack_list("vstack", tensors)], 0)


row_stack = vstack


def column_stack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The tensors as columns side by side: 0-d and 1-D tensors become columns ``(n, 1)``,
    others stay as they are, then all are concatenated along dim 1; otherwise as ``hstack``.
    Same as ``torch.column_stack``."""
    if out is not None:
        return _write_out("column_stack", out, column_stack, (tensors,), {}, "cast")
    ts = _stack_list("column_stack", tensors)
    return O.cat([O.reshape(t, [t.numel(), 1]) if t.ndim <= 1 else t for t in ts], 1)


def tensor_split(input: Tensor, indices_or_sections: Any = None, dim: int = 0,
                 **kwargs: Any) -> tuple[Tensor, ...]:
    """Views of ``input`` along ``dim``: an int ``n`` gives ``n`` parts whose sizes differ by
    at most one, a sequence (or 1-D integer tensor) of indices the parts between them. Same as
    ``torch.tensor_split`` (its keywords ``sections=``, ``indices=``,
    ``tensor_indices_or_sections=`` too)."""
    _input("tensor_split", input)
    return input.tensor_split(indices_or_sections, dim, **kwargs)


def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 1 (dim 0 for a 1-D input) into equal parts or at indices;
    RuntimeError for a 0-d input or sections that do not divide the dim. Same as
    ``torch.hsplit``."""
    _input("hsplit", input)
    return input.hsplit(indices_or_sections)


def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 0; RuntimeError for fewer than 2 dims or sections that do not
    divide the dim. Same as ``torch.vsplit``."""
    _input("vsplit", input)
    return input.vsplit(indices_or_sections)


def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 2; RuntimeError for fewer than 3 dims or sections that do not
    divide the dim. Same as ``torch.dsplit``."""
    _input("dsplit", input)
    return input.dsplit(indices_or_sections)


def fliplr(input: Tensor) -> Tensor:
    """A copy reversed along dim 1; RuntimeError for fewer than 2 dims. Same as
    ``torch.fliplr``."""
    _input("fliplr", input)
    return input.fliplr()


def flipud(input: Tensor) -> Tensor:
    """A copy reversed along dim 0; RuntimeError for a 0-d input. Same as ``torch.flipud``."""
    _input("flipud", input)
    return input.flipud()


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """A copy rotated by ``k`` quarter turns in the plane ``dims`` (from the first towards the
    second dim). Same as ``torch.rot90`` (its errors)."""
    _input("rot90", input)
    return input.rot90(k, dims)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input`` repeated ``dims[i]`` times along each dim, ``dims`` padded with leading 1s to
    ``input``'s number of dims (or ``input`` given leading size-1 dims when ``dims`` is longer).
    Same as ``torch.tile``."""
    _input("tile", input)
    return input.tile(dims)


def take(input: Tensor, index: Tensor, *, out: Any = None) -> Tensor:
    """The elements of ``input`` flattened, at the integer ``index`` (any shape; negative
    counts from the end), in ``index``'s shape; IndexError for an index out of range.
    Differentiable in ``input``. Same as ``torch.take``."""
    if out is not None:
        return _write_out("take", out, take, (input, index), {}, "found")
    _input("take", input)
    return input.take(index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *,
                   out: Any = None) -> Tensor:
    """``gather`` along ``dim`` with ``input`` and ``indices`` (of the same number of dims)
    broadcast in the other dims; ``dim=None``: both flattened. RuntimeError for different
    numbers of dims. Same as ``torch.take_along_dim``."""
    if out is not None:
        return _write_out("take_along_dim", out, take_along_dim, (input, indices, dim), {},
                          "found")
    _input("take_along_dim", input)
    return input.take_along_dim(indices, dim)


def argwhere(input: Tensor) -> Tensor:
    """The ``(n, ndim)`` int64 indices of the non-zero elements (``nonzero``). Same as
    ``torch.argwhere``."""
    _input("argwhere", input)
    return input.argwhere()


# real tensors' complex surface (TensorPlay's dtypes are real; torch's behaviour on real tensors)
def positive(input: Tensor) -> Tensor:
    """``input`` itself; RuntimeError for a bool tensor (torch's words). Same as
    ``torch.positive``."""
    _input("positive", input)
    return input.positive()


def conj(input: Tensor) -> Tensor:
    """``input`` itself (a real tensor is its own conjugate). Same as ``torch.conj``."""
    _input("conj", input)
    return input


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself (nothing lazily conjugated). Same as ``torch.resolve_conj``."""
    _input("resolve_conj", input)
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself (nothing lazily negated). Same as ``torch.resolve_neg``."""
    _input("resolve_neg", input)
    return input


def conj_physical(input: Tensor, *, out: Any = None) -> Tensor:
    """``input`` itself (real dtypes: nothing to conjugate); with ``out=``, ``input`` copied
    into ``out``. Same as ``torch.conj_physical``."""
    if out is not None:
        return _write_out("conj_physical", out, conj_physical, (input,), {}, "cast")
    _input("conj_physical", input)
    return input


def is_conj(input: Tensor) -> bool:
    """False (no lazy conjugation). Same as ``torch.is_conj``."""
    _input("is_conj", input)
    return False


def is_complex(input: Tensor) -> bool:
    """False (TensorPlay has no complex dtypes). Same as ``torch.is_complex``."""
    _input("is_complex", input)
    return False


def is_nonzero(input: Tensor) -> bool:
    """The one element of ``input`` as a Python bool; RuntimeError (torch's words) for no or
    several elements. Same as ``torch.is_nonzero``."""
    _input("is_nonzero", input)
    return input.is_nonzero()


def real(input: Tensor) -> Tensor:
    """``input`` itself (real dtypes). Same as ``torch.real``."""
    _input("real", input)
    return input


def imag(input: Tensor) -> Tensor:
    """RuntimeError (torch's words): real tensors have no imaginary part. Same as
    ``torch.imag``."""
    _input("imag", input)
    return input.imag


def isreal(input: Tensor) -> Tensor:
    """A bool tensor of ``input``'s shape, all True (real dtypes). Same as ``torch.isreal``."""
    _input("isreal", input)
    return input.isreal()


# reductions and scans composed of public ops
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D tensor, 0-d (integers and bools sum to int64);
    differentiable. RuntimeError for other ranks. Same as ``torch.trace``."""
    _input("trace", input)
    return input.trace()


def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The number of non-zero elements over ``dim`` (an int, a sequence, or every dim when
    None), int64. Same as ``torch.count_nonzero``."""
    _input("count_nonzero", input)
    return input.count_nonzero(dim)


def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: _DTypeLike | None = None, out: Any = None) -> Tensor:
    """``sum`` with NaN counted as zero (integer inputs: ``sum``'s result, int64); the gradient
    is 0 at the NaNs. Same as ``torch.nansum``."""
    if out is not None:
        return _write_out("nansum", out, nansum, (input, dim, keepdim), {"dtype": dtype},
                          "found")
    _input("nansum", input)
    return input.nansum(dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: _DTypeLike | None = None, out: Any = None) -> Tensor:
    """The mean of the non-NaN elements over ``dim`` (NaN where there are none); floating
    inputs only, RuntimeError otherwise. Same as ``torch.nanmean``."""
    if out is not None:
        return _write_out("nanmean", out, nanmean, (input, dim, keepdim), {"dtype": dtype},
                          "found")
    _input("nanmean", input)
    return input.nanmean(dim, keepdim, dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: _DTypeLike | None = None,
            out: Any = None) -> Tensor:
    """The cumulative product along ``dim`` (integers and bools give int64; ``dtype=``
    converts first); differentiable, zeros included. Same as ``torch.cumprod``."""
    if out is not None:
        return _write_out("cumprod", out, cumprod, (input, dim), {"dtype": dtype}, "cast")
    _input("cumprod", input)
    return input.cumprod(dim, dtype=dtype)


def logcumsumexp(input: Tensor, dim: int, *, out: Any = None) -> Tensor:
    """``log(cumsum(exp(input), dim))`` computed without overflow or underflow: a running
    ``logaddexp`` (scanned by doubling, ``ceil(log2(n))`` steps of ``logaddexp`` on views, so
    the result is exact to rounding for any spread of values, -inf included). Floating inputs
    (NotImplementedError, a RuntimeError, for integer or bool ones, as torch); a 0-d input gives a copy;
    differentiable through ``logaddexp`` and ``cat``. Same as ``torch.logcumsumexp``."""
    if out is not None:
        return _write_out("logcumsumexp", out, logcumsumexp, (input, dim), {}, "found")
    _input("logcumsumexp", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"logcumsumexp(): not implemented for {input.dtype} "
                                  f"(floating inputs only, as torch)")
    if input.ndim == 0:
        wrap_dim(dim, 0, "logcumsumexp(): ")
        return O.clone(input)
    d = wrap_dim(dim, input.ndim, "logcumsumexp(): ")
    n = input.shape[d]
    out = input
    step = 1
    while step < n:
        head = O.narrow(out, d, 0, step)
        tail = O.narrow(out, d, step, n - step).logaddexp(O.narrow(out, d, 0, n - step))
        out = O.cat([head, tail], d)
        step *= 2
    return out if out is not input else O.clone(input)


# -- the *_scatter functions: a copy of ``input`` with ``src`` written into one of its views ------
def _scatter_into(api: str, input, src, view):
    _input(api, input)
    _input(api, src, "src")
    out = O.clone(input)
    region = view(out)
    if tuple(src.shape) != tuple(region.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region.shape)}")
    O.copy_(region, src)
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` whose slice ``select(dim, index)`` is ``src`` (of that slice's
    shape exactly, RuntimeError otherwise, torch's words; IndexError for ``dim``/``index`` out
    of range). Differentiable in both: the gradient of ``input`` is zero on the slice, that of
    ``src`` the slice of the incoming gradient. Same as ``torch.select_scatter``."""
    return _scatter_into("select_scatter", input, src, lambda t: O.select(t, dim, index))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` whose slice ``[start:end:step]`` along ``dim`` is ``src`` (of that
    slice's shape exactly); otherwise as ``select_scatter``. Same as ``torch.slice_scatter``."""
    return _scatter_into("slice_scatter", input, src,
                         lambda t: O.slice(t, dim, start, end, step))


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` whose diagonal ``diagonal(offset, dim1, dim2)`` is ``src`` (of that
    diagonal's shape exactly); otherwise as ``select_scatter``. Same as
    ``torch.diagonal_scatter``."""
    return _scatter_into("diagonal_scatter", input, src,
                         lambda t: t.diagonal(offset, dim1, dim2))


# -- shapes and dtypes ---------------------------------------------------------------------------
def broadcast_shapes_(*shapes: int | Sequence[int]) -> tuple[int, ...]:
    """The shape that tensors of ``shapes`` (each an int or a sequence of ints) broadcast to, as
    a tuple (TensorPlay's shape type); RuntimeError for shapes that do not broadcast,
    ValueError for a negative size (torch's words). Same as ``torch.broadcast_shapes``; exported as
    ``tensorplay.broadcast_shapes``."""
    norm = []
    for s in shapes:
        s = (_int(s),) if isinstance(s, _int) else tuple(_int(d) for d in s)
        if any(d < 0 for d in s):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        norm.append(s)
    return broadcast_shapes(*norm, api="broadcast_shapes")


broadcast_shapes_.__name__ = broadcast_shapes_.__qualname__ = "broadcast_shapes"


def result_type(tensor: Tensor | _Number, other: Tensor | _Number) -> Any:
    """The dtype ``tensor <op> other`` computes in (torch's promotion: dimensioned tensors
    decide unless a 0-d tensor or a Python number is of a higher category, bool < integer <
    floating; a number's dtype is bool, int64 or the default float dtype). Either may be a
    Python number. Same as ``torch.result_type``."""
    from ._ops._shapes import result_dtype
    if is_tensor(tensor) or is_tensor(other):
        return result_dtype(tensor, other)
    return _dtype.result_type(_dtype.wrapped_dtype(tensor), 0, _dtype.wrapped_dtype(other), 0)


def can_cast(from_: _DTypeLike, to: _DTypeLike) -> bool:
    """True when a value of dtype ``from_`` may be written into a tensor of dtype ``to`` by an
    in-place op or ``out=``: never from a higher category into a lower one (floating into
    integer or bool, integer into bool). Same as ``torch.can_cast``."""
    return _dtype.can_cast(_dtype.as_dtype(from_), _dtype.as_dtype(to))


# -- index factories and searching, composed ---------------------------------------------------
def _tri_indices(row, col, offset, dtype, device, keep):
    pairs = [(i, j) for i in range(_int(row)) for j in range(_int(col)) if keep(j - i, offset)]
    rows, cols = [p[0] for p in pairs], [p[1] for p in pairs]
    dt = _dtype.int64 if dtype is None else dtype
    if not pairs:
        return F.zeros((2, 0), dtype=dt, device=device)
    return F.tensor([rows, cols], dtype=dt, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: _DTypeLike | None = None,
                 device: _DeviceLike | None = None, layout: Any = None) -> Tensor:
    """The ``(2, n)`` indices (row, column), in row-major order, of the lower triangle of a
    ``row x col`` matrix: the elements with ``column - row <= offset``; int64 unless ``dtype``;
    ``(2, 0)`` when there are none. Same as ``torch.tril_indices``."""
    return _tri_indices(row, col, offset, dtype, device, lambda d, o: d <= o)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: _DTypeLike | None = None,
                 device: _DeviceLike | None = None, layout: Any = None) -> Tensor:
    """The ``(2, n)`` indices of the upper triangle of a ``row x col`` matrix: the elements with
    ``column - row >= offset``; otherwise as ``tril_indices``. Same as ``torch.triu_indices``."""
    return _tri_indices(row, col, offset, dtype, device, lambda d, o: d >= o)


def searchsorted(sorted_sequence: Tensor, input: Tensor | _Number, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Tensor | None = None,
                 out: Any = None) -> Tensor:
    """For each value of ``input``, the index where it would be inserted into the last dim of
    ``sorted_sequence`` to keep it sorted: the first position whose element is ``>=`` the value
    (``right=True`` or ``side="right"``: ``>``); a NaN value goes past the end (torch's
    comparisons). A 1-D ``sorted_sequence`` serves every value; otherwise its leading dims must
    equal ``input``'s (each row searched for its values). A number ``input`` gives a 0-d
    result. The two are compared in their promoted dtype. int64 (int32 with ``out_int32``);
    ``sorter`` (int64, ``sorted_sequence``'s shape) gives the order of an unsorted sequence.
    A binary search, ``O(m log n)``: the array namespace's ``searchsorted`` (NumPy, CuPy) for
    a 1-D sequence, a branchless one over all rows at once otherwise; any device; not
    differentiable. RuntimeError for ``right=True`` with ``side="left"``, leading dims that
    differ, a 0-d sequence, a ``sorter`` of another shape or dtype or with an index out of
    range (torch's messages). A sequence holding NaN is searched as NumPy does (NaN the
    largest), which can differ from torch (whose answer there depends on its search path).
    Same as ``torch.searchsorted``."""
    if out is not None:
        return _write_out("searchsorted", out, searchsorted, (sorted_sequence, input),
                          {"out_int32": out_int32, "right": right, "side": side,
                           "sorter": sorter}, "found")
    _input("searchsorted", sorted_sequence, "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence
    scalar = not is_tensor(input)
    vals = F.tensor(input, dtype=_dtype.wrapped_dtype(input), device=seq.device) if scalar \
        else input
    if seq.ndim > 1 and scalar:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(vals.shape)}")
    dt = _dtype.promote_types(seq.dtype, vals.dtype)
    if seq.dtype is not dt:
        seq = O.to_dtype(seq, dt)
    if vals.dtype is not dt:
        vals = O.to_dtype(vals, dt)
    searchsorted_check(seq, vals, sorter)
    return O.searchsorted(seq, vals, out_int32=out_int32, right=right, sorter=sorter)


def bucketize(input: Tensor | _Number, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False, out: Any = None) -> Tensor:
    """The index of the bucket of each value of ``input`` between the sorted 1-D
    ``boundaries``: ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1]
    <= x < boundaries[i]``), i.e. ``searchsorted(boundaries, input, right=right)``; int64
    (int32 with ``out_int32``). RuntimeError for boundaries not 1-D. Same as
    ``torch.bucketize``."""
    if out is not None:
        return _write_out("bucketize", out, bucketize, (input, boundaries),
                          {"out_int32": out_int32, "right": right}, "found")
    _input("bucketize", boundaries, "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def kron(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    """The Kronecker product: shape ``(a_i * b_i)`` over the dims of the two tensors (the one
    with fewer dims given leading size-1 dims); dtypes promote as ``mul``'s; differentiable
    (``mul`` and reshapes). Same as ``torch.kron``."""
    if out is not None:
        return _write_out("kron", out, kron, (input, other), {}, "cast")
    _input("kron", input)
    _input("kron", other, "other")
    n = builtins.max(input.ndim, other.ndim)
    a = [1] * (n - input.ndim) + list(input.shape)
    b = [1] * (n - other.ndim) + list(other.shape)
    ea = [s for d in a for s in (d, 1)]
    eb = [s for d in b for s in (1, d)]
    prod = O.mul(O.reshape(input, ea), O.reshape(other, eb))
    return O.reshape(prod, [x * y for x, y in zip(a, b)])


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-d as ``(1, 1)``, 1-D ``(n,)`` as ``(1, n)``, 2-D as they are) along the
    diagonal of one 2-D tensor, zeros elsewhere; dtypes promote together; differentiable
    (``cat``). RuntimeError for a tensor of more than 2 dims. No tensor: shape ``(1, 0)``
    (torch's). Same as ``torch.block_diag``."""
    mats = []
    for i, t in enumerate(tensors):
        _input("block_diag", t, "tensors")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        mats.append(O.reshape(t, [1, 1]) if t.ndim == 0 else
                    O.unsqueeze(t, 0) if t.ndim == 1 else t)
    if not mats:
        return F.zeros((1, 0))                           # torch's shape for no tensor
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _dtype.promote_types(dt, m.dtype)
    dev = mats[0].device
    width = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        m = O.to_dtype(m, dt) if m.dtype is not dt else m
        parts = ([F.zeros((r, left), dtype=dt, device=dev)] if left else []) + [m] + \
            ([F.zeros((r, width - left - c), dtype=dt, device=dev)] if width - left - c else [])
        rows.append(O.cat(parts, 1) if len(parts) > 1 else m)
        left += c
    return O.cat(rows, 0) if len(rows) > 1 else rows[0]


def signbit(input: Tensor, *, out: Any = None) -> Tensor:
    """A bool tensor of ``input``'s shape: True where the sign bit is set (negative numbers,
    ``-0.0`` and a negative NaN included; False everywhere for bool and uint8). Same as
    ``torch.signbit``."""
    if out is not None:
        return _write_out("signbit", out, signbit, (input,), {}, "cast")
    _input("signbit", input)
    if input.dtype.is_floating_point:
        return O.lt(O.copysign(F.ones_like(input), input), 0)
    if input.dtype is _dtype.bool or input.dtype is _dtype.uint8:
        return F.zeros_like(input, dtype=_dtype.bool)
    return O.lt(input, 0)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """``input`` with each run of equal consecutive elements (``dim=None``: of the flattened
    input; else of equal consecutive slices along ``dim``) kept once; with ``return_inverse``
    the index of each element's (slice's) run in the result (``input``'s shape; ``(size of
    dim,)`` with ``dim``), with ``return_counts`` the length of each run (int64). Returns the
    tensor alone, or a tuple with the ones asked for in this order. NaNs are never equal. The
    result's size depends on the values (a data-dependent size under ``tensorplay.compile``).
    Same as ``torch.unique_consecutive``."""
    _input("unique_consecutive", input)
    if dim is None:
        flat = O.reshape(input, [-1])
        rows = flat
    else:
        d = wrap_dim(dim, input.ndim, "unique_consecutive(): ")
        flat = input
        rows = O.reshape(input.movedim(d, 0), [input.shape[d], input.numel() // input.shape[d]
                                               if input.shape[d] else 0])
    n = rows.shape[0]
    dev = input.device
    if n == 0:
        values = flat if dim is None else input
        inverse = F.zeros(tuple(input.shape) if dim is None else (0,), dtype=_dtype.int64,
                          device=dev)
        counts = F.zeros((0,), dtype=_dtype.int64, device=dev)
    else:
        change = O.ne(O.narrow(rows, 0, 1, n - 1), O.narrow(rows, 0, 0, n - 1))
        if dim is not None and rows.ndim == 2:
            change = O.any(change, [1], False)
        mask = O.cat([F.ones((1,), dtype=_dtype.bool, device=dev), change], 0)
        values = O.masked_select(flat, mask) if dim is None else \
            O.index(input, d, O.reshape(O.nonzero(mask), [-1]))
        inverse = counts = None
        if return_inverse or return_counts:
            group = O.sub(O.cumsum(mask, 0), 1)
            inverse = O.reshape(group, list(input.shape)) if dim is None else group
        if return_counts:
            counts = _run_lengths(group, mask, n if mask.native is not None else None)
    extra = ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return (values, *extra) if extra else values


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the elements of the 1-D ``input`` as the rows of a
    ``(k, r)`` tensor, in ``itertools.combinations`` order
    (``combinations_with_replacement`` with ``with_replacement``); ``r=0`` gives an empty 1-D
    tensor, no combination a ``(0, r)`` one. Differentiable (``index``). RuntimeError for an
    input that is not 1-D. Same as ``torch.combinations``."""
    import itertools
    _input("combinations", input)
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return F.empty((0,), dtype=input.dtype, device=input.device)
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = list(make(range(input.shape[0]), r))
    if not idx:
        return F.empty((0, r), dtype=input.dtype, device=input.device)
    return O.index(input, 0, F.tensor(idx, dtype=_dtype.int64, device=input.device))


# -- session 46 (h-ops46): torch functions that were missing, composed of tp:: ops -------------
def logspace(start: _Number, end: _Number, steps: int, base: float = 10.0, *,
             dtype: _DTypeLike | None = None, layout: Any = None,
             device: _DeviceLike | None = None, requires_grad: bool = False,
             out: Any = None) -> Tensor:
    """``steps`` values ``base ** e`` for ``e`` evenly spaced from ``start`` to ``end``
    inclusive, shape ``(steps,)``; the default float dtype unless ``dtype`` (integers truncate);
    any device. Computed as torch's cpu kernel: the exponents in float64 from both ends
    (``start + step * i`` in the first half, ``end - step * (steps - 1 - i)`` in the second),
    the powers in float64, one rounding to ``dtype``. RuntimeError for negative ``steps``.
    Same as ``torch.logspace``."""
    if out is not None:
        return _factory_out("logspace", out, dtype, logspace, (start, end, steps, base),
                            {"requires_grad": requires_grad})
    steps = _int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if dt is _dtype.bool:
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    dev = F._dev(device)
    f64 = _dtype.float64

    def as_dt(v):   # the ends as torch reads them: converted to the result's dtype first
        return float(F.tensor(v, dtype=dt).to(f64).item()) if dt.is_floating_point else \
            float(_int(v))
    s, e = as_dt(start), as_dt(end)
    # torch: (end - start) in the result's dtype, then float64
    span = float(O.sub(F.tensor(e, dtype=dt), F.tensor(s, dtype=dt)).to(f64).item()) \
        if dt.is_floating_point else e - s
    b = float(F.tensor(float(base), dtype=_dtype.float32).to(f64).item()) \
        if not dt.is_floating_point else float(base)
    if steps == 0:
        return F.empty(0, dtype=dt, device=dev, requires_grad=requires_grad)
    if steps == 1:
        ex = F.full((1,), s, dtype=f64, device=dev)
    else:
        step = span / (steps - 1)
        i = F.arange(steps, dtype=f64, device=dev)
        ex = O.where(O.lt(i, float(steps // 2)), O.add(O.mul(i, step), s),
                     O.rsub(O.mul(O.rsub(i, float(steps - 1)), step), e))
    r = O.rpow(ex, b)
    r = r if dt is f64 else O.to_dtype(r, dt)
    return r.requires_grad_() if requires_grad else r


def isin(elements: Tensor | _Number, test_elements: Tensor | _Number, *,
         assume_unique: bool = False, invert: bool = False, out: Any = None) -> Tensor:
    """A bool tensor of ``elements``' shape: True where the element equals one of
    ``test_elements`` (False with ``invert``). Either may be a Python number (not both: a
    TypeError); both are compared in their promoted dtype, NaN matches nothing. Sorting the
    test elements and a binary search (``searchsorted``): ``O((n + m) log m)``, any device.
    ``assume_unique`` is accepted and changes nothing. RuntimeError for bool tensors (torch's
    "Unsupported input type encountered for isin(): Bool"). Same as ``torch.isin``."""
    if out is not None:
        return _write_out("isin", out, isin, (elements, test_elements),
                          {"assume_unique": assume_unique, "invert": invert}, "found")
    if not is_tensor(elements) and not is_tensor(test_elements):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}): "
                        f"elements or test_elements must be a Tensor")
    ref = elements if is_tensor(elements) else test_elements
    a = elements if is_tensor(elements) else F.tensor(
        elements, dtype=_dtype.wrapped_dtype(elements), device=ref.device)
    b = test_elements if is_tensor(test_elements) else F.tensor(
        [test_elements], dtype=_dtype.wrapped_dtype(test_elements), device=ref.device)
    for t in (a, b):
        if t.dtype is _dtype.bool:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    dt = _dtype.promote_types(a.dtype, b.dtype)
    a = a if a.dtype is dt else O.to_dtype(a, dt)
    b = b if b.dtype is dt else O.to_dtype(b, dt)
    flat = O.reshape(b, [-1])
    m = flat.shape[0]
    if m == 0:
        found = F.zeros(list(a.shape), dtype=_dtype.bool, device=a.device)
    else:
        srt = O.sort(flat, -1, False, stable=False)[0]
        pos = O.minimum(searchsorted(srt, a), m - 1)
        found = O.eq(O.reshape(O.index(srt, 0, O.reshape(pos, [-1])), list(a.shape)), a)
    return O.logical_not(found) if invert else found


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x``: shape ``(len(x), N)`` (``N`` defaults to
    ``len(x)``), column ``j`` is ``x ** (N - 1 - j)`` (``x ** j`` with ``increasing``). dtype:
    ``x``'s promoted with int64 (bools and integers give int64). The powers are running
    products (``cumprod``), differentiable. RuntimeError for ``x`` not 1-D or ``N`` negative.
    Same as ``torch.vander``."""
    _input("vander", x, "x")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else _int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _dtype.promote_types(x.dtype, _dtype.int64)
    xs = x if x.dtype is dt else O.to_dtype(x, dt)
    ones = F.ones((x.shape[0], builtins.min(n, 1)), dtype=dt, device=x.device)
    if n <= 1:
        r = ones
    else:
        rest = O.expand(O.unsqueeze(xs, 1), [x.shape[0], n - 1]).cumprod(1)
        r = O.cat([ones, rest], 1)
    return r if increasing or n <= 1 else O.index(r, 1, F.arange(n - 1, -1, -1,
                                                                  device=x.device))


def histc(input: Tensor, bins: int = 100, min: _Number = 0, max: _Number = 0, *,
          out: Any = None) -> Tensor:   # noqa: A002 - torch's names
    """Counts of ``input``'s elements in ``bins`` equal-width bins over ``[min, max]`` (both 0:
    the data's smallest and largest element; equal ends are widened by 1 each way), as a 1-D
    tensor of ``input``'s dtype. Elements outside the range (and NaN) are not counted; an
    element equal to ``max`` falls in the last bin. Floating inputs only (NotImplementedError
    otherwise, as torch's cpu kernel); not differentiable. RuntimeError for ``bins <= 0``,
    ``min > max``, or a range that is not finite (NaN or inf in the data with min = max = 0).
    Same as ``torch.histc``."""
    if out is not None:
        return _write_out("histc", out, histc, (input, bins, min, max), {}, "found")
    _input("histc", input)
    return _histogram_counts("histc", input, bins, min, max, None, False)[0]


def _histogram_counts(api, x, bins, lo, hi, weight, density):
    """``(hist, edges)`` of ``x`` over ``bins`` equal bins of ``[lo, hi]`` (None or 0/0 ends:
    the data's range), torch's linear binning; ``weight``/``density`` as torch.histogram."""
    bins = _int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.{'histogram()' if api == 'histc' else 'histogramdd'}: bins "
                           f"must be > 0, but got {bins} for dimension 0")
    flat = O.reshape(x, [-1])
    dt = x.dtype
    n = flat.shape[0]
    if api == "histc":   # torch's histc_select_outer_bin_edges
        lo, hi = float(lo), float(hi)
        if lo == hi and n:
            lo, hi = float(O.amin(flat, [], False).item()), float(O.amax(flat, [], False).item())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
        if not lo < hi:
            raise RuntimeError("torch.histc: max must be larger than min")
    else:                # torch's histogramdd select_outer_bin_edges
        if lo is not None:
            lo, hi = float(lo), float(hi)
        elif n:
            lo, hi = float(O.amin(flat, [], False).item()), float(O.amax(flat, [], False).item())
        else:
            lo, hi = 0.0, 1.0
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{_fmt(lo)}, "
                               f"{_fmt(hi)}] is not finite")
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{_fmt(lo)} max {_fmt(hi)} for dimension 0")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
    if not x.dtype.is_floating_point:   # (torch checks the dtype after the bins and range)
        raise NotImplementedError(f"\"{'histogram_cpu' if api == 'histc' else 'histogramdd'}\" "
                                  f"not implemented for '{_dtype.scalar_type_name(x.dtype)}': "
                                  f"{api}() counts floating tensors (as torch); convert first, "
                                  f"e.g. x.float()")
    edges = O.linspace(lo, hi, bins + 1, dtype=dt, device=x.device)
    lo_x, hi_x = O.select(edges, 0, 0), O.select(edges, 0, bins)
    with _no_grad():
        inside = O.logical_and(O.ge(flat, lo_x), O.le(flat, hi_x))
        # torch's position: (x - leftmost) * bins / (rightmost - leftmost), truncated; the
        # right edge into the last bin; then moved to the bin whose edges hold x (local search)
        pos = O.div(O.mul(O.sub(flat, lo_x), float(bins)), O.sub(hi_x, lo_x))
        pos = O.to_dtype(O.trunc(O.where(inside, pos, 0.0)), _dtype.int64)
        pos = O.minimum(O.maximum(pos, 0), bins - 1)
        if api != "histc":
            left = O.index(edges, 0, pos)
            right = O.index(edges, 0, O.add(pos, 1))
            pos = O.where(O.lt(flat, left), O.sub(pos, 1), pos)
            pos = O.where(O.logical_and(O.ge(flat, right), O.ne(pos, bins - 1)),
                          O.add(pos, 1), pos)
            pos = O.minimum(O.maximum(pos, 0), bins - 1)
        w = O.to_dtype(inside, dt) if weight is None else \
            O.where(inside, O.reshape(weight, [-1]), 0.0)
        hist = O.scatter_add(F.zeros(bins, dtype=dt, device=x.device), 0, pos, w)
    if density:   # torch: divided by the total, then by each bin's width
        widths = O.sub(O.narrow(edges, 0, 1, bins), O.narrow(edges, 0, 0, bins))
        hist = O.div(O.div(hist, O.sum(hist, [], False)), widths)
    return hist, edges


def _fmt(v):
    return "nan" if v != v else ("inf" if v == math.inf else "-inf" if v == -math.inf else
                                 (f"{v:g}" if v != _int(v) else str(_int(v))))


def _no_grad():
    from ._dispatch import NoGradBlock
    return NoGradBlock()


def histogram(input: Tensor, bins: int | Tensor, *, range: Sequence[float] | None = None,
              weight: Tensor | None = None, density: bool = False,
              out: Any = None) -> Any:   # noqa: A002 - torch's names
    """``(hist, bin_edges)`` (``tensorplay.return_types.histogram``) of ``input``'s elements:
    ``bins`` an int (that many equal bins over ``range``, or the data's min and max; equal ends
    widened by 0.5 each way) or a 1-D tensor of increasing edges. Bin ``i`` holds ``edges[i] <=
    x < edges[i + 1]``, the last bin also its right edge; elements outside are not counted.
    ``weight`` (``input``'s shape) sums weights instead of counting; ``density`` divides by
    the total and the bin widths. Floating ``input`` of one dtype with ``bins``/``weight``
    (NotImplementedError for integers, as torch); not differentiable; any device (torch's is
    cpu only). RuntimeError for ``bins <= 0`` or ``range`` min > max. 
    Same as ``torch.histogram``."""
    from . import return_types
    if out is not None:
        return _write_out("histogram", out, histogram, (input, bins),
                          {"range": range, "weight": weight, "density": density}, "exact", 2)
    _input("histogram", input)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, it should have the "
                           f"same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {list(input.shape)} and weight with "
                           f"shape {list(weight.shape)}")
    if is_tensor(bins):
        if not input.dtype.is_floating_point:
            raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                      f"'{_dtype.scalar_type_name(input.dtype)}'")
        if bins.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {bins.ndim} dimensions in the bins tensor for dimension 0")
        if bins.dtype is not input.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the "
                               "same dtype, but got input with dtype "
                               f"{_dtype.scalar_type_name(input.dtype)} and bins with dtype "
                               f"{_dtype.scalar_type_name(bins.dtype)}")
        edges = bins
        nb = edges.shape[0] - 1
        flat = O.reshape(input, [-1])
        with _no_grad():
            if nb <= 0:
                hist = F.zeros(builtins.max(nb, 0), dtype=input.dtype, device=input.device)
            else:
                first, last = O.select(edges, 0, 0), O.select(edges, 0, nb)
                inside = O.logical_and(O.ge(flat, first), O.le(flat, last))
                pos = O.sub(searchsorted(edges, flat, right=True), 1)
                pos = O.minimum(O.maximum(pos, 0), nb - 1)
                w = O.to_dtype(inside, input.dtype) if weight is None else \
                    O.where(inside, O.reshape(weight, [-1]), 0.0)
                hist = O.scatter_add(F.zeros(nb, dtype=input.dtype, device=input.device), 0,
                                     pos, w)
        if density and nb > 0:
            widths = O.sub(O.narrow(edges, 0, 1, nb), O.narrow(edges, 0, 0, nb))
            hist = O.div(O.div(hist, O.sum(hist, [], False)), widths)
        return return_types.histogram(hist, edges)
    lo, hi = (None, None) if range is None else (range[0], range[1])
    hist, edges = _histogram_counts("histogram", input, bins, lo, hi, weight, density)
    return return_types.histogram(hist, edges)


def _cov_weights(name, w, nobs, kind, kind_ok) -> None:
    """cov()'s checks of ``fweights``/``aweights`` (torch's messages): at most 1-d, one weight per
    observation, of the ``kind`` of dtype (``kind_ok``), none negative."""
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    if w.numel() != nobs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {nobs}")
    if not kind_ok:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{_dtype.scalar_type_name(w.dtype)} dtype")
    if nobs and bool(O.any(O.lt(w, 0), None, False)):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (columns: observations; a
    1-D input is one variable): shape ``(rows, rows)``, 0-d for one variable. ``correction``
    (1: Bessel's), integer frequency weights ``fweights`` and floating ``aweights`` (1-D, one
    per observation) as torch's formula; integer inputs give the default float dtype.
    Differentiable. RuntimeError for more than 2 dims or bad weights (torch's messages);
    degrees of freedom <= 0 warn and give inf/NaN, as torch. Same as ``torch.cov``."""
    import warnings
    _input("cov", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = O.reshape(input, [1, -1]) if input.ndim < 2 else input
    nobs = x.shape[1]
    w = None
    if fweights is not None:
        _cov_weights("fweights", fweights, nobs, "integral",
                     not (fweights.dtype.is_floating_point or fweights.dtype is _dtype.bool))
        w = fweights
    if aweights is not None:
        _cov_weights("aweights", aweights, nobs, "floating point",
                     aweights.dtype.is_floating_point)
        w = aweights if w is None else O.mul(w, aweights)
    if w is None:
        w_sum = F.tensor(nobs, dtype=_dtype.int64, device=input.device)
    else:
        w_sum = O.sum(w, [], False)
        if not bool(O.ne(w_sum, 0)):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = O.div(O.sum(x if w is None else O.mul(x, w), [1], False), w_sum)
    if w is not None and aweights is not None and correction != 0:
        norm = O.sub(w_sum, O.div(O.mul(O.sum(O.mul(w, aweights), [], False), correction), w_sum))
    else:
        norm = O.sub(w_sum, correction)
    if bool(O.le(norm, 0)):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = F.zeros_like(norm)     # (+0: torch's zero_(); norm * 0 could be -0)
    xc = O.sub(x, O.unsqueeze(avg, 1))
    c = O.matmul(xc, O.transpose(xc if w is None else O.mul(xc, w), 0, 1))
    return O.div(c, norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in ``input``'s rows: ``cov``
    divided by the outer product of the standard deviations, clipped to ``[-1, 1]``; 0-d for one
    variable (``c / c``: 1, or NaN for a constant one). Differentiable. 
    Same as ``torch.corrcoef``."""
    _input("corrcoef", input)
    c = cov(input)
    if c.ndim == 0:
        return O.div(c, c)
    d = O.sqrt(c.diagonal())
    c = O.div(c, O.reshape(d, [-1, 1]))
    c = O.div(c, O.reshape(d, [1, -1]))
    return c.clamp(-1, 1)


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(api, input, q, dim, keepdim, interpolation):
    _input(api, input)
    if input.numel() == 0:
        raise RuntimeError(f"{api}() input tensor must be non-empty")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{api}() input tensor must be either float or double dtype")
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError(f"{api}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if is_tensor(q):
        if q.ndim > 1:
            raise RuntimeError(f"{api}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{api}() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(O.all(O.logical_and(O.ge(q, 0), O.le(q, 1)), None, False)):
            raise RuntimeError(f"{api}() q values must be in the range [0, 1]")
        qs, scalar_q = O.reshape(q, [-1]), q.ndim == 0
    else:
        qf = float(q)
        if not 0 <= qf <= 1:
            raise RuntimeError(f"{api}() q must be in the range [0, 1] but got {qf}")
        qs, scalar_q = F.tensor([qf], dtype=input.dtype, device=input.device), True
    if dim is None:
        srt = O.sort(O.reshape(input, [-1]), -1, False)[0]
        base = [1] * input.ndim if keepdim else []
    else:
        d = wrap_dim(dim, builtins.max(input.ndim, 1), f"{api}(): ")
        x = input if input.ndim else O.reshape(input, [1])
        srt = O.sort(x.movedim(d, -1), -1, False)[0]
        base = list(input.shape)
        if input.ndim:
            if keepdim:
                base[d] = 1
            else:
                del base[d]
    n = srt.shape[-1]
    lead = list(srt.shape[:-1])
    nq = qs.shape[0]
    qb = O.expand(O.reshape(qs, [1] * len(lead) + [nq]), lead + [nq])
    isnan = O.isnan(srt)
    if api == "nanquantile":
        cnt = O.sum(O.logical_not(isnan), [-1], True)
        ranks = O.mul(qb, O.sub(cnt, 1))
        ranks = O.where(O.lt(ranks, 0), 0.0, ranks)
    else:
        ranks = O.where(O.any(isnan, [-1], True), float(n - 1), O.mul(qb, n - 1))
    if interpolation == "lower":
        ranks = O.floor(ranks)
    elif interpolation == "higher":
        ranks = O.ceil(ranks)
    elif interpolation == "nearest":
        ranks = O.round(ranks)
    below = O.to_dtype(ranks, _dtype.int64)
    values = O.gather(srt, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = F.full_like(ranks, 0.5) if interpolation == "midpoint" else \
            O.sub(ranks, below)
        above = O.to_dtype(O.ceil(ranks), _dtype.int64)
        values = values.lerp(O.gather(srt, -1, above), weights)
    if scalar_q:
        return O.reshape(O.squeeze(values, [-1]), base)
    return O.reshape(values.movedim(-1, 0), [nq] + base)


def quantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Any = None) -> Tensor:
    """The ``q``-th quantiles of ``input`` (every element, or along ``dim``): ``q`` a number or
    a 0-d/1-D tensor of ``input``'s dtype in ``[0, 1]`` (a 1-D ``q`` puts its quantiles in a
    new first dim). ``interpolation`` between the two nearest sorted values: "linear",
    "lower", "higher", "midpoint", "nearest" (rounding half to even). A slice holding NaN gives
    NaN. float32/float64 only; differentiable (sort, gather, lerp: torch's composition).
    RuntimeError for an empty input, another dtype, ``q`` out of range or of another dtype, an
    unknown interpolation (torch's messages). Same as ``torch.quantile``."""
    if out is not None:
        return _write_out("quantile", out, quantile, (input, q, dim, keepdim),
                          {"interpolation": interpolation}, "exact")
    return _quantile("quantile", input, q, dim, keepdim, interpolation)


def nanquantile(input: Tensor, q: float | Tensor, dim: int | None = None,
                keepdim: bool = False, *, interpolation: str = "linear",
                out: Any = None) -> Tensor:
    """``quantile`` ignoring NaN: the quantiles of each slice's other values (NaN only for a
    slice of NaN only). Same as ``torch.nanquantile``."""
    if out is not None:
        return _write_out("nanquantile", out, nanquantile, (input, q, dim, keepdim),
                          {"interpolation": interpolation}, "exact")
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation)


def gradient(input: Tensor, *, spacing: Any = 1, dim: int | Sequence[int] | None = None,
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """The derivative of ``input`` along each dim (or ``dim``), estimated by second-order
    central differences inside and first- or second-order (``edge_order``) one-sided ones at
    the ends, as a tuple of tensors of ``input``'s shape. ``spacing``: a number (uniform step
    for every dim), a sequence of numbers (one per dim) or of 1-D coordinate tensors (one per
    dim: unevenly spaced samples). Integers give the default float dtype. Differentiable.
    RuntimeError for uint8 input, a dim shorter than ``edge_order + 1``, ``edge_order`` other
    than 1 or 2, a spacing list of the wrong length (torch's messages). 
    Same as ``torch.gradient``."""
    _input("gradient", input)
    if input.dtype is _dtype.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    dims = None if dim is None else ([dim] if isinstance(dim, _int) else list(dim))
    nd = input.ndim
    if isinstance(spacing, (list, tuple)):
        sp = list(spacing)
        if dims is None and len(sp) != nd:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to 'self.dim() = {nd}', since dim "
                               f"argument was not given, but got a list of length {len(sp)}")
        if dims is not None and len(sp) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(sp)} and a dim argument "
                               f"of length {len(dims)}.")
    elif is_tensor(spacing):
        raise TypeError("gradient(): spacing must be a number or a sequence of numbers or of "
                        "1-D tensors, not a Tensor (as torch); pass (t,) for one dim")
    else:
        sp = [spacing] * (nd if dims is None else len(dims))
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(nd)) if dims is None else [wrap_dim(d, nd, "gradient(): ") for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")

    def sl(d, a, b=None):
        n = input.shape[d]
        a = a + n if a < 0 else a
        b = n if b is None else (b + n if b < 0 else b)
        return O.narrow(input, d, a, b - a)

    out = []
    for d, h in zip(dims, sp):
        if is_tensor(h):
            if h.ndim != 1:
                raise RuntimeError("torch.gradient expected each tensor to be on the same "
                                   "device and 1-D coordinates")
            shape = [1] * nd
            shape[d] = -1
            dx = O.sub(O.narrow(h, 0, 1, h.shape[0] - 1), O.narrow(h, 0, 0, h.shape[0] - 1))
            k = dx.shape[0]
            dx1, dx2 = O.narrow(dx, 0, 0, k - 1), O.narrow(dx, 0, 1, k - 1)
            a = O.reshape(O.div(O.neg(dx2), O.mul(dx1, O.add(dx1, dx2))), shape)
            b = O.reshape(O.div(O.sub(dx2, dx1), O.mul(dx1, dx2)), shape)
            c = O.reshape(O.div(dx1, O.mul(dx2, O.add(dx1, dx2))), shape)
            center = O.add(O.add(O.mul(a, sl(d, 0, -2)), O.mul(b, sl(d, 1, -1))),
                           O.mul(c, sl(d, 2)))
            d0, d1 = O.select(dx, 0, 0), O.select(dx, 0, 1 if k > 1 else 0)
            dl, dl2 = O.select(dx, 0, k - 1), O.select(dx, 0, k - 2 if k > 1 else 0)
            if edge_order == 1:
                pre = O.div(O.sub(sl(d, 1, 2), sl(d, 0, 1)), d0)
                app = O.div(O.sub(sl(d, -1), sl(d, -2, -1)), dl)
            else:
                a0 = O.div(O.neg(O.add(O.mul(d0, 2.0), d1)), O.mul(d0, O.add(d0, d1)))
                b0 = O.div(O.add(d0, d1), O.mul(d0, d1))
                c0 = O.div(O.neg(d0), O.mul(d1, O.add(d0, d1)))
                pre = O.add(O.add(O.mul(a0, sl(d, 0, 1)), O.mul(b0, sl(d, 1, 2))),
                            O.mul(c0, sl(d, 2, 3)))
                a1 = O.div(dl, O.mul(dl2, O.add(dl, dl2)))
                b1 = O.div(O.neg(O.add(dl, dl2)), O.mul(dl, dl2))
                c1 = O.div(O.add(O.mul(dl, 2), dl2), O.mul(dl, O.add(dl, dl2)))
                app = O.add(O.add(O.mul(a1, sl(d, -3, -2)), O.mul(b1, sl(d, -2, -1))),
                            O.mul(c1, sl(d, -1)))
        else:
            center = O.div(O.div(O.sub(sl(d, 2), sl(d, 0, -2)), h), 2)
            if edge_order == 1:
                pre = O.div(O.sub(sl(d, 1, 2), sl(d, 0, 1)), h)
                app = O.div(O.sub(sl(d, -1), sl(d, -2, -1)), h)
            else:
                pre = O.div(O.sub(O.add(O.mul(sl(d, 0, 1), -1.5), O.mul(sl(d, 1, 2), 2)),
                                  O.mul(sl(d, 2, 3), 0.5)), h)
                app = O.div(O.add(O.add(O.mul(sl(d, -3, -2), 0.5), O.mul(sl(d, -2, -1), -2)),
                                  O.mul(sl(d, -1), 1.5)), h)
        out.append(O.cat([pre, center, app], d))
    return tuple(out)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float, *, out: Any = None) -> Tensor:
    """``input`` with each sub-tensor along ``dim`` (``input.select(dim, i)``) whose ``p``-norm
    exceeds ``maxnorm`` scaled down to norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, torch's
    factor); the others unchanged. Floating inputs of at least 2 dims; float16/bfloat16 norms
    accumulated in float32. Differentiable (through the norm too, as torch's formula).
    RuntimeError for ``p <= 0``, ``maxnorm < 0``, fewer than 2 dims, an integer input (torch's
    messages). Same as ``torch.renorm``."""
    if out is not None:
        return _write_out("renorm", out, renorm, (input, p, dim, maxnorm), {}, "exact")
    _input("renorm", input)
    if isinstance(p, complex) or not float(p) > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if float(maxnorm) < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm)}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype.scalar_type_name(input.dtype)}")
    d = wrap_dim(dim, input.ndim, "renorm(): ")
    others = [i for i in range(input.ndim) if i != d]
    low = input.dtype in (_dtype.float16, _dtype.bfloat16)
    norm = input.norm(float(p), others, True, dtype=_dtype.float32 if low else None)
    factor = O.where(O.gt(norm, float(maxnorm)), O.rdiv(O.add(norm, 1e-7), float(maxnorm)), 1.0)
    if low:
        factor = O.to_dtype(factor, input.dtype)
    return O.mul(input, factor)
