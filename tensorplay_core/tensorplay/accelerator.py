"""``tensorplay.accelerator``: the device-neutral questions of ``torch.accelerator``.

The accelerator is the first usable device type among ``"cuda"`` and ``"xpu"`` (torch's order;
TensorPlay ships a backend for ``cuda`` only, through ``tensorplay-cuda``), or none.

``is_available()``: whether there is one. ``current_accelerator(check_available=False)``: its
``tensorplay.device`` (type only, as torch's: ``device(type='cuda')``), ``None`` when there is
none. ``device_count()``: its number of devices, 0 without one. ``current_device_index()``: the
current device's index (``tensorplay.cuda.current_device()`` for cuda); raises
``tensorplay.errors.DeviceUnavailableError`` without an accelerator. The others never raise.
"""

from __future__ import annotations

__all__ = ["current_accelerator", "current_device_index", "device_count", "is_available"]

_TYPES = ("cuda", "xpu")


def _kind() -> str | None:
    from . import plugins
    for t in _TYPES:
        if plugins.device_status(t)[0]:
            return t
    return None


def is_available() -> bool:
    """True when a cuda (or xpu) device is usable here. Never raises."""
    return _kind() is not None


def current_accelerator(check_available: bool = False):
    """``tensorplay.device`` of the accelerator's type, or ``None`` (``check_available`` is
    accepted for torch's signature: the device returned is always a usable one)."""
    k = _kind()
    if k is None:
        return None
    from ._device import Device
    return Device(k)


def device_count() -> int:
    """The accelerator's device count; 0 without one. Never raises."""
    k = _kind()
    if k == "cuda":
        from . import cuda
        return cuda.device_count()
    if k == "xpu":
        from . import xpu
        return xpu.device_count()
    return 0


def current_device_index() -> int:
    """The index of the accelerator's current device. ``DeviceUnavailableError`` without one."""
    k = _kind()
    if k == "cuda":
        from . import cuda
        return cuda.current_device()
    if k == "xpu":
        return 0
    from .errors import DeviceUnavailableError
    raise DeviceUnavailableError("tensorplay.accelerator.current_device_index: no accelerator "
                                 "(cuda or xpu) is usable here; tensorplay.cuda.is_available() "
                                 "and tensorplay.plugins.device_status('cuda') say why")
