"""The plugin platform: hook specifications (``hookspecs``) and the manager (``manager``).

Data for tools and users (plain dicts and lists, no printing):

* ``tensorplay.plugins.list()`` -- one dict per installed plugin: distribution, version, status
  (loaded / failed / blocked / incompatible), devices, ops, kernels, error;
* ``tensorplay.plugins.ops_table()`` -- one dict per op: schema, devices with kernels, the plugin
  that defined it and the source of each kernel;
* ``tensorplay.plugins.controls()`` -- the ``TENSORPLAY_*`` environment variables as they were
  before any plugin was imported (what the plugins were loaded with);
* ``tensorplay.plugins.API_VERSION`` -- the plugin contract version (plugins declare
  ``TENSORPLAY_API_VERSION``).

Op packs that name their namespaces in ``tensorplay.namespaces`` metadata are imported on first
use (``tensorplay.plugins.packs``); ``load_packs()`` imports every one now, ``load_namespace(ns)``
those of one namespace.

Environment controls (read at ``import tensorplay``): ``TENSORPLAY_PLUGINS``,
``TENSORPLAY_DISABLE_PLUGINS``, ``TENSORPLAY_STRICT_PLUGINS=1``, ``TENSORPLAY_TRACE_PLUGINS=1``
(``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``);
see ``tensorplay.plugins.manager`` (overview) and ``tensorplay.plugins.discovery``.
"""

from . import manager  # noqa: F401  (tensorplay.plugins.manager: the overview, old import path)
from .hookspecs import API_VERSION, DeviceSpec, SampleInput, hookimpl, hookspec
from .loading import load_all, load_backend
from .packs import load_namespace, load_packs
from .records import (
                      available_devices,
                      controls,
                      device_hint,
                      device_status,
                      get_plugin,
                      list_plugins,
                      op_failure_hint,
                      ops_table,
                      plugin_ops,
                      records,
                      sample_inputs,
)
from .state import PluginRecord, PluginWarning, plugin_label

list = list_plugins

__all__ = [
                      "API_VERSION",
                      "DeviceSpec",
                      "PluginRecord",
                      "PluginWarning",
                      "SampleInput",
                      "available_devices",
                      "controls",
                      "device_hint",
                      "device_status",
                      "get_plugin",
                      "hookimpl",
                      "hookspec",
                      "list",
                      "list_plugins",
                      "load_all",
                      "load_backend",
                      "load_namespace",
                      "load_packs",
                      "op_failure_hint",
                      "ops_table",
                      "plugin_label",
                      "plugin_ops",
                      "records",
                      "sample_inputs",
]
