"""Records for tools and users: ``tensorplay.plugins.list()``, ``get_plugin``, ``ops_table``,
what a plugin ships (``plugin_ops``), samples, device status, and the hints naming a plugin that
should have provided a device or an op and why it did not (its recorded error and the fix).

Every answer first finishes loading plugins still pending (``loading.finish_deferred``); the
listings (``records``, ``list``, ``get_plugin``, ``ops_table``, ``sample_inputs``) also import
every op pack not imported yet (``packs.load_packs``): they show what the packs ship.
"""

from __future__ import annotations

import re

from .. import _devices, _registry
from ..errors import PluginError
from .hookspecs import SampleInput
from .loading import _call_impl, _impls_of, finish_deferred
from .packs import load_namespace, load_packs
from .state import _S, PluginRecord, _fix_hint, _norm, _provider_dist


def _words(s: str) -> set:
    return set(re.split(r"[-_.:]+", s.lower()))


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


def op_failure(qualname: str):
    """The failed (or incompatible/blocked) plugin record that likely provides op ``qualname``:
    one that had defined it, or a namespace of it, before failing; else one whose entry point,
    module or distribution is named like the namespace. ``None`` when there is none."""
    finish_deferred()
    load_namespace(qualname.partition("::")[0])
    ns = qualname.partition("::")[0].lower()
    bad = [r for r in _S.records.values() if r.status in ("failed", "incompatible", "blocked")]
    for rec in bad:
        if qualname in rec.attempted_ops:
            return rec
    for rec in bad:
        if ns in {o.partition("::")[0].lower() for o in rec.attempted_ops} or \
                ns in {n.lower() for n in rec.namespaces}:
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
        return f"plugin {rec.label}, which may provide it, {blocked_reason(rec)}"
    return (f"plugin {rec.label}, which provides it, failed to load: "
            f"{type(rec.error).__name__}: {str(rec.error).rstrip().rstrip('.')}. Fix: {_fix_hint(rec)}")


def blocked_reason(rec) -> str:
    """``"is blocked (not loaded): ..."``: which control blocked plugin ``rec`` and how to load
    it (the allow-list ``TENSORPLAY_PLUGINS`` leaving it out, or ``TENSORPLAY_DISABLE_PLUGINS``
    naming it), read from the environment the plugins were loaded with."""
    if rec.blocked_by == "TENSORPLAY_DISABLE_PLUGINS":
        return (f"is blocked (not loaded): TENSORPLAY_DISABLE_PLUGINS="
                f"{_devices.control('TENSORPLAY_DISABLE_PLUGINS', '')} (the block-list) names "
                f"it; remove it from that list to load it.")
    allow = _devices.control("TENSORPLAY_PLUGINS", "")
    with_it = ",".join([n for n in (x.strip() for x in allow.split(",")) if n] + [rec.dist])
    return (f"is blocked (not loaded): TENSORPLAY_PLUGINS={allow} (the allow-list of plugins "
            f"to load) leaves it out; add it (TENSORPLAY_PLUGINS={with_it}) or unset "
            f"TENSORPLAY_PLUGINS to load every installed plugin.")


def controls() -> dict:
    """The ``TENSORPLAY_*`` environment variables as they were before any plugin was imported
    (a copy): what the plugins were loaded with. A plugin rewriting one at import changes
    neither the load nor this answer; the ``tensorplay`` command builds its re-run from it."""
    if _devices.controls is None:     # pragma: no cover - import tensorplay takes it first
        import os
        return {k: v for k, v in os.environ.items() if k.startswith("TENSORPLAY_")}
    return dict(_devices.controls)


def records() -> list:
    """Every ``PluginRecord`` (loaded, failed, blocked, incompatible), in load order."""
    finish_deferred()
    load_packs()
    return list(_S.records.values())


def get_plugin(name: str) -> PluginRecord:
    """The record of plugin ``name`` (entry-point or distribution name, spelling-insensitive).

    Raises ``PluginError`` listing the installed plugins when there is none."""
    finish_deferred()
    load_packs()
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
    load_packs()
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
    load_packs()
    out = []
    provided = sorted(_S.devices)
    for op in _registry.all_ops():
        if namespace is not None and op.namespace != namespace:
            continue
        kernels = {}
        for key, stack in op.kernel_stacks().items():
            fn, owner = stack[-1].fn, stack[-1].owner
            kernels[key] = {"source": owner if owner else ("core" if op.is_builtin else "user"),
                            "lazy": hasattr(fn, "_tensorplay_lazy_target")}
        if op.is_builtin and op.has_array_kernel:
            for d in provided:
                kernels.setdefault(d, {"source": _provider_dist(d), "lazy": True})
        out.append({
            "name": op.name, "schema": str(op.schema), "devices": sorted(kernels),
            "kernels": kernels,
            "plugin": "tensorplay" if op.is_builtin else op.owner,
            "module": op.source, "builtin": op.is_builtin,
            "has_fake": op.has_fake,
            "has_autograd": op.has_autograd,
        })
    return out


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
        if rec.status == "blocked":
            raise PluginError(f"plugin {rec.label} {blocked_reason(rec)}")
        raise PluginError(
            f"plugin {rec.label} is {rec.status}"
            + (f": {type(rec.error).__name__}: {str(rec.error).rstrip().rstrip('.')}. Fix: {_fix_hint(rec)}"
               if rec.error is not None else
               "; remove it from TENSORPLAY_DISABLE_PLUGINS / add it to TENSORPLAY_PLUGINS.")) \
            from rec.error
    out: dict[str, set | None] = {}
    for q in rec.ops:
        if _registry.registered(q) is not None:
            out[q] = None
    for q, key in rec.kernels:
        if out.get(q, ()) is not None:
            out.setdefault(q, set()).add(key)
    if rec.devices:
        for op in _registry.all_ops():
            if op.is_builtin and op.has_array_kernel and op.name not in out:
                out[op.name] = set(rec.devices)
    return [(_registry.registered(q), None if d is None else sorted(d))
            for q, d in sorted(out.items())]


def sample_inputs(op, device) -> list:
    """Samples for ``op`` on ``device`` from every loaded plugin's ``tensorplay_sample_inputs``.

    Each plugin is called on its own; results are normalized to ``SampleInput``. A hook that
    raises or returns something else raises ``PluginError`` naming the plugin and the op."""
    finish_deferred()
    load_packs()
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
            # a list/tuple only: anything else iterable (a Tensor iterates its rows) would
            # silently become bogus samples
            if not isinstance(res, (list, tuple)):
                raise PluginError(
                    f"plugin {rec.label}: hook tensorplay_sample_inputs(op={op.name}, "
                    f"device={device}) returned a {type(res).__module__}.{type(res).__qualname__}"
                    f"; expected None or a list of SampleInput. Fix the hook in {rec.value}.")
            items = list(res)
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
    try:
        _devices.load(device_type)
        return True, ""
    except Exception as e:  # noqa: BLE001 - documented: never raises
        return False, str(e)
