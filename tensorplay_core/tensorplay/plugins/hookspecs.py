"""The whole plugin contract: pluggy hook specifications (project name ``tensorplay``).

A plugin is a module named by an entry point in the group ``tensorplay.plugins``::

    [project.entry-points."tensorplay.plugins"]
    cpu = "tensorplay_cpu"

Kernels may also be named in metadata, group ``tensorplay.kernels``, as
``"ns::op.device" = "package.module:function"``: the function's module is imported on the op's
first call on that device (``tensorplay.library.get_kernel`` returns a stand-in without importing
it). The op must be defined by then (by any plugin, or the same one)::

    [project.entry-points."tensorplay.kernels"]
    "mylib::op.cuda" = "mypack.cuda_kernels:op"

Hook implementations are checked against these specifications when the plugin registers, not at
first call: a ``@hookimpl`` must name one of the hooks below and take a subset of its arguments,
by name (pluggy's rule); a function named like a hook but not marked is reported; wrappers are
refused. Hooks wire plugins up at import time and when tools ask for samples; they are never on
the per-op call path. Each plugin's hooks are called on their own, so one plugin's failure never
reaches another; everything a plugin registers (while its module is imported, in its hooks, and
from its kernel entry points) is undone if any of it fails.

Module-level declarations a plugin may make (before it registers anything):

* ``TENSORPLAY_API_VERSION = 1`` -- the contract version it was written for. A plugin whose
  declaration has another major number than ``API_VERSION`` is skipped (status
  ``incompatible``) with a warning, or an error under ``TENSORPLAY_STRICT_PLUGINS=1``;
* ``TENSORPLAY_PRIORITY = 0`` -- its kernels (and devices) win over those of a plugin with a lower
  priority for the same (op, device); two plugins with equal priorities claiming the same
  (op, device) or the same device type is a conflict: the later one fails to load, with an error
  naming both distributions. An op belongs to the plugin that defined it: another plugin may add
  kernels for devices the owner does not provide, but replacing the owner's kernel for a device
  (registered, or named in its ``tensorplay.kernels`` metadata) needs a priority higher than the
  owner's; otherwise that other plugin fails to load, whatever the load order, and the owner
  keeps its ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pluggy

API_VERSION = 1

hookspec = pluggy.HookspecMarker("tensorplay")
hookimpl = pluggy.HookimplMarker("tensorplay")


@dataclass(frozen=True)
class DeviceSpec:
    """A device type a plugin provides. ``backend`` is ``"module:attr"`` naming a zero-argument
    callable (usually a class) returning the backend object; it is imported on first use of the
    device, so the plugin module itself stays cheap to import. The callable may raise
    ``tensorplay.errors.DeviceUnavailableError`` when it finds, before building the backend, that
    the device cannot work on this machine (no driver, no library): its message is then the
    device's reason (``tensorplay.plugins.device_status``), as from ``is_available()``."""

    type: str
    backend: str
    priority: int = 0


@dataclass
class SampleInput:
    """One set of arguments for ``opcheck``: ``op(*args, **kwargs)``. ``name`` labels it in reports."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""


class TensorPlaySpecs:
    """Hook specifications."""

    @hookspec
    def tensorplay_devices(self) -> list:
        """Return ``DeviceSpec`` objects for the device types this plugin provides."""

    @hookspec
    def tensorplay_register_ops(self, registrar) -> None:
        """Define ops and register kernels/fakes/formulas (``tensorplay.library`` APIs).

        Everything registered inside this hook (or while the plugin module is imported) is
        attributed to the plugin, and undone if the hook raises. ``registrar.plugin`` is the
        distribution name.
        """

    @hookspec
    def tensorplay_sample_inputs(self, op, device) -> list | None:
        """Return ``SampleInput`` objects (or ``(args, kwargs)`` tuples) for ``op`` on ``device``
        (a ``tensorplay.device``), or ``None`` when ``op`` is not this plugin's. Used by
        ``tensorplay check`` and ``tensorplay.testing.check_plugin``."""
