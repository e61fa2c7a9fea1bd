"""``tensor[index]`` and ``tensor[index] = value`` (torch semantics): ``Tensor.__getitem__`` and
``__setitem__``, composed of built-in ops.

Basic indices (ints, slices, ``None``, ``...``) decompose into the view ops ``select``,
``slice`` and ``unsqueeze``, so results alias the input. One integer tensor/list index gathers
along its dimension (``index``; a copy), and a bool mask selects elements (``masked_select``;
a copy whose size depends on the data: its fake rule gives a data-dependent size, as nonzero's,
which ``tensorplay.compile`` captures). Lists and arrays used as indices
become tensors through ``tensorplay.tensor`` (``_factories``), which is why this sits above the
ops and the factories rather than with the index ops in ``_ops/indexing``.
"""

from __future__ import annotations

from . import _dtype
from ._dispatch import check_overlap as _check_overlap
from ._factories import tensor as _tensor
from ._ops import ops as O
from ._ops._shapes import broadcast_shapes, check_fill, is_tensor
from ._kernels.indexing import check_index_dtype
from ._ops.indexing import (broadcasts_to, check_index_put_dtype, check_index_write,
                            check_no_overlap, check_value_shape, dispatches_to_masked_fill,
                            index_extremes)
from ._tensor_base import check_partial_overlap as _check_partial_overlap
from ._tensor_base import TensorBase, shared_storage


_EXPANDED_PUT = ("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor "
                 "before performing this operation. This also applies to advanced indexing e.g. "
                 "tensor[indices] = tensor")
_EXPANDED_MASKED_FILL = ("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the "
                         "tensor before performing this operation. This also applies to advanced "
                         "indexing e.g. tensor[mask] = scalar")


def expanded(t) -> bool:
    """Whether ``t`` has a dim of stride 0 and size > 1 (an ``expand``: elements sharing memory)."""
    return 0 in t.stride_tuple and any(
        st == 0 and n > 1 for n, st in zip(t.raw_shape, t.stride_tuple))


def warn_expanded_put(stacklevel=3, op="index_put_"):
    """torch's deprecation warning of an ``index_put_`` (``x[idx] = v``), or of ``op``
    ``"masked_fill_"`` or ``"index_fill_"``, into an expanded tensor."""
    import warnings
    msg = _EXPANDED_PUT if op == "index_put_" else _EXPANDED_MASKED_FILL.replace(
        "masked_fill_", op)     # (index_fill_: torch's same words)
    warnings.warn(msg, UserWarning, stacklevel=stacklevel + 1)


def index_put_accumulate_expanded(x, indices, values, accumulated):
    """``x.index_put_(indices, values, accumulate=True)`` into an expanded ``x`` (torch's: a
    warning, then each value is added into the memory its position shares, so ``zeros(1)
    .expand(3)`` indexed at 0 and 2 gets both values). The sums per position (``accumulated``,
    into zeros), summed over the expanded dims, are added into ``x`` narrowed to size 1 there
    (the same memory, no element shared). Returns ``x``."""
    warn_expanded_put(3)
    shape = list(x.raw_shape)
    delta = accumulated(O.full(shape, 0, dtype=x.dtype, device=x.device), indices, values)
    dims = [d for d, (n, st) in enumerate(zip(shape, x.stride_tuple)) if st == 0 and n > 1]
    delta = delta.sum(dims, keepdim=True, dtype=x.dtype)
    u = x
    for d in dims:
        u = O.slice(u, d, 0, 1, 1)
    u.add_(delta)
    return x


def byte_mask(t, stacklevel=5):
    """A uint8 index as the bool mask torch reads it as (``t != 0``; deprecated there, with a
    UserWarning): ``x[tensor([1, 0, 1], dtype=uint8)]`` is ``x[[0, 2]]``, not rows 1, 0, 1."""
    import warnings
    if t.ndim:     # (torch reads a 0-dim one as a Python bool, without the warning)
        warnings.warn("indexing with dtype tensorplay.uint8 is now deprecated, please use a dtype "
                      "tensorplay.bool instead (mask.bool()).", UserWarning, stacklevel=stacklevel)
    return O.ne(t, 0)


def refuse_byte_fill(indices, value, api):
    """torch's refusal of a one-element write through a single uint8 mask (``x[m] = 1.0``,
    ``index_put_((m,), tensor(1.))``): it writes those with ``masked_fill_``, which takes bool
    masks only. ``indices``: the index entries; a RuntimeError naming the fix."""
    tensors = [i for i in indices if _is_tensor(i) or isinstance(i, (list, tuple)) or
               (getattr(i, "ndim", 0) and hasattr(i, "__array__"))]
    if len(tensors) != 1:
        return
    m = tensors[0]
    dt = getattr(m, "dtype", None)
    if not (dt is _dtype.uint8 or getattr(dt, "name", None) == "uint8" and not _is_tensor(m)):
        return
    if _is_tensor(value) and value.numel() != 1:
        return
    raise RuntimeError(f"{api}: a uint8 mask with a one-element value is refused, as torch's "
                       f"masked_fill_ only supports boolean masks (got mask with dtype uint8); "
                       f"use a bool mask: mask.bool()")


def _is_tensor(x):
    return isinstance(x, TensorBase)


def _normalize(index):
    if not isinstance(index, tuple):
        index = (index,)
    return index


def _int64_values(seq):
    """``seq`` (nested lists/tuples of Python numbers) with each float truncated toward zero as
    torch's int64 conversion does; a NaN, an infinity or a value beyond int64 is torch's
    RuntimeError."""
    out = []
    for v in seq:
        if isinstance(v, (list, tuple)):
            out.append(_int64_values(v))
        elif isinstance(v, float):
            if not -9.223372036854775808e18 <= v < 9.223372036854775808e18:    # (NaN too)
                raise RuntimeError("value cannot be converted to type int64 without overflow")
            out.append(int(v))
        else:
            out.append(v)
    return out


def _holds_tensor(seq) -> bool:
    return any(_is_tensor(v) or isinstance(v, (list, tuple)) and _holds_tensor(v) for v in seq)


def sequence_index(seq, device):
    """A list, tuple or array (NumPy's or another library's) used as an index, as torch's index
    tensor (its ``indexing_tensor_from_data``): bool and uint8 data keep their dtype (masks),
    any other becomes int64 -- so ``[]`` is an empty int64 index (``x[[]]`` has shape ``(0,
    ...)``), not the float32 of ``tensor([])``, and floats truncate toward zero (``x[[1.7]]`` is
    ``x[[1]]``; NaN, an infinity or a value beyond int64 is a RuntimeError). A list holding
    tensors keeps the dtype they give (a float tensor in it stays refused as an index)."""
    t = _tensor(seq, device=device)
    if t.raw_dtype.is_floating_point:
        if isinstance(seq, (list, tuple)):
            if not _holds_tensor(seq):
                t = _tensor(_int64_values(seq), dtype=_dtype.int64, device=device)
        else:   # an array of floats: through its values, as a list's (torch reads it so too)
            t = _tensor(_int64_values(seq.tolist()), dtype=_dtype.int64, device=device)
    return t


def _mask_mismatch(x, dim, mask):
    """torch's IndexError for bool ``mask`` indexing ``x`` (the tensor after the basic indices)
    from dim ``dim`` whose shape differs there: the mask's first mismatching dim ``j`` and
    ``x``'s dim ``dim + j``."""
    ms, xs = list(mask.shape), list(x.shape)
    j = next((j for j, n in enumerate(ms) if dim + j >= len(xs) or xs[dim + j] != n), 0)
    return IndexError(f"The shape of the mask {ms} at index {j} does not match the shape of "
                      f"the indexed tensor {xs} at index {dim + j}")


def _dims_consumed(i):
    """How many dims of the indexed tensor one index entry takes: a bool mask (tensor or
    array) its own ndim, as torch (so ``x[..., mask]`` with a 2-D mask leaves ``x.ndim - 2`` dims
    to the ellipsis), anything else one."""
    if _is_tensor(i):
        return i.ndim if i.dtype is _dtype.bool else 1
    if getattr(i, "ndim", 0) and hasattr(i, "__array__") and \
            getattr(getattr(i, "dtype", None), "kind", None) == "b":
        return i.ndim
    return 1


def _split(x, index, api="index"):
    """Apply the basic part of ``index`` as views; return (view, [(dim, tensor_index)]).

    torch's rules beyond NumPy's: a Python bool or a 0-d bool tensor inserts a dim (as ``None``)
    and indexes it with ``[0]`` when true, with nothing when false (an advanced index: it takes
    part in the broadcasting and placement of the others); every ``...`` moves on by the dims
    that the other entries leave, so a second one is accepted and moves past the end (``x[...,
    0, ...]`` is ``x[..., 0]``; an entry after two of them indexes a dim that does not exist)."""
    index = _normalize(index)
    consumed = sum(_dims_consumed(i) for i in index if i is not None and i is not Ellipsis and
                   not (isinstance(i, bool)))
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    out = x
    dim = 0
    advanced = []
    ell = x.ndim - consumed     # the dims each Ellipsis moves on by
    for i in index:
        if i is Ellipsis:
            dim += ell
        elif i is None:
            out = O.unsqueeze(out, dim)
            dim += 1
        elif isinstance(i, bool):
            out = O.unsqueeze(out, dim)
            advanced.append((dim, _tensor([0] if i else [], dtype=_dtype.int64,
                                          device=x.device)))
            dim += 1
        elif getattr(i, "ndim", 0) and not _is_tensor(i) and hasattr(i, "__array__"):
            # a NumPy (or other array-like) index array: as the tensor of its values
            t = sequence_index(i, x.device)
            if t.dtype is _dtype.uint8:
                t = byte_mask(t)
            elif t.dtype is not _dtype.bool:
                check_index_dtype(api, t.dtype)
            advanced.append((dim, t))
            dim += t.ndim if t.dtype is _dtype.bool else 1
        elif isinstance(i, int) or (hasattr(i, "__index__") and not _is_tensor(i)
                                    and not isinstance(i, (list, tuple))):
            out = O.select(out, dim, int(i))
        elif isinstance(i, slice):
            if i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
            out = O.slice(out, dim, i.start, i.stop, i.step or 1)
            dim += 1
        elif _is_tensor(i) or isinstance(i, (list, tuple)):
            t = i if _is_tensor(i) else sequence_index(i, x.device)
            if t.raw_dtype is _dtype.uint8:
                t = byte_mask(t)      # torch's (deprecated) byte mask
            if t.dtype is _dtype.bool:
                if not t.ndim:
                    # a 0-d bool tensor as a Python bool (its value not read): a mask of the
                    # inserted size-1 dim
                    out = O.unsqueeze(out, dim)
                    t = O.reshape(t, [1])
                advanced.append((dim, t))
                dim += t.ndim
            elif t.ndim == 0 and not t.dtype.is_floating_point and t.native is not None:
                out = O.select(out, dim, int(t.item()))
            else:
                if t.raw_dtype is not _dtype.int64:
                    check_index_dtype(api, t.raw_dtype)     # int32 too (IndexError otherwise)
                advanced.append((dim, t))
                dim += 1
        else:
            raise IndexError(f"unsupported index of type {type(i).__name__}: {i!r}")
    return out, advanced


def _basic_only(index, ndim) -> bool:
    """``index`` (a tuple) holds only ints, ``None`` and slices with no or a positive int step,
    at most ``ndim`` of them not ``None``: ``_split`` would apply it as views, entry by entry,
    with no check of its own that could fail first."""
    n = 0
    for i in index:
        c = i.__class__
        if c is int:
            n += 1
        elif c is slice:
            st = i.step
            if st is not None and (st.__class__ is not int or st <= 0):
                return False
            n += 1
        elif i is not None:
            return False
    return n <= ndim


def _basic(x, index):
    """``x[index]`` for an index ``_basic_only`` accepted: the views ``_split`` makes, in its
    order (select, slice, unsqueeze), so the same results and errors; a full slice (``:``) is
    no op, as torch skips it (``applySlice``), unless nothing else is applied (None then: the
    general path's slices)."""
    out = x
    dim = 0
    for i in index:
        if i.__class__ is int:
            out = O.select(out, dim, i)
        elif i is None:
            out = O.unsqueeze(out, dim)
            dim += 1
        else:
            if i.start is not None or i.stop is not None or i.step not in (None, 1):
                out = O.slice(out, dim, i.start, i.stop, i.step or 1)
            dim += 1
    return out if out is not x else None


def getitem(x, index):
    c = index.__class__
    # the common basic indices without the general machinery (the same ops in the same order,
    # so the same results and errors: select's IndexError for an int out of range)
    if c is int:
        if len(x.raw_shape):
            return O.select(x, 0, index)
    elif c is slice:
        step = index.step
        if len(x.raw_shape) and (step is None or step.__class__ is int and step > 0):
            return O.slice(x, 0, index.start, index.stop, step or 1)
    elif index is None:
        return O.unsqueeze(x, 0)
    elif c is tuple and _basic_only(index, len(x.raw_shape)):
        out = _basic(x, index)
        if out is not None:
            return out
    elif isinstance(index, TensorBase) and index.raw_dtype is _dtype.int64 and \
            len(index.raw_shape) and len(x.raw_shape):
        # x[i] with one int64 index tensor (a lookup, an embedding's): what _split and the
        # end of this function do for it, without them
        return O.index(x, 0, index)
    out, advanced = _split(x, index)
    if not advanced:
        # ``x[...]``, ``x[()]``: nothing applied, yet a new view of ``x`` (torch's alias: not
        # ``x`` itself; shares its storage and version, its history a view's)
        return out if out is not x else O.expand(x, list(x.raw_shape))
    if len(advanced) > 1 or (advanced[0][1].dtype is _dtype.bool and
                             not (advanced[0][0] == 0 and advanced[0][1].ndim == out.ndim)):
        return _advanced(out, advanced)
    dim, idx = advanced[0]
    if idx.dtype is _dtype.bool:
        if dim != 0 or idx.ndim != out.ndim:
            out = O.reshape(out, list(out.shape[:dim]) + [-1] + list(out.shape[dim + idx.ndim:])) \
                if idx.ndim == out.ndim - dim else out
        if idx.ndim == out.ndim and dim == 0:
            if idx.raw_shape != out.raw_shape:
                # (masked_select would broadcast them, or fail with no word about the mask)
                raise _mask_mismatch(out, 0, idx)
            return O.masked_select(out, idx)
        raise IndexError("bool mask indices must cover the leading dimensions of the tensor")
    return O.index(out, dim, idx)


def _linear_index(x, advanced):
    """The advanced indices of ``x`` as one index into its indexed dims flattened together:
    ``(dims, rest, bshape, linear, n)``: the indexed dims (ascending), the other dims, the
    broadcast shape of the index tensors, the int64 index (of shape ``bshape``) into
    ``permute(x, dims + rest)`` with ``dims`` merged into one of size ``n``. Bool masks count as
    their nonzero positions (torch's rule); out-of-range indices raise ``IndexError`` (the first
    indexed dim holding one), unless the result has no elements: nothing is read then, and
    nothing is checked (torch's rule)."""
    pairs = []
    for dim, t in advanced:
        if t.dtype is _dtype.bool:      # a k-dim mask is k index tensors (its nonzero positions)
            if tuple(t.shape) != tuple(x.shape[dim:dim + t.ndim]):
                raise _mask_mismatch(x, dim, t)
            nz = O.nonzero(t)
            pairs += [(dim + j, O.select(nz, 1, j)) for j in range(t.ndim)]
        else:
            pairs.append((dim, t))
    dims = [d for d, _ in pairs]
    idxs = [t for _, t in pairs]
    try:
        bshape = broadcast_shapes(*[tuple(t.shape) for t in idxs])
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join(str(list(t.shape)) for t in idxs)) from None
    rest = [d for d in range(x.ndim) if d not in dims]
    # torch's rule: indices are checked only when the result (the broadcast index shape and the
    # dims left) has elements -- an index tensor's own size says nothing (``x[tensor([5]),
    # tensor([])]`` reads nothing); the dims in order, so the first bad one is named
    if 0 not in bshape and all(x.shape[d] for d in rest):
        # every index tensor's extremes in one read of the device (index_extremes: each read
        # waits for the queued work on a GPU)
        checked = [(d, t) for d, t in pairs if t.native is not None and t.numel()]
        if checked:
            ends = index_extremes([t for _, t in checked])
            for (d, _), (lo, hi) in zip(checked, ends):
                n = x.shape[d]
                if lo < -n or hi >= n:
                    bad = hi if hi >= n else lo
                    raise IndexError(f"index {bad} is out of bounds for dimension {d} with "
                                     f"size {n}")
    linear = None
    stride = 1
    check_in_graph = 0 not in bshape and all(x.shape[d] for d in rest)
    for d, t in reversed(pairs):
        n = x.shape[d]
        if t.raw_dtype is _dtype.int32:
            t = O.to_dtype(t, _dtype.int64)     # (the flattened index may pass 2**31)
        if t.native is None and check_in_graph and t.numel():
            # a capture (fake tensors): the check above cannot read values, and the flattened
            # index alone lets x[0, -4] of a 4x3 x read x[3, 2]; the wrap is an index op instead,
            # whose kernel checks the range (named at dim d) each time the graph runs
            ar = O.reshape(O.arange(0, n, 1, dtype=_dtype.int64, device=t.device),
                           [1] * d + [n])
            t = O.reshape(O.index(ar, d, t), list(t.shape))
        else:
            t = O.where(O.lt(t, 0), O.add(t, n), t)
        term = O.mul(t, stride) if stride != 1 else t
        linear = term if linear is None else O.add(term, linear)
        stride *= n
    if tuple(linear.shape) != bshape:
        linear = O.expand(linear, list(bshape))
    return dims, rest, bshape, linear, stride


def _adjacent(dims):
    """torch's placement rule: the result dims of adjacent indexed dims take their place (at
    ``dims[0]``); otherwise they go first."""
    return dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0


def _advanced(x, advanced):
    """``x[...]`` with several index tensors (and bool masks), torch's rules: the index tensors
    broadcast together; their result dims replace the indexed dims where those are adjacent and
    go first otherwise (ints were already applied as ``select``: torch's rule, which differs
    from NumPy's). Composed of ``permute``, ``reshape`` and one ``index`` on the flattened
    indexed dims, so autograd and fake shapes come from those ops."""
    dims, rest, bshape, linear, n = _linear_index(x, advanced)
    flat = O.permute(x, dims + rest) if dims + rest != list(range(x.ndim)) else x
    flat = O.reshape(flat, [n] + [x.shape[d] for d in rest])
    out = O.index(flat, 0, linear)
    nb, first = len(bshape), _adjacent(dims)
    if first:
        out = O.permute(out, list(range(nb, nb + first)) + list(range(nb)) +
                        list(range(nb + first, out.ndim)))
    return out


def _advanced_put(x, advanced, value):
    """``x[...] = value`` with several index tensors: ``index_put_`` on the flattened indexed
    dims (a view of ``x`` where the strides allow; else a contiguous copy written back with
    ``copy_``). ``value`` broadcasts to the shape ``x[...]`` would have."""
    if 0 in x.stride_tuple and expanded(x):
        return _advanced_put_expanded(x, advanced, value)
    dims, rest, bshape, linear, n = _linear_index(x, advanced)
    order = dims + rest
    p = O.permute(x, order) if order != list(range(x.ndim)) else x
    flat_shape = [n] + [x.shape[d] for d in rest]
    try:
        tmp, flat = None, O.view(p, flat_shape)
    except RuntimeError:
        tmp = p.contiguous()
        flat = O.view(tmp, flat_shape)
    if is_tensor(value):
        nb, first = len(bshape), _adjacent(dims)
        rshape = list(bshape) + [x.shape[d] for d in rest]
        if first:     # the value is laid out like x[...]: bring the index dims to the front
            rshape = rshape[nb:nb + first] + rshape[:nb] + rshape[nb + first:]
        check_value_shape(value, rshape)      # (torch's words; expand's otherwise)
        value = O.expand(value, rshape) if list(value.shape) != rshape else value
        if first:
            value = O.permute(value, list(range(first, first + nb)) + list(range(first)) +
                              list(range(first + nb, len(rshape))))
    O.index_put_(flat, 0, linear, value)
    if tmp is not None:
        O.copy_(p, tmp)


def _advanced_put_expanded(x, advanced, value):
    """``_advanced_put`` into an expanded ``x`` (dims of stride 0, size > 1), as torch's
    ``index_put_`` (after its deprecation warning): each element is written into the memory its
    position shares, so ``ones(1, 3).expand(2, 3)[[0], [1]] = 5`` shows 5 in both rows. The
    put runs on a contiguous copy, with a mask of the positions written; along each expanded
    dim the last written position's value (or the old one where none was written) goes into
    ``x`` narrowed to size 1 there (the same memory, no element shared)."""
    tmp = x.contiguous()
    _advanced_put(tmp, advanced, value)
    mask = O.full(list(x.raw_shape), False, dtype=_dtype.bool, device=x.device)
    _advanced_put(mask, advanced, True)
    u = x
    for d, (n, st) in enumerate(zip(x.raw_shape, x.stride_tuple)):
        if st == 0 and n > 1:
            # (1 + the last written position along d, 0 where none: then position 0, the old)
            pos = O.arange(1, n + 1, 1, dtype=_dtype.int64, device=x.device)
            shape = [1] * x.ndim
            shape[d] = n
            last = O.amax(O.mul(O.to_dtype(mask, pos.dtype), O.view(pos, shape)), [d], True)
            at = O.sub(last, O.to_dtype(O.gt(last, 0), last.dtype))
            tmp = O.gather(tmp, d, at)
            mask = O.any(mask, [d], True)
            u = O.slice(u, d, 0, 1, 1)
    O.copy_(u, tmp)


def _strip_leading_ones(value):
    """Tensor ``value`` (its first dim of size 1) without its leading size-1 dims (a view), as
    torch's setitem writes it (``slicePrefix1sSize``): ``x[0] = ones(1, 1, 3)`` writes a row of
    ``x``, ``zeros(())[...] = ones(1)`` the one element."""
    shape = value.raw_shape
    k = 1
    while k < len(shape) and shape[k] == 1:
        k += 1
    return O.view(value, list(shape[k:]))


def _copy_to_value(value, out):
    """The value torch's setitem copies onto ``out``, a basic-indexing view of another shape
    (its ``copy_to``): a 0-dim value on the cpu is a fill (read first: when it shares ``out``'s
    memory, a copy of its one element, so ``x[0:1] = x[0]`` overlaps nothing), any other is
    expanded to ``out``'s shape first -- so the overlap rule of ``copy_`` compares the two as
    laid out, and ``x[None] = x`` (the same memory walked the same way) is a no-op. A value
    that does not broadcast is left to ``copy_``'s own error."""
    vs, shape = value.raw_shape, out.raw_shape
    if not vs and value.raw_device.type == "cpu":
        if value.storage_ref is out.storage_ref or \
                shared_storage(value.storage_ref) is shared_storage(out.storage_ref):
            return O.clone(value)
        return value
    if not broadcasts_to(vs, shape):
        return value
    return O.expand(value, list(shape))


def _refuse_more_dims(value, target):
    """torch's setitem error for a value (leading size-1 dims stripped) of more dims than the
    indexed region: its ``expand`` refuses it (``copy_`` would name the broadcast shape)."""
    raise RuntimeError(
        f"expand({value.dtype}{{{list(value.shape)}}}, size={list(target)}): the number of sizes "
        f"provided ({len(target)}) must be greater or equal to the number of dimensions in the "
        f"tensor ({value.ndim})")


def _has_0d_bool(index) -> bool:
    """Whether ``index`` has a 0-dim bool tensor: torch indexes with it as with a Python bool
    (an int64 index tensor, ``[0]`` or ``[]``), so its write follows ``index_put_``'s rules,
    not ``masked_fill_``'s (``_split`` makes it a mask of the inserted size-1 dim)."""
    return any(_is_tensor(i) and i.raw_dtype is _dtype.bool and not i.raw_shape
               for i in _normalize(index))


def _put_checks(out, advanced, value, bool_0d=False):
    """torch's ``index_put_`` rules for ``out[advanced] = value``, before anything is written
    (torch applies them to the indexed view, ``out``): ``dispatches_to_masked_fill`` -- then
    only a mask partially overlapping ``out`` is refused --, else ``check_index_write`` and
    ``check_index_put_dtype``. The common one-index writes inline: each tensor's storage is
    looked at closer only when it is ``out``'s or has its root (fake tensors: None, so always).
    ``bool_0d``: the index has a 0-dim bool tensor, torch's int64 index (``_has_0d_bool``):
    ``index_put_``'s checks of the value, never the masked_fill_ case; the index, a new tensor
    in torch, is not checked for overlap (``x[x] = False`` of a 0-dim bool ``x`` is allowed)."""
    so = out.storage_ref
    root = so.root
    vt = isinstance(value, TensorBase)
    if len(advanced) == 1 or bool_0d:
        if not bool_0d:             # (a 0-dim bool index: the value's checks only)
            idx = advanced[0][1]
            si = idx.storage_ref
            if idx.raw_dtype is _dtype.bool and (
                    not vt or (value.numel() == 1 and value.raw_device.type == "cpu" and
                               idx.raw_device == out.raw_device)):
                # masked_fill_'s rule (x[x] = 0 is allowed: a full overlap)
                if si is so or si.root is root:
                    _check_partial_overlap(out, idx)
                return
            if si is so or si.root is root:
                check_no_overlap(out, idx)
        if vt:
            sv = value.storage_ref
            if sv is so or sv.root is root:
                check_no_overlap(out, value)
            if value.raw_dtype is not out.raw_dtype:
                check_index_put_dtype(out, value)
        return
    idxs = [i for _, i in advanced]
    if dispatches_to_masked_fill(idxs, value, out.raw_device):
        m = next(i for i in idxs if i is not None)
        if m.storage_ref is so or m.storage_ref.root is root:
            _check_partial_overlap(out, m)
        return
    check_index_write(out, idxs, value)
    check_index_put_dtype(out, value)


def setitem(x, index, value, checks=True):
    """``x[index] = value`` (torch's rules): a tensor ``value`` loses its leading size-1 dims,
    then broadcasts to the shape of ``x[index]`` (``RuntimeError`` otherwise, nothing written);
    a full-shape bool mask with a value of 1 or more dims takes one value per True element.
    ``x[False] = value`` writes nothing and checks nothing (torch returns at once). Into an
    expanded ``x`` (stride 0, size > 1), as torch: ``x[idx] = v`` / ``x[mask] = v`` write, a
    region that is still expanded (``x[:] = v``) is a ``RuntimeError``.

    An index with tensors (advanced indexing) writes through torch's ``index_put_``, with its
    rules (same as ``torch.Tensor.index_put_``): a tensor ``value`` must have ``x``'s dtype and
    must not share memory with the indexed ``x``, nor may any index tensor (``RuntimeError``,
    torch's words; ``x[x] = v``, ``x[i] = x[:2]``), except in torch's ``masked_fill_`` case --
    one bool mask with a Python number or a one-element cpu value: that value is cast and only
    a mask partially overlapping ``x`` is refused. Basic indices (ints, slices, ``None``,
    ``...``, ``True``) copy (``copy_``: a value of another dtype is cast, as torch).
    ``checks=False``: ``index_put_``'s own call, its checks already made."""
    if index is False:
        return
    if index is True:
        # torch's setitem takes a bare True (as None) as a view with a new leading dim, written
        # by copy_ (not index_put_: a value of another dtype is cast)
        index = None
    if isinstance(value, (int, float)):
        # a number follows fill_'s rule whichever write takes it (torch's): RuntimeError when
        # the dtype cannot hold it, a negative int into uint8 wraps (NumPy would raise)
        value = check_fill("x[index] = value", value, x.dtype)
    c = index.__class__
    if (c is tuple or c is list or _is_tensor(index) and index.raw_dtype is _dtype.uint8) and \
            (not _is_tensor(value) or value.numel() == 1):
        refuse_byte_fill(_normalize(index), value, "x[index] = value")
    out, advanced = _split(x, index, "index_put_")
    if _is_tensor(value):
        vs = value.raw_shape
        if vs and vs[0] == 1:
            value = _strip_leading_ones(value)
        if not advanced:
            if len(value.raw_shape) > len(out.raw_shape):
                _refuse_more_dims(value, out.raw_shape)
            if value.raw_shape != out.raw_shape:
                value = _copy_to_value(value, out)
            O.copy_(out, value)
            return
    elif not advanced:
        # torch writes a number through copy_ here, which refuses an expanded region (fill_
        # allows it): x.expand(3)[:] = 1 is a RuntimeError, x.expand(3)[0] = 1 is not
        if 0 in out.stride_tuple:
            _check_overlap(O.copy_, 0, out)
        O.fill_(out, value)
        return
    if 0 in out.stride_tuple and expanded(out):
        warn_expanded_put(3)     # (the caller of x[idx] = v, or of index_put_)
    if checks:
        _put_checks(out, advanced, value, _has_0d_bool(index) if any(
            i.raw_dtype is _dtype.bool for _, i in advanced) else False)
    # a full-shape bool mask with a number or a 0-d value is masked_fill_ (where-like); with a
    # value of 1 or more dims it takes one value per True element, in order, as torch's
    # x[mask] = v (index_put_ with the mask's positions): the integer-index path
    if len(advanced) > 1 or (advanced[0][1].dtype is _dtype.bool and
                             not (advanced[0][0] == 0 and advanced[0][1].ndim == out.ndim and
                                  not (_is_tensor(value) and value.ndim))):
        _advanced_put(out, advanced, value)
        return
    dim, idx = advanced[0]
    if idx.dtype is _dtype.bool:
        if dim != 0 or idx.ndim != out.ndim:
            raise IndexError("bool mask assignment needs a mask of the tensor's full shape")
        if idx.raw_shape != out.raw_shape:
            # torch's: the mask's shape is the indexed one, exactly (masked_fill_ would
            # broadcast a [1, 4] mask over a 3x4 x, or fail with no word about the mask)
            raise _mask_mismatch(out, 0, idx)
        O.masked_fill_(out, idx, value)
    else:
        O.index_put_(out, dim, idx, value)
