"""``tensorplay-torch``: TensorPlay op packs used from PyTorch.

One explicit call registers TensorPlay ops as torch custom ops ``torch.ops.<ns>.<op>``::

    import tensorplay_torch
    tensorplay_torch.register(namespace="example")   # or plugin="...", or nothing: every pack

``register`` keeps each op's schema (mutation and alias annotations, defaults, keyword-only
arguments); kernels on cpu and cuda go through DLPack both ways (zero-copy, strides kept, torch's
current CUDA stream); fake kernels run the pack's fake on TensorPlay fake tensors; autograd runs
the pack's ``register_autograd`` formula. ``torch.library.opcheck``, ``torch.compile`` and
``torch.distributed`` then work on the ops. ``to_torch(t)`` / ``to_tensorplay(t)`` pass one tensor
across (zero-copy, every dtype of ``DTYPES`` including cpu bfloat16). Guide: docs/guides/use-from-pytorch.md.

Importing this module is cheap: it imports neither torch nor tensorplay until ``register`` (or
another public name) is used. Nothing registers at ``import torch`` unless the user opts in
(``TENSORPLAY_TORCH_AUTOLOAD``, read by ``tensorplay_torch._autoload``).
"""

from __future__ import annotations

__all__ = ["DTYPES", "BridgeError", "bridged_ops", "register", "to_tensorplay", "to_torch"]

_HOME = {"register": "_register", "bridged_ops": "_register", "BridgeError": "_convert",
         "DTYPES": "_convert", "to_torch": "_convert", "to_tensorplay": "_convert"}


def __getattr__(name):
    # PEP 562: torch and tensorplay are imported on first use of a public name
    mod = _HOME.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


def __dir__():
    return sorted(list(globals()) + __all__)
