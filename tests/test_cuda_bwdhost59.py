"""Host work of the cuda backward of ``x.sum(1).mean()`` and ``x.exp().sum(1).log().mean()``
(issue 32 item 5): the row broadcast copied into ``.grad`` (``bcast.copy_broadcast``) is one
packed driver call through ``fill.launch_packed``, and a chain's kept plan
(``triton_fusion._Plan``, the broadcast operand's ``mul`` of the log-sum-exp's backward) is one
generated function making the launch ``_Plan._generic`` makes.

No GPU needed for most: ``benchmarks/bench_cuda_backward_host.setup`` installs the launch
stand-ins (the driver call recorded, Triton compiling for an sm_90 target, host memory for CuPy's
allocator). ``@pytest.mark.cuda`` tests compare values with the cpu on a GPU.
"""

from __future__ import annotations

import ctypes
import pathlib
import struct
import threading

import numpy as np
import pytest

import tensorplay as tp

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
from tensorplay_cuda import bcast, fill  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def host_allocator():
    """CuPy's allocator handing out host memory (a fresh 512-byte aligned block per request)."""
    keep = []

    def alloc(size):
        h = np.zeros(size + 512, np.uint8)
        keep.append(h)
        base = -h.ctypes.data % 512
        mem = cupy.cuda.UnownedMemory(h.ctypes.data + base, size, h, device_id=0)
        return cupy.cuda.MemoryPointer(mem, 0)
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(alloc)
    try:
        yield
    finally:
        cupy.cuda.set_allocator(previous)


@pytest.fixture
def packed(monkeypatch, host_allocator):
    """``fill``'s driver call recorded (function, grid, block, shared, stream, params address and
    the parameter block's first 40 bytes), device 0 current, its stream the null stream, and
    the row-fill kernels' function addresses known (0x2000 + element size)."""
    calls = []

    def launch(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        calls.append((f, (g0, g1, g2), (b0, b1, b2), shared, stream, params, extra,
                      fill._PARAMS.block[0].raw[:40]))
    monkeypatch.setattr(fill, "_launch", [launch])
    monkeypatch.setattr(fill, "_functions", {
        (f"tp_rowfill_{k}", 0): (None, 0x2000 + k) for k in (1, 2, 4, 8)})
    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: 0)
    null = cupy.cuda.Stream.null
    monkeypatch.setattr(cupy.cuda, "get_current_stream", lambda device_id=-1: null)
    monkeypatch.setattr(fill._PARAMS, "block", fill._PARAMS.block[:3] + ({0},))
    return calls


def _broadcast(shape, strides, dtype):
    """A CuPy view of ``shape`` with element ``strides`` (0: broadcast) over a fresh array."""
    d = np.dtype(dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    base = cupy.ndarray((span,), d)
    return cupy.lib.stride_tricks.as_strided(base, shape, tuple(s * d.itemsize for s in strides))


# (shape, the source's element strides, dtype, (R, sr)): the rows the kernel writes and the
# element stride between their values
ROWS = [
    ((4096, 4096), (1, 0), np.float32, (4096, 1)),     # sum(1)'s gradient in .grad
    ((300, 1024), (1, 0), np.float16, (300, 1)),
    ((70000, 2), (1, 0), np.float64, (70000, 1)),      # more rows than blockIdx.y takes
    ((512, 256), (1, 0), np.uint8, (512, 1)),
    ((256, 512), (2, 0), np.float32, (256, 2)),        # every other element
    ((2, 3, 65536), (3, 1, 0), np.float32, (6, 1)),    # two leading dims merged
    ((70000,), (0,), np.float32, (1, 0)),              # one value everywhere
    ((8, 1, 8192), (1, 0, 0), np.float32, (8, 1)),     # a size-1 dim dropped
]


@pytest.mark.parametrize("shape, strides, dtype, rows", ROWS)
def test_copy_broadcast_is_one_packed_driver_call(packed, shape, strides, dtype, rows):
    """Each layout the row fill takes is one ``cuLaunchKernel`` of ``tp_rowfill_<size>``: grid
    ``(min(64, ceil(C*size/16/256)), min(65535, R))``, 256 threads, no shared memory, the current
    stream, this thread's parameter block holding the output's and the source's addresses,
    ``R``, the 16-byte blocks per row and the source's element stride between rows."""
    d = np.dtype(dtype)
    src = _broadcast(shape, strides, d)
    dst = cupy.ndarray(shape, d)
    assert bcast.copy_broadcast(cupy, dst, src) is True
    r, sr = rows
    n16 = dst.size // r * d.itemsize // 16
    gx = min(64, -(-n16 // 256))
    (call,) = packed
    f, grid, block, shared, stream, params, extra, raw = call
    assert f == 0x2000 + d.itemsize
    assert grid == (gx, min(65535, r), 1) and block == (256, 1, 1) and shared == 0 and extra == 0
    assert stream == cupy.cuda.Stream.null.ptr and params == fill._PARAMS.block[1]
    assert struct.unpack("=QQqqq", raw) == (dst.data.ptr, src.data.ptr, r, n16, sr)
    # the parameter block: each slot's address in the array cuLaunchKernel reads
    slots = (ctypes.c_void_p * 5).from_address(params)
    base = ctypes.addressof(fill._PARAMS.block[0])
    assert [slots[i] for i in range(5)] == [base + 8 * i for i in range(5)]


@pytest.mark.parametrize("shape, strides", [((3, 70000), (0, 1)),     # one row repeated
                                            ((65536, 3), (1, 0)),     # 12-byte rows
                                            ((4096, 8), (1, 0)),      # below MIN_ELEMENTS
                                            ((4, 5, 8192), (10, 1, 0)),  # three dims after merging
                                            ((4096, 64), (-1, 0))])   # a negative stride
def test_what_the_row_fill_declines_launches_nothing(packed, shape, strides):
    if strides[0] < 0:
        src = _broadcast(shape, (1, 0), np.float32)[::-1]
    else:
        src = _broadcast(shape, strides, np.float32)
    dst = cupy.ndarray(shape, np.float32)
    assert bcast.copy_broadcast(cupy, dst, src) is False
    assert packed == []


def test_a_threads_first_row_fill_goes_through_cupy_then_packed(packed, monkeypatch):
    """A thread with no launch on the device yet launches through CuPy's ``Function`` call (it
    makes the device's context current), with CuPy's argument forms; its next launch is packed.
    The set of devices is the thread's, shared with ``fill.filled``'s launches."""
    seen = []

    class Function:
        ptr = 0x3000

        def __call__(self, grid, block, args):
            seen.append((grid, block, args))
    monkeypatch.setattr(fill, "_functions", {("tp_rowfill_4", 0): (Function(), 0x3000)})
    out = []

    def work():
        src = _broadcast((4096, 64), (1, 0), np.float32)
        dst = cupy.ndarray((4096, 64), np.float32)
        out.append(bcast.copy_broadcast(cupy, dst, src))
        out.append(bcast.copy_broadcast(cupy, dst, src))
        out.append((dst, src, set(fill._PARAMS.ready)))
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert out[:2] == [True, True]
    dst, src, ready = out[2]
    (grid, block, args), = seen
    assert grid == (1, 4096) and block == (256,)
    assert args[0] is dst and args[1] is src and [(a.__class__, int(a)) for a in args[2:]] == [
        (np.int64, 4096), (np.int64, 16), (np.int64, 1)]
    assert ready == {0}
    (call,) = packed
    assert call[0] == 0x3000 and struct.unpack("=QQqqq", call[-1]) == (
        dst.data.ptr, src.data.ptr, 4096, 16, 1)


# -- the two backwards under the stand-ins -----------------------------------------------------------

@pytest.fixture(scope="module")
def backward():
    """``bench_cuda_backward_host.setup``'s stand-ins (module scope; undone after, the backend
    it registers for the ``cuda`` device forgotten). Not on a machine with a GPU: its real
    backend is loaded there, and the stand-ins would stand in for its launches."""
    if CUDA_OK:
        pytest.skip("a GPU is present: the stand-ins are for machines without one")
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(BENCH))
    import bench_cuda_backward_host as H
    previous = cupy.cuda.get_allocator()
    handles = []
    try:
        try:
            yield H.setup(mp.setattr, n=2048, handles=handles)   # (eager.THRESHOLD elements)
        except Exception as e:  # noqa: BLE001 - only a missing ptxas is a reason to skip
            if "ptxas" in str(e):
                pytest.skip(f"Triton cannot compile here: {e}")
            raise
    finally:
        for h in handles:
            h.destroy()
        cupy.cuda.set_allocator(previous)
        mp.undo()


def test_sum_mean_backward_fills_grad_with_one_packed_row_fill(backward):
    """``x.sum(1).mean()``'s backward: the seed's fill, the mean's division of its broadcast
    seed (one launch of the generated kernel reading the element once, session 60: no CuPy
    ufunc) and ``.grad``'s row fill, each one driver call (no CuPy ``RawKernel`` call)."""
    be, x, launched, stubbed = backward
    x.grad = None
    loss = x.sum(1).mean()
    launched.clear()
    stubbed.clear()
    loss.backward()
    assert [f for f, _, _ in launched] == [0x1000, 0x1000, 0x2004]
    assert launched[1][1] == (2, 1, 1)                   # 2048 elements, 1024 a program
    assert launched[2][1] == (2, 2048, 1) and launched[2][2] == (256, 1, 1)
    assert stubbed == []
    assert x.grad.shape == (2048, 2048) and x.grad.stride() == (2048, 1)


def test_lse_backward_mul_takes_the_plans_generated_call(backward):
    """``x.exp().sum(1).log().mean()``'s backward: the row broadcast's ``mul`` by ``exp(x)`` is
    the chain's kept plan, one driver call from ``_plan_call``'s function; that function's launch
    is ``_Plan._generic``'s -- function, grid, threads, stream and the parameter block, byte for
    byte (the blocks' direction alternating as ``_next_flip`` says) -- and it returns None,
    launching nothing, for arrays of another 16-byte alignment."""
    from tensorplay_cuda import eager
    from tensorplay_triton import _cupylaunch
    be, x, launched, stubbed = backward
    x.grad = None
    loss = x.exp().sum(1).log().mean()
    launched.clear()
    loss.backward()
    # (the seed's fill, the mean's division, log's division, the broadcast's mul)
    assert len(launched) == 4 and launched[3][1] == (2048 * 2048 // 1024, 1, 1)
    ch = eager._chain("mul", 2, None, tp.float32, be)
    (plan,) = [p for k, p in ch._plans.items() if k[2] == (4, 0)]
    assert "GO(v" in plan.call.source
    row = cupy.ndarray((2048,), np.float32)
    a = cupy.broadcast_to(row[:, None], (2048, 2048))
    e = cupy.ndarray((2048, 2048), np.float32)
    recs = []
    launch = plan.direct.go.__globals__["LAUNCH"]

    def record(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        slots = (ctypes.c_void_p * _cupylaunch.MAX_PARAMS).from_address(params)
        raw = b"".join(ctypes.string_at(slots[i], 8) for i in range(10))
        recs.append((f, (g0, g1, g2), (b0, b1, b2), shared, stream, extra, raw))
        launch(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra)
    plan.direct.go.__globals__["LAUNCH"] = record
    try:
        for fn in (plan.call, plan._generic, plan.call, plan._generic):
            r = fn([a, e])
            assert len(r) == 1 and r[0].shape == (2048, 2048) and r[0].dtype == np.float32
            assert r[0]._c_contiguous
        off = cupy.ndarray((2048 * 2048 + 4,), np.float32)[1:1 + 2048 * 2048].reshape(2048, 2048)
        assert plan.call([a, off]) is None and plan._generic([a, off]) is None
    finally:
        plan.direct.go.__globals__["LAUNCH"] = launch
    assert len(recs) == 4
    # (slots of 8 bytes: the inputs', the output's and fconst's addresses, N, then flip)
    flips = [struct.unpack_from("=i", r[-1], 40)[0] for r in recs]
    # (the stand-in allocator hands out one block: every call's addresses are the same)
    for r in recs:
        assert r[:6] == recs[0][:6]
        assert r[-1][:40] == recs[0][-1][:40] and r[-1][48:] == recs[0][-1][48:]
    grid = recs[0][1][0]
    assert sorted(flips[:2]) == [0, grid - 1] and flips[2:] == flips[:2]


# -- on a GPU: the values ----------------------------------------------------------------------------

@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("graph", ["sum_mean", "lse_mean"])
def test_on_a_gpu_the_backwards_give_the_cpus_gradients(graph):
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((1024, 768)).astype(np.float32)
    f = (lambda t: t.sum(1).mean()) if graph == "sum_mean" else \
        (lambda t: t.exp().sum(1).log().mean())
    grads = []
    for dev in ("cpu", "cuda"):
        x = tp.tensor(xn, device=dev).requires_grad_()
        for _ in range(3):                   # (the kept launches from the second call on)
            x.grad = None
            f(x).backward()
        grads.append(x.grad.cpu().numpy())
    if graph == "sum_mean":
        np.testing.assert_array_equal(grads[1], grads[0])
    else:
        np.testing.assert_allclose(grads[1], grads[0], rtol=2e-6, atol=1e-12)


@pytest.mark.cuda
@needs_cuda
def test_on_a_gpu_row_fills_from_a_new_thread_and_after_give_the_broadcast():
    """The first row fill of a thread (through CuPy) and the packed ones after, in float32,
    float16, float64 and uint8 rows: the broadcast's values."""
    out = []

    def work():
        for dt in (tp.float32, tp.float16, tp.float64, tp.uint8):
            col = (tp.arange(4096, device="cuda") % 251).to(dt).reshape(4096, 1)
            for _ in range(2):
                out.append((col.cpu().numpy(), col.expand(4096, 64).contiguous().cpu().numpy()))
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert len(out) == 8
    for col, got in out:
        np.testing.assert_array_equal(got, np.broadcast_to(col, (4096, 64)))


def test_a_kernel_fetched_from_a_module_launches_through_its_compiled_function(monkeypatch):
    """CuPy 14's ``RawModule.get_function`` gives a ``RawKernel`` (no ``ptr``): the packed launch
    keeps its compiled ``Function`` (``RawKernel.kernel``), whose address the driver call takes.
    Taking the ``RawKernel`` itself raised ``AttributeError: ... 'ptr'`` on every row-broadcast
    copy on a GPU (session 60's H100 run); the stand-ins had known the address beforehand."""
    class Compiled:                      # cupy.cuda.function.Function: ptr and __call__
        ptr = 0x4000

    class Kernel:                        # cupy.RawKernel: no ptr; .kernel compiles
        kernel = Compiled()
    monkeypatch.setattr(fill, "_functions", {})
    monkeypatch.setattr(fill, "_load_launch", lambda: None)
    f = fill.function("tp_rowfill_4", 0, Kernel)
    assert f == (Kernel.kernel, 0x4000)
    assert fill.function("tp_rowfill_4", 0, Kernel) is f           # kept per device
    plain = Compiled()
    assert fill.function("tp_fill16", 0, lambda: plain) == (plain, 0x4000)   # a Function as is
