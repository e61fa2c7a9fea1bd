"""Argument checks shared by the built-in ops' fake rules (``_ops/_shapes``, which re-exports
them) and the array kernels of this package: each raises torch's error before any work runs, so
meta, fake, captured and real calls on every device refuse the same arguments. They live at the
kernels' layer, the lowest that uses them, so the kernels import nothing from the ops above."""

from __future__ import annotations

import math

from .._tensor_base import index_dim


def wrap_dim(dim: int, ndim: int, api: str = "") -> int:
    """``dim`` in ``[-ndim, ndim)`` as a non-negative int, else torch's ``IndexError`` (``api``
    names the called op). Anything but an int goes through ``index_dim`` (torch's parser: a
    0-dim integer tensor or NumPy integer is its int; ``x.median((0, 1))`` is "argument 'dim'
    must be int, not tuple", ``True`` "... not bool", ``tensor([1])`` "... not Tensor"), so
    the callers get an int and never carry the object itself into their arithmetic."""
    if dim.__class__ is not int:
        dim = index_dim(dim, api)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{api}Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def check_dims_0d(dims, api: str = "") -> None:
    """The reduction dims ``dims`` (an int, a sequence or None) of a 0-dim input: each must be
    0 or -1 and named once, as torch (``sum(tensor(1.), 1)`` is an ``IndexError``, not the
    value). The kernels' 0-dim paths skip the axis arithmetic; this keeps their refusals."""
    if dims is None:
        return
    seen = set()
    for d in ((dims,) if isinstance(dims, int) else dims):
        w = wrap_dim(d, 0, api)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.add(w)


# the C type names torch prints in its dtype mismatch message
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "uint32": "unsigned int", "bool": "bool"}


def check_same_dtype(da, db) -> None:
    """matmul does not promote (torch): operands of different dtypes are a ``RuntimeError``.
    Shared by the fake rule and the array kernel."""
    if da is not db:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_C_NAMES.get(da.name, da.name)} != {_C_NAMES.get(db.name, db.name)}"
                           f" (matmul does not promote; convert one operand, e.g. "
                           f"a.to(b.dtype) @ b)")


def check_mean_dtype(dtype) -> None:
    """torch's refusal of a non-floating ``dtype=`` for ``mean`` (an integer mean has no
    integer answer: torch raises instead of truncating). Shared by the fake rule and the
    kernels."""
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either "
                           f"a floating point or complex dtype. Got: {dtype}")


_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int8": "Char", "uint8": "Byte", "int16": "Short",
                 "int32": "Int", "int64": "Long", "uint32": "UInt32", "bool": "Bool"}


def check_index_add_dtypes(dx, ds) -> None:
    """torch's refusal of an ``index_add`` source of another dtype than ``self`` (it does not
    convert: an int64 self with a float32 source would silently truncate). Shared by the fake
    rule and the array kernel."""
    if dx is not ds:
        raise RuntimeError(f"index_add_(): self ({_SCALAR_NAMES.get(dx.name, dx.name)}) and "
                           f"source ({_SCALAR_NAMES.get(ds.name, ds.name)}) must have the same "
                           f"scalar type (convert source first, e.g. source.to(self.dtype))")


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


class NegativeSizeError(RuntimeError, ValueError):
    """A negative dimension given to a creation op: a ``RuntimeError`` as torch raises it, and a
    ``ValueError`` as the array kernels (and earlier TensorPlay releases) raise it."""


def check_nonnegative(op: str, size) -> None:
    """``NegativeSizeError`` (a ``RuntimeError`` and a ``ValueError``) for a negative dimension
    in a creation op's ``size``: the same words the array kernels raise (``tp::empty: negative
    dimensions are not allowed``), so meta, fake and captured calls refuse what real ones
    refuse."""
    for s in size:
        if s < 0:
            raise NegativeSizeError(f"tp::{op}: negative dimensions are not allowed (got size "
                                    f"{list(size)}); torch: Trying to create tensor with "
                                    f"negative dimension {s}")


# -- the argument checks of the factories whose kernels would not refuse bad arguments: each
# runs in the op's fake rule (meta, FakeTensorMode, compile capture) and in the array kernel
# before any work, so every device and path raises torch's RuntimeError -----------------------

def check_linspace(steps) -> None:
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")


def check_arange(start, end, step) -> int:
    """torch's arange checks (finite bounds, nonzero step whose sign goes from ``start`` to
    ``end``); returns the number of elements."""
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange(): unsupported range: {start} -> {end} (step {step}); "
                               f"the bounds and step must be finite")
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    return max(0, math.ceil((end - start) / step))


def check_eye(n, m) -> None:
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")


def check_randint(low, high) -> None:
    if not low < high:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
