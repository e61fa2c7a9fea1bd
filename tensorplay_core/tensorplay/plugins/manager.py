"""Plugin discovery, controls, isolation and records (JAX's and pytest's habits, made stricter).

* **One scan.** Installed entry points are read once per process (``_scan``: one call of
  ``importlib.metadata.entry_points()``, cached), for the groups ``tensorplay.plugins`` (plugin
  modules) and ``tensorplay.kernels`` (kernels named in metadata). pluggy's
  ``load_setuptools_entrypoints`` is never used: it would scan every distribution again.
* **Controls** (environment, read when ``import tensorplay`` loads the plugins):
  ``TENSORPLAY_PLUGINS`` allow-list (comma list; unset: all, empty: none) and
  ``TENSORPLAY_DISABLE_PLUGINS`` block-list, both applied *before* a plugin module is imported
  (a blocked module is never executed); ``TENSORPLAY_STRICT_PLUGINS=1`` turns any load failure
  into a ``PluginError`` raised by ``import tensorplay``; ``TENSORPLAY_TRACE_PLUGINS=1`` logs
  every plugin import, hook call and lazy-kernel import to the ``tensorplay.plugins`` logger
  (stderr unless logging is configured). The two switches read ``1``/``true``/``yes``/``on`` as
  on and unset/empty/``0``/``false``/``no``/``off`` as off (any case); any other value is a
  ``PluginError`` naming the variable. Names match the entry-point name or the distribution
  name (case, ``-``/``_``/``.`` insensitive).
* **Load order does not matter.** Plugins load in distribution-name order, and a plugin whose
  hook looks up an op not defined yet loads the remaining plugins first; a plugin module the
  user imported before ``tensorplay`` is finished later and the ops its import defined are
  attributed to it. Two distributions naming the same plugin module: the second fails with an
  error naming both (and how to skip just that one).
* **Isolation.** Each plugin loads atomically: its module import, its hooks and its kernel entry
  points either all succeed, or everything it registered is undone (ops, kernels, fakes,
  formulas, devices) and the plugin is recorded as ``failed`` with its exception. One
  ``PluginWarning`` names the distribution and version; the error is re-raised, chained, with a
  fix hint when its device or its ops are requested.
* **Contract checks** when a plugin registers (not at first call): hook implementations must
  name a known hook and only its arguments; functions named like a hook but not marked with
  ``@hookimpl`` are reported; ``TENSORPLAY_API_VERSION`` must match ``API_VERSION``'s major number
  (otherwise the plugin is skipped as ``incompatible``).
* **Conflicts.** An op belongs to the plugin that defined it. Another plugin registering a
  kernel for a device the owner provides (registered, or named in its ``tensorplay.kernels``
  metadata) fails with an error naming both and the fix, unless it declares a higher
  ``TENSORPLAY_PRIORITY`` than the owner (then it wins); whatever the load order, the owner keeps
  its ops. Two other plugins registering a kernel for the same (op, device), or two plugins
  providing the same device type, fail the later one with an error naming both, unless their
  ``TENSORPLAY_PRIORITY`` differ (higher wins). Everything a failed plugin registered is undone,
  including the ``Library`` objects it opened (their namespaces are free again).

Hooks run at load time and when tools ask for samples; nothing here is on the per-op call path.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import pluggy

from .. import _devices, _registry
from ..errors import DeviceUnavailableError, DispatchError, PluginError
from . import hookspecs
from .hookspecs import API_VERSION, DeviceSpec, SampleInput

GROUP = "tensorplay.plugins"
KERNEL_GROUP = "tensorplay.kernels"

# which distribution to suggest for a device type nobody provides
KNOWN_DEVICE_DISTS = _devices.KNOWN_DEVICE_DISTS

_HOOK_NAMES = ("tensorplay_devices", "tensorplay_register_ops", "tensorplay_sample_inputs")


class PluginWarning(RuntimeWarning):
    """Warned once per plugin that failed to load or was skipped (``warnings`` filters apply)."""


@dataclass
class PluginRecord:
    """What is known about one installed plugin.

    ``name``: entry-point name; ``dist``/``version``: its distribution; ``value``: the entry-point
    target (``"module"``; empty for a distribution that only declares kernel entry points);
    ``status``: ``pending`` / ``loaded`` / ``failed`` / ``blocked`` / ``incompatible``;
    ``devices``: device types it provides; ``ops``: qualnames it defined; ``kernel_eps``:
    ``(op, device, "pkg.mod:fn")`` named in its ``tensorplay.kernels`` metadata; ``error``: the
    exception that made it fail; ``priority``: its ``TENSORPLAY_PRIORITY``; ``api_version``:
    its ``TENSORPLAY_API_VERSION``. ``attempted_devices``/``attempted_ops`` keep what a failed
    plugin had announced before failing, so requests for them re-raise its error.
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
        for op in _registry._OPS.values():
            for key, stack in op._kernels.items():
                if any(e[1] == self.dist for e in stack):
                    out.append((op.name, key))
        return sorted(out)

    @property
    def builtin_kernels(self) -> dict:
        """``{device: (count, lazy)}``: the built-in ``tp::`` kernels this device plugin provides
        through its backend. Bound when the device is first used (``lazy`` True until then, and
        ``count`` the built-ins with an array kernel); after that, the kernels actually bound."""
        from .. import _backend
        builtins = [op for op in _registry._OPS.values()
                    if op.is_builtin and getattr(op, "_has_array_kernel", False)]
        out = {}
        for d in self.devices:
            if _provider_dist(d) != self.dist:      # another plugin provides d (priority)
                continue
            if d in getattr(_backend, "_LOADED", {}):
                out[d] = (sum(1 for op in builtins if op._kernels.get(d)), False)
            else:
                out[d] = (len(builtins), True)
        return out

    def as_dict(self) -> dict:
        """Plain data: ``name``, ``distribution`` (alias ``dist``), ``version``, ``status``,
        ``devices``, ``ops``, ``kernels`` (``"ns::op.device"`` strings), ``lazy_kernels``
        (``"ns::op.device" -> "pkg.mod:fn"``), ``priority``, ``api_version``, ``module`` and
        ``error`` (``"Type: message"`` or ``None``); ``builtin_kernels`` (device ->
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
                "error": None if self.error is None else f"{type(self.error).__name__}: {self.error}"}


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
        self.scan_count = 0
        self.trace = False
        self.logger = None
        self.scan_seconds = 0.0                 # figures for benchmarks/bench_import.py
        self.load_seconds = 0.0


_S = _State()


class Registrar:
    """Passed to ``tensorplay_register_ops``: names the plugin (``.plugin`` = distribution,
    ``.version``); everything registered while the hook runs is attributed to it and undone if
    the plugin fails."""

    def __init__(self, record: PluginRecord):
        self.plugin = record.dist
        self.version = record.version
        self.record = record

    def __repr__(self) -> str:
        return f"<tensorplay Registrar for {self.record.label}>"


# ---------------------------------------------------------------------------------------------
# names, environment, tracing

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def _env_list(name):
    v = os.environ.get(name)
    if v is None:
        return None
    return {_norm(x) for x in v.split(",") if x.strip()}


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def _env_flag(name: str) -> bool:
    """A boolean control: ``1``/``true``/``yes``/``on`` (any case) is on, unset/empty/``0``/
    ``false``/``no``/``off`` is off; anything else is a ``PluginError`` naming the variable (a
    typo must not silently pick either meaning)."""
    raw = os.environ.get(name, "")
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise PluginError(f"{name}={raw!r} is not a boolean; use one of 1, true, yes, on (enable) or "
                      f"0, false, no, off (disable), or unset it.")


def _matches(names, rec) -> bool:
    return bool({_norm(rec.name), _norm(rec.dist)} & names)


def _trace(msg: str, *args) -> None:
    """Log one trace line when ``TENSORPLAY_TRACE_PLUGINS=1`` (logging imported only then)."""
    if not _S.trace:
        return
    if _S.logger is None:
        import logging
        lg = logging.getLogger("tensorplay.plugins")
        if not lg.handlers and not logging.getLogger().handlers:
            h = logging.StreamHandler(sys.stderr)
            h.setFormatter(logging.Formatter("tensorplay.plugins: %(message)s"))
            lg.addHandler(h)
            lg.propagate = False
        if lg.level == logging.NOTSET or lg.level > logging.INFO:
            lg.setLevel(logging.INFO)
        _S.logger = lg
    _S.logger.info(msg, *args)


def _plugin_manager() -> pluggy.PluginManager:
    """The one pluggy ``PluginManager`` (project ``tensorplay``); hook calls through
    ``pm.hook`` are traced when tracing is on."""
    if _S.pm is None:
        pm = pluggy.PluginManager("tensorplay")
        pm.add_hookspecs(hookspecs.TensorPlaySpecs)
        if _S.trace:
            def before(hook_name, impls, kwargs):
                _trace("hook %s(%s) -> %s", hook_name, ", ".join(sorted(kwargs)),
                       ", ".join(_label_of(i.plugin_name) for i in impls) or "no implementations")

            def after(outcome, hook_name, impls, kwargs):
                exc = outcome.exception
                _trace("hook %s done%s", hook_name,
                       f" (raised {type(exc).__name__}: {exc})" if exc else "")
            pm.add_hookcall_monitoring(before, after)
        _S.pm = pm
    return _S.pm


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


# ---------------------------------------------------------------------------------------------
# discovery

def _scan():
    """The single scan of installed entry points, cached for the process.

    Returns ``(plugin entry points, kernel entry points)``. Counted in ``_S.scan_count`` so tests
    can prove it runs once. Uses ``_fast_scan`` (reads only ``*.dist-info``/``*.egg-info``
    directories on ``sys.path``, never imports ``importlib.metadata``) when the interpreter has
    nothing else that can provide distributions; ``importlib.metadata.entry_points()`` otherwise,
    or always with ``TENSORPLAY_PLUGIN_SCAN=importlib`` (escape hatch; also lets tests fake the
    installed distributions by patching ``importlib.metadata.entry_points``).
    """
    if _S.scan is None:
        t0 = time.perf_counter()
        _S.scan_count += 1
        found = None if os.environ.get("TENSORPLAY_PLUGIN_SCAN") == "importlib" else _fast_scan()
        how = "dist-info reader"
        if found is None:
            found, how = _importlib_scan(), "importlib.metadata"
        _S.scan = found
        _S.scan_seconds = time.perf_counter() - t0
        _trace("scan (%s): %d plugin and %d kernel entry points in %.2f ms", how,
               len(found[0]), len(found[1]), _S.scan_seconds * 1e3)
    return _S.scan


def _importlib_scan():
    from importlib.metadata import entry_points
    eps = entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=GROUP)), list(eps.select(group=KERNEL_GROUP))
    return list(eps.get(GROUP, [])), list(eps.get(KERNEL_GROUP, []))  # pragma: no cover


class _Dist:
    """The two facts of a distribution the manager needs (``metadata["Name"]``, ``version``),
    read from the header of its ``METADATA``/``PKG-INFO`` on first use."""

    def __init__(self, path: str, fallback_name: str):
        self._path = path
        self._fallback = fallback_name
        self._meta = None

    def _read(self) -> dict:
        if self._meta is None:
            meta = {"Name": self._fallback, "Version": "?"}
            for fname in ("METADATA", "PKG-INFO"):
                try:
                    with open(os.path.join(self._path, fname), encoding="utf-8") as f:
                        for line in f:
                            if not line.strip():
                                break                      # end of the header
                            key, sep, value = line.partition(":")
                            if sep and key in ("Name", "Version"):
                                meta[key] = value.strip()
                    break
                except OSError:
                    continue
            self._meta = meta
        return self._meta

    @property
    def metadata(self) -> dict:
        return self._read()

    @property
    def version(self) -> str:
        return self._read()["Version"]


class _EntryPoint:
    """``name = value`` of ``group``, same ``load()`` rule as ``importlib.metadata.EntryPoint``
    (``"pkg.mod"`` or ``"pkg.mod:attr.attr"``)."""

    __slots__ = ("dist", "group", "name", "value")

    def __init__(self, name, value, group, dist):
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self):
        mod_name, _, attr = self.value.partition(":")
        obj = importlib.import_module(mod_name.strip())
        for part in attr.split(".") if attr.strip() else ():
            obj = getattr(obj, part.strip().split("[")[0].strip())
        return obj

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


_WANTED = (GROUP, KERNEL_GROUP)


def _fast_scan():
    """Entry points of the two groups, found the way ``importlib.metadata`` finds them on a plain
    ``sys.path`` of directories (first distribution of a normalized name wins; within a
    directory ``*.dist-info`` before ``*.egg-info``), reading only ``entry_points.txt`` files.

    Returns ``None`` (use ``importlib.metadata``) when something could hide distributions from
    this reader: a zip/egg on ``sys.path``, or a meta-path finder other than ``PathFinder``
    that provides distributions."""
    from importlib.machinery import PathFinder
    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return None
    seen: set = set()
    plugins, kernels = [], []
    for entry in sys.path:
        d = entry or "."
        try:
            names = os.listdir(d)
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            if os.path.isfile(d):
                return None                    # zip import: let importlib.metadata handle it
            continue
        except OSError:
            continue
        infos = sorted(n for n in names if n.endswith(".dist-info"))
        eggs = sorted(n for n in names if n.endswith(".egg-info"))
        if any(n.endswith(".egg") for n in names):
            return None                        # legacy eggs: leave them to importlib.metadata
        for n in infos + eggs:
            stem = n.rpartition(".")[0]
            key = re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower()
            if key in seen:
                continue
            seen.add(key)
            path = os.path.join(d, n)
            try:
                with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            if "tensorplay." not in text:
                continue
            dist = _Dist(path, stem.partition("-")[0])
            group = None
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    group = line[1:-1].strip()
                    continue
                if group in _WANTED:
                    name, sep, value = line.partition("=")
                    if sep:
                        ep = _EntryPoint(name.strip(), value.strip(), group, dist)
                        (plugins if group == GROUP else kernels).append(ep)
    return plugins, kernels


def _dist_of(ep) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ep.name, "?"
    try:
        name = dist.metadata["Name"] or ep.name
    except Exception:  # noqa: BLE001  # pragma: no cover - unreadable metadata
        name = ep.name
    return name, dist.version or "?"


def load_all(entry_points=None, kernel_entry_points=None) -> None:
    """Discover and load every plugin; called once by ``import tensorplay``.

    ``entry_points``/``kernel_entry_points`` (objects with ``name``, ``value``, ``load()`` and
    optionally ``dist``) replace the scan, for embedding and tests. Applies the environment
    controls (module docstring). Raises ``PluginError`` only with ``TENSORPLAY_STRICT_PLUGINS=1``.
    """
    with _S.lock:
        if _S.loaded and entry_points is None:
            return
        _S.loaded = True
        t_start = time.perf_counter()
        _S.trace = _env_flag("TENSORPLAY_TRACE_PLUGINS")
        if entry_points is None:
            entry_points, kernel_entry_points = _scan()
        allow = _env_list("TENSORPLAY_PLUGINS")
        block = _env_list("TENSORPLAY_DISABLE_PLUGINS") or set()
        strict = _env_flag("TENSORPLAY_STRICT_PLUGINS")

        # kernel entry points, grouped by distribution
        kernel_eps: dict[str, list] = {}
        versions: dict[str, str] = {}
        for ep in kernel_entry_points or ():
            dname, ver = _dist_of(ep)
            kernel_eps.setdefault(dname, []).append(ep)
            versions[dname] = ver

        new = []
        for ep in sorted(entry_points, key=lambda e: (_dist_of(e)[0].lower(), e.name)):
            dname, ver = _dist_of(ep)
            if "::" in ep.name:
                _misplaced_kernel_ep(ep, dname, ver, strict)
                continue
            key = dname if dname not in _S.records or _S.records[dname].value == ep.value \
                else f"{dname}:{ep.name}"
            old = _S.records.get(key)
            if old is not None and old.status == "loaded":
                continue
            rec = PluginRecord(name=ep.name, dist=dname, version=ver, value=ep.value, key=key)
            _S.records[key] = rec
            if (allow is not None and not _matches(allow, rec)) or _matches(block, rec):
                rec.status = "blocked"
                # the ops its kernel metadata names: requests for them say it is blocked
                rec.attempted_ops |= {e.name.rpartition(".")[0] for e in kernel_eps.get(dname, ())}
                _trace("blocked %s (%s) before import", rec.label, rec.value)
                continue
            modname = ep.value.partition(":")[0]
            m = sys.modules.get(modname)
            if m is not None and getattr(getattr(m, "__spec__", None), "_initializing", False):
                # The user imported the plugin module first and it is importing tensorplay:
                # its hooks are not defined yet. Finish it once its own import has completed.
                rec.status = "pending"
                _S.deferred.append((rec, ep.load, strict, kernel_eps.pop(dname, None)))
                _trace("deferred %s: its module is still being imported", rec.label)
                continue
            new.append(rec)
            _S.todo.append((rec, ep.load, strict))
        # Load in name order; a plugin whose hook looks up an op that is not defined yet loads
        # the remaining plugins first (``finish_deferred`` from ``_registry.lookup``), so the
        # outcome does not depend on which distribution sorts first.
        _S.declared = {}
        for dname, eps in kernel_eps.items():
            for e in eps:
                qual, _, dev = e.name.rpartition(".")
                _S.declared.setdefault((qual, dev.strip().lower().partition(":")[0]),
                                       set()).add(dname)
        _load_todo()

        # distributions that only declare kernels
        for dname in sorted(kernel_eps):
            if _by_dist(dname) is None:
                rec = PluginRecord(name=dname, dist=dname, version=versions[dname], value="",
                                   key=dname)
                _S.records[dname] = rec
                if (allow is not None and not _matches(allow, rec)) or _matches(block, rec):
                    rec.status = "blocked"
                    rec.attempted_ops |= {e.name.rpartition(".")[0] for e in kernel_eps[dname]}
                    continue
                rec.status = "loaded"
                new.append(rec)

        _sync_unavailable()   # blocked plugins, and records replaced by this load
        # an allow-list typo would silently load nothing; a block-list may name plugins that are
        # not installed (blocking ahead of time is legitimate), so it is not checked
        _warn_unknown_names(allow, "TENSORPLAY_PLUGINS")

        # phase 2: kernels named in metadata (after every plugin defined its ops)
        for rec in new:
            eps = kernel_eps.pop(rec.dist, None)
            if eps and rec.status == "loaded":
                _install_kernel_eps(rec, eps, strict)
        _S.load_seconds += time.perf_counter() - t_start


def _misplaced_kernel_ep(ep, dname: str, ver: str, strict: bool) -> None:
    """A kernel entry point (``"ns::op.device" = "pkg.mod:fn"``) declared in group
    ``tensorplay.plugins`` instead of ``tensorplay.kernels``: skipped (never imported) with one
    ``PluginWarning`` saying where it belongs (``PluginError`` with TENSORPLAY_STRICT_PLUGINS=1)."""
    msg = (f"tensorplay: distribution {dname} {ver} declares the kernel entry point "
           f"{ep.name!r} = {ep.value!r} in group {GROUP!r}; kernels named \"ns::op.device\" "
           f"belong in group {KERNEL_GROUP!r} (imported on first call). It was skipped: move "
           f"it to [project.entry-points.\"{KERNEL_GROUP}\"] in the pyproject.toml of {dname} "
           f"and reinstall.")
    _trace("%s", msg)
    if strict:
        raise PluginError(msg + " (TENSORPLAY_STRICT_PLUGINS=1 makes this an error)")
    warnings.warn(msg, PluginWarning, stacklevel=4)


def _warn_unknown_names(names, var: str) -> None:
    """One ``PluginWarning`` for names in control ``var`` that match no installed plugin (a typo
    would otherwise silently load nothing, or block nothing), listing the installed ones."""
    if not names:
        return
    recs = list(_S.records.values())
    known = {_norm(n) for r in recs for n in (r.name, r.dist, r.key) if n}
    unknown = sorted(n for n in names if n not in known)
    if not unknown:
        return
    installed = ", ".join(sorted({f"{r.dist} (entry point {r.name!r})" if r.value else r.dist
                                  for r in recs})) or "none"
    import difflib
    close = [m for n in unknown for m in difflib.get_close_matches(n, sorted(known), n=1)]
    warnings.warn(
        f"tensorplay: {var} names {', '.join(map(repr, unknown))}, which "
        f"{'matches' if len(unknown) == 1 else 'match'} no installed plugin (installed: "
        f"{installed})" + (f"; did you mean {', '.join(map(repr, close))}?" if close else ".")
        + " Names are entry-point or distribution names, case and -/_/. insensitive.",
        PluginWarning, stacklevel=4)


def _load_todo() -> None:
    """Load the plugins queued by ``load_all`` not loaded yet (in order; re-entrant: a plugin's
    hook can trigger the load of the ones after it)."""
    while _S.todo:
        rec, loader, strict = _S.todo.pop(0)
        _load_one(rec, loader, strict)


def finish_deferred() -> None:
    """Load plugins whose module was mid-import when ``tensorplay`` loaded (``import
    tensorplay_cpu`` before ``import tensorplay``), and, while plugins are loading, the ones
    queued after the current one. Called where plugin results are needed (backends, records,
    op lookups that miss); a no-op once nothing is pending."""
    if _S.todo:
        with _S.lock:
            _load_todo()
    if not _S.deferred:
        return
    with _S.lock:
        pending, _S.deferred = _S.deferred, []
        for rec, loader, strict, keps in pending:
            m = sys.modules.get(rec.value.partition(":")[0])
            if m is not None and getattr(getattr(m, "__spec__", None), "_initializing", False):
                _S.deferred.append((rec, loader, strict, keps))
                continue
            _adopt(rec)
            _load_one(rec, loader, strict)
            if keps and rec.status == "loaded":
                _install_kernel_eps(rec, keps, strict)


def _load_one(rec: PluginRecord, loader, strict: bool) -> None:
    """Import one plugin and run its hooks, atomically (rollback + record on failure)."""
    pm = _plugin_manager()
    mark = len(_registry._undo_log)
    ops_before = set(_registry._OPS)
    _registry._owner_stack.append(_PluginOwner(rec))
    registered = False
    t0 = time.perf_counter()
    try:
        _trace("import %s (%s)", rec.label, rec.value)
        mod = loader()
        _trace("imported %s in %.2f ms", rec.label, (time.perf_counter() - t0) * 1e3)
        for other in _S.records.values():
            if other is not rec and other.module is mod and other.status == "loaded":
                err = PluginError(
                    f"plugin {rec.label} and plugin {other.label} both name module "
                    f"{getattr(mod, '__name__', rec.value)!r} as their plugin (entry points "
                    f"{rec.name!r} and {other.name!r} in group {GROUP!r}); {other.label} loaded "
                    f"it first, so {rec.label} was skipped. One of the two distributions is a "
                    f"duplicate or a stale install.")
                err.fix = (f"uninstall the one you do not want (pip uninstall {rec.dist}), or "
                           f"skip just this one with TENSORPLAY_DISABLE_PLUGINS={rec.dist}.")
                raise err
        rec.module = mod
        rec.attempted_ops |= _own_ops(rec)
        ver = getattr(mod, "TENSORPLAY_API_VERSION", API_VERSION)
        rec.api_version = ver
        if not _api_compatible(ver):
            _rollback(rec, mark, ops_before)
            rec.status = "incompatible"
            rec.error = PluginError(
                f"plugin {rec.label} declares TENSORPLAY_API_VERSION = {ver!r}, but this "
                f"tensorplay {_core_version()} provides plugin API version {API_VERSION}. "
                f"Install a release of {rec.dist} written for API {API_VERSION} "
                f"(pip install -U {rec.dist}), or a tensorplay matching the plugin.")
            _sync_unavailable()
            _warn_or_raise(rec, f"tensorplay: plugin skipped (incompatible): {rec.error}", strict)
            return
        rec.priority = _int_attr(mod, "TENSORPLAY_PRIORITY", rec)
        _validate_module(mod, rec)
        try:
            pm.register(mod, name=rec.key)
        except pluggy.PluginValidationError as e:   # backstop: pluggy's own checks
            raise PluginError(f"plugin {rec.label}: pluggy rejected its hook implementations: "
                              f"{e}. Fix them to match tensorplay.plugins.hookspecs.") from e
        registered = True
        for impl in _impls_of(mod, "tensorplay_devices"):
            specs = _call_impl(rec, impl, "tensorplay_devices") or ()
            for spec in specs:
                if not isinstance(spec, DeviceSpec):
                    raise PluginError(
                        f"plugin {rec.label}: hook tensorplay_devices returned {spec!r}; "
                        f"expected tensorplay.plugins.DeviceSpec objects")
                rec.attempted_devices.add(spec.type)
                _add_device(rec, spec)
        reg = Registrar(rec)
        for impl in _impls_of(mod, "tensorplay_register_ops"):
            _call_impl(rec, impl, "tensorplay_register_ops", registrar=reg)
            rec.attempted_ops |= _own_ops(rec)
        rec.ops = sorted(_own_ops(rec))
        rec.handles = _registry._undo_log[mark:]
        del _registry._undo_log[mark:]
        rec.status = "loaded"
    except (Exception, SystemExit) as e:   # isolation: never break `import tensorplay`
        if rec.status == "incompatible":     # strict mode: already rolled back and reported
            raise
        rec.attempted_ops |= _own_ops(rec)
        if registered:
            pm.unregister(name=rec.key)
        _rollback(rec, mark, ops_before)
        _fail(rec, e, strict)
    finally:
        _registry._owner_stack.pop()
        rec.load_seconds += time.perf_counter() - t0


def _own_ops(rec: PluginRecord) -> set:
    """Qualnames of the registered ops defined by ``rec`` (whatever the load order: ops a plugin's
    hook defines while another plugin loads on demand belong to that other plugin)."""
    return {n for n, o in _registry._OPS.items() if o.plugin == rec.dist and not o.is_builtin}


def _adopt(rec: PluginRecord) -> None:
    """Attribute to ``rec`` what its module registered while it was imported before tensorplay
    had loaded (``import plugin`` first: no owner was set then): ops defined in the module or its
    package, and their kernels from there."""
    modname = rec.value.partition(":")[0].strip()
    if not modname:
        return

    def mine(m) -> bool:
        return isinstance(m, str) and (m == modname or m.startswith(modname + "."))

    with _registry._lock:
        for op in list(_registry._OPS.values()):
            if op.is_builtin or op.plugin is not None or not mine(op.source):
                continue
            op.plugin = rec.dist
            for stack in op._kernels.values():
                for i, (fn, owner, prio) in enumerate(stack):
                    if owner is None and mine(getattr(fn, "__module__", None)):
                        stack[i] = _registry.Kernel(fn, rec.dist, prio)
            if op._fake_owner is None and op._fake is not None:
                op._fake_owner = rec.dist
            _trace("adopted %s for %s (defined while its module was imported first)",
                   op.name, rec.label)


def _api_compatible(ver) -> bool:
    try:
        major = int(str(ver).split(".")[0])
    except ValueError:
        return False
    return major == API_VERSION


def _core_version() -> str:
    return getattr(sys.modules.get("tensorplay"), "__version__", "")


def _int_attr(mod, attr, rec) -> int:
    v = getattr(mod, attr, 0)
    if isinstance(v, bool) or not isinstance(v, int):
        raise PluginError(f"plugin {rec.label}: {attr} must be an int, got {v!r}")
    return v


def _validate_module(mod, rec: PluginRecord) -> None:
    """The contract, checked at registration: hook names and argument names (pluggy's rule:
    an implementation may take any subset of the specification's arguments, by name)."""
    from pluggy._hooks import varnames
    for attr in dir(mod):
        fn = getattr(mod, attr, None)
        if not callable(fn):
            continue
        marked = getattr(fn, "tensorplay_impl", None) is not None
        if not attr.startswith("tensorplay_") and not marked:
            continue
        if not marked:
            if attr in _HOOK_NAMES and getattr(fn, "__module__", None) == \
                    getattr(mod, "__name__", None):
                raise PluginError(
                    f"plugin {rec.label}: function {attr} has the name of a hook but is not "
                    f"marked as one; decorate it with @tensorplay.plugins.hookimpl")
            continue
        opts = getattr(fn, "tensorplay_impl", None) or {}
        if isinstance(opts, dict) and (opts.get("wrapper") or opts.get("hookwrapper")):
            raise PluginError(
                f"plugin {rec.label}: hook {attr} is declared as a wrapper; tensorplay calls each "
                f"plugin's hooks on their own (isolation), so wrappers are not supported. Use a "
                f"plain @hookimpl.")
        if attr not in _HOOK_NAMES:
            close = [h for h in _HOOK_NAMES if _similar(h, attr)]
            raise PluginError(
                f"plugin {rec.label}: @hookimpl {attr} is not a tensorplay hook"
                + (f" (did you mean {close[0]}?)" if close else "")
                + f"; the hooks are {', '.join(_HOOK_NAMES)}")
        spec_args = varnames(getattr(hookspecs.TensorPlaySpecs, attr))[0]
        impl_args = varnames(fn)[0]
        bad = [a for a in impl_args if a not in spec_args]
        if bad:
            raise PluginError(
                f"plugin {rec.label}: hook {attr}({', '.join(impl_args)}): argument(s) "
                f"{', '.join(repr(b) for b in bad)} are not in the hook specification "
                f"{attr}({', '.join(spec_args)}). Rename them; an implementation may take any "
                f"subset of ({', '.join(spec_args)}), by name.")


def _similar(a: str, b: str) -> bool:
    import difflib
    return difflib.SequenceMatcher(None, a, b).ratio() > 0.8


def _impls_of(mod, hook: str) -> list:
    return [i for i in getattr(_plugin_manager().hook, hook).get_hookimpls() if i.plugin is mod]


def _call_impl(rec: PluginRecord, impl, hook: str, **kwargs):
    """Call one plugin's implementation of ``hook`` directly (per-plugin isolation), with the
    arguments it asks for, traced."""
    args = [kwargs[a] for a in impl.argnames]
    t0 = time.perf_counter()
    _trace("hook %s -> %s", hook, rec.label)
    try:
        return impl.function(*args)
    finally:
        _trace("hook %s <- %s (%.2f ms)", hook, rec.label, (time.perf_counter() - t0) * 1e3)


def _add_device(rec: PluginRecord, spec: DeviceSpec) -> None:
    prio = spec.priority or rec.priority
    for p, s, other in _S.devices.get(spec.type, []):
        if p == prio and other is not rec and other.dist != rec.dist:
            raise PluginError(
                f"plugin {rec.label} and plugin {other.label} both provide device "
                f"'{spec.type}' with priority {prio}. Uninstall one of them, or declare "
                f"TENSORPLAY_PRIORITY (or DeviceSpec(priority=...)) higher in the one that should "
                f"win.")
    _S.devices.setdefault(spec.type, []).append((prio, spec, rec))
    if spec.type not in rec.devices:
        rec.devices.append(spec.type)


def _rollback(rec: PluginRecord, mark: int, ops_before: set) -> None:
    """Undo everything ``rec`` registered since ``mark`` (and its recorded handles)."""
    log_ = _registry._undo_log
    handles = rec.handles + log_[mark:]
    del log_[mark:]
    rec.handles = []
    for h in reversed(handles):
        try:
            h.destroy()
        except Exception:  # noqa: BLE001,S110  # pragma: no cover - best effort, idempotent undo
            pass
    for name in set(_registry._OPS) - ops_before:
        op = _registry._OPS[name]
        if op.plugin == rec.dist:
            _registry.unregister_op(op)
    for name in set(rec.ops) | _own_ops(rec):
        op = _registry._OPS.get(name)
        if op is not None and op.plugin == rec.dist:
            _registry.unregister_op(op)
    for d in rec.devices:
        _S.devices[d] = [e for e in _S.devices.get(d, []) if e[2] is not rec]
        if not _S.devices[d]:
            del _S.devices[d]
    rec.devices = []
    rec.ops = []


def _fail(rec: PluginRecord, e: BaseException, strict: bool) -> None:
    rec.status = "failed"
    rec.error = e
    _sync_unavailable()
    where = f" ({rec.value})" if rec.value else ""
    text, fix = str(e).rstrip().rstrip("."), _fix_hint(rec)
    # an error that carries its own fix (a conflict) already says it: do not repeat it
    tail = "" if fix.rstrip(".") in text else f" Fix: {fix}"
    msg = (f"tensorplay: plugin {rec.label}{where} failed to load: {type(e).__name__}: {text}. "
           f"Its devices and ops are unavailable; everything else works.{tail}")
    _warn_or_raise(rec, msg, strict, e)


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


def kernel_conflict_fix(intruder, op_owner) -> str:
    """The fix sentence of a refused kernel registration of plugin ``intruder`` on an op owned by
    plugin ``op_owner`` (both distribution names)."""
    prio = priority_of(op_owner)
    rec = _by_dist(intruder)
    disable = _disable_name(rec) if rec is not None else intruder
    return (f"if {intruder} is meant to replace that kernel, declare TENSORPLAY_PRIORITY = "
            f"{prio + 1} (higher than {op_owner}'s {prio}) in its plugin module; otherwise drop "
            f"the registration from {intruder}, or disable it with "
            f"TENSORPLAY_DISABLE_PLUGINS={disable}.")


def declared_kernel_dists(qualname: str, key: str) -> set:
    """The distributions whose ``tensorplay.kernels`` metadata names a kernel for
    (``qualname``, ``key``)."""
    return _S.declared.get((qualname, key), set())


def _warn_or_raise(rec, msg, strict, cause=None) -> None:
    _trace("%s", msg)
    if strict:
        raise PluginError(msg + " (TENSORPLAY_STRICT_PLUGINS=1 makes this an error)") \
            from (cause or rec.error)
    warnings.warn(msg, PluginWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------
# kernels named in entry-point metadata

def _install_kernel_eps(rec: PluginRecord, eps, strict: bool) -> None:
    """Register ``"ns::op.device" = "pkg.mod:fn"`` entry points as kernels imported on first
    call. Part of the plugin's atomic load: an invalid or conflicting entry fails the plugin."""
    mark = len(_registry._undo_log)
    ops_before = set(_registry._OPS)
    _registry._owner_stack.append(_PluginOwner(rec))
    try:
        for ep in sorted(eps, key=lambda e: e.name):
            qual, dot, dev = ep.name.rpartition(".")
            if not dot or "::" not in qual or ":" not in ep.value:
                raise PluginError(
                    f"plugin {rec.label}: kernel entry point {ep.name!r} = {ep.value!r} in group "
                    f"{KERNEL_GROUP!r} is malformed; expected \"ns::op.device\" = "
                    f"\"package.module:function\"")
            try:
                op = _registry.lookup(qual)
            except LookupError:
                raise PluginError(
                    f"plugin {rec.label}: kernel entry point {ep.name!r} names operator {qual!r}, "
                    f"which no loaded plugin or module defines. Define the op in the plugin "
                    f"module, or fix the entry point name.") from None
            if op.is_builtin or op.namespace == _registry.RESERVED_NAMESPACE:
                raise PluginError(f"plugin {rec.label}: kernel entry point {ep.name!r}: "
                                  + str(_registry.reserved_error(
                                      "", f"{op.name!r} is a built-in operator; it")).lstrip(": "))
            key = _registry.normalize_device_type(dev, f"plugin {rec.label}: entry point "
                                                  f"{ep.name!r}")
            wrapper = _lazy_kernel(op, key, ep.name, ep.value, rec)
            op._add_kernel(key, wrapper, rec.dist, rec.priority)
            rec.kernel_eps.append((qual, key, ep.value))
            _trace("kernel entry point %s = %s of %s registered (imported on first call)",
                   ep.name, ep.value, rec.label)
        rec.handles += _registry._undo_log[mark:]
        del _registry._undo_log[mark:]
    except Exception as e:  # noqa: BLE001 - isolation: the plugin fails, nothing else
        rec.kernel_eps = []
        _plugin_manager()
        if rec.module is not None and _S.pm.is_registered(rec.module):
            _S.pm.unregister(rec.module)
        _rollback(rec, mark, ops_before)
        _fail(rec, e, strict)
    finally:
        _registry._owner_stack.pop()


def _lazy_kernel(op, key: str, ep_name: str, target: str, rec: PluginRecord):
    """A stand-in kernel that imports ``target`` on its first call, checks it against the op's
    schema, puts it in its own place in the op's kernel stack, and calls it. Later calls go
    straight to the real kernel (the dispatch table is rebuilt)."""

    def lazy_kernel(*args, **kwargs):
        fn = _import_lazy(op, key, ep_name, target, rec, lazy_kernel)
        return fn(*args, **kwargs)

    lazy_kernel.__name__ = f"lazy[{target}]"
    lazy_kernel.__qualname__ = lazy_kernel.__name__
    lazy_kernel._tensorplay_lazy_target = target
    lazy_kernel._tensorplay_plugin = rec.dist
    return lazy_kernel


def _import_lazy(op, key, ep_name, target, rec, stand_in):
    mod_name, _, attr = target.partition(":")
    t0 = time.perf_counter()
    try:
        fn = importlib.import_module(mod_name)
        for part in attr.split("."):
            fn = getattr(fn, part)
        _registry._check_binds(op, fn, "kernel", f"entry point {ep_name!r}")
    except Exception as e:
        _trace("lazy kernel %s = %s of %s failed: %s", ep_name, target, rec.label, e)
        raise DispatchError(
            f"{op._api()}: the {key} kernel {target!r} declared by plugin {rec.label} (entry point "
            f"{ep_name!r} in group {KERNEL_GROUP!r}) could not be loaded: {type(e).__name__}: {e}. "
            f"Fix: reinstall {rec.dist} (pip install --force-reinstall {rec.dist}), or correct "
            f"that entry point.") from e
    _trace("lazy kernel %s = %s of %s imported in %.2f ms", ep_name, target, rec.label,
           (time.perf_counter() - t0) * 1e3)
    with _registry._lock:
        stack = op._kernels.get(key, [])
        for i, (f, owner, prio) in enumerate(stack):
            if f is stand_in:
                stack[i] = _registry.Kernel(fn, owner, prio)
                stand_in._tensorplay_resolved = stack[i]   # undoing the stand-in removes this
                op._rebuild()
                break
    return fn


# ---------------------------------------------------------------------------------------------
# devices and failure hints

def load_backend(device_type: str):
    """Import and construct the backend of ``device_type`` (highest-priority provider).

    Raises ``DeviceUnavailableError`` naming the device and the fix; when the plugin that would
    provide it failed to load, its recorded exception is chained (``__cause__``)."""
    finish_deferred()
    cands = sorted(_S.devices.get(device_type, []), key=lambda e: -e[0])
    if not cands:
        rec = _failed_provider(device_type)
        raise DeviceUnavailableError(
            f"device '{device_type}' is not available. {device_hint(device_type)}") \
            from (rec.error if rec is not None else None)
    _, spec, rec = cands[0]
    try:
        mod_name, _, attr = spec.backend.partition(":")
        _trace("load backend %s of %s (device %s)", spec.backend, rec.label, device_type)
        obj = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj()
    except Exception as e:
        raise DeviceUnavailableError(
            f"device '{device_type}': plugin {rec.label} could not load its backend "
            f"{spec.backend}: {type(e).__name__}: {e}. Reinstall {rec.dist} and its "
            f"dependencies (pip install --force-reinstall {rec.dist}).") from e


def _words(s: str) -> set:
    return set(re.split(r"[-_.:]+", s.lower()))


def _failed_provider(device_type: str):
    """The failed/incompatible/blocked plugin that likely provides ``device_type``
    (``_devices.failed_provider``)."""
    return _devices.failed_provider(device_type)


def failed_device_note(device_type: str):
    """``"plugin X, which provides it, failed to load: Error: msg. Fix: ..."`` (or "is blocked")
    when an installed plugin that provides ``device_type`` did not load; ``None`` otherwise."""
    finish_deferred()
    return _devices.failed_device_note(device_type)


def device_hint(device_type: str) -> str:
    """A sentence telling the user how to get ``device_type``: the recorded failure of the
    plugin that provides it (with the fix), the control that blocks it, or what to install."""
    finish_deferred()
    return _devices.device_hint(device_type)


def _sync_unavailable() -> None:
    """Tell ``_devices`` which plugins did not load (in load order), after a status change."""
    bad = {k: r for k, r in _S.records.items() if r.status in ("failed", "incompatible", "blocked")}
    _devices.unavailable.clear()
    _devices.unavailable.update(bad)


def op_failure(qualname: str):
    """The failed (or incompatible/blocked) plugin record that likely provides op ``qualname``:
    one that had defined it, or a namespace of it, before failing; else one whose entry point,
    module or distribution is named like the namespace. ``None`` when there is none."""
    finish_deferred()
    ns = qualname.partition("::")[0].lower()
    bad = [r for r in _S.records.values() if r.status in ("failed", "incompatible", "blocked")]
    for rec in bad:
        if qualname in rec.attempted_ops:
            return rec
    for rec in bad:
        if ns in {o.partition("::")[0].lower() for o in rec.attempted_ops}:
            return rec
    for rec in bad:
        names = {rec.name.lower(), rec.value.split(":")[0].split(".")[0].lower(),
                 _norm(rec.dist).replace("-", "_")}
        if ns in names or ns in _words(rec.dist) or ns in _words(rec.name):
            return rec
    return None


def op_failure_hint(qualname: str) -> str | None:
    """A sentence naming the plugin that should have provided op ``qualname`` and why it did
    not (its recorded error and the fix), or ``None``."""
    rec = op_failure(qualname)
    if rec is None:
        return None
    if rec.status == "blocked":
        return (f"plugin {rec.label}, which may provide it, is blocked by TENSORPLAY_PLUGINS/"
                f"TENSORPLAY_DISABLE_PLUGINS")
    return (f"plugin {rec.label}, which provides it, failed to load: "
            f"{type(rec.error).__name__}: {rec.error}. Fix: {_fix_hint(rec)}")


# ---------------------------------------------------------------------------------------------
# visibility

def records() -> list:
    """Every ``PluginRecord`` (loaded, failed, blocked, incompatible), in load order."""
    finish_deferred()
    return list(_S.records.values())


def get_plugin(name: str) -> PluginRecord:
    """The record of plugin ``name`` (entry-point or distribution name, spelling-insensitive).

    Raises ``PluginError`` listing the installed plugins when there is none."""
    finish_deferred()
    n = _norm(name)
    for rec in _S.records.values():
        if n in (_norm(rec.name), _norm(rec.dist), _norm(rec.key)):
            return rec
    raise PluginError(f"no tensorplay plugin named {name!r} is installed (installed: "
                      f"{', '.join(sorted(r.dist for r in _S.records.values())) or 'none'}). "
                      f"Install it with pip, or check `tensorplay plugins`.")


def list_plugins() -> list[dict]:
    """Every installed plugin as plain data (``PluginRecord.as_dict``): distribution, version,
    status (loaded / failed / blocked / incompatible), devices, ops, kernels, error.

    Example::

        >>> [p["distribution"] for p in tensorplay.plugins.list() if p["status"] == "loaded"]
        ['tensorplay-cpu', 'tensorplay-example-ops']
    """
    finish_deferred()
    return [r.as_dict() for r in _S.records.values()]


def ops_table(namespace: str | None = None) -> list[dict]:
    """Every registered op as plain data, sorted by name (``tensorplay ops``).

    Each dict: ``name``, ``schema`` (string), ``devices`` (dispatch keys that have a kernel:
    registered, named in entry-point metadata, or -- for built-in ``tp::`` ops -- bound when a
    provided device is first used), ``kernels`` (key -> ``{"source": distribution or "core" or
    "user", "lazy": bool}``), ``plugin`` (distribution that defined it, ``"tensorplay"`` for
    built-ins, ``None`` for user code), ``module`` (defining module), ``builtin``, ``has_fake``,
    ``has_autograd``. ``namespace`` restricts to one namespace.
    """
    finish_deferred()
    out = []
    provided = sorted(_S.devices)
    for op in _registry.all_ops():
        if namespace is not None and op.namespace != namespace:
            continue
        kernels = {}
        for key, stack in op._kernels.items():
            if not stack:
                continue
            fn, owner, _ = stack[-1]
            kernels[key] = {"source": owner if owner else ("core" if op.is_builtin else "user"),
                            "lazy": hasattr(fn, "_tensorplay_lazy_target")}
        if op.is_builtin and getattr(op, "_has_array_kernel", False):
            for d in provided:
                kernels.setdefault(d, {"source": _provider_dist(d), "lazy": True})
        out.append({
            "name": op.name, "schema": str(op.schema), "devices": sorted(kernels),
            "kernels": kernels,
            "plugin": "tensorplay" if op.is_builtin else op.plugin,
            "module": op.source, "builtin": op.is_builtin,
            "has_fake": op._fake is not None or op._meta_default is not None,
            "has_autograd": op._backward is not None,
        })
    return out


def _provider_dist(device_type: str) -> str:
    p = _devices.provider(device_type)
    return p[2].dist if p is not None else "?"


def plugin_ops(name: str) -> list:
    """``(op, device types or None)`` for everything plugin ``name`` ships: ops it defined
    (``None``: check on every device with a kernel), ops it registered kernels for (just those
    devices), and for a device plugin the built-in ops on its devices. Raises ``PluginError``
    (chained to the recorded error) when the plugin failed, is blocked or is not installed."""
    rec = get_plugin(name)
    if rec.status == "pending":
        raise PluginError(f"plugin {rec.label} is still being imported (its module "
                          f"{rec.value!r} has not finished executing); ask again once that "
                          f"import has completed.")
    if rec.status != "loaded":
        raise PluginError(
            f"plugin {rec.label} is {rec.status}"
            + (f": {type(rec.error).__name__}: {rec.error}. Fix: {_fix_hint(rec)}"
               if rec.error is not None else
               "; remove it from TENSORPLAY_DISABLE_PLUGINS / add it to TENSORPLAY_PLUGINS.")) \
            from rec.error
    out: dict[str, set | None] = {}
    for q in rec.ops:
        if q in _registry._OPS:
            out[q] = None
    for q, key in rec.kernels:
        if out.get(q, ()) is not None:
            out.setdefault(q, set()).add(key)
    if rec.devices:
        for op in _registry.all_ops():
            if op.is_builtin and getattr(op, "_has_array_kernel", False) and op.name not in out:
                out[op.name] = set(rec.devices)
    return [(_registry._OPS[q], None if d is None else sorted(d)) for q, d in sorted(out.items())]


# ---------------------------------------------------------------------------------------------
# samples and devices for tools

def sample_inputs(op, device) -> list:
    """Samples for ``op`` on ``device`` from every loaded plugin's ``tensorplay_sample_inputs``.

    Each plugin is called on its own; results are normalized to ``SampleInput``. A hook that
    raises or returns something else raises ``PluginError`` naming the plugin and the op."""
    finish_deferred()
    from .._device import Device
    device = Device(device)
    out = []
    for rec in list(_S.records.values()):
        if rec.status != "loaded" or rec.module is None:
            continue
        for impl in _impls_of(rec.module, "tensorplay_sample_inputs"):
            try:
                res = _call_impl(rec, impl, "tensorplay_sample_inputs", op=op, device=device)
            except Exception as e:
                raise PluginError(
                    f"plugin {rec.label}: hook tensorplay_sample_inputs(op={op.name}, "
                    f"device={device}) raised {type(e).__name__}: {e}. Fix the hook in "
                    f"{rec.value}.") from e
            if res is None:
                continue
            try:
                items = list(res)
            except TypeError:
                raise PluginError(f"plugin {rec.label}: hook tensorplay_sample_inputs returned "
                                  f"{res!r}; expected a list of SampleInput or None") from None
            for i, s in enumerate(items):
                if isinstance(s, SampleInput):
                    out.append(s if s.name else SampleInput(s.args, s.kwargs, f"{rec.dist}#{i}"))
                elif isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], dict):
                    out.append(SampleInput(tuple(s[0]), dict(s[1]), f"{rec.dist}#{i}"))
                elif isinstance(s, (tuple, list)):
                    out.append(SampleInput(tuple(s), {}, f"{rec.dist}#{i}"))
                else:
                    out.append(SampleInput((s,), {}, f"{rec.dist}#{i}"))
    return out


def available_devices() -> list[str]:
    """Device types whose backend loads and reports itself available (loads backends)."""
    return [d for d in sorted(_S.devices) if device_status(d)[0]]


def device_status(device_type: str) -> tuple[bool, str]:
    """``(usable, reason)`` for ``device_type``; loads its backend; never raises."""
    from .. import _backend
    try:
        _backend.get_backend(device_type)
        return True, ""
    except Exception as e:  # noqa: BLE001 - documented: never raises
        return False, str(e)


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


# ---------------------------------------------------------------------------------------------
# what the registry needs from the manager travels with the registration (owners) or reaches the
# manager as events it subscribed to (conflict checks, op lookups that miss)

class _PluginOwner(_registry.Owner):
    """The owner pushed while plugin ``rec`` loads; its priority is read when asked (the module
    may still be importing, with ``TENSORPLAY_PRIORITY`` already declared)."""

    __slots__ = ("record",)

    def __init__(self, rec: PluginRecord):
        super().__init__(rec.dist)
        self.record = rec

    @property
    def priority(self) -> int:
        return priority_of(self.name)


def _owner_str(owner) -> str:
    if isinstance(owner, str):   # a plugin distribution: "plugin tensorplay-x 1.2"
        return f"plugin {plugin_label(owner)}"
    return repr(owner)


def _check_kernel_conflict(op, key: str, entry, stack) -> None:
    """Refuse (``DispatchError`` naming both plugins, with ``.fix``) a kernel registration of one
    plugin that conflicts with another plugin's (module docstring, "Conflicts"). Subscribed to
    ``_registry.kernel_checks``: runs before the kernel is pushed on ``op``'s stack for ``key``."""
    owner, priority = entry.owner, entry.priority
    op_owner = op.plugin
    if owner is not None and op_owner is not None and owner != op_owner and not op.is_builtin:
        # A plugin adding a kernel to another plugin's op: refused when the op's owner provides
        # (or names in its metadata) a kernel for this device, unless it declares a higher
        # priority. Checked against the owner's declaration, not the stack alone, so the
        # outcome does not depend on which plugin loads first.
        covered = any(e[1] == op_owner for e in stack) or \
            op_owner in declared_kernel_dists(op.name, key)
        owner_prio = priority_of(op_owner)
        if covered and priority <= owner_prio:
            fix = kernel_conflict_fix(owner, op_owner)
            err = DispatchError(
                f"register_kernel({op.name!r}, {key!r}): {_owner_str(owner)} tried to "
                f"register a {key!r} kernel for {op.name}, which {_owner_str(op_owner)} "
                f"defines and provides the {key!r} kernel of (priority {owner_prio}); "
                f"the op's owner keeps its kernel. Fix: {fix}")
            err.fix = fix
            raise err
    if stack:
        top_fn, top_owner, top_prio = stack[-1]
        if owner is not None and top_owner is not None and owner != top_owner and \
                priority == top_prio and owner != op_owner:
            err = DispatchError(
                f"register_kernel({op.name!r}, {key!r}): conflict: kernel from "
                f"{_owner_str(owner)} and kernel from {_owner_str(top_owner)} both claim "
                f"({op.name}, {key}). Uninstall one of them, or declare "
                f"TENSORPLAY_PRIORITY = 1 in the module of the one that should win "
                f"(higher wins).")
            err.fix = (f"uninstall one of them, or declare TENSORPLAY_PRIORITY = "
                       f"{priority + 1} in the plugin module of the one that should win "
                       f"(higher wins).")
            raise err


def _on_lookup_miss(qualname: str) -> None:
    finish_deferred()   # a plugin imported before tensorplay may still be pending


_registry.kernel_checks.append(_check_kernel_conflict)
_registry.lookup_misses.append(_on_lookup_miss)
