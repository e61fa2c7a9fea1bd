"""``Device``: the only place a string becomes a device.

Spellings (same as ``torch.device``): ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"meta"``; also
``Device("cuda", 1)`` and an ``int`` (a cuda index). Instances are interned, so devices compare with
``is`` on the hot path.
"""

from __future__ import annotations

from . import _devices

__all__ = ["Device", "device"]

_CACHE: dict = {}

# Device types the core knows without asking the plugins (plugins add theirs through DeviceSpec;
# ``_registry`` adds every key a kernel is installed for): the one set kept by ``_devices``.
KNOWN_DEVICE_TYPES: set = _devices.KNOWN_TYPES

# Device names of other frameworks that tensorplay does not provide unless a plugin does: a
# spelling of one of these is a mistake, not a new device (value: what to suggest instead).
_FOREIGN_DEVICE_TYPES = {"gpu": "cuda", "cu": "cuda", "nvidia": "cuda", "rocm": "cuda",
                         "hip": "cuda", "tpu": None, "xpu": None, "mps": None, "npu": None,
                         "hpu": None, "ipu": None, "xla": None, "mtia": None, "maia": None,
                         "vulkan": None, "opengl": None, "opencl": None, "mkldnn": None,
                         "ideep": None, "fpga": None, "ort": None, "ve": None, "lazy": None,
                         "privateuseone": None, "host": "cpu", "numpy": "cpu", "cupy": "cuda"}


def plugin_device_types() -> set:
    """Device types provided by loaded plugins (``DeviceSpec``s); empty before plugins load."""
    return _devices.provided_types()


def accepted_device_types(*, meta: bool = False) -> list:
    """Every known device type, sorted: ``cpu``, ``cuda``, plugin devices, types kernels are
    registered for, and ``meta`` when ``meta``."""
    out = KNOWN_DEVICE_TYPES | plugin_device_types()
    if meta:
        out = out | {"meta"}
    return sorted(out)


def unknown_device_type(t: str, spelling, api: str, *, extra=(), what="device type"):
    """``ValueError`` (to raise) for device type ``t`` (lower-cased, from ``spelling``), or
    ``None`` when it is acceptable. Registration-time only (never on the call path).

    Known types (``accepted_device_types``, ``extra``) pass. Refused, with the accepted spellings
    and the closest one (difflib): a spelling with capitals that is no known key in any case
    (``"CUPA"``, ``"Bogus"``: dispatch-key style), a near-miss of a known key (``"cdua"``), or a
    device of another framework no plugin provides (``"gpu"``, ``"tpu"``). Any other lower-case
    identifier is accepted as an out-of-tree device type: an op pack may register kernels for a
    device whose plugin loads after it, and tests simulate devices this way.
    """
    known = accepted_device_types(meta=True)
    if t in known or t in extra:
        return None
    s = str(spelling).strip().partition(":")[0]
    foreign = t in _FOREIGN_DEVICE_TYPES
    import difflib
    # near-misses of the core's and the plugins' types only (out-of-tree types such as a
    # simulated "sim" are no reference: "sim2" is another device, not a typo of it)
    vocab = sorted({"cpu", "cuda", "meta"} | plugin_device_types()) + list(extra)
    close = difflib.get_close_matches(t, vocab, n=1, cutoff=0.6)
    if s == s.lower() and not foreign and not close:
        return None
    suggest = _FOREIGN_DEVICE_TYPES[t] if foreign else (close[0] if close else None)
    accepted = ", ".join(repr(k) for k in accepted_device_types(meta=not extra)) + \
        ("".join(f", {e!r}" for e in extra) if extra else "")
    why = (" (no installed plugin provides it)" if foreign else "")
    if foreign:   # a plugin that should provide it may have failed: name it and its error
        note = _devices.failed_device_note(t)
        why = f" ({note})" if note else why
    return ValueError(f"{api}: unknown {what} {spelling!r}{why}; accepted: {accepted} (any case)"
                      + (f". Did you mean {suggest!r}?" if suggest else ""))


class Device:
    """A device: ``type`` (``"cpu"``, ``"cuda"``, ``"meta"``, or a plugin's type) and ``index``
    (``None`` or an int). ``str(Device("cuda", 1)) == "cuda:1"``.

    Raises ``ValueError`` for a malformed spelling such as ``"cuda:x"`` or ``"cpu:"``, and for an
    unknown device type (``"tpu"``, ``"CUPA"``; like torch), listing the accepted ones: ``cpu``,
    ``cuda``, ``meta`` and every type a loaded plugin provides (see ``unknown_device_type`` for the
    out-of-tree lower-case identifiers that are let through). Checked only when a spelling is
    first seen; later calls are one dict lookup.
    """

    __slots__ = ("type", "index", "_str")

    def __new__(cls, type_or_str="cpu", index: int | None = None):
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
            _CACHE[canon] = d
        _CACHE[key] = d
        return d

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
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
