"""``Device``: the only place a string becomes a device.

Spellings (same as ``torch.device``): ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"meta"``; also
``Device("cuda", 1)`` and an ``int`` (a cuda index). Instances are interned, so devices compare with
``is`` on the hot path.
"""

from __future__ import annotations

from . import _devices

# The vocabulary of device types (known, foreign, accepted) and the refusal of an unknown
# spelling live in ``_devices``; these names stay importable from here.
from ._devices import _FOREIGN_DEVICE_TYPES, accepted_device_types, plugin_device_types  # noqa: F401
from ._devices import unknown_device_type

__all__ = ["Device", "canonical", "device"]

_CACHE: dict = {}

# Device types the core knows without asking the plugins (plugins add theirs through DeviceSpec;
# ``_registry`` adds every key a kernel is installed for): the one set kept by ``_devices``.
KNOWN_DEVICE_TYPES: set = _devices.KNOWN_TYPES

class Device:
    """A device: ``type`` (``"cpu"``, ``"cuda"``, ``"meta"``, or a plugin's type) and ``index``
    (``None`` or an int). ``str(Device("cuda", 1)) == "cuda:1"``.

    Raises ``ValueError`` for a malformed spelling such as ``"cuda:x"`` or ``"cpu:"``, and for an
    unknown device type (``"tpu"``, ``"CUPA"``; like torch), listing the accepted ones: ``cpu``,
    ``cuda``, ``meta`` and every type a loaded plugin provides (see ``unknown_device_type`` for the
    out-of-tree lower-case identifiers that are let through). Checked only when a spelling is
    first seen; later calls are one dict lookup.
    """

    __slots__ = ("type", "index", "_str", "_canon")
    type: str             # declared for the type checkers (slots)
    index: int | None

    def __new__(cls, type_or_str: str | Device | int = "cpu", index: int | None = None) -> Device:
        if isinstance(type_or_str, Device):
            if index is None:
                return type_or_str
            type_or_str = type_or_str.type
        key = (type_or_str, index)
        d = _CACHE.get(key)
        if d is not None:
            return d
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            t, i = "cuda", type_or_str
        elif isinstance(type_or_str, str):
            t, sep, rest = type_or_str.strip().partition(":")
            t = t.lower()
            if sep:
                if index is not None:
                    raise ValueError(f"tensorplay.device({type_or_str!r}, {index}): index given twice")
                if not rest.isdigit():
                    raise ValueError(
                        f"tensorplay.device: cannot parse {type_or_str!r}; expected 'TYPE' or "
                        f"'TYPE:INDEX' such as 'cpu', 'cuda', 'cuda:1', 'meta'")
                i = int(rest)
            else:
                i = index
            if not t.isidentifier():
                raise ValueError(f"tensorplay.device: {type_or_str!r} is not a device type")
            if t not in KNOWN_DEVICE_TYPES and t != "meta":   # cache miss only: not per call
                err = unknown_device_type(t, type_or_str, "tensorplay.device")
                if err is not None:
                    raise err
        else:
            raise TypeError(f"tensorplay.device: expected a str, int or Device, got {type_or_str!r}")
        if i is not None and (not isinstance(i, int) or i < 0):
            raise ValueError(f"tensorplay.device: index must be a non-negative int, got {i!r}")
        canon = (t, i)
        d = _CACHE.get(canon)
        if d is None:
            d = object.__new__(cls)
            d.type = t
            d.index = i
            d._str = t if i is None else f"{t}:{i}"
            d._canon = None      # the tensor device it stands for (``canonical``), once asked
            _CACHE[canon] = d
        _CACHE[key] = d
        return d

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Device(other)
            except (ValueError, TypeError):
                return False
        return self is other

    def __hash__(self) -> int:
        return hash(self._str)

    def __reduce__(self):
        return (Device, (self.type, self.index))


device = Device


def canonical(device) -> Device:
    """The device a tensor created on ``device`` reports (same rule as torch): on a device type
    with one device (``cpu``, ``meta``, a single-device backend) the type alone, so ``cpu:0``
    and ``cpu`` are one device; on a type whose backend has several devices (``cuda``, a
    multi-device backend: ``indexed_devices``) the index, a bare type meaning the backend's
    current index (``current_index()``; 0 when the backend has none or is not loaded).

    ``device``: any spelling ``Device`` accepts. Raises ``ValueError`` for an index other than 0
    on a one-device type (``"cpu:1"``). Every place that fixes a new tensor's device calls this
    (factories, the generated adapters, ``.to``, ``wrap_native``, fake tensors); the answer is
    kept on the ``Device`` (one attribute read per call) until a backend is loaded or removed.
    """
    d = device if device.__class__ is Device else Device(device)
    c = d._canon
    if c is not None:
        return c
    t = d.type
    b = None if t in ("cpu", "meta") else _devices.backend_of(t)
    if _devices.is_indexed(t, b):
        if d.index is not None:
            c = d
        else:
            cur = b.current_index() if b is not None else None
            if cur is not None:      # follows the backend's current device: not kept
                return Device(t, cur)
            c = Device(t, 0)
    elif d.index is None:
        c = d
    elif d.index == 0:
        c = Device(t)
    else:
        raise ValueError(f"device '{d}' does not exist: device type '{t}' has one device; use "
                         f"'{t}' (or '{t}:0')")
    d._canon = c
    return c


def forget_canonical() -> None:
    """A backend came or went: the index rule of its type may have changed, so every cached
    canonical device is computed again (``tensorplay.backends`` calls this when it publishes or
    withdraws a backend; registration time only)."""
    for d in _CACHE.values():
        d._canon = None
