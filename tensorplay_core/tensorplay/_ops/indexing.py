"""The indexing ops: ``index``, ``index_add``, ``index_put_``, ``masked_select``,
``masked_fill_``, ``masked_scatter_``, ``gather``, ``scatter``/``scatter_``/``scatter_add``,
``nonzero`` -- their fake rules and backward formulas. ``tensor[index]`` and ``tensor[index] = value`` are composed of these and the
view ops in ``tensorplay._indexing``.
"""

from __future__ import annotations

from .. import _dtype
from ._define import defop, ops as O
from .._kernels._checks import check_index_add_dtypes
from .._kernels.indexing import HOST_INDEX, SMALL_INDEX, check_index_dtype
from ._shapes import broadcast_shapes, check_bool_mask, is_tensor, out_like, wrap_dim
from ._shapes import zeros_grad
from .._tensor_base import PARTIAL_OVERLAP_MSG, dense_byte_ranges, shared_storage


def check_no_overlap(out, t) -> None:
    """torch's ``assert_no_overlap(out, t)``: ``RuntimeError`` (torch's words) when tensor ``t``
    shares any element's memory with ``out``, which an index write is about to overwrite while
    it reads ``t`` (its index or its source). Unlike the in-place ops' partial-overlap rule
    (``check_partial_overlap``) a full overlap counts too: ``x.index_add_(0, i, x)``,
    ``x[x] = v``. ``t`` being ``out`` itself is refused whatever its size; otherwise, as torch,
    both must have elements and be dense and non-overlapping (``is_dense``; other layouts are
    torch's "too hard": not refused) and their byte ranges must intersect. The common call (no
    shared memory) costs four slot reads and two ``is``; fake tensors have storages too, so the
    rule holds under ``FakeTensorMode`` and ``tensorplay.compile``."""
    st, so = t.storage_ref, out.storage_ref
    # (the roots first, as the in-place ops' generated test: fake tensors have none, None is
    # None, and their storages decide)
    if st is not so and (st.root is not so.root or
                         shared_storage(st) is not shared_storage(so)):
        return
    if t is not out:
        r = dense_byte_ranges(out, t)
        if r is None or not (r[0] < r[3] and r[2] < r[1]):
            return
    raise RuntimeError(PARTIAL_OVERLAP_MSG)


def check_index_write(out, indices, value) -> None:
    """The aliasing rule of torch's ``index_put_`` (``_index_put_impl_``): ``out`` overlaps
    neither ``value`` (when a tensor) nor any index tensor (``check_no_overlap``). ``indices``:
    tensors (None entries skipped)."""
    if is_tensor(value):
        check_no_overlap(out, value)
    for i in indices:
        if i is not None:
            check_no_overlap(out, i)


def check_index_put_dtype(out, value) -> None:
    """torch's ``index_put_`` rule: a tensor ``value`` has ``out``'s dtype (RuntimeError, its
    words, otherwise; Python numbers are cast)."""
    if is_tensor(value) and value.raw_dtype is not out.raw_dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{out.raw_dtype} for the destination and {value.raw_dtype} for the "
                           f"source.")


def dispatches_to_masked_fill(indices, value, device) -> bool:
    """torch's ``canDispatchToMaskedFill``: ``index_put_`` (not accumulating) with exactly one
    bool (or uint8) index tensor, on ``out``'s ``device``, the other entries None, and a Python
    number or a one-element value tensor on cpu writes through ``masked_fill_`` instead: the
    value is read as a number (cast, whatever its dtype) and only the mask's partial overlap
    with ``out`` is refused (``masked_fill_``'s rule)."""
    if is_tensor(value) and (value.numel() != 1 or value.raw_device.type != "cpu"):
        return False
    mask = None
    for i in indices:
        if i is None:
            continue
        if mask is not None or (i.raw_dtype is not _dtype.bool and
                                i.raw_dtype is not _dtype.uint8) or i.raw_device != device:
            return False
        mask = i
    return mask is not None


def index_extremes(tensors) -> list:
    """``[(smallest, largest), ...]`` of each non-empty integer tensor of ``tensors``, as ints.
    On a device (one for all of them) with one read and no reduction there, as the kernels'
    ``extremes``: on a GPU each read waits for all the work queued before it and each
    reduction is a launch. Up to ``HOST_INDEX`` elements in all: flattened, joined (``cat``),
    copied to cpu once and reduced there; more: each one's ``amin`` and ``amax`` on the device,
    stacked, copied back together. On cpu (or across devices) each tensor is reduced where it
    is: host reads cost no wait."""
    dev = tensors[0].device
    i64 = _dtype.int64
    if dev.type != "cpu" and all(t.device == dev for t in tensors):
        if sum(t.numel() for t in tensors) > HOST_INDEX:
            ends = [e if e.dtype is i64 else O.to_dtype(e, i64)
                    for t in tensors for e in (O.amin(t, [], False), O.amax(t, [], False))]
            vals = [int(v) for v in O.stack(ends, 0).tolist()]
            return list(zip(vals[::2], vals[1::2]))
        flat = [O.reshape(t if t.dtype is i64 else O.to_dtype(t, i64), [-1]) for t in tensors]
        host = (O.cat(flat, 0) if len(flat) > 1 else flat[0]).cpu()
        out, k = [], 0
        for t in tensors:
            n = t.numel()
            part = O.slice(host, 0, k, k + n, 1)
            out.append((int(O.amin(part, [], False).item()),
                        int(O.amax(part, [], False).item())))
            k += n
        return out
    out = []
    for t in tensors:
        if t.numel() <= SMALL_INDEX:
            v = O.reshape(t, [-1]).tolist()
            out.append((min(v), max(v)))
        else:
            out.append((int(O.amin(t, [], False).item()), int(O.amax(t, [], False).item())))
    return out


def _index_meta(x, dim, index, *, api="index"):
    # api: the op this reads for (x[idx], index_select, take): its index rule (INDEX_RULES)
    check_index_dtype(api, index.dtype)
    d = wrap_dim(dim, x.ndim, "index: " if api == "index" else f"{api}(): ")
    if not x.ndim:     # a 0-dim self: one element along dim 0
        return out_like(tuple(index.shape), x.dtype, x)
    return out_like(tuple(x.shape[:d]) + tuple(index.shape) + tuple(x.shape[d + 1:]), x.dtype, x)


def _index_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[2])


def _index_bw(ctx, g):
    idx, = ctx.saved_tensors
    z = g.new_zeros(ctx.shape)
    # index took [-n, n), index_add takes [0, n) (torch's ranges): the negative ones counted
    # from the end first
    if not ctx.shape:
        # a 0-dim self (index_select's): every index read its one element
        return O.sum(g), None, None, None
    d = wrap_dim(ctx.dim, len(ctx.shape))
    n = ctx.shape[d]
    idx = O.where(O.lt(idx, 0), O.add(idx, n), idx)
    if idx.ndim != 1:
        # index_add takes a vector (torch's rule): an n-d (or 0-dim) index and its gradient's
        # dims flattened to one
        m = idx.numel()
        idx = O.reshape(idx, [m])
        g = O.reshape(g, list(ctx.shape[:d]) + [m] + list(ctx.shape[d + 1:]))
    return O.index_add(z, ctx.dim, idx, g), None, None, None


defop('index(Tensor self, SymInt dim, Tensor index, *, str api="index") -> Tensor',
      meta=_index_meta, setup=_index_setup, backward=_index_bw)


def _index_add_meta(x, dim, index, source):
    check_index_dtype("index_add", index.dtype)
    check_index_add_dtypes(x.dtype, source.dtype)
    if not x.ndim:
        # a 0-dim self: one element along dim 0 (dim 0 or -1), one index, a 0-dim source (torch)
        wrap_dim(dim, 0, "index_add(): ")
        if source.ndim:
            raise RuntimeError(f"index_add(): source tensor shape must match self tensor shape, "
                               f"excluding the specified dimension. Got self.shape = [] "
                               f"source.shape = {list(source.shape)}")
        if index.numel() != 1:
            raise IndexError(f"index_add(): a 0-dim self takes one index (got "
                             f"{index.numel()})")
        return out_like(x.shape, x.dtype, x)
    # torch's shape rules, in its order: a vector index (IndexError), one index per slice of
    # the source along dim, the source's other dims self's
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {index.dtype} and size: {list(index.shape)}")
    d = wrap_dim(dim, x.ndim, "index_add(): ")
    ns = source.shape[d] if d < source.ndim else 1
    if index.numel() != ns:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({ns}), for dim: {d}")
    if source.ndim != x.ndim or any(source.shape[k] != x.shape[k] for k in range(x.ndim)
                                    if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(x.shape)} "
                           f"source.shape = {list(source.shape)}")
    return out_like(x.shape, x.dtype, x)


def _index_add_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.src_shape = tuple(inputs[3].shape)
    ctx.save_for_backward(inputs[2])


def _index_add_bw(ctx, g):
    idx, = ctx.saved_tensors
    gsrc = O.index(g, ctx.dim, idx)
    if tuple(gsrc.shape) != ctx.src_shape:
        # a 0-dim self (its source 0-dim too), or a 0-dim index (its source one slice long)
        gsrc = O.reshape(gsrc, list(ctx.src_shape))
    return g, None, None, gsrc


defop("index_add(Tensor self, SymInt dim, Tensor index, Tensor source) -> Tensor",
      meta=_index_add_meta, setup=_index_add_setup, backward=_index_add_bw)


def _masked_select_meta(x, mask):
    # the number of True elements depends on the mask's values: a data-dependent size (torch's
    # masked_select meta asks for an unbacked size too); the checks need no values
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = broadcast_shapes(tuple(x.shape), tuple(mask.shape), api="masked_select")
    from ..fake import get_ctx
    n = 1
    for s in shape:
        n *= s
    return out_like((get_ctx().new_dynamic_size(max=n),), x.dtype, x)


def _ms_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.save_for_backward(inputs[1])


def _ms_bw(ctx, g):
    mask, = ctx.saved_tensors
    z = g.new_zeros(ctx.shape)
    O.masked_scatter_(z, mask, g)
    return z, None


defop("masked_select(Tensor self, Tensor mask) -> Tensor", meta=_masked_select_meta, setup=_ms_setup,
      backward=_ms_bw)
def _meta_self(x, *rest):
    return x


def broadcasts_to(vs, shape) -> bool:
    """Whether a shape ``vs`` broadcasts to ``shape`` (fewer or as many dims, each 1 or equal
    to ``shape``'s, aligned from the right), as ``expand`` takes it."""
    return len(vs) <= len(shape) and all(a == 1 or a == b for a, b in
                                         zip(reversed(tuple(vs)), reversed(tuple(shape))))


def check_value_shape(value, shape) -> None:
    """torch's ``index_put_`` rule: a tensor ``value`` broadcasts to the indexed ``shape``
    (RuntimeError, its words, otherwise)."""
    vs = tuple(value.shape)
    if broadcasts_to(vs, shape):
        return
    raise RuntimeError(f"shape mismatch: value tensor of shape {list(vs)} cannot be broadcast to "
                       f"indexing result of shape {list(shape)}")


def _index_put_meta(x, dim, index, values, *, api="index_put_"):
    # api: the op this writes for (index_fill_, index_copy_, put_): its rule (INDEX_RULES)
    check_index_dtype(api, index.dtype)
    d = wrap_dim(dim, x.ndim, f"{api}(): ")
    if is_tensor(values):
        # (the kernel's NumPy broadcast error, re-explained here in torch's class and words)
        check_value_shape(values, tuple(index.shape) if not x.ndim else
                          tuple(x.shape[:d]) + tuple(index.shape) + tuple(x.shape[d + 1:]))
    return x


def _masked_meta(api):
    def meta(x, mask, value):
        check_bool_mask(api, mask)
        return x
    return meta


def _mask_setup(ctx, inputs, output):
    # in-place autograd entry: runs before the write
    ctx.save_for_backward(inputs[1])
    v = inputs[2]
    ctx.src = (v.shape, v.dtype) if is_tensor(v) else None


def _cast(g, dtype):
    return O.to_dtype(g, dtype) if g.dtype is not dtype and dtype.is_floating_point else g


def _masked_scatter_bw(ctx, g):
    mask, = ctx.saved_tensors
    gself = O.where(mask, 0.0, g)   # torch's grad.masked_fill(mask, 0): exact zeros
    gsrc = None
    if ctx.src is not None and ctx.needs_input_grad[2]:
        shape, dtype = ctx.src
        n = 1
        for s in shape:
            n *= s
        picked = O.masked_select(g, mask)
        pad = n - picked.shape[0]
        if pad:
            picked = O.cat([picked, g.new_zeros((pad,))], 0)
        gsrc = _cast(O.reshape(picked, list(shape)), dtype)
    return gself, None, gsrc


def _masked_fill_bw(ctx, g):
    mask, = ctx.saved_tensors
    gself = O.where(mask, 0.0, g)   # torch's grad.masked_fill(mask, 0): exact zeros
    gval = None
    if ctx.src is not None and ctx.needs_input_grad[2]:
        shape, dtype = ctx.src
        gval = _cast(O.reshape(O.sum(O.where(mask, g, 0.0)), list(shape)), dtype)
    return gself, None, gval


def _index_put_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[2])
    v = inputs[3]
    ctx.src = (v.shape, v.dtype) if is_tensor(v) else None


def _index_put_bw(ctx, g):
    idx, = ctx.saved_tensors
    gself = O.clone(g)
    O.index_put_(gself, ctx.dim, idx, 0.0)     # (negatives wrapped: index_put_'s own rule)
    gval = None
    if ctx.src is not None and ctx.needs_input_grad[3]:
        shape, dtype = ctx.src
        gval = _cast(O.index(g, ctx.dim, idx).sum_to_size(shape), dtype)
    return gself, None, None, gval, None


defop("masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)",
      meta=_masked_meta("masked_scatter_"), setup=_mask_setup, backward=_masked_scatter_bw)
defop("masked_fill_(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
      meta=_masked_meta("masked_fill_"), setup=_mask_setup, backward=_masked_fill_bw,
      scalar_ok=("value",), overlap_ok=(), partial=("mask",))
defop('index_put_(Tensor(a!) self, SymInt dim, Tensor index, Tensor values, *, '
      'str api="index_put_") -> Tensor(a!)',
      meta=_index_put_meta, setup=_index_put_setup, backward=_index_put_bw, scalar_ok=("values",),
      overlap_ok=())


# -- gather / scatter_add (torch.gather, torch.scatter_add) ----------------------------------------
def _check_gather_shapes(api, x, dim, index, src=None):
    d = wrap_dim(dim, x.ndim, f"{api}(): ")
    check_index_dtype(api, index.dtype)
    if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError(f"{api}(): Index tensor must have the same number of dimensions as "
                           f"input tensor ({index.ndim} vs {x.ndim})")
    for k in range(index.ndim):
        if k != d and index.shape[k] > x.shape[k]:
            raise RuntimeError(f"{api}(): Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(x.shape)} apart from dimension {d}")
        if src is not None and index.shape[k] > src.shape[k]:
            raise RuntimeError(f"{api}(): Expected index {list(index.shape)} to be no larger "
                               f"than src {list(src.shape)} in every dimension")
    return d


def _gather_meta(x, dim, index, *, sparse_grad=False):
    _check_gather_shapes("gather", x, dim, index)
    return out_like(index.shape, x.dtype, x)


def _gather_setup(ctx, inputs, output):
    ctx.shape, ctx.dim = inputs[0].shape, inputs[1]
    ctx.save_for_backward(inputs[2])


def _gather_bw(ctx, g):
    index, = ctx.saved_tensors
    return O.scatter_add(g.new_zeros(list(ctx.shape)), ctx.dim, index, g), None, None, None


defop("gather(Tensor self, SymInt dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
      meta=_gather_meta, setup=_gather_setup, backward=_gather_bw)


def _scatter_add_meta(x, dim, index, src):
    _check_gather_shapes("scatter_add", x, dim, index, src)
    return out_like(x.shape, x.dtype, x)


def _scatter_add_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.src_shape = tuple(inputs[3].shape)
    ctx.save_for_backward(inputs[2])


def _scattered_src_grad(g, dim, index, src_shape):
    """The gradient of a scatter op's ``src``: ``g`` at the written positions, zero in the part
    of ``src`` beyond ``index``'s shape (never read)."""
    gsrc = O.gather(g, dim, index)
    if tuple(gsrc.shape) != src_shape:
        # src may be larger than index: only its leading index-shaped block was read
        full = g.new_zeros(list(src_shape))
        block = full
        for k, n in enumerate(index.shape):
            block = O.narrow(block, k, 0, n)
        O.copy_(block, gsrc)
        gsrc = full
    return gsrc


def _scatter_add_bw(ctx, g):
    index, = ctx.saved_tensors
    gsrc = None
    if ctx.needs_input_grad[3]:
        gsrc = _scattered_src_grad(g, ctx.dim, index, ctx.src_shape)
    return g, None, None, gsrc


defop("scatter_add(Tensor self, SymInt dim, Tensor index, Tensor src) -> Tensor",
      meta=_scatter_add_meta, setup=_scatter_add_setup, backward=_scatter_add_bw)


# -- scatter / scatter_ (torch.scatter with a src tensor or a value) --------------------------------
def _scatter_meta(x, dim, index, src):
    if is_tensor(src):
        if src.dtype is not x.dtype:
            raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype "
                               f"({x.dtype} vs {src.dtype})")
        _check_gather_shapes("scatter", x, dim, index, src)
    else:
        _check_gather_shapes("scatter", x, dim, index)
    return out_like(x.shape, x.dtype, x)


def _scatter_setup(ctx, inputs, output):
    # in-place entry (scatter_) runs before the write: nothing of self's values is needed
    src = inputs[3]
    ctx.dim = inputs[1]
    ctx.src_shape = tuple(src.shape) if is_tensor(src) else None
    ctx.save_for_backward(inputs[2])


def _scatter_bw(ctx, g):
    # torch's formula: the overwritten positions get no gradient from self; src's elements get
    # the gradient of the positions they were written to
    index, = ctx.saved_tensors
    gself = O.scatter(g, ctx.dim, index, 0) if ctx.needs_input_grad[0] else None
    gsrc = None
    if ctx.src_shape is not None and ctx.needs_input_grad[3]:
        gsrc = _scattered_src_grad(g, ctx.dim, index, ctx.src_shape)
    return gself, None, None, gsrc


defop("scatter(Tensor self, SymInt dim, Tensor index, Tensor src) -> Tensor",
      meta=_scatter_meta, setup=_scatter_setup, backward=_scatter_bw, scalar_ok=("src",))
defop("scatter_(Tensor(a!) self, SymInt dim, Tensor index, Tensor src) -> Tensor(a!)",
      meta=lambda x, dim, index, src: (_scatter_meta(x, dim, index, src), x)[1],
      setup=_scatter_setup, backward=_scatter_bw, scalar_ok=("src",), partial=("src",))


def _nonzero_meta(x):
    # the number of nonzero elements depends on the values: a data-dependent size (torch's
    # nonzero meta asks its ShapeEnv for an unbacked size the same way)
    from ..fake import get_ctx
    nnz = get_ctx().new_dynamic_size()
    return out_like((nnz, x.ndim), _dtype.int64, x)


# ``(n, ndim)`` int64 indices of the nonzero elements in row-major order (``torch.nonzero``); no
# gradient (integer output)
defop("nonzero(Tensor self) -> Tensor", meta=_nonzero_meta, differentiable=False)


# -- scatter_reduce (torch.scatter_reduce, every reduce; session 44) --------------------------------
_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def check_scatter_reduce(x, dim, index, src, reduce):
    """torch's checks of ``scatter_reduce``: the reduce name, ``src``'s dtype (``self``'s), no
    mean of bool, the index shapes (RuntimeError / NotImplementedError in torch's words)."""
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if src.dtype is not x.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, got "
                           f"{x.dtype} and {src.dtype}")
    if reduce == "mean" and x.dtype is _dtype.bool:
        raise NotImplementedError("scatter_reduce(reduce='mean'): not implemented for 'Bool' (as "
                                  "torch)")
    _check_gather_shapes("scatter_reduce", x, dim, index, src)


def _scatter_reduce_meta(x, dim, index, src, reduce, *, include_self=True):
    check_scatter_reduce(x, dim, index, src, reduce)
    return out_like(x.shape, x.dtype, x)


def _scatter_reduce_setup(ctx, inputs, output):
    x, dim, index, src, reduce = inputs[:5]
    ctx.dim, ctx.reduce = dim, reduce
    ctx.include_self = inputs[5] if len(inputs) > 5 else True
    ctx.src_shape = tuple(src.shape)
    ctx.save_for_backward(x, index, src, output)


def _pad_to(gsrc, index, src_shape):
    """An index-shaped gradient of ``src`` placed in a zero tensor of ``src``'s shape (the part
    of ``src`` beyond ``index`` is never read)."""
    if tuple(gsrc.shape) == src_shape:
        return gsrc
    full = gsrc.new_zeros(list(src_shape))
    block = full
    for k, n in enumerate(index.shape):
        block = O.narrow(block, k, 0, n)
    O.copy_(block, gsrc)
    return full


def _scatter_reduce_bw(ctx, g):
    # torch's scatter_reduce_backward (FunctionsManual.cpp), reduce by reduce
    x, index, src, result = ctx.saved_tensors
    d, reduce, inc = ctx.dim, ctx.reduce, ctx.include_self
    if reduce == "sum":
        gself, gsrc = g, O.gather(g, d, index)
    elif reduce == "mean":
        n = O.scatter_add(O.full(list(g.shape), 1.0 if inc else 0.0, dtype=g.dtype,
                                 device=g.device), d, index,
                          O.full(list(src.shape), 1.0, dtype=g.dtype, device=g.device))
        n = O.where(O.eq(n, 0), 1.0, n)
        gself = O.div(g, n)
        gsrc = O.div(O.gather(g, d, index), O.gather(n, d, index))
    elif reduce == "prod":
        # exclusive products where self or src holds a zero, without dividing by it
        masked_self = O.where(O.eq(x, 0), 1.0, x)
        masked_self_result = O.scatter_reduce(masked_self, d, index, src, reduce,
                                              include_self=inc)
        gself = O.div(O.mul(g, masked_self_result), masked_self)
        src_zero = O.eq(src, 0)
        # (torch's zeros_like(self): x * 0 was NaN at an infinite x)
        zeros_at = O.gather(O.scatter_add(zeros_grad(x), d, index, O.to_dtype(src_zero, x.dtype)),
                            d, index)
        single_zero = O.logical_and(src_zero, O.eq(zeros_at, 1))
        masked_src = O.where(single_zero, 1.0, src)
        masked_src_result = O.scatter_reduce(x, d, index, masked_src, reduce, include_self=inc)
        gsrc = O.where(single_zero, O.gather(O.mul(g, masked_src_result), d, index),
                       O.div(O.gather(O.mul(g, result), d, index),
                             O.where(src_zero, 1.0, src)))
    else:   # amax / amin: the gradient split evenly among the values equal to the result
        value = O.gather(result, d, index)
        self_is = O.to_dtype(O.eq(x, result), g.dtype)
        src_is = O.to_dtype(O.eq(src, value), g.dtype)
        n = O.scatter_add(self_is, d, index, src_is)
        dist = O.div(g, n)
        gself = O.mul(self_is, dist)
        gsrc = O.mul(src_is, O.gather(dist, d, index))
    if not inc:
        gself = O.scatter(gself, d, index, 0)
    return gself, None, None, _pad_to(gsrc, index, ctx.src_shape), None, None


defop("scatter_reduce(Tensor self, SymInt dim, Tensor index, Tensor src, str reduce, *, "
      "bool include_self=True) -> Tensor",
      meta=_scatter_reduce_meta, setup=_scatter_reduce_setup, backward=_scatter_reduce_bw)
