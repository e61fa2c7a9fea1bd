"""Lazy kernels: ``tensorplay.kernels`` entry points (``"ns::op.device" = "pkg.mod:fn"``).

Each named kernel is registered as a stand-in that imports its target on first call, checks it
against the op's schema and replaces itself in the op's kernel stack (later calls go straight to
the real kernel). Registering them is part of the plugin's atomic load (``loading``).
"""

from __future__ import annotations

import time

from .. import _registry
from ..errors import DispatchError, PluginError
from .discovery import KERNEL_GROUP, _trace, resolve
from .state import PluginRecord


def register_kernel_eps(rec: PluginRecord, eps) -> None:
    """Register ``"ns::op.device" = "pkg.mod:fn"`` entry points of plugin ``rec`` as stand-in
    kernels imported on first call. Raises ``PluginError`` for an invalid entry (malformed,
    unknown op, built-in op) and ``DispatchError`` for a conflicting one; the caller
    (``loading``) undoes what was registered and records the failure."""
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
            shadow = _shadowed(rec)
            if shadow:
                raise PluginError(
                    f"plugin {rec.label}: kernel entry point {ep.name!r} names operator "
                    f"{qual!r}, which the plugin's module should define, but {shadow}") from None
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
        handle = []
        wrapper = _lazy_kernel(op, key, ep.name, ep.value, rec, handle)
        handle.append(_registry.add_kernel(op, key, wrapper, rec.dist, rec.priority,
                                          source=ep.value))
        rec.kernel_eps.append((qual, key, ep.value))
        _trace("kernel entry point %s = %s of %s registered (imported on first call)",
               ep.name, ep.value, rec.label)


def _shadowed(rec: PluginRecord):
    """When the module plugin ``rec`` imported is hollow -- no ``tensorplay_*`` hook, no op --
    almost always a same-named directory or file earlier on ``sys.path`` (e.g. the working
    directory) shadowing the installed package: the sentence saying so, naming what was
    imported, with the fix; else ``None``."""
    mod = rec.module
    if mod is None or rec.ops or any(n.startswith("tensorplay_") for n in vars(mod)):
        return None
    where = getattr(mod, "__file__", None) or ", ".join(
        str(p) for p in (getattr(mod, "__path__", None) or ())) or "an unknown location"
    return (f"the module it imported, {mod.__name__!r} from {where}, implements no tensorplay_* "
            f"hook and defines no op: a same-named file or directory earlier on sys.path (e.g. "
            f"in the working directory) shadows the installed package. Rename or remove that, "
            f"or reinstall {rec.dist} (pip install --force-reinstall {rec.dist}).")


def _lazy_kernel(op, key: str, ep_name: str, target: str, rec: PluginRecord, handle: list):
    """A stand-in kernel that imports ``target`` on its first call, checks it against the op's
    schema, puts it in its own place in the op's kernel stack (``handle[0]``: the stand-in's
    registration, so undoing it removes the real kernel), and calls it. Later calls go
    straight to the real kernel (the dispatch table is rebuilt)."""

    def lazy_kernel(*args, **kwargs):
        fn = _import_lazy(op, key, ep_name, target, rec, handle[0])
        return fn(*args, **kwargs)

    lazy_kernel.__name__ = f"lazy[{target}]"
    lazy_kernel.__qualname__ = lazy_kernel.__name__
    lazy_kernel._tensorplay_lazy_target = target
    lazy_kernel._tensorplay_plugin = rec.dist
    return lazy_kernel


def _import_lazy(op, key, ep_name, target, rec, handle):
    t0 = time.perf_counter()
    try:
        fn = resolve(target)
        _registry.check_binds(op, fn, "kernel", f"entry point {ep_name!r}")
    except Exception as e:
        _trace("lazy kernel %s = %s of %s failed: %s", ep_name, target, rec.label, e)
        raise DispatchError(
            f"custom_op({op.name!r}): the {key} kernel {target!r} declared by plugin {rec.label} "
            f"(entry point "
            f"{ep_name!r} in group {KERNEL_GROUP!r}) could not be loaded: {type(e).__name__}: "
            f"{str(e).rstrip().rstrip('.')}. "
            f"Fix: reinstall {rec.dist} (pip install --force-reinstall {rec.dist}), or correct "
            f"that entry point.") from e
    _trace("lazy kernel %s = %s of %s imported in %.2f ms", ep_name, target, rec.label,
           (time.perf_counter() - t0) * 1e3)
    handle.replace(fn, source=target)   # no-op when the plugin was rolled back meanwhile
    return fn
