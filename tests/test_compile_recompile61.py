"""``tensorplay.compile``'s recompile limit for changed Python values, and one fake run of a
custom op without ``register_fake`` on the first compiled call (session 61).

1. A capture bakes the Python numbers the function reads into the graph, so a compiled function
   called with a different float argument each time (``f(x, 0.1)``, ``f(x, 0.2)``...), or reading
   a global or closure float that changes every call, captured a new graph on every call, for
   ever. ``torch.compile`` stops at ``recompile_limit`` (8) graphs per frame: it warns, and
   calls that would need a new graph run eagerly while the graphs it has keep serving their
   values (``fullgraph=True`` raises). torch 2.13 first makes a changed float or int argument
   dynamic (one more graph); here a Python number stays a constant of the graph (see
   ``compile``'s docstring), so the limit is what bounds the growth. Shapes keep their own rules
   (dynamic sizes, or one graph per size where the code reads sizes), outside the limit.
2. A custom op without ``register_fake`` runs its kernel on fake tensors as its fake. The first
   compiled call ran it twice on fakes (the capture, then the check of the real outputs against
   the fake's promise) before its real run; the check now reuses the capture's fake outputs
   when the real inputs have the capture's metadata, and still catches a kernel whose real
   outputs differ from what it gave on fakes.
"""

from __future__ import annotations

import warnings

import pytest

import tensorplay as tp
from tensorplay.errors import CompileError
from tensorplay.library import custom_op
from tensorplay.testing import drop_ops

pytestmark = pytest.mark.usefixtures("cpu")


def _limit():
    import importlib
    return importlib.import_module("tensorplay.compile").RECOMPILE_LIMIT


def _x():
    return tp.tensor([1.0, -2.0, 3.5, 0.25])


def _calls(f, args_of, n):
    """``n`` calls of ``f``, each compared bit for bit with the eager result; the warnings."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(n):
            args = args_of(i)
            got = f(*args)
            want = f.fn(*args)
            assert got.dtype is want.dtype and got.tolist() == want.tolist(), (i, args)
    return [x for x in w if "recompile" in str(x.message)]


def scaled(x, s):
    return x * s + 1.0


# ------------------------------------------------------------------------------ the limit

def test_a_new_float_argument_each_call_stops_capturing_at_the_limit():
    f = tp.compile(scaled)
    x = _x()
    warned = _calls(f, lambda i: (x, 0.1 * (i + 1)), 3 * _limit())
    assert _limit() == 8
    assert f.captures == _limit(), f"captured {f.captures} graphs for {3 * _limit()} values"
    assert f.cache_size == _limit()
    reasons = [r for r in f.graph_skips.values() if "recompile" in r]
    assert reasons and reasons[0].startswith("runs eagerly: ")
    assert len(warned) == 1, [str(w.message) for w in warned]
    msg = str(warned[0].message)
    assert "scaled" in msg and "'s'" in msg and "tensor" in msg and "8" in msg


def test_values_seen_before_the_limit_keep_their_graphs_after_it():
    f = tp.compile(scaled)
    x = _x()
    vals = [0.5 * (i + 1) for i in range(_limit())]
    graphs = []
    for v in vals:
        f(x, v)
        graphs.append(f.graph)
    for v, g in zip(vals, graphs):        # before the limit: every seen value hits its graph
        assert f(x, v).tolist() == scaled(x, v).tolist()
        assert f.graph is g
    assert f.captures == _limit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(5):                # past the limit: eager, right values, no capture
            v = 100.0 + k
            assert f(x, v).tolist() == scaled(x, v).tolist()
    assert f.captures == _limit()
    for v, g in zip(reversed(vals), reversed(graphs)):   # the kept graphs still serve
        assert f(x, v).tolist() == scaled(x, v).tolist()
        assert f.graph is g


def test_fullgraph_raises_at_the_limit():
    f = tp.compile(scaled, fullgraph=True)
    x = _x()
    for i in range(_limit()):
        f(x, 0.25 * (i + 1))
    with pytest.raises(CompileError, match=r"recompile"):
        f(x, 99.0)
    assert f.captures == _limit()
    assert f(x, 0.25).tolist() == scaled(x, 0.25).tolist()      # a kept graph


def test_int_arguments_are_bounded_too():
    f = tp.compile(lambda x, n: x * n)
    x = tp.tensor([1, 2, 3])
    warned = _calls(f, lambda i: (x, i + 2), 20)
    assert f.captures == _limit() and len(warned) == 1
    assert "'n'" in str(warned[0].message)


def test_an_int_argument_read_as_a_size_is_bounded_too():
    f = tp.compile(lambda x, n: x.repeat(n))
    x = tp.tensor([1.0, 2.0])
    _calls(f, lambda i: (x, i + 1), 15)
    assert f.captures == _limit()


SCALE = 1.0


def by_global(x):
    return x * SCALE


def test_a_global_float_changing_every_call_is_bounded():
    global SCALE
    f = tp.compile(by_global)
    x = _x()

    def args(i):
        global SCALE
        SCALE = 0.3 * (i + 1)
        return (x,)
    try:
        warned = _calls(f, args, 20)
        assert f.captures == _limit()
        assert len(warned) == 1 and "SCALE" in str(warned[0].message)
        SCALE = 0.3                    # a value captured before the limit: its graph again
        assert f(x).tolist() == by_global(x).tolist()
        assert "0.3" in str(f.graph) and f.captures == _limit()
    finally:
        SCALE = 1.0


def test_a_closure_float_changing_every_call_is_bounded():
    s = 0.5

    def body(x):
        return x * s

    f = tp.compile(body)
    x = _x()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(20):
            s = 0.7 * (i + 1)
            assert f(x).tolist() == body(x).tolist()
    assert f.captures == _limit()
    warned = [str(m.message) for m in w if "recompile" in str(m.message)]
    assert len(warned) == 1 and "'s'" in warned[0]


def test_an_attribute_of_self_changing_every_call_is_bounded():
    class M:
        def __init__(self):
            self.k = 1.0

        @tp.compile
        def forward(self, x):
            return x * self.k

    m = M()
    x = _x()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(20):
            m.k = 0.9 * (i + 1)
            assert m.forward(x).tolist() == (x * m.k).tolist()
    assert M.forward.captures == _limit()
    warned = [str(m.message) for m in w if "recompile" in str(m.message)]
    assert len(warned) == 1 and "attribute 'k'" in warned[0]


def test_a_constant_tensor_whose_value_is_read_is_bounded_too():
    n = tp.tensor(1)
    f = tp.compile(lambda x: x[: int(n)] * 2)
    x = tp.arange(30.0)

    def args(i):
        n.fill_(i + 1)             # in place: the graph read its value
        return (x,)
    _calls(f, args, 20)
    assert f.captures == _limit()


def test_under_the_limit_nothing_changes():
    f = tp.compile(scaled)
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # no warning below the limit
        for rnd in range(3):
            for i in range(_limit()):
                assert f(x, 1.5 * (i + 1)).tolist() == scaled(x, 1.5 * (i + 1)).tolist()
    assert f.captures == _limit() and not f.graph_skips


def test_reset_starts_the_count_again():
    f = tp.compile(scaled)
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(12):
            f(x, 0.1 * (i + 1))
    assert f.captures == _limit()
    f.reset()
    assert not f.graph_skips
    f(x, 42.0)
    assert f.captures == _limit() + 1 and f.cache_size == 1


# ------------------------------------------------------------------------------ neighbours

def test_new_shapes_follow_the_dynamic_size_rules_not_the_limit():
    f = tp.compile(lambda x: x * 2.0)
    for n in range(2, 22):
        x = tp.arange(float(n))
        assert f(x).tolist() == (x * 2.0).tolist()
    assert f.captures == 1                  # dynamic sizes: one graph


def test_size_dependent_code_still_recaptures_per_shape():
    def rows(x):
        return x.reshape(x.shape[0] // 2, -1).sum(0)

    f = tp.compile(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 16):
            x = tp.arange(float(4 * n))
            assert f(x).tolist() == rows(x).tolist()
    assert f.captures == 15 and not f.graph_skips


def test_dynamic_false_shapes_are_not_counted():
    f = tp.compile(lambda x: x + 1.0, dynamic=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(2, 14):
            x = tp.arange(float(n))
            assert f(x).tolist() == (x + 1.0).tolist()
    assert f.captures == 12 and not f.graph_skips


def test_the_limit_is_per_shape_for_size_dependent_graphs():
    def rows(x, s):
        return x.reshape(x.shape[0] // 2, -1).sum(0) * s

    f = tp.compile(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (1, 2, 3):                 # a new size: its own graphs
            x = tp.arange(float(4 * n))
            for i in range(_limit()):
                assert f(x, 0.5 * (i + 1)).tolist() == rows(x, 0.5 * (i + 1)).tolist()
    assert f.captures == 3 * _limit()


def test_graphs_evicted_for_room_and_captured_again_are_not_counted():
    # 66 sizes of a size-dependent graph, nine times round: more than the 64 graphs kept, so
    # every call captures again a graph evicted before. No value changed: no limit
    def f(x):
        return x * 2.0 + x.shape[0]

    c = tp.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(_limit() + 1):
            for n in range(2, 68):
                x = tp.ones(n)
                assert c(x).tolist() == f(x).tolist()
    assert c.captures == 66 * (_limit() + 1) and c.cache_size == 64 and not c.graph_skips


def test_dtypes_and_devices_of_arguments_are_not_counted():
    f = tp.compile(scaled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dt in (tp.float32, tp.float64, tp.int32, tp.int64, tp.int16, tp.int8, tp.uint8,
                   tp.bfloat16, tp.float16, tp.bool):
            x = tp.ones(3, dtype=dt)
            assert f(x, 2.0).tolist() == scaled(x, 2.0).tolist()
    assert f.captures == 10 and not f.graph_skips


def test_each_object_bound_as_self_has_its_own_count():
    class M:
        def __init__(self, k):
            self.k = k

        @tp.compile
        def forward(self, x):
            return x * self.k

    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ms = [M(float(i)) for i in range(12)]       # twelve modules, one value each
        for m in ms:
            assert m.forward(x).tolist() == (x * m.k).tolist()
    assert M.forward.captures == 12 and not M.forward.graph_skips


# ------------------------------------------------------------------------------ fake runs

def test_a_custom_op_without_a_fake_runs_its_kernel_once_on_fakes_per_first_call():
    calls = {"fake": 0, "real": 0}

    @custom_op("rc61::twice", mutates_args=())
    def twice(x: tp.Tensor) -> tp.Tensor:
        calls["fake" if tp.fake.in_fake_mode() else "real"] += 1
        return x * 2.0

    try:
        f = tp.compile(lambda x: twice(x) + 1.0)
        x = tp.tensor([1.0, 2.0])
        assert f(x).tolist() == [3.0, 5.0]
        assert calls == {"fake": 1, "real": 1}, calls
        assert f(x).tolist() == [3.0, 5.0]
        assert calls == {"fake": 1, "real": 2}, calls
        # a new shape (dynamic sizes: same graph): its first call checks the real outputs
        # against the fake run for those shapes
        assert f(tp.tensor([1.0, 2.0, 3.0])).tolist() == [3.0, 5.0, 7.0]
        assert calls == {"fake": 2, "real": 3}, calls
    finally:
        drop_ops("rc61")


def test_a_registered_fake_runs_once_on_the_first_call_too():
    calls = {"fake": 0}

    @custom_op("rc61::reg", mutates_args=())
    def reg(x: tp.Tensor) -> tp.Tensor:
        return x + 1.0

    @reg.register_fake
    def _(x):
        calls["fake"] += 1
        return x.new_empty(x.shape)

    try:
        f = tp.compile(lambda x: reg(x) * 3.0)
        assert f(tp.tensor([1.0])).tolist() == [6.0]
        assert calls["fake"] == 1
    finally:
        drop_ops("rc61")


def test_a_kernel_whose_real_output_differs_from_its_fake_run_is_still_caught():
    @custom_op("rc61::sneaky", mutates_args=())
    def sneaky(x: tp.Tensor) -> tp.Tensor:
        if tp.fake.in_fake_mode():
            return x.new_empty(x.shape)
        return x.reshape(-1, 1) * 2.0      # the real run: another shape

    try:
        f = tp.compile(lambda x: sneaky(x) + 1.0)
        with pytest.raises(CompileError, match=r"rc61::sneaky.*fake kernel"):
            f(tp.tensor([1.0, 2.0]))
    finally:
        drop_ops("rc61")


def test_strides_differing_from_the_capture_take_a_fresh_fake_run():
    calls = {"fake": 0}

    @custom_op("rc61::colsum", mutates_args=())
    def colsum(x: tp.Tensor) -> tp.Tensor:
        if tp.fake.in_fake_mode():
            calls["fake"] += 1
        return x.sum(0)

    try:
        f = tp.compile(lambda x: colsum(x) * 2.0)
        a = tp.arange(6.0).reshape(2, 3)[:1]           # shape (1, 3), strides (3, 1)
        b = tp.arange(14.0).reshape(2, 7)[:1, :3]      # shape (1, 3), strides (7, 1)
        assert a.is_contiguous() and b.is_contiguous()
        assert f(a).tolist() == (a.sum(0) * 2.0).tolist()
        assert calls["fake"] == 1
        assert f(b).tolist() == (b.sum(0) * 2.0).tolist()
        assert f.captures == 1 and calls["fake"] == 2    # other strides: a fake run again
    finally:
        drop_ops("rc61")


def test_the_limit_holds_with_calls_from_several_threads():
    import sys
    import threading

    f = tp.compile(scaled)
    errors: list = []

    def work(t):
        try:
            for i in range(40):
                v = float(t * 40 + i) + 0.5
                x = tp.ones(3)
                assert f(x, v).tolist() == scaled(x, v).tolist()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(120)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    assert f.captures == _limit() and f.cache_size == _limit()
