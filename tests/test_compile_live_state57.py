"""``tensorplay.compile`` and state the function does not get as arguments (fresh-user session 57,
/work/notes/fresh57/01..05): tensors read from globals, closures and ``self`` are graph inputs
read live on every call (values computed from them are never baked in, in-place ops on them
run on every call); Python side effects and values the guards cannot see make the function
run eagerly from its second call on (torch's graph break), never a stale result."""

import functools
import random

import numpy as np
import pytest

import tensorplay as tp


# ---- (a) lifted tensors: read live, their mutations replayed --------------------------------

def test_value_computed_from_global_tensor_follows_inplace_update():
    W = tp.ones(3)

    @tp.compile
    def f(x):
        return x + W.sum()
    assert f(tp.zeros(1)).tolist() == [3.0]
    W.mul_(2)
    assert f(tp.zeros(1)).tolist() == [6.0]
    W[0] = 100.0
    assert f(tp.zeros(1)).tolist() == [104.0]
    assert f.captures == 1


def test_training_loop_on_self_parameters_matches_eager():
    class Lin:
        def __init__(self):
            self.w = tp.ones(2, 2, requires_grad=True)
            self.b = tp.zeros(2, requires_grad=True)

        def forward(self, x):
            return x @ self.w.t() + self.b * 2

    m, ref = Lin(), Lin()
    cf = tp.compile(m.forward)
    for _ in range(3):
        loss = cf(tp.ones(1, 2)).sum()
        rloss = ref.forward(tp.ones(1, 2)).sum()
        assert abs(loss.item() - rloss.item()) < 1e-6
        loss.backward()
        rloss.backward()
        assert m.b.grad.tolist() == ref.b.grad.tolist()
        with tp.no_grad():
            for p in (m.w, m.b, ref.w, ref.b):
                p -= 0.1 * p.grad
                p.grad = None
    assert [round(v, 4) for v in m.b.tolist()] == [round(v, 4) for v in ref.b.tolist()]


def test_inplace_on_global_buffer_runs_every_call():
    buf = tp.zeros(2)

    def f(x):
        buf.add_(x)
        return buf * 1
    cf = tp.compile(f)
    assert cf(tp.ones(2)).tolist() == [1.0, 1.0]
    assert cf(tp.ones(2)).tolist() == [2.0, 2.0]
    assert buf.tolist() == [2.0, 2.0]


def test_inplace_on_closure_tensor_only_input_a_scalar():
    acc = tp.ones(2)

    @tp.compile
    def k(x):
        acc.mul_(3)
        return acc.sum() + x
    assert k(tp.ones(1)).tolist() == [7.0]
    assert k(tp.ones(1)).tolist() == [19.0]
    assert acc.tolist() == [9.0, 9.0]


def test_running_statistics_on_self_match_eager():
    class RunningMean:
        def __init__(self):
            self.running = tp.zeros(2)

        def forward(self, x):
            self.running.mul_(0.9).add_(x * 0.1)
            return x - self.running
    e, c = RunningMean(), RunningMean()
    cm = tp.compile(c.forward)
    for _ in range(3):
        eo, co = e.forward(tp.ones(2)), cm(tp.ones(2))
        assert np.allclose(eo.tolist(), co.tolist())
    assert np.allclose(e.running.tolist(), c.running.tolist())


def test_rebinding_a_lifted_attribute_recaptures():
    class M:
        def __init__(self):
            self.w = tp.ones(2)

        def forward(self, x):
            return x * self.w.sum()
    m = M()
    cf = tp.compile(m.forward)
    assert cf(tp.ones(1)).tolist() == [2.0]
    m.w = tp.full((2,), 3.0)
    assert cf(tp.ones(1)).tolist() == [6.0]


def test_class_attribute_tensor_and_nested_function_read_live():
    class C:
        table = tp.ones(2)

    def outer():
        scale = tp.ones(1)

        def inner(x):
            return (x * C.table.sum()) * scale.mean()
        return inner, scale
    inner, scale = outer()
    cf = tp.compile(inner)
    assert cf(tp.ones(1)).tolist() == [2.0]
    C.table.add_(1)
    scale.fill_(2.0)
    assert cf(tp.ones(1)).tolist() == [8.0]      # (1+1)*2 * 2
    assert cf.captures == 1


def test_grad_reaches_lifted_global_tensor():
    w = tp.ones(2, requires_grad=True)

    @tp.compile
    def f(x):
        return (x * w.exp()).sum()
    f(tp.ones(2)).backward()
    assert np.allclose(w.grad.tolist(), [np.e, np.e])
    with tp.no_grad():
        w.zero_()
    w.grad = None
    out = f(tp.ones(2))
    assert abs(out.item() - 2.0) < 1e-6
    out.backward()
    assert np.allclose(w.grad.tolist(), [1.0, 1.0])


def test_reduce_overhead_reads_lifted_tensor_live():
    W = tp.ones(3)
    f = tp.compile(lambda x: x + W.sum(), mode="reduce-overhead")
    assert f(tp.zeros(1)).tolist() == [3.0]
    W.mul_(2)
    assert f(tp.zeros(1)).tolist() == [6.0]
    assert f(tp.zeros(1)).tolist() == [6.0]


# ---- guards: helper methods, deep attributes, partial keywords, big containers ------------

def test_helper_method_reading_self_attribute_is_guarded():
    class Model:
        def __init__(self):
            self.scale = 2.0

        def helper(self, x):
            return x * self.scale

        def forward(self, x):
            return self.helper(x) + 1
    m = Model()
    f = tp.compile(m.forward)
    assert f(tp.ones(2)).tolist() == [3.0, 3.0]
    m.scale = 10.0
    assert f(tp.ones(2)).tolist() == [11.0, 11.0]


class _O:
    pass


def _check(fn, change):
    f = tp.compile(fn)
    f(tp.ones(1))
    change()
    return f(tp.ones(1)).item(), fn(tp.ones(1)).item()


def test_four_level_attribute_chain_is_guarded():
    cfg = _O()
    cfg.a = _O()
    cfg.a.b = _O()
    cfg.a.b.c = _O()
    cfg.a.b.c.k = 1.0
    got, want = _check(lambda x: x * cfg.a.b.c.k, lambda: setattr(cfg.a.b.c, "k", 3.0))
    assert got == want == 3.0


def test_method_return_value_is_guarded():
    class Holder:
        def __init__(self):
            self.vals = [1.0]

        def get(self):
            return self.vals[0]
    h = Holder()
    got, want = _check(lambda x: x * h.get(), lambda: h.vals.__setitem__(0, 6.0))
    assert got == want == 6.0


def test_partial_keyword_is_guarded():
    p = functools.partial(lambda x, k: x * k, k=2.0)
    got, want = _check(p, lambda: p.keywords.__setitem__("k", 4.0))
    assert got == want == 4.0


def test_large_global_dict_is_guarded():
    big = {i: 1.0 for i in range(100)}
    got, want = _check(lambda x: x * big[5], lambda: big.__setitem__(5, 4.0))
    assert got == want == 4.0


def test_global_numpy_array_element_is_seen():
    arr = np.array([2.0])
    got, want = _check(lambda x: x * float(arr[0]), lambda: arr.__setitem__(0, 9.0))
    assert got == want == 9.0


# ---- (b) what cannot be guarded: eager from the second call, said in graph_skips ----------

def test_python_random_is_drawn_every_call():
    f = tp.compile(lambda x: x * 0 + random.random())
    a = f(tp.ones(1)).item()
    random.seed(0)
    b = f(tp.ones(1)).item()
    random.seed(0)
    assert abs(b - random.random()) < 1e-6 and a != b
    assert any("random" in r for r in f.graph_skips.values())


def test_python_side_effects_run_every_call():
    state = {"calls": 0}
    log = []

    @tp.compile
    def f(x):
        state["calls"] += 1
        log.append(1)
        return x * state["calls"] + len(log)
    assert [f(tp.ones(1)).item() for _ in range(3)] == [2.0, 4.0, 6.0]
    assert state["calls"] == 3 and len(log) == 3
    assert f.graph_skips


def test_nonlocal_counter_and_attribute_write_run_every_call():
    calls = 0

    class M:
        def __init__(self):
            self.seen = 0

        def forward(self, x):
            self.seen += 1
            return x * self.seen
    m = M()

    def f(x):
        nonlocal calls
        calls += 1
        return x + calls
    cf, cm = tp.compile(f), tp.compile(m.forward)
    assert [cf(tp.zeros(1)).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert [cm(tp.ones(1)).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert calls == 3 and m.seen == 3


def test_function_without_python_state_stays_compiled():
    k = 2.0

    @tp.compile
    def f(x):
        out = {}
        out["y"] = x * k
        return out["y"] + 1
    for _ in range(3):
        assert f(tp.ones(1)).tolist() == [3.0]
    assert f.captures == 1 and not f.graph_skips
    assert f.graph is not None


def test_fullgraph_true_refuses_python_side_effects():
    import pytest
    log = []

    @tp.compile(fullgraph=True)
    def f(x):
        log.append(1)
        return x + 1
    with pytest.raises(tp.errors.CompileError, match="list.append"):
        f(tp.ones(1))


def test_a_tracer_installed_before_the_capture_keeps_working():
    import sys
    events = []

    def tracer(frame, event, arg):
        if frame.f_code.co_name == "traced_fn":
            events.append(event)
        return tracer
    calls = []

    def traced_fn(x):
        calls.append(1)
        return x * 2
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        cf = tp.compile(traced_fn)
        assert cf(tp.ones(1)).tolist() == [2.0]
        assert sys.gettrace() is tracer          # put back after the capture
    finally:
        sys.settrace(old)
    assert "call" in events and "return" in events
    assert cf(tp.ones(1)).tolist() == [2.0] and len(calls) == 2


_CUDA_OK, _CUDA_WHY = tp.plugins.device_status("cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not _CUDA_OK, reason=f"no usable CUDA device: {_CUDA_WHY}")
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_cuda_lifted_tensors_read_live_and_buffers_updated_every_call(mode):
    W = tp.ones(3, device="cuda")
    buf = tp.zeros(2, device="cuda")

    def f(x):
        buf.add_(x)
        return (x + W.sum()) * buf
    cf = tp.compile(f, mode=mode)
    outs = []
    for _ in range(4):          # reduce-overhead: runs, records, replays
        outs.append(cf(tp.ones(2, device="cuda")).tolist())
        W.mul_(2)
    assert outs == [[4.0, 4.0], [14.0, 14.0], [39.0, 39.0], [100.0, 100.0]]
    assert buf.tolist() == [4.0, 4.0]


def test_attributes_of_objects_in_a_list_of_layers_are_guarded_and_read_live():
    class Layer:
        def __init__(self):
            self.w = tp.ones(2, 2) * 0.5
            self.scale = 1.0

        def __call__(self, x):
            return (x @ self.w) * self.scale

    class Model:
        def __init__(self):
            self.layers = [Layer() for _ in range(3)]

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
    m = Model()
    cf = tp.compile(m.forward)
    assert cf(tp.ones(1, 2)).tolist() == m.forward(tp.ones(1, 2)).tolist()
    m.layers[1].w.mul_(2)                          # a lifted tensor: read live
    assert cf(tp.ones(1, 2)).tolist() == m.forward(tp.ones(1, 2)).tolist() == [[2.0, 2.0]]
    m.layers[1].scale = 3.0                        # an attribute of a list element: guarded
    assert cf(tp.ones(1, 2)).tolist() == m.forward(tp.ones(1, 2)).tolist() == [[6.0, 6.0]]
    assert not cf.graph_skips


def test_compiled_optimizer_step_reads_each_new_grad():
    w = tp.ones(2, requires_grad=True)
    ref = tp.ones(2, requires_grad=True)

    @tp.compile
    def step():
        with tp.no_grad():
            w.sub_(0.1 * w.grad)
    for _ in range(3):
        (w * w).sum().backward()
        (ref * ref).sum().backward()
        step()
        with tp.no_grad():
            ref.sub_(0.1 * ref.grad)
        w.grad = None                # backward makes a new grad tensor each step
        ref.grad = None
    assert np.allclose(w.tolist(), ref.tolist())


# -- in-place updates with alpha on lifted tensors (a fresh user's check of this session) -----

def test_add_with_alpha_on_lifted_tensors_replays_every_call():
    W = tp.ones(2)
    G = tp.tensor([1.0, 2.0])

    def step():
        with tp.no_grad():
            W.add_(G, alpha=-0.1)
            W.sub_(G, alpha=0.5)

    f = tp.compile(step)
    for _ in range(3):
        f()
    np.testing.assert_allclose(W.numpy(), 1 - 3 * 0.6 * np.array([1.0, 2.0]), rtol=1e-6)


def test_ema_of_lifted_tensors_tracks_as_eager():
    p, ema = tp.ones(2), tp.zeros(2)

    @tp.compile
    def update():
        ema.mul_(0.5).add_(p, alpha=0.5)

    for _ in range(4):
        update()
    np.testing.assert_allclose(ema.numpy(), [0.9375, 0.9375])


def test_optimizer_step_whose_grads_are_replaced_each_call_stops_recapturing():
    # zero_grad's p.grad = None makes each step read new .grad tensors: the graph is invalid on
    # every call; after torch's recompile_limit (8) the function runs eagerly, with the reason
    w = tp.ones(2, requires_grad=True)

    def step():
        with tp.no_grad():
            w.sub_(w.grad * 0.1)

    c = tp.compile(step)
    for _ in range(30):
        (w * tp.tensor([1.0, 2.0])).sum().backward()
        c()
        w.grad = None
    np.testing.assert_allclose(w.detach().numpy(), 1 - 30 * 0.1 * np.array([1.0, 2.0]),
                               rtol=1e-5)
    assert c.captures <= 10
    assert any("recompile_limit" in r for r in c.graph_skips.values())
    c.reset()
    assert not c.graph_skips
