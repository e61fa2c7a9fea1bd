"""Opt-in registration at ``import torch``, through torch's device-backend autoload.

torch calls every entry point of group ``torch.backends`` at the end of ``import torch`` (unless
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). tensorplay-torch declares ``autoload`` there, and it does
nothing -- no import of tensorplay or of the bridge -- unless ``TENSORPLAY_TORCH_AUTOLOAD`` asks:

* unset, empty, ``0``/``false``/``no``/``off``: nothing (the default);
* ``1``/``true``/``yes``/``on``/``all``: every installed pack (``register()``);
* ``ns1,ns2``: those namespaces (``register(namespace=[...])``).

An op that cannot be bridged does not fail ``import torch``: the others are registered and a
``RuntimeWarning`` carries ``register``'s error (naming each failing op, its pack and the side).
"""

from __future__ import annotations

import os

_OFF = ("", "0", "false", "no", "off")
_ALL = ("1", "true", "yes", "on", "all")


def autoload() -> None:
    value = os.environ.get("TENSORPLAY_TORCH_AUTOLOAD", "").strip()
    if value.lower() in _OFF:
        return
    from ._convert import BridgeError
    from ._register import register
    try:
        if value.lower() in _ALL:
            register()
        else:
            register(namespace=[ns.strip() for ns in value.split(",") if ns.strip()])
    except BridgeError as e:
        import warnings
        warnings.warn(f"TENSORPLAY_TORCH_AUTOLOAD={value}: {e}", RuntimeWarning, stacklevel=2)
