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
    """torch's promotion for ``a <op> b`` where either may be a Python scalar
    (``_dtype.result_type`` on the operands' dtypes and kinds)."""
    ta, tb = is_tensor(a), is_tensor(b)
    if not (ta or tb):
        raise TypeError("at least one operand must be a tensor")
    da, ka = (a.dtype, 2 if a.ndim else 1) if ta else (_dtype.wrapped_dtype(a), 0)
    db, kb = (b.dtype, 2 if b.ndim else 1) if tb else (_dtype.wrapped_dtype(b), 0)
    return _dtype.result_type(da, ka, db, kb)


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


def binary_meta(kind: str = "same", api: str = "broadcast"):
    """Fake rule of a broadcasting binary op. ``kind``: same / float / bool (comparisons)."""
    def meta(a, b):
        shape = broadcast_shapes(shape_of(a), shape_of(b), api=api)
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


# the C type names torch prints in its dtype mismatch message
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def check_same_dtype(da, db) -> None:
    """matmul does not promote (torch): operands of different dtypes are a ``RuntimeError``.
    Shared by the fake rule and the array kernel."""
    if da is not db:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_C_NAMES.get(da.name, da.name)} != {_C_NAMES.get(db.name, db.name)}"
                           f" (matmul does not promote; convert one operand, e.g. "
                           f"a.to(b.dtype) @ b)")


def check_nonempty_reduction(shape, dims, api: str, arg: bool = False) -> None:
    """torch's check for reductions without an identity (``amax``, ``argmax``, ``max(dim)`` ...)
    on an empty input: no ``dims`` given -> ``RuntimeError`` (``IndexError`` for ``argmax``/
    ``argmin``, ``arg=True``, as torch); else ``IndexError`` naming the first reduced dimension
    of size 0. Shared by the fake rules and the array kernels, so every
    device raises the same error before any work runs."""
    n = 1
    for s in shape:
        n *= s
    if n:
        return
    if not dims:
        if arg:
            raise IndexError(f"{api}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        raise RuntimeError(f"{api}(): Expected reduction dim to be specified for input.numel() "
                           f"== 0. Specify the reduction dim with the 'dim' argument.")
    for d in sorted({wrap_dim(d, len(shape), f"{api}(): ") for d in dims}):
        if shape[d] == 0:
            raise IndexError(f"{api}(): Expected reduction dim {d} to have non-zero size.")


def reduce_shape(shape, dims, keepdim):
    nd = len(shape)
    if not dims:
        dset = set(range(nd))
    else:
        dset = {wrap_dim(d, nd) for d in dims}
    if keepdim:
        return tuple(1 if i in dset else s for i, s in enumerate(shape)), dset
    return tuple(s for i, s in enumerate(shape) if i not in dset), dset
