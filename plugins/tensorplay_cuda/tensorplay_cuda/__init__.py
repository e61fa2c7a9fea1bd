"""TensorPlay device plugin ``cuda`` (CuPy): tensors on ``cuda`` / ``cuda:N``.

This module holds the hook implementations and a few helpers for kernel authors. Importing it
imports neither CuPy nor numpy: ``backend.py`` does, when a cuda tensor is first asked for.
On a machine without a usable GPU the plugin still loads; the device then reports itself
unavailable with CuPy's reason (``tensorplay.plugins.device_status("cuda")``), and creating a
cuda tensor raises ``tensorplay.errors.DeviceUnavailableError``.

Helpers for writing ``cuda`` kernels of custom ops (each imports CuPy on first call)::

    import tensorplay_cuda

    @my_op.register_kernel("cuda")
    def _(x):
        with tensorplay_cuda.device_of(x):          # run on x's own GPU (cuda:N)
            arr = tensorplay_cuda.as_cupy(x)         # zero-copy cupy view of exactly this tensor
            return tensorplay_cuda.from_cupy(arr * 2)  # tensor on the array's device
"""

from __future__ import annotations

from tensorplay import Tensor as _Tensor
from tensorplay import backends as _backends
from tensorplay import device as _Device
from tensorplay.plugins import DeviceSpec, hookimpl

TENSORPLAY_API_VERSION = 1

__all__ = ["as_cupy", "device_count", "device_of", "from_cupy", "is_available"]


@hookimpl
def tensorplay_devices():
    """The ``cuda`` device type; its backend (``backend.CUDABackend``) is imported on first use."""
    return [DeviceSpec("cuda", "tensorplay_cuda:_new_backend")]


def _new_backend():
    """The cuda backend, made on the device's first use (the ``DeviceSpec`` factory).

    Raises ``DeviceUnavailableError`` without importing CuPy when the device cannot work here:
    no CuPy or several CuPys installed, or no NVIDIA driver (``libcuda.so.1``/``nvcuda.dll``
    does not load). Importing CuPy only to hear its runtime say so costs over a second in
    every process that asks for the devices (``tensorplay check`` and each of its workers)."""
    from ._cupy_install import setup_problem
    problem = setup_problem()
    if problem is not None:
        from tensorplay.errors import DeviceUnavailableError
        raise DeviceUnavailableError(f"device 'cuda' is not available: {problem}")
    from .backend import CUDABackend
    return CUDABackend()


@hookimpl
def tensorplay_sample_inputs(op, device):
    """Samples of the built-in ``tp::`` ops on ``device`` (a cuda device; the core's table,
    ``tensorplay.testing.builtin_samples``), so ``tensorplay check --plugin tensorplay-cuda``
    runs ``opcheck`` over this plugin's kernels of them; ``None`` for any other op or device."""
    if device.type != "cuda":
        return None
    from tensorplay.testing.builtin_samples import sample_inputs
    return sample_inputs(op, device)


def _backend():
    return _backends.get("cuda")   # the loaded backend (loaded on first use)


def is_available() -> tuple[bool, str]:
    """``(usable, reason)`` for the cuda device: CuPy importable and at least one GPU usable.

    Never raises and never allocates GPU memory; ``reason`` says what is missing (CuPy, the
    NVIDIA driver) or is CuPy's own message. Imports CuPy only where it can work.
    """
    from ._cupy_install import setup_problem
    problem = setup_problem()
    if problem is not None:
        return False, problem
    from .backend import CUDABackend
    return CUDABackend().is_available()


def device_count() -> int:
    """Number of visible CUDA GPUs (0 when CuPy or a usable driver is missing). Never raises."""
    from ._cupy_install import setup_problem
    if setup_problem() is not None:
        return 0
    from .backend import CUDABackend
    b = CUDABackend()
    ok, _ = b.is_available()
    return b.device_count() if ok else 0


def as_cupy(t):
    """The ``cupy.ndarray`` holding exactly tensor ``t``'s view (zero-copy, shares memory).

    ``t`` must be a real (not fake) tensor on a cuda device; writes through the array are
    visible in ``t`` (bump nothing: declare the mutation in the op's ``mutates_args``).
    Raises ``TypeError`` for anything else, naming the device and the fix.
    """
    try:
        data = t.native          # a CuPy array has .device but not .native
        dev = t.raw_device
    except AttributeError:
        raise TypeError(f"tensorplay_cuda.as_cupy: expected a tensorplay.Tensor, got "
                        f"{type(t).__name__}") from None
    if dev.type == "cuda" and data is not None:
        return data
    if dev.type != "cuda":
        raise TypeError(f"tensorplay_cuda.as_cupy: tensor is on {dev}, not a cuda device; move it "
                        f"with t.to('cuda') (or t.cuda(i)) first")
    raise TypeError("tensorplay_cuda.as_cupy: fake/meta tensors have no data; a fake kernel "
                    "must build its outputs with tensor ops (x.new_empty(...)), not CuPy")


def from_cupy(arr):
    """A tensor on ``cuda:N`` (N = the array's device) owning CuPy array ``arr``.

    Zero-copy when ``arr`` is C-contiguous (the tensor and the array share memory); a
    non-contiguous array is copied once into a contiguous one on its own device.
    """
    b = _backends.get("cuda")
    nd = b.np.ndarray
    if arr.__class__ is not nd and not isinstance(arr, nd):
        raise TypeError(f"tensorplay_cuda.from_cupy: expected a cupy.ndarray, got "
                        f"{type(arr).__name__}; use tensorplay.tensor(data, device='cuda') for "
                        f"host data")
    # a custom op's kernel calls this on every result: the device looked up by index (not
    # parsed), CuPy's `_c_contiguous` rather than `flags` (an object built per read)
    i = arr.data.device_id
    dev = _CUDA_DEVICES.get(i)
    if dev is None:
        dev = _CUDA_DEVICES[i] = _Device("cuda", i)
    if arr._c_contiguous:
        return b.wrap(arr, dev)
    with b.device_guard(dev):            # the contiguous copy is made on the array's device
        return b.wrap(arr, dev)


_CUDA_DEVICES: dict = {}     # device index -> Device("cuda", index) (interned: the same objects)


def device_of(t):
    """Context manager making ``t``'s GPU CuPy's current device (``cupy.cuda.Device(index)``),
    so kernels and allocations inside run on the tensor's own device."""
    dev = t.raw_device if isinstance(t, _Tensor) else _Device(t)
    if dev.type != "cuda":
        raise TypeError(f"tensorplay_cuda.device_of: {dev} is not a cuda device")
    return _backend().device_guard(dev)
