"""TensorPlay plugin ``tensorplay-triton``: Triton kernels on tensorplay tensors, without PyTorch.

* ``wrap_triton(kernel)[grid](*args, **kwargs)`` launches a ``@triton.jit`` / ``@triton.autotune``
  kernel on tensorplay tensors (``tensorplay.library.wrap_triton`` forwards here); use it inside
  ``tensorplay.library.triton_op`` bodies.
* **cuda**: compiled kernels launch on the tensors' device and CuPy's current stream through a
  CuPy-backed Triton driver (``install_driver()``; installed automatically before the first launch).
  PyTorch need not be importable.
* **cpu**: kernels run through Triton's interpreter. The interpreter is chosen when a kernel is
  *decorated*, so ``TRITON_INTERPRET=1`` must be in the environment before the module that defines
  the kernels is imported (e.g. at the top of ``conftest.py``, or in the environment of the
  process). A compiled kernel given cpu tensors raises an error saying so. Interpreted kernels also
  accept cuda tensors (their memory round-trips through the host).

Importing this module is cheap: it imports neither triton, numpy nor cupy; they are
imported on the first ``wrap_triton`` call.

Tested with Triton 3.6 (pinned in ``pyproject.toml``): the driver and the interpreter adapters use
Triton internals.
"""

from __future__ import annotations

import os

from tensorplay.plugins import hookimpl

TENSORPLAY_API_VERSION = 1

__all__ = [
    "TritonKernelWrapper",
    "TritonLaunchError",
    "block_torch",
    "install_driver",
    "interpreter_enabled",
    "wrap_triton",
]


def wrap_triton(kernel, *, strided=()):
    """Make a Triton kernel launchable on tensorplay tensors: ``wrap_triton(k)[grid](*args)``.

    See ``tensorplay_triton._wrap.wrap_triton`` (imported on first use, with triton).
    """
    wt = _WT[0]
    if wt is None:
        from ._wrap import wrap_triton as wt
        _WT[0] = wt
    return wt(kernel, strided=strided)


_WT = [None]


def install_driver():
    """Install the CuPy-backed Triton CUDA driver now (``triton.runtime.driver.set_active``).

    Needed only for raw ``kernel[grid](...)`` launches made before any ``wrap_triton`` launch,
    ``triton.testing.do_bench``, or ahead-of-time ``warmup``; ``wrap_triton`` installs it itself.
    Returns the driver. Raises ``RuntimeError`` naming the fix when CuPy is missing.
    """
    from . import _wrap
    from ._driver import install_cuda_driver
    drv = install_cuda_driver()
    _wrap._DRIVER[0] = drv
    return drv


def interpreter_enabled() -> bool:
    """True when ``TRITON_INTERPRET`` is set now, i.e. kernels decorated from now on are interpreted."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "on", "yes")


def block_torch() -> None:
    """Make ``import torch`` raise ``ImportError`` in this process (tests prove no torch is needed)."""
    from ._torchblock import install
    install()


def __getattr__(name):
    if name in ("TritonKernelWrapper", "TritonLaunchError"):
        from . import _wrap
        return getattr(_wrap, name)
    raise AttributeError(f"module 'tensorplay_triton' has no attribute {name!r}")


@hookimpl
def tensorplay_register_ops(registrar):
    """The plugin defines no ops of its own: it provides ``wrap_triton``."""
    return
