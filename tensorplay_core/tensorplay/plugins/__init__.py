"""The plugin platform: hook specifications and the manager (see ``hookspecs`` for the contract).

``tensorplay.plugins.list()`` returns one dict per installed plugin.
"""

from .hookspecs import API_VERSION, DeviceSpec, SampleInput, hookimpl, hookspec
from .manager import (available_devices, device_hint, device_status, list_plugins, load_all,
                      load_backend, op_failure_hint, records, sample_inputs)

list = list_plugins  # noqa: A001 - ``tensorplay.plugins.list()`` as in SPEC §1

__all__ = ["API_VERSION", "DeviceSpec", "SampleInput", "hookimpl", "hookspec", "list",
           "list_plugins", "records", "sample_inputs", "load_all", "load_backend", "device_hint",
           "device_status", "available_devices", "op_failure_hint"]
