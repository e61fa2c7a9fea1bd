"""``DType``: the only place a string or a backend dtype becomes a TensorPlay dtype.

Names and meanings follow ``torch.dtype`` (``float32``, ``int64``, ``bool`` ...). Backends map a
DType to their native dtype by ``name`` (numpy and CuPy spell them the same way).
"""

from __future__ import annotations

__all__ = [
    "DType", "dtype", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "uint32", "bool", "get_default_dtype", "set_default_dtype", "promote_types",
    "as_dtype", "can_cast", "memory_format", "preserve_format", "contiguous_format",
    "channels_last", "channels_last_3d", "as_memory_format",
]

_builtin_bool = bool


class DType:
    """A tensor element type (same names as ``torch.dtype``).

    Attributes: ``name`` (``"float32"``), ``itemsize`` (bytes), ``is_floating_point``,
    ``is_signed``. Instances are interned: compare with ``is`` or ``==``.
    """

    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "_rank", "_kind")

    def __init__(self, name: str, itemsize: int, kind: str, rank: int):
        self.name = name
        self.itemsize = itemsize
        self._kind = kind  # "b" bool, "i" integer, "f" floating
        self.is_floating_point = kind == "f"
        self.is_signed = name not in ("uint8", "uint32") and kind != "b"
        self._rank = rank

    def __repr__(self) -> str:
        return f"tensorplay.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (as_dtype, (self.name,))

    @property
    def is_complex(self) -> _builtin_bool:
        return False


float16 = DType("float16", 2, "f", 10)
bfloat16 = DType("bfloat16", 2, "f", 11)
float32 = DType("float32", 4, "f", 12)
float64 = DType("float64", 8, "f", 13)
int8 = DType("int8", 1, "i", 2)
uint8 = DType("uint8", 1, "i", 3)
int16 = DType("int16", 2, "i", 4)
int32 = DType("int32", 4, "i", 5)
int64 = DType("int64", 8, "i", 6)
# torch's barebones unsigned dtype (torch.uint32): made, filled, copied, converted, viewed and
# handed to kernels (Triton's lock arrays: Cut Cross-Entropy's ``new_full(..., dtype=uint32)``);
# promotion with another integer or bool dtype is refused as torch refuses it
uint32 = DType("uint32", 4, "i", 7)
bool = DType("bool", 1, "b", 0)  # noqa: A001 - torch.bool

dtype = DType  # ``tensorplay.dtype`` is the type, as ``torch.dtype``


class memory_format:  # noqa: N801 - torch's name: ``torch.memory_format``
    """A layout request (same objects as torch's): ``preserve_format`` (the default of ``*_like``
    and ``clone``: a dense input's strides are kept, another gets dense strides in its dims'
    stride order), ``contiguous_format`` (row-major), ``channels_last`` (4-D, NHWC order) and
    ``channels_last_3d`` (5-D, NDHWC order). Interned: compare with ``is``."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"tensorplay.{self._name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_memory_format_named, (self._name,))


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def _memory_format_named(name):
    return globals()[name]


def as_memory_format(fmt, api: str):
    """``fmt`` (None or a ``memory_format``) checked: ``TypeError`` in torch's words naming ``api``
    for anything else (a string included, as torch)."""
    if fmt is None or fmt.__class__ is memory_format:
        return fmt
    raise TypeError(f"{api}(): argument 'memory_format' must be tensorplay.memory_format, not "
                    f"{type(fmt).__name__}")

_BY_NAME: dict[str, DType] = {
    d.name: d for d in (float16, bfloat16, float32, float64, int8, uint8, int16, int32, int64,
                        uint32, bool)
}
_BY_NAME.update({"half": float16, "float": float32, "double": float64, "long": int64,
                 "int": int32, "short": int16})

_default = [float32]


def get_default_dtype() -> DType:
    """The floating dtype that Python floats and ``randn``/``rand`` produce (float32 by default)."""
    return _default[0]


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype (must be a floating DType; raises ``TypeError`` otherwise)."""
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default[0] = d


def as_dtype(x) -> DType:
    """Turn a ``dtype=`` argument into a DType: a DType, a backend dtype such as
    ``numpy.dtype('float32')``, or Python's ``float``/``int``/``bool`` meaning
    float64/int64/bool as in torch. A string (``"float32"``) is refused with ``TypeError``, as
    torch refuses it (write ``tensorplay.float32``); ``TypeError`` naming ``x`` for anything
    else. (Internal code that holds a dtype's name uses ``from_name``.)"""
    if isinstance(x, DType):
        return x
    if x is float:      # Python's float is a double: torch maps it to float64 too
        return float64
    if x is int:
        return int64
    if x is _builtin_bool:
        return bool
    if isinstance(x, str):
        good = f"tensorplay.{x}" if x in _BY_NAME else "tensorplay.float32"
        raise TypeError(
            f"tensorplay: dtype must be a tensorplay.dtype such as {good}, not the string "
            f"{x!r} (strings are not dtypes, as in torch); write dtype={good}")
    return from_name(getattr(x, "name", None) or str(x), x)


def from_name(name: str, shown=None) -> DType:
    """The DType named ``name`` (``"float32"``, ``"bfloat16"``, ...); ``TypeError`` otherwise."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise TypeError(
            f"tensorplay.dtype: cannot interpret {name if shown is None else shown!r} as a "
            f"dtype; expected one of {sorted(k for k in _BY_NAME)}") from None


def _category(d: DType) -> int:
    return {"b": 0, "i": 1, "f": 2}[d._kind]


# torch's c10::ScalarType names of the dtypes, as its error messages print them
SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                     "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                     "int8": "Char", "uint8": "Byte", "uint32": "UInt32", "bool": "Bool"}


def scalar_type_name(dt: DType) -> str:
    """torch's ScalarType name of ``dt`` (``"Float"``, ``"Long"``, ...), as torch's messages
    print it; the dtype's own name for one torch does not have."""
    return SCALAR_TYPE_NAMES.get(dt.name, dt.name)


_PROMOTE_CACHE: dict = {}
# torch's unsigned dtypes beyond uint8: no promotion with other integer or bool dtypes
_SHELL_UNSIGNED = frozenset({uint32})


def promote_types(a: DType, b: DType) -> DType:
    """Result dtype of a binary op on two tensors (same lattice as ``torch.promote_types``)."""
    key = (a, b)
    r = _PROMOTE_CACHE.get(key)
    if r is not None:
        return r
    if a is b:
        r = a
    elif (a in _SHELL_UNSIGNED or b in _SHELL_UNSIGNED) and _category(a) < 2 and _category(b) < 2:
        raise RuntimeError(
            f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{scalar_type_name(a)} and {scalar_type_name(b)} (convert one operand, e.g. "
            f"x.to(tensorplay.int64))")
    elif _category(a) != _category(b):
        r = a if _category(a) > _category(b) else b
    elif a._kind == "f":
        if {a, b} == {float16, bfloat16}:
            r = float32
        else:
            r = a if a._rank > b._rank else b
    elif {a, b} == {uint8, int8}:
        r = int16
    elif uint8 in (a, b):
        other = b if a is uint8 else a
        r = other if other.itemsize > 1 else int16
    else:
        r = a if a.itemsize >= b.itemsize else b
    _PROMOTE_CACHE[key] = r
    return r


_CAST_RANK = {"b": 0, "i": 1, "f": 2}


def can_cast(from_: DType, to: DType) -> _builtin_bool:
    """True when a value of dtype ``from_`` may be written into a tensor of dtype ``to`` by an
    in-place op or ``out=`` (same rule as ``torch.can_cast``): never from a higher category into a
    lower one (floating into integer or bool, integer into bool); within a category, or upwards,
    always (int64 into int8 wraps, float64 into float16 rounds, as the cast does)."""
    return _CAST_RANK[from_._kind] <= _CAST_RANK[to._kind]


def wrapped_dtype(x) -> DType:
    """Dtype a Python scalar takes part in promotion with (torch's "wrapped number" rule): bool
    -> ``bool``, int -> ``int64``, float -> the default dtype. ``TypeError`` for anything else."""
    if isinstance(x, _builtin_bool):
        return bool
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return _default[0]
    raise TypeError(f"unsupported scalar operand {x!r} of type {type(x).__name__}; expected a "
                    f"Tensor, bool, int or float")


def _combine(higher, lower):
    """torch's ``combine_categories``: ``lower`` only counts when it is of a higher category."""
    if higher is None:
        return lower
    if lower is None or higher._kind == "f":
        return higher
    if higher is bool or lower._kind == "f":
        return promote_types(higher, lower)
    return higher


_RESULT_CACHE: dict = {}


def result_type(da: DType, a_kind: int, db: DType, b_kind: int) -> DType:
    """Result dtype of ``a <op> b`` (torch's ``result_type``), from dtypes and operand kinds.

    ``a_kind``/``b_kind``: 2 = tensor with dimensions, 1 = 0-dim tensor, 0 = Python scalar (its
    dtype as given by ``wrapped_dtype``). Dimensioned tensors decide the dtype unless a 0-dim
    tensor or scalar is of a higher category (bool < integer < floating); e.g. int32 tensor +
    2.5 -> float32 (default dtype), int8 tensor + 0-dim int64 tensor -> int8, float16 +
    float32 (both dimensioned) -> float32. Cached: kernels call this on the per-call path (the
    default dtype is part of the key through the scalar's dtype).
    """
    key = (da, a_kind, db, b_kind)
    r = _RESULT_CACHE.get(key)
    if r is not None:
        return r
    states = {2: None, 1: None, 0: None}
    for d, k in ((da, a_kind), (db, b_kind)):
        states[k] = d if states[k] is None else promote_types(states[k], d)
    r = _combine(states[2], _combine(states[1], states[0]))
    _RESULT_CACHE[key] = r
    return r


# -- torch's rule for a Python number in a float16/bfloat16 op ----------------------------------
# torch's TensorIterator casts every operand to the op's common dtype before the kernel runs, so
# a Python number (a "wrapped number") taking part in a float16/bfloat16 op is rounded to that
# dtype first; the kernel then computes in float32 ("opmath") and rounds the result once. So
# ``bf16([0.1]) == 0.1`` compares bf16(0.1) with bf16(0.1): True. Three of torch's cpu kernels,
# mul, div and floor_divide, read a number given as their *second* operand at float32 instead
# (``original_scalar_value``): ``bf16 * 0.1`` multiplies by 0.1 in float32. ``s / t`` is
# ``t.reciprocal() * s`` in torch (the reciprocal rounded to the dtype, then that rule).
# Every device and path of tensorplay follows this one rule (the reference kernels, the
# fusers, the cuda launch paths), read from here.

REDUCED_FLOATS = frozenset({"float16", "bfloat16"})
SCALAR_AT_OPMATH = frozenset({"mul", "div", "floor_divide"})
# the binary ops the rule covers (the others -- pow, logical ops, where -- are unchanged)
SCALAR_ROUNDED = frozenset({"add", "sub", "rsub", "remainder", "eq", "ne", "lt", "le", "gt",
                            "ge", "maximum", "minimum"})


_F32 = _F16 = _U32 = None           # struct.Struct objects, made on the first rounding
# dtype name -> {value: rounded value}: the per-call path
_ROUNDED: dict = {"float16": {}, "bfloat16": {}}
_ROUNDED_MAX = 512


def round_scalar(value, dtype: DType):
    """``value`` (a Python float or int) rounded to ``dtype`` as torch converts a number to it
    (a double to float32, then to float16/bfloat16, each to the nearest, ties to even), returned
    as a Python float; any other dtype (and a bool) returns ``value`` unchanged. Out-of-range
    values become +-inf, NaN stays NaN. Pure Python: no array library. Cached per value (a
    program uses few distinct numbers; the kernels call this per op)."""
    name = dtype.name
    if name not in REDUCED_FLOATS or value.__class__ is _builtin_bool:
        return value
    cache = _ROUNDED[name]
    r = cache.get(value)
    if r is not None and value:          # (0.0 == -0.0 share a key: zeros are not cached)
        return r
    r = _round_reduced(value, name)
    if value == value and value:         # NaN would never be found again
        if len(cache) >= _ROUNDED_MAX:
            cache.clear()
        cache[value] = r
    return r


def _round_reduced(value, name: str) -> float:
    import math
    import struct
    global _F32, _F16, _U32
    if _F32 is None:
        _F32, _F16, _U32 = struct.Struct("<f"), struct.Struct("<e"), struct.Struct("<I")
    v = float(value)
    if math.isnan(v) or math.isinf(v):
        return v
    try:
        f32 = _F32.pack(v)                                        # float32, nearest-even
    except OverflowError:
        return math.copysign(math.inf, v)
    if name == "bfloat16":
        bits = _U32.unpack(f32)[0]
        if (bits & 0x7F800000) == 0x7F800000:                     # inf after the float32 step
            return _F32.unpack(f32)[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # nearest-even to 16 bits
        return _F32.unpack(_U32.pack(bits))[0]
    f = _F32.unpack(f32)[0]
    try:
        return _F16.unpack(_F16.pack(f))[0]                       # float16, nearest-even
    except OverflowError:
        return math.copysign(math.inf, f)


def scalar_operand(op: str, value, dtype: DType):
    """The value a kernel of ``op`` computing for ``dtype`` tensors must use for the Python
    number ``value`` given as its second operand (torch's rule above): rounded to a
    float16/bfloat16 ``dtype`` for the ops of ``SCALAR_ROUNDED``, else ``value`` itself."""
    if op in SCALAR_ROUNDED and dtype.name in REDUCED_FLOATS:
        return round_scalar(value, dtype)
    return value
