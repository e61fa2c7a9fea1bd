"""``tensorplay.cuda``: the host-side CUDA surface kernel code calls (same names and meanings as
``torch.cuda``).

``is_available()``, ``device_count()``, ``current_device()``, ``set_device(d)``, ``device(d)``
(context manager), ``get_device_properties(d)`` (``name``, ``multi_processor_count``,
``total_memory``, ``major``, ``minor``, ...; cached per device as torch caches it: a repeat call
costs a dict lookup), ``get_device_name``, ``get_device_capability``, ``synchronize(d)``,
``current_stream(d)``, ``Stream``, ``stream(s)`` (context manager), ``Event`` (``record``,
``synchronize``, ``elapsed_time`` in ms), ``memory_allocated``, ``max_memory_allocated``,
``reset_peak_memory_stats``, ``memory_reserved``, ``empty_cache``.

``d`` is ``None`` (the current GPU), an index, ``"cuda:N"`` or a ``tensorplay.device``.

The core imports no array library: every call is delegated to the ``cuda`` device backend's
``runtime`` (``tensorplay.backends.Backend.runtime``), which the ``tensorplay-cuda`` plugin
implements on CuPy. On a machine without a usable GPU (or without the plugin)
``is_available()`` is ``False`` and ``device_count()`` is ``0``; everything else raises
``tensorplay.errors.DeviceUnavailableError`` naming the call and the reason.

Where we differ from torch: peak-memory tracking (``max_memory_allocated``) starts at the first
call of ``max_memory_allocated`` or ``reset_peak_memory_stats`` (torch tracks from process
start), so programs that never ask keep allocation free of a tracking hook; call
``reset_peak_memory_stats()`` before the work to measure, as benchmarks usually do.
"""

from __future__ import annotations

import abc
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .errors import DeviceUnavailableError

if TYPE_CHECKING:
    from ._tensor import _DeviceLike

__all__ = ["Event", "Stream", "current_device", "current_stream", "device", "device_count",
           "empty_cache", "get_device_capability", "get_device_name", "get_device_properties",
           "is_available", "max_memory_allocated", "memory_allocated", "memory_reserved",
           "reset_peak_memory_stats", "set_device", "stream", "synchronize"]

_rt = None          # the cuda backend's runtime, once a call needed it
_props: dict = {}   # device argument (int, "cuda:N", Device) -> properties: a repeat is one get


def _runtime(api: str):
    """The cuda backend's runtime; ``DeviceUnavailableError`` naming ``api`` when there is none."""
    global _rt
    rt = _rt
    if rt is not None:
        return rt
    from . import backends
    try:
        b = backends.get("cuda")
    except DeviceUnavailableError as e:
        raise DeviceUnavailableError(f"tensorplay.cuda.{api}: CUDA is not available: {e}") from e
    rt = getattr(b, "runtime", None)
    if rt is None:
        raise DeviceUnavailableError(
            f"tensorplay.cuda.{api}: the backend of device 'cuda' ({type(b).__qualname__}) has "
            f"no host runtime (Backend.runtime); install tensorplay-cuda, which provides one")
    Stream.register(rt.Stream)       # isinstance(s, tensorplay.cuda.Stream) holds for its streams
    Event.register(rt.Event)
    _rt = rt
    return rt


def is_available() -> bool:
    """True when a CUDA GPU is usable (the cuda plugin is installed, CuPy imports and sees a GPU).
    Never raises; the reason when not: ``tensorplay.plugins.device_status("cuda")``."""
    if _rt is not None:
        return True
    from . import plugins
    return plugins.device_status("cuda")[0]


def device_count() -> int:
    """The number of visible CUDA GPUs; 0 without a usable GPU. Never raises."""
    if _rt is not None:
        return _rt.count
    if not is_available():
        return 0
    return _runtime("device_count").count


def current_device() -> int:
    """The index of the current GPU (where a bare ``"cuda"`` tensor goes)."""
    return _runtime("current_device").current_device()


def set_device(device: _DeviceLike) -> None:
    """Make ``device`` (index, ``"cuda:N"`` or ``tensorplay.device``) the current GPU.
    ``DeviceUnavailableError`` for an index this machine lacks."""
    _runtime("set_device").set_device(device)


class device:
    """Context manager making GPU ``device`` current inside the block (``torch.cuda.device``);
    the previous one is restored on exit. ``None`` or a negative index: no change."""

    def __init__(self, device: _DeviceLike | None) -> None:
        self._device = device
        self._prev = None

    def __enter__(self) -> device:
        d = self._device
        if d is None or (isinstance(d, int) and d < 0):
            return self
        rt = _runtime("device")
        self._prev = rt.current_device()
        rt.set_device(d)
        return self

    def __exit__(self, *exc: object) -> bool:
        if self._prev is not None:
            _rt.set_device(self._prev)
        return False


def get_device_properties(device: _DeviceLike | None = None) -> Any:
    """Properties of GPU ``device`` (default: the current one): ``name``, ``major``, ``minor``,
    ``total_memory`` (bytes), ``multi_processor_count``, ``L2_cache_size``, ``warp_size``, ...

    Cached per device (same as torch): the driver is asked once; a repeat call is a dict lookup
    (under 1 µs). ``DeviceUnavailableError`` without a GPU or for an index the machine lacks."""
    if device is not None:
        try:
            p = _props.get(device)
        except TypeError:            # unhashable argument: resolved below
            p = None
        if p is not None:
            return p
        rt = _runtime("get_device_properties")
        p = rt.properties(rt.index(device, "tensorplay.cuda.get_device_properties"))
        try:
            _props[device] = p
        except TypeError:
            pass
        return p
    rt = _rt if _rt is not None else _runtime("get_device_properties")
    i = rt.current_device()
    p = _props.get(i)
    if p is None:
        p = _props[i] = rt.properties(i)
    return p


def get_device_name(device: _DeviceLike | None = None) -> str:
    """The GPU's name, e.g. ``"NVIDIA H200"`` (``get_device_properties(device).name``)."""
    if _rt is None:
        _runtime("get_device_name")
    return get_device_properties(device).name


def get_device_capability(device: _DeviceLike | None = None) -> tuple[int, int]:
    """``(major, minor)`` compute capability, e.g. ``(9, 0)`` on an H100/H200."""
    if _rt is None:
        _runtime("get_device_capability")
    p = get_device_properties(device)
    return (p.major, p.minor)


def synchronize(device: _DeviceLike | None = None) -> None:
    """Wait for all queued work on GPU ``device`` (default: the current one)."""
    rt = _runtime("synchronize")
    rt.synchronize(rt.index(device, "tensorplay.cuda.synchronize"))


def current_stream(device: _DeviceLike | None = None) -> Stream:
    """The current ``Stream`` of GPU ``device`` (default: the current one)."""
    rt = _runtime("current_stream")
    return rt.current_stream(rt.index(device, "tensorplay.cuda.current_stream"))


def stream(stream: Stream | None) -> AbstractContextManager[Any]:
    """Context manager making ``stream`` (a ``Stream``, or ``None`` for no change) current: cuda
    work issued inside runs on it (same as ``torch.cuda.stream``)."""
    return _runtime("stream").use_stream(stream)


class Stream(abc.ABC):  # noqa: B024 - a virtual base: the runtime registers its class
    """A CUDA stream: ``Stream(device=None, priority=0)`` (``torch.cuda.Stream``). Methods
    ``synchronize()``, ``query()``, ``wait_event(e)``, ``wait_stream(s)``, ``record_event(e=None)``;
    ``cuda_stream`` is the raw handle (int). Made by the cuda plugin's runtime."""

    def __new__(cls, device: _DeviceLike | None = None, priority: int = 0) -> Stream:
        return _runtime("Stream").Stream(device, priority)

    if TYPE_CHECKING:   # the runtime's streams have these (declared for the type checkers)
        cuda_stream: int
        def synchronize(self) -> None: ...
        def query(self) -> bool: ...
        def wait_event(self, event: Event) -> None: ...
        def wait_stream(self, stream: Stream) -> None: ...
        def record_event(self, event: Event | None = None) -> Event: ...


class Event(abc.ABC):  # noqa: B024 - a virtual base: the runtime registers its class
    """A CUDA event: ``Event(enable_timing=False, blocking=False, interprocess=False)``
    (``torch.cuda.Event``). Methods ``record(stream=None)``, ``wait(stream=None)``, ``query()``,
    ``synchronize()``, ``elapsed_time(end)`` (milliseconds; both events need
    ``enable_timing=True``). Made by the cuda plugin's runtime."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False) -> Event:
        return _runtime("Event").Event(enable_timing, blocking, interprocess)

    if TYPE_CHECKING:   # the runtime's events have these (declared for the type checkers)
        def record(self, stream: Stream | None = None) -> None: ...
        def wait(self, stream: Stream | None = None) -> None: ...
        def query(self) -> bool: ...
        def synchronize(self) -> None: ...
        def elapsed_time(self, end: Event) -> float: ...


def memory_allocated(device: _DeviceLike | None = None) -> int:
    """Bytes of GPU memory held by tensors on ``device`` now (CuPy pool's used bytes)."""
    rt = _runtime("memory_allocated")
    return rt.memory_allocated(rt.index(device, "tensorplay.cuda.memory_allocated"))


def max_memory_allocated(device: _DeviceLike | None = None) -> int:
    """Peak of ``memory_allocated(device)`` since tracking began: the last
    ``reset_peak_memory_stats``, else the first call of this function (see the module note)."""
    rt = _runtime("max_memory_allocated")
    return rt.max_memory_allocated(rt.index(device, "tensorplay.cuda.max_memory_allocated"))


def reset_peak_memory_stats(device: _DeviceLike | None = None) -> None:
    """Restart the peak that ``max_memory_allocated`` reports from the current allocation."""
    rt = _runtime("reset_peak_memory_stats")
    rt.reset_peak_memory_stats(rt.index(device, "tensorplay.cuda.reset_peak_memory_stats"))


def memory_reserved(device: _DeviceLike | None = None) -> int:
    """Bytes held by the caching allocator on ``device`` (in use or cached for reuse)."""
    rt = _runtime("memory_reserved")
    return rt.memory_reserved(rt.index(device, "tensorplay.cuda.memory_reserved"))


def empty_cache() -> None:
    """Return the allocator's cached, unused blocks to the driver."""
    _runtime("empty_cache").empty_cache()
