"""The whole plugin contract: pluggy hook specifications (project name ``tensorplay``).

A plugin is a module named by an entry point in the group ``tensorplay.plugins``::

    [project.entry-points."tensorplay.plugins"]
    cpu = "tensorplay_cpu"

Its hook implementations are checked against these specifications when it registers (pluggy
validates argument names then, not at first call). Hooks wire plugins up at import time and when
tools ask for samples; they are never on the per-op call path.

Module-level declarations a plugin may make:

* ``TENSORPLAY_API_VERSION = 1`` -- the contract version it was written for (checked: a plugin
  declaring another major version is skipped with a warning);
* ``TENSORPLAY_PRIORITY = 0`` -- kernels it registers win over an equal (op, device) kernel from a
  plugin with a lower priority (equal priorities from two plugins are a conflict error).
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
    device, so the plugin module itself stays cheap to import."""

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
