"""A kernel compiled on one thread while another thread runs an interpreted launch.

Triton's interpreter works by patching ``triton.language`` (its builtins, ``tl.tensor``'s methods,
names bound in the kernel modules' globals) for the length of a launch. Those are process-wide
module attributes, so a compile on another thread during that window -- a cuda kernel's first
launch, torch's autograd thread running a backward formula, tensorplay-cuda's generated kernels
-- read the interpreter's functions and failed in Triton's frontend with
``AttributeError: 'block_argument' object has no attribute 'dtype'`` (found on the GPU run of the
Liger-Kernel corpus through the torch bridge: the ``layer_norm``/``rms_norm`` backward kernels'
``min(...)``). The frontend must wait for the launch to end, and a launch for a compile.

CI has no GPU: kernels are compiled for an sm_90 target (Triton's compiler needs no GPU), while
the interpreted launches run on cpu tensors through ``wrap_triton``.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

os.environ.pop("TRITON_INTERPRET", None)
triton = pytest.importorskip("triton", reason="triton is not installed")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")

import tensorplay
import triton.language as tl
from tensorplay.library import wrap_triton


@triton.jit
def _row_clamp(x_ptr, out_ptr, n_rows, n_cols, rows_per_program: tl.constexpr,
               BLOCK: tl.constexpr):
    # the shape of Liger's backward kernels: builtin min() of a tensor and an int argument,
    # a loop over rows, masked loads, a reduction
    pid = tl.program_id(0).to(tl.int64)
    row_start = pid * rows_per_program
    row_end = min((pid + 1) * rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(row_start, row_end):
        x = tl.load(x_ptr + r * n_cols + cols, mask=mask, other=0.0)
        acc += tl.maximum(x, 0.0)
    tl.store(out_ptr + pid * n_cols + cols, acc / tl.sum(acc, axis=0), mask=mask)


def _compile_for_gpu():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32",
           "rows_per_program": "constexpr", "BLOCK": "constexpr"}
    src = ASTSource(_row_clamp, signature=sig, constexprs={(4,): 2, (5,): 32})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32))


def _interpret_once():
    x = tensorplay.randn(6, 20)
    out = tensorplay.empty(3, 20)
    wrap_triton(_row_clamp)[(3,)](x, out, 6, 20, rows_per_program=2, BLOCK=32)
    return out


def test_compile_while_another_thread_interprets(monkeypatch, tmp_path):
    # every compile runs Triton's frontend (no cache hit from an earlier compile or run)
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    _compile_for_gpu()                      # warm: Triton's imports, the backend
    _interpret_once()
    stop = threading.Event()
    launches = [0]
    errors: list = []

    def interpret():
        try:
            while not stop.is_set():
                _interpret_once()
                launches[0] += 1
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    t = threading.Thread(target=interpret, daemon=True)
    t.start()
    try:
        while launches[0] < 1 and t.is_alive():
            time.sleep(0.001)
        # several compiles, each racing the next interpreted launch
        for _ in range(6):
            k = _compile_for_gpu()
            assert "ptx" in k.asm
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors
    assert launches[0] >= 1                 # the race was real: launches ran meanwhile
    # the interpreted launches computed what they should, and still do
    x = tensorplay.randn(6, 20)
    out = tensorplay.empty(3, 20)
    wrap_triton(_row_clamp)[(3,)](x, out, 6, 20, rows_per_program=2, BLOCK=32)
    rel = x.clamp(min=0).reshape(3, 2, 20).sum(1)
    expect = rel / rel.sum(1, keepdim=True)
    assert tensorplay.allclose(out, expect, rtol=1e-5, atol=1e-6)
