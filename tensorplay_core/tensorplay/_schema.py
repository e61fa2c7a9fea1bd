"""Operator schemas: parse, print, and infer them from Python signatures.

The schema language is the subset of PyTorch's JIT function-schema language that
``torch.library`` uses::

    ns::op.overload(Tensor self, SymInt n=1, Tensor(a!) out, *, Tensor(b!)? out2=None,
                    float[] ws, ScalarType dt=float16, Device dev="cpu") -> (Tensor, Tensor[])

* base types: ``Tensor SymInt int float bool str Scalar ScalarType Device Layout MemoryFormat``;
* ``T?`` optional, ``T[]`` list, ``T[N]`` fixed-size list, ``T?[]`` list of optionals, ``T[]?``
  optional list;
* alias annotations on tensor types only: ``Tensor(a)`` (aliases ``a``) and ``Tensor(a!)``
  (writes ``a``), also ``Tensor(a!)[]`` and ``Tensor(a!)?``;
* a bare ``*`` starts the keyword-only arguments;
* as in torch, a positional argument without a default may follow one with a default
  (``(Tensor? x=None, Tensor y)``): the op still takes ``y`` positionally or by keyword, and a call
  that leaves it out raises ``TypeError`` naming it. Argument names that are Python keywords
  (``from``, ``class``) are passed by keyword as ``**{"class": v}``;
* returns: ``()``, one type, or a parenthesised tuple whose entries may be named.

Canonical printing (what ``str(FunctionSchema)`` produces and what :func:`infer_schema` returns)::

    ns::op.overload(Tensor x, SymInt n=1, *, Tensor(a!)? out=None) -> Tensor

floats as Python ``repr`` (``1.0``, ``1e-05``, ``inf``, ``nan``), strings and devices in double
quotes, dtypes, layouts and memory formats bare, lists as ``[1, 2]``. For a canonical text ``t``,
``str(FunctionSchema.parse(t)) == t``; for any schema ``s``, ``FunctionSchema.parse(str(s)) == s``.

Every malformed schema text raises :class:`~tensorplay.errors.SchemaError` (a ``ValueError``) and
nothing else.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import inspect
import math
import os
import re
import types
import typing
from typing import Any

from . import _device, _dtype
from .errors import SchemaError

__all__ = [
    "NO_DEFAULT", "Argument", "Return", "FunctionSchema", "infer_schema", "schema_from_function",
    "normalize_mutates_args", "check_schema_matches_mutates", "bind_check", "parse_qualname",
    "BASE_TYPES", "mutation_tag", "check_tagged_schema",
]


class _NoDefault:
    """Type of :data:`NO_DEFAULT`; a singleton."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __reduce__(self):
        return "NO_DEFAULT"

    def __bool__(self) -> bool:
        return False


#: Sentinel for :attr:`Argument.default` when the argument has no default value.
NO_DEFAULT = _NoDefault()

#: The base types the schema language knows (the ``torch.library`` subset).
BASE_TYPES = frozenset({
    "Tensor", "SymInt", "int", "float", "bool", "str", "Scalar", "ScalarType", "Device",
    "Layout", "MemoryFormat",
})

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_LIST_SIZE = 2**31 - 1     # the largest fixed list size ``int[N]`` the parser accepts
_NUMBER_RE = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


# --------------------------------------------------------------------------------------------
# types
# --------------------------------------------------------------------------------------------

class _TypeInfo(typing.NamedTuple):
    base: str                 # "Tensor", "SymInt", ...
    elem_optional: bool       # "T?" (not a list) or "T?[]" (list of optionals)
    is_list: bool
    size: int | None          # N of "T[N]"
    list_optional: bool       # "T[]?"

    @property
    def text(self) -> str:
        s = self.base + ("?" if self.elem_optional else "")
        if self.is_list:
            s += f"[{'' if self.size is None else self.size}]" + ("?" if self.list_optional else "")
        return s

    @property
    def accepts_none(self) -> bool:
        return self.list_optional if self.is_list else self.elem_optional


def _type_info(type_text: str) -> _TypeInfo:
    """Parse a type string without alias annotation (``"Tensor?[]"``); raises SchemaError."""
    try:
        return _type_info_cached(type_text)
    except TypeError:  # unhashable
        raise SchemaError(f"FunctionSchema: a type must be a str, got {type_text!r}") from None


@functools.lru_cache(maxsize=512)
def _type_info_cached(type_text: str) -> _TypeInfo:
    if not isinstance(type_text, str):
        raise SchemaError(f"FunctionSchema: a type must be a str, got {type_text!r}")
    p = _Parser(type_text)
    info, alias, _ = p.type_()
    p.ws()
    if alias is not None or not p.at_end():
        raise SchemaError(
            f"FunctionSchema: {type_text!r} is not a type without alias annotation, such as "
            f"'Tensor', 'SymInt[]' or 'Tensor?'")
    return info


def _with_alias(type_text: str, alias: str | None, is_write: bool) -> str:
    if alias is None:
        return type_text
    return "Tensor" + f"({alias}{'!' if is_write else ''})" + type_text[len("Tensor"):]


def _check_alias(info: _TypeInfo, alias, is_write, what: str) -> None:
    if alias is None:
        if is_write:
            raise SchemaError(f"FunctionSchema: {what} is_write=True needs an alias name")
        return
    if not isinstance(alias, str) or not _IDENT_RE.fullmatch(alias):
        raise SchemaError(f"FunctionSchema: {what} alias must be an identifier, got {alias!r}")
    if info.base != "Tensor":
        raise SchemaError(
            f"FunctionSchema: {what} has alias annotation ({alias}) on type {info.text}; only "
            f"tensor types (Tensor, Tensor?, Tensor[]) can alias or be written")


# --------------------------------------------------------------------------------------------
# default values
# --------------------------------------------------------------------------------------------

def _escape_str(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _format_scalar(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, _dtype.DType):
        return v.name
    if isinstance(v, _device.Device):
        return _escape_str(str(v))
    if isinstance(v, _Bare):
        return str(v)
    if isinstance(v, str):
        return _escape_str(v)
    raise SchemaError(f"FunctionSchema: cannot print default value {v!r}")


def _format_default(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_format_scalar(x) for x in v) + "]"
    return _format_scalar(v)


class _Bare(str):
    """A default written as a bare identifier (``Layout``/``MemoryFormat`` values: ``strided``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def _convert_scalar(base: str, v: Any, optional: bool, what: str) -> Any:
    """Check/convert one default value ``v`` (a Python value) for base type ``base``."""
    if v is None:
        if optional:
            return None
        raise SchemaError(f"{what}: default None needs an optional type ({base}?)")
    if base in ("SymInt", "int"):
        if isinstance(v, int) and not isinstance(v, bool):
            return int(v)
    elif base == "float":
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                v = float(v)
            except OverflowError:
                raise SchemaError(f"{what}: default value {_safe_repr(v)} is too large for a "
                                  f"float") from None
            return math.nan if v != v else v
    elif base == "bool":
        if isinstance(v, bool):
            return v
    elif base == "str":
        if isinstance(v, str) and not isinstance(v, _Bare):
            return str(v)
    elif base == "Scalar":
        if isinstance(v, (bool, int, float)):
            return math.nan if v != v else v
    elif base == "ScalarType":
        if isinstance(v, (_dtype.DType, _Bare)) or _is_dtype_like(v):
            try:
                return _dtype.from_name(str(v)) if isinstance(v, _Bare) else _dtype.as_dtype(v)
            except TypeError:
                raise SchemaError(f"{what}: {str(v)!r} is not a dtype name "
                                  f"(float16, float32, int64, ...)") from None
    elif base == "Device":
        if isinstance(v, _device.Device):
            return v
        if isinstance(v, str) and not isinstance(v, _Bare):
            try:
                return _device.Device(v)
            except (ValueError, TypeError) as e:
                raise SchemaError(f"{what}: {e}") from None
    elif base in ("Layout", "MemoryFormat"):
        if isinstance(v, str) and _IDENT_RE.fullmatch(v):
            return _Bare(v)
    # Tensor: only None (handled above) or an empty list (handled by the caller).
    raise SchemaError(f"{what}: default value {_safe_repr(v)} does not fit type {base}")


def _is_dtype_like(v) -> bool:
    t = type(v)
    return t.__name__ == "DType" and (t.__module__ or "").startswith("tensorplay")


def _safe_repr(v) -> str:
    try:
        r = repr(v)
    except Exception:  # noqa: BLE001 - a user object's broken __repr__ must not hide our error
        r = f"<{type(v).__name__} object>"
    return r if len(r) <= 80 else r[:77] + "..."


def _convert_default(info: _TypeInfo, v: Any, what: str) -> Any:
    """Check a default against a type and return its canonical Python value (lists -> tuples)."""
    if v is NO_DEFAULT:
        return v
    if v is None:
        if info.accepts_none:
            return None
        raise SchemaError(f"{what}: default None needs an optional type, e.g. {info.text}?"
                          if not info.elem_optional or info.is_list else
                          f"{what}: default None needs an optional type")
    if info.is_list:
        if isinstance(v, (list, tuple)):
            vals = tuple(_convert_scalar(info.base, x, info.elem_optional, what) for x in v)
            if info.size is not None and len(vals) != info.size:
                raise SchemaError(f"{what}: default has {len(vals)} elements but the type "
                                  f"{info.text} has {info.size}")
            return vals
        if info.base in ("SymInt", "int") and isinstance(v, int) and not isinstance(v, bool):
            return int(v)  # "int[2] stride=1" broadcasts, as in torch
        raise SchemaError(f"{what}: default value {_safe_repr(v)} does not fit list type "
                          f"{info.text}; write a list such as [0, 1]")
    return _convert_scalar(info.base, v, info.elem_optional, what)


# --------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Argument:
    """One schema argument.

    Attributes:
        name: the parameter name.
        type: the type without alias annotation: ``"Tensor"``, ``"SymInt[]"``, ``"Tensor?"``.
        default: the Python default value, or :data:`NO_DEFAULT`. Lists are tuples; dtype defaults
            are :class:`~tensorplay._dtype.DType` objects; device defaults are
            :class:`~tensorplay._device.Device` objects; floats are floats (``nan`` is ``math.nan``).
        kwarg_only: the argument follows the bare ``*``.
        alias: the alias set (``"a"`` for ``Tensor(a!)``), or None.
        is_write: the argument is written (``Tensor(a!)``).

    Raises :class:`SchemaError` when the fields are inconsistent (unknown type, alias on a
    non-tensor type, default that does not fit the type).
    """

    name: str
    type: str
    default: Any = NO_DEFAULT
    kwarg_only: bool = False
    alias: str | None = None
    is_write: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not _IDENT_RE.fullmatch(self.name):
            raise SchemaError(f"FunctionSchema: argument name must be an identifier, got {self.name!r}")
        info = _type_info(self.type)
        what = f"argument {self.name!r}"
        _check_alias(info, self.alias, self.is_write, what)
        object.__setattr__(self, "default", _convert_default(info, self.default, what))

    def __eq__(self, other):
        # Compared as field tuples (as dataclasses did before Python 3.13, which compares field
        # by field): a nan default, always the ``math.nan`` object, then equals itself.
        if other.__class__ is not self.__class__:
            return NotImplemented
        return ((self.name, self.type, self.default, self.kwarg_only, self.alias, self.is_write)
                == (other.name, other.type, other.default, other.kwarg_only, other.alias,
                    other.is_write))

    @property
    def has_default(self) -> bool:
        """True when the argument has a default value."""
        return self.default is not NO_DEFAULT

    @property
    def is_tensor_like(self) -> bool:
        """True for ``Tensor``, ``Tensor?``, ``Tensor[]``, ``Tensor?[]`` (any type based on Tensor)."""
        return _type_info(self.type).base == "Tensor"

    @property
    def kind(self) -> str:
        """``"tensor"`` (Tensor), ``"optional_tensor"`` (Tensor?), ``"tensor_list"`` (Tensor[],
        Tensor?[], ...), ``"device"`` (Device, Device?) or ``"other"``."""
        info = _type_info(self.type)
        if info.base == "Tensor":
            if info.is_list:
                return "tensor_list"
            return "optional_tensor" if info.elem_optional else "tensor"
        if info.base == "Device" and not info.is_list:
            return "device"
        return "other"

    def __str__(self) -> str:
        s = f"{_with_alias(self.type, self.alias, self.is_write)} {self.name}"
        if self.default is not NO_DEFAULT:
            s += "=" + _format_default(self.default)
        return s


@dataclasses.dataclass(frozen=True)
class Return:
    """One schema return: ``type`` (without alias annotation), optional ``name``, ``alias`` and
    ``is_write`` as for :class:`Argument`. Raises :class:`SchemaError` on inconsistent fields."""

    type: str
    name: str | None = None
    alias: str | None = None
    is_write: bool = False

    def __post_init__(self):
        if self.name is not None and (not isinstance(self.name, str) or not _IDENT_RE.fullmatch(self.name)):
            raise SchemaError(f"FunctionSchema: return name must be an identifier, got {self.name!r}")
        _check_alias(_type_info(self.type), self.alias, self.is_write, "a return")

    def __str__(self) -> str:
        s = _with_alias(self.type, self.alias, self.is_write)
        return s if self.name is None else f"{s} {self.name}"


def parse_qualname(qualname: str, *, api: str = "FunctionSchema") -> tuple[str, str, str]:
    """Split ``"ns::op"`` / ``"ns::op.overload"`` into ``(ns, op, overload)`` (overload ``""``).

    Raises :class:`SchemaError` (a ``ValueError``) unless ``qualname`` is identifiers joined by
    exactly one ``::`` and at most one ``.`` (the torch.library naming rule).
    """
    if isinstance(qualname, str):
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)"
                         r"(?:\.([A-Za-z_][A-Za-z0-9_]*))?", qualname)
        if m:
            return m.group(1), m.group(2), m.group(3) or ""
    raise SchemaError(
        f"{api}: {qualname!r} is not a qualified operator name; expected 'namespace::name' "
        f"(identifiers, exactly one '::', optionally '.overload'), e.g. 'mylib::add'")


@dataclasses.dataclass(frozen=True)
class FunctionSchema:
    """A parsed operator schema (same language as ``torch._C.FunctionSchema``).

    Attributes:
        name: ``"ns::op"`` (or a bare ``"op"`` when parsed so), ``""`` when the schema has no name.
        overload_name: ``""`` when none.
        arguments: tuple of :class:`Argument`; keyword-only ones come last.
        returns: tuple of :class:`Return`.
        returns_tuple: the returns are printed in parentheses (always true for zero or several
            returns; for one return it keeps what was parsed so printing round-trips).

    Build one with :meth:`parse` or :func:`schema_from_function`. Raises :class:`SchemaError` on
    duplicate argument names, positional arguments after keyword-only ones, or an overload
    without a name.

    Example::

        >>> s = FunctionSchema.parse("mylib::f(Tensor x, *, Tensor(a!) out) -> ()")
        >>> s.mutated_args, s.signature_str()
        (('out',), '(Tensor x, *, Tensor(a!) out) -> ()')
    """

    name: str
    overload_name: str
    arguments: tuple
    returns: tuple
    returns_tuple: bool = True

    def __post_init__(self):
        object.__setattr__(self, "arguments", tuple(self.arguments))
        object.__setattr__(self, "returns", tuple(self.returns))
        if not isinstance(self.name, str) or not isinstance(self.overload_name, str):
            raise SchemaError("FunctionSchema: name and overload_name must be str")
        if self.name and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)?", self.name):
            raise SchemaError(f"FunctionSchema: {self.name!r} is not an operator name ('ns::op')")
        if self.overload_name and (not self.name or not _IDENT_RE.fullmatch(self.overload_name)):
            raise SchemaError(f"FunctionSchema: overload {self.overload_name!r} needs an operator name "
                              f"and must be an identifier")
        seen: set[str] = set()
        kw = False
        for a in self.arguments:
            if not isinstance(a, Argument):
                raise SchemaError(f"FunctionSchema: arguments must be Argument, got {a!r}")
            if a.name in seen:
                raise SchemaError(f"FunctionSchema: argument name {a.name!r} appears twice")
            seen.add(a.name)
            if kw and not a.kwarg_only:
                raise SchemaError(f"FunctionSchema: positional argument {a.name!r} follows "
                                  f"keyword-only arguments")
            kw = kw or a.kwarg_only
        for r in self.returns:
            if not isinstance(r, Return):
                raise SchemaError(f"FunctionSchema: returns must be Return, got {r!r}")
        if len(self.returns) != 1 or any(r.name is not None for r in self.returns):
            object.__setattr__(self, "returns_tuple", True)
        object.__setattr__(self, "returns_tuple", bool(self.returns_tuple))

    # ---------------------------------------------------------------- parse / print
    @classmethod
    def parse(cls, text: str) -> FunctionSchema:
        """Parse a schema text, with or without the ``ns::op.overload`` prefix.

        Raises :class:`SchemaError` (only that type) naming the position and the problem, e.g.
        ``FunctionSchema.parse: expected a type at position 1 in '(Tensr x) -> Tensor'``.
        """
        if not isinstance(text, str):
            raise SchemaError(f"FunctionSchema.parse: expected a str, got {type(text).__name__}")
        return _Parser(text).schema()

    def __str__(self) -> str:
        return self.qualname + self.signature_str()

    def signature_str(self) -> str:
        """The schema without its name: ``"(Tensor x) -> Tensor"``."""
        parts: list[str] = []
        star = False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        if self.returns_tuple:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        else:
            rets = str(self.returns[0])
        return "(" + ", ".join(parts) + ") -> " + rets

    # ---------------------------------------------------------------- names
    @property
    def qualname(self) -> str:
        """``name`` plus ``.overload`` when there is one (``""`` for an unnamed schema)."""
        return self.name + ("." + self.overload_name if self.overload_name else "")

    @property
    def namespace(self) -> str:
        """The part of ``name`` before ``::`` (``""`` if none)."""
        return self.name.partition("::")[0] if "::" in self.name else ""

    @property
    def op_name(self) -> str:
        """The part of ``name`` after ``::`` (the whole name if there is no namespace)."""
        return self.name.rpartition("::")[2]

    def with_name(self, qualname: str) -> FunctionSchema:
        """This schema renamed to ``"ns::op"`` or ``"ns::op.overload"``.

        Raises :class:`SchemaError` when ``qualname`` is not a qualified name (:func:`parse_qualname`).
        """
        ns, op, overload = parse_qualname(qualname, api="FunctionSchema.with_name")
        return dataclasses.replace(self, name=f"{ns}::{op}", overload_name=overload)

    # ---------------------------------------------------------------- mutation
    @property
    def mutated_args(self) -> tuple[str, ...]:
        """Names of the arguments written by the op (``Tensor(a!)``), in order."""
        return tuple(a.name for a in self.arguments if a.is_write)


# --------------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------------

class _Parser:
    """Recursive-descent parser over characters; every failure is a SchemaError with position."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    # ---- helpers
    def fail(self, msg: str, pos: int | None = None):
        pos = self.pos if pos is None else pos
        t = self.text if len(self.text) <= 200 else self.text[:200] + "..."
        raise SchemaError(f"FunctionSchema.parse: {msg} at position {pos} in {t!r}")

    def ws(self) -> None:
        t, n, i = self.text, len(self.text), self.pos
        while i < n and t[i] in " \t\n\r":
            i += 1
        self.pos = i

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        self.ws()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.accept(s):
            self.fail(f"expected {what or repr(s)}, found {self._found()}")

    def _found(self) -> str:
        if self.at_end():
            return "the end of the text"
        return repr(self.text[self.pos:self.pos + 12])

    def ident(self, what: str = "an identifier") -> str:
        self.ws()
        m = _IDENT_RE.match(self.text, self.pos)
        if not m:
            self.fail(f"expected {what}, found {self._found()}")
        self.pos = m.end()
        return m.group(0)

    # ---- grammar
    def schema(self) -> FunctionSchema:
        name = overload = ""
        self.ws()
        if not self.peek("("):
            name = self.ident("an operator name or '('")
            if self.accept("::"):
                name += "::" + self.ident("an operator name after '::'")
            if self.accept("."):
                overload = self.ident("an overload name after '.'")
            if not self.peek("("):
                self.fail(f"expected '(' after the operator name, found {self._found()}")
        args = self.arguments()
        self.expect("->", "'->' after the arguments")
        returns, tup = self.returns()
        self.ws()
        if not self.at_end():
            self.fail(f"unexpected text {self._found()} after the returns")
        try:
            return FunctionSchema(name, overload, tuple(args), tuple(returns), tup)
        except SchemaError as e:
            msg = str(e).replace("FunctionSchema: ", "")
            self.fail(msg, 0)

    def arguments(self) -> list[Argument]:
        self.expect("(")
        args: list[Argument] = []
        names: set[str] = set()
        if self.accept(")"):
            return args
        kw = False
        while True:
            if self.accept("*"):
                if kw:
                    self.fail("a second '*'", self.pos - 1)
                kw = True
                if self.peek(")"):
                    self.fail("'*' must be followed by keyword-only arguments")
            else:
                start = self.pos
                info, alias, write = self.type_()
                name_pos = self.pos
                name = self.ident("an argument name")
                if name in names:       # a set: parsing stays linear in the argument count
                    self.fail(f"argument name {name!r} appears twice", name_pos)
                names.add(name)
                default: Any = NO_DEFAULT
                if self.accept("="):
                    default = self.default()
                try:
                    args.append(Argument(name, info.text, default, kw, alias, write))
                except SchemaError as e:
                    msg = str(e).replace("FunctionSchema: ", "")
                    self.fail(msg, start)
            if self.accept(")"):
                return args
            self.expect(",", "',' or ')'")

    def type_(self) -> tuple[_TypeInfo, str | None, bool]:
        self.ws()
        start = self.pos
        m = _IDENT_RE.match(self.text, self.pos)
        if not m or m.group(0) not in BASE_TYPES:
            self.fail(f"expected a type ({', '.join(sorted(BASE_TYPES))}), found {self._found()}")
        base = m.group(0)
        self.pos = m.end()
        alias, write = None, False
        if self.accept("("):
            if base != "Tensor":
                self.fail(f"alias annotations are only allowed on Tensor, not {base}", start)
            alias = self.ident("an alias name such as 'a'")
            write = self.accept("!")
            self.expect(")", "')' closing the alias annotation")
        elem_opt = self.accept("?")
        is_list, size, list_opt = False, None, False
        if self.accept("["):
            is_list = True
            self.ws()
            m = re.compile(r"\d+").match(self.text, self.pos)
            if m:
                digits = m.group(0)
                # no list has more than 2**31 - 1 elements (and int() refuses over 4300 digits)
                if len(digits) > 10 or int(digits) > _MAX_LIST_SIZE:
                    self.fail(f"list size of {len(digits)} digits is too large (at most "
                              f"{_MAX_LIST_SIZE})", m.start())
                size = int(digits)
                self.pos = m.end()
            self.expect("]", "']' closing the list type")
            list_opt = self.accept("?")
        if self.peek("[") or self.peek("?"):
            self.fail("unsupported type suffix (nested lists or '??')")
        return _TypeInfo(base, elem_opt, is_list, size, list_opt), alias, write

    def scalar_literal(self) -> Any:
        self.ws()
        t, i = self.text, self.pos
        if i >= len(t):
            self.fail("expected a default value, found the end of the text")
        c = t[i]
        if c in "\"'":
            return self.string()
        if t.startswith("-inf", i) and not _IDENT_RE.match(t, i + 4):
            self.pos = i + 4
            return -math.inf
        m = _NUMBER_RE.match(t, i)
        if m and not _IDENT_RE.match(t, m.end()):
            self.pos = m.end()
            s = m.group(0)
            if re.fullmatch(r"-?\d+", s):
                try:
                    return int(s)
                except ValueError:      # over Python's int-string limit (4300 digits)
                    self.fail(f"integer literal of {len(s)} digits is too long", i)
            v = float(s)
            return math.nan if v != v else v
        m = _IDENT_RE.match(t, i)
        if m:
            self.pos = m.end()
            word = m.group(0)
            consts = {"True": True, "False": False, "None": None, "inf": math.inf, "nan": math.nan}
            if word in consts:
                return consts[word]
            return _Bare(word)
        self.fail(f"expected a default value, found {self._found()}")

    def default(self) -> Any:
        if self.accept("["):
            vals = []
            if self.accept("]"):
                return vals
            while True:
                if self.peek("["):
                    self.fail("nested lists are not supported as defaults")
                vals.append(self.scalar_literal())
                if self.accept("]"):
                    return vals
                self.expect(",", "',' or ']' in the list default")
        return self.scalar_literal()

    _ESC = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0", "\\": "\\",
            '"': '"', "'": "'", "/": "/"}

    def string(self) -> str:
        t = self.text
        q = t[self.pos]
        start = self.pos
        i = self.pos + 1
        out: list[str] = []
        while True:
            if i >= len(t):
                self.fail("unterminated string", start)
            c = t[i]
            if c == q:
                self.pos = i + 1
                return "".join(out)
            if c == "\\":
                if i + 1 >= len(t):
                    self.fail("unterminated string", start)
                e = t[i + 1]
                if e in self._ESC:
                    out.append(self._ESC[e])
                    i += 2
                elif e in "xu":
                    n = 2 if e == "x" else 4
                    hexs = t[i + 2:i + 2 + n]
                    if len(hexs) != n or not re.fullmatch(r"[0-9a-fA-F]+", hexs):
                        self.fail(f"bad \\{e} escape in string", i)
                    out.append(chr(int(hexs, 16)))
                    i += 2 + n
                else:
                    self.fail(f"unknown escape \\{e} in string", i)
            else:
                out.append(c)
                i += 1

    def returns(self) -> tuple[list[Return], bool]:
        if self.accept("("):
            rets: list[Return] = []
            if self.accept(")"):
                return rets, True
            while True:
                rets.append(self.one_return(allow_name=True))
                if self.accept(")"):
                    return rets, True
                self.expect(",", "',' or ')' in the returns")
        return [self.one_return(allow_name=False)], False

    def one_return(self, allow_name: bool) -> Return:
        start = self.pos
        info, alias, write = self.type_()
        name = None
        self.ws()
        if allow_name and _IDENT_RE.match(self.text, self.pos):
            name = self.ident()
        try:
            return Return(info.text, name, alias, write)
        except SchemaError as e:
            self.fail(str(e).replace("FunctionSchema: ", ""), start)


# --------------------------------------------------------------------------------------------
# inference from Python signatures (SPEC §3; same rules as torch.library.infer_schema)
# --------------------------------------------------------------------------------------------

class _Unsupported(Exception):
    """Internal: an annotation has no schema type; ``hint`` is an optional fix suggestion."""

    def __init__(self, hint: str = ""):
        super().__init__(hint)
        self.hint = hint


_SCALARS = {int: "SymInt", float: "float", bool: "bool", str: "str"}
_PY_NAMES = {"SymInt": "int", "float": "float", "bool": "bool", "str": "str",
             "Tensor": "Tensor", "ScalarType": "tensorplay.dtype", "Device": "tensorplay.device"}


def _is_tensor_class(t) -> bool:
    if not isinstance(t, type):
        return False
    for c in getattr(t, "__mro__", (t,)):  # tensorplay.Tensor or a subclass of it
        if c.__name__ == "Tensor" and (getattr(c, "__module__", "") or "").startswith("tensorplay"):
            return True
    return False


def _is_class_named(t, cls, name: str) -> bool:
    if t is cls:
        return True
    return (isinstance(t, type) and t.__name__ == name
            and (getattr(t, "__module__", "") or "").startswith("tensorplay"))


def _is_none_type(t) -> bool:
    return t is None or t is type(None)


def _strip_annotated(t):
    while typing.get_origin(t) is typing.Annotated:
        t = typing.get_args(t)[0]
    return t


_LIST_ORIGINS = (list, collections.abc.Sequence, collections.abc.MutableSequence)


def _schema_type(t, resolve) -> str:
    """Schema type text for a (resolved) annotation ``t``; raises _Unsupported."""
    t = _strip_annotated(resolve(t))
    if _is_tensor_class(t):
        return "Tensor"
    if isinstance(t, type) and t in _SCALARS:
        return _SCALARS[t]
    if _is_class_named(t, _dtype.DType, "DType"):
        return "ScalarType"
    if _is_class_named(t, _device.Device, "Device"):
        return "Device"
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        rest = [a for a in args if not _is_none_type(a)]
        if len(rest) == 1 and len(rest) < len(args):
            inner = _schema_type(rest[0], resolve)
            if inner.endswith("?"):
                return inner
            return inner + "?"
        raise _Unsupported("a Union is only supported as Optional[X] (X | None)")
    if origin in _LIST_ORIGINS or t in _LIST_ORIGINS or t in (typing.List, typing.Sequence):
        if len(args) != 1:
            raise _Unsupported("give the element type, e.g. list[int] or list[Tensor]")
        elem = _schema_type(args[0], resolve)
        if "[" in elem:
            raise _Unsupported("nested lists are not supported")
        return elem + "[]"
    if origin is tuple or t in (tuple, typing.Tuple):
        raise _Unsupported(_tuple_hint(args, resolve))
    raise _Unsupported()


def _tuple_hint(args, resolve) -> str:
    elems = [a for a in args if a is not Ellipsis]
    if not elems or args == ((),):
        return "tuple parameters are not supported; use a list[...] parameter instead"
    bases, optional = set(), False
    try:
        for a in elems:
            s = _schema_type(a, resolve)
            if "[" in s:
                raise _Unsupported()
            if s.endswith("?"):
                optional, s = True, s[:-1]
            bases.add(s)
    except _Unsupported:
        bases = set()
    if len(bases) == 1:
        py = _PY_NAMES[bases.pop()]
        form = f"list[Optional[{py}]]" if optional else f"list[{py}]"
        return f"tuple parameters are not supported; use {form} instead"
    return "tuple parameters are not supported; use a list[...] of one element type, or separate parameters"


def _type_repr(t) -> str:
    if isinstance(t, str):
        return repr(t)
    if isinstance(t, type) and not typing.get_args(t):
        mod = t.__module__
        return t.__qualname__ if mod == "builtins" else f"{mod}.{t.__qualname__}"
    return repr(t).replace("typing.", "")


def _fn_label(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or _safe_repr(fn)


def _fn_site(fn) -> str:
    """``qualname at file.py:LINE`` for error messages."""
    f = inspect.unwrap(fn) if callable(fn) else fn
    f = getattr(f, "func", f)  # functools.partial
    code = getattr(f, "__code__", None)
    label = _fn_label(fn)
    if code is None:
        return label
    return f"{label} at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def _make_resolver(fn, api: str, where_fn):
    """A function that turns string annotations / ForwardRefs into objects in fn's globals."""
    target = inspect.unwrap(fn)
    target = getattr(target, "func", target)
    globalns = dict(getattr(target, "__globals__", None) or {})
    code = getattr(target, "__code__", None)
    closure = getattr(target, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure):
            try:
                globalns.setdefault(name, cell.cell_contents)
            except ValueError:  # empty cell
                pass

    def resolve(t):
        if isinstance(t, typing.ForwardRef):
            t = t.__forward_arg__
        if isinstance(t, str):
            try:
                return eval(t, globalns)  # noqa: S307 - annotations are code the user wrote
            except Exception as e:  # noqa: BLE001 - reported with the parameter named
                raise SchemaError(
                    f"{api}: cannot resolve the annotation {t!r} of {where_fn()} of "
                    f"{_fn_site(fn)}: {type(e).__name__}: {e}. Import the names it uses at "
                    f"module level of the function's module") from None
        return t

    return resolve


def _infer_params(fn, api: str) -> tuple[list[tuple[str, str, Any, bool]], inspect.Signature]:
    """``[(name, type_text, default, kwarg_only)]`` for the parameters of ``fn`` (no aliases)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise SchemaError(f"{api}: cannot read the signature of {_safe_repr(fn)}: {e}") from None
    current = [""]
    resolve = _make_resolver(fn, api, lambda: current[0])
    out = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        current[0] = f"parameter {p.name!r}"
        if p.annotation is p.empty:
            type_text = "Tensor?" if p.default is None else "Tensor"
        else:
            ann = resolve(p.annotation)
            try:
                type_text = _schema_type(ann, resolve)
            except _Unsupported as u:
                hint = f"; {u.hint}" if u.hint else (
                    "; supported: Tensor, int, float, bool, str, tensorplay.dtype, tensorplay.device, "
                    "Optional[X] / X | None, list[X]")
                raise SchemaError(
                    f"{api}: parameter {p.name!r} of {_fn_site(fn)} has unsupported type "
                    f"{_type_repr(ann)}{hint}") from None
        default = NO_DEFAULT if p.default is p.empty else p.default
        what = f"{api}: parameter {p.name!r} of {_fn_site(fn)}"
        try:
            default = _convert_default(_type_info(type_text), default, what)
        except SchemaError as e:
            if p.annotation is not p.empty:
                raise
            raise SchemaError(
                f"{e}; a parameter without annotation is a Tensor, so annotate it, e.g. "
                f"`{p.name}: {type(p.default).__name__} = {_safe_repr(p.default)}`") from None
        out.append((p.name, type_text, default, p.kind == p.KEYWORD_ONLY))
    return out, sig


def _infer_returns(fn, sig: inspect.Signature, api: str) -> tuple[list[Return], bool]:
    ann = sig.return_annotation
    if ann is inspect.Signature.empty:
        return [Return("Tensor")], False
    resolve = _make_resolver(fn, api, lambda: "the return annotation")
    ann = _strip_annotated(resolve(ann))
    if _is_none_type(ann):
        return [], True

    def one(t) -> Return:
        try:
            return Return(_schema_type(t, resolve))
        except _Unsupported as u:
            raise SchemaError(f"{api}: the return annotation {_type_repr(ann)} of {_fn_site(fn)} "
                              f"is not supported{'; ' + u.hint if u.hint else ''}; return a Tensor, "
                              f"a tuple[...] of supported types, list[Tensor], or None") from None

    origin = typing.get_origin(ann)
    if ann in (tuple, typing.Tuple):
        raise SchemaError(f"{api}: the return annotation {_type_repr(ann)} of {_fn_site(fn)} "
                          f"needs its element types, e.g. tuple[Tensor, Tensor]")
    if origin is tuple:
        args = typing.get_args(ann)
        if args in ((), ((),)):
            return [], True
        if not args or Ellipsis in args:
            raise SchemaError(f"{api}: the return annotation {_type_repr(ann)} of {_fn_site(fn)} "
                              f"needs a fixed number of elements, e.g. tuple[Tensor, Tensor]")
        return [one(a) for a in args], True
    return [one(ann)], False


def _alias_name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = letters[r] + s
    return s


def _param_tensor_map(target, api: str) -> dict[str, str]:
    """``{name: type_text}`` of a FunctionSchema, a callable, a mapping or names (type "Tensor")."""
    if isinstance(target, FunctionSchema):
        return {a.name: a.type for a in target.arguments}
    if isinstance(target, collections.abc.Mapping):
        return {k: (v if isinstance(v, str) else ("Tensor" if v else "other")) for k, v in target.items()}
    if callable(target):
        params, _ = _infer_params(target, api)
        return {n: t for n, t, _, _ in params}
    return {n: "Tensor" for n in target}


def normalize_mutates_args(mutates_args, params, api: str = "custom_op") -> tuple[str, ...]:
    """Check ``mutates_args`` and return the mutated parameter names in parameter order.

    ``params`` describes the op's parameters: a :class:`FunctionSchema`, the Python function
    (its parameters are typed as :func:`infer_schema` does), a mapping ``{name: type text or
    is_tensor bool}``, or an iterable of names (all taken as tensors). ``"unknown"`` means every
    tensor-like parameter.

    Raises ``ValueError`` (message starting with ``api``) when ``mutates_args`` is a string other
    than ``"unknown"``, is not a collection of strings, names a parameter that does not exist, or
    names a parameter that is not a tensor (Tensor, Tensor?, Tensor[], Tensor?[]). Same rules as
    ``torch.library.custom_op``.
    """
    types_ = _param_tensor_map(params, api)
    is_tensor = {n: t.startswith("Tensor") for n, t in types_.items()}
    if isinstance(mutates_args, str):
        if mutates_args == "unknown":
            return tuple(n for n, ok in is_tensor.items() if ok)
        raise ValueError(
            f"{api}: mutates_args must be a collection of parameter names or 'unknown', got the "
            f"string {mutates_args!r}; write mutates_args=({mutates_args!r},) to mutate that "
            f"parameter, or mutates_args=() for none")
    if isinstance(mutates_args, collections.abc.Mapping) and not mutates_args:
        return ()       # ``{}``: what torch's own examples write for "mutates nothing"
    if isinstance(mutates_args, collections.abc.Mapping) or not isinstance(mutates_args, collections.abc.Iterable):
        raise ValueError(
            f"{api}: mutates_args must be a collection of parameter names or 'unknown', got "
            f"{_safe_repr(mutates_args)}; use mutates_args=() when the op mutates nothing")
    names = list(mutates_args)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise ValueError(f"{api}: mutates_args must contain parameter names (str), got {bad!r}")
    unknown = [n for n in names if n not in is_tensor]
    if unknown:
        raise ValueError(
            f"{api}: mutates_args names {unknown!r}, which are not parameters of the op "
            f"(parameters: {list(is_tensor)})")
    not_tensor = [n for n in names if not is_tensor[n]]
    if not_tensor:
        desc = ", ".join(f"{n!r} ({types_[n]})" for n in not_tensor)
        raise ValueError(
            f"{api}: mutates_args names {desc}, which are not tensors; only Tensor, Tensor?, "
            f"Tensor[] parameters can be mutated")
    wanted = set(names)
    return tuple(n for n in is_tensor if n in wanted)


def schema_from_function(fn, *, mutates_args, op_name: str | None = None,
                         api: str = "infer_schema", tags=()) -> FunctionSchema:
    """Infer a :class:`FunctionSchema` from ``fn``'s annotations (same rules as
    ``torch.library.infer_schema``, except that a missing return annotation means ``Tensor`` and a
    parameter without annotation defaulting to ``None`` is ``Tensor?``).

    Mutated tensors get alias letters ``a``, ``b``, ``c``... in parameter order. ``op_name``
    (``"ns::op"`` or ``"ns::op.overload"``) names the schema. ``tags`` containing ``Tag.inplace``
    or ``Tag.out`` make the returns the written arguments' aliases, as torch 2.13 infers them:
    ``(Tensor(a!) x, Tensor y) -> Tensor(a!)``, ``(Tensor x, *, Tensor(a!) out) -> Tensor(a!)``
    (then checked by :func:`check_tagged_schema`).

    Raises ``ValueError`` for a bad ``mutates_args`` (:func:`normalize_mutates_args`), a tagged
    function that does not have the tag's shape (:func:`check_tagged_schema`), and
    :class:`SchemaError` (a ``ValueError``) for an unsupported or unresolvable annotation, a default
    that does not fit its type, or a malformed ``op_name``.
    """
    params, sig = _infer_params(fn, api)
    mutated = set(normalize_mutates_args(mutates_args, {n: t for n, t, _, _ in params}, api))
    args = []
    k = 0
    for name, type_text, default, kw in params:
        alias = None
        if name in mutated:
            alias = _alias_name(k)
            k += 1
        args.append(Argument(name, type_text, default, kw, alias, alias is not None))
    rets, tup = _infer_returns(fn, sig, api)
    kind = mutation_tag(tags, api)
    if kind is not None:
        rets, tup = _tagged_returns(kind, args, rets, tup)
    schema = FunctionSchema("", "", tuple(args), tuple(rets), tup)
    if op_name is not None:
        schema = schema.with_name(op_name)
    if kind is not None:
        check_tagged_schema(schema, tags, api, fn=fn)
    return schema


# --------------------------------------------------------------------------------------------
# Tag.inplace / Tag.out: the two shapes of op allowed to return what they write (torch 2.13)
# --------------------------------------------------------------------------------------------

def mutation_tag(tags, api: str = "custom_op") -> str | None:
    """``"inplace"`` or ``"out"`` when ``tags`` holds ``Tag.inplace`` or ``Tag.out`` (the enum
    or its name), else None. ``ValueError`` when it holds both (no op is both)."""
    if not tags:
        return None
    if isinstance(tags, str):       # one Tag (a str enum) or its name
        tags = (tags,)
    found = [t for t in ("inplace", "out") if any(x == t for x in tags)]
    if len(found) == 2:
        raise ValueError(f"{api}: an op cannot be tagged both Tag.inplace and Tag.out: Tag.inplace "
                         f"is for an op that writes its first argument and returns it, Tag.out "
                         f"for one that writes keyword-only out= tensors and returns them")
    return found[0] if found else None


def _tagged_returns(kind, args, rets, tup):
    """The returns of a tagged op inferred from its annotation: the plain ``Tensor`` returns
    become the aliases of the written arguments (``Tensor(a!)``), in order. A return annotation
    that does not fit (``None``, another count, a non-Tensor) is kept, for
    :func:`check_tagged_schema` to refuse with its message."""
    written = [a for a in args if a.is_write]
    if kind == "inplace":
        written = written[:1] if args and args[0].is_write else []
    if written and len(rets) == len(written) and all(r.type == "Tensor" and r.alias is None
                                                     for r in rets):
        return [Return("Tensor", r.name, a.alias, True) for r, a in zip(rets, written)], tup
    return rets, tup


def check_tagged_schema(schema: FunctionSchema, tags, api: str, *, fn=None) -> None:
    """Refuse a schema that does not have the shape its ``Tag.inplace``/``Tag.out`` tag promises
    (same rules as torch 2.13's ``torch.library.custom_op``/``Library.define``).

    * ``Tag.inplace``: the first argument is a positional plain ``Tensor`` that the op writes
      (``Tensor(a!) x``; ``mutates_args`` names it), no other argument is written, and the op
      returns exactly one ``Tensor(a!)`` -- that argument (``-> Tensor(a!)``).
    * ``Tag.out``: at least one argument is written, every written argument is a keyword-only
      plain ``Tensor`` (after ``*``; not ``Tensor?``/``Tensor[]``), and the op returns them all,
      in declaration order (``-> Tensor(a!)`` or ``-> (Tensor(a!), Tensor(b!))``).

    Raises ``ValueError`` whose message starts with ``api`` (which names the op) and names the
    offending argument or return. Schemas without these tags pass unchecked.
    """
    kind = mutation_tag(tags, api)
    if kind is None:
        return
    sig = schema.signature_str()
    where = f" ({_fn_site(fn)})" if fn is not None else ""
    written = [a for a in schema.arguments if a.is_write]

    def fail(what, fix):
        raise ValueError(f"{api}: the op is tagged Tag.{kind} but {what}; schema {sig}{where}. "
                         f"{fix}")

    rets = schema.returns
    if kind == "inplace":
        fix = ("A Tag.inplace op writes its first positional Tensor argument, only it, and "
               "returns that same tensor: (Tensor(a!) x, ...) -> Tensor(a!), i.e. "
               "mutates_args={'x'} and a return annotation Tensor (same rule as "
               "torch.library.custom_op); otherwise drop the tag and return nothing you write.")
        if not schema.arguments or schema.arguments[0].kwarg_only:
            fail("it has no positional first argument", fix)
        first = schema.arguments[0]
        if first.type != "Tensor":
            fail(f"its first argument '{first.name}' is {first.type}, not a plain Tensor", fix)
        if not first.is_write:
            fail(f"its first argument '{first.name}' is not mutated (mutates_args / "
                 f"Tensor(a!) {first.name})", fix)
        others = [a.name for a in written if a is not first]
        if others:
            fail(f"it also mutates {', '.join(repr(n) for n in others)}: only the first "
                 f"argument '{first.name}' may be mutated", fix)
        if len(rets) != 1 or rets[0].type != "Tensor":
            fail(f"it returns {_returns_text(schema)} instead of one Tensor, its argument "
                 f"'{first.name}'", fix)
        r = rets[0]
        if r.alias != first.alias or not r.is_write:
            fail(f"its return is {r} instead of Tensor({first.alias}!), the argument "
                 f"'{first.name}' itself", fix)
        return
    fix = ("A Tag.out op writes keyword-only out= tensors and returns them in declaration "
           "order: (Tensor x, *, Tensor(a!) out) -> Tensor(a!), i.e. mutates_args={'out'}, "
           "'out' after * and a return annotation Tensor (tuple[Tensor, ...] for several) "
           "(same rule as torch.library.custom_op); otherwise drop the tag and return nothing "
           "you write.")
    if not written:
        fail("it mutates no argument (mutates_args is empty)", fix)
    positional = [a.name for a in written if not a.kwarg_only]
    if positional:
        fail(f"its mutated argument(s) {', '.join(repr(n) for n in positional)} are not "
             f"keyword-only", fix)
    not_plain = [f"'{a.name}' ({a.type})" for a in written if a.type != "Tensor"]
    if not_plain:
        fail(f"its mutated argument(s) {', '.join(not_plain)} are not plain Tensors", fix)
    if len(rets) != len(written):
        fail(f"it returns {_returns_text(schema)} instead of its {len(written)} out argument(s) "
             f"({', '.join(repr(a.name) for a in written)})", fix)
    by_alias = {a.alias: a.name for a in written}
    for i, (r, a) in enumerate(zip(rets, written)):
        if r.type != "Tensor" or r.alias != a.alias or not r.is_write:
            other = by_alias.get(r.alias)
            got = f"{r}" + (f" (out argument '{other}')" if other else "")
            fail(f"return {i} is {got} instead of Tensor({a.alias}!), the out argument "
                 f"'{a.name}'", fix)


def _returns_text(schema: FunctionSchema) -> str:
    rets = schema.returns
    if not rets:
        return "nothing (-> ())"
    return "(" + ", ".join(str(r) for r in rets) + ")" if schema.returns_tuple else str(rets[0])


def infer_schema(fn, /, *, mutates_args, op_name: str | None = None, tags=()) -> str:
    """The schema string of ``fn`` (same as ``torch.library.infer_schema``, with torch 2.13's
    ``tags``: ``Tag.inplace`` gives ``(Tensor(a!) x, ...) -> Tensor(a!)``, ``Tag.out`` gives
    ``(Tensor x, *, Tensor(a!) out) -> Tensor(a!)``; see :func:`check_tagged_schema`).

    Example::

        >>> def f(x, n: int, out) -> None: ...
        >>> infer_schema(f, mutates_args=("out",), op_name="ns::op")
        'ns::op(Tensor x, SymInt n, Tensor(a!) out) -> ()'
        >>> infer_schema(f, mutates_args={}, op_name="op")      # a bare name is kept as given
        'op(Tensor x, SymInt n, Tensor out) -> ()'

    Types: no annotation / ``tensorplay.Tensor`` -> ``Tensor``; ``int`` -> ``SymInt``; ``float``,
    ``bool``, ``str``; ``Optional[X]`` / ``X | None`` -> ``X?``; ``list[X]`` / ``Sequence[X]`` ->
    ``X[]``; ``tensorplay.dtype`` -> ``ScalarType``; ``tensorplay.device`` -> ``Device``. Returns:
    ``None`` -> ``()``, ``tuple[A, B]`` -> ``(A, B)``, missing -> ``Tensor``. ``*args`` and
    ``**kwargs`` are skipped; keyword-only parameters follow ``*``. String annotations resolve in
    ``fn.__globals__``.

    Raises ``ValueError`` for bad ``mutates_args`` or a function that does not have the shape
    its ``Tag.inplace``/``Tag.out`` tag promises, :class:`SchemaError` (a ``ValueError``) for
    unsupported annotations (naming the parameter; tuples get a list-form suggestion).
    """
    if op_name is not None and isinstance(op_name, str) and "::" not in op_name:
        # a bare name ("foo" or "foo.overload") is printed as given, as torch does:
        # infer_schema(f, op_name="foo", mutates_args={}) == "foo(Tensor x) -> Tensor"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?", op_name):
            raise SchemaError(f"infer_schema: op_name {op_name!r} is not an operator name; "
                              f"expected 'name', 'name.overload' or 'ns::name'")
        schema = schema_from_function(fn, mutates_args=mutates_args, tags=tags)
        return op_name + schema.signature_str()
    return str(schema_from_function(fn, mutates_args=mutates_args, op_name=op_name, tags=tags))


def check_schema_matches_mutates(schema: FunctionSchema, mutates_args, api: str) -> None:
    """Raise ``ValueError`` when ``schema``'s written arguments (``Tensor(a!)``) differ from
    ``mutates_args`` (a given schema must agree with ``mutates_args``).

    ``mutates_args`` may be ``"unknown"`` (every tensor argument). The message starts with ``api``
    and names the arguments on each side of the disagreement.
    """
    declared = set(normalize_mutates_args(mutates_args, schema, api))
    written = set(schema.mutated_args)
    if declared == written:
        return
    parts = []
    only_schema = [a.name for a in schema.arguments if a.name in written - declared]
    only_decl = [a.name for a in schema.arguments if a.name in declared - written]
    if only_schema:
        parts.append(f"the schema writes {only_schema} (Tensor(x!)) but mutates_args does not list them")
    if only_decl:
        parts.append(f"mutates_args lists {only_decl} but the schema does not mark them written "
                     f"(Tensor(x!))")
    raise ValueError(f"{api}: the schema {schema} disagrees with mutates_args="
                     f"{_safe_repr(mutates_args)}: {'; '.join(parts)}. Make them agree")


def bind_check(fn, schema: FunctionSchema, what: str, api: str) -> None:
    """Raise ``ValueError`` unless ``fn`` can be called as the op calls kernels: the schema's
    positional arguments positionally and its keyword-only arguments by keyword (a
    registered function whose signature cannot bind the op's parameters is rejected).

    The message names the missing or extra parameter, the function (qualname and file:line) and
    the op's signature, e.g. ``register_fake("t10::f"): the fake kernel _ at f.py:12 cannot take
    parameter 'n' of (Tensor x, SymInt n) -> Tensor; give it the same parameters as the op``
    Functions whose signature cannot be read are accepted.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = list(sig.parameters.values())
    var_pos = any(p.kind == p.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    filled: set[str] = set()
    sig_text = schema.signature_str()
    site = _fn_site(fn)

    def fail(arg_name: str):
        raise ValueError(f"{api}: the {what} {site} cannot take parameter {arg_name!r} of "
                         f"{sig_text}; give it the same parameters as the op")

    pos_args = [a for a in schema.arguments if not a.kwarg_only]
    for i, a in enumerate(pos_args):
        if i < len(positional):
            filled.add(positional[i].name)
        elif not var_pos:
            fail(a.name)
    for a in schema.arguments:
        if not a.kwarg_only:
            continue
        p = by_name.get(a.name)
        if p is not None and p.name not in filled:
            filled.add(p.name)
        elif not var_kw:
            fail(a.name)
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in filled:
            continue
        if p.default is p.empty:
            raise ValueError(f"{api}: the {what} {site} requires parameter {p.name!r}, which "
                             f"{sig_text} does not have; give it a default or the same parameters "
                             f"as the op")
