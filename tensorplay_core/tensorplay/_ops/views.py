"""View ops: results share storage with their input (torch's view semantics).

Every view's ``(shape, stride, storage_offset)`` is computed here, once, by torch's rules; the
same function serves real tensors (the backend materializes it with ``as_strided``) and fake
ones. So fake strides always equal real strides.
"""

from __future__ import annotations

from operator import itemgetter as _itemgetter
from weakref import ref as _ref

from .._backend import _CONTIG_CACHE as _CONTIG
from .._backend import contiguous_strides
from .._backend import contiguous_strides_cached as _contig
from .._dispatch import grad_state as _grad_state
from .._tensor_base import made_in_no_grad, new_fake, new_tensor, set_view
from ._define import defop, ops as O
from ._shapes import wrap_dim


def make_view(base, shape, stride, offset, data=None):
    """A tensor over ``base``'s storage with the given metadata (elements). ``data``: the native
    array of exactly that view when the caller has it from a cheaper native view op (a
    transpose, a reshape of a contiguous tensor, a basic index); else the backend materializes it
    from the storage root. (The readable form: the function in use is ``_generated_make_view``'s,
    the same steps with ``new_tensor`` and ``set_view`` spliced in.)"""
    if shape.__class__ is not tuple:
        shape = tuple(shape)
    if stride.__class__ is not tuple:
        stride = tuple(stride)
    st = base.storage_ref
    if base.native is None:
        t = new_fake(st, shape, stride, offset, base.raw_dtype, base.raw_device,
                     backend_key=base.backend_key)
    else:
        be = base.backend
        if data is None:
            data = be.as_strided(st.root, shape, stride, offset)
        t = new_tensor(st, data, shape, stride, offset, base.raw_dtype, base.raw_device, be)
    root = base.view_base
    # (grad mode recorded: a view made under no_grad cannot be written in place with grad on
    # once its base requires grad, torch's rule; autograd/function.py)
    if root is None:
        set_view(t, base, st.version, _grad_state.enabled)
        return t
    set_view(t, root, st.version, _grad_state.enabled)
    if _CMETA or base.raw_grad_fn is None and base.needs_grad:
        # a view of a view keeps its creation rule. (Not by grad mode here: an op whose input
        # requires grad runs its kernel with grad mode off, and the view is recorded after.)
        _propagate_creation_meta(base, t)
    return t


def _generated_make_view(plain):
    """``make_view`` (``plain``, its readable form) as generated code: ``new_tensor``'s body and
    ``set_view``'s (``new_tensor_source``, ``set_view_source``) spliced in, so a view of a real
    tensor costs one frame, not three -- every view op of every device makes one (a
    ``q.transpose(1, 2)`` on cuda: ~2.3 µs, of which these two frames were ~0.3 µs on a CPU
    host). Same tensor, field by field (tests/test_cuda_copy61.py compares them)."""
    from weakref import ref
    from .. import _codegen
    from .._tensor_base import (instance_class, new_tensor_source, prune_views,
                                refresh_dispatch_key, set_view_source)
    built = new_tensor_source("t", "st", "data", "shape", "stride", "base.raw_dtype",
                              "base.raw_device", "be", offset="offset")
    lines = ["def make_view(base, shape, stride, offset, data=None):",
             "    if shape.__class__ is not tuple:",
             "        shape = tuple(shape)",
             "    if stride.__class__ is not tuple:",
             "        stride = tuple(stride)",
             "    st = base.storage_ref",
             "    if base.native is None:",
             "        t = __fake(st, shape, stride, offset, base.raw_dtype, base.raw_device,",
             "                   backend_key=base.backend_key)",
             "    else:",
             "        be = base.backend",
             "        if data is None:",
             "            data = be.as_strided(st.root, shape, stride, offset)",
             *("        " + x for x in built),
             "    root = base.view_base",
             "    if root is None:",
             *("        " + x for x in set_view_source("t", "base", "st.version", "__gs.enabled")),
             "        return t",
             *("    " + x for x in set_view_source("t", "root", "st.version", "__gs.enabled")),
             "    if __CM or base.raw_grad_fn is None and base.needs_grad:",
             "        __propagate(base, t)",
             "    return t"]
    ns = {"__new": object.__new__, "__T": instance_class(), "__fake": new_fake, "__ref": ref,
          "__prune": prune_views, "__refresh": refresh_dispatch_key, "__gs": _grad_state,
          "__CM": _CMETA, "__propagate": _propagate_creation_meta}
    fn = _codegen.function("\n".join(lines), ns, "make_view", "<tensorplay make_view>")
    fn.__doc__ = plain.__doc__
    fn.__wrapped__ = plain
    return fn


# -- creation meta (torch's ``CreationMeta``) -------------------------------------------------
# Views whose in-place writes torch refuses while autograd records, beyond the views made under
# ``no_grad`` that ``set_view`` records itself: id(view) -> a ``_Mark`` (a weak reference to the
# view with the rule). ``kind`` "multi": an output of a function returning several views
# (``unbind``, ``split``, ``chunk``, ``split_with_sizes``; torch's MULTI_OUTPUT_NODE), or a view
# of one; "no_grad": a view made with grad mode on of a view made under ``no_grad`` (torch
# propagates NO_GRAD_MODE). ``name``/``nr``: what torch's message names ("Output 1 of Unbind");
# None for a view of such a view (its own ``grad_fn`` is named then). A mark leaves with its
# view (the reference's callback), so an id is never reused while listed.
_CMETA: dict = {}


class _Mark(_ref):
    __slots__ = ("key", "kind", "name", "nr")


def _drop(m):
    if _CMETA.get(m.key) is m:
        del _CMETA[m.key]


def _register(t, kind, name, nr):
    m = _Mark(t, _drop)
    m.key = k = id(t)
    m.kind = kind
    m.name = name
    m.nr = nr
    _CMETA[k] = m


def mark_multi_output(outs, name):
    """Record the views ``outs`` (a tuple, returned as is) as the outputs of one function
    returning several views, called ``name`` in torch's messages (``"Unbind"``, ``"Split"``,
    ``"SplitWithSizes"``): while autograd records (grad mode on, an input requiring grad), an
    in-place write to one of them, or to a view of one, raises ``RuntimeError``, and so does
    using one after its base or another view of the base was written in place (torch's
    ``CreationMeta::MULTI_OUTPUT_NODE``; autograd/function.py). Views made under ``no_grad``
    keep the no_grad rule instead (torch's), as do views of non-floating dtypes (no autograd).
    Costs about 0.2 µs an output. While ``tensorplay.compile`` captures (capture tensors,
    which are no views: the graph records ``narrow``), the mark is recorded as a graph node that
    the compiled function replays on the real views, so it refuses what eager refuses, with
    eager's words, on its first call and every call."""
    if _grad_state.enabled:
        info = outs[0].capture_info if outs else None
        if info is not None:
            info.record_multi_output(outs, name)     # _capture's Value (a layer above this one)
            return outs
        i = 0
        for t in outs:
            if t.view_base is not None and t.raw_dtype.is_floating_point:
                m = _Mark(t, _drop)
                m.key = k = id(t)
                m.kind = "multi"
                m.name = name
                m.nr = i
                _CMETA[k] = m
            i += 1
    return outs


def mark_custom_function_output(t, name, nr):
    """Record view ``t``, output ``nr`` of ``autograd.Function`` ``name`` (a view made inside
    its ``forward``, or an input returned as-is), so that an in-place write to it (or to a view
    of it) while autograd records raises ``RuntimeError``, as torch's
    ``CreationMeta::IN_CUSTOM_FUNCTION``: the write's view+inplace history would override the
    Function's own backward (wrong gradients)."""
    _register(t, "custom", name, nr)


def creation_meta(t):
    """``(kind, name, output_nr)`` of view ``t`` when ``mark_multi_output`` (or a view of a
    view, ``make_view``) recorded one (kind ``"multi"`` or ``"no_grad"``), else None."""
    m = _CMETA.get(id(t))
    if m is None or m() is not t:
        return None
    return m.kind, m.name, m.nr


def _propagate_creation_meta(base, t):
    """``t``, a view of the view ``base``, takes ``base``'s creation rule (torch's
    ``propagate_creation_meta``): an output of a multi-view function, or a view made under
    ``no_grad`` (a view of one is refused in place as it is, torch's words naming the new
    view's ``grad_fn``). A ``t`` made under ``no_grad`` itself is refused by that rule first
    (autograd/function.py reads it before this one)."""
    if not t.raw_dtype.is_floating_point:
        return
    m = creation_meta(base) if _CMETA else None
    if m is not None:
        _register(t, m[0], None, None)
    elif base.raw_grad_fn is None and base.needs_grad and made_in_no_grad(base):
        _register(t, "no_grad", None, None)


make_view = _generated_make_view(make_view)


def _is_contig(shape, stride) -> bool:
    """``stride`` is exactly ``shape``'s row-major strides (``contiguous_strides``): a view of
    such a tensor as another shape has that shape's row-major strides (torch's
    ``computeStride`` gives them: one chunk), and the native reshape is that very view."""
    c = _CONTIG.get(shape)
    if c is None:
        c = _contig(shape)      # (cached from now on: a non-contiguous input pays one lookup)
    return stride is c or stride == c


def _infer_fast(size, numel):
    """``infer_size`` for the common sizes (ints, at most one -1, consistent with ``numel``) as
    a tuple; None for anything else (``infer_size`` then decides, with its errors)."""
    known = 1
    neg = -1
    i = 0
    for s in size:
        if s.__class__ is not int:
            return None
        if s >= 0:
            known *= s
        elif s == -1 and neg < 0:
            neg = i
        else:
            return None
        i += 1
    if neg < 0:
        return tuple(size) if known == numel else None
    if known == 0 or numel % known:
        return None
    out = list(size)
    out[neg] = numel // known
    return tuple(out)


def infer_size(shape, numel, api="view"):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{api}: only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"{api}: invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"{api}: shape {shape} is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{api}: shape {shape} is invalid for input of size {numel}")
    return tuple(shape)


def compute_stride(old_shape, old_stride, new_shape):
    """torch's ``computeStride``: strides viewing ``old`` as ``new`` without copying, or None."""
    if not old_shape:
        return tuple(1 for _ in new_shape)
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0:
        return contiguous_strides(new_shape) if tuple(old_shape) != tuple(new_shape) else tuple(old_stride)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def _contiguous_view(x, size, api):
    """``x`` viewed as ``size`` when ``x`` is contiguous (always possible then): row-major strides
    for the new shape and the native reshape (a view of a contiguous array) instead of
    ``as_strided``; None for any other layout (the general rule then)."""
    old, ost = x.raw_shape, x.stride_tuple
    if not (ost is _CONTIG.get(old) or _is_contig(old, ost)):
        return None
    numel = 1
    for s in old:
        numel *= s
    if len(size) == 1 and size[0] == -1 and size[0].__class__ is int:
        shape = (numel,)                                # view(-1) / reshape(-1)
    else:
        shape = _infer_fast(size, numel)
        if shape is None:
            shape = infer_size(size, numel, api)
    data = x.native
    return make_view(x, shape, _contig(shape), x.offset,
                     data.reshape(shape) if data is not None else None)


def _view(x, size):
    v = _contiguous_view(x, size, "view")
    if v is not None:
        return v
    shape = infer_size(size, x.numel(), "view")
    st = compute_stride(x.shape, x.stride(), shape)
    if st is None:
        raise RuntimeError(
            f"view: size {list(size)} is not compatible with input tensor's size {tuple(x.shape)} "
            f"and stride {x.stride()} (at least one dimension spans across two contiguous "
            f"subspaces). Use .reshape(...) instead.")
    return make_view(x, shape, st, x.storage_offset())


def _reshape(x, shape):
    v = _contiguous_view(x, shape, "reshape")      # a contiguous input: always a view
    if v is not None:
        return v
    old = x.raw_shape
    numel = 1
    for s in old:
        numel *= s
    shp = _infer_fast(shape, numel)
    if shp is None:
        shp = infer_size(shape, numel, "reshape")
    st = compute_stride(old, x.stride_tuple, shp)
    if st is None:
        # not expressible as a view: a fresh tensor (torch copies too); it is nobody's view.
        # The copy is row-major (a backend's clone of a strided view: its strided copy), so
        # its native reshape is the result's array (on cuda ~0.7 µs less than as_strided)
        c = O.clone(x)
        t = _contiguous_view(c, shp, "reshape")
        if t is None:
            t = make_view(c, shp, contiguous_strides(shp), 0)
        set_view(t, None, t.view_version)
        return t
    return make_view(x, shp, st, x.offset)


def _shape_bw(ctx, g):
    return O.reshape(g, list(ctx.shape)), None


def _save_shape(ctx, inputs, output):
    ctx.shape = inputs[0].shape


defop("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", default=_view, meta=_view,
      setup=_save_shape, backward=_shape_bw)
defop("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", default=_reshape, meta=_reshape,
      setup=_save_shape, backward=_shape_bw)


def _permute(x, dims):
    shape, stride = x.raw_shape, x.stride_tuple
    nd = len(shape)
    ds = [d if d.__class__ is int and 0 <= d < nd else wrap_dim(d, nd, "permute: ")
          for d in dims]
    if len(ds) != nd or len(set(ds)) != nd:        # (all in range: a permutation iff distinct)
        raise RuntimeError(f"permute: dims {list(dims)} are not a permutation of {nd} dimensions")
    data = x.native
    if nd > 1:
        # (one C call per tuple instead of a comprehension and tuple(): ~0.2 µs less a call)
        take = _itemgetter(*ds)
        shape, stride = take(shape), take(stride)
    # the native transpose is that very view (NumPy, CuPy), cheaper than as_strided
    return make_view(x, shape, stride, x.offset, data.transpose(ds) if data is not None else None)


def _permute_bw(ctx, g):
    nd = len(ctx.dims)
    ds = [wrap_dim(d, nd) for d in ctx.dims]
    inv = [0] * nd
    for i, d in enumerate(ds):
        inv[d] = i
    return O.permute(g, inv), None


defop("permute(Tensor(a) self, SymInt[] dims) -> Tensor(a)", default=_permute, meta=_permute,
      setup=lambda c, i, o: setattr(c, "dims", i[1]), backward=_permute_bw)


def _transpose(x, dim0, dim1):
    shape, stride = x.raw_shape, x.stride_tuple
    nd = len(shape)
    if nd == 0:
        return make_view(x, (), (), x.offset)
    a = dim0 if dim0.__class__ is int and 0 <= dim0 < nd else wrap_dim(dim0, nd, "transpose: ")
    b = dim1 if dim1.__class__ is int and 0 <= dim1 < nd else wrap_dim(dim1, nd, "transpose: ")
    # two dims swapped: the view directly (no permutation list to build and check), from the
    # native swapaxes when there is data
    shape, stride = list(shape), list(stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    data = x.native
    return make_view(x, tuple(shape), tuple(stride), x.offset,
                     data.swapaxes(a, b) if data is not None else None)


defop("transpose(Tensor(a) self, SymInt dim0, SymInt dim1) -> Tensor(a)", default=_transpose,
      meta=_transpose, setup=lambda c, i, o: setattr(c, "d", (i[1], i[2])),
      backward=lambda ctx, g: (O.transpose(g, *ctx.d), None, None))


def _expand(x, size):
    size = list(size)
    nd = len(size)
    xshape, xstride = x.raw_shape, x.stride_tuple
    xnd = len(xshape)
    if nd < xnd:
        raise RuntimeError(f"expand: the number of sizes provided ({nd}) must be greater or equal "
                           f"to the number of dimensions in the tensor ({xnd})")
    lead = nd - xnd
    for i in range(lead):
        if size[i] < 0:
            raise RuntimeError(f"expand: -1 not allowed in leading, non-existing dimension {i}")
    shape, stride = size[:lead], [0] * lead
    for i in range(xnd):
        s, cur = size[lead + i], xshape[i]
        if s == -1 or s == cur:
            shape.append(cur)
            stride.append(xstride[i])
        elif cur == 1:
            shape.append(s)
            stride.append(0)
        else:
            raise RuntimeError(f"expand: the expanded size of the tensor ({s}) must match the "
                               f"existing size ({cur}) at non-singleton dimension {lead + i}. "
                               f"Target sizes: {size}. Tensor sizes: {list(xshape)}")
    if xnd:
        # a new dim of size 1 gets the stride torch's expand gives it (the next dim's expanded
        # size times its stride, as an unsqueeze would): x.expand(1, n) is x.view(1, n), so a
        # write of x onto it is the same memory walked the same way (torch's setitem expands
        # the value to the written shape, then copies: x[None] = x is a no-op)
        for i in range(lead - 1, -1, -1):
            if shape[i] == 1:
                stride[i] = shape[i + 1] * stride[i + 1]
    return make_view(x, tuple(shape), tuple(stride), x.offset)


defop("expand(Tensor(a) self, SymInt[] size) -> Tensor(a)", default=_expand, meta=_expand,
      setup=_save_shape, backward=lambda ctx, g: (g.sum_to_size(ctx.shape), None))


def _unsqueeze(x, dim):
    shape, stride = x.raw_shape, x.stride_tuple
    nd = len(shape)
    d = dim if dim.__class__ is int and 0 <= dim <= nd else wrap_dim(dim, nd + 1, "unsqueeze: ")
    st = shape[d] * stride[d] if d < nd else 1
    shape, stride = shape[:d] + (1,) + shape[d:], stride[:d] + (st,) + stride[d:]
    data = x.native
    if data is not None and _is_contig(x.raw_shape, x.stride_tuple) and 0 not in shape:
        # a contiguous input (no empty dim): its strides are the row-major ones, and the native
        # reshape is the view
        data = data.reshape(shape)
    else:
        data = None
    return make_view(x, shape, stride, x.offset, data)


defop("unsqueeze(Tensor(a) self, SymInt dim) -> Tensor(a)", default=_unsqueeze, meta=_unsqueeze,
      setup=_save_shape, backward=_shape_bw)


def _squeeze(x, dim=None):
    shape, stride = x.raw_shape, x.stride_tuple
    nd = len(shape)
    if dim is not None and len(dim) == 1:
        d = dim[0]
        d = d if d.__class__ is int and 0 <= d < nd else wrap_dim(d, nd, "squeeze: ")
        dropped = nd and shape[d] == 1                      # (a 0-d x takes 0 and -1)
        if dropped:
            new_shape, new_stride = shape[:d] + shape[d + 1:], stride[:d] + stride[d + 1:]
        else:
            new_shape, new_stride = shape, stride
    else:
        if dim is None:
            ds = {i for i, s in enumerate(shape) if s == 1}
        else:
            ws = [wrap_dim(d, nd, "squeeze: ") for d in dim]
            ds = set(ws)
            if len(ds) != len(ws):          # torch's dim_list_to_bitset, after the range checks
                dup = next(d for i, d in enumerate(ws) if d in ws[:i])
                raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
            ds = {d for d in ds if nd and shape[d] == 1}
        dropped = bool(ds)
        if dropped:
            new_shape = tuple([s for i, s in enumerate(shape) if i not in ds])
            new_stride = tuple([s for i, s in enumerate(stride) if i not in ds])
        else:
            new_shape, new_stride = shape, stride
    data = x.native
    if data is not None and 0 not in shape and (not dropped or _is_contig(shape, stride)):
        # nothing dropped (the same layout), or a contiguous input whose kept dims keep their
        # row-major strides: the native reshape is the view
        data = data.reshape(new_shape)
    else:
        data = None
    return make_view(x, new_shape, new_stride, x.offset, data)


defop("squeeze(Tensor(a) self, SymInt[]? dim=None) -> Tensor(a)", default=_squeeze, meta=_squeeze,
      setup=_save_shape, backward=_shape_bw)


def _slice(x, dim=0, start=None, end=None, step=1):
    shape, stride = x.raw_shape, x.stride_tuple
    nd = len(shape)
    d = dim if dim.__class__ is int and 0 <= dim < nd else wrap_dim(dim, nd, "slice: ")
    n = shape[d]
    if step <= 0:
        raise ValueError("slice: step must be positive (torch does not support negative steps)")
    start, end, _ = slice(start, end, step).indices(n)
    length = max(0, (end - start + step - 1) // step)
    off = x.offset + start * stride[d]      # also when empty (torch's offset: start clamped)
    data = x.native
    if data is not None and length:
        # the native basic slice is exactly this view (strides times step, the offset moved)
        data = data[start:end:step] if d == 0 else \
            data[(_ALL,) * d + (slice(start, end, step), Ellipsis)]
    else:
        data = None
    return make_view(x, shape[:d] + (length,) + shape[d + 1:],
                     stride[:d] + (stride[d] * step,) + stride[d + 1:], off, data)


_ALL = slice(None)


def _slice_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.args = inputs[1:]


def _slice_bw(ctx, g):
    z = g.new_zeros(ctx.shape)
    _slice(z, *ctx.args).copy_(g)
    return (z,) + (None,) * len(ctx.args)


defop("slice(Tensor(a) self, SymInt dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
      "-> Tensor(a)", default=_slice, meta=_slice, setup=_slice_setup, backward=_slice_bw)


def _narrow(x, dim, start, length):
    d = wrap_dim(dim, x.ndim, "narrow: ")
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length <= n - start):
        raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n})")
    return _slice(x, d, start, start + length, 1)


defop("narrow(Tensor(a) self, SymInt dim, SymInt start, SymInt length) -> Tensor(a)",
      default=_narrow, meta=_narrow, setup=_slice_setup,
      backward=lambda ctx, g: _narrow_bw(ctx, g))


def _narrow_bw(ctx, g):
    z = g.new_zeros(ctx.shape)
    _narrow(z, *ctx.args).copy_(g)
    return (z, None, None, None)


def _select(x, dim, index):
    shape, stride = x.raw_shape, x.stride_tuple
    nd = len(shape)
    d = dim if dim.__class__ is int and 0 <= dim < nd else wrap_dim(dim, nd, "select: ")
    n = shape[d]
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {n}")
    if index < 0:
        index += n
    off = x.offset + index * stride[d]
    data = x.native
    if data is not None and index.__class__ is int:
        # the native basic index is exactly this view (an array, also 0-d: the Ellipsis)
        data = data[index] if d == 0 and nd > 1 else data[(_ALL,) * d + (index, Ellipsis)]
    else:
        data = None
    if d == 0:
        return make_view(x, shape[1:], stride[1:], off, data)
    return make_view(x, shape[:d] + shape[d + 1:], stride[:d] + stride[d + 1:], off, data)


def _select_bw(ctx, g):
    z = g.new_zeros(ctx.shape)
    _select(z, *ctx.args).copy_(g)
    return (z, None, None)


defop("select(Tensor(a) self, SymInt dim, SymInt index) -> Tensor(a)", default=_select,
      meta=_select, setup=_slice_setup, backward=_select_bw)


def _as_strided(x, size, stride, storage_offset=None):
    size, stride = [int(v) for v in size], [int(v) for v in stride]
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape ({len(stride)} vs "
                           f"{len(size)})")
    if any(v < 0 for v in size) or any(v < 0 for v in stride):
        raise RuntimeError(f"as_strided: negative size or stride ({size}, {stride})")
    off = x.storage_offset() if storage_offset is None else int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    if 0 not in size:
        need = off + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        have = x.storage_ref.nbytes // x.dtype.itemsize
        if need > have:
            raise RuntimeError(f"setStorage: sizes {size}, strides {stride}, storage offset "
                               f"{off} require {need} elements, but the storage has only "
                               f"{have} (as_strided)")
    return make_view(x, size, stride, off)


def _positions(shape, stride, offset, device):
    """The storage position of each element of a ``(shape, stride, offset)`` view (int64)."""
    from .. import _dtype
    i64 = _dtype.int64
    pos = O.full([], offset, dtype=i64, device=device)
    for k, (n, s) in enumerate(zip(shape, stride)):
        ar = O.mul(O.arange(0, n, 1, dtype=i64, device=device), s)
        pos = O.add(pos, O.reshape(ar, [n if j == k else 1 for j in range(len(shape))]))
    return O.expand(pos, list(shape)) if tuple(pos.shape) != tuple(shape) else pos


def _as_strided_setup(ctx, inputs, output):
    x = inputs[0]
    ctx.geom = (tuple(x.shape), tuple(x.stride()), x.storage_offset())
    ctx.out = (tuple(output.shape), tuple(output.stride()), output.storage_offset())
    ctx.n = x.storage_ref.nbytes // x.dtype.itemsize


def _as_strided_bw(ctx, g):
    # the output's gradient lands on the storage positions it viewed (overlaps accumulate);
    # the input's gradient is what its own elements' positions received
    buf = O.full([ctx.n], 0, dtype=g.dtype, device=g.device)
    pos_out = O.reshape(_positions(*ctx.out, g.device), [-1])
    buf = O.index_add(buf, 0, pos_out, O.reshape(g, [-1]))
    return O.index(buf, 0, _positions(*ctx.geom, g.device)), None, None, None


defop("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
      "-> Tensor(a)", default=_as_strided, meta=_as_strided, setup=_as_strided_setup,
      backward=_as_strided_bw)


def _view_dtype(x, dtype):
    """``x.view(dtype)``: the same bytes read as ``dtype`` (torch's rules): a different element
    size scales the last dim, which must have stride 1, and needs the other strides, the
    offset and (for a larger element) the last size divisible by the ratio."""
    old, new = x.dtype.itemsize, dtype.itemsize
    shape, stride, off = list(x.shape), list(x.stride()), x.storage_offset()
    if old != new:
        api = f"view(): viewing {x.dtype} as {dtype} (different element sizes): "
        if x.ndim == 0:
            raise RuntimeError(api + "the tensor must have at least one dimension")
        if stride[-1] != 1:
            raise RuntimeError(api + f"the last dim must have stride 1, but got "
                                     f"{stride[-1]} (call .contiguous() first)")
        if old > new:
            r = old // new
            shape[-1] *= r
            stride = [st * r for st in stride[:-1]] + [1]
            off *= r
        else:
            r = new // old
            if shape[-1] % r or off % r or any(st % r for st in stride[:-1]):
                raise RuntimeError(api + f"the last size ({shape[-1]}), the storage offset "
                                         f"({off}) and the other strides ({stride[:-1]}) must be "
                                         f"divisible by {r}")
            shape[-1] //= r
            stride = [st // r for st in stride[:-1]] + [1]
            off //= r
    if x.native is None:
        return new_fake(x.storage_ref, shape, stride, off, dtype, x.device,
                        backend_key=x.backend_key)
    from .._backend import Storage
    be = x.backend
    st = x.storage_ref
    # the same memory as a storage of the new dtype (own version counter: these views are not
    # differentiable, so no autograd check reads it across dtypes)
    root = st.root.reshape(-1).view(be.native_dtype(dtype))
    data = be.as_strided(root, tuple(shape), tuple(stride), off)
    return new_tensor(Storage(root, st.nbytes, be), data, tuple(shape), tuple(stride), off,
                      dtype, x.device, be)


# not differentiable (torch's view.dtype has output_differentiability False), also between
# floating dtypes
defop("view_dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", default=_view_dtype,
      meta=_view_dtype, differentiable=False)


__all__ = ["make_view", "compute_stride", "infer_size", "mark_multi_output", "creation_meta",
           "mark_custom_function_output"]
