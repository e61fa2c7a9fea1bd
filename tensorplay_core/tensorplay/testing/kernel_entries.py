"""``tensorplay check``'s import of a plugin's ``tensorplay.kernels`` entry points.

A kernel named in entry-point metadata (``"ns::op.device" = "pkg.mod:fn"``) is imported only on
the op's first call on that device, so on a machine without that device nothing ever imports it:
a name that points at a module the distribution does not ship, or at a function the module does
not define, would reach users only on their GPU. ``check_plugin`` therefore imports every such
entry of the plugin it checks (never calling it), whatever the device, and reports a dangling
one as an ``error`` result naming the entry point and the fix.

On a device that is not available here, an entry whose module fails to import because a
*third-party* module is missing (``cupy`` on a machine without CuPy) is not reported: that is
what an unavailable device means. On an available device every import failure is reported.
"""

from __future__ import annotations

import importlib
import time

__all__ = ["check_kernel_entries"]


def _problem(target: str, device_available: bool) -> str | None:
    """Why ``"pkg.mod:fn"`` cannot be imported, or ``None`` when it can (or when only a
    dependency that an unavailable device needs is missing)."""
    module, _, attr = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        own = e.name is not None and (module == e.name or module.startswith(e.name + "."))
        if own:
            return f"module {module!r} does not exist (the distribution does not ship it)"
        if not device_available:
            return None
        return f"importing {module!r} failed: {type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - any import failure is the plugin's to fix
        return f"importing {module!r} failed: {type(e).__name__}: {e}"
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            return f"module {module!r} has no attribute {attr!r}"
        obj = getattr(obj, part)
    if not callable(obj):
        return f"{target} is not callable ({type(obj).__name__})"
    return None


def check_kernel_entries(rec, device, ops, results: list, progress=None) -> None:
    """Import (without calling) each ``tensorplay.kernels`` entry point of plugin record ``rec``
    (restricted to ``ops`` qualnames and to the device type of ``device`` when given) and
    append one ``PluginCheckResult`` with status ``"error"`` to ``results`` per entry that
    cannot be imported; ``progress`` is called with each such result."""
    from ..plugins import manager
    from .plugin_check import PluginCheckResult
    want_type = None if device is None else str(device).split(":")[0]
    for op, dev, target in rec.kernel_eps:
        if (ops and op not in ops) or (want_type is not None and dev != want_type):
            continue
        t0 = time.perf_counter()
        why = _problem(target, manager.device_status(dev)[0])
        if why is None:
            continue
        name = f"{op}.{dev}"
        r = PluginCheckResult(
            rec.dist, op, dev, "", "error", seconds=time.perf_counter() - t0,
            kernel=f"{dev}: {target} ({rec.dist})",
            message=(f"kernel entry point {name!r} = {target!r} (group 'tensorplay.kernels' of "
                     f"{rec.dist}) is dangling: {why}. Fix the entry point in the "
                     f"distribution's pyproject.toml, or ship the module, then reinstall."))
        results.append(r)
        if progress is not None:
            progress(r)
