"""The plugin manager: discovery, controls, isolation and records (JAX's and pytest's habits,
made stricter). This module is the overview and keeps the historical import path
(``tensorplay.plugins.manager.X``); the code lives in one module per concept:

=================  =============================================================================
``discovery``      the one entry-point scan; environment controls; tracing
``loading``        import, contract checks, hooks, rollback, failure records; backends
``lazy``           kernels named in ``tensorplay.kernels`` metadata, imported on first call
``packs``          op packs naming their namespaces in metadata, imported on first use
``conflicts``      owners of registrations and the rules between two plugins
``records``        ``tensorplay.plugins.list()``, ``get_plugin``, ``ops_table``, hints, samples
``state``          ``PluginRecord`` and the state the modules above share
=================  =============================================================================

* **One scan.** Installed entry points are read once per process, for the groups
  ``tensorplay.plugins`` (plugin modules), ``tensorplay.kernels`` (kernels named in
  metadata) and ``tensorplay.namespaces`` (the namespaces of op packs imported on first use); only ``discovery`` reads them, and never through pluggy's scanner (it would scan
  every distribution again).
* **Controls** (environment, read when ``import tensorplay`` loads the plugins):
  ``TENSORPLAY_PLUGINS`` allow-list (comma list; unset: all, empty: none) and
  ``TENSORPLAY_DISABLE_PLUGINS`` block-list, both applied *before* a plugin module is imported
  (a blocked module is never executed); ``TENSORPLAY_STRICT_PLUGINS=1`` turns any load failure
  into a ``PluginError`` raised by ``import tensorplay``; ``TENSORPLAY_TRACE_PLUGINS=1`` logs
  every plugin import, hook call and lazy-kernel import to the ``tensorplay.plugins`` logger
  (stderr unless logging is configured). The two switches read ``1``/``true``/``yes``/``on`` as
  on and unset/empty/``0``/``false``/``no``/``off`` as off (any case); any other value is a
  ``PluginError`` naming the variable. Names match the entry-point name or the distribution
  name (case, ``-``/``_``/``.`` insensitive). Consent controls (the user's word, never a
  plugin's): ``TENSORPLAY_KERNEL_OVERRIDE=dist[,dist]`` lets those distributions replace another
  distribution's kernel with a higher ``TENSORPLAY_PRIORITY`` (a ``PluginWarning`` names both,
  the op and the device); ``TENSORPLAY_DEVICE_PROVIDER_<type>=dist`` makes ``dist`` the provider
  of device ``<type>`` (the only way another distribution can provide ``cpu`` or ``cuda`` while
  tensorplay-cpu / tensorplay-cuda is installed). Every control is read from a snapshot of the
  ``TENSORPLAY_*`` variables taken before any plugin module runs (``tensorplay.plugins.controls()``):
  a plugin rewriting one at import changes nothing, not even the ``tensorplay`` command's re-run.
* **Load order does not matter.** Plugins load in distribution-name order, and a plugin whose
  hook looks up an op not defined yet loads the remaining plugins first; a plugin module the
  user imported before ``tensorplay`` is finished later and the ops its import defined are
  attributed to it. Two distributions naming the same plugin module: the second fails with an
  error naming both (and how to skip just that one); one distribution naming its module under
  two entry points loads it once.
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
  ``TENSORPLAY_PRIORITY`` than the owner *and* the user allows it with
  ``TENSORPLAY_KERNEL_OVERRIDE`` (then it wins, warned); whatever the load order, the owner keeps
  its ops. Two other plugins registering a kernel for the same (op, device) fail the later one
  with an error naming both, unless their ``TENSORPLAY_PRIORITY`` differ and the user named the
  higher one in ``TENSORPLAY_KERNEL_OVERRIDE``. Two plugins providing the same device type fail
  the later one unless their priorities differ (higher wins); a plugin declaring ``cpu`` or
  ``cuda`` while our plugin for it is installed is refused unless the user names it in
  ``TENSORPLAY_DEVICE_PROVIDER_<type>``. Everything a failed plugin registered is undone,
  including the ``Library`` objects it opened (their namespaces are free again).

Hooks run at load time and when tools ask for samples; nothing here is on the per-op call path.
"""

from __future__ import annotations

from .._devices import KNOWN_DEVICE_DISTS
from .conflicts import declared_kernel_dists, kernel_conflict_fix
from .discovery import GROUP, KERNEL_GROUP, NAMESPACE_GROUP
from .hookspecs import API_VERSION, DeviceSpec, SampleInput
from .loading import Registrar, finish_deferred, load_all, load_backend
from .packs import load_for, load_namespace, load_packs
from .records import (
                      available_devices,
                      device_hint,
                      device_status,
                      failed_device_note,
                      get_plugin,
                      list_plugins,
                      op_failure,
                      op_failure_hint,
                      ops_table,
                      plugin_ops,
                      records,
                      sample_inputs,
)
from .state import (
                      _S,  # noqa: F401  (private: read by tests and benchmarks/bench_import.py)
                      PluginRecord,
                      PluginWarning,
                      _provider_dist,  # noqa: F401  (private: read by testing/opcheck)
                      plugin_label,
                      priority_of,
)

__all__ = ["API_VERSION", "GROUP", "KERNEL_GROUP", "KNOWN_DEVICE_DISTS", "NAMESPACE_GROUP",
           "DeviceSpec", "PluginRecord", "PluginWarning", "Registrar", "SampleInput",
           "available_devices", "declared_kernel_dists", "device_hint", "device_status",
           "failed_device_note", "finish_deferred", "get_plugin", "kernel_conflict_fix",
           "list_plugins", "load_all", "load_backend", "load_for", "load_namespace", "load_packs",
           "op_failure", "op_failure_hint", "ops_table", "plugin_label", "plugin_ops",
           "priority_of", "records", "sample_inputs"]
