"""What the plugin platform knows: one ``PluginRecord`` per installed plugin, and the state the
other plugin modules share (records by key, the pluggy manager, load queues, timings).

Pure data and the facts derived from it (labels, priorities, fix sentences); nothing here
imports or loads a plugin. ``discovery`` fills the scan cache, ``loading`` the records,
``records`` answers the questions of tools and users.
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass, field

from .. import _devices, _registry

__all__ = ["PluginRecord", "PluginWarning", "plugin_label", "priority_of"]


class PluginWarning(RuntimeWarning):
    """Warned once per plugin that failed to load or was skipped (``warnings`` filters apply,
    except that an ``error`` filter never makes ``import tensorplay`` fail: see ``warn``)."""


# PluginWarnings an ``error`` filter turned into exceptions: shown on stderr instead (``warn``)
suppressed_warnings: list = []


def warn(msg: str, stacklevel: int) -> None:
    """Warn ``msg`` as a ``PluginWarning`` (``stacklevel`` as ``warnings.warn``'s, counted from
    the caller). A plugin's fault must never break ``import tensorplay`` or a lazy device load:
    when a warnings filter turns the warning into an exception (``python -W error``, pytest's
    ``filterwarnings = error``), the exception is kept in ``suppressed_warnings`` and the message
    is written to stderr instead; the plugin's record says what happened either way."""
    import warnings
    try:
        warnings.warn(msg, PluginWarning, stacklevel=stacklevel + 1)
    except PluginWarning as w:
        suppressed_warnings.append(w)
        print(f"tensorplay: PluginWarning (an 'error' warnings filter is set; a plugin's fault "
              f"does not stop tensorplay, so it is shown here): {msg}", file=sys.stderr)


@dataclass
class PluginRecord:
    """What is known about one installed plugin.

    ``name``: entry-point name; ``dist``/``version``: its distribution; ``value``: the entry-point
    target (``"module"``; empty for a distribution that only declares kernel entry points);
    ``status``: ``pending`` / ``loaded`` / ``failed`` / ``blocked`` / ``incompatible``, or
    ``lazy``: an op pack whose metadata declares its namespaces, not imported yet (it is on the
    first use of one of them; ``tensorplay.plugins.list()`` and the other listings load every
    such pack first, so they never show it); ``namespaces``: the operator namespaces its
    ``tensorplay.namespaces`` metadata declares;
    ``devices``: device types it provides; ``ops``: qualnames it defined; ``kernel_eps``:
    ``(op, device, "pkg.mod:fn")`` named in its ``tensorplay.kernels`` metadata; ``error``: the
    exception that made it fail; ``priority``: its ``TENSORPLAY_PRIORITY``; ``api_version``:
    its ``TENSORPLAY_API_VERSION``. ``warnings``: what is suspicious about a loaded plugin (its
    module registered no hooks); ``blocked_by``: the environment variable that blocked it
    (``TENSORPLAY_PLUGINS``, the allow-list, or ``TENSORPLAY_DISABLE_PLUGINS``).
    ``attempted_devices``/``attempted_ops`` keep what a failed plugin had announced before
    failing, so requests for them re-raise its error.
    """

    name: str
    dist: str
    version: str
    value: str
    key: str = ""
    status: str = "pending"
    devices: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    kernel_eps: list = field(default_factory=list)
    error: BaseException | None = None
    module: object = None
    priority: int = 0
    api_version: object = None
    handles: list = field(default_factory=list)
    load_seconds: float = 0.0
    attempted_devices: set = field(default_factory=set)
    attempted_ops: set = field(default_factory=set)
    warnings: list = field(default_factory=list)     # loaded, but suspicious (no hooks)
    blocked_by: str = ""     # the control that blocked it: TENSORPLAY_PLUGINS / _DISABLE_PLUGINS
    namespaces: list = field(default_factory=list)   # declared in tensorplay.namespaces metadata

    @property
    def label(self) -> str:
        """``"dist version"``, as used in every message."""
        return f"{self.dist} {self.version}"

    @property
    def fix(self) -> str:
        """How to fix this plugin's failure (the sentence after ``Fix:`` in messages)."""
        return _fix_hint(self)

    @property
    def kernels(self) -> list:
        """``(op qualname, dispatch key)`` for every kernel this plugin has registered now
        (including kernels from its entry-point metadata not yet imported)."""
        out = []
        for op in _registry.all_ops():
            for key, stack in op.kernel_stacks().items():
                if any(e.owner == self.dist for e in stack):
                    out.append((op.name, key))
        return sorted(out)

    @property
    def builtin_kernels(self) -> dict:
        """``{device: (count, lazy)}``: the built-in ``tp::`` kernels this device plugin provides
        through its backend. Bound when the device is first used (``lazy`` True until then, and
        ``count`` the built-ins with an array kernel); after that, the kernels actually bound."""
        builtins = [op for op in _registry.all_ops()
                    if op.is_builtin and op.has_array_kernel]
        out = {}
        for d in self.devices:
            if _provider_dist(d) != self.dist:      # another plugin provides d (priority)
                continue
            if d in _devices.loaded:
                out[d] = (sum(1 for op in builtins if op.kernel_stack(d)), False)
            else:
                out[d] = (len(builtins), True)
        return out

    def as_dict(self) -> dict:
        """Plain data: ``name``, ``distribution`` (alias ``dist``), ``version``, ``status``,
        ``devices``, ``ops``, ``kernels`` (``"ns::op.device"`` strings), ``lazy_kernels``
        (``"ns::op.device" -> "pkg.mod:fn"``), ``priority``, ``api_version``, ``module`` and
        ``error`` (``"Type: message"`` or ``None``), ``warnings`` (sentences), ``blocked_by``,
        ``namespaces`` (declared in its ``tensorplay.namespaces`` metadata: imported on first
        use);
        ``builtin_kernels`` (device ->
        ``{"count", "lazy"}``: built-in ``tp::`` kernels a device plugin provides through its
        backend, see ``PluginRecord.builtin_kernels``)."""
        return {"name": self.name, "distribution": self.dist, "dist": self.dist,
                "version": self.version, "status": self.status, "devices": list(self.devices),
                "ops": list(self.ops), "kernels": [f"{o}.{d}" for o, d in self.kernels],
                "builtin_kernels": {d: {"count": n, "lazy": lazy}
                                    for d, (n, lazy) in self.builtin_kernels.items()},
                "lazy_kernels": {f"{o}.{d}": t for o, d, t in self.kernel_eps},
                "priority": self.priority, "api_version": self.api_version,
                "load_ms": round(self.load_seconds * 1e3, 3),
                "module": self.value or None,
                "error": None if self.error is None else f"{type(self.error).__name__}: {self.error}",
                "warnings": list(self.warnings), "blocked_by": self.blocked_by or None,
                "namespaces": list(self.namespaces)}


class _State:
    def __init__(self):
        self.pm = None
        self.records: dict[str, PluginRecord] = {}
        # device type -> [(priority, DeviceSpec, record)]: the table kept by _devices
        self.devices: dict[str, list] = _devices.providers
        self.loaded = False
        self.lock = threading.RLock()
        self.scan = None                        # cached (plugin eps, kernel eps)
        self.deferred: list = []                # plugins whose module was mid-import
        self.todo: list = []                    # (record, loader, strict) queued by load_all
        self.declared: dict = {}                # (op, device) -> {dists naming it in metadata}
        # op packs imported on first use (``loading.load_namespace``): key -> [record, loader,
        # strict, kernel entry points], and namespace -> [records declaring it], both emptied as
        # the packs load
        self.lazy: dict = {}
        self.lazy_ns: dict = {}
        self.scan_count = 0
        self.trace = False
        self.logger = None
        self.scan_seconds = 0.0                 # figures for benchmarks/bench_import.py
        self.load_seconds = 0.0


_S = _State()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def _label_of(owner) -> str:
    rec = _by_dist(owner) if isinstance(owner, str) else None
    return rec.label if rec is not None else str(owner)


def plugin_label(owner) -> str:
    """``"dist version"`` for a kernel/op owner (a distribution name), for error messages."""
    return _label_of(owner)


def _by_dist(dist):
    for rec in _S.records.values():
        if rec.dist == dist:
            return rec
    return None


def _fix_hint(rec: PluginRecord) -> str:
    """The fix for ``rec``'s failure: the one its error carries (``.fix``, e.g. a conflict), else
    upgrading it; and how to disable just this plugin."""
    fix = getattr(rec.error, "fix", None)
    if fix:
        return fix
    return (f"upgrade or reinstall it (pip install -U {rec.dist}), or disable it with "
            f"TENSORPLAY_DISABLE_PLUGINS={_disable_name(rec)}.")


def _disable_name(rec: PluginRecord) -> str:
    """The name to put in ``TENSORPLAY_DISABLE_PLUGINS`` that blocks ``rec`` and nothing else:
    its entry-point name, unless another installed plugin shares it (then its distribution)."""
    for name in (rec.name, rec.dist):
        n = _norm(name)
        if not any(n in (_norm(o.name), _norm(o.dist)) for o in _S.records.values()
                   if o is not rec):
            return name
    return rec.dist


def priority_of(owner) -> int:
    """``TENSORPLAY_PRIORITY`` of the plugin distribution ``owner`` (0 for anything else)."""
    rec = _by_dist(owner) if isinstance(owner, str) else None
    if rec is None:
        return 0
    if rec.status == "pending" and rec.module is None and rec.value:
        # registrations made while the plugin module is still being imported: read the
        # declaration from the half-imported module (declare it before registering)
        mod = sys.modules.get(rec.value.partition(":")[0])
        v = getattr(mod, "TENSORPLAY_PRIORITY", 0)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0
    return rec.priority


def _provider_dist(device_type: str) -> str:
    p = _devices.provider(device_type)
    return p[2].dist if p is not None else "?"
