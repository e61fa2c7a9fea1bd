"""``tensorplay.ops.<namespace>.<op>``: attribute access to every registered operator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _registry
from . import plugins as _plugins

if TYPE_CHECKING:
    from ._registry import CustomOpDef


class _Namespace:
    """``tensorplay.ops.<ns>``: the ops of one namespace as attributes (live view of the registry,
    like ``torch.ops.<ns>``). A missing op is an ``AttributeError`` naming it (and the plugin that
    failed to provide it, if any)."""

    def __init__(self, ns: str):
        self._ns = ns

    def __getattr__(self, name: str) -> CustomOpDef[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        if self._ns in _registry.lazy_namespaces:   # an op pack not imported yet (or loading)
            _plugins.load_namespace(self._ns)
        op = _registry.registered(f"{self._ns}::{name}")
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
        return sorted(o.name[len(p):] for o in _registry.all_ops() if o.name.startswith(p))

    def __repr__(self):
        return f"<tensorplay.ops.{self._ns}>"


def __getattr__(ns: str) -> _Namespace:
    """``tensorplay.ops.<ns>``: any identifier gives a namespace view (it may be empty)."""
    if ns.startswith("__"):
        raise AttributeError(ns)
    return _Namespace(ns)


def __dir__():
    """The namespaces that have at least one registered op (every op pack is imported)."""
    _plugins.load_packs()
    return sorted({op.namespace for op in _registry.all_ops()})
