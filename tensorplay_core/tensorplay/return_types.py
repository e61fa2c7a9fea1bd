"""Named tuples returned by ops with several outputs (same names as ``torch.return_types``).

``values, indices = x.max(1)`` and ``x.max(1).values`` both work; each is a plain tuple subclass.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["max", "min", "sort", "topk"]

max = namedtuple("max", ["values", "indices"])  # noqa: A001
min = namedtuple("min", ["values", "indices"])  # noqa: A001
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
for _t in (max, min, sort, topk):
    _t.__module__ = __name__
    _t.__qualname__ = _t.__name__
del _t
