"""``tensorplay-example-ops``: an example third-party TensorPlay op pack, shipped as a pip plugin.

Installing the distribution is all it takes: its entry point (group ``tensorplay.plugins``, name
``example_ops``) names this module, and its ``tensorplay.namespaces`` entry (``example =
"tensorplay_example_ops"``) says that its ops live in namespace ``example``, so ``import
tensorplay`` only reads that metadata and this module is imported on the first use of the
namespace. The ops are reachable as ``tensorplay.ops.example.<op>`` or as attributes of this
module:

============================ ================================================================
op                           what
============================ ================================================================
``weighted_sum(x, weight)``  ``(x * weight).sum()`` -- the README's first example
``rms_norm(x, weight, eps)`` RMS normalisation over the last dim; explicit ``register_autograd``
``gelu(x)``                  GELU, tanh approximation (composite: autograd from its ops)
``softmax_cross_entropy``    mean cross-entropy of ``logits`` (N, C) against int64 ``target`` (N,)
``add_relu_(x, y)``          ``x = relu(x + y)`` in place; declared ``mutates_args=("x",)``
============================ ================================================================

Every op has a fake kernel and sample inputs (``tensorplay check`` runs ``opcheck`` over them).

Layout, so that more kernels can be added without touching this file:

* ``ops.py`` -- the op definitions (device-agnostic kernels written with tensorplay ops);
* ``_samples.py`` -- the sample registry every module adds to (``register_samples``);
* optional modules listed in ``_OPTIONAL`` (``cuda_ops``: CuPy kernels, ``triton_ops``: Triton
  kernels) are imported after ``ops`` when they exist. They must be cheap to import (import cupy /
  triton inside the kernels).

Why the hook implementations use a pluggy marker instead of ``tensorplay.plugins.hookimpl``: this
module does not import ``tensorplay`` at import time, so ``import tensorplay_example_ops`` before
``import tensorplay`` does not re-enter the plugin loader with a half-initialised module. The ops
are defined inside ``tensorplay_register_ops`` (attributed to this plugin, rolled back if it
fails). No numpy import anywhere here: the kernels use tensorplay ops only.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings

import pluggy

TENSORPLAY_API_VERSION = 1

# Same marker object type as tensorplay.plugins.hookimpl (pluggy project "tensorplay").
hookimpl = pluggy.HookimplMarker("tensorplay")

OPS = ("weighted_sum", "rms_norm", "gelu", "softmax_cross_entropy", "add_relu_")

# Submodules other kernels live in (CuPy kernels, Triton kernels); imported when present.
_OPTIONAL = ("cuda_ops", "triton_ops")

# optional module name -> the exception its import raised (kept so it can be shown and re-raised)
OPTIONAL_ERRORS: dict[str, BaseException] = {}


def _load_optional() -> None:
    for name in _OPTIONAL:
        full = f"{__name__}.{name}"
        if importlib.util.find_spec(full) is None:
            continue
        try:
            importlib.import_module(full)
        except Exception as e:
            OPTIONAL_ERRORS[name] = e
            if os.environ.get("TENSORPLAY_STRICT_PLUGINS") == "1":
                raise
            # the portable ops stay usable; the error is kept in OPTIONAL_ERRORS
            warnings.warn(f"tensorplay-example-ops: optional module {full} failed to import "
                          f"({type(e).__name__}: {e}); its kernels are unavailable. The portable "
                          f"ops in {__name__}.ops still work.", RuntimeWarning, stacklevel=2)


@hookimpl
def tensorplay_register_ops(registrar):
    """Define the ``example::`` ops (importing ``ops`` defines them), then the optional modules."""
    from . import ops  # noqa: F401  (defining the ops is the import's effect)
    _load_optional()


@hookimpl
def tensorplay_sample_inputs(op, device):
    """Sample inputs for our ops from the pack's registry; ``None`` for other plugins' ops."""
    from ._samples import samples_for
    return samples_for(op.name, device)


def __getattr__(name):
    # PEP 562: `from tensorplay_example_ops import rms_norm` loads this plugin through tensorplay
    # (the first use of namespace ``example`` imports it: hooks, kernel entry points)
    if name in OPS:
        import tensorplay
        return getattr(tensorplay.ops.example, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(OPS) + ["OPS", "OPTIONAL_ERRORS", "tensorplay_register_ops",
                       "tensorplay_sample_inputs"]
