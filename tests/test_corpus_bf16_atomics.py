"""bfloat16 atomics under Triton's interpreter (tensorplay-triton's cpu path).

Found by the corpus: Liger-Kernel's group_norm backward accumulates dW and dB with
``tl.atomic_add(DW_ptr + channel_idx, dW.to(dtype))`` into bfloat16 buffers for bfloat16 inputs;
on cpu Triton's interpreter refused it (``InterpreterError: ValueError('Unsupported data type')``:
its C++ atomic has no bfloat16, which Triton stores as uint16), as it does under torch with
``TRITON_INTERPRET=1``. A GPU has bf16 atomics, and tensorplay-triton makes the interpreter accept
what compiled kernels accept: each atomic lane is applied in order (lanes may share an address),
in float32 rounded to bfloat16 after each operation, returning the old values.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
pytest.importorskip("ml_dtypes", reason="bfloat16 under the interpreter needs ml_dtypes")
np = pytest.importorskip("numpy")

import tensorplay
import triton
import triton.language as tl
from tensorplay.library import wrap_triton

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from corpus._upstream import UpstreamUnavailable  # noqa: E402

BF16 = tensorplay.bfloat16


@triton.jit
def _atomic_add(P, V, IDX, OLD, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(V + offs, mask=mask)
    old = tl.atomic_add(P + tl.load(IDX + offs, mask=mask, other=0), v, mask=mask)
    tl.store(OLD + offs, old, mask=mask)


def _run(start, vals, idx, n, dtype):
    p = tensorplay.tensor(np.array(start, np.float32)).to(dtype)
    v = tensorplay.tensor(np.array(vals, np.float32)).to(dtype)
    i = tensorplay.tensor(np.array(idx, np.int32))
    old = tensorplay.zeros(len(vals), dtype=dtype)
    wrap_triton(_atomic_add)[(1,)](p, v, i, old, n, BLOCK=len(vals))
    return p.float().tolist(), old.float().tolist()[:n]


@pytest.mark.parametrize("n", [8, 6], ids=["all-lanes", "masked-lanes"])
def test_bf16_atomic_add_agrees_with_float32_where_exact(n):
    """Values exact in bf16: memory and returned old values as float32's, lanes sharing an
    address applied in lane order, masked lanes (n < BLOCK) left alone."""
    start = [0.5, -2.0, 4.0, 8.0]
    vals = [1.0, -3.0, 0.25, 6.0, -1.5, 2.0, 16.0, -8.0]
    idx = [0, 0, 1, 2, 0, 1, 3, 3]
    want = _run(start, vals, idx, n, tensorplay.float32)
    assert _run(start, vals, idx, n, BF16) == want


def test_bf16_atomic_add_rounds_after_each_operation():
    """256 + 1 is not a bfloat16 (8 significant bits): each of eight atomic adds of 1.0 rounds
    back to 256, as a GPU's bf16 atomic does (float32 would reach 264)."""
    mem, old = _run([256.0], [1.0] * 8, [0] * 8, 8, BF16)
    assert mem == [256.0] and old == [256.0] * 8
    mem32, old32 = _run([256.0], [1.0] * 8, [0] * 8, 8, tensorplay.float32)
    assert mem32 == [264.0] and old32 == [256.0 + k for k in range(8)]


def test_liger_group_norm_in_bfloat16():
    """The corpus op that found it: forward and backward in bfloat16 against float32."""
    try:
        from corpus.liger import ops as liger_ops   # Liger-Kernel's kernels, from its wheel
    except UpstreamUnavailable as e:
        pytest.skip(str(e))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 10)).astype(np.float32)
    w = (rng.random(6) + 0.5).astype(np.float32)
    b = rng.random(6).astype(np.float32)
    dy = rng.standard_normal((2, 6, 10)).astype(np.float32)
    res = {}
    for dt in (tensorplay.float32, BF16):
        args = [tensorplay.tensor(a).to(dt).requires_grad_() for a in (x, w, b)]
        y = liger_ops.group_norm(*args, 6, 3, 1e-5)[0]
        (y * tensorplay.tensor(dy).to(dt)).sum().backward()
        res[dt] = [t.detach().float().numpy() for t in (y, *[a.grad for a in args])]
        assert all(a.grad.dtype == dt for a in args)
    for got, want, what in zip(res[BF16], res[tensorplay.float32], ("y", "dx", "dw", "db")):
        np.testing.assert_allclose(got, want, rtol=0.05, atol=0.1, err_msg=what)
