"""``tensorplay.testing.drop_ops``: a test's op definitions are undone, redefinitions and the
namespace's open DEF library included; other namespaces and the built-ins are untouched."""

from __future__ import annotations

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.testing import drop_ops


def _defined(ns: str, name: str) -> bool:
    return hasattr(getattr(tp.ops, ns), name)


def test_drop_ops_removes_redefinitions_and_closes_the_def_library():
    lib.custom_op("tdrop_a::f", lambda x: x + 1, mutates_args=())
    lib.custom_op("tdrop_a::f", lambda x: x + 2, mutates_args=())   # a redefinition
    L = lib.Library("tdrop_a", "DEF")
    L.define("g(Tensor x) -> Tensor")
    lib.custom_op("tdrop_ab::h", lambda x: x, mutates_args=())
    assert drop_ops("tdrop_a") == 3
    assert not _defined("tdrop_a", "f") and not _defined("tdrop_a", "g")
    assert _defined("tdrop_ab", "h")                 # exact namespace unless prefix=True
    assert "closed" in repr(L)
    lib.Library("tdrop_a", "DEF").close()            # the namespace is free again
    assert drop_ops("tdrop_a", prefix=True) == 1
    assert not _defined("tdrop_ab", "h")
    assert drop_ops("tdrop_a") == 0


def test_drop_ops_refuses_the_builtin_namespace():
    for ns, prefix in (("tp", False), ("t", True)):
        with pytest.raises(ValueError, match="built-in namespace 'tp'"):
            drop_ops(ns, prefix=prefix)
    assert tp.ops.tp.add.is_builtin
