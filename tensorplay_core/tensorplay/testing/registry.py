"""Undoing a test's operator definitions: ``drop_ops``.

A test that defines ops with ``custom_op`` has no ``Library`` to close (as in torch, where tests
use a scoped library or a fresh namespace per test). ``drop_ops`` removes them again so the next
test starts from the same registry.
"""

from __future__ import annotations

from .. import _registry
from ..library import Library

__all__ = ["drop_ops"]


def drop_ops(namespace: str, *, prefix: bool = False) -> int:
    """Remove every operator of ``namespace`` (with ``prefix=True``: of every namespace starting
    with it), redefinitions included (removing one brings back the definition it replaced, which
    is removed in turn), and close the namespace's open ``Library(..., "DEF")``. Built-in ``tp``
    ops are never removed (``ValueError``). Returns the number of definitions removed."""
    if namespace == _registry.RESERVED_NAMESPACE or (prefix and _registry.RESERVED_NAMESPACE
                                                     .startswith(namespace)):
        raise ValueError(f"drop_ops({namespace!r}): the built-in namespace "
                         f"{_registry.RESERVED_NAMESPACE!r} cannot be dropped")

    def mine(ns: str) -> bool:
        return ns.startswith(namespace) if prefix else ns == namespace

    n = 0
    with _registry.transaction():
        while left := [op for op in _registry.all_ops() if mine(op.namespace)]:
            for op in left:
                _registry.unregister_op(op)
                n += 1
        for ns in [ns for ns in Library._live_defs if mine(ns)]:
            Library._live_defs[ns].close()
    return n
