"""Gradients that are a broadcast of fewer elements (the backward of ``sum``) stay broadcast
views through the formulas that can read them as such: a 2-D ``matmul`` whose output gradient
is one element broadcast takes row and column sums instead of two full products. ``mean``'s
gradient is torch's: expanded, then divided -- a full contiguous tensor, as user backward code
(a Triton kernel reading it as contiguous) receives it under torch. Values are those of the formulas written out (bit
for bit where the arithmetic is the same); ``.grad`` is still a dense tensor of its own."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


def _hooked(y):
    """The gradients reaching ``y`` (a non-leaf), in order, as ``(strides, values)``."""
    seen = []
    y.register_hook(lambda g: seen.append((g.stride(), g.numpy().copy())))
    return seen


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_full_mean_hands_on_a_contiguous_gradient_as_torch(dtype):
    d = getattr(tp, dtype)
    x = tp.randn(5, 6).to(d).requires_grad_()
    y = x * 2.0
    seen = _hooked(y)
    y.mean().backward()
    (strides, g), = seen
    assert strides == (6, 1)                       # torch's layout: expanded, then divided
    want = (np.ones((), dtype) / np.array(30.0, dtype)).astype(dtype)   # the seed / n
    np.testing.assert_array_equal(g, np.broadcast_to(want, (5, 6)))
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(want * np.array(2, dtype),
                                                                  (5, 6)))
    assert x.grad.is_contiguous() and x.grad.dtype is d


@pytest.mark.parametrize("keepdim", [False, True])
def test_mean_over_a_dim_expands_then_divides_as_torch(keepdim):
    x = tp.randn(4, 7, 3, requires_grad=True)
    y = x * 1.5
    seen = _hooked(y)
    m = y.mean(1, keepdim=keepdim)
    go = tp.randn(*m.shape)
    m.backward(go)
    (strides, g), = seen
    assert strides == (21, 3, 1)                   # contiguous, as torch's
    q = go.numpy() / np.float32(7)                 # each element divided once: the same values
    want = np.broadcast_to(q if keepdim else q[:, None, :], (4, 7, 3))
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(x.grad.numpy(), want * np.float32(1.5))


def test_mean_gradient_of_an_empty_or_0d_input():
    e = tp.zeros(0, 3, requires_grad=True)
    e.mean(0).sum().backward()
    assert tuple(e.grad.shape) == (0, 3)
    s = tp.tensor(3.0, requires_grad=True)
    s.mean().backward()
    assert s.grad.item() == 1.0 and s.grad.shape == ()


def _mm_case(m=64, k=80, n=72, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


@pytest.mark.parametrize("reduce", ["sum"])
def test_matmul_of_a_one_element_gradient_is_row_and_column_sums(reduce):
    xn, wn = _mm_case()
    x, w = tp.tensor(xn, requires_grad=True), tp.tensor(wn, requires_grad=True)
    y = x @ w
    getattr(y, reduce)().backward()
    c = np.float32(1)
    # the formulas written out: c times w's row sums on every row, x's column sums on every column
    gx = np.broadcast_to(tp.tensor(wn).sum(1).numpy() * c, (64, 80))
    gw = np.broadcast_to((tp.tensor(xn).sum(0).numpy() * c)[:, None], (80, 72))
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(w.grad.numpy(), gw)
    # the textbook products, to float32 rounding
    ones = np.full((64, 72), c, np.float64)
    np.testing.assert_allclose(x.grad.numpy(), ones @ wn.T.astype(np.float64), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), xn.T.astype(np.float64) @ ones, rtol=1e-5,
                               atol=1e-5)
    for t in (x, w):                               # each .grad dense and its own
        assert t.grad.is_contiguous() and t.grad.grad_fn is None
    with tp.no_grad():
        x.grad.mul_(0.0)
    assert np.all(w.grad.numpy() == gw)


def test_matmul_one_element_gradient_only_where_needed_and_accumulating():
    xn, wn = _mm_case(seed=1)
    x, w = tp.tensor(xn, requires_grad=True), tp.tensor(wn)
    (x @ w).sum().backward()
    (x @ w).sum().backward()                       # accumulates on top
    gx = tp.tensor(wn).sum(1).numpy()
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(gx + gx, (64, 80)))
    assert w.grad is None
    x2, w2 = tp.tensor(xn), tp.tensor(wn, requires_grad=True)
    (x2 @ w2).sum().backward()
    assert x2.grad is None and w2.grad.shape == (80, 72)


def test_matmul_gradients_other_than_one_element_take_the_products():
    xn, wn = _mm_case(seed=2)
    x, w = tp.tensor(xn, requires_grad=True), tp.tensor(wn, requires_grad=True)
    (x @ w).sum(0).sum().backward()                # still one element: c = 1 broadcast
    go = np.random.default_rng(3).standard_normal((64, 72)).astype(np.float32)
    x.grad = w.grad = None
    (x @ w).backward(tp.tensor(go))                # a dense gradient: the products
    np.testing.assert_allclose(x.grad.numpy(), go @ wn.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), xn.T @ go, rtol=1e-4, atol=1e-4)
    x.grad = w.grad = None
    row = tp.tensor(go[:1]).expand(64, 72)         # a broadcast of a row, not of one element
    (x @ w).backward(row)
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(go[:1], (64, 72)) @ wn.T,
                               rtol=1e-4, atol=1e-4)


def test_matmul_one_element_gradient_under_create_graph():
    """Double backward through the sums: d/dw of sum((x.grad)^2), x.grad = w's row sums on
    every row, is 2 * m * (row sum of w) along each row of w."""
    xn, wn = _mm_case(m=64, k=64, n=64, seed=4)
    x, w = tp.tensor(xn, requires_grad=True), tp.tensor(wn, requires_grad=True)
    gx, = tp.autograd.grad((x @ w).sum(), x, create_graph=True)
    (gx * gx).sum().backward()
    r = wn.astype(np.float64).sum(1)
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(2 * 64 * r[:, None], (64, 64)),
                               rtol=1e-4, atol=1e-3)


def test_bench_cuda_backward_checks_and_times_every_graph_on_cpu(tmp_path):
    """``benchmarks/bench_cuda_backward.py --device cpu``: every graph's gradients checked
    against NumPy, then its table (three passes per graph); ``--device cuda`` without a GPU
    exits 2 (no CUDA driver here) -- where a GPU is present that run is the benchmark itself."""
    import json
    import pathlib
    import subprocess
    import sys
    script = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bench_cuda_backward.py"
    out = tmp_path / "figures.json"
    r = subprocess.run([sys.executable, str(script), "--device", "cpu", "--n", "64", "--iters",
                        "1", "--rounds", "1", "--no-torch", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [ln.split()[:2] for ln in r.stdout.splitlines()
            if ln.startswith(("mul_sum", "sum_mean", "lse_mean", "mm_sum"))]
    assert rows == [[g, p] for g in ("mul_sum", "sum_mean", "lse_mean", "mm_sum")
                    for p in ("fwd", "fwd+bwd", "bwd", "bwd_alone")]
    assert len(json.loads(out.read_text())["rows"]) == 16
    if not tp.plugins.device_status("cuda")[0]:
        r = subprocess.run([sys.executable, str(script), "--n", "64", "--json", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and "no CUDA GPU" in r.stderr, (r.returncode, r.stderr)


def _peak_bytes(fn):
    """The peak of memory allocated while ``fn()`` runs (NumPy reports its arrays to
    ``tracemalloc``)."""
    import tracemalloc
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("graph", ["sum1_mean", "sum0", "transposed", "mm_sum"])
def test_a_leaf_takes_a_gradient_that_is_not_row_major_in_one_copy(graph):
    """``.grad`` of a gradient that is a broadcast (``sum(dim)``/``mean``'s backward, the
    matmul's row and column sums) or a transposed view: a row-major tensor of its own with the
    gradient's values, written in one pass -- the backward allocates no more than the gradients
    it leaves (a clone of such a view copied it twice)."""
    m, n = 384, 256
    x = tp.randn(m, n, requires_grad=True)
    w = tp.randn(n, m, requires_grad=True)
    f = {"sum1_mean": lambda: x.sum(1).mean(), "sum0": lambda: (x.sum(0) * 3.0).sum(),
         "transposed": lambda: (x.t() * tp.ones(n, m)).sum(),
         "mm_sum": lambda: (x @ w).sum()}[graph]
    f().backward()                                     # warm-up (first-call caches)
    x.grad = w.grad = None
    loss = f()
    peak = _peak_bytes(loss.backward)
    kept = sum(t.grad.numel() * 4 for t in (x, w) if t.grad is not None)
    if graph == "transposed":
        kept += m * n * 4            # the mul's gradient, alive while its transpose is copied
    assert peak < kept + m * n * 4 // 4, (peak, kept)   # (small vectors aside)
    assert x.grad.stride() == (n, 1) and x.grad.grad_fn is None
    want = {"sum1_mean": np.float32(1) / np.float32(m), "sum0": np.float32(3.0),
            "transposed": np.float32(1.0)}
    if graph in want:
        np.testing.assert_array_equal(x.grad.numpy(), np.full((m, n), want[graph], np.float32))
    else:
        np.testing.assert_array_equal(
            x.grad.numpy(), np.broadcast_to(w.detach().sum(1).numpy(), (m, n)))
    x.grad.zero_()                                     # its own storage
    f().backward()
    assert np.all(x.grad.numpy() != 0)


def test_one_broadcast_gradient_shared_by_two_leaves_gives_each_its_own_copy():
    x = tp.randn(6, 5, requires_grad=True)
    w = tp.randn(6, 5, requires_grad=True)
    (x + w).sum().backward()        # add hands the sum's broadcast gradient to both inputs
    for t in (x, w):
        assert t.grad.stride() == (5, 1)
        np.testing.assert_array_equal(t.grad.numpy(), np.ones((6, 5), np.float32))
    with tp.no_grad():
        x.grad.mul_(4.0)
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((6, 5), np.float32))


def test_matmul_under_a_mean_loss_takes_the_products():
    # mean's gradient is dense (torch's layout), so the matmul's formula takes the products
    xn, wn = _mm_case(seed=5)
    x, w = tp.tensor(xn, requires_grad=True), tp.tensor(wn, requires_grad=True)
    (x @ w).mean().backward()
    ones = np.full((64, 72), 1.0 / (64 * 72), np.float64)
    np.testing.assert_allclose(x.grad.numpy(), ones @ wn.T.astype(np.float64), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), xn.T.astype(np.float64) @ ones, rtol=1e-5,
                               atol=1e-6)
