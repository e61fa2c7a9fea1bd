"""The indexing ops: ``index``, ``index_add``, ``index_put_``, ``masked_select``,
``masked_fill_``, ``masked_scatter_``, ``gather``, ``scatter``/``scatter_``/``scatter_add``,
``nonzero`` -- their fake rules and backward formulas. ``tensor[index]`` and ``tensor[index] = value`` are composed of these and the
view ops in ``tensorplay._indexing``.
"""

from __future__ import annotations

from .. import _dtype
from ..errors import DispatchError
from ._define import defop, ops as O
from .._kernels._checks import check_index_add_dtypes
from ._shapes import check_bool_mask, is_tensor, out_like, wrap_dim


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
    check_index_add_dtypes(x.dtype, source.dtype)
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
