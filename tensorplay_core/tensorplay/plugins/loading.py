"""Loading: import each discovered plugin, check its contract, run its hooks, atomically.

* **Load order does not matter.** Plugins load in distribution-name order, and a plugin whose
  hook looks up an op not defined yet loads the remaining plugins first (``finish_deferred``,
  called by ``packs.load_for``, which ``_registry.lookup`` calls); a plugin module the
  user imported before ``tensorplay`` is finished later and the ops its import defined are
  attributed to it. An op pack declaring its namespaces is only recorded here (``lazy``) and
  loaded by ``packs`` on first use, through ``_load_one`` like any other.
* **Isolation.** Each plugin loads atomically: its module import, its hooks and its kernel
  entry points either all succeed, or everything it registered is undone (ops, kernels, fakes,
  formulas, devices) and the plugin is recorded as ``failed`` with its exception (one
  ``PluginWarning``; ``PluginError`` with ``TENSORPLAY_STRICT_PLUGINS=1``). What did not load
  is told to ``_devices``, so a request for its device re-raises its error with the fix.
* **Contract checks** at registration: hook names and arguments, ``@hookimpl`` markers,
  ``TENSORPLAY_API_VERSION`` (mismatch: ``incompatible``), ``TENSORPLAY_PRIORITY``.
* **Backends**: ``load_backend`` imports the backend of a device's highest-priority provider.
"""

from __future__ import annotations

import sys
import time

import pluggy

from .. import _devices, _registry
from ..errors import DeviceUnavailableError, PluginError
from . import hookspecs, lazy
from .blame import author_fix as _author_fix
from .conflicts import _PluginOwner
from .discovery import (
    GROUP,
    _declared_namespaces,
    _dist_of,
    _env_flag,
    _env_list,
    _matches,
    _misplaced_kernel_ep,
    _scan,
    _trace,
    _unused_namespace_eps,
    _warn_unknown_names,
    resolve,
    snapshot_controls,
)
from .hookspecs import API_VERSION, DeviceSpec
from .state import _S, PluginRecord, _by_dist, _fix_hint, _label_of, _norm
from .state import warn as _warn

_HOOK_NAMES = ("tensorplay_devices", "tensorplay_register_ops", "tensorplay_sample_inputs")


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


def load_all(entry_points=None, kernel_entry_points=None, namespace_entry_points=None) -> None:
    """Discover and load every plugin; called once by ``import tensorplay``.

    ``entry_points``/``kernel_entry_points``/``namespace_entry_points`` (objects with ``name``,
    ``value``, ``load()`` and optionally ``dist``) replace the scan, for embedding and tests.
    Applies the environment controls (module docstring). An op pack whose
    ``tensorplay.namespaces`` metadata names its namespaces is not imported here: it is recorded
    (status ``lazy``) and imported on the first use of one of them (``load_namespace``). Raises
    ``PluginError`` only with ``TENSORPLAY_STRICT_PLUGINS=1``.
    """
    with _S.lock:
        if _S.loaded and entry_points is None:
            return
        _S.loaded = True
        t_start = time.perf_counter()
        snapshot_controls()      # before any plugin module runs (it might rewrite them)
        _S.trace = _env_flag("TENSORPLAY_TRACE_PLUGINS")
        if entry_points is None:
            entry_points, kernel_entry_points, namespace_entry_points = _scan()
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

        spaces_of = _declared_namespaces(namespace_entry_points, strict)   # dist -> module -> ns
        new = []
        queued: dict = {}       # id -> record queued by this scan (records are unhashable)
        for ep in sorted(entry_points, key=lambda e: (_dist_of(e)[0].lower(), e.name)):
            dname, ver = _dist_of(ep)
            if "::" in ep.name:
                _misplaced_kernel_ep(ep, dname, ver, strict)
                continue
            key = dname if dname not in _S.records or _S.records[dname].value == ep.value \
                else f"{dname}:{ep.name}"
            old = _S.records.get(key)
            if old is not None and (old.status == "loaded" or id(old) in queued):
                # loaded before, or the same distribution naming the same module under a second
                # entry point: one plugin, loaded once
                continue
            rec = PluginRecord(name=ep.name, dist=dname, version=ver, value=ep.value, key=key)
            _S.records[key] = rec
            modname = ep.value.partition(":")[0]
            rec.namespaces = spaces_of.get(dname, {}).pop(modname.strip(), [])
            if (allow is not None and not _matches(allow, rec)) or _matches(block, rec):
                rec.status = "blocked"
                rec.blocked_by = _blocked_by(allow, block, rec)
                # the ops its kernel metadata names: requests for them say it is blocked
                rec.attempted_ops |= {e.name.rpartition(".")[0] for e in kernel_eps.get(dname, ())}
                _trace("blocked %s (%s) before import", rec.label, rec.value)
                continue
            m = sys.modules.get(modname)
            if m is not None and getattr(getattr(m, "__spec__", None), "_initializing", False):
                # The user imported the plugin module first and it is importing tensorplay:
                # its hooks are not defined yet. Finish it once its own import has completed.
                rec.status = "pending"
                _S.deferred.append((rec, ep.load, strict, kernel_eps.pop(dname, None)))
                _trace("deferred %s: its module is still being imported", rec.label)
                continue
            queued[id(rec)] = rec
            if rec.namespaces:
                # an op pack naming its namespaces: imported on their first use, not now
                rec.status = "lazy"
                _S.lazy[key] = [rec, ep.load, strict, None]
                for ns in rec.namespaces:
                    _S.lazy_ns.setdefault(ns, []).append(rec)
                    _registry.lazy_namespaces.add(ns)
                _trace("lazy %s (%s): imported on first use of namespace(s) %s", rec.label,
                       rec.value, ", ".join(rec.namespaces))
                continue
            new.append(rec)
            _S.todo.append((rec, ep.load, strict))
        _unused_namespace_eps(spaces_of, strict)
        # Load in name order; a plugin whose hook looks up an op that is not defined yet loads
        # the remaining plugins first (``finish_deferred`` from ``_registry.lookup``), so the
        # outcome does not depend on which distribution sorts first.
        _S.declared = {}
        for dname, eps in kernel_eps.items():
            for e in eps:
                qual, _, dev = e.name.rpartition(".")
                _S.declared.setdefault((qual, dev.strip().lower().partition(":")[0]),
                                       set()).add(dname)
        # a lazy pack's kernel entry points are registered when it loads (they count as declared
        # above, for the conflict rules), unless an eagerly loaded plugin of the same
        # distribution takes them, as it always did
        eager = {r.dist for r in new}
        for entry in _S.lazy.values():
            if entry[3] is None and entry[0].dist not in eager:
                entry[3] = kernel_eps.pop(entry[0].dist, None)
        _load_todo()

        # distributions that only declare kernels
        for dname in sorted(kernel_eps):
            if _by_dist(dname) is None:
                rec = PluginRecord(name=dname, dist=dname, version=versions[dname], value="",
                                   key=dname)
                _S.records[dname] = rec
                if (allow is not None and not _matches(allow, rec)) or _matches(block, rec):
                    rec.status = "blocked"
                    rec.blocked_by = _blocked_by(allow, block, rec)
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
            if rec.status == "loaded" and rec.value:
                _warn_if_hollow(rec)
        _S.load_seconds += time.perf_counter() - t_start


def _blocked_by(allow, block, rec) -> str:
    """Which control blocked ``rec``: the block-list wins when both do (naming it is the fix)."""
    return "TENSORPLAY_DISABLE_PLUGINS" if _matches(block, rec) else "TENSORPLAY_PLUGINS"


def _module_location(mod) -> str:
    """The file (or, for a namespace package such as a bare directory, the directories) that
    importing a plugin's entry point actually gave."""
    f = getattr(mod, "__file__", None)
    if f:
        return str(f)
    path = list(dict.fromkeys(str(p) for p in (getattr(mod, "__path__", None) or ())))
    if path:
        return (", ".join(str(p) for p in path)
                + " (a directory without __init__.py: a namespace package)")
    return "an unknown location (no __file__)"


def _warn_if_hollow(rec: PluginRecord) -> None:
    """A loaded plugin whose module implements no hook and defined no op or kernel: almost
    always the wrong module (a same-named directory or file earlier on ``sys.path``, e.g. in
    the working directory, shadowing the installed one). Loaded, but warned and recorded."""
    mod = rec.module
    if mod is None or _plugin_manager().get_hookcallers(mod) or rec.ops or rec.kernel_eps \
            or rec.devices or rec.kernels:
        return
    name = rec.value.partition(":")[0]
    msg = (f"tensorplay: plugin {rec.label} ({rec.name} = {rec.value}) registered no hooks: the "
           f"module it imported, {name!r} from {_module_location(mod)}, implements no "
           f"tensorplay_* hook and defines no op or kernel. If that is not the plugin's module, "
           f"a same-named file or directory earlier on sys.path (e.g. in the working directory) "
           f"shadows it: rename or remove that, or reinstall {rec.dist} (pip install "
           f"--force-reinstall {rec.dist}).")
    rec.warnings.append(msg)
    _devices.hollow[rec.key] = rec     # device_hint: "installed but shadowed", not "install"
    _trace("%s", msg)
    _warn(msg, stacklevel=3)


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
    ops_before = {o.name for o in _registry.all_ops()}
    registered = False
    t0 = time.perf_counter()
    with _registry.registering_as(_PluginOwner(rec)) as made:
        try:
            _trace("import %s (%s)", rec.label, rec.value)
            mod = loader()
            _trace("imported %s in %.2f ms", rec.label, (time.perf_counter() - t0) * 1e3)
            for other in _S.records.values():
                if other is not rec and other.module is mod and other.status == "loaded":
                    err = PluginError(
                        f"plugin {rec.label} and plugin {other.label} both name module "
                        f"{getattr(mod, '__name__', rec.value)!r} as their plugin (entry points "
                        f"{rec.name!r} and {other.name!r} in group {GROUP!r}); {other.label} "
                        f"loaded it first, so {rec.label} was skipped. One of the two "
                        f"distributions is a duplicate or a stale install.")
                    err.fix = (f"uninstall the one you do not want (pip uninstall {rec.dist}), or "
                               f"skip just this one with TENSORPLAY_DISABLE_PLUGINS={rec.dist}.")
                    raise err
            rec.module = mod
            rec.attempted_ops |= _own_ops(rec)
            ver = getattr(mod, "TENSORPLAY_API_VERSION", API_VERSION)
            rec.api_version = ver
            if not _api_compatible(ver):
                _rollback(rec, made, ops_before)
                rec.status = "incompatible"
                rec.error = PluginError(
                    f"plugin {rec.label} declares TENSORPLAY_API_VERSION = {ver!r}, but this "
                    f"tensorplay {_core_version()} provides plugin API version {API_VERSION}. "
                    f"Install a release of {rec.dist} written for API {API_VERSION} "
                    f"(pip install -U {rec.dist}), or a tensorplay matching the plugin.")
                _sync_unavailable()
                _warn_or_raise(rec, f"tensorplay: plugin skipped (incompatible): {rec.error}",
                               strict)
                return
            rec.priority = _int_attr(mod, "TENSORPLAY_PRIORITY", rec)
            _validate_module(mod, rec)
            try:
                pm.register(mod, name=rec.key)
            except pluggy.PluginValidationError as e:   # backstop: pluggy's own checks
                raise PluginError(f"plugin {rec.label}: pluggy rejected its hook implementations: "
                                  f"{e}. Fix them to match tensorplay.plugins.hookspecs.") from e
            except ValueError as e:   # pluggy: "Plugin name/already registered"
                raise PluginError(f"plugin {rec.label}: its module {rec.value!r} is already "
                                  f"registered as another plugin ({e}); name it under one entry "
                                  f"point only.") from e
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
            rec.handles = made[:]
            made.clear()
            rec.status = "loaded"
        except (Exception, SystemExit) as e:   # isolation: never break `import tensorplay`
            if rec.status == "incompatible":     # strict mode: already rolled back and reported
                raise
            rec.attempted_ops |= _own_ops(rec)
            if registered:
                pm.unregister(name=rec.key)
            _rollback(rec, made, ops_before)
            _fail(rec, e, strict)
        finally:
            rec.load_seconds += time.perf_counter() - t0


def _own_ops(rec: PluginRecord) -> set:
    """Qualnames of the registered ops defined by ``rec`` (whatever the load order: ops a plugin's
    hook defines while another plugin loads on demand belong to that other plugin)."""
    return {o.name for o in _registry.all_ops() if o.owner == rec.dist and not o.is_builtin}


def _adopt(rec: PluginRecord) -> None:
    """Attribute to ``rec`` what its module registered while it was imported before tensorplay
    had loaded (``import plugin`` first: no owner was set then): ops defined in the module or its
    package, and their kernels from there."""
    modname = rec.value.partition(":")[0].strip()
    if not modname:
        return

    def mine(m) -> bool:
        return isinstance(m, str) and (m == modname or m.startswith(modname + "."))

    with _registry.transaction():
        for op in _registry.all_ops():
            if op.is_builtin or op.owner is not None or not mine(op.source):
                continue
            op.adopt(rec.dist, lambda fn: mine(getattr(fn, "__module__", None)))
            _trace("adopted %s for %s (defined while its module was imported first)",
                   op.name, rec.label)


def _api_compatible(ver) -> bool:
    try:
        major = int(str(ver).split(".")[0])
    except ValueError:
        return False
    return major == API_VERSION


def _core_version() -> str:
    """The installed tensorplay-core's version (its metadata: the package root is above us).
    Error messages only: ``import tensorplay`` does not import importlib.metadata."""
    import importlib.metadata
    try:
        return importlib.metadata.version("tensorplay-core")
    except importlib.metadata.PackageNotFoundError:   # pragma: no cover - run from a source tree
        return ""


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


PROVIDER_CONTROL = "TENSORPLAY_DEVICE_PROVIDER_"


def _provider_choice(device_type: str):
    """The distribution the user named to provide ``device_type``
    (``TENSORPLAY_DEVICE_PROVIDER_<type>=dist``, read from the controls' snapshot), or None."""
    v = (_devices.control(PROVIDER_CONTROL + device_type, "") or "").strip()
    return v or None


def _add_device(rec: PluginRecord, spec: DeviceSpec) -> None:
    """Record that plugin ``rec`` provides ``spec.type``. A device that one of tensorplay's own
    device plugins serves (``cpu``: tensorplay-cpu, ``cuda``: tensorplay-cuda) and that plugin is
    installed: another distribution providing it is refused (``PluginError`` naming the
    control), whatever its priority, unless the user names it with
    ``TENSORPLAY_DEVICE_PROVIDER_<type>=dist``; then it is the provider and ours is not used
    (a ``PluginWarning`` says so). Two other providers at one priority are refused."""
    chosen = _provider_choice(spec.type)
    if chosen is not None:
        if not _matches({_norm(chosen)}, rec):
            _warn(f"tensorplay: device '{spec.type}': plugin {rec.label}'s DeviceSpec is not "
                  f"used: {PROVIDER_CONTROL}{spec.type}={chosen} names the provider.", 3)
            return
        for e in list(_S.devices.get(spec.type, [])):     # the chosen one replaces them
            if e[2].dist != rec.dist:
                _S.devices[spec.type].remove(e)
                if spec.type in e[2].devices:
                    e[2].devices.remove(spec.type)
        ours = _devices.KNOWN_DEVICE_DISTS.get(spec.type)
        if ours and ours != rec.dist:
            _warn(f"tensorplay: device '{spec.type}' is provided by plugin {rec.label} instead "
                  f"of {ours}, as {PROVIDER_CONTROL}{spec.type}={chosen} asks.", 3)
    else:
        ours = _devices.KNOWN_DEVICE_DISTS.get(spec.type)
        mine = _by_dist(ours) if ours else None
        if mine is not None and rec.dist != ours and mine.status != "blocked":
            err = PluginError(
                f"plugin {rec.label} declares device '{spec.type}', which {mine.label} provides; "
                f"refused: a plugin cannot take over a device another distribution serves "
                f"(its priority is its own claim). To use {rec.dist}'s backend for "
                f"'{spec.type}', set {PROVIDER_CONTROL}{spec.type}={rec.dist}.")
            err.fix = (f"set {PROVIDER_CONTROL}{spec.type}={rec.dist} to make it the provider "
                       f"of '{spec.type}', or remove the DeviceSpec from {rec.dist} (pip "
                       f"uninstall {rec.dist}).")
            raise err
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


def _rollback(rec: PluginRecord, made: list, ops_before: set) -> None:
    """Undo everything ``rec`` registered: the handles ``made`` in its ``registering_as`` block
    (emptied) and the ones it kept from earlier steps."""
    handles = rec.handles + made[:]
    made.clear()
    rec.handles = []
    for h in reversed(handles):
        try:
            h.destroy()
        except Exception:  # noqa: BLE001,S110  # pragma: no cover - best effort, idempotent undo
            pass
    for op in _registry.all_ops():
        if op.name not in ops_before and op.owner == rec.dist:
            _registry.unregister_op(op)
    for name in set(rec.ops) | _own_ops(rec):
        op = _registry.registered(name)
        if op is not None and op.owner == rec.dist:
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
    fix = None if getattr(e, "fix", None) else _author_fix(rec, e)
    if fix:
        try:
            e.fix = fix      # type: ignore[attr-defined]  # read by _fix_hint, as a conflict's
        except (AttributeError, TypeError):  # pragma: no cover - an exception without __dict__
            pass
    text, fix = str(e).rstrip().rstrip("."), _fix_hint(rec)
    # an error that carries its own fix (a conflict) already says it: do not repeat it
    tail = "" if fix.rstrip(".") in text else f" Fix: {fix}"
    msg = (f"tensorplay: plugin {rec.label}{where} failed to load: {type(e).__name__}: {text}. "
           f"Its devices and ops are unavailable; everything else works.{tail}")
    _warn_or_raise(rec, msg, strict, e)


def _warn_or_raise(rec, msg, strict, cause=None) -> None:
    _trace("%s", msg)
    if strict:
        raise PluginError(msg + " (TENSORPLAY_STRICT_PLUGINS=1 makes this an error)") \
            from (cause or rec.error)
    _warn(msg, stacklevel=4)


def _sync_unavailable() -> None:
    """Tell ``_devices`` which plugins did not load (in load order), after a status change."""
    bad = {k: r for k, r in _S.records.items() if r.status in ("failed", "incompatible", "blocked")}
    _devices.unavailable.clear()
    _devices.unavailable.update(bad)


def load_backend(device_type: str):
    """Import and construct the backend of ``device_type`` (highest-priority provider).

    Raises ``DeviceUnavailableError`` naming the device and the fix; when the plugin that would
    provide it failed to load, its recorded exception is chained (``__cause__``). A factory that
    raises ``DeviceUnavailableError`` itself (its device cannot work on this machine: no
    driver...) is not a broken plugin: its own message is the device's reason, unchanged."""
    finish_deferred()
    cands = sorted(_S.devices.get(device_type, []), key=lambda e: -e[0])
    if not cands:
        rec = _devices.failed_provider(device_type)
        raise DeviceUnavailableError(
            f"device '{device_type}' is not available. "
            f"{_devices.device_hint(device_type).strip()}") \
            from (rec.error if rec is not None else None)
    _, spec, rec = cands[0]
    try:
        _trace("load backend %s of %s (device %s)", spec.backend, rec.label, device_type)
        return resolve(spec.backend)()
    except DeviceUnavailableError:
        raise
    except Exception as e:
        raise DeviceUnavailableError(
            f"device '{device_type}': plugin {rec.label} could not load its backend "
            f"{spec.backend}: {type(e).__name__}: {e}. Reinstall {rec.dist} and its "
            f"dependencies (pip install --force-reinstall {rec.dist}).") from e


def _install_kernel_eps(rec: PluginRecord, eps, strict: bool) -> None:
    """Register the plugin's ``tensorplay.kernels`` entry points (``lazy.register_kernel_eps``) as
    part of its atomic load: an invalid or conflicting entry fails the plugin, undoing it all."""
    ops_before = {o.name for o in _registry.all_ops()}
    with _registry.registering_as(_PluginOwner(rec)) as made:
        try:
            lazy.register_kernel_eps(rec, eps)
            rec.handles += made
            made.clear()
        except Exception as e:  # noqa: BLE001 - isolation: the plugin fails, nothing else
            rec.kernel_eps = []
            _plugin_manager()
            if rec.module is not None and _S.pm.is_registered(rec.module):
                _S.pm.unregister(rec.module)
            _rollback(rec, made, ops_before)
            _fail(rec, e, strict)

