"""First call vs later calls of a realistic autotuned Triton kernel under the interpreter (cpu).

A fused softmax cross-entropy forward + gradient in the style of kernel libraries (Liger, Unsloth):
one program per row, two loops over the vocabulary in blocks, nested ``@triton.jit`` helpers that
call ``tl.max``/``tl.sum``, and ``@triton.autotune`` over eight configurations that differ only in
``num_warps``/``num_stages`` (which the interpreter ignores). The first call used to time every
configuration and to re-patch ``triton.language`` at every nested call.

    python benchmarks/triton_interp_first_call.py [ROWS] [VOCAB]

Prints the first call, the median of the next calls, and their ratio (goal: <= 2), after checking
the result against NumPy.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import tensorplay as tp
import triton
import triton.language as tl
from tensorplay_triton import wrap_triton


@triton.jit
def _block_max(x):
    return tl.max(x, 0)


@triton.jit
def _block_sumexp(x, m):
    return tl.sum(tl.exp(x - m), 0)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 128}, num_warps=w, num_stages=s)
             for w in (2, 4, 8, 16) for s in (2, 3)],
    key=["V"])
@triton.jit
def cross_entropy_kernel(logits_ptr, labels_ptr, loss_ptr, grad_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row * V
    label = tl.load(labels_ptr + row)
    m = -float("inf")
    d = 0.0
    for start in range(0, V, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(base + c, mask=c < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, _block_max(x))
        d = d * tl.exp(m - m_new) + _block_sumexp(x, m_new)
        m = m_new
    lse = m + tl.log(d)
    x_label = tl.load(base + label).to(tl.float32)
    tl.store(loss_ptr + row, lse - x_label)
    for start in range(0, V, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(base + c, mask=c < V, other=0.0).to(tl.float32)
        g = tl.exp(x - lse) - tl.where(c == label, 1.0, 0.0)
        tl.store(grad_ptr + row * V + c, g, mask=c < V)


def run(rows: int, vocab: int):
    rng = np.random.default_rng(0)
    h = rng.standard_normal((rows, vocab)).astype(np.float32)
    lab = rng.integers(0, vocab, rows).astype(np.int32)
    logits, labels = tp.tensor(h), tp.tensor(lab)
    loss, grad = tp.empty(rows), tp.empty(rows, vocab)
    k = wrap_triton(cross_entropy_kernel)

    def call():
        t0 = time.perf_counter()
        k[(rows,)](logits, labels, loss, grad, vocab)
        return time.perf_counter() - t0

    first = call()
    m = h.max(1, keepdims=True)
    lse = (m + np.log(np.exp(h - m).sum(1, keepdims=True)))[:, 0]
    np.testing.assert_allclose(loss.numpy(), lse - h[np.arange(rows), lab], rtol=1e-4, atol=1e-5)
    ref = np.exp(h - lse[:, None])
    ref[np.arange(rows), lab] -= 1
    np.testing.assert_allclose(grad.numpy(), ref, rtol=1e-4, atol=1e-6)
    later = statistics.median(call() for _ in range(5))
    print(f"cross-entropy {rows}x{vocab} (8 autotune configs, num_warps/num_stages only): "
          f"first call {first:.3f} s, later calls (median of 5) {later:.3f} s, "
          f"ratio {first / later:.2f}")
    return first, later


if __name__ == "__main__":
    r = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    v = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    run(r, v)
