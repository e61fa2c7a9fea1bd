"""A clear error for a raw ``kernel[grid](...)`` launch on tensorplay tensors that Triton cannot make.

A compiled ``@triton.jit`` kernel launched directly on tensorplay tensors (``kernel[grid](x, y, out,
n)``, as Triton's tutorials write it) goes to Triton's ``JITFunction.run``, which first asks for the
active GPU driver. With no GPU (or, on Triton 3.6, without PyTorch) there is none and Triton fails
with ``RuntimeError: 0 active drivers ([]). There should only be one.`` -- nothing about the
kernel, the tensors or the fix. This module wraps Triton's driver factory
(``triton.runtime.driver._create_driver``): when it fails during a kernel launch whose arguments
include tensorplay tensors, the error is a ``TritonLaunchError`` naming the kernel, the tensors'
device and the fix (``wrap_triton(kernel)[grid](...)``, which interprets cpu tensors, or cuda
tensors; ``install_driver()`` for raw cuda launches). Every other failure is Triton's own.

Nothing runs per launch: the factory is called once, when Triton first needs a driver. It is
wrapped as soon as ``triton.runtime.driver`` is imported (a one-shot import hook, removed once it
has fired), whichever of triton and tensorplay was imported first.
"""

from __future__ import annotations

import sys

__all__ = ["install"]

_MODULE = "triton.runtime.driver"


def install() -> None:
    """Wrap Triton's driver factory now, or as soon as ``triton.runtime.driver`` is imported."""
    mod = sys.modules.get(_MODULE)
    if mod is not None:
        _wrap_factory(mod)
        return
    if not any(isinstance(f, _DriverModuleHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _DriverModuleHook())


def _wrap_factory(mod) -> None:
    orig = getattr(mod, "_create_driver", None)
    if orig is None or getattr(orig, "_tensorplay_guard", False):
        return

    def _create_driver():
        try:
            return orig()
        except RuntimeError as e:
            err = _raw_launch_error(e)
            if err is None:
                raise
            raise err from e

    _create_driver._tensorplay_guard = True
    _create_driver.__wrapped__ = orig
    _create_driver.__doc__ = orig.__doc__
    mod._create_driver = _create_driver


def _launch_frame():
    """The ``JITFunction.run`` frame of the launch asking for a driver, or ``None``."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:       # pragma: no cover - only called from inside triton
        return None
    f = sys._getframe(2)
    for _ in range(16):
        if f is None:
            return None
        loc = f.f_locals if f.f_code.co_name == "run" else None
        if loc is not None and isinstance(loc.get("self"), JITFunction) and "args" in loc:
            return loc
        f = f.f_back
    return None


def _raw_launch_error(cause):
    loc = _launch_frame()
    if loc is None:
        return None
    from tensorplay import Tensor

    from ._wrap import TritonLaunchError, _kernel_name
    kernel = loc["self"]
    named = list(zip(getattr(kernel, "arg_names", ()), loc.get("args") or ()))
    named += [(k, v) for k, v in (loc.get("kwargs") or {}).items()]
    tensors = [(k, v) for k, v in named if isinstance(v, Tensor)]
    if not tensors:
        return None
    name = _kernel_name(kernel)
    cpu = [(k, v) for k, v in tensors if v.device.type == "cpu"]
    if cpu:
        arg, t = cpu[0]
        return TritonLaunchError(
            f"{name}[grid](...): the compiled Triton kernel {name!r} was launched directly on "
            f"{t.device} tensors (argument {arg!r} is on {t.device}); Triton runs compiled "
            f"kernels on GPUs only and found no driver for this launch ({cause}). Launch it as "
            f"tensorplay.library.wrap_triton({name})[grid](...), which runs cpu tensors through "
            f"Triton's interpreter (and cuda tensors compiled), or move the tensors to cuda with "
            f".to('cuda').")
    arg, t = tensors[0]
    return TritonLaunchError(
        f"{name}[grid](...): the compiled Triton kernel {name!r} was launched directly on "
        f"{t.device} tensors (argument {arg!r}) before a Triton driver was installed ({cause}). "
        f"Call tensorplay_triton.install_driver() once before raw launches, or launch it as "
        f"tensorplay.library.wrap_triton({name})[grid](...), which installs the driver itself.")


class _DriverModuleHook:
    """Import hook: wraps Triton's driver factory right after ``triton.runtime.driver`` runs."""

    def find_spec(self, name, path=None, target=None):
        if name != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _WrappingLoader(spec.loader, self)
        return spec

    def invalidate_caches(self):
        return None


class _WrappingLoader:
    """The module's own loader, plus the wrapping once the module has run."""

    def __init__(self, inner, hook):
        self._inner = inner
        self._hook = hook

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _wrap_factory(module)
        try:
            sys.meta_path.remove(self._hook)
        except ValueError:
            pass

    def __getattr__(self, name):          # get_source, get_code, ... for inspect/linecache
        return getattr(self._inner, name)
