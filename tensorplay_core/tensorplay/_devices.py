"""Which device types exist, which plugin provides each, which backends are loaded, and why a
device is missing.

The one table of device *availability* (``_device`` turns spellings into ``Device`` values):

* ``KNOWN_TYPES``: the device types the core knows without asking the plugins (``cpu``,
  ``cuda``) plus every dispatch key a kernel was registered for (``_registry`` adds them); the
  vocabulary for spellings: ``accepted_device_types``, ``unknown_device_type`` (the refusal of
  an unknown or foreign spelling, with the closest accepted one);
* ``loaded``: device type -> loaded backend, complete; ``load(t)`` returns it, handing a device's
  first use to ``tensorplay.backends.first_use`` (load the plugin, build the backend, bind its
  kernels, then ``publish`` it); ``binding`` holds a backend while it is being set up;
  ``withdraw(t)`` forgets one (a test backend leaving);
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


class DeviceStringError(RuntimeError, ValueError):
    """A device string ``tensorplay.device`` cannot read (``"CPU"``, ``"cuda:x"``, ``" cpu"``,
    ``"cpu:01"``, an unknown type such as ``"tpu"``), a negative device index, or an index given
    both in the string and as ``index``: a ``RuntimeError``, as torch raises for each. Also a
    ``ValueError``, the type earlier tensorplay releases raised. Public as
    ``tensorplay.errors.DeviceStringError``; defined here, below every layer that parses a
    device string."""

    __module__ = "tensorplay.errors"


__all__ = [
    "KNOWN_DEVICE_DISTS",
    "KNOWN_TYPES",
    "accepted_device_types",
    "abandon",
    "control",
    "controls",
    "backend_of",
    "begin_binding",
    "binding",
    "device_hint",
    "failed_device_note",
    "failed_provider",
    "load",
    "loaded",
    "provided_types",
    "provider",
    "providers",
    "publish",
    "unavailable",
    "unknown_device_type",
    "withdraw",
]

# Device types the core knows without asking the plugins; ``_registry`` adds every key a kernel
# is registered for (an op pack may register kernels for a device whose plugin loads later).
KNOWN_TYPES: set = {"cpu", "cuda"}

# which distribution to suggest for a device type nobody provides
KNOWN_DEVICE_DISTS = {"cpu": "tensorplay-cpu", "cuda": "tensorplay-cuda"}

# device type -> [(priority, DeviceSpec, plugin record)], written by the plugin manager
providers: dict[str, list] = {}

# plugin record key -> record of a plugin that did not load, in load order (plugin manager)
unavailable: dict[str, object] = {}

# the ``TENSORPLAY_*`` environment variables as they were when the plugin manager started, before
# any plugin module ran (written by it): every control is read from here, so a plugin that
# rewrites one at import changes nothing -- not the load, not the hints, not the CLI's re-run
controls: dict | None = None


def control(name: str, default=None):
    """The value of environment control ``name`` in the snapshot (``controls``), before any
    plugin was imported; the live environment while no snapshot was taken yet."""
    if controls is not None:
        return controls.get(name, default)
    import os
    return os.environ.get(name, default)


# device type -> loaded backend instance: only complete backends (every kernel bound), written by
# ``publish`` from ``tensorplay.backends.first_use`` / ``register``
loaded: dict = {}

# device type -> backend being set up (``tensorplay.backends``: kernels being bound): not in
# ``loaded`` yet, so other threads do not use it half-bound; the setting-up thread's own steps
# see it through ``backend_of`` (``guard_kernel`` of custom ops).
binding: dict = {}


def load(device_type: str):
    """The loaded backend of ``device_type``; on its first use, ``tensorplay.backends.first_use``
    loads it (``DeviceUnavailableError`` naming the device and the fix when it cannot).

    The one route from the lower layers (a dispatch miss in ``_registry``, ``get_backend``, the
    plugin manager's ``device_status``) up to the function that sets a device up. That function
    needs every layer (the plugin manager to import the provider, the op layer to bind the
    built-in kernels, the registry, ``manual_seed``), so it lives at the top, and this floor
    names it here, at call time, through ``importlib.import_module``: no hook installed at import
    time, no slot to fill, one line a reader can follow (tinygrad's ``Device[...]`` imports its
    backends the same way). Costs a dict lookup after the first use of the device; the
    ``tensorplay`` package always imports ``tensorplay.backends`` before a tensor can exist.
    ``tests/test_architecture_wiring.py`` allows this one upward route and no other."""
    b = loaded.get(device_type)
    if b is not None:
        return b
    from importlib import import_module
    return import_module("tensorplay.backends").first_use(device_type)


def begin_binding(backend) -> None:
    """``backend`` is being set up (``tensorplay.backends``): ``backend_of`` returns it, ``loaded``
    does not list it yet."""
    binding[backend.device_type] = backend


def publish(backend) -> None:
    """Record ``backend`` as the loaded backend of its device type: called last, once every
    kernel of it is bound (torch's lazy init: nobody sees a half-initialised device)."""
    t = backend.device_type
    unregistered.pop(t, None)
    loaded[t] = backend
    binding.pop(t, None)


def abandon(device_type: str) -> None:
    """Setting up the backend of ``device_type`` failed: forget it (``loaded`` never had it)."""
    binding.pop(device_type, None)


def backend_of(device_type: str):
    """The loaded backend of ``device_type``, or the one being set up (its own set-up steps see
    it, so they bind its kernels as for a loaded one); ``None`` when neither. Registration time
    only."""
    b = loaded.get(device_type)
    return b if b is not None else binding.get(device_type)


def withdraw(device_type: str):
    """Forget the loaded backend of ``device_type`` (a test backend leaving; its tensors outlive
    it, ``device_hint`` says so). Returns it, or ``None`` when none was loaded."""
    gone = loaded.pop(device_type, None)
    if gone is not None:
        unregistered[device_type] = type(gone).__name__
    return gone


# device types whose devices carry an index although their backend is not loaded yet (a fake
# or meta-dispatched tensor on "cuda" is on cuda:0, as once the plugin loads)
INDEXED_TYPES: set = {"cuda"}


def is_indexed(device_type: str, backend=None) -> bool:
    """Whether devices of ``device_type`` carry an index on tensors (several devices of that
    type): the backend's ``indexed_devices`` when it says, else ``device_count() > 1``; without a
    loaded backend, whether the type is in ``INDEXED_TYPES``. Creation time only (cached by
    ``tensorplay.device``'s canonical rule)."""
    if backend is None:
        return device_type in INDEXED_TYPES
    ind = backend.indexed_devices   # a Backend member (default None: count the devices)
    if ind is not None:
        return bool(ind)
    return backend.device_count() > 1


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


# entry-point key -> record of a loaded plugin whose module registered no hooks (written by
# the plugin manager): device_hint names it instead of "install"
hollow: dict = {}

# device type -> class name of a backend registered at run time and since unregistered (e.g.
# a ``with MockBackend():`` block that ended): its tensors outlive it; device_hint says so
unregistered: dict = {}


def device_hint(device_type: str) -> str:
    """A sentence telling the user how to get ``device_type``: the recorded failure of the plugin
    that provides it (with the fix), the control that blocks it, or what to install (and the
    closest provided device when the name is near one); ``""`` when a plugin provides it. A
    non-empty hint ends with one space (callers append the next sentence)."""
    rec = failed_provider(device_type)
    if rec is not None:
        if rec.status == "blocked":
            return f"Plugin {rec.label}, which provides it, is installed but {_blocked_by(rec)} "
        return (f"Plugin {rec.label}, which provides it, failed to load: "
                f"{type(rec.error).__name__}: {str(rec.error).rstrip().rstrip('.')}. Fix: {rec.fix} ")
    if device_type in providers:
        return ""
    rec = _hollow_provider(device_type)
    if rec is not None:
        why = " ".join(rec.warnings[-1].split()) if rec.warnings else (
            f"plugin {rec.label} registered no hooks")
        why = why.removeprefix("tensorplay: ")
        return (f"Plugin {rec.label}, which provides it, is installed but provided no device: "
                f"{why[0].lower() + why[1:]} ")
    if device_type in unregistered:
        return (f"Its backend ({unregistered[device_type]}, registered with "
                f"tensorplay.backends.register, e.g. by a `with MockBackend():` block) was "
                f"unregistered, so tensors on device '{device_type}' can no longer run ops; "
                f"register the backend again, or use the tensors inside its block. ")
    dist = KNOWN_DEVICE_DISTS.get(device_type)
    if dist:
        return f"Install {dist} (pip install {dist}). "
    import difflib
    close = difflib.get_close_matches(device_type, sorted(set(providers) | set(KNOWN_DEVICE_DISTS)),
                                      n=1, cutoff=0.6)
    return (f"No installed plugin provides device '{device_type}' (devices: "
            f"{', '.join(sorted(providers)) or 'none'}); install the plugin that provides it "
            f"(`tensorplay plugins` lists the installed plugins and their devices)."
            + (f" Did you mean {close[0]!r}?" if close else "") + " ")


def _blocked_by(rec) -> str:
    """``"blocked: TENSORPLAY_DISABLE_PLUGINS=... names it; remove it ..."``: the control that kept
    plugin ``rec`` from loading (read from the environment the plugins were loaded with; the
    ``tensorplay`` command's ``--plugins``/``--disable-plugins`` set these variables)."""
    if getattr(rec, "blocked_by", "") == "TENSORPLAY_DISABLE_PLUGINS":
        return (f"blocked: TENSORPLAY_DISABLE_PLUGINS="
                f"{control('TENSORPLAY_DISABLE_PLUGINS', '')} (--disable-plugins of the "
                f"tensorplay command) names it; remove it from that list to load it.")
    allow = control("TENSORPLAY_PLUGINS", "")
    with_it = ",".join([n for n in (x.strip() for x in allow.split(",")) if n] + [rec.dist])
    return (f"blocked: TENSORPLAY_PLUGINS={allow} (--plugins of the tensorplay command, the "
            f"allow-list of plugins to load) leaves it out; add it (TENSORPLAY_PLUGINS={with_it}) "
            f"or unset it to load every installed plugin.")


def _hollow_provider(device_type: str):
    """The loaded plugin record whose module registered no hooks (``hollow``: almost always
    shadowed by a same-named file or directory earlier on ``sys.path``) and that is named like
    ``device_type`` (or, for a known device, is its distribution); ``None`` when there is none."""
    dist = KNOWN_DEVICE_DISTS.get(device_type)
    for rec in hollow.values():
        if rec.status == "loaded" and (rec.dist == dist or device_type in _words(rec.name)
                                       | _words(rec.dist) | _words(rec.value)):
            return rec
    return None


def failed_device_note(device_type: str):
    """``"plugin X, which provides it, failed to load: Error: msg. Fix: ..."`` (or "is blocked")
    when an installed plugin that provides ``device_type`` did not load; ``None`` otherwise. Used
    by ``tensorplay.device`` for device types it does not know."""
    if failed_provider(device_type) is None:
        return None
    hint = device_hint(device_type).strip().rstrip(".")
    return hint[0].lower() + hint[1:]


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
    return provided_types()


def accepted_device_types(*, meta: bool = False) -> list:
    """Every known device type, sorted: ``cpu``, ``cuda``, plugin devices, types kernels are
    registered for, and ``meta`` when ``meta``."""
    out = KNOWN_TYPES | plugin_device_types()
    if meta:
        out = out | {"meta"}
    return sorted(out)


def unknown_device_type(t: str, spelling, api: str, *, extra=(), what="device type",
                        any_case=True):
    """``ValueError`` (to raise) for device type ``t`` (lower-cased, from ``spelling``), or
    ``None`` when it is acceptable. Registration-time only (never on the call path).

    Known types (``accepted_device_types``, ``extra``) pass. Refused, with the accepted spellings
    and the closest one (difflib): a spelling with capitals that is no known key in any case
    (``"CUPA"``, ``"Bogus"``: dispatch-key style), a near-miss of a known key (``"cdua"``), or a
    device of another framework no plugin provides (``"gpu"``, ``"tpu"``). Any other lower-case
    identifier is accepted as an out-of-tree device type: an op pack may register kernels for a
    device whose plugin loads after it, and tests simulate devices this way. ``any_case``: the
    caller takes known types in any case (dispatch keys: ``"CPU"``), which the message says;
    ``tensorplay.device`` takes them in lower case only, as torch.
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
        note = failed_device_note(t)
        why = f" ({note})" if note else why
    return ValueError(f"{api}: unknown {what} {spelling!r}{why}; accepted: {accepted}"
                      + (" (any case)" if any_case else "")
                      + (f". Did you mean {suggest!r}?" if suggest else ""))
