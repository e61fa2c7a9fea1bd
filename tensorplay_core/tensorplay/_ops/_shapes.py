"""Shape, dtype and stride rules shared by the fake rules of the built-in ops (torch's rules)."""

from __future__ import annotations

from .. import _dtype
from ..fake import make_fake


def wrap_dim(dim: int, ndim: int, api: str = "") -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{api}Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def broadcast_shapes(*shapes, api: str = "broadcast") -> tuple:
    """NumPy/torch broadcasting of ``shapes``; ``RuntimeError`` naming both sizes on mismatch."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        off = nd - len(s)
        for i, d in enumerate(s):
            cur = out[off + i]
            if cur == 1:
                out[off + i] = d
            elif d != 1 and d != cur:
                raise RuntimeError(
                    f"{api}: the size of tensor a ({cur}) must match the size of tensor b ({d}) at "
                    f"non-singleton dimension {off + i - nd}")
    return tuple(out)


def is_tensor(x) -> bool:
    return hasattr(x, "_dkey")


def result_dtype(a, b):
    """torch's promotion for ``a <op> b`` where either may be a Python scalar."""
    ta, tb = is_tensor(a), is_tensor(b)
    if ta and tb:
        # 0-dim tensors do not lift the category of dimensioned ones (torch rule), simplified:
        if a.ndim == 0 and b.ndim > 0 and _cat(a.dtype) <= _cat(b.dtype):
            return b.dtype
        if b.ndim == 0 and a.ndim > 0 and _cat(b.dtype) <= _cat(a.dtype):
            return a.dtype
        return _dtype.promote_types(a.dtype, b.dtype)
    if ta:
        return _dtype.result_type_scalar(a.dtype, b)
    if tb:
        return _dtype.result_type_scalar(b.dtype, a)
    raise TypeError("at least one operand must be a tensor")


def _cat(d):
    return 2 if d.is_floating_point else (0 if d is _dtype.bool else 1)


def shape_of(x) -> tuple:
    return x.shape if is_tensor(x) else ()


def float_dtype(d):
    """int/bool -> default float (for exp, log, div, ...)."""
    return d if d.is_floating_point else _dtype.get_default_dtype()


def out_like(shape, dtype, ref):
    return make_fake(shape, dtype, ref.device)


def first_tensor(*xs):
    for x in xs:
        if is_tensor(x):
            return x
    raise TypeError("expected a tensor argument")


def binary_meta(kind: str = "same"):
    """Fake rule of a broadcasting binary op. ``kind``: same / float / bool (comparisons)."""
    def meta(a, b):
        shape = broadcast_shapes(shape_of(a), shape_of(b))
        if kind == "bool":
            dt = _dtype.bool
        else:
            dt = result_dtype(a, b)
            if kind == "float":
                dt = float_dtype(dt)
        return out_like(shape, dt, first_tensor(a, b))
    return meta


def unary_meta(kind: str = "same"):
    def meta(x):
        dt = x.dtype
        if kind == "float":
            dt = float_dtype(dt)
        elif kind == "bool":
            dt = _dtype.bool
        return out_like(x.shape, dt, x)
    return meta


def reduce_shape(shape, dims, keepdim):
    nd = len(shape)
    if not dims:
        dset = set(range(nd))
    else:
        dset = {wrap_dim(d, nd) for d in dims}
    if keepdim:
        return tuple(1 if i in dset else s for i, s in enumerate(shape)), dset
    return tuple(s for i, s in enumerate(shape) if i not in dset), dset
