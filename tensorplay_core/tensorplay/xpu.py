"""``tensorplay.xpu``: the questions kernel libraries ask about Intel GPUs (``torch.xpu``'s names).

TensorPlay ships no ``xpu`` device backend; a plugin may provide one. ``is_available()`` is True
when a loaded plugin provides device type ``"xpu"`` and it is usable, and ``device_count()`` is
then its number of devices (1 when the backend does not say); otherwise False and 0. Code such
as ``if torch.cuda.is_available(): ... elif torch.xpu.is_available(): ...`` thus takes the
branch of the device it has. Neither function raises.
"""

from __future__ import annotations

__all__ = ["device_count", "is_available"]


def is_available() -> bool:
    """True when a usable ``xpu`` device backend is loaded (see the module). Never raises."""
    from . import plugins
    return plugins.device_status("xpu")[0]


def device_count() -> int:
    """The number of ``xpu`` devices; 0 without a usable backend. Never raises."""
    if not is_available():
        return 0
    try:
        from . import backends
        rt = getattr(backends.get("xpu"), "runtime", None)
        n = getattr(rt, "count", 1)
    except Exception:  # noqa: BLE001 - documented: never raises
        return 0
    return n if isinstance(n, int) and n >= 0 else 1
