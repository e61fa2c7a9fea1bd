"""Grad mode, FakeTensorMode and compile capture are per thread (torch semantics).

A new thread starts with grad enabled, no fake mode and no capture; entering a mode (or running a
backward, which turns grad off while its formulas run) in one thread is never seen by another.
The training test runs the same small model in 8 threads at once and requires every step's
gradients to equal those of a single-threaded run.
"""

from __future__ import annotations

import sys
import threading

import pytest
import tensorplay as tp
from tensorplay.errors import DispatchError
from tensorplay.fake import FakeTensorMode, in_fake_mode
from tensorplay.library import custom_op

pytestmark = pytest.mark.usefixtures("cpu")

TIMEOUT = 20.0


@pytest.fixture
def fast_switch():
    """Switch threads every microsecond, so unsynchronised shared state shows up at once."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _run(*targets):
    """Run each target in its own thread; re-raise the first exception in the caller."""
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported in the calling thread
                errors.append(e)
        return run
    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a thread hung"
    if errors:
        raise errors[0]


# ------------------------------------------------------------------------------------- grad mode

def test_no_grad_interleaved_in_two_threads_leaves_grad_on():
    # A enters, B enters, A leaves, B leaves: with a process-global flag B restores A's "off"
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with tp.no_grad():
            a_in.set()
            assert b_in.wait(TIMEOUT)
        seen["a_after"] = tp.is_grad_enabled()
        a_out.set()

    def b():
        assert a_in.wait(TIMEOUT)
        seen["b_start"] = tp.is_grad_enabled()      # A's no_grad is not B's
        with tp.no_grad():
            b_in.set()
            assert a_out.wait(TIMEOUT)
            seen["b_inside"] = tp.is_grad_enabled()  # A leaving does not turn B's back on
        seen["b_after"] = tp.is_grad_enabled()

    _run(a, b)
    assert seen == {"b_start": True, "a_after": True, "b_inside": False, "b_after": True}
    assert tp.is_grad_enabled()
    x = tp.ones(3, requires_grad=True)
    assert (x * 2).grad_fn is not None


def test_new_thread_starts_with_grad_enabled():
    seen = []
    with tp.no_grad():
        _run(lambda: seen.append(tp.is_grad_enabled()))
        assert not tp.is_grad_enabled()
    tp.set_grad_enabled(False)
    try:
        _run(lambda: seen.append(tp.is_grad_enabled()))
    finally:
        tp.set_grad_enabled(True)
    assert seen == [True, True]


def test_graph_recorded_in_one_thread_while_another_is_in_no_grad():
    entered, done = threading.Event(), threading.Event()
    out = {}

    def quiet():
        with tp.no_grad():
            entered.set()
            assert done.wait(TIMEOUT)

    def train():
        assert entered.wait(TIMEOUT)
        x = tp.ones(2, requires_grad=True)
        y = (x * 3.0).sum()
        out["grad_fn"] = y.grad_fn is not None
        y.backward()
        out["grad"] = x.grad.tolist()
        done.set()

    _run(quiet, train)
    assert out == {"grad_fn": True, "grad": [3.0, 3.0]}


@custom_op("tc_threads::blocking_scale", mutates_args=())
def blocking_scale(x: tp.Tensor) -> tp.Tensor:
    return x * 2.0


_IN_BACKWARD = threading.Event()
_RELEASE = threading.Event()


def _blocking_bw(ctx, g):
    _IN_BACKWARD.set()           # the engine runs this with grad off in *its* thread
    assert _RELEASE.wait(TIMEOUT)
    return g * 2.0


blocking_scale.register_autograd(_blocking_bw)


def test_backward_in_one_thread_does_not_turn_grad_off_in_another():
    _IN_BACKWARD.clear()
    _RELEASE.clear()
    seen = {}

    def backward():
        x = tp.ones(2, requires_grad=True)
        blocking_scale(x).sum().backward()
        seen["grad"] = x.grad.tolist()

    def other():
        assert _IN_BACKWARD.wait(TIMEOUT)
        try:
            seen["enabled"] = tp.is_grad_enabled()
            w = tp.ones(2, requires_grad=True)
            seen["records"] = (w * 2.0).grad_fn is not None
        finally:
            _RELEASE.set()

    _run(backward, other)
    assert seen == {"grad": [2.0, 2.0], "enabled": True, "records": True}


# ------------------------------------------------------------------------------------- fake mode

def test_fake_mode_in_one_thread_is_invisible_to_another():
    entered, done = threading.Event(), threading.Event()
    seen = {}

    def faker():
        with FakeTensorMode():
            entered.set()
            t = tp.zeros(2, 3)
            seen["fake_in_mode"] = t._data is None   # fake: no data
            assert done.wait(TIMEOUT)

    def other():
        assert entered.wait(TIMEOUT)
        try:
            seen["other_in_fake_mode"] = in_fake_mode()
            seen["other_values"] = tp.zeros(2).tolist()      # real: has values
            seen["other_op"] = (tp.ones(2) + 1).tolist()
        finally:
            done.set()

    _run(faker, other)
    assert seen == {"fake_in_mode": True, "other_in_fake_mode": False,
                    "other_values": [0.0, 0.0], "other_op": [2.0, 2.0]}
    assert tp.zeros(1).tolist() == [0.0]


def test_fake_mode_interleaved_exit_restores_each_thread():
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with FakeTensorMode():
            a_in.set()
            assert b_in.wait(TIMEOUT)
        a_out.set()

    def b():
        assert a_in.wait(TIMEOUT)
        with FakeTensorMode():
            b_in.set()
            assert a_out.wait(TIMEOUT)
            assert in_fake_mode()

    _run(a, b)
    assert not in_fake_mode()
    assert tp.zeros(2).tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------------------- capture

def test_capture_in_one_thread_is_invisible_to_another():
    entered, done = threading.Event(), threading.Event()
    seen = {}

    def body(x):
        entered.set()                 # runs while capturing, in the capturing thread
        assert done.wait(TIMEOUT)
        return x * 2.0 + tp.ones(3)   # a factory: captured, since this thread is capturing

    cf = tp.compile(body)

    def capturer():
        seen["compiled"] = cf(tp.ones(3)).tolist()

    def other():
        assert entered.wait(TIMEOUT)
        try:
            seen["factory"] = tp.zeros(2).tolist()                  # no CompileError
            g = tp.compile(lambda y: y + 1.0)
            seen["other_compiled"] = g(tp.ones(2)).tolist()
            seen["other_cached"] = g.cache_size                     # captured, not inlined
        finally:
            done.set()

    _run(capturer, other)
    assert seen == {"compiled": [3.0, 3.0, 3.0], "factory": [0.0, 0.0],
                    "other_compiled": [2.0, 2.0], "other_cached": 1}
    assert tp.zeros(1).tolist() == [0.0]


def test_capture_still_stops_at_data_reads_in_its_own_thread():
    fn = lambda x: x.sum().item()       # noqa: E731
    cf = tp.compile(fn, fullgraph=True)
    with pytest.raises(DispatchError, match="captures"):
        cf(tp.ones(2))
    assert tp.ones(2).sum().item() == 2.0
    # without fullgraph=True the read is a graph break: eager's value
    cf = tp.compile(fn)
    assert cf(tp.ones(2)) == fn(tp.ones(2))
    (reason,) = cf.graph_skips.values()
    assert reason.startswith("runs eagerly: ") and "Tensor.item()" in reason


# -------------------------------------------------------------------------------------- training

@custom_op("tc_threads::affine", mutates_args=())
def affine(x: tp.Tensor, w: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
    return x @ w + b


def _affine_setup(ctx, inputs, output):
    x, w, _ = inputs
    ctx.save_for_backward(x, w)


def _affine_bw(ctx, g):
    x, w = ctx.saved_tensors
    return g @ w.transpose(0, 1), x.transpose(0, 1) @ g, g.sum(0)


affine.register_autograd(_affine_bw, setup_context=_affine_setup)

STEPS = 12
N_THREADS = 8


def _train(seed: int):
    """A two-layer model trained with SGD; returns every step's gradients as lists."""
    def t(rows, cols, k):
        return tp.tensor([[((i * 7 + j * 3 + k + seed) % 11 - 5) / 10.0 for j in range(cols)]
                          for i in range(rows)])
    x, target = t(6, 4, 1), t(6, 2, 2)
    w1 = t(4, 5, 3).requires_grad_(True)
    b1 = tp.zeros(5, requires_grad=True)
    w2 = t(5, 2, 4).requires_grad_(True)
    params = [w1, b1, w2]
    history = []
    for _ in range(STEPS):
        h = affine(x, w1, b1).relu()            # custom op with a formula + built-in
        with tp.no_grad():
            probe = h * 2.0                      # a no_grad region inside the loop
        assert probe.grad_fn is None
        y = h @ w2
        loss = ((y - target) * (y - target)).mean()
        assert loss.grad_fn is not None, "the graph was lost"
        loss.backward()
        history.append([p.grad.tolist() for p in params])
        with tp.no_grad():
            for p in params:
                p.sub_(p.grad * 0.1)
                p.grad = None
    return history


def test_training_in_8_threads_matches_single_threaded(fast_switch):
    expected = [_train(s) for s in range(N_THREADS)]
    got = [None] * N_THREADS
    start = threading.Barrier(N_THREADS)

    def worker(s):
        def run():
            start.wait(TIMEOUT)
            got[s] = _train(s)
        return run

    _run(*[worker(s) for s in range(N_THREADS)])
    for s in range(N_THREADS):
        assert got[s] is not None
        for step in range(STEPS):
            assert got[s][step] == expected[s][step], f"thread {s}, step {step}"
    assert tp.is_grad_enabled()
