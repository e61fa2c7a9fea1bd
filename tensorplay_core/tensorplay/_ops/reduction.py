"""Reductions: ``sum``, ``mean``, ``prod``, ``amax``, ``amin``, ``argmax``, ``argmin``, ``all``,
``any``, ``cumsum``, and the value+index ops ``max``/``min`` along a dim and ``sort``/``argsort``
(torch semantics; an empty or absent dim list means every dimension)."""

from __future__ import annotations

from .. import _dtype
from .._kernels import _checks
from ._define import defop, ops as O
from ._shapes import check_nonempty_reduction, out_like, reduce_shape, wrap_dim, zeros_grad
from .._dispatch import NoGradBlock, grad_state as _gm_state

_LOWP = frozenset((_dtype.float16, _dtype.bfloat16))


def _sum_meta(x, dim=None, keepdim=False, *, dtype=None):
    shape, _ = reduce_shape(x.shape, dim, keepdim)
    dt = dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)
    return out_like(shape, dt, x)


def _mean_meta(x, dim=None, keepdim=False, *, dtype=None):
    _checks.check_mean_dtype(dtype)
    if dtype is None and not x.dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be a floating "
                           f"point dtype, got {x.dtype}")
    shape, _ = reduce_shape(x.shape, dim, keepdim)
    return out_like(shape, dtype or x.dtype, x)


def _red_setup(ctx, inputs, output):
    x = inputs[0]
    ctx.shape = x.raw_shape   # (the slots, not the properties: ~0.4 k instructions less each)
    ctx.dims = inputs[1] if len(inputs) > 1 else None
    ctx.keepdim = inputs[2] if len(inputs) > 2 else False
    ctx.dtype = x.raw_dtype


def _expand_back(g, shape, dims, keepdim):
    if not keepdim and len(shape) and g.raw_shape:
        # (a 0-dim g, the gradient of a full reduction, expands to any shape as it is)
        nd = len(shape)
        # (a dim already in range, the usual spelling, without wrap_dim's call)
        ds = sorted([d if d.__class__ is int and 0 <= d < nd else wrap_dim(d, nd)
                     for d in dims]) if dims else range(nd)
        for d in ds:
            g = O.unsqueeze(g, d)
    return O.expand(g, list(shape))


def _sum_bw(ctx, g):
    r = _expand_back(g, ctx.shape, ctx.dims, ctx.keepdim)
    # cast only when needed (an int input summed to int64 has no gradient anyway); not
    # Tensor.to, whose argument parsing costs more than the expand itself
    return (r if r.raw_dtype is ctx.dtype else r.to(ctx.dtype)), None, None


def _mean_bw(ctx, g):
    # the count of elements averaged: the reduced dims' sizes (the forward checked the dims:
    # in range, none twice), without reduce_shape's result shape and set
    shape = ctx.shape
    dims = ctx.dims
    nd = len(shape)
    n = 1
    if dims:
        for d in dims:
            if d.__class__ is not int or not 0 <= d < nd:
                d = wrap_dim(d, nd)
            if d < nd:              # a 0-dim input "reduces" its dim 0 over one element
                n *= shape[d]
    else:
        for s in shape:
            n *= s
    # expanded, then divided, as torch's mean_backward: the gradient is a full contiguous
    # tensor, which user backward code (autograd.Function, Triton kernels reading it as
    # contiguous) receives from a mean loss under torch. (Dividing first and handing back the
    # broadcast view wrote nothing, but such a kernel's launch was then refused.) sum's
    # gradient stays a broadcast view, as torch's does.
    return O.div(_expand_back(g, ctx.shape, ctx.dims, ctx.keepdim), float(max(n, 1))), None, None


def _ext_meta(x, dim=(), keepdim=False, api="amax"):
    shape, dset = reduce_shape(x.shape, dim, keepdim)
    check_nonempty_reduction(x.shape, dim, api)   # the array kernels run the same check
    return out_like(shape, x.dtype, x)


def _amin_meta(x, dim=(), keepdim=False):
    return _ext_meta(x, dim, keepdim, "amin")


def _ext_setup(ctx, inputs, output):
    _red_setup(ctx, inputs, output)
    ctx.save_for_backward(inputs[0], output)


def _ext_bw(ctx, g):
    x, out = ctx.saved_tensors
    outk = _expand_back(out, ctx.shape, ctx.dims, ctx.keepdim)
    mask = O.to_dtype(O.eq(x, outk), g.dtype)
    count = _expand_back(O.sum(mask, ctx.dims or [], True), ctx.shape, ctx.dims or [], True)
    return O.div(O.mul(_expand_back(g, ctx.shape, ctx.dims, ctx.keepdim), mask), count), None, None


defop("sum(Tensor self, SymInt[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      meta=_sum_meta, setup=_red_setup, backward=_sum_bw)
defop("mean(Tensor self, SymInt[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      meta=_mean_meta, setup=_red_setup, backward=_mean_bw)
defop("amax(Tensor self, SymInt[] dim=[], bool keepdim=False) -> Tensor", meta=_ext_meta,
      setup=_ext_setup, backward=_ext_bw)
defop("amin(Tensor self, SymInt[] dim=[], bool keepdim=False) -> Tensor", meta=_amin_meta,
      setup=_ext_setup, backward=_ext_bw)


def _arg_meta(api):
    def meta(x, dim=None, keepdim=False):
        shape, _ = reduce_shape(x.shape, None if dim is None else [dim], keepdim)
        if dim is None and not keepdim:
            shape = ()
        check_nonempty_reduction(x.shape, () if dim is None else (dim,), api, True)
        return out_like(shape, _dtype.int64, x)
    return meta


defop("argmax(Tensor self, SymInt? dim=None, bool keepdim=False) -> Tensor",
      meta=_arg_meta("argmax"), differentiable=False)
defop("argmin(Tensor self, SymInt? dim=None, bool keepdim=False) -> Tensor",
      meta=_arg_meta("argmin"), differentiable=False)




# -- boolean reductions ---------------------------------------------------------------------------
def _bool_red_meta(x, dim=None, keepdim=False):
    # torch's one exception: uint8 input gives uint8 (0/1), every other dtype bool. An empty dim
    # list reduces nothing (torch's all/any: all(x, dim=()) is x != 0), where sum's reduces all
    if dim is not None and not dim:
        return out_like(tuple(x.shape), _dtype.uint8 if x.dtype is _dtype.uint8 else _dtype.bool,
                        x)
    shape, _ = reduce_shape(x.shape, dim, keepdim)
    return out_like(shape, _dtype.uint8 if x.dtype is _dtype.uint8 else _dtype.bool, x)


defop("all(Tensor self, SymInt[]? dim=None, bool keepdim=False) -> Tensor", meta=_bool_red_meta,
      differentiable=False)
defop("any(Tensor self, SymInt[]? dim=None, bool keepdim=False) -> Tensor", meta=_bool_red_meta,
      differentiable=False)


# -- prod -----------------------------------------------------------------------------------------
def _prod_setup(ctx, inputs, output):
    _red_setup(ctx, inputs, output)
    ctx.save_for_backward(inputs[0], output)


# torch's cpu cumprod accumulates in this dtype (at::acc_type), rounding at each output
_CUMPROD_ACC = {_dtype.float32: _dtype.float64, _dtype.float16: _dtype.float32,
                _dtype.bfloat16: _dtype.float32}


def _exclusive_cumprod(x):
    """Products of the elements before each one along the last dim (1 at the first), by log2(n)
    shifted multiplies (Hillis-Steele): only products, no division, so every derivative of it,
    to any order, is exact also where x holds zeros. Accumulated as torch's cpu cumprod (float32
    in float64, rounded once at the end), so an intermediate product that leaves float32's
    range gives torch's value, not inf or 0."""
    n = x.raw_shape[-1]
    dt = x.raw_dtype
    acc = _CUMPROD_ACC.get(dt)
    if acc is not None:
        x = O.to_dtype(x, acc)
    ones = O.full([*x.raw_shape[:-1], n], 1.0, dtype=x.raw_dtype, device=x.raw_device)
    e = O.cat([O.narrow(ones, -1, 0, 1), O.narrow(x, -1, 0, n - 1)], -1)
    s = 1
    while s < n:
        e = O.mul(e, O.cat([O.narrow(ones, -1, 0, s), O.narrow(e, -1, 0, n - s)], -1))
        s *= 2
    return e if acc is None else O.to_dtype(e, dt)


def _prod_others(x, dims):
    """For each element of x, the product of the other elements of its reduced slice (torch's
    prod_safe_zeros_backward: exclusive products from both sides, multiplied), built from
    differentiable ops so that create_graph gives exact higher derivatives with zeros in x."""
    nd = len(x.raw_shape)
    red = sorted({wrap_dim(d, nd) for d in dims}) if dims else list(range(nd))
    perm = [d for d in range(nd) if d not in red] + red
    xp = O.permute(x, perm)
    kept = list(xp.raw_shape[:nd - len(red)])
    n = 1
    for d in red:
        n *= x.raw_shape[d]
    if n == 0:
        return x
    xf = O.reshape(xp, kept + [n])
    # both directions in one scan: the slices and their reverses stacked on a new first dim
    e = _exclusive_cumprod(O.stack([xf, xf.flip([-1])], 0))
    r = O.mul(O.select(e, 0, 0), O.select(e, 0, 1).flip([-1]))
    inv = [0] * nd
    for i, d in enumerate(perm):
        inv[d] = i
    return O.permute(O.reshape(r, list(xp.raw_shape)), inv)


def _prod_bw(ctx, g):
    # torch's prod_backward, branch for branch, with and without create_graph (the same formula
    # differentiated again): a 0-dim input's gradient is g as is; no zero in the whole input:
    # g * result / x (inf and NaN give torch's NaN: inf / inf); otherwise the exclusive
    # products (every slice, also one without a zero: prod(dim) of [[inf, 2], [3, 0]] gives
    # 2 at the inf), except prod() of an input with two zeros or more outside create_graph:
    # zeros. A fake or captured input cannot be read: the exclusive products, as torch's
    # tensor-subclass (compile) path.
    x, p = ctx.saved_tensors
    if not len(ctx.shape):
        return g, None, None
    if x.raw_dtype is not g.raw_dtype:
        x = O.to_dtype(x, g.raw_dtype)    # torch: self.to(grad's dtype) (prod(dtype=...))
    dims = list(ctx.dims or [])
    gx = _expand_back(g, ctx.shape, ctx.dims, ctx.keepdim)
    if x.native is not None and x.capture_info is None:
        zeros = int(O.sum(O.eq(x, 0), [], False).item())
        if not zeros:
            return O.mul(gx, O.div(_expand_back(p, ctx.shape, ctx.dims, ctx.keepdim), x)), \
                None, None
        if not dims and zeros > 1 and not _gm_state.enabled:
            return zeros_grad(x), None, None
    return O.mul(gx, _prod_others(x, dims)), None, None


defop("prod(Tensor self, SymInt[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor", meta=_sum_meta, setup=_prod_setup, backward=_prod_bw)


# -- cumsum ---------------------------------------------------------------------------------------
def _cumsum_meta(x, dim, *, dtype=None):
    wrap_dim(dim, x.ndim, "cumsum(): ")
    if dtype is _dtype.bool:     # torch has no bool cumsum kernel
        raise NotImplementedError('"cumsum_out_cpu" not implemented for \'Bool\': cumsum() has '
                                  'no bool result (as torch); give an integer dtype')
    dt = dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)
    return out_like(x.shape, dt, x)


def _cumsum_setup(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.dtype = inputs[0].dtype


def _cumsum_bw(ctx, g):
    # the reversed cumulative sum: total - cumsum(g) + g; float16/bfloat16 as torch's
    # cumsum_backward, g.flip(dim).cumsum(dim).flip(dim) (one rounding per element, where the
    # three ops rounded the total and each difference: session 55)
    # (the gradient converted to the input's dtype first, as torch's)
    if ctx.dtype in _LOWP and g.raw_shape:
        if g.raw_dtype is not ctx.dtype:
            g = O.to_dtype(g, ctx.dtype)
        r = O.cumsum(g.flip([ctx.dim]), ctx.dim).flip([ctx.dim])
    else:
        r = O.add(O.sub(O.sum(g, [ctx.dim], True), O.cumsum(g, ctx.dim)), g)
    return (r if r.dtype is ctx.dtype else O.to_dtype(r, ctx.dtype)), None, None


defop("cumsum(Tensor self, SymInt dim, *, ScalarType? dtype=None) -> Tensor", meta=_cumsum_meta,
      setup=_cumsum_setup, backward=_cumsum_bw)


# -- values + indices: max(dim), min(dim), sort ---------------------------------------------------
def _select_back(g, shape, dim, idx, keepdim):
    """Gradient of a value-selecting reduction: ``g`` put at ``idx`` along ``dim`` (torch's
    value_selecting_reduction_backward), zeros elsewhere."""
    nd = len(shape)
    if not nd:
        return g
    d = wrap_dim(dim, nd)
    if not keepdim:
        g = O.unsqueeze(g, d)
        idx = O.unsqueeze(idx, d)
    return O.scatter_add(g.new_zeros(list(shape)), d, idx, g)


def _minmax_dim_meta(api):
    def meta(x, dim, keepdim=False):
        shape, _ = reduce_shape(x.shape, [dim], keepdim)
        check_nonempty_reduction(x.shape, (dim,), api)
        return out_like(shape, x.dtype, x), out_like(shape, _dtype.int64, x)
    return meta


def _minmax_dim_setup(ctx, inputs, output):
    ctx.shape, ctx.dim = inputs[0].shape, inputs[1]
    ctx.keepdim = inputs[2] if len(inputs) > 2 else False
    ctx.save_for_backward(output[1])


def _minmax_dim_bw(ctx, g, _gi=None):
    idx, = ctx.saved_tensors
    return _select_back(g, ctx.shape, ctx.dim, idx, ctx.keepdim), None, None


defop("max(Tensor self, SymInt dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      meta=_minmax_dim_meta("max"), setup=_minmax_dim_setup, backward=_minmax_dim_bw,
      kernel="max_dim")
defop("min(Tensor self, SymInt dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      meta=_minmax_dim_meta("min"), setup=_minmax_dim_setup, backward=_minmax_dim_bw,
      kernel="min_dim")


def _sort_meta(x, dim=-1, descending=False, *, stable=False):
    wrap_dim(dim, x.ndim, "sort(): ")
    return out_like(x.shape, x.dtype, x), out_like(x.shape, _dtype.int64, x)


def _sort_setup(ctx, inputs, output):
    ctx.shape, ctx.dim, ctx.keepdim = inputs[0].shape, inputs[1] if len(inputs) > 1 else -1, True
    ctx.save_for_backward(output[1])


defop("sort(Tensor self, SymInt dim=-1, bool descending=False, *, bool stable=False) -> "
      "(Tensor values, Tensor indices)", meta=_sort_meta, setup=_sort_setup,
      backward=lambda ctx, g, _gi=None: (_minmax_dim_bw(ctx, g)[0], None, None, None))


def _argsort_meta(x, dim=-1, descending=False, *, stable=False):
    wrap_dim(dim, x.ndim, "argsort(): ")
    return out_like(x.shape, _dtype.int64, x)


defop("argsort(Tensor self, SymInt dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
      meta=_argsort_meta, differentiable=False)


# -- aminmax, cummax, cummin (session 44): composites of the ops above, so they run on every
# device and differentiate through their ops (torch's formulas: aminmax's gradient split evenly
# among ties, as amin/amax; cummax/cummin's put back at the indices, as a gather's) -------------
def aminmax(x, *, dim=None, keepdim=False):
    """``(min, max)`` of ``x`` over ``dim`` (every element when None), as ``torch.aminmax``:
    NaN propagates; ``RuntimeError`` over an empty dim (torch's message); bool and integer
    tensors keep their dtype."""
    dims = [] if dim is None else [dim]
    if x.numel() == 0 and (dim is None or not x.ndim or x.shape[wrap_dim(dim, x.ndim)] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None and keepdim and x.ndim:
        dims = list(range(x.ndim))
    return O.amin(x, dims, keepdim), O.amax(x, dims, keepdim)


def _scan(x, d, n, combine):
    """Inclusive scan of ``combine`` (an associative elementwise op) along dim ``d`` of size
    ``n``: ceil(log2 n) steps of ``combine(x, x shifted by 2**k)`` (Hillis-Steele)."""
    k = 1
    while k < n:
        head = O.narrow(x, d, 0, k)
        x = O.cat([head, combine(O.narrow(x, d, k, n - k), O.narrow(x, d, 0, n - k))], d)
        k *= 2
    return x


def cum_extremum(api, x, dim):
    """``cummax``/``cummin`` (``api``): running max/min along ``dim`` and the index where it was
    last reached (``>=``/``<=``, as torch's kernel), NaN propagating with the index of the latest
    NaN. The values are ``gather(x, dim, indices)`` (autograd: torch's scatter-add formula)."""
    from .._tensor_base import TensorBase
    if not isinstance(x, TensorBase):
        raise TypeError(f"{api}(): argument 'input' must be Tensor, not {type(x).__name__}")
    nd = x.ndim
    d = wrap_dim(dim, max(nd, 1), f"{api}(): ")
    xs = O.unsqueeze(x, 0) if not nd else x
    n = xs.shape[d]
    if xs.numel() == 0:
        idx = O.full(list(xs.shape), 0, dtype=_dtype.int64, device=x.device)
    else:
        pick = O.maximum if api == "cummax" else O.minimum
        plain = xs if xs.dtype is not _dtype.bool else O.to_dtype(xs, _dtype.uint8)
        with NoGradBlock():
            run = _scan(plain, d, n, pick)        # NaN-propagating running extremum
            hit = O.eq(plain, run)                # this position reaches the running value
            if plain.dtype.is_floating_point:
                hit = O.logical_or(hit, O.isnan(plain))
            shape = [1] * xs.ndim
            shape[d] = n
            pos = O.reshape(O.arange(0, n, 1, dtype=_dtype.int64, device=x.device), shape)
            idx = _scan(O.where(hit, pos, 0), d, n, O.maximum)
    values = O.gather(xs, d, idx)
    if not nd:
        values, idx = O.squeeze(values, [0]), O.squeeze(idx, [0])
    return values, idx
