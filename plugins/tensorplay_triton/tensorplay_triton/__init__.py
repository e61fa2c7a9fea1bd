"""TensorPlay plugin ``tensorplay-triton``: Triton kernels on tensorplay tensors, without PyTorch.

* ``wrap_triton(kernel)[grid](*args, **kwargs)`` launches a ``@triton.jit`` / ``@triton.autotune``
  kernel on tensorplay tensors (``tensorplay.library.wrap_triton`` forwards here); use it inside
  ``tensorplay.library.triton_op`` bodies.
* **The rule: the tensors' device picks the mode, per launch.** cpu tensors always run through
  Triton's interpreter; cuda tensors always run the compiled kernel. Whatever was imported first,
  and with no environment variable: a plain ``@triton.jit`` kernel serves both devices, Triton's
  helpers called inside kernels (``tl.sum``, ``tl.max``, ...) included. (A kernel decorated while
  ``TRITON_INTERPRET=1`` was set is an ``InterpretedFunction``, which has no compiled form: it is
  interpreted on both devices, cuda memory round-tripping through the host.)
* **cuda**: compiled kernels launch on the tensors' device and CuPy's current stream through a
  CuPy-backed Triton driver (``install_driver()``; installed automatically before the first launch).
  PyTorch need not be importable, and a launch never imports it even when it is installed.
* **cpu**: Triton's interpreter, made to accept what compiled kernels accept: loops bounded by scalar
  arguments on NumPy >= 2.4, float scalars as ``fp32`` (``eps.to(tl.float32)``), the
  ``triton.language.extra.libdevice`` math functions (evaluated with NumPy) and builtins however
  they are spelled (names imported at import time included), and constexprs annotated with strings
  (``BLOCK: "tl.constexpr"``). ``@triton.autotune`` uses the first configuration the pruning keeps,
  untimed (the interpreter's timings say nothing about the GPU).
* ``jit(fn)``: ``triton.jit`` that always gives a ``JITFunction`` (``TRITON_INTERPRET`` ignored), for
  kernels generated at run time (tensorplay-cuda's fuser): ``wrap_triton`` then interprets them on
  cpu and compiles them on cuda, like any ``@triton.jit`` kernel decorated without the variable.
* Custom grid-indexable launchers are handed the user's tensors unchanged.
* A raw ``kernel[grid](...)`` launch on tensorplay tensors is supported on cuda once the driver
  is installed (``install_driver()``); on cpu tensors use ``wrap_triton``: a compiled kernel launched
  raw on cpu tensors raises ``TritonLaunchError`` naming the kernel, the device and that fix
  (``_rawguard``), and interpreted raw launches raise a ``TypeError`` saying so. Inside
  ``tensorplay.compile``, raw and ``wrap_triton`` launches on captured tensors are recorded as graph
  nodes that launch through ``wrap_triton`` when the graph runs (as torch.compile does).

Importing this module is cheap: it imports neither triton, numpy nor cupy; they are
imported on the first ``wrap_triton`` call.

Tested with Triton 3.6.0, 3.7.0, 3.7.1, 3.8.0 and 3.9.0 (pinned in ``pyproject.toml``; ``nox -s
triton_versions``): the driver and the interpreter path use Triton internals.
"""

from __future__ import annotations

import os

from tensorplay import _capture
from tensorplay.plugins import hookimpl

from . import _rawguard

TENSORPLAY_API_VERSION = 1

__all__ = [
    "TritonKernelWrapper",
    "TritonBoundsError",
    "TritonLaunchError",
    "block_torch",
    "bounds_check",
    "install_driver",
    "interpreter_enabled",
    "jit",
    "wrap_triton",
]


# Raw launches Triton cannot make get an error naming the kernel, device and fix (no per-launch
# cost: Triton's driver factory is wrapped once triton is imported; see _rawguard).
_rawguard.install()


def _capture_scope():
    from ._graphlaunch import capture_scope
    return capture_scope()


# Inside tensorplay.compile, raw kernel[grid](...) launches on captured tensors are recorded as
# graph nodes (see _graphlaunch); Triton is patched only while a capture runs.
_capture.capture_scopes.append(_capture_scope)


def wrap_triton(kernel, *, strided=()):
    """Make a Triton kernel launchable on tensorplay tensors: ``wrap_triton(k)[grid](*args)``.

    See ``tensorplay_triton._wrap.wrap_triton`` (imported on first use, with triton).
    """
    if not strided:
        # the wrapper cache is read here first: op bodies call this on every launch, and one
        # Python frame less is a measurable share of a triton_op call
        e = _WRAPPERS.get(id(kernel))
        if e is not None and e[0] is kernel:
            return e[1]
    wt = _WT[0]
    if wt is None:
        from ._wrap import wrap_triton as wt
        _WT[0] = wt
    return wt(kernel, strided=strided)


_WT = [None]
_WRAPPERS: dict = {}    # id(kernel) or (id(kernel), strided) -> (kernel, wrapper); filled by _wrap


def jit(fn=None, **options):
    """Same as ``triton.jit`` but always a ``JITFunction`` (``TRITON_INTERPRET`` ignored), so that
    ``wrap_triton`` picks interpreter or compiler per launch from the tensors' device; for kernels
    generated at run time. See ``tensorplay_triton._interp.jit``."""
    from ._interp import jit as j
    return j(fn, **options)


def install_driver():
    """Install the CuPy-backed Triton CUDA driver now (``triton.runtime.driver.set_active``).

    Needed only for raw ``kernel[grid](...)`` launches made before any ``wrap_triton`` launch,
    ``triton.testing.do_bench``, or ahead-of-time ``warmup``; ``wrap_triton`` installs it itself.
    Returns the driver. Raises ``RuntimeError`` naming the fix when CuPy is missing.
    """
    from . import _wrap
    from ._driver import install_cuda_driver
    _wrap._no_torch_import()         # before any launch: Triton's specialisation would import torch
    drv = install_cuda_driver()
    _wrap._DRIVER[0] = drv
    return drv


def interpreter_enabled() -> bool:
    """True when ``TRITON_INTERPRET`` is set now, i.e. kernels decorated from now on are
    ``InterpretedFunction``s (interpreted on every device). Not needed to run kernels on cpu:
    ``wrap_triton`` interprets every cpu launch anyway."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "on", "yes")


def block_torch() -> None:
    """Make ``import torch`` raise ``ImportError`` in this process (tests prove no torch is needed)."""
    from ._torchblock import install
    install()


def __getattr__(name):
    if name in ("TritonKernelWrapper", "TritonLaunchError"):
        from . import _wrap
        return getattr(_wrap, name)
    if name in ("TritonBoundsError", "bounds_check"):
        # the interpreter's bounds check (cpu launches): see _bounds; imported on first use
        from . import _bounds
        return getattr(_bounds, name)
    raise AttributeError(f"module 'tensorplay_triton' has no attribute {name!r}")


@hookimpl
def tensorplay_register_ops(registrar):
    """The plugin defines no ops of its own: it provides ``wrap_triton``."""
    return
