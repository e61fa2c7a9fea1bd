"""The bridge's cuda-only per-call code, run without a GPU: the crossing of a torch cuda tensor
into TensorPlay (a CuPy array over its address), a CuPy result's way back into torch (DLPack,
no deprecated call, no stream order asked for) and the stream/device context its kernels run in.

No GPU needed: torch cuda tensors are stand-ins over cpu tensors' memory (the attributes the
bridge reads), CuPy arrays are CuPy's own over host memory (never touched by a kernel), and the
cuda backend is the real ``CUDABackend`` with one GPU assumed. These pin down the logic the GPU
run (``test_bridge.py``'s cuda test, ``bench_torch_bridge.py --device cuda``) times.

Private on purpose: each function tested here runs only on cuda (the public API reaches it only
with a GPU); the public behaviour is ``test_bridge.py``'s."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import tensorplay as tp
import torch

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (tensorplay-cuda[cuda13])")
backend_mod = pytest.importorskip("tensorplay_cuda.backend",
                                  reason="tensorplay-cuda is not installed")

from tensorplay import _devices  # noqa: E402
from tensorplay_torch import _convert, _register  # noqa: E402

# CuPy 14's words for its deprecated ndarray.toDlpack()
DEPRECATED = ("This function is deprecated and will be removed in a future release. Use the "
              "cupy.from_dlpack() array constructor instead.")


class _TorchCudaStandIn:
    """What the bridge reads of a torch cuda tensor, over cpu tensor ``t``'s memory."""

    def __init__(self, t, index=0):
        self.t, self.index = t, index

    dtype = property(lambda self: self.t.dtype)
    shape = property(lambda self: self.t.shape)
    nbytes = property(lambda self: self.t.nbytes)

    def get_device(self):
        return self.index

    def is_contiguous(self):
        return self.t.is_contiguous()

    def data_ptr(self):
        return self.t.data_ptr()

    def numel(self):
        return self.t.numel()

    def stride(self):
        return self.t.stride()

    def element_size(self):
        return self.t.element_size()


@pytest.fixture
def cuda_backend(monkeypatch):
    """The real cuda backend (one GPU) as the loaded one, the bridge's CuPy cache reset; all
    restored afterwards."""
    be = backend_mod.CUDABackend()
    be._count = 1
    monkeypatch.setitem(_devices.loaded, "cuda", be)
    monkeypatch.setattr(_convert, "_CUPY", [])
    monkeypatch.setattr(_convert, "_CUPY_NDARRAY", [None])
    return be


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_contiguous_cuda_tensor_crosses_as_a_cupy_array_over_its_memory(cuda_backend, dtype):
    base = torch.arange(12).to(dtype).reshape(3, 4)
    t = _convert._cuda_to_tp(_TorchCudaStandIn(base))
    assert isinstance(t, tp.Tensor) and t.device == tp.device("cuda", 0)
    assert t.shape == (3, 4) and t.dtype == _convert.tp_dtype(dtype)
    a = t.native
    assert isinstance(a, cupy.ndarray) and a.data.ptr == base.data_ptr()
    assert a.strides == tuple(s * base.element_size() for s in base.stride())
    assert a.data.mem.size == base.nbytes           # the whole tensor, nothing more
    assert _convert._CUPY_NDARRAY[0] is cupy.ndarray    # result_to_torch's fast case is armed


def test_strided_cuda_tensor_crosses_with_its_strides_and_offset(cuda_backend):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    view = base[1:, ::2].t()                        # offset, non-contiguous
    t = _convert._cuda_to_tp(_TorchCudaStandIn(view, index=0))
    a = t.native
    assert t.shape == tuple(view.shape) and a.data.ptr == view.data_ptr()
    assert a.strides == tuple(s * 4 for s in view.stride())
    # the memory spanned: from the first element to the last one the view reaches
    span = (sum((n - 1) * s for n, s in zip(view.shape, view.stride())) + 1) * 4
    assert a.data.mem.size == span


def test_cuda_tensor_of_a_dtype_tensorplay_lacks_is_refused(cuda_backend):
    with pytest.raises(_convert.BridgeError, match="no TensorPlay equivalent"):
        _convert._cuda_to_tp(_TorchCudaStandIn(torch.zeros(2, dtype=torch.complex64)))


class _DeviceArray:
    """A CuPy array's DLPack surface over cpu tensor ``t``'s memory: records the stream each
    ``__dlpack__`` call asks for; ``toDlpack`` warns as CuPy 14's does (shown by default:
    a ``UserWarning``)."""

    def __init__(self, t):
        self.t, self.size, self.streams = t, t.numel(), []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        return self.t.__dlpack__()          # (a cpu tensor takes no stream)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def toDlpack(self):  # noqa: N802 - CuPy's name
        warnings.warn(DEPRECATED, cupy.VisibleDeprecationWarning, stacklevel=2)
        return self.t.__dlpack__()


def test_cuda_result_goes_back_by_dlpack_without_deprecated_call_nor_stream_order(monkeypatch):
    """A kernel's CuPy result becomes torch's by ``__dlpack__(stream=-1)`` (no event recorded,
    no stream waited on: it was made on torch's current stream) straight into torch's C
    import; never by CuPy's deprecated ``toDlpack()``, whose warning the bridge printed."""
    monkeypatch.setattr(_convert, "_CUPY_NDARRAY", [_DeviceArray])
    src = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = _DeviceArray(src)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = _convert.result_to_torch(types.SimpleNamespace(native=a, raw_dtype=tp.float32))
    assert [str(w.message) for w in seen] == []
    assert a.streams == [-1]
    assert isinstance(out, torch.Tensor) and out.data_ptr() == src.data_ptr()
    assert out.shape == src.shape and out.stride() == src.stride()


def test_same_stream_to_torch_takes_any_dlpack_producer():
    src = torch.arange(4, dtype=torch.int32)[1:]
    a = _DeviceArray(src)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _convert.same_stream_to_torch(a)
    assert a.streams == [-1] and out.data_ptr() == src.data_ptr() and out.tolist() == [1, 2, 3]


def test_bridge_source_makes_no_deprecated_dlpack_call():
    """No ``toDlpack`` (CuPy's deprecated export) anywhere in the bridge, on any path."""
    import inspect

    import tensorplay_torch
    from tensorplay_torch import _autograd, _fake
    for m in (tensorplay_torch, _convert, _register, _autograd, _fake):
        assert ".toDlpack(" not in inspect.getsource(m), m.__name__


class _Ctx:
    """A context manager that logs its entry and exit into ``log``."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self

    def __exit__(self, *exc):
        self.log.append(("exit", self.name))
        return False


def _fake_cuda(monkeypatch, torch_device, runtime_device, log, cupy_stream=0):
    """``_register``'s CUDA functions as stand-ins: torch's current device ``torch_device``
    (stream 0x1234), the CUDA runtime's (CuPy's) ``runtime_device``, CuPy's current stream
    ``cupy_stream`` (its pointer)."""
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        ExternalStream=lambda ptr, index: _Ctx(log, ("stream", ptr, index)),
        Device=lambda index: _Ctx(log, ("device", index))))
    monkeypatch.setattr(_register, "_CUDA",
                        [fake, lambda: torch_device, lambda index: 0x1234,
                         lambda: runtime_device,
                         lambda: types.SimpleNamespace(ptr=cupy_stream)])
    monkeypatch.setattr(_register, "_STREAMS", {})


@pytest.mark.parametrize("torch_device, runtime_device", [(0, 0), (1, 1), (1, 0)])
def test_cuda_kernels_run_in_torchs_stream_and_device(monkeypatch, torch_device, runtime_device):
    """The kernel runs inside torch's current stream; CuPy's device is switched (and switched
    back) only when the runtime's current device is not torch's."""
    log: list = []
    _fake_cuda(monkeypatch, torch_device, runtime_device, log)

    def body_kernel(x, *, k):
        log.append(("body", x, k))
        return x * k
    kernel = _register._on_torch_stream(body_kernel)
    assert kernel(3, k=2) == 6 and kernel(1, k=1) == 1
    stream = ("stream", 0x1234, torch_device)
    device = [] if torch_device == runtime_device else [("device", torch_device)]
    once = ([("enter", d) for d in device] + [("enter", stream)])
    leave = [("exit", stream)] + [("exit", d) for d in device]
    assert log == once + [("body", 3, 2)] + leave + once + [("body", 1, 1)] + leave
    assert list(_register._STREAMS) == [(torch_device, 0x1234)]   # one stream object, reused


def test_cuda_kernels_enter_nothing_when_cupys_stream_already_is_torchs(monkeypatch):
    """CuPy's current stream with torch's stream pointer (both on the default stream, the
    common case): the kernel runs as it is, no stream object is made or entered; on another
    device the device and stream are still entered."""
    log: list = []
    _fake_cuda(monkeypatch, 0, 0, log, cupy_stream=0x1234)

    def body_kernel(x):
        log.append(("body", x))
        return x + 1
    kernel = _register._on_torch_stream(body_kernel)
    assert kernel(1) == 2 and kernel(2) == 3
    assert log == [("body", 1), ("body", 2)]
    assert _register._STREAMS == {}
    log.clear()
    _fake_cuda(monkeypatch, 1, 0, log, cupy_stream=0x1234)
    assert kernel(5) == 6
    assert log == [("enter", ("device", 1)), ("enter", ("stream", 0x1234, 1)), ("body", 5),
                   ("exit", ("stream", 0x1234, 1)), ("exit", ("device", 1))]


def test_cuda_kernel_leaves_the_contexts_when_the_body_raises(monkeypatch):
    log: list = []
    _fake_cuda(monkeypatch, 1, 0, log)

    def bad_kernel():
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        _register._on_torch_stream(bad_kernel)()
    assert log[-2:] == [("exit", ("stream", 0x1234, 1)), ("exit", ("device", 1))]


def test_cupy_array_over_host_memory_is_what_the_crossing_builds(cuda_backend):
    """The stand-in above is faithful: a cpu tensor's memory under a CuPy array reads back the
    same values through NumPy (host memory)."""
    base = torch.arange(5, dtype=torch.float32)
    a = _convert._cuda_to_tp(_TorchCudaStandIn(base)).native
    host = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * 5).from_address(a.data.ptr))
    assert host.tolist() == base.tolist()
