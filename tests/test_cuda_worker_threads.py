"""On a GPU: every kind of cuda work runs from a worker thread whose first CUDA work it is.

A new thread has no current CUDA context. CuPy's memory pool can hand it a cached block without a
runtime call (only runtime calls make the primary context current), so a launch through the
driver (``cuLaunchKernel``: the eager ops' generated kernels, reductions, compiled chains,
``wrap_triton``'s direct launch) failed there with ``CUDA_ERROR_INVALID_CONTEXT`` (device run of
2026-12-04: ``x * y`` from a ``threading.Thread`` raised). Each case below is warmed up in the main
thread (so its launch is the direct one and its result size is cached in the pool), then run in a
fresh thread, whose result must equal the main thread's bit for bit. Skips without a usable CUDA
device.
"""

from __future__ import annotations

import threading

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tensorplay_cuda")

import tensorplay as tp  # noqa: E402
from _fusion_cases import chain8  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
pytestmark = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")


def _host(r):
    rs = r if isinstance(r, (tuple, list)) else (r,)
    return [np.ascontiguousarray(t.cpu().numpy()) for t in rs]


def _inputs():
    tp.manual_seed(0)
    d = "cuda"
    return {
        "x": tp.randn(1 << 10, device=d), "y": tp.randn(1 << 10, device=d),
        "xl": tp.randn(1 << 22, device=d), "yl": tp.randn(1 << 22, device=d),
        "m": tp.randn(64, 1024, device=d), "a": tp.randn(128, 64, device=d),
        "b": tp.randn(64, 32, device=d),
        "i": tp.arange(0, 4096, device=d).to(tp.int64) % 7,
        "u": tp.arange(0, 4096, device=d).to(tp.uint8),
    }


def _inplace_sub(v):
    z = v["x"].clone()
    z -= v["y"]
    return z


def _inplace_div(v):
    z = v["x"].clone()
    z /= 3.0
    return z


_compiled = {}


def _compiled_chain(v, mode=None):
    f = _compiled.get(mode)
    if f is None:
        f = _compiled[mode] = tp.compile(chain8, mode=mode) if mode else tp.compile(chain8)
    return f(v["x"], v["y"])


def _softmax_rows(m):
    e = (m - m.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


CASES = {
    "mul": lambda v: v["x"] * v["y"],
    "add a number": lambda v: v["x"] + 1.5,
    "relu": lambda v: tp.relu(v["x"]),
    "tanh": lambda v: v["x"].tanh(),
    "mul, 2^22 elements": lambda v: v["xl"] * v["yl"],
    "sum along a dim": lambda v: v["m"].sum(1),
    "amax keepdim": lambda v: v["m"].amax(-1, keepdim=True),
    "full sum": lambda v: v["x"].sum(),
    "ones": lambda v: tp.ones(1000, device="cuda"),
    "full": lambda v: tp.full((1000,), 3.5, device="cuda"),
    "zeros_like": lambda v: tp.zeros_like(v["x"]),
    "transpose contiguous": lambda v: v["m"].t().contiguous(),
    "integer compare": lambda v: v["i"] != 3,
    "integer mul": lambda v: v["i"] * v["i"],
    "bitwise and": lambda v: v["u"] & 5,
    "matmul": lambda v: v["a"] @ v["b"],
    "in-place sub": _inplace_sub,
    "in-place div": _inplace_div,
    "compiled chain": _compiled_chain,
    "compiled, reduce-overhead": lambda v: _compiled_chain(v, "reduce-overhead"),
    "compiled row softmax": lambda v: tp.compile(_softmax_rows)(v["m"]),
}


def _in_fresh_thread(fn):
    box = {}

    def work():
        try:
            r = fn()
            tp.cuda.synchronize()
            box["out"] = _host(r)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = e
    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["out"]


@pytest.mark.parametrize("case", list(CASES))
def test_cuda_work_from_a_fresh_thread_equals_the_main_threads(case):
    fn = CASES[case]
    v = _inputs()
    # past the eager ops' warm-up (8 calls per dtype and device, counted over the whole
    # process, so an earlier test's calls count too): the direct launch from here on, in
    # this thread and the fresh one (6 calls straddled the warm-up's end depending on the
    # tests run before in the same process)
    for _ in range(20):
        want = fn(v)
    want = _host(want)
    tp.cuda.synchronize()
    got = _in_fresh_thread(lambda: fn(v))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g.view(np.uint8), w.view(np.uint8)), case


def test_wrap_triton_launch_from_a_fresh_thread():
    triton = pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    import triton.language as tl

    from tensorplay import library

    @triton.jit
    def axpy(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + 1.0, mask=m)

    x = tp.randn(5000, device="cuda")
    k = library.wrap_triton(axpy)

    def run():
        out = tp.empty_like(x)
        k[(triton.cdiv(5000, 1024),)](x, out, 2.0, 5000, BLOCK=1024)
        return out
    for _ in range(3):              # the first launch compiles; later ones launch directly
        want = run()
    want = _host(want)
    got = _in_fresh_thread(run)
    assert np.array_equal(got[0], want[0])


def test_eight_fresh_threads_at_once():
    """Several worker threads whose first CUDA work runs at the same time."""
    v = _inputs()
    for _ in range(6):
        want = _host(v["x"] * v["y"] + 1.5)
    tp.cuda.synchronize()
    outs, errors = [], []
    barrier = threading.Barrier(8)

    def work():
        try:
            barrier.wait()
            r = v["x"] * v["y"] + 1.5
            tp.cuda.synchronize()
            outs.append(_host(r)[0])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert len(outs) == 8 and all(np.array_equal(o, want[0]) for o in outs)
