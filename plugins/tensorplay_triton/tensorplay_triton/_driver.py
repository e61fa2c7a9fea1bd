"""Triton drivers that need no PyTorch.

Triton's stock CUDA driver (``triton.backends.nvidia.driver.CudaDriver``) asks torch for the
current device, stream and compute capability; with torch not importable Triton 3.6 finds "0 active
drivers" and cannot launch. ``CupyCudaDriver`` answers those questions from CuPy instead, so kernels
launch on CuPy's current device and *current stream*, and it provides the benchmarking helpers
(``get_device_interface``, ``get_empty_cache_for_benchmark``, ``clear_cache``) that
``triton.testing.do_bench`` and ``@triton.autotune`` use.

``install_cuda_driver()`` makes it Triton's active driver (``triton.runtime.driver.set_active``); the
plugin calls it before its first compiled launch. These are Triton internals: the versions tested are
pinned in ``pyproject.toml`` (3.6).

``host_do_bench`` is a wall-clock benchmarker for kernels run by Triton's interpreter (cpu tensors),
where there is no device to time; ``wrap_triton`` gives it to autotuned interpreted kernels.
"""

from __future__ import annotations

import statistics
import threading
import time

_lock = threading.Lock()
_installed = [None]


def _cupy():
    try:
        import cupy
    except ImportError as e:   # pragma: no cover - depends on the machine
        raise RuntimeError(
            "tensorplay-triton: launching a compiled Triton kernel on cuda needs CuPy (pip install "
            "tensorplay-cuda cupy-cuda13x), or set TRITON_INTERPRET=1 before the kernel module is "
            f"imported to run kernels through Triton's interpreter: {e}") from e
    return cupy


class _CupyEvent:
    """torch.cuda.Event look-alike over ``cupy.cuda.Event`` (``record``, ``elapsed_time`` in ms)."""

    __slots__ = ("_ev",)

    def __init__(self, enable_timing: bool = True, **_):
        self._ev = _cupy().cuda.Event(disable_timing=not enable_timing)

    def record(self, stream=None):
        cp = _cupy()
        self._ev.record(stream if stream is not None else cp.cuda.get_current_stream())

    def synchronize(self):
        self._ev.synchronize()

    def elapsed_time(self, end) -> float:
        return _cupy().cuda.get_elapsed_time(self._ev, end._ev)


class CupyDeviceInterface:
    """The slice of ``torch.cuda`` that ``triton.testing.do_bench`` uses, answered by CuPy."""

    Event = _CupyEvent

    @staticmethod
    def synchronize(device=None):
        cp = _cupy()
        if device is None:
            cp.cuda.get_current_stream().synchronize()
            cp.cuda.runtime.deviceSynchronize()
        else:
            with cp.cuda.Device(int(getattr(device, "index", device) or 0)):
                cp.cuda.runtime.deviceSynchronize()

    @staticmethod
    def current_device() -> int:
        return _cupy().cuda.runtime.getDevice()

    @staticmethod
    def device_count() -> int:
        return _cupy().cuda.runtime.getDeviceCount()

    @staticmethod
    def is_available() -> bool:
        return bool(_cupy().cuda.is_available())


def _make_driver_class():
    """Build the driver class lazily (importing Triton's nvidia backend imports triton)."""
    from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils

    class CupyCudaDriver(CudaDriver):
        """Triton's CUDA driver with device/stream/capability from CuPy instead of torch.

        Same launcher and utilities as the stock driver (``CudaUtils``/``CudaLauncher``); the base
        initialiser, which imports torch, is not run.
        """

        def __init__(self):
            self.utils = CudaUtils()
            self.launcher_cls = CudaLauncher
            cp = _cupy()
            self._cp = cp
            self._runtime = cp.cuda.runtime
            self._get_stream = cp.cuda.get_current_stream
            self._caps: dict = {}

        # -- what Triton's JIT asks on every launch (kept cheap) ------------------------------
        def get_current_device(self) -> int:
            return self._runtime.getDevice()

        def set_current_device(self, device) -> None:
            self._runtime.setDevice(int(device))

        def get_current_stream(self, device=None) -> int:
            if device is None:
                return self._get_stream().ptr
            return self._get_stream(int(device)).ptr

        def get_device_capability(self, device=None) -> tuple:
            d = self._runtime.getDevice() if device is None else int(device)
            cap = self._caps.get(d)
            if cap is None:
                cc = self._cp.cuda.Device(d).compute_capability   # e.g. "90"
                cap = (int(cc[:-1]), int(cc[-1]))
                self._caps[d] = cap
            return cap

        @staticmethod
        def is_active() -> bool:
            return True

        def get_active_torch_device(self):
            raise RuntimeError(
                "tensorplay-triton runs Triton without PyTorch: this Triton feature needs a torch "
                "device and is not supported (get_active_torch_device)")

        # -- benchmarking (triton.testing.do_bench, @triton.autotune) -------------------------
        def get_device_interface(self):
            return CupyDeviceInterface

        def get_empty_cache_for_benchmark(self):
            # the stock driver keeps a 256 MB buffer that is cleared before each timed run so the
            # L2 cache holds no input data
            return self._cp.empty(256 * 1024 * 1024 // 4, dtype=self._cp.int32)

        def clear_cache(self, cache) -> None:
            cache.fill(0)

        def __repr__(self) -> str:
            return "<tensorplay_triton CupyCudaDriver>"

    return CupyCudaDriver


def cuda_driver_class():
    """The ``CupyCudaDriver`` class (a subclass of Triton's ``CudaDriver``)."""
    return _make_driver_class()


def install_cuda_driver():
    """Make a ``CupyCudaDriver`` Triton's active driver (once per process) and return it.

    Also installs a CuPy-backed ``triton.set_allocator`` when no allocator was set, for kernels that
    need global scratch memory. Raises ``RuntimeError`` with the fix when CuPy is missing.
    """
    drv = _installed[0]
    if drv is not None:
        from triton.runtime import driver as _d
        if _d._active is drv:
            return drv
    with _lock:
        from triton.runtime import driver as _d
        if _installed[0] is None:
            _installed[0] = _make_driver_class()()
        drv = _installed[0]
        if _d._active is not drv:
            _d.set_active(drv)
        _install_allocator()
        return drv


def installed_driver():
    """The installed ``CupyCudaDriver`` or ``None``."""
    return _installed[0]


def _install_allocator() -> None:
    from triton.runtime import _allocation
    if _allocation._allocator.get() is not _allocation._NULL_ALLOCATOR:
        return
    cp = _cupy()

    class _Buf:
        __slots__ = ("mem",)

        def __init__(self, mem):
            self.mem = mem

        def data_ptr(self) -> int:
            return self.mem.ptr

    def alloc(size: int, alignment: int, stream):
        return _Buf(cp.cuda.alloc(max(size, 1)))   # CuPy's pool aligns to 512 B

    _allocation.set_allocator(alloc)


def host_do_bench(fn, quantiles=None, return_mode="mean", reps: int = 3, **_):
    """Wall-clock benchmark for interpreted kernels: one warm-up call, then ``reps`` timed calls.

    Same return convention as ``triton.testing.do_bench`` (milliseconds; a list when ``quantiles``
    is given).
    """
    fn()
    times = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    if quantiles is not None:
        s = sorted(times)
        out = [s[min(len(s) - 1, round(q * (len(s) - 1)))] for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    if return_mode == "all":
        return times
    return statistics.mean(times)
