"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``is_grad_enabled``,
``inference_mode``.

Grad mode is per thread, as in torch: each thread starts with grad enabled, and entering
``no_grad`` in one thread (or running a backward there) never changes what another thread sees.
The flag is the attribute ``_state.enabled`` of a ``threading.local``: the dispatcher and the
autograd entries read it with one C-level attribute lookup (no call) -- the per-call path is
sacred.
"""

from __future__ import annotations

import functools

# the per-thread flag object lives in the call-path layer (the built-in ops' fused formulas read
# it too); ``_state`` is the name the autograd entries, capture and compile bind
from .._dispatch import GradModeCtx as _GradModeCtx, grad_state as _state


def is_grad_enabled() -> bool:
    """True when operations on tensors with ``requires_grad`` record a graph in the calling
    thread (same as ``torch.is_grad_enabled``; grad mode is thread-local)."""
    return _state.enabled


class set_grad_enabled:
    """Context manager / function setting grad mode for the calling thread (same as
    ``torch.set_grad_enabled``)."""

    def __init__(self, mode: bool):
        self.prev = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class no_grad(_GradModeCtx):
    """Disable graph recording in the calling thread inside the block or decorated function
    (same as ``torch.no_grad``; other threads are not affected)."""
    mode = False


class enable_grad(_GradModeCtx):
    """Enable graph recording in the calling thread inside the block or decorated function
    (same as ``torch.enable_grad``; other threads are not affected)."""
    mode = True


class inference_mode(_GradModeCtx):
    """``inference_mode(mode=True)``: for tensorplay, the same as ``no_grad`` -- inside the block
    or decorated function no graph is recorded in the calling thread. Usable as a context
    manager (``with tensorplay.inference_mode():``) and as a decorator, with or without
    parentheses (``@tensorplay.inference_mode`` / ``@tensorplay.inference_mode()``), like
    ``torch.inference_mode``. ``mode=False`` leaves grad mode as it is. Tensors made inside are
    ordinary tensors: torch's extra restrictions on "inference tensors" (no version counter, no
    use in autograd afterwards) are not modelled, so code written for torch runs unchanged."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):   # bare @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self._inference = bool(mode)

    def __enter__(self):
        g = _state.__dict__
        self.prev = g["enabled"]
        if self._inference:
            g["enabled"] = False
        return self

    def __call__(self, fn):
        mode = self._inference

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with inference_mode(mode):
                return fn(*a, **k)
        return wrapper
