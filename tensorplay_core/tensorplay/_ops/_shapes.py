"""Shape, dtype and stride rules shared by the fake rules of the built-in ops (torch's rules)."""

from __future__ import annotations

from .. import _dtype
from .._tensor_base import TensorBase
from ._define import ops as _ops
from ..fake import DYNAMIC_SIZE_BASE, make_fake
from .._kernels.elementwise import layout_for
from .._kernels._checks import (  # noqa: F401 - re-exported: the fake rules' one import point
    _C_NAMES, NegativeSizeError, check_arange, check_eye, check_linspace, check_nonempty_reduction,
    check_nonnegative, check_randint, check_same_dtype, wrap_dim)


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
                if cur >= DYNAMIC_SIZE_BASE or d >= DYNAMIC_SIZE_BASE:
                    # a data-dependent size (new_dynamic_size) against another size: assumed
                    # to match (a static one wins), as torch's unbacked sizes; the kernels check
                    # the real sizes when the graph runs (eager's error if they differ)
                    out[off + i] = cur if d >= DYNAMIC_SIZE_BASE else d
                    continue
                raise RuntimeError(
                    f"{api}: the size of tensor a ({cur}) must match the size of tensor b ({d}) at "
                    f"non-singleton dimension {off + i - nd}")
    return tuple(out)


class TensorStandIn:
    """Base of the objects that stand for a tensor input in a backward formula (its shape and
    dtype, not its values): ``is_tensor`` is true for them."""

    __slots__ = ()


def is_tensor(x) -> bool:
    return isinstance(x, (TensorBase, TensorStandIn))


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


def out_like(shape, dtype, ref, operands=None, preserve=False):
    """A fake result of ``shape``/``dtype`` on ``ref``'s device: row-major, or, given the
    elementwise op's ``operands`` (its tensors and numbers in order), laid out by torch's
    TensorIterator rule (``_kernels.elementwise.layout_for``, the rule the real kernels'
    results follow); ``preserve``: by ``preserve_format`` (a dtype conversion's copy)."""
    if operands is None:
        return make_fake(shape, dtype, ref.device)
    return make_fake(shape, dtype, ref.device, layout_for(shape, operands, preserve))


def elementwise_meta(meta, k, preserve: bool = False):
    """Mark fake rule ``meta`` as an elementwise op's whose first ``k`` arguments are its
    operands (``k`` an int; or a tuple of the operands' argument positions, as ``(1,)`` for
    ``polygamma(n, input)``): the generated adapters then lay the real results out by the same
    rule (``_define._layout_guard``); ``preserve``: by ``preserve_format`` (a dtype conversion).
    A fake rule that lays its result out by the rule (``out_like`` with operands) must carry
    this mark, or the real result stays row-major while the fake's does not."""
    meta._tp_layout = k
    meta._tp_layout_preserve = preserve
    return meta


def first_tensor(*xs):
    for x in xs:
        if is_tensor(x):
            return x
    raise TypeError("expected a tensor argument")


def _dtype_of(x):
    return x.dtype if is_tensor(x) else _dtype.wrapped_dtype(x)


# torch's own words for a subtraction with a bool operand (its sub_check)
SUB_TWO_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                 "`^` or `logical_xor()` operator instead.")
SUB_A_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
              "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
# ops whose kernels torch has for integral and floating dtypes only: a bool result dtype (both
# operands bool) is "not implemented for 'Bool'"
_NO_BOOL_KERNEL = frozenset({"floor_divide", "remainder", "pow", "rpow"})


def check_bool_operands(api, a, b, dt) -> None:
    """torch's bool rules for binary op ``api`` on ``a``, ``b`` (result dtype ``dt``): any
    subtraction with a bool operand (tensor or Python bool) is refused; floor_divide, remainder
    and pow have no bool kernel (``b ** True``/``b ** False`` excepted: torch answers them
    without a kernel). ``RuntimeError`` naming ``api``."""
    if api in ("sub", "rsub"):
        da, db = _dtype_of(a), _dtype_of(b)
        if da is _dtype.bool and db is _dtype.bool:
            raise RuntimeError(f"{api}: {SUB_TWO_BOOLS}")
        if da is _dtype.bool or db is _dtype.bool:
            raise RuntimeError(f"{api}: {SUB_A_BOOL}")
    elif dt is _dtype.bool and api in _NO_BOOL_KERNEL and not (
            api == "pow" and b.__class__ is _builtin_bool):
        raise RuntimeError(f"{api}: not implemented for 'Bool' (as in torch: bool operands have "
                           f"no {api} kernel); cast one operand to an integer dtype first, e.g. "
                           f"x.long()")


def check_bool_mask(api: str, mask) -> None:
    """torch's rule for masked_fill_/masked_scatter_: the mask must be a bool tensor."""
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"{api} only supports boolean masks, but got mask with dtype "
                           f"{_C_NAMES.get(mask.dtype.name, mask.dtype.name)} (torch's "
                           f"rule); pass a bool mask such as `mask != 0`")


# ops whose Python-number operand torch takes as a parameter of a one-operand loop, not as a
# 0-d operand (pow(Tensor, Scalar); clamp's bounds, which tensorplay's maximum/minimum carry): it
# has no say in the result's layout
NUMBER_IS_PARAMETER = frozenset({"pow", "maximum", "minimum"})


def binary_meta(kind: str = "same", api: str = "broadcast"):
    """Fake rule of a broadcasting binary op. ``kind``: same / float / bool (comparisons)."""
    checked = api in ("sub", "rsub") or api in _NO_BOOL_KERNEL
    param = api in NUMBER_IS_PARAMETER

    def meta(a, b):
        shape = broadcast_shapes(shape_of(a), shape_of(b), api=api)
        if kind == "bool":
            dt = _dtype.bool
        else:
            dt = result_dtype(a, b)
            if kind == "float":
                dt = float_dtype(dt)
        if checked:
            check_bool_operands(api, a, b, dt)
        return out_like(shape, dt, first_tensor(a, b),
                        (a, None if param and not is_tensor(b) else b))
    meta._tp_number_parameter = param
    return elementwise_meta(meta, 2)


def unary_meta(kind: str = "same"):
    def meta(x):
        dt = x.dtype
        if kind == "float":
            dt = float_dtype(dt)
        elif kind == "bool":
            dt = _dtype.bool
        return out_like(x.shape, dt, x, (x,))
    return elementwise_meta(meta, 1)


def reduce_shape(shape, dims, keepdim):
    nd = len(shape)
    if not dims:
        dset = set(range(nd))
    else:
        dset = {wrap_dim(d, nd) for d in dims}
        if len(dset) != len(dims):
            seen = set()
            for d in dims:
                w = wrap_dim(d, nd)
                if w in seen:
                    raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
                seen.add(w)
    if keepdim:
        return tuple(1 if i in dset else s for i, s in enumerate(shape)), dset
    return tuple(s for i, s in enumerate(shape) if i not in dset), dset


# --- creation ops: sizes and fill values (shared by the factories and the fake rules) ---------

def size_ints(api: str, size) -> list:
    """The ``size`` of factory ``api`` (a sequence) as a list of ints, as torch reads it:
    ints and integer-like objects (``__index__``: numpy integers, 0-dim int tensors) are taken,
    ``bool``/``float``/``None``/``str``... are a ``TypeError`` naming ``api`` and ``size``.
    The per-call path only runs this when an element is not a plain ``int``."""
    out = []
    for i, s in enumerate(size):
        c = s.__class__
        if c is not int:
            if c is _builtin_bool or c.__name__ == "bool_":     # numpy's bool too
                raise TypeError(f"{api}(): argument 'size' must be tuple of ints, but found "
                                f"element of type bool at pos {i}")
            try:
                s = s.__index__()
            except (AttributeError, TypeError, ValueError, RuntimeError):
                raise TypeError(f"{api}(): argument 'size' must be tuple of ints, but found "
                                f"element of type {c.__name__} at pos {i}") from None
        out.append(s)
    return out


_builtin_bool = bool


def int_tuple_error(api: str, name: str, value, position: int | None = None) -> TypeError:
    """torch's refusal of ``value`` for the int-list argument ``name`` of ``api`` when it is no
    tuple or list (``full(3, 1.0)``, ``zeros(size=3)``, ``x.expand(size=3)``): "argument 'size'
    (position 1) must be tuple of ints, not int", with the tuple to pass instead."""
    pos = f" (position {position})" if position else ""
    n = None
    if value.__class__ is not _builtin_bool and value.__class__.__name__ != "bool_":
        try:
            n = value.__index__()
        except Exception:     # (a 1-d tensor or array, a float, None...: no single int)
            n = None
    fix = (f"pass the tuple ({n},)" if n is not None else
           "pass a tuple or list of ints such as (3,) or (2, 3)")
    return TypeError(f"{api}(): argument '{name}'{pos} must be tuple of ints, not "
                     f"{value.__class__.__name__}; {fix}")

# the range of each dtype a Python scalar is checked against (torch's ``checked_convert``):
# (lowest, highest, is_integer); float64/bool take every number
_F32_MAX = 3.4028234663852886e38
_LIMITS = {
    _dtype.float16: (-65504.0, 65504.0, False),
    _dtype.bfloat16: (-3.3895313892515355e38, 3.3895313892515355e38, False),
    _dtype.float32: (-_F32_MAX, _F32_MAX, False),
    _dtype.int8: (-128, 127, True), _dtype.uint8: (0, 255, True),
    _dtype.int16: (-32768, 32767, True), _dtype.int32: (-2**31, 2**31 - 1, True),
    _dtype.int64: (-2**63, 2**63 - 1, True), _dtype.uint32: (0, 2**32 - 1, True),
}


def _overflow(value, dtype):
    return RuntimeError(f"value cannot be converted to type {dtype.name} without overflow "
                        f"(got {value!r}); pick a dtype that holds it or a value in range")


def scalar_value(api: str, value):
    """``value`` as a Python ``bool``/``int``/``float`` when it is a number (numpy scalars and
    other 0-dim array scalars are unwrapped with ``item()``), else ``TypeError`` naming ``api``
    and ``fill_value`` (torch: "fill_value must be Number"). Tensors pass unchanged."""
    c = value.__class__
    if c is float or c is int or c is _builtin_bool:
        return value
    if isinstance(value, TensorBase):   # a (0-dim) tensor: the kernels take it as they did
        return value
    if c is complex:
        raise TypeError(f"{api}(): argument 'fill_value' is complex ({value!r}) but tensorplay "
                        f"has no complex dtypes; pass a real number (e.g. value.real)")
    if isinstance(value, (_builtin_bool, int, float)):   # subclasses: plain Python numbers
        return _builtin_bool(value) if isinstance(value, _builtin_bool) else \
            int(value) if isinstance(value, int) else float(value)
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "ndim", None) == 0 and \
            not isinstance(value, (str, bytes)):
        v = item()
        if v.__class__ in (float, int, _builtin_bool):
            return v
        if v.__class__ is complex:
            return scalar_value(api, v)
    raise TypeError(f"{api}(): argument 'fill_value' must be Number, not {c.__name__}")


def where_int_in_range(input, other):
    """A Python int beside an integer tensor keeps that tensor's dtype: torch converts it
    checked, so a value the dtype cannot hold raises ``RuntimeError`` ("value cannot be
    converted to type int8 without overflow"; an unsigned dtype takes negatives as two's
    complement, ``where(m, uint8_t, -1)`` puts 255, as ``check_fill``)."""
    for n, t in ((input, other), (other, input)):
        if n.__class__ is int and isinstance(t, TensorBase) and \
                t.raw_dtype._kind in "iu":
            check_fill("where", n, t.raw_dtype)


def check_fill(api: str, value, dtype):
    """``value`` for a ``full`` of ``dtype``, checked once on the host as torch does: a
    ``TypeError`` (naming ``api`` and ``fill_value``) for a non-number, ``RuntimeError`` ("value
    cannot be converted to type int8 without overflow") when the dtype cannot hold it: nan/inf
    or out-of-range into integers (a float's own value, not its truncation: 127.5 into int8
    and -0.5 into uint8 are refused, 126.9 gives 126), finite values beyond
    float16/bfloat16/float32's range. Negative ints into uint8 wrap (two's complement, as
    torch). Returns the Python scalar."""
    c = value.__class__
    if c is not float and c is not int and c is not _builtin_bool:
        value = scalar_value(api, value)
        c = value.__class__
        if c is not float and c is not int and c is not _builtin_bool:
            return value      # a tensor
    lim = _LIMITS.get(dtype)
    if lim is None or c is _builtin_bool:
        if c is int and not -2**63 <= value < 2**63:     # float64/bool: beyond a C long
            if dtype is _dtype.bool:
                return value != 0
            if not -2**63 <= value < 2**64:
                raise _overflow(value, dtype)
            return float(value)
        return value
    lo, hi, is_int = lim
    if c is float:
        if value - value != 0.0:              # nan or +-inf
            if is_int:
                raise _overflow(value, dtype)
            return value
        # the unrounded value against the range, as torch's checked_convert: 127.5 into int8
        # and -0.5 into uint8 are refused (truncating first let them through), -0.0 and 127.0
        # are not; Python compares a float with an int bound exactly
        if not lo <= value <= hi:
            raise _overflow(value, dtype)
        return value
    # a Python int
    if is_int:
        if lo <= value <= hi:
            return value
        if lo == 0 and -hi <= value < 0:      # uint8: -1 -> 255 as torch (uint32 likewise)
            return value & hi
        raise _overflow(value, dtype)
    if not -2**63 <= value < 2**64:            # beyond int64/uint64: torch cannot take it
        raise _overflow(value, dtype)
    f = float(value)
    if not lo <= f <= hi:
        raise _overflow(value, dtype)
    return f


def zeros_grad(g):
    """torch's ``zeros_like(grad)``: exact zeros of ``g``'s shape, dtype and device (a dense
    tensor: the ``full`` op), the gradient of a piecewise-constant op (sign, floor, ...) or of an
    overwritten input (copy_, fill_). ``g * 0`` gave NaN where ``g`` is inf or NaN; torch's
    formulas give 0. No history and no host read; fake when ``g`` is fake, a capture node when
    ``g`` is captured (session 48)."""
    return _ops.full(list(g.shape), 0, dtype=g.dtype, device=g.device)
