"""``tensorplay.ops.<namespace>.<op>``: attribute access to every registered operator.

An op without named overloads is its own record (``CustomOpDef``: ``.default`` is itself,
``.overloads()`` is ``["default"]``); an op with named overloads (``Library.define("op.out(...)
-> ...")``) is an ``OpOverloadPacket``, as ``torch.ops.ns.op`` is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _registry
from . import plugins as _plugins
from ._schema import _type_info
from ._dispatch import _accepts
from .errors import DispatchError

if TYPE_CHECKING:
    from ._registry import CustomOpDef


_packets = _registry.PACKETS     # the "ns::op" with named overloads (mutated in place only)


class _Namespace:
    """``tensorplay.ops.<ns>``: the ops of one namespace as attributes (live view of the registry,
    like ``torch.ops.<ns>``). A missing op is an ``AttributeError`` naming it (and the plugin that
    failed to provide it, if any)."""

    def __init__(self, ns: str):
        self._ns = ns

    def __getattr__(self, name: str) -> CustomOpDef[..., Any] | OpOverloadPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        if self._ns in _registry.lazy_namespaces:   # an op pack not imported yet (or loading)
            _plugins.load_namespace(self._ns)
        key = f"{self._ns}::{name}"
        op = _registry.registered(key)
        # named overloads: the packet (an op without them is itself). ``_packets`` is the
        # registry's set itself, read as a global: empty (no overload anywhere) costs one truth
        # test on this path
        if _packets and key in _packets:
            return OpOverloadPacket(key)
        if op is None:
            from .plugins import manager as _pm
            # a plugin imported before tensorplay may still be pending; a pack may define it
            _pm.load_for(f"{self._ns}::{name}")
            op = _registry.registered(f"{self._ns}::{name}")
        if op is None:
            rec = _pm.op_failure(f"{self._ns}::{name}")   # a plugin that failed to provide it?
            hint = f"; {_pm.op_failure_hint(f'{self._ns}::{name}')}" if rec is not None else ""
            if rec is None:
                known = __dir__()           # error path only: every op pack is imported
                if self._ns not in known:   # a namespace nobody registered: most often a typo
                    import difflib
                    close = difflib.get_close_matches(self._ns, known, n=1)
                    hint = (f"; no operator is registered in namespace {self._ns!r} (known: "
                            f"{', '.join(known)})"
                            + (f". Did you mean tensorplay.ops.{close[0]}?" if close else ""))
            raise AttributeError(f"tensorplay.ops.{self._ns} has no operator {name!r}{hint}") \
                from (rec.error if rec is not None else None)
        return op

    def __dir__(self):
        _plugins.load_namespace(self._ns)
        p = self._ns + "::"
        # one name per op family: "op" for ns::op and its overloads ns::op.out, ...
        return sorted({o.name[len(p):].partition(".")[0] for o in _registry.all_ops()
                       if o.name.startswith(p)})

    def __repr__(self):
        return f"<tensorplay.ops.{self._ns}>"


class OpOverloadPacket:
    """``tensorplay.ops.ns.op`` for an op with named overloads (torch's ``OpOverloadPacket``).

    ``packet.out`` is the overload ``ns::op.out`` (a ``CustomOpDef``), ``packet.default`` the
    default one (``ns::op``), ``packet.overloads()`` their names in registration order
    (``"default"`` for ``ns::op``). ``packet(*args, **kwargs)`` calls the first overload, in that
    order, whose schema takes the arguments: positional ones fill the non-keyword-only
    parameters in order, keywords match names, every parameter without a default is given, and
    each value fits its type (``Tensor``: a tensor; ``float``: an int or a float, never a bool;
    ``int``: an int, not a bool; ``T?``: also ``None``; ``T[]``: a list or tuple of such). The
    same rule as torch's packet call, so ``op(x, out=o)`` runs ``op.out`` when only it takes
    ``out``. Resolution costs a schema walk per overload on each call: call the overload
    (``packet.out``) in hot code. An op without named overloads is never a packet, so its
    calls pay nothing for this.

    Several overloads taking the arguments is not an error: the first in registration order
    runs, as in torch. Raises ``TypeError`` when no overload takes the arguments, naming the op
    and each overload tried with the reason (torch raises ``RuntimeError`` "failed to match any
    schema"; here it is the error of any call whose arguments do not bind); ``AttributeError`` for an overload that does not exist (naming the
    ones that do), or ``.default`` when the op has no default overload.
    """

    __slots__ = ("name",)

    def __init__(self, qualname: str) -> None:
        self.name = _registry.OpName(qualname)     # "ns::op"

    @property
    def _qualified_op_name(self) -> str:
        """torch's ``OpOverloadPacket._qualified_op_name``: ``"ns::op"``."""
        return str(self.name)

    @property
    def __name__(self) -> str:
        """torch's ``OpOverloadPacket.__name__``: ``"op"``."""
        return self.name.partition("::")[2]

    def _other_overload(self, args, kwargs, error):
        """For the default record's call that raised ``error`` (a ``TypeError``): ``None`` when
        the default overload takes these arguments (the error is its own), else the first other
        overload that takes them; raises the packet's ``NoMatchingOverloadError`` (from
        ``error``) when none does."""
        default = _registry.registered(self.name)
        if default is not None and _mismatch(default.schema, args, kwargs) is None:
            return None
        tried = []
        for ov in self.overloads():
            op = _registry.registered(_registry.overload_qualname(self.name, ov))
            if op is None:
                continue
            why = _mismatch(op.schema, args, kwargs)
            if why is None and op is not default:
                return op
            tried.append(f"  {op.schema}: {why}")
        raise NoMatchingOverloadError(f"{self.name}: no overload takes these arguments "
                                      f"({_describe(args, kwargs)}); tried:\n"
                                      + "\n".join(tried)) from error

    def overloads(self) -> list[str]:
        """The overload names, in registration order (``"default"`` is ``ns::op`` itself)."""
        return _registry.overload_names(self.name)

    def __getattr__(self, overload: str) -> CustomOpDef[..., Any]:
        if overload.startswith("__"):
            raise AttributeError(overload)
        op = _registry.registered(_registry.overload_qualname(self.name, overload))
        if op is None:
            ns, _, name = self.name.partition("::")
            names = ", ".join(self.overloads()) or "none"
            what = ("no default overload" if overload == "default"
                    else f"no overload {overload!r}")
            raise AttributeError(f"tensorplay.ops.{ns}.{name} has {what}; its overloads: "
                                 f"{names}")
        return op

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tried = []
        for ov in self.overloads():
            op = _registry.registered(_registry.overload_qualname(self.name, ov))
            if op is None:      # closed meanwhile by another thread
                continue
            why = _mismatch(op.schema, args, kwargs)
            if why is None:
                return op(*args, **kwargs)
            tried.append(f"  {op.schema}: {why}")
        raise NoMatchingOverloadError(f"{self.name}: no overload takes these arguments "
                        f"({_describe(args, kwargs)}); tried:\n" + "\n".join(tried))

    def __dir__(self):
        return sorted(set(self.overloads()) | {"overloads", "name", "_qualified_op_name"})

    def __repr__(self) -> str:
        return f"<tensorplay op packet {self.name} (overloads: {', '.join(self.overloads())})>"


def _describe(args, kwargs) -> str:
    parts = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}"
                                                 for k, v in kwargs.items()]
    return ", ".join(parts) or "no arguments"


class NoMatchingOverloadError(TypeError, DispatchError):
    """No overload of a packet takes the arguments: a ``TypeError`` as any call whose arguments
    do not fit, and a ``RuntimeError`` (``DispatchError``) as torch raises there."""


def _fits_one(base: str, v) -> bool:
    """Whether ``v`` (not None) fits the schema base type ``base``: the rule an overload's own
    call checks its arguments with (``_dispatch._accepts``: a bool is an int, an int is a
    float), so a packet picks only an overload that takes the arguments; a tensor fits only
    ``Tensor`` (it has ``__index__``, but no number parameter takes it)."""
    from ._tensor import Tensor
    if base == "Tensor":
        return isinstance(v, Tensor)
    if base == "ScalarType":
        from ._dtype import DType
        return isinstance(v, DType)
    if base == "Device":
        from ._device import Device
        return isinstance(v, (str, Device))
    if base in ("int", "SymInt", "float", "bool", "str", "Scalar"):
        return not isinstance(v, Tensor) and _accepts(base, v)
    return True      # Layout, MemoryFormat: not told apart


def _fits(type_text: str, v) -> bool:
    info = _type_info(type_text)
    if v is None:
        return info.accepts_none
    if not info.is_list:
        return _fits_one(info.base, v)
    if isinstance(v, (list, tuple)):
        return all((e is None and info.elem_optional) or (e is not None and _fits_one(info.base, e))
                   for e in v)
    # torch's int[N] takes one int for all N
    return info.size is not None and info.base in ("int", "SymInt") and _fits_one(info.base, v)


def _mismatch(schema, args, kwargs) -> str | None:
    """Why ``schema`` cannot take ``(args, kwargs)``, or ``None`` when it can."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return f"takes {len(positional)} positional argument(s), {len(args)} given"
    by_name = {a.name: a for a in schema.arguments}
    given = {a.name: v for a, v in zip(positional, args)}
    for k, v in kwargs.items():
        if k not in by_name:
            return f"no parameter {k!r}"
        if k in given:
            return f"{k!r} given twice"
        given[k] = v
    for a in schema.arguments:
        if a.name not in given:
            if not a.has_default:
                return f"missing {a.name!r}"
        elif not _fits(a.type, given[a.name]):
            return f"{a.name!r} is {type(given[a.name]).__name__}, not {a.type}"
    return None


def _packet_of(base: str):
    """``tensorplay.ops.<ns>.<op>`` for ``"ns::op"`` (the registry's ``overloadpacket``): the
    packet when it has named overloads, else the default op itself."""
    if base in _packets:
        return OpOverloadPacket(base)
    return _registry.registered(base)


def __getattr__(ns: str) -> _Namespace:
    """``tensorplay.ops.<ns>``: any identifier gives a namespace view (it may be empty)."""
    if ns.startswith("__"):
        raise AttributeError(ns)
    return _Namespace(ns)


def __dir__():
    """The namespaces that have at least one registered op (every op pack is imported)."""
    _plugins.load_packs()
    return sorted({op.namespace for op in _registry.all_ops()})
