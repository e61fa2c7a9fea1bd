"""On a GPU: ``tensorplay.compile(mode="reduce-overhead")`` with CUDA graphs, and the compiled
chains' planned launches (``tensorplay_cuda.triton_fusion``: a call signature seen before launches
without Triton's launcher). Skips without a usable CUDA device; the same rules run on cpu with the
test backend in ``tests/test_compile_reduce_overhead.py``."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tensorplay_cuda")

import tensorplay as tp  # noqa: E402
from _fusion_cases import chain8 as chain  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
pytestmark = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")


@pytest.fixture(autouse=True)
def _replay_small_graphs(monkeypatch):
    """This file tests the replay itself, on graphs of one or two launches, which a replay
    would not speed up (``_replay.SKIP_FEW_LAUNCHES``, tested in
    ``test_compile_reduce_overhead_launches56.py``): recorded here all the same."""
    from tensorplay import _replay
    monkeypatch.setattr(_replay, "SKIP_FEW_LAUNCHES", False)


def close(a, b, tol=1e-5):
    return bool(tp.allclose(a, b, rtol=tol, atol=tol))


@pytest.mark.parametrize("n", [1 << 10, 1 << 20, 1000003])
def test_reduce_overhead_replays_a_cuda_graph_with_eager_results(n):
    tp.manual_seed(0)
    x, y = tp.randn(n, device="cuda"), tp.randn(n, device="cuda")
    c = tp.compile(chain, mode="reduce-overhead")
    outs = [c(x, y) for _ in range(5)]
    assert c.graph_skips == {}
    want = chain(x, y)
    for o in outs:
        assert o.device == x.device and o.shape == x.shape
        assert close(o, want)
    x.mul_(-1.0)                                 # new values, same tensors
    assert close(c(x, y), chain(x, y))
    first = c(x, y)
    keep = first.clone()
    c(y, x)                                      # other tensors, same signature
    assert tp.equal(first, keep)                 # results are fresh tensors
    assert c.graph_skips == {}


def test_reduce_overhead_records_each_shape_and_matches_default_mode():
    c = tp.compile(chain, mode="reduce-overhead")
    d = tp.compile(chain)
    for n in (4096, 777, 4096, 65536, 777):
        x, y = tp.randn(n, device="cuda"), tp.randn(n, device="cuda")
        for _ in range(3):
            assert close(c(x, y), d(x, y))
    assert c.graph_skips == {}


def test_a_graph_of_unfused_ops_and_reductions_is_recorded():
    def f(x, b):
        h = (x + b).relu()
        return h.sum(1), (h * h).mean(), h.amax(0)

    tp.manual_seed(1)
    x, b = tp.randn(64, 32, device="cuda"), tp.randn(32, device="cuda")
    c = tp.compile(f, mode="reduce-overhead")
    for _ in range(4):
        got = c(x, b)
    assert c.graph_skips == {}
    for g, w in zip(got, f(x, b)):
        assert close(g, w, 1e-4)


def test_matmul_graphs_run_without_replay_because_cupy_refuses_cublas_in_capture():
    # CuPy raises NotImplementedError for a cuBLAS call during stream capture: such a graph
    # falls back to the default mode, with that reason, and its results are right
    def f(x, w):
        return (x @ w).relu().sum(1)

    x, w = tp.randn(64, 32, device="cuda"), tp.randn(32, 16, device="cuda")
    c = tp.compile(f, mode="reduce-overhead")
    for _ in range(4):
        got = c(x, w)
    assert close(got, f(x, w), 1e-4)
    (reason,) = c.graph_skips.values()
    assert "recording failed" in reason and "cuBLAS" in reason


def test_a_custom_op_that_synchronises_falls_back_with_the_reason():
    import cupy
    from tensorplay_cuda import as_cupy

    @tp.library.custom_op("ro_test::host_sum", mutates_args=())
    def host_sum(x: tp.Tensor) -> tp.Tensor:
        v = float(cupy.asnumpy(as_cupy(x).sum()))   # a copy to the host: not recordable
        return x + v

    @host_sum.register_fake
    def _(x):
        return tp.empty_like(x)

    x = tp.randn(256, device="cuda")
    c = tp.compile(lambda t: host_sum(t * 2.0), mode="reduce-overhead")
    for _ in range(4):
        out = c(x)
    want = x * 2.0 + float((x * 2.0).sum().item())
    assert close(out, want, 1e-4)
    (reason,) = c.graph_skips.values()
    assert "recording failed" in reason
    # the device is still usable after the failed recording
    assert close(chain(x, x), chain(x.cpu(), x.cpu()).to("cuda"))


def test_compiled_chain_plans_key_on_alignment():
    """A compiled chain on views whose addresses are not 16-byte aligned, between calls on
    aligned tensors of the same shape: each launch matches its own specialisation."""
    tp.manual_seed(2)
    base_x, base_y = tp.randn(4097, device="cuda"), tp.randn(4097, device="cuda")
    c = tp.compile(chain)
    for i in range(6):
        off = i % 2
        x, y = base_x[off:off + 4096], base_y[off:off + 4096]
        assert close(c(x, y), chain(x.cpu(), y.cpu()).to("cuda"), 1e-5), i


def test_compiled_chain_on_two_dtypes_and_broadcasts_repeats_exactly():
    c = tp.compile(chain)
    for dt in (tp.float32, tp.float16, tp.float32):
        x = tp.randn(33, 65, device="cuda").to(dt)
        y = tp.randn(65, device="cuda").to(dt)
        r = [c(x, y) for _ in range(3)]
        assert tp.equal(r[0], r[1]) and tp.equal(r[1], r[2])
        assert close(r[2].float(), chain(x, y).float(), 2e-3)


def test_factories_inside_a_recorded_graph_fill_on_every_replay():
    # the fill kernel and the memset are recorded on the capture stream, into the graph's pool
    def f(x):
        return x * 2.0 + tp.full_like(x, 3.0) - tp.zeros_like(x) + tp.ones(x.shape, device="cuda")

    x = tp.randn(1000, device="cuda")
    c = tp.compile(f, mode="reduce-overhead")
    for _ in range(4):
        got = c(x)
    assert c.graph_skips == {}
    assert close(got, x * 2.0 + 4.0)
    x.fill_(1.0)
    assert close(c(x), tp.full((1000,), 6.0, device="cuda"))


@pytest.mark.parametrize("dt", ["float32", "float16", "float64"])
def test_compiled_chains_ending_in_a_reduction_repeat_through_their_plan(dt):
    """A chain ending in a full sum / amax: the planned launch allocates the accumulator with its
    identity on every call (not once), so repeated calls give the same value."""
    d = getattr(tp, dt)
    x = tp.randn(3000, device="cuda").to(d)
    y = tp.randn(3000, device="cuda").to(d)
    s = tp.compile(lambda a, b: (a * b + 1.0).sum())
    m = tp.compile(lambda a, b: (a - b).relu().amax())
    sums = [s(x, y) for _ in range(4)]
    maxes = [m(x, y) for _ in range(4)]
    for v in sums[1:]:      # (blocks add their partial sums atomically: any order)
        assert close(v.double(), sums[0].double(), 1e-3 if dt == "float16" else 1e-5)
    for v in maxes[1:]:
        assert tp.equal(v, maxes[0])
    tol = 1e-2 if dt == "float16" else 1e-4
    assert close(sums[0].double(), (x.double() * y.double() + 1.0).sum(), tol * 100)
    assert tp.equal(maxes[0], (x - y).relu().amax())


def test_a_recording_never_turns_the_generated_kernels_off():
    """Eager ops whose generated kernel would compile for the first time inside a recording
    (it copies constants to the GPU, which a capture refuses) run their ufunc there instead;
    the process keeps its generated kernels."""
    from tensorplay_cuda import eager

    def f(x):
        return (x * 3.5).exp() - x.sigmoid()

    x = tp.randn(4099, device="cuda")
    c = tp.compile(f, mode="reduce-overhead")
    for _ in range(3):
        got = c(x)
    assert close(got, f(x), 1e-5)
    assert not eager._FAILED, eager._FAILED


def test_compiled_calls_from_fresh_threads():
    """A thread whose first CUDA work is a compiled call that launches through a kept plan
    (the driver needs the device's context current in that thread)."""
    import threading

    x, y = tp.randn(5000, device="cuda"), tp.randn(5000, device="cuda")
    c = tp.compile(chain)
    want = c(x, y)
    c(x, y)
    errors = []

    def work():
        try:
            for _ in range(3):
                if not close(c(x, y), want):
                    errors.append("mismatch")
            tp.full((300,), 2.0, device="cuda")          # the fill kernel's launch too
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
