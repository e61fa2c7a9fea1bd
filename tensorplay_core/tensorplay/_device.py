"""``Device``: the only place a string becomes a device.

Spellings (same as ``torch.device``): ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"meta"``; also
``Device("cuda", 1)``, ``Device(type="cuda", index=1)`` and an ``int`` (a cuda index). Instances
are interned, so devices compare with ``is`` on the hot path.
"""

from __future__ import annotations

import re

from . import _devices

# The vocabulary of device types (known, foreign, accepted) and the refusal of an unknown
# spelling live in ``_devices``; these names stay importable from here.
from ._devices import _FOREIGN_DEVICE_TYPES, accepted_device_types, plugin_device_types  # noqa: F401
from ._devices import DeviceStringError, unknown_device_type

__all__ = ["Device", "canonical", "device"]

# (spelling, index) -> Device: a str spelling with an int index or None (never an int or a bool
# spelling, nor a bool or float index: those equal an int key, ``True == 1``), and each device's
# own (type, index)
_CACHE: dict = {}

# Device types the core knows without asking the plugins (plugins add theirs through DeviceSpec;
# ``_registry`` adds every key a kernel is installed for): the one set kept by ``_devices``.
KNOWN_DEVICE_TYPES: set = _devices.KNOWN_TYPES

# torch's device-string grammar: a type, then optionally ':' and a decimal index without sign or
# leading zeros; nothing before or after (no spaces). A type may hold digits after its first
# letter (plugin types such as "mock1"); its case is checked apart, to name the fix.
_SPELLING = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::(0|[1-9][0-9]*))?", re.ASCII)

# device types on which torch reads any index as the type alone (``cpu:1`` makes cpu tensors)
_INDEX_IGNORED = ("cpu", "meta")


def _bad_spelling(s: str) -> DeviceStringError:
    """The refusal of device string ``s`` that is not ``TYPE`` or ``TYPE:INDEX`` as torch spells
    them, with the spelling meant when one is plain (spaces, case, a sign or leading zeros)."""
    t, sep, i = s.strip().partition(":")
    t, i = t.strip().lower(), i.strip().lstrip("+")
    fix = ""
    if i.startswith("-") and i[1:].isascii() and i[1:].isdigit():
        fix = f"; a device index is non-negative: use {t!r} or '{t}:0'"
    elif t.isascii() and t.isidentifier():
        if not sep:
            fix = f"; did you mean {t!r}?"
        elif i.isascii() and i.isdigit():
            fix = f"; did you mean '{t}:{int(i)}'?"
    return DeviceStringError(
        f"tensorplay.device: invalid device string {s!r}: expected 'TYPE' or 'TYPE:INDEX' as "
        f"torch spells them ('cpu', 'cuda', 'cuda:1', 'meta'): the type in lower case, the index "
        f"a non-negative integer without sign, spaces or leading zeros{fix}")


def _parse(spelling: str):
    """``(type, index)`` of device string ``spelling``, or ``DeviceStringError`` (a
    ``RuntimeError`` as torch's, and the ``ValueError`` earlier releases raised)."""
    m = _SPELLING.fullmatch(spelling)
    if m is None:
        raise _bad_spelling(spelling)
    t, i = m.group(1), m.group(2)
    if t not in KNOWN_DEVICE_TYPES and t != "meta":   # cache miss only: not per call
        low = t.lower()
        if low != t and (low in KNOWN_DEVICE_TYPES or low == "meta" or
                         low in _devices.provided_types()):
            raise DeviceStringError(
                f"tensorplay.device: invalid device string {spelling!r}: device types are "
                f"spelled in lower case (as torch); use {low + spelling[len(t):]!r}")
        err = unknown_device_type(low, spelling, "tensorplay.device", any_case=False)
        if err is not None:
            raise DeviceStringError(str(err)) from None
    return t, None if i is None else int(i)


def _index(index, call):
    """``index`` of ``Device(type, index)`` (``call``: that call's text, for the message) as an
    int: ``TypeError`` unless it is an int (a bool is not), ``DeviceStringError`` when
    negative."""
    if index.__class__ is not int:
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            raise TypeError(f"tensorplay.device(): argument 'index' must be int, not "
                            f"{index.__class__.__name__} (got {index!r}); pass an int such as 0")
        index = index.__index__()
    if index < 0:
        raise DeviceStringError(f"tensorplay.device({call}): a device index is non-negative "
                                f"(got {index}); pass 0 or more, or no index")
    return index


class Device:
    """A device: ``type`` (``"cpu"``, ``"cuda"``, ``"meta"``, or a plugin's type) and ``index``
    (``None`` or an int). ``str(Device("cuda", 1)) == "cuda:1"``.

    ``Device(type, index=None)``: ``type`` is a device string ``"TYPE"`` or ``"TYPE:INDEX"``
    (torch's grammar: the type in lower case, the index a decimal without sign, spaces or
    leading zeros), another ``Device``, or an int (a cuda index). ``index``, when given, is a
    non-negative int and the string then holds none.

    Raises ``DeviceStringError`` (a ``RuntimeError``, as torch's, and a ``ValueError``) for a
    malformed spelling (``"cuda:x"``, ``"cpu:"``, ``" cpu"``, ``"CPU"``, ``"cpu:01"``), a
    negative index, an index given twice, and an unknown device type (``"tpu"``; like torch),
    listing the accepted ones: ``cpu``, ``cuda``, ``meta`` and every type a loaded plugin
    provides (see ``unknown_device_type`` for the out-of-tree lower-case identifiers that are let
    through); ``TypeError`` for an ``index`` that is no int (``True``, ``1.0``) and a ``type``
    that is no str, int or Device. Checked only when a spelling is first seen; later calls are
    one dict lookup.
    """

    __slots__ = ("type", "index", "_str", "_canon")
    type: str             # declared for the type checkers (slots)
    index: int | None

    def __new__(cls, type: str | Device | int = "cpu", index: int | None = None) -> Device:
        # (``type``, torch's keyword, names the spelling here: the builtin is not used below)
        type_or_str = type
        if isinstance(type_or_str, Device):
            if index is None:
                return type_or_str
            type_or_str = type_or_str.type
        key = (type_or_str, index)
        # a bool or float index equals an int one (True == 1.0 == 1): it never reads the cache
        if index is None or index.__class__ is int:
            d = _CACHE.get(key)
            if d is not None:
                return d
        if type_or_str.__class__ is str:
            t, i = _parse(type_or_str)
            if index is not None:
                if i is not None:
                    raise DeviceStringError(
                        f"tensorplay.device({type_or_str!r}, {index!r}): the index is given "
                        f"twice, in the string and as 'index'; pass one "
                        f"(tensorplay.device({t!r}, {index!r}) or tensorplay.device({type_or_str!r}))")
                i = _index(index, f"{type_or_str!r}, {index!r}")
        elif isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            if index is not None:
                raise TypeError(f"tensorplay.device({type_or_str!r}, {index!r}): an int device "
                                f"is a cuda index; pass tensorplay.device('cuda', {index!r})")
            t, i = "cuda", _index(type_or_str, repr(type_or_str))
        else:
            raise TypeError(f"tensorplay.device: expected a str, int or Device, got "
                            f"{type_or_str!r}; pass a device string such as 'cpu' or 'cuda:0'")
        canon = (t, i)
        d = _CACHE.get(canon)
        if d is None:
            d = object.__new__(cls)
            d.type = t
            d.index = i
            d._str = t if i is None else f"{t}:{i}"
            d._canon = None      # the tensor device it stands for (``canonical``), once asked
            _CACHE[canon] = d
        if type_or_str.__class__ is str and (index is None or index.__class__ is int):
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

    ``device``: any spelling ``Device`` accepts. On ``cpu`` and ``meta`` any index reads as the
    type alone, as torch's (``"cpu:1"`` makes cpu tensors); on another one-device type (a
    single-device backend) an index other than 0 is a ``ValueError`` naming the device. Every place that fixes a new tensor's device calls this
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
    elif d.index == 0 or t in _INDEX_IGNORED:     # torch: cpu:1 and meta:1 make cpu/meta tensors
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
