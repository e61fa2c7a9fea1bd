"""Graph capture for ``tensorplay.compile`` (placeholder until the compile issue lands)."""

from __future__ import annotations

from .errors import DispatchError


def record_call(op, args, kwargs):
    raise DispatchError("tensorplay.compile capture is not available yet")
