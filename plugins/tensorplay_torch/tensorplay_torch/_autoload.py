"""Opt-in registration at ``import torch``, through torch's device-backend autoload.

torch calls every entry point of group ``torch.backends`` at the end of ``import torch`` (unless
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). tensorplay-torch declares ``autoload`` there, and it does
nothing -- no import of tensorplay or of the bridge -- unless ``TENSORPLAY_TORCH_AUTOLOAD`` asks:

* unset, empty, ``0``/``false``/``no``/``off``: nothing (the default);
* ``1``/``true``/``yes``/``on``/``all``: every installed pack (``register()``);
* ``ns1,ns2``: those namespaces (``register(namespace=[...])``).
"""

from __future__ import annotations

import os

_OFF = ("", "0", "false", "no", "off")
_ALL = ("1", "true", "yes", "on", "all")


def autoload() -> None:
    value = os.environ.get("TENSORPLAY_TORCH_AUTOLOAD", "").strip()
    if value.lower() in _OFF:
        return
    from ._register import register
    if value.lower() in _ALL:
        register()
    else:
        register(namespace=[ns.strip() for ns in value.split(",") if ns.strip()])
