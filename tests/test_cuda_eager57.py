"""Eager elementwise ops on cuda: bfloat16 ops take one launch at every size, and the dense case
asks no device per call with one GPU (issue 32 item 2).

CuPy has no bfloat16 arithmetic (its ufuncs compute and return float32 on bf16 arrays), so a
bf16 op's reference kernel is several launches: the operands cast to float32, the float32
ufunc, the result rounded back. After ``eager.WARMUP_CALLS`` calls of a (dtype, device[, number
class]) key, the eager dense case (``eager._dense``) launches the op's generated kernel once
instead -- below ``eager.THRESHOLD`` elements its unaligned launch, from there on the aligned
one kept by the large path (``eager._large``) -- computing in float32 and rounding to nearest
even once, as the reference does.

No GPU needed here: the kernels are compiled for an sm_90 target and the driver call is
recorded (``benchmarks/bench_cuda_host.launch_stand_ins``), so a call that ran anything but the
one launch (the reference kernel's CuPy launches) would raise for want of a driver. On a GPU,
tests/test_cuda_eager57_gpu.py checks that each call is one driver launch of the kept call and
that its bits are the reference kernel's (a module of its own: this one's stand-ins stay in
place while its tests run).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")

# private on purpose: the eager module's kept launches are what these pin down
from tensorplay._ops import _define  # noqa: E402
from tensorplay_cuda import eager  # noqa: E402
from tensorplay_cuda.backend import CUDABackend  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
BF16 = np.dtype(ml_dtypes.bfloat16)

# (op, operands: "xy" two tensors, a float, or "x" one tensor) -- the benchmark's four
# (bench_cuda_eager.py: mul(x, y), add(x, 1.0), relu, tanh) and others of a training step
CASES = [("mul", "xy"), ("add", 1.0), ("relu", "x"), ("tanh", "x"), ("sub", "xy"), ("rsub", 1.0),
         ("rsub", "xy"), ("mul", 0.5), ("div", "xy"), ("maximum", "xy"), ("neg", "x"),
         ("exp", "x")]
SIZES = [1 << 10, (1 << 16) + 3, eager.THRESHOLD, eager.THRESHOLD + 16]


def _needs_triton():
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")


def _call(adapter, operand, x, y):
    return adapter(x, y) if operand == "xy" else adapter(x) if operand == "x" else \
        adapter(x, operand)


@pytest.fixture(scope="module")
def stubbed():
    """The launch stand-ins (no GPU), a fresh one-GPU backend with bfloat16 enabled, and the
    recorded launches."""
    _needs_triton()
    launched = []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched.append((f, g0))
    import pathlib
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_cuda_host
    if tp.plugins.device_status("cuda")[0]:
        mp.undo()
        pytest.skip("a GPU is present: the stand-ins are for machines without one")
    previous = bench_cuda_host.launch_stand_ins(mp.setattr, launch_kernel,
                                                2 * (eager.THRESHOLD + 64))
    try:
        be = CUDABackend()
        be._count = 1
        be.native_dtype(tp.bfloat16)          # bf16 in use: the kernels built bf16-correct
        yield be, launched
    finally:
        cupy.cuda.set_allocator(previous)
        mp.undo()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op, operand", CASES)
def test_bf16_ops_are_one_launch_at_every_size_through_the_adapter(stubbed, op, operand, n):
    be, launched = stubbed
    kernel = be.kernels()[op]
    adapter = _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)
    dev = tp.device("cuda", 0)
    x = be.wrap(cupy.ndarray((n,), BF16), dev)
    y = be.wrap(cupy.ndarray((n,), BF16), dev)
    try:
        _call(adapter, operand, x, y)           # compiles (the stand-ins launch nothing)
    except Exception as e:  # noqa: BLE001 - only a missing ptxas is a reason to skip
        if "ptxas" in str(e):
            pytest.skip(f"Triton cannot compile here: {e}")
        raise
    for _ in range(3):
        before = len(launched)
        r = _call(adapter, operand, x, y)
        assert len(launched) == before + 1, (op, n)
        assert r.dtype is tp.bfloat16 and r.shape == (n,) and r._data.dtype is BF16
    # which launch ran: the dense case's own below THRESHOLD; from there on, the aligned one
    # kept by the large path where n and the addresses allow it (n % 16 == 0), else the
    # generated kernel through the chain
    key = (BF16, 0) if operand in ("xy", "x") else (BF16, 0, float)
    small = kernel.dense.launches.get(key)
    large = kernel.launch_large.launches.get(key)
    if n < eager.THRESHOLD:
        assert callable(small)
    elif n % 16 == 0:
        assert large is not None and callable(large[2])


def test_bf16_numbers_rounded_once_per_value_object(stubbed):
    """The number operand of a bf16 ``add``/``sub`` is rounded to bf16 first (torch's rule): the
    last rounding is kept per value object, and another value, class or sign is rounded
    afresh (``eager._scalar_rounding``)."""
    _, round_arg = eager._scalar_rounding("add", stubbed[0])
    v = 1.00390625 + 2 ** -12                # between two bf16 values: rounds up
    for value in (v, v, 1.0, 1, -0.0, 0.0, 3, 3.0, 1e39, -1e39, float("nan")):
        want = tp._dtype.round_scalar(value, tp.bfloat16)
        if value.__class__ is int:
            want = int(want)
        got = round_arg(value, BF16)
        assert got.__class__ is value.__class__
        assert got == want or (got != got and want != want), value
        if value == 0:
            assert np.copysign(1.0, got) == np.copysign(1.0, value)


@pytest.mark.parametrize("gpus", [1, 2])
def test_with_one_gpu_the_dense_case_asks_no_device_per_call(stubbed, monkeypatch, gpus):
    """The dense case's key carries the current device: with one visible GPU that is 0 and no
    ``getDevice`` is called per op (``eager._one_gpu``); with several it is asked per call (a
    thread may have switched). Either way the call is one launch."""
    asked = []
    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: asked.append(1) or 0)
    be = CUDABackend()
    be._count = gpus
    kernel = be.kernels()["mul"]
    a, b = cupy.ndarray((1000,), np.float32), cupy.ndarray((1000,), np.float32)
    dense = kernel._tp_dense_ufunc
    dense(a, b)                               # compiles (the stand-ins launch nothing)
    launched = stubbed[1]
    for call in (lambda: dense(a, b), lambda: dense(a, 2.0), lambda: be.kernels()["relu"].dense(a)):
        call()                                # (a first call of its key compiles)
        asked.clear()
        before = len(launched)
        call()
        assert len(launched) == before + 1
        assert len(asked) == (0 if gpus == 1 else 1)
