"""``tensorplay.ops.<namespace>.<op>``: attribute access to every registered operator."""

from __future__ import annotations

from . import _registry


class _Namespace:
    def __init__(self, ns: str):
        self._ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = _registry._OPS.get(f"{self._ns}::{name}")
        if op is None:
            raise AttributeError(f"tensorplay.ops.{self._ns} has no operator {name!r}")
        return op

    def __dir__(self):
        p = self._ns + "::"
        return sorted(k[len(p):] for k in _registry._OPS if k.startswith(p))

    def __repr__(self):
        return f"<tensorplay.ops.{self._ns}>"


def __getattr__(ns: str):
    if ns.startswith("__"):
        raise AttributeError(ns)
    return _Namespace(ns)


def __dir__():
    return sorted({op.namespace for op in _registry._OPS.values()})
