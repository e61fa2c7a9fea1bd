"""The launch stand-ins of ``benchmarks/bench_cuda_host.py`` for the cuda host-path test files
(test_cuda_host59, test_cuda_host60, test_cuda_inline61, test_cuda_copy61): a one-GPU cuda
backend on a machine without one, whose kernels are compiled for real by Triton and whose
driver launches are handed to a recorder instead of the GPU.

``stand_ins(record, nbytes)`` is a fixture's body (``with stand_ins(...) as be: yield be``);
``param_bytes`` reads a recorded launch's parameters; ``compiled_or_skip`` runs the call that
compiles a kernel, skipping the test where Triton cannot (no ``ptxas``)."""

from __future__ import annotations

import contextlib
import ctypes
import pathlib

import pytest

import tensorplay as tp


@contextlib.contextmanager
def stand_ins(record, nbytes: int, *, bf16: bool = False, register: bool = False):
    """A fresh one-GPU ``CUDABackend`` over the stand-ins while the block runs (then everything
    put back). ``record(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra)`` gets each
    ``cuLaunchKernel``; ``nbytes``: the host memory CuPy's allocator hands out (every
    allocation gets the same block); ``bf16``: the backend's kernels built bfloat16-correct;
    ``register``: the backend serves the cuda device while the block runs (views and ops
    through the dispatcher), forgotten after. Skips on a machine with a GPU (the stand-ins hand
    host memory out as device memory: a real kernel writing there poisons the CUDA context)
    and where CuPy, Triton or the plugins are missing."""
    if tp.plugins.device_status("cuda")[0]:
        pytest.skip("a GPU is present: the stand-ins are for machines without one")
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    pytest.importorskip("tensorplay_cuda")
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    from tensorplay_cuda import _cupy_install
    from tensorplay_cuda.backend import CUDABackend
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_cuda_host
    previous = bench_cuda_host.launch_stand_ins(mp.setattr, record, nbytes)
    mp.setattr(_cupy_install, "setup_problem", lambda: None)
    handle = None
    try:
        be = CUDABackend()
        be._count = 1
        if bf16:
            be.native_dtype(tp.bfloat16)
        if register:
            handle = tp.backends.register(be)
        yield be
    finally:
        if handle is not None:
            handle.destroy()
        cupy.cuda.set_allocator(previous)
        mp.undo()


def param_bytes(params: int, n: int) -> bytes:
    """The first ``n`` 8-byte slots of a recorded launch's parameter block (``params``: the
    address of its array of slot addresses), concatenated."""
    from tensorplay_triton import _cupylaunch
    slots = (ctypes.c_void_p * _cupylaunch.MAX_PARAMS).from_address(params)
    return b"".join(ctypes.string_at(slots[i], 8) for i in range(n))


def compiled_or_skip(call):
    """``call()`` (the call that compiles: the stand-ins launch nothing), skipping the test where
    Triton cannot compile (no ``ptxas``); any other failure is raised."""
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - only a missing ptxas is a reason to skip
        if "ptxas" in str(e):
            pytest.skip(f"Triton cannot compile here: {e}")
        raise
