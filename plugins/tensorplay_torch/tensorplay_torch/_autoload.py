"""Opt-in registration at ``import torch``, through torch's device-backend autoload.

torch calls every entry point of group ``torch.backends`` at the end of ``import torch`` (unless
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). tensorplay-torch declares ``autoload`` there, and it does
nothing -- no import of tensorplay or of the bridge -- unless ``TENSORPLAY_TORCH_AUTOLOAD`` asks:

* unset, empty, ``0``/``false``/``no``/``off``: nothing (the default);
* ``1``/``true``/``yes``/``on``/``all``: every installed pack (``register()``);
* ``ns1,ns2``: those namespaces (``register(namespace=[...])``).

An op that cannot be bridged does not fail ``import torch``: the others are registered and a
``RuntimeWarning`` carries ``register``'s error (naming each failing op, its pack and the side).
Nothing else does either: any other error of the bridge or of TensorPlay (a bug, a broken
install) becomes a ``RuntimeWarning`` too, naming its type, so that torch stays importable.
"""

from __future__ import annotations

import os

_OFF = ("", "0", "false", "no", "off")
_ALL = ("1", "true", "yes", "on", "all")


def autoload() -> None:
    value = os.environ.get("TENSORPLAY_TORCH_AUTOLOAD", "").strip()
    if value.lower() in _OFF:
        return
    try:
        from ._register import register
        if value.lower() in _ALL:
            register()
        else:
            register(namespace=[ns.strip() for ns in value.split(",") if ns.strip()])
    except Exception as e:  # noqa: BLE001 - never fail import torch: warn, naming the error
        import sys
        import warnings
        convert = sys.modules.get(f"{__package__}._convert")
        what = str(e) if convert is not None and isinstance(e, convert.BridgeError) else \
            (f"tensorplay-torch could not register the ops ({type(e).__name__}: {e}); "
             f"torch works without them (unset TENSORPLAY_TORCH_AUTOLOAD to skip this)")
        warnings.warn(f"TENSORPLAY_TORCH_AUTOLOAD={value}: {what}", RuntimeWarning,
                      stacklevel=2)
