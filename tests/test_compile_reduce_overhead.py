"""``tensorplay.compile(fn, mode="reduce-overhead")``: graph replay, on the shipped test backend.

``MockBackend(graphs=True)`` records a "graph" that re-runs the recorded function on replay and
copies its results into the recorded output arrays, which the recording leaves poisoned (NaN / -1):
a result returned without a replay, or read from the wrong arrays, shows up as NaN. The same
rules run on cuda with CUDA graphs (``tests/test_cuda_reduce_overhead.py``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

import tensorplay as tp  # noqa: E402
from tensorplay.testing.backend import MockBackend  # noqa: E402


def chain(x, y):
    a = x * y
    a = a + 1.0
    a = a.relu()
    return a.tanh(), a.sum()


@pytest.fixture(autouse=True)
def _replay_small_graphs(monkeypatch):
    """This file tests the replay itself, on graphs of one or two launches, which a replay
    would not speed up (``_replay.SKIP_FEW_LAUNCHES``, tested in
    ``test_compile_reduce_overhead_launches56.py``): recorded here all the same."""
    from tensorplay import _replay
    monkeypatch.setattr(_replay, "SKIP_FEW_LAUNCHES", False)


def graph_calls(be):
    return [c for c in be.calls if c.endswith("_graph")]


@pytest.fixture
def mock():
    with MockBackend("mockg", graphs=True) as be:
        yield be


def _pair(n=8, device="mockg"):
    tp.manual_seed(0)
    return tp.randn(n).to(device), tp.randn(n).to(device)


def test_unknown_modes_are_refused_with_the_accepted_ones_named():
    for bad in ("max_autotune", "fast", ""):     # (torch's max-autotune modes: compiler57 test)
        with pytest.raises(ValueError, match="reduce-overhead"):
            tp.compile(chain, mode=bad)
    assert tp.compile(chain).mode == "default"
    assert tp.compile(chain, mode="default").mode == "default"
    assert tp.compile(mode="reduce-overhead")(chain).mode == "reduce-overhead"


def test_recompiling_a_compiled_function_in_another_mode_takes_that_mode():
    c = tp.compile(chain)
    assert tp.compile(c) is c
    ro = tp.compile(c, mode="reduce-overhead")
    assert ro.mode == "reduce-overhead" and ro.fn is chain


def test_second_call_records_and_later_calls_replay_with_eager_results(mock):
    x, y = _pair()
    c = tp.compile(chain, mode="reduce-overhead")
    want = chain(x, y)
    for i in range(5):
        got = c(x, y)
        assert tp.equal(got[0], want[0]) and tp.equal(got[1], want[1]), i
        assert got[0].device == x.device
    # first call: a normal run; second: recorded, then replayed; then replays only
    assert graph_calls(mock) == ["capture_graph"] + ["replay_graph"] * 4
    assert c.graph_skips == {}


def test_new_argument_values_are_seen_by_every_replay(mock):
    x, y = _pair()
    c = tp.compile(chain, mode="reduce-overhead")
    c(x, y), c(x, y)
    x.add_(1.0)                       # in place, outside the function
    assert tp.equal(c(x, y)[0], chain(x, y)[0])
    x2, y2 = tp.randn(8).to("mockg"), tp.randn(8).to("mockg")   # other tensors, same signature
    assert tp.equal(c(x2, y2)[0], chain(x2, y2)[0])
    assert graph_calls(mock).count("capture_graph") == 1


def test_outputs_are_fresh_tensors_not_overwritten_by_later_calls(mock):
    x, y = _pair()
    c = tp.compile(chain, mode="reduce-overhead")
    c(x, y)
    first = c(x, y)[0]
    keep = first.clone()
    second = c(y, x + 2.0)[0]
    assert tp.equal(first, keep)      # torch's outputs would have been overwritten here
    assert not tp.equal(first, second)
    assert first is not second


def test_a_new_shape_records_again_and_the_old_one_still_replays(mock):
    x, y = _pair(8)
    z, w = _pair(5)
    c = tp.compile(chain, mode="reduce-overhead")
    for _ in range(3):
        assert tp.equal(c(x, y)[0], chain(x, y)[0])
    for _ in range(3):
        assert tp.equal(c(z, w)[0], chain(z, w)[0])
    before = graph_calls(mock).count("capture_graph")
    assert before == 2
    assert tp.equal(c(x, y)[0], chain(x, y)[0])
    assert graph_calls(mock).count("capture_graph") == 2 and graph_calls(mock)[-1] == "replay_graph"


def test_a_function_that_mutates_its_argument_runs_without_a_graph(mock):
    def bump(x, y):
        x.add_(1.0)
        return x * y

    x, y = _pair()
    ref_x = x.clone()
    c = tp.compile(bump, mode="reduce-overhead")
    for i in range(4):
        out = c(x, y)
        assert tp.allclose(x, ref_x + float(i + 1))   # mutated once per call, never replayed
        assert tp.equal(out, x * y)
    assert "capture_graph" not in mock.calls
    (reason,) = c.graph_skips.values()
    assert "mutates" in reason


def test_random_ops_run_without_a_graph(mock):
    def noisy(x):
        return x + tp.rand(8, device="mockg")

    x, _ = _pair()
    c = tp.compile(noisy, mode="reduce-overhead")
    outs = [c(x) for _ in range(3)]
    assert not tp.equal(outs[1], outs[2])           # a replay would repeat the numbers
    assert "capture_graph" not in mock.calls
    assert "random" in next(iter(c.graph_skips.values()))


def test_outputs_aliasing_an_argument_keep_aliasing_without_a_graph(mock):
    def view(x):
        return x.view(2, 4)

    x, _ = _pair()
    c = tp.compile(view, mode="reduce-overhead")
    for _ in range(3):
        v = c(x)
        v[0, 0] = 42.0
        assert x[0].item() == 42.0
    assert "capture_graph" not in mock.calls
    assert "view" in next(iter(c.graph_skips.values()))


def test_arguments_requiring_grad_run_without_a_graph_unless_grad_is_off(mock):
    x, y = _pair()
    x.requires_grad_(True)
    c = tp.compile(chain, mode="reduce-overhead")
    for _ in range(3):
        out = c(x, y)[1]
    out.backward()
    assert x.grad is not None
    assert "capture_graph" not in mock.calls
    assert "requires grad" in next(iter(c.graph_skips.values()))
    with tp.no_grad():
        for _ in range(3):
            assert tp.equal(c(x, y)[0], chain(x, y)[0])
    assert graph_calls(mock).count("capture_graph") == 1


def test_non_contiguous_arguments_run_without_a_graph(mock):
    m = tp.randn(4, 4).to("mockg")
    c = tp.compile(lambda a: (a * 2.0).exp(), mode="reduce-overhead")
    for _ in range(3):
        assert tp.equal(c(m.t()), (m.t() * 2.0).exp())
    assert "contiguous" in next(iter(c.graph_skips.values()))


def test_devices_without_graphs_run_as_default_mode_and_say_why():
    x, y = tp.randn(8), tp.randn(8)
    c = tp.compile(chain, mode="reduce-overhead")
    for _ in range(3):
        assert tp.equal(c(x, y)[0], chain(x, y)[0])
    assert "cannot capture graphs" in next(iter(c.graph_skips.values()))


def test_a_backend_without_graphs_is_asked_once_per_signature():
    with MockBackend("mockn") as be:      # graphs=False: capture_graph is the default refusal
        x, y = _pair(device="mockn")
        c = tp.compile(chain, mode="reduce-overhead")
        for _ in range(4):
            assert tp.equal(c(x, y)[0], chain(x, y)[0])
        assert "capture_graph" not in be.calls
        assert len(c.graph_skips) == 1


def test_a_failed_recording_falls_back_for_that_signature(mock):
    # a backend whose recording raises (as CUDA does for a host synchronisation)
    calls = []

    def refuse(fn, device):
        calls.append(device)
        raise RuntimeError("operation not permitted when stream is capturing")

    mock.capture_graph = refuse
    x, y = _pair()
    c = tp.compile(chain, mode="reduce-overhead")
    for _ in range(4):
        assert tp.equal(c(x, y)[0], chain(x, y)[0])
    assert len(calls) == 1
    assert "recording failed" in next(iter(c.graph_skips.values()))
    c.reset()
    assert c.graph_skips == {}


def test_constants_and_multiple_outputs_come_back_in_the_function_structure(mock):
    scale = tp.randn(8).to("mockg")

    def f(x):
        return {"a": x * scale, "b": [x + 1.0, 3]}

    x, _ = _pair()
    c = tp.compile(f, mode="reduce-overhead")
    for _ in range(3):
        out = c(x)
        assert tp.equal(out["a"], x * scale) and tp.equal(out["b"][0], x + 1.0)
        assert out["b"][1] == 3
    scale.mul_(2.0)                     # a constant used by reference: seen by the replay
    assert tp.equal(c(x)["a"], x * scale)
    assert graph_calls(mock).count("capture_graph") == 1


# -- faults a new user found (each test failed before its fix) --------------------------------

def test_constants_requiring_grad_keep_autograd_on_every_call(mock):
    w = tp.randn(3, 3).to("mockg").requires_grad_(True)
    f = tp.compile(lambda x: (x @ w).sum(), mode="reduce-overhead")
    for _ in range(4):
        out = f(tp.randn(2, 3).to("mockg"))
        assert out.requires_grad
    out.backward()
    assert w.grad is not None
    assert "capture_graph" not in mock.calls
    assert "requires grad" in next(iter(f.graph_skips.values()))


def test_a_constant_made_to_require_grad_after_recording_is_seen(mock):
    w = tp.randn(3).to("mockg")
    f = tp.compile(lambda x: x * w, mode="reduce-overhead")
    x = tp.randn(3).to("mockg")
    for _ in range(3):
        f(x)
    assert "capture_graph" in mock.calls
    w.requires_grad_(True)
    out = f(x)
    assert out.requires_grad
    out.sum().backward()
    assert tp.allclose(w.grad, x)


def test_outputs_sharing_memory_with_each_other_keep_sharing(mock):
    def f(x):
        y = x * 2.0
        return y, y[1:]

    c = tp.compile(f, mode="reduce-overhead")
    for _ in range(3):
        a, v = c(tp.ones(4).to("mockg"))
        a.add_(100.0)
        assert v.tolist() == [102.0, 102.0, 102.0]
    assert "capture_graph" not in mock.calls
    assert "share memory" in next(iter(c.graph_skips.values()))


def test_outputs_keep_their_strides(mock):
    c = tp.compile(lambda x: (x + 1.0).t(), mode="reduce-overhead")
    x = tp.randn(4, 3).to("mockg")
    want = (x + 1.0).t()
    for _ in range(3):
        out = c(x)
        assert out.stride() == want.stride() and tp.equal(out, want)


def test_concurrent_calls_from_threads_each_get_their_own_result(mock):
    import threading

    c = tp.compile(lambda x: x * 3.0 + 1.0, mode="reduce-overhead")
    x0 = tp.randn(64).to("mockg")
    for _ in range(3):
        c(x0)                                    # recorded and replayed
    assert "capture_graph" in mock.calls
    errors = []

    def work(i):
        x = tp.full((64,), float(i)).to("mockg")
        for _ in range(150):
            if not tp.equal(c(x), x * 3.0 + 1.0):
                errors.append(i)

    import sys
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)           # threads switch often: interleavings show up
    try:
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []


def test_detach_is_replayed_and_random_ops_are_named_as_random(mock):
    c = tp.compile(lambda x: x.detach() * 2.0, mode="reduce-overhead")
    x = tp.randn(5).to("mockg")
    for _ in range(3):
        assert tp.equal(c(x), x * 2.0)
    assert c.graph_skips == {}


def test_more_signatures_than_kept_still_replays_the_first_ones(mock):
    c = tp.compile(lambda x: x + 1.0, mode="reduce-overhead")
    xs = [tp.randn(n + 1).to("mockg") for n in range(20)]
    for _ in range(3):
        for x in xs:
            assert tp.equal(c(x), x + 1.0)
    assert graph_calls(mock).count("replay_graph") > 0
    assert any("signatures" in r for r in c.graph_skips.values())


def test_graph_skips_is_bounded_and_forgets_a_signature_that_later_records(mock):
    c = tp.compile(lambda x: x + 1.0, mode="reduce-overhead")
    for n in range(1, 300):
        c(tp.randn(n))                            # cpu: skipped, never recorded
    assert len(c.graph_skips) <= 64
    x = tp.randn(4).to("mockg").requires_grad_(True)
    c2 = tp.compile(lambda t: t * 2.0, mode="reduce-overhead")
    c2(x), c2(x)
    assert len(c2.graph_skips) == 1
    with tp.no_grad():
        for _ in range(3):
            c2(x)
    assert c2.graph_skips == {}


def test_recompiling_with_other_options_takes_them():
    c = tp.compile(lambda x: x + 1.0)
    d = tp.compile(c, dynamic=False)
    assert d is not c and d.dynamic is False
    e = tp.compile(d, mode="reduce-overhead", dynamic=False)   # exactly the options given
    assert e.dynamic is False and e.mode == "reduce-overhead" and e.fn is d.fn
    assert tp.compile(e, mode="reduce-overhead").dynamic is None


def test_custom_ops_tagged_cudagraph_unsafe_are_not_recorded(mock):
    @tp.library.custom_op("ro_mock::unsafe_double", mutates_args=(), tags=("cudagraph_unsafe",))
    def unsafe_double(x: tp.Tensor) -> tp.Tensor:
        return x * 2.0

    @unsafe_double.register_fake
    def _(x):
        return tp.empty_like(x)

    c = tp.compile(lambda x: unsafe_double(x) + 1.0, mode="reduce-overhead")
    x = tp.randn(4).to("mockg")
    for _ in range(4):
        assert tp.equal(c(x), x * 2.0 + 1.0)
    assert "capture_graph" not in mock.calls
    assert "cudagraph_unsafe" in next(iter(c.graph_skips.values()))
