"""Tensors with the same values in another memory layout (used by opcheck's ``test_layouts`` and
by the second-shape run of ``test_aot_dispatch_dynamic``).

A layout is ``(strides, storage offset)`` over a fresh storage. The builders here make new
storages, copy the values in, and never touch the source tensor.
"""

from __future__ import annotations

from .. import _factories
from .._ops.views import make_view
from .._tensor_base import set_view
from ..autograd.grad_mode import no_grad

__all__ = ["build", "empty", "contiguous_strides", "order_strides", "strides_like", "LAYOUT_KINDS",
           "relayout"]

# the layouts test_layouts tries, besides the contiguous reference
LAYOUT_KINDS = ("transposed", "storage offset", "padded slice", "expanded")


def contiguous_strides(shape) -> tuple:
    st, acc = [], 1
    for s in reversed(tuple(shape)):
        st.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(st))


def order_strides(shape, order, pad=0, step=1) -> tuple:
    """Strides of a dense-ish layout of ``shape`` whose dimensions are stored in ``order``
    (innermost first): innermost stride ``step``, every outer dimension padded by ``pad``
    elements (a row of a padded buffer sliced to the logical size)."""
    st = [0] * len(shape)
    prev = None
    for d in order:
        st[d] = step if prev is None else st[prev] * max(int(shape[prev]), 1) + pad
        prev = d
    return tuple(st)


def strides_like(shape, stride, new_shape) -> tuple:
    """Strides for ``new_shape`` with the layout kind of (``shape``, ``stride``): same memory
    order of the dimensions, same inner step and the same padding after each dimension (a
    column slice stays a column slice, a transposed view stays transposed). Stride-0
    (expanded) dimensions keep stride 0."""
    dims = [d for d in range(len(shape)) if stride[d] != 0]
    order = sorted(dims, key=lambda d: (stride[d], shape[d]))     # innermost first
    new = list(stride)
    prev = None
    for d in order:
        if prev is None:
            new[d] = stride[d]
        else:
            pad = max(stride[d] - stride[prev] * max(int(shape[prev]), 1), 0)
            new[d] = new[prev] * max(int(new_shape[prev]), 1) + pad
        prev = d
    return tuple(new)


def empty(shape, stride, offset, dtype, device):
    """An uninitialised tensor of ``shape``, ``dtype``, ``device`` laid out with ``stride`` (no
    zero strides) and ``offset`` over a fresh storage of just the span it addresses."""
    span = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else 0
    flat = _factories.empty(offset + span, dtype=dtype, device=device)
    c = make_view(flat, shape, stride, offset)
    set_view(c, None, c.view_version)   # owns its storage
    return c


def build(values, stride, offset=0):
    """A tensor with ``values``' shape, dtype, device and values, laid out with ``stride`` and
    ``offset`` over a fresh storage (detached, ``requires_grad=False``). Stride-0 dimensions are
    made by expanding (the values must be constant along them: index 0 is used)."""
    src = values.detach()
    shape = tuple(src.shape)
    if not offset and 0 not in stride and stride == contiguous_strides(shape):
        # a row-major copy (the references of test_layouts): of a row-major tensor (most
        # samples) its clone, which keeps the layout; of another (an expanded one) its
        # contiguous copy, when that is a new row-major tensor (``src`` is detached: nothing
        # is recorded)
        c = src.clone() if src.stride_tuple == stride else src.contiguous()
        if c.stride_tuple == stride and c.storage_ref is not src.storage_ref:
            c.storage_ref.version = 0
            return c
    with no_grad():
        zero = [d for d, s in enumerate(stride) if s == 0 and shape[d] != 1]
        if zero:
            for d in zero:
                src = src.narrow(d, 0, 1)
        bstride = tuple(1 if d in zero else s for d, s in enumerate(stride))
        bshape = tuple(src.shape)
        if not offset and bstride == contiguous_strides(bshape):
            # the contiguous layout (the references of test_layouts): the factory's own tensor,
            # without the view over a flat buffer that other layouts need
            c = _factories.empty(bshape, dtype=src.dtype, device=src.device)
        else:
            c = empty(bshape, bstride, offset, src.dtype, src.device)
        if c.numel():
            c.copy_(src)
        c.storage_ref.version = 0
        if zero:
            c = c.expand(*shape)
    return c


def relayout(t, kind):
    """``(tensor, changed)``: ``t``'s values (for ``"expanded"``: its first row repeated along
    the leading dimension) in layout ``kind`` of :data:`LAYOUT_KINDS` or ``"contiguous"``.
    ``changed`` is False when the kind does not apply to ``t`` (e.g. transposing a 1-d tensor)."""
    shape = tuple(t.shape)
    n = len(shape)
    inner_first = list(range(n - 1, -1, -1))
    if kind == "contiguous" or n == 0 or t.numel() == 0:
        return build(t, contiguous_strides(shape)), kind == "contiguous"
    if kind == "transposed":
        big = [d for d in range(n) if shape[d] > 1]
        if len(big) < 2:
            return build(t, contiguous_strides(shape)), False
        return build(t, order_strides(shape, list(range(n)))), True     # dim 0 innermost
    if kind == "storage offset":
        return build(t, contiguous_strides(shape), offset=3), True
    if kind == "padded slice":
        if n == 1:     # a 1-d slice of a wider buffer: every other element
            return build(t, order_strides(shape, inner_first, step=2)), True
        return build(t, order_strides(shape, inner_first, pad=3)), True
    if kind == "expanded":
        if shape[0] < 2:
            return build(t, contiguous_strides(shape)), False
        # the first row (a fresh row-major copy) expanded along the leading dimension
        row = t.detach().narrow(0, 0, 1)
        return build(row, contiguous_strides(tuple(row.shape))).expand(*shape), True
    raise ValueError(f"unknown layout kind {kind!r}")
