"""CASES C03 verbatim: a module using ``from __future__ import annotations`` with ``typing.List`` /
``Optional`` imported at module level (used by tests/test_schema.py)."""
from __future__ import annotations

from typing import List, Optional

try:
    from tensorplay import Tensor
except ImportError:  # tensorplay/__init__.py not importable yet: a stand-in matched like tp.Tensor
    class Tensor:
        pass

    Tensor.__module__ = "tensorplay._tensor"


def h(x: Tensor, dims: List[int], bias: Optional[Tensor] = None) -> Tensor:
    return x
