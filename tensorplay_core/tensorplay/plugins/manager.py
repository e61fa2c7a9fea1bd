"""Plugin discovery, controls, isolation and records (JAX's and pytest's habits).

* Entry points are scanned **once per process** (``importlib.metadata.entry_points()``), for the
  groups ``tensorplay.plugins`` and ``tensorplay.kernels``.
* Controls (environment, read at import): ``TENSORPLAY_PLUGINS`` allow-list (unset: all; empty:
  none), ``TENSORPLAY_DISABLE_PLUGINS`` block-list, both applied *before* a plugin module is
  imported; ``TENSORPLAY_STRICT_PLUGINS=1`` turns a load failure into an error;
  ``TENSORPLAY_TRACE_PLUGINS=1`` logs each hook call. Names match the entry-point name or the
  distribution name.
* Isolation: a plugin that raises on import or in a hook produces one warning naming its
  distribution and version; what it registered is undone; the error is recorded and re-raised
  with a fix hint when its device or ops are requested.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field

import pluggy

from .. import _registry
from ..errors import DeviceUnavailableError, PluginError
from . import hookspecs
from .hookspecs import API_VERSION, DeviceSpec

log = logging.getLogger("tensorplay.plugins")

GROUP = "tensorplay.plugins"
KERNEL_GROUP = "tensorplay.kernels"

# which distribution to suggest for a device type nobody provides
KNOWN_DEVICE_DISTS = {"cpu": "tensorplay-cpu", "cuda": "tensorplay-cuda"}


@dataclass
class PluginRecord:
    """What is known about one plugin: ``name`` (entry point), ``dist``, ``version``, ``status``
    (``loaded`` / ``failed`` / ``blocked`` / ``incompatible``), ``devices``, ``ops`` (qualnames it
    defined), ``kernels`` ((op, device) it registered), ``error`` (the exception), ``module``."""

    name: str
    dist: str
    version: str
    value: str
    status: str = "pending"
    devices: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    error: BaseException | None = None
    module: object = None
    priority: int = 0

    def as_dict(self) -> dict:
        return {"name": self.name, "dist": self.dist, "version": self.version,
                "status": self.status, "devices": list(self.devices), "ops": list(self.ops),
                "kernels": [f"{o}.{d}" for o, d in self.kernels],
                "error": None if self.error is None else f"{type(self.error).__name__}: {self.error}"}


class _State:
    def __init__(self):
        self.pm = None
        self.records: dict[str, PluginRecord] = {}
        self.devices: dict[str, list] = {}     # device type -> [(priority, DeviceSpec, record)]
        self.loaded = False
        self.lock = threading.RLock()
        self.kernel_eps = []


_S = _State()


class Registrar:
    """Passed to ``tensorplay_register_ops``: names the plugin; registrations inside are its."""

    def __init__(self, record: PluginRecord):
        self.plugin = record.dist
        self.record = record


def _env_list(name):
    v = os.environ.get(name)
    if v is None:
        return None
    return {x.strip().lower().replace("_", "-") for x in v.split(",") if x.strip()}


def _matches(names, rec) -> bool:
    cand = {rec.name.lower().replace("_", "-"), rec.dist.lower().replace("_", "-")}
    return bool(cand & names)


def _plugin_manager():
    if _S.pm is None:
        pm = pluggy.PluginManager("tensorplay")
        pm.add_hookspecs(hookspecs.TensorPlaySpecs)
        if os.environ.get("TENSORPLAY_TRACE_PLUGINS") == "1":
            def before(hook_name, impls, kwargs):
                log.warning("tensorplay plugin hook %s -> %s", hook_name,
                            [i.plugin_name for i in impls])
            pm.add_hookcall_monitoring(before, lambda *a: None)
        _S.pm = pm
    return _S.pm


def _scan():
    """The single scan of installed entry points."""
    from importlib.metadata import entry_points
    eps = entry_points()
    sel = eps.select if hasattr(eps, "select") else None
    plugins = list(sel(group=GROUP)) if sel else list(eps.get(GROUP, []))
    kernels = list(sel(group=KERNEL_GROUP)) if sel else list(eps.get(KERNEL_GROUP, []))
    return plugins, kernels


def load_all(entry_points=None, kernel_entry_points=None) -> None:
    """Discover and load every plugin (called once by ``import tensorplay``)."""
    with _S.lock:
        if _S.loaded and entry_points is None:
            return
        _S.loaded = True
        if entry_points is None:
            entry_points, kernel_entry_points = _scan()
        allow = _env_list("TENSORPLAY_PLUGINS")
        block = _env_list("TENSORPLAY_DISABLE_PLUGINS") or set()
        strict = os.environ.get("TENSORPLAY_STRICT_PLUGINS") == "1"
        for ep in entry_points:
            dist = getattr(ep, "dist", None)
            rec = PluginRecord(name=ep.name, dist=dist.metadata["Name"] if dist else ep.name,
                               version=dist.version if dist else "?", value=ep.value)
            if rec.dist in _S.records and _S.records[rec.dist].status == "loaded":
                continue
            _S.records[rec.dist] = rec
            if (allow is not None and not _matches(allow, rec)) or _matches(block, rec):
                rec.status = "blocked"
                continue
            _load_one(rec, lambda ep=ep: ep.load(), strict)
        _S.kernel_eps.extend(kernel_entry_points or [])
        _install_lazy_kernels(kernel_entry_points or [], allow, block, strict)


def _load_one(rec: PluginRecord, loader, strict: bool) -> None:
    pm = _plugin_manager()
    handles_before = len(_registry._undo_log)
    _registry._owner_stack.append(rec.dist)
    ops_before = set(_registry._OPS)
    try:
        mod = loader()
        rec.module = mod
        ver = getattr(mod, "TENSORPLAY_API_VERSION", API_VERSION)
        if int(ver) != API_VERSION:
            rec.status = "incompatible"
            rec.error = PluginError(
                f"plugin {rec.dist} {rec.version} declares TENSORPLAY_API_VERSION={ver}, but this "
                f"tensorplay provides API version {API_VERSION}; upgrade the plugin or tensorplay")
            _undo_since(handles_before, ops_before)
            warnings.warn(str(rec.error), RuntimeWarning, stacklevel=3)
            return
        rec.priority = int(getattr(mod, "TENSORPLAY_PRIORITY", 0))
        _priority[rec.dist] = rec.priority
        pm.register(mod, name=rec.dist)
        try:
            for impl in pm.hook.tensorplay_devices.get_hookimpls():
                if impl.plugin is mod:
                    for spec in impl.function() or ():
                        _S.devices.setdefault(spec.type, []).append((spec.priority, spec, rec))
                        rec.devices.append(spec.type)
            reg = Registrar(rec)
            for impl in pm.hook.tensorplay_register_ops.get_hookimpls():
                if impl.plugin is mod:
                    _trace("tensorplay_register_ops", rec)
                    impl.function(reg)
        except BaseException:
            pm.unregister(mod)
            for d in rec.devices:
                _S.devices[d] = [e for e in _S.devices.get(d, []) if e[2] is not rec]
            rec.devices.clear()
            raise
        rec.ops = sorted(set(_registry._OPS) - ops_before)
        rec.kernels = [(o.name, k) for o in _registry._OPS.values() for k, st in o._kernels.items()
                       if st and any(e[1] == rec.dist for e in st)]
        rec.status = "loaded"
    except Exception as e:   # isolation: never break `import tensorplay`
        _undo_since(handles_before, ops_before)
        rec.status = "failed"
        rec.error = e
        msg = (f"tensorplay: plugin {rec.dist} {rec.version} ({rec.value}) failed to load: "
               f"{type(e).__name__}: {e}. Its devices and ops are unavailable; set "
               f"TENSORPLAY_DISABLE_PLUGINS={rec.name} to silence this, or fix/reinstall it.")
        if strict:
            raise PluginError(msg) from e
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    finally:
        _registry._owner_stack.pop()


def _trace(hook, rec):
    if os.environ.get("TENSORPLAY_TRACE_PLUGINS") == "1":
        log.warning("tensorplay plugin hook %s -> %s", hook, rec.dist)


_priority: dict = {}


def priority_of(owner) -> int:
    return _priority.get(owner, 0)


def _undo_since(n: int, ops_before: set) -> None:
    log_ = _registry._undo_log
    while len(log_) > n:
        h = log_.pop()
        try:
            h.destroy()
        except Exception:  # pragma: no cover - best effort rollback
            pass
    for name in set(_registry._OPS) - ops_before:
        _registry.unregister_op(_registry._OPS[name])


def _install_lazy_kernels(eps, allow, block, strict) -> None:
    """Entry points ``"ns::op.device" = "pkg.mod:fn"``: kernels imported on first call."""
    for ep in eps:
        dist = getattr(ep, "dist", None)
        dname = dist.metadata["Name"] if dist else ep.name
        rec = _S.records.get(dname)
        if rec is not None and rec.status != "loaded":
            continue
        if rec is None:
            rec = PluginRecord(name=dname, dist=dname, version=dist.version if dist else "?",
                               value="", status="loaded")
            probe = rec
            if (allow is not None and not _matches(allow, probe)) or _matches(block, probe):
                continue
            _S.records[dname] = rec
        qual, _, dev = ep.name.rpartition(".")
        try:
            op = _registry.lookup(qual)
            key = _registry.normalize_device_type(dev, f"entry point {ep.name!r}")
            op._add_lazy(key, ep.value, dname)
            rec.kernels.append((qual, key))
        except Exception as e:
            msg = (f"tensorplay: plugin {dname}: kernel entry point {ep.name!r} = {ep.value!r} "
                   f"is invalid: {e}")
            rec.error = rec.error or e
            if strict:
                raise PluginError(msg) from e
            warnings.warn(msg, RuntimeWarning, stacklevel=3)


def load_backend(device_type: str):
    """Import and construct the backend of ``device_type`` (highest-priority provider)."""
    cands = sorted(_S.devices.get(device_type, []), key=lambda e: -e[0])
    if not cands:
        raise DeviceUnavailableError(f"device '{device_type}' is not available. {device_hint(device_type)}")
    _, spec, rec = cands[0]
    try:
        mod_name, _, attr = spec.backend.partition(":")
        obj = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj()
    except Exception as e:
        raise DeviceUnavailableError(
            f"device '{device_type}': plugin {rec.dist} {rec.version} could not load its backend "
            f"{spec.backend}: {type(e).__name__}: {e}. Reinstall {rec.dist} and its "
            f"dependencies.") from e


def device_hint(device_type: str) -> str:
    """A sentence telling the user how to get ``device_type`` (install, or the recorded failure)."""
    for rec in _S.records.values():
        if rec.status in ("failed", "incompatible") and (
                device_type in rec.name.lower() or device_type in rec.dist.lower()):
            return (f"Plugin {rec.dist} {rec.version} that provides it failed to load: "
                    f"{type(rec.error).__name__}: {rec.error}. Fix or reinstall it. ")
        if rec.status == "blocked" and (device_type in rec.name.lower() or
                                        device_type in rec.dist.lower()):
            return (f"Plugin {rec.dist} is installed but blocked by TENSORPLAY_PLUGINS/"
                    f"TENSORPLAY_DISABLE_PLUGINS. ")
    if device_type in _S.devices:
        return ""
    dist = KNOWN_DEVICE_DISTS.get(device_type)
    if dist:
        return f"Install {dist} (pip install {dist}). "
    return f"No installed plugin provides device '{device_type}'. "


def op_failure_hint(qualname: str) -> str | None:
    """If a failed plugin is a likely provider of ``qualname``'s namespace, say so."""
    ns = qualname.partition("::")[0]
    for rec in _S.records.values():
        if rec.status in ("failed", "incompatible") and rec.error is not None:
            mod = rec.value.split(":")[0].split(".")[0]
            if ns in (rec.name, mod) or ns in rec.dist.replace("-", "_"):
                return (f"plugin {rec.dist} {rec.version} failed to load: "
                        f"{type(rec.error).__name__}: {rec.error}")
    return None


def records() -> list:
    return list(_S.records.values())


def list_plugins() -> list[dict]:
    """Every plugin as a dict: name, dist, version, status, devices, ops, kernels, error."""
    return [r.as_dict() for r in _S.records.values()]


def sample_inputs(op, device) -> list:
    """Samples for ``op`` on ``device`` from every plugin's ``tensorplay_sample_inputs``."""
    from .hookspecs import SampleInput
    out = []
    for res in _plugin_manager().hook.tensorplay_sample_inputs(op=op, device=device):
        for s in res or ():
            if isinstance(s, SampleInput):
                out.append(s)
            elif isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], dict):
                out.append(SampleInput(tuple(s[0]), dict(s[1])))
            else:
                out.append(SampleInput(tuple(s) if isinstance(s, (tuple, list)) else (s,), {}))
    return out


def available_devices() -> list[str]:
    """Device types whose backend loads and reports itself available (loads backends)."""
    from .. import _backend
    out = []
    for d in sorted(_S.devices):
        try:
            _backend.get_backend(d)
            out.append(d)
        except Exception:
            pass
    return out


def device_status(device_type: str) -> tuple[bool, str]:
    from .. import _backend
    try:
        _backend.get_backend(device_type)
        return True, ""
    except Exception as e:
        return False, str(e)


_ = sys
