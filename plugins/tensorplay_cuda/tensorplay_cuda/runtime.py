"""The host-side CUDA runtime behind ``tensorplay.cuda``: devices, properties, streams, events and
memory statistics, on CuPy (imported by ``backend.py``, which this module is reached through).

``tensorplay.cuda`` (core) never imports CuPy: it asks the cuda backend for ``runtime`` (the
``Backend.runtime`` member) and delegates to the ``CudaRuntime`` below. Semantics follow
``torch.cuda``; where CuPy differs, the docstring says so.
"""

from __future__ import annotations

import threading

import cupy

from tensorplay import device as _Device
from tensorplay.errors import DeviceUnavailableError


class DeviceProperties:
    """What ``tensorplay.cuda.get_device_properties`` returns (torch's ``_CudaDeviceProperties``
    fields): ``name``, ``major``, ``minor``, ``total_memory`` (bytes), ``multi_processor_count``,
    ``L2_cache_size`` (bytes), ``warp_size``, ``max_threads_per_multi_processor``,
    ``regs_per_multiprocessor``, ``is_integrated``, ``is_multi_gpu_board``. Read-only."""

    __slots__ = ("name", "major", "minor", "total_memory", "multi_processor_count",
                 "L2_cache_size", "warp_size", "max_threads_per_multi_processor",
                 "regs_per_multiprocessor", "is_integrated", "is_multi_gpu_board")

    def __init__(self, p: dict):
        name = p["name"]
        set_ = object.__setattr__
        set_(self, "name", name.decode() if isinstance(name, bytes) else str(name))
        set_(self, "major", int(p["major"]))
        set_(self, "minor", int(p["minor"]))
        set_(self, "total_memory", int(p["totalGlobalMem"]))
        set_(self, "multi_processor_count", int(p["multiProcessorCount"]))
        set_(self, "L2_cache_size", int(p.get("l2CacheSize", 0)))
        set_(self, "warp_size", int(p.get("warpSize", 32)))
        set_(self, "max_threads_per_multi_processor",
             int(p.get("maxThreadsPerMultiProcessor", 0)))
        set_(self, "regs_per_multiprocessor", int(p.get("regsPerMultiprocessor", 0)))
        set_(self, "is_integrated", bool(p.get("integrated", 0)))
        set_(self, "is_multi_gpu_board", bool(p.get("isMultiGpuBoard", 0)))

    def __setattr__(self, name, value):
        raise AttributeError(f"tensorplay.cuda device properties are read-only ({name!r})")

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


class Stream:
    """A CUDA stream on one GPU (``torch.cuda.Stream``): work queued while it is current (``with
    tensorplay.cuda.stream(s):``) runs on it. ``device``: index or ``tensorplay.device`` (default:
    the current GPU); ``priority``: lower is higher priority (0 = default). ``cuda_stream`` is the
    raw ``cudaStream_t`` handle as an int (what Triton and DLPack take)."""

    def __init__(self, device=None, priority: int = 0, *, _native=None):
        if _native is not None:
            self._s = _native
            # CuPy's null stream reports device_id -1 (it belongs to whichever GPU is current)
            i = getattr(_native, "device_id", None)
            self.device = _Device("cuda", cupy.cuda.runtime.getDevice()
                                  if i is None or i < 0 else i)
            return
        rt = runtime()
        i = rt.index(device, "tensorplay.cuda.Stream")
        with cupy.cuda.Device(i):
            # priority only when asked: CuPy's default stream priority is the driver's default
            self._s = (cupy.cuda.Stream(non_blocking=False, priority=priority) if priority
                       else cupy.cuda.Stream(non_blocking=False))
        self.device = _Device("cuda", i)

    @property
    def cuda_stream(self) -> int:
        return int(self._s.ptr)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        self._s.synchronize()

    def query(self) -> bool:
        """True when all work queued on this stream has finished."""
        return bool(self._s.done)

    def wait_event(self, event) -> None:
        """Make future work on this stream wait for ``event``."""
        self._s.wait_event(event._e)

    def wait_stream(self, stream) -> None:
        """Make future work on this stream wait for the work queued so far on ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one when None) on this stream; returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self._s.ptr == other._s.ptr \
            and self.device == other.device

    def __hash__(self):
        return hash((self._s.ptr, self.device))

    def __repr__(self):
        return f"<tensorplay.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event (``torch.cuda.Event``): a marker in a stream, for synchronisation and timing.
    ``elapsed_time(end)`` is in milliseconds and needs ``enable_timing=True`` on both events."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.enable_timing = enable_timing
        self._e = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                  interprocess=interprocess)
        self._recorded = False

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        self._e.record(stream._s if stream is not None else None)
        self._recorded = True

    def wait(self, stream=None) -> None:
        """Make future work on ``stream`` (default: the current stream) wait for this event."""
        s = stream._s if stream is not None else cupy.cuda.get_current_stream()
        s.wait_event(self._e)

    def query(self) -> bool:
        """True when the work recorded before this event has finished."""
        return bool(self._e.done)

    def synchronize(self) -> None:
        """Wait until the work recorded before this event has finished."""
        self._e.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded and finished).

        Raises ``RuntimeError`` naming the fix when either was made without
        ``enable_timing=True`` or was never recorded (torch raises the same)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be created with "
                               "Event(enable_timing=True)")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Event.elapsed_time: both events must be recorded first "
                               "(event.record())")
        end_event._e.synchronize()
        return float(cupy.cuda.get_elapsed_time(self._e, end_event._e))

    def __repr__(self):
        return f"<tensorplay.cuda.Event enable_timing={self.enable_timing}>"


class CudaRuntime:
    """One per process (``runtime()``): the state ``tensorplay.cuda`` keeps (device count,
    properties, peak-memory tracking)."""

    Stream = Stream     # the classes tensorplay.cuda.Stream / Event construct
    Event = Event

    def __init__(self, count: int):
        self.count = count
        self._props: dict = {}
        self._lock = threading.Lock()
        self._peak: dict | None = None       # device index -> peak used bytes, once tracking

    def runtime_version(self) -> int:
        """The CUDA runtime's version as CUDA encodes it (1000 * major + 10 * minor), as CuPy
        reports it: ``tensorplay.version.cuda``."""
        return int(cupy.cuda.runtime.runtimeGetVersion())

    # -- devices -------------------------------------------------------------------------------
    def index(self, device, api: str) -> int:
        """The GPU index of ``device`` (None: current; int; "cuda:N"; ``tensorplay.device``)."""
        if device is None:
            return self.current_device()
        if isinstance(device, int) and not isinstance(device, bool):
            i = device
        else:
            d = device if isinstance(device, _Device) else _Device(device)
            if d.type != "cuda":
                raise ValueError(f"{api}: expected a cuda device, got {d}")
            i = self.current_device() if d.index is None else d.index
        if not 0 <= i < self.count:
            raise DeviceUnavailableError(
                f"{api}: invalid device index {i}: this machine has {self.count} CUDA device(s) "
                f"(0..{self.count - 1}); pick one of those, or set CUDA_VISIBLE_DEVICES")
        return i

    def current_device(self) -> int:
        # one visible GPU: it is the current one, without a driver call (~2.5 µs each)
        return 0 if self.count == 1 else cupy.cuda.runtime.getDevice()

    def set_device(self, device) -> None:
        cupy.cuda.runtime.setDevice(self.index(device, "tensorplay.cuda.set_device"))

    def properties(self, i: int) -> DeviceProperties:
        p = self._props.get(i)
        if p is None:
            p = self._props[i] = DeviceProperties(cupy.cuda.runtime.getDeviceProperties(i))
        return p

    def synchronize(self, i: int) -> None:
        cupy.cuda.Device(i).synchronize()

    # -- streams -------------------------------------------------------------------------------
    def current_stream(self, i: int) -> Stream:
        if i == self.current_device():
            return Stream(_native=cupy.cuda.get_current_stream())
        with cupy.cuda.Device(i):
            return Stream(_native=cupy.cuda.get_current_stream())

    def use_stream(self, stream):
        """Context manager making ``stream`` current (on its device) for the enclosed work."""
        return _StreamContext(stream)

    # -- memory --------------------------------------------------------------------------------
    # CuPy's pool reports what is in use now (used_bytes) and held (total_bytes) per device, but
    # keeps no peak. The peak is tracked by an allocator wrapping the pool, installed on the first
    # call that needs it (reset_peak_memory_stats / max_memory_allocated), so allocation stays
    # free of a Python hook for programs that never ask (torch tracks from process start).
    def memory_allocated(self, i: int) -> int:
        pool = cupy.get_default_memory_pool()
        with cupy.cuda.Device(i):
            return int(pool.used_bytes())

    def memory_reserved(self, i: int) -> int:
        pool = cupy.get_default_memory_pool()
        with cupy.cuda.Device(i):
            return int(pool.total_bytes())

    def _track(self) -> dict:
        with self._lock:
            if self._peak is None:
                pool = cupy.get_default_memory_pool()
                peak: dict = {}
                malloc, used, get_device = pool.malloc, pool.used_bytes, cupy.cuda.runtime.getDevice

                def tracking_malloc(size):
                    mem = malloc(size)
                    d = get_device()
                    u = used()
                    if u > peak.get(d, 0):
                        peak[d] = u
                    return mem

                cupy.cuda.set_allocator(tracking_malloc)
                self._peak = peak
            return self._peak

    def max_memory_allocated(self, i: int) -> int:
        peak = self._track()
        cur = self.memory_allocated(i)
        if cur > peak.get(i, 0):
            peak[i] = cur
        return peak[i]

    def reset_peak_memory_stats(self, i: int) -> None:
        self._track()[i] = self.memory_allocated(i)

    def empty_cache(self) -> None:
        cupy.get_default_memory_pool().free_all_blocks()


class _StreamContext:
    __slots__ = ("_stream", "_dev", "_prev_dev")

    def __init__(self, stream):
        self._stream = stream

    def __enter__(self):
        s = self._stream
        if s is None:
            return None
        self._prev_dev = cupy.cuda.runtime.getDevice()
        i = s.device.index
        if i != self._prev_dev:
            cupy.cuda.runtime.setDevice(i)
        s._s.__enter__()
        return s

    def __exit__(self, *exc):
        s = self._stream
        if s is None:
            return False
        s._s.__exit__(*exc)
        if cupy.cuda.runtime.getDevice() != self._prev_dev:
            cupy.cuda.runtime.setDevice(self._prev_dev)
        return False


_RUNTIME: CudaRuntime | None = None


def runtime() -> CudaRuntime:
    """The process's ``CudaRuntime`` (made on first use; the cuda backend must be available)."""
    global _RUNTIME
    r = _RUNTIME
    if r is None:
        r = _RUNTIME = CudaRuntime(cupy.cuda.runtime.getDeviceCount())
    return r
