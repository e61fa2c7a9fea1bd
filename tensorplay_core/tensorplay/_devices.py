"""Which device types exist, which plugin provides each, and why one is missing.

The one table of device *availability* (``_device`` turns spellings into ``Device`` values):

* ``KNOWN_TYPES``: the device types the core knows without asking the plugins (``cpu``,
  ``cuda``) plus every dispatch key a kernel was registered for (``_registry`` adds them);
* ``providers``: device type -> ``[(priority, DeviceSpec, plugin record)]``, the plugins that
  provide it (the highest priority wins);
* ``unavailable``: the plugins that did not load (``failed``, ``incompatible``, ``blocked``), in
  load order, so a request for their device re-raises their recorded error with its fix (JAX's
  ``_backend_errors`` habit).

Written by the plugin manager (``tensorplay.plugins``), which sits above and pushes what it
learns down here; read by ``_device`` (messages for unknown spellings) and ``_registry`` (the
"no kernel for device" message). Nothing here imports another tensorplay module, so every layer
may ask it. Registration and error time only: never on the per-call path.

A *plugin record* here is any object with ``name``, ``dist``, ``value``, ``label``, ``status``,
``error``, ``attempted_devices`` and ``fix`` (``tensorplay.plugins.PluginRecord``).
"""

from __future__ import annotations

import re

__all__ = ["KNOWN_TYPES", "KNOWN_DEVICE_DISTS", "providers", "unavailable", "provided_types",
           "provider", "failed_provider", "device_hint", "failed_device_note"]

# Device types the core knows without asking the plugins; ``_registry`` adds every key a kernel
# is registered for (an op pack may register kernels for a device whose plugin loads later).
KNOWN_TYPES: set = {"cpu", "cuda"}

# which distribution to suggest for a device type nobody provides
KNOWN_DEVICE_DISTS = {"cpu": "tensorplay-cpu", "cuda": "tensorplay-cuda"}

# device type -> [(priority, DeviceSpec, plugin record)], written by the plugin manager
providers: dict[str, list] = {}

# plugin record key -> record of a plugin that did not load, in load order (plugin manager)
unavailable: dict[str, object] = {}


def provided_types() -> set:
    """Device types provided by loaded plugins (``DeviceSpec``); empty before plugins load."""
    return set(providers)


def provider(device_type: str):
    """``(priority, DeviceSpec, record)`` of the plugin that provides ``device_type`` (highest
    priority), or ``None``."""
    cands = providers.get(device_type)
    if not cands:
        return None
    return max(cands, key=lambda e: e[0])


def _words(s: str) -> set:
    return set(re.split(r"[-_.:]+", s.lower()))


def failed_provider(device_type: str):
    """The plugin that did not load (failed, incompatible, blocked) and likely provides
    ``device_type``: one that announced it before failing, else one whose name contains it as a
    word. ``None`` when there is none."""
    bad = list(unavailable.values())
    for rec in bad:
        if device_type in rec.attempted_devices:
            return rec
    for rec in bad:
        if device_type in _words(rec.name) | _words(rec.dist) | _words(rec.value):
            return rec
    return None


def device_hint(device_type: str) -> str:
    """A sentence telling the user how to get ``device_type``: the recorded failure of the plugin
    that provides it (with the fix), the control that blocks it, or what to install; ``""`` when
    a plugin provides it."""
    rec = failed_provider(device_type)
    if rec is not None:
        if rec.status == "blocked":
            return (f"Plugin {rec.label}, which provides it, is installed but blocked by "
                    f"TENSORPLAY_PLUGINS/TENSORPLAY_DISABLE_PLUGINS; remove it from the block-list "
                    f"(or add it to the allow-list) before importing tensorplay. ")
        return (f"Plugin {rec.label}, which provides it, failed to load: "
                f"{type(rec.error).__name__}: {rec.error}. Fix: {rec.fix} ")
    if device_type in providers:
        return ""
    dist = KNOWN_DEVICE_DISTS.get(device_type)
    if dist:
        return f"Install {dist} (pip install {dist}). "
    return (f"No installed plugin provides device '{device_type}' (devices: "
            f"{', '.join(sorted(providers)) or 'none'}). ")


def failed_device_note(device_type: str):
    """``"plugin X, which provides it, failed to load: Error: msg. Fix: ..."`` (or "is blocked")
    when an installed plugin that provides ``device_type`` did not load; ``None`` otherwise. Used
    by ``tensorplay.device`` for device types it does not know."""
    if failed_provider(device_type) is None:
        return None
    hint = device_hint(device_type).strip().rstrip(".")
    return hint[0].lower() + hint[1:]
