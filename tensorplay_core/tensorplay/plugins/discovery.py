"""Discovery: the one scan of installed entry points, and the environment controls.

* **One scan.** Installed entry points are read once per process (``_scan``, cached), for the
  groups ``tensorplay.plugins`` (plugin modules) and ``tensorplay.kernels`` (kernels named in
  metadata). pluggy's ``load_setuptools_entrypoints`` is never used: it would scan every
  distribution again.
* **Controls** (environment, read when ``import tensorplay`` loads the plugins; applied by
  ``loading.load_all`` before a plugin module is imported): ``TENSORPLAY_PLUGINS`` allow-list,
  ``TENSORPLAY_DISABLE_PLUGINS`` block-list (names match the entry-point or the distribution
  name, case and ``-``/``_``/``.`` insensitive), ``TENSORPLAY_STRICT_PLUGINS`` and
  ``TENSORPLAY_TRACE_PLUGINS`` (booleans: ``_env_flag``); tracing logs to the
  ``tensorplay.plugins`` logger.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import time

from ..errors import PluginError
from .state import _S, _norm
from .state import warn as _warn

GROUP = "tensorplay.plugins"


KERNEL_GROUP = "tensorplay.kernels"


# ``namespace = "plugin.module"``: the operator namespaces an op pack defines, so its plugin
# module is imported on the first use of one of them instead of by ``import tensorplay``
NAMESPACE_GROUP = "tensorplay.namespaces"


_TRUE = ("1", "true", "yes", "on")


_FALSE = ("", "0", "false", "no", "off")


def snapshot_controls() -> None:
    """Keep the ``TENSORPLAY_*`` environment variables as they are now, before any plugin
    module runs (``_devices.controls``); every control is read from the snapshot."""
    from .. import _devices
    _devices.controls = {k: v for k, v in os.environ.items() if k.startswith("TENSORPLAY_")}


def _env(name, default=None):
    from .. import _devices
    return _devices.control(name, default)


def _env_list(name):
    v = _env(name)
    if v is None:
        return None
    return {_norm(x) for x in v.split(",") if x.strip()}


def _env_flag(name: str) -> bool:
    """A boolean control: ``1``/``true``/``yes``/``on`` (any case) is on, unset/empty/``0``/
    ``false``/``no``/``off`` is off; anything else is a ``PluginError`` naming the variable (a
    typo must not silently pick either meaning)."""
    raw = _env(name, "")
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    err = PluginError(f"{name}={raw!r} is not a boolean; use one of 1, true, yes, on (enable) or "
                      f"0, false, no, off (disable), or unset it.")
    err.control = name   # a malformed control: the console script's usage error (exit 2)
    raise err


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


def _scan():
    """The single scan of installed entry points, cached for the process.

    Returns ``(plugin entry points, kernel entry points, namespace entry points)``. Counted in ``_S.scan_count`` so tests
    can prove it runs once. Uses ``_fast_scan`` (reads only ``*.dist-info``/``*.egg-info``
    directories on ``sys.path``, never imports ``importlib.metadata``) when the interpreter has
    nothing else that can provide distributions; ``importlib.metadata.entry_points()`` otherwise,
    or always with ``TENSORPLAY_PLUGIN_SCAN=importlib`` (escape hatch; also lets tests fake the
    installed distributions by patching ``importlib.metadata.entry_points``).
    """
    if _S.scan is None:
        t0 = time.perf_counter()
        _S.scan_count += 1
        found = None if _env("TENSORPLAY_PLUGIN_SCAN") == "importlib" else _fast_scan()
        how = "dist-info reader"
        if found is None:
            found, how = _importlib_scan(), "importlib.metadata"
        _S.scan = found
        _S.scan_seconds = time.perf_counter() - t0
        _trace("scan (%s): %d plugin, %d kernel and %d namespace entry points in %.2f ms",
               how, len(found[0]), len(found[1]), len(found[2]), _S.scan_seconds * 1e3)
    return _S.scan


def _importlib_scan():
    from importlib.metadata import entry_points
    eps = entry_points()
    if hasattr(eps, "select"):
        return tuple(list(eps.select(group=g)) for g in _WANTED)
    return tuple(list(eps.get(g, [])) for g in _WANTED)  # pragma: no cover


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


def resolve(value: str):
    """The object an entry-point value names: ``"pkg.mod"`` (the module) or
    ``"pkg.mod:attr.attr"`` (``importlib.import_module`` then an attribute walk; an
    ``[extras]`` suffix is ignored), the rule of ``importlib.metadata.EntryPoint.load``. Raises
    what the import or the walk raises (``ImportError``, ``AttributeError``...); callers add the
    entry point, the plugin and the fix."""
    mod_name, _, attr = value.partition(":")
    obj = importlib.import_module(mod_name.strip())
    for part in attr.split(".") if attr.strip() else ():
        obj = getattr(obj, part.strip().split("[")[0].strip())
    return obj


class _EntryPoint:
    """``name = value`` of ``group``, same ``load()`` rule as ``importlib.metadata.EntryPoint``
    (``"pkg.mod"`` or ``"pkg.mod:attr.attr"``)."""

    __slots__ = ("dist", "group", "name", "value")

    def __init__(self, name, value, group, dist):
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self):
        return resolve(self.value)

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


_WANTED = (GROUP, KERNEL_GROUP, NAMESPACE_GROUP)     # the order of ``_scan``'s lists


def _fast_scan():
    """Entry points of the three groups, found the way ``importlib.metadata`` finds them on a plain
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
    found: dict = {g: [] for g in _WANTED}
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
                        found[group].append(_EntryPoint(name.strip(), value.strip(), group,
                                                        dist))
    return tuple(found[g] for g in _WANTED)


def _dist_of(ep) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ep.name, "?"
    try:
        name = dist.metadata["Name"] or ep.name
    except Exception:  # noqa: BLE001  # pragma: no cover - unreadable metadata
        name = ep.name
    return name, dist.version or "?"


def _skipped_entry(msg: str, strict: bool) -> None:
    """An entry point skipped at discovery: traced, then one ``PluginWarning`` (pointing at the
    caller of the scan), or ``PluginError`` with TENSORPLAY_STRICT_PLUGINS=1."""
    _trace("%s", msg)
    if strict:
        raise PluginError(msg + " (TENSORPLAY_STRICT_PLUGINS=1 makes this an error)")
    _warn(msg, stacklevel=5)       # one frame deeper than the two reporters that call this


def _misplaced_kernel_ep(ep, dname: str, ver: str, strict: bool) -> None:
    """A kernel entry point (``"ns::op.device" = "pkg.mod:fn"``) declared in group
    ``tensorplay.plugins`` instead of ``tensorplay.kernels``: skipped (never imported) with one
    ``PluginWarning`` saying where it belongs (``PluginError`` with TENSORPLAY_STRICT_PLUGINS=1)."""
    msg = (f"tensorplay: distribution {dname} {ver} declares the kernel entry point "
           f"{ep.name!r} = {ep.value!r} in group {GROUP!r}; kernels named \"ns::op.device\" "
           f"belong in group {KERNEL_GROUP!r} (imported on first call). It was skipped: move "
           f"it to [project.entry-points.\"{KERNEL_GROUP}\"] in the pyproject.toml of {dname} "
           f"and reinstall.")
    _skipped_entry(msg, strict)


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
    _warn(
        f"tensorplay: {var} names {', '.join(map(repr, unknown))}, which "
        f"{'matches' if len(unknown) == 1 else 'match'} no installed plugin (installed: "
        f"{installed})" + (f"; did you mean {', '.join(map(repr, close))}?" if close else ".")
        + " Names are entry-point or distribution names, case and -/_/. insensitive.",
        stacklevel=4)


def _declared_namespaces(eps, strict: bool) -> dict:
    """``{distribution: {plugin module: [namespace, ...]}}`` from the ``tensorplay.namespaces``
    entry points (``namespace = "plugin.module"``). A name that is not an identifier, or the
    reserved ``tp``, is skipped with one ``PluginWarning`` saying why (``PluginError`` with
    TENSORPLAY_STRICT_PLUGINS=1); its pack then loads at ``import tensorplay`` as before."""
    from .._registry import RESERVED_NAMESPACE
    out: dict = {}
    for ep in eps or ():
        dname, ver = _dist_of(ep)
        ns, mod = ep.name.strip(), ep.value.partition(":")[0].strip()
        if not ns.isidentifier() or ns == RESERVED_NAMESPACE:
            why = ("is the built-in namespace" if ns == RESERVED_NAMESPACE else
                   "is not an operator namespace (a Python identifier, as in \"mylib::op\")")
            _bad_namespace_ep(ep, dname, ver, f"{ns!r} {why}", strict)
            continue
        spaces = out.setdefault(dname, {}).setdefault(mod, [])
        if ns not in spaces:
            spaces.append(ns)
    return out


def _unused_namespace_eps(spaces_of: dict, strict: bool) -> None:
    """Declarations ``_declared_namespaces`` found that no plugin entry point of their
    distribution used (``load_all`` pops the ones it uses): each names a module that is not the
    distribution's plugin module. Warned (an error with TENSORPLAY_STRICT_PLUGINS=1)."""
    for dname, mods in spaces_of.items():
        for mod, spaces in mods.items():
            for ns in spaces:
                ep = _EntryPoint(ns, mod, NAMESPACE_GROUP, None)
                _bad_namespace_ep(ep, dname, "", f"module {mod!r} is not named by an entry point "
                                  f"of {dname} in group {GROUP!r} (the value must be the plugin "
                                  f"module, the one its hooks are in)", strict)


def _bad_namespace_ep(ep, dname: str, ver: str, why: str, strict: bool) -> None:
    msg = (f"tensorplay: distribution {dname}{' ' + ver if ver else ''} declares "
           f"{ep.name!r} = {ep.value!r} in group {NAMESPACE_GROUP!r}, which was skipped: {why}. "
           f"Fix the entry point in the pyproject.toml of {dname} (under "
           f"[project.entry-points.\"{NAMESPACE_GROUP}\"], namespace = \"plugin.module\") and "
           f"reinstall.")
    _skipped_entry(msg, strict)
