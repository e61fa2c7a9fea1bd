"""``tensor[index]`` and ``tensor[index] = value`` (torch semantics).

Basic indices (ints, slices, ``None``, ``...``) decompose into the view ops ``select``,
``slice`` and ``unsqueeze``, so results alias the input. One integer tensor/list index gathers
along its dimension (``index``; a copy), and a bool mask selects elements (``masked_select``;
a copy whose size depends on the data, so it has no fake rule).
"""

from __future__ import annotations

from .. import _dtype
from .._tensor_base import TensorBase
from ..errors import DispatchError
from ._define import defop, ops as O
from ._shapes import broadcast_shapes, check_bool_mask, is_tensor, out_like, wrap_dim


def _is_tensor(x):
    return isinstance(x, TensorBase)


def _normalize(index):
    if not isinstance(index, tuple):
        index = (index,)
    return index


def _split(x, index):
    """Apply the basic part of ``index`` as views; return (view, [(dim, tensor_index)])."""
    from .._factories import tensor as _tensor
    index = _normalize(index)
    n_ell = sum(1 for i in index if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis and
                   not (isinstance(i, bool)))
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    out = x
    dim = 0
    advanced = []
    for i in index:
        if i is Ellipsis:
            dim += x.ndim - consumed
        elif i is None:
            out = O.unsqueeze(out, dim)
            dim += 1
        elif isinstance(i, bool):
            raise IndexError("bool scalar indices are not supported")
        elif getattr(i, "ndim", 0) and not _is_tensor(i) and hasattr(i, "__array__"):
            # a NumPy (or other array-like) index array: as the tensor of its values
            advanced.append((dim, _tensor(i, device=x.device)))
            dim += advanced[-1][1].ndim if advanced[-1][1].dtype is _dtype.bool else 1
            if advanced[-1][1].dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(i, int) or (hasattr(i, "__index__") and not _is_tensor(i)
                                    and not isinstance(i, (list, tuple))):
            out = O.select(out, dim, int(i))
        elif isinstance(i, slice):
            if i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
            out = O.slice(out, dim, i.start, i.stop, i.step or 1)
            dim += 1
        elif _is_tensor(i) or isinstance(i, (list, tuple)):
            t = i if _is_tensor(i) else _tensor(i, device=x.device)
            if t.dtype is _dtype.bool:
                advanced.append((dim, t))
                dim += t.ndim
            elif t.ndim == 0 and not t.dtype.is_floating_point and t.native is not None:
                out = O.select(out, dim, int(t.item()))
            else:
                if t.dtype.is_floating_point:
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
                advanced.append((dim, t))
                dim += 1
        else:
            raise IndexError(f"unsupported index of type {type(i).__name__}: {i!r}")
    return out, advanced


def getitem(x, index):
    out, advanced = _split(x, index)
    if not advanced:
        return out
    if len(advanced) > 1 or (advanced[0][1].dtype is _dtype.bool and
                             not (advanced[0][0] == 0 and advanced[0][1].ndim == out.ndim)):
        return _advanced(out, advanced)
    dim, idx = advanced[0]
    if idx.dtype is _dtype.bool:
        if dim != 0 or idx.ndim != out.ndim:
            out = O.reshape(out, list(out.shape[:dim]) + [-1] + list(out.shape[dim + idx.ndim:])) \
                if idx.ndim == out.ndim - dim else out
        if idx.ndim == out.ndim and dim == 0:
            return O.masked_select(out, idx)
        raise IndexError("bool mask indices must cover the leading dimensions of the tensor")
    return O.index(out, dim, idx)


def _linear_index(x, advanced):
    """The advanced indices of ``x`` as one index into its indexed dims flattened together:
    ``(dims, rest, bshape, linear, n)``: the indexed dims (ascending), the other dims, the
    broadcast shape of the index tensors, the int64 index (of shape ``bshape``) into
    ``permute(x, dims + rest)`` with ``dims`` merged into one of size ``n``. Bool masks count as
    their nonzero positions (torch's rule); out-of-range indices raise ``IndexError``."""
    pairs = []
    for dim, t in advanced:
        if t.dtype is _dtype.bool:      # a k-dim mask is k index tensors (its nonzero positions)
            ms = tuple(t.shape)
            if ms != tuple(x.shape[dim:dim + t.ndim]):
                raise IndexError(f"The shape of the mask {list(ms)} at index {dim} does not "
                                 f"match the shape of the indexed tensor "
                                 f"{list(x.shape[dim:dim + t.ndim])}")
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
    linear = None
    stride = 1
    for d, t in reversed(pairs):
        n = x.shape[d]
        if t.native is not None and t.numel():
            lo, hi = int(O.amin(t, [], False).item()), int(O.amax(t, [], False).item())
            if lo < -n or hi >= n:
                bad = hi if hi >= n else lo
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
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
        value = O.expand(value, rshape) if list(value.shape) != rshape else value
        if first:
            value = O.permute(value, list(range(first, first + nb)) + list(range(first)) +
                              list(range(first + nb, len(rshape))))
    O.index_put_(flat, 0, linear, value)
    if tmp is not None:
        O.copy_(p, tmp)


def setitem(x, index, value):
    out, advanced = _split(x, index)
    if not advanced:
        if _is_tensor(value):
            O.copy_(out, value)
        else:
            O.fill_(out, value)
        return
    if len(advanced) > 1 or (advanced[0][1].dtype is _dtype.bool and
                             not (advanced[0][0] == 0 and advanced[0][1].ndim == out.ndim)):
        _advanced_put(out, advanced, value)
        return
    dim, idx = advanced[0]
    if idx.dtype is _dtype.bool:
        if dim != 0 or idx.ndim != out.ndim:
            raise IndexError("bool mask assignment needs a mask of the tensor's full shape")
        O.masked_fill_(out, idx, value)
    else:
        O.index_put_(out, dim, idx, value)


def _index_meta(x, dim, index):
    d = wrap_dim(dim, x.ndim, "index: ")
    return out_like(tuple(x.shape[:d]) + tuple(index.shape) + tuple(x.shape[d + 1:]), x.dtype, x)


def _index_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[2])


def _index_bw(ctx, g):
    idx, = ctx.saved_tensors
    z = g.new_zeros(ctx.shape)
    return O.index_add(z, ctx.dim, idx, g), None, None


defop("index(Tensor self, SymInt dim, Tensor index) -> Tensor", meta=_index_meta,
      setup=_index_setup, backward=_index_bw)


def _index_add_meta(x, dim, index, source):
    return out_like(x.shape, x.dtype, x)


def _index_add_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[2])


def _index_add_bw(ctx, g):
    idx, = ctx.saved_tensors
    return g, None, None, O.index(g, ctx.dim, idx)


defop("index_add(Tensor self, SymInt dim, Tensor index, Tensor source) -> Tensor",
      meta=_index_add_meta, setup=_index_add_setup, backward=_index_add_bw)


def _data_dependent(x, mask):
    raise DispatchError("masked_select: the output size depends on the mask's values, so it has "
                        "no fake rule; use where() to keep shapes static under FakeTensorMode or "
                        "tensorplay.compile")


def _ms_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.save_for_backward(inputs[1])


def _ms_bw(ctx, g):
    mask, = ctx.saved_tensors
    z = g.new_zeros(ctx.shape)
    O.masked_scatter_(z, mask, g)
    return z, None


defop("masked_select(Tensor self, Tensor mask) -> Tensor", meta=_data_dependent, setup=_ms_setup,
      backward=_ms_bw)
def _meta_self(x, *rest):
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
    gself = O.where(mask, O.mul(g, 0.0), g)
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
    gself = O.where(mask, O.mul(g, 0.0), g)
    gval = None
    if ctx.src is not None and ctx.needs_input_grad[2]:
        shape, dtype = ctx.src
        gval = _cast(O.reshape(O.sum(O.where(mask, g, O.mul(g, 0.0))), list(shape)), dtype)
    return gself, None, gval


def _index_put_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[2])
    v = inputs[3]
    ctx.src = (v.shape, v.dtype) if is_tensor(v) else None


def _index_put_bw(ctx, g):
    idx, = ctx.saved_tensors
    gself = O.clone(g)
    O.index_put_(gself, ctx.dim, idx, 0.0)
    gval = None
    if ctx.src is not None and ctx.needs_input_grad[3]:
        shape, dtype = ctx.src
        gval = _cast(O.index(g, ctx.dim, idx).sum_to_size(shape), dtype)
    return gself, None, None, gval


defop("masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)",
      meta=_masked_meta("masked_scatter_"), setup=_mask_setup, backward=_masked_scatter_bw)
defop("masked_fill_(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
      meta=_masked_meta("masked_fill_"), setup=_mask_setup, backward=_masked_fill_bw,
      scalar_ok=("value",))
defop("index_put_(Tensor(a!) self, SymInt dim, Tensor index, Tensor values) -> Tensor(a!)",
      meta=_meta_self, setup=_index_put_setup, backward=_index_put_bw, scalar_ok=("values",))


# -- gather / scatter_add (torch.gather, torch.scatter_add) ----------------------------------------
def _check_gather_shapes(api, x, dim, index, src=None):
    d = wrap_dim(dim, x.ndim, f"{api}(): ")
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"{api}(): Expected dtype int64 for index, got {index.dtype}")
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
      setup=_scatter_setup, backward=_scatter_bw, scalar_ok=("src",))


def _nonzero_meta(x):
    # the number of nonzero elements depends on the values: a data-dependent size (torch's
    # nonzero meta asks its ShapeEnv for an unbacked size the same way)
    from ..fake import get_ctx
    nnz = get_ctx().new_dynamic_size()
    return out_like((nnz, x.ndim), _dtype.int64, x)


# ``(n, ndim)`` int64 indices of the nonzero elements in row-major order (``torch.nonzero``); no
# gradient (integer output)
defop("nonzero(Tensor self) -> Tensor", meta=_nonzero_meta, differentiable=False)
