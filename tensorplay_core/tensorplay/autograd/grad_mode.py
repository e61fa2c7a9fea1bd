"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``is_grad_enabled``.

The flag is a one-element list read directly by the dispatcher (one index, no call) -- the
per-call path is sacred.
"""

from __future__ import annotations

import functools

_enabled = [True]


def is_grad_enabled() -> bool:
    """True when operations on tensors with ``requires_grad`` record a graph (torch semantics)."""
    return _enabled[0]


class set_grad_enabled:
    """Context manager / function setting grad mode (same as ``torch.set_grad_enabled``)."""

    def __init__(self, mode: bool):
        self.prev = _enabled[0]
        _enabled[0] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _enabled[0] = self.prev
        return False


class _GradModeCtx:
    mode = True

    def __enter__(self):
        self.prev = _enabled[0]
        _enabled[0] = self.mode
        return self

    def __exit__(self, *exc):
        _enabled[0] = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__():
                return fn(*a, **k)
        return wrapper


class no_grad(_GradModeCtx):
    """Disable graph recording inside the block or decorated function (same as ``torch.no_grad``)."""
    mode = False


class enable_grad(_GradModeCtx):
    """Enable graph recording inside the block or decorated function (same as ``torch.enable_grad``)."""
    mode = True
