"""Two silently wrong results of ``tensorplay.compile`` found by a new-user review (session 40).

1. Every op of a compiled function runs under the grad mode it ran under eagerly, on the first
   call (the one that captures) as on later ones, whatever the mode the function leaves set:
   outputs' ``requires_grad`` and the gradients through them are eager's; after the call the
   mode is the one the function left set (as ``torch.compile``).
2. Tensors a compiled *bound method* reads from ``self`` (``tp.compile(m.fwd)``) are guarded as
   for every other way of compiling a method: rebinding ``m.w`` is seen, an in-place update of
   the same tensor is seen without a recapture; also ``self.layer.w`` and lists of tensors.

Every expected value is eager's, computed by calling the plain function.
"""

from __future__ import annotations

import functools

import pytest

import tensorplay as tp

pytestmark = pytest.mark.usefixtures("cpu", "grad_mode_restored")



# ---------------------------------------------------------------------------------------------
# 1. grad mode of every op, first call and later calls

def off_after(x):                      # the reported repro
    y = x * 2
    tp.set_grad_enabled(False)
    return y


def off_then_on(x):                    # the reported reverse case
    tp.set_grad_enabled(False)
    y = x * 2
    tp.set_grad_enabled(True)
    z = x * 3
    return y, z


def on_off_on(x):
    y = x * 2
    tp.set_grad_enabled(False)
    z = x * 3
    tp.set_grad_enabled(True)
    w = x * 4
    return y, z, w


def on_after(x):
    y = x * 2
    tp.set_grad_enabled(True)
    return y, x * 5


def off_before_any_op(x):
    tp.set_grad_enabled(False)
    return x * 2


def no_grad_block(x):
    with tp.no_grad():
        y = x * 2
    return y, x * 3


def no_grad_block_then_off(x):
    with tp.no_grad():
        y = x * 2
    z = x * 3
    tp.set_grad_enabled(False)
    return y, z


def enable_grad_block_then_off(x):
    with tp.enable_grad():
        y = x * 2
    tp.set_grad_enabled(False)
    return y, x * 3


def set_by_argument(x, mode):
    y = x * 2
    tp.set_grad_enabled(mode)
    return y, x * 3


GRAD_CASES = [(off_after, ()), (off_then_on, ()), (on_off_on, ()), (on_after, ()),
              (off_before_any_op, ()), (no_grad_block, ()), (no_grad_block_then_off, ()),
              (enable_grad_block_then_off, ()), (set_by_argument, (False,)),
              (set_by_argument, (True,))]


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _observe(fn, extra, start, device="cpu"):
    """Call ``fn`` in grad mode ``start``; then, with grad on, backpropagate the sum of the outputs
    that require grad plus ``(x * 10).sum()``: (values, requires_grad of each output, the mode
    after the call, x.grad)."""
    x = tp.tensor([1.0, 2.0], requires_grad=True).to(device)
    if device != "cpu":
        x = x.detach().requires_grad_(True)
    tp.set_grad_enabled(start)
    outs = _outputs(fn(x, *extra))
    mode_after = tp.is_grad_enabled()
    tp.set_grad_enabled(True)
    loss = (x * 10).sum()
    for o in outs:
        if o.requires_grad:
            loss = loss + o.sum()
    loss.backward()
    return ([o.tolist() for o in outs], [o.requires_grad for o in outs], mode_after,
            x.grad.tolist())


@pytest.mark.parametrize("fn,extra", GRAD_CASES, ids=lambda c: getattr(c, "__name__", repr(c)))
@pytest.mark.parametrize("start", [True, False], ids=["caller_grad_on", "caller_grad_off"])
def test_every_op_runs_under_its_eager_grad_mode_on_every_call(fn, extra, start):
    want = _observe(fn, extra, start)
    c = tp.compile(fn)
    for call in range(3):               # the capture, then cache hits
        assert _observe(c, extra, start) == want, f"call {call + 1}"
    assert c.captures == 1


def test_the_reported_repro():
    c = tp.compile(off_after)
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = c(x)
    assert tp.is_grad_enabled() is False            # the mode the function left set
    tp.set_grad_enabled(True)
    (y.sum() + (x * 10).sum()).backward()
    assert y.requires_grad is True
    assert x.grad.tolist() == [12.0, 12.0]


def test_one_compiled_function_alternating_caller_modes_matches_eager():
    c = tp.compile(on_off_on)
    for start in (True, False, False, True, False, True):
        assert _observe(c, (), start) == _observe(on_off_on, (), start)


def test_the_mode_after_a_raising_function_is_the_one_it_set_on_first_and_later_calls():
    def f(x, boom):
        y = x * 2
        tp.set_grad_enabled(False)
        if boom:
            raise ValueError("boom")
        return y

    c = tp.compile(f)
    x = tp.ones(2, requires_grad=True)
    for boom in (True, False, True, False):
        tp.set_grad_enabled(True)
        if boom:
            with pytest.raises(ValueError, match="boom"):
                c(x, boom)
        else:
            assert c(x, boom).requires_grad is True
        assert tp.is_grad_enabled() is False


def test_a_compiled_method_turning_grad_off_gives_eagers_gradients():
    class M:
        def __init__(self):
            self.w = tp.tensor([3.0, 4.0], requires_grad=True)

        def fwd(self, x):
            y = x * self.w
            tp.set_grad_enabled(False)
            return y

    m = M()
    for c in (tp.compile(m.fwd), tp.compile(M.fwd).__get__(m)):
        m.w.grad = None
        for _ in range(2):
            tp.set_grad_enabled(True)
            y = c(tp.ones(2))
            assert tp.is_grad_enabled() is False
            tp.set_grad_enabled(True)
            assert y.requires_grad is True
            y.sum().backward()
        assert m.w.grad.tolist() == [2.0, 2.0]


@pytest.fixture
def mock():
    pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend

    with MockBackend("mockg", graphs=True) as be:
        yield be


@pytest.mark.parametrize("fn,extra", GRAD_CASES, ids=lambda c: getattr(c, "__name__", repr(c)))
@pytest.mark.parametrize("start", [True, False], ids=["caller_grad_on", "caller_grad_off"])
def test_reduce_overhead_runs_and_replays_keep_eager_grad_modes(mock, fn, extra, start):
    want = _observe(fn, extra, start, device="mockg")
    c = tp.compile(fn, mode="reduce-overhead")
    for call in range(5):               # capture, normal run, recording, replays
        assert _observe(c, extra, start, device="mockg") == want, f"call {call + 1}"


def test_reduce_overhead_replays_a_graph_whose_ops_all_run_without_grad(mock, monkeypatch):
    # the mode changes, but no op records history: still replayed (and right); one launch,
    # which reduce-overhead would run without a graph (_replay.SKIP_FEW_LAUNCHES): kept here
    from tensorplay import _replay
    monkeypatch.setattr(_replay, "SKIP_FEW_LAUNCHES", False)
    def f(x):
        with tp.no_grad():
            y = x * 2
        return y

    c = tp.compile(f, mode="reduce-overhead")
    x = tp.ones(4).to("mockg").requires_grad_(True)
    for _ in range(4):
        tp.set_grad_enabled(False)
        y = c(x)
        assert y.tolist() == [2.0] * 4 and y.requires_grad is False
    assert "replay_graph" in mock.calls


# ---------------------------------------------------------------------------------------------
# 2. tensors read from self of a compiled bound method (and their neighbours)

class Layer:
    def __init__(self, w):
        self.w = w


class M:
    def __init__(self):
        self.w = tp.tensor([1.0, 2.0])
        self.layer = Layer(tp.tensor([1.0, 2.0]))
        self.ws = [tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])]

    def fwd(self, x):
        return x * self.w

    def fwd_nested(self, x):
        return x * self.layer.w

    def fwd_list(self, x):
        return x * self.ws[0] + self.ws[1]

    @tp.compile
    def fwd_decorated(self, x):
        return x * self.w


def _compiled_forms(m, name):
    """Every way of compiling method ``name`` of ``m``, as a callable of ``x``."""
    plain = getattr(M, name)
    bound = tp.compile(getattr(m, name))
    unbound = tp.compile(plain)
    partial = tp.compile(functools.partial(plain, m))
    return {"bound": bound, "unbound": lambda x: unbound(m, x), "partial": partial}


REBINDS = {
    "same_shape": lambda: tp.tensor([5.0, 6.0]),
    "other_shape": lambda: tp.tensor([[5.0, 6.0], [7.0, 8.0]]),
    "other_dtype": lambda: tp.tensor([5.0, 6.0], dtype=tp.float64),
    "requires_grad": lambda: tp.tensor([5.0, 6.0], requires_grad=True),
    "int": lambda: tp.tensor([5, 6]),
}


def _check(got, want):
    assert got.tolist() == want.tolist()
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.requires_grad is want.requires_grad


@pytest.mark.parametrize("form", ["bound", "unbound", "partial"])
@pytest.mark.parametrize("new", list(REBINDS))
def test_rebinding_a_tensor_attribute_of_self_is_seen(form, new):
    m = M()
    c = _compiled_forms(m, "fwd")[form]
    x = tp.tensor([1.0, 1.0])
    _check(c(x), m.fwd(x))
    m.w = REBINDS[new]()
    _check(c(x), m.fwd(x))
    _check(c(x), m.fwd(x))               # the new graph, cached


def test_the_reported_bound_method_repro():
    class Model:
        def __init__(s):
            s.w = tp.tensor([1.0, 2.0])

        def fwd(s, x):
            return x * s.w

    m = Model()
    c = tp.compile(m.fwd)
    assert c(tp.tensor([1.0, 1.0])).tolist() == [1.0, 2.0]
    m.w = tp.tensor([5.0, 6.0])
    assert c(tp.tensor([1.0, 1.0])).tolist() == [5.0, 6.0]


def test_a_decorated_method_sees_a_rebound_attribute():
    m = M()
    x = tp.tensor([1.0, 1.0])
    assert m.fwd_decorated(x).tolist() == [1.0, 2.0]
    m.w = tp.tensor([5.0, 6.0])
    assert m.fwd_decorated(x).tolist() == [5.0, 6.0]


@pytest.mark.parametrize("form", ["bound", "unbound", "partial"])
def test_an_in_place_update_of_self_tensor_is_seen_without_a_recapture(form):
    m = M()
    c = _compiled_forms(m, "fwd")[form]
    x = tp.tensor([1.0, 1.0])
    assert c(x).tolist() == [1.0, 2.0]
    m.w.mul_(10)
    assert c(x).tolist() == [10.0, 20.0]
    if form == "bound":
        assert c.captures == 1


def test_a_bound_method_tensor_attribute_made_to_require_grad_is_seen():
    m = M()
    c = tp.compile(m.fwd)
    x = tp.tensor([1.0, 1.0])
    assert c(x).requires_grad is False
    m.w = tp.tensor([1.0, 2.0], requires_grad=True)
    y = c(x)
    assert y.requires_grad is True
    y.sum().backward()
    assert m.w.grad.tolist() == [1.0, 1.0]


def test_a_bound_method_reading_requires_grad_of_self_tensor_follows_rebinding():
    class R:
        def __init__(self):
            self.w = tp.tensor([1.0])

        def fwd(self, x):
            return x + (1.0 if self.w.requires_grad else 0.0)

    r = R()
    c = tp.compile(r.fwd)
    x = tp.tensor([1.0])
    assert c(x).tolist() == r.fwd(x).tolist() == [1.0]
    r.w = tp.tensor([1.0], requires_grad=True)
    assert c(x).tolist() == r.fwd(x).tolist() == [2.0]


@pytest.mark.parametrize("form", ["bound", "unbound", "partial"])
def test_a_nested_attribute_tensor_rebound_or_its_holder_replaced_is_seen(form):
    m = M()
    c = _compiled_forms(m, "fwd_nested")[form]
    x = tp.tensor([1.0, 1.0])
    assert c(x).tolist() == m.fwd_nested(x).tolist()
    m.layer.w = tp.tensor([5.0, 6.0])
    assert c(x).tolist() == m.fwd_nested(x).tolist() == [5.0, 6.0]
    m.layer = Layer(tp.tensor([7.0, 8.0]))
    assert c(x).tolist() == m.fwd_nested(x).tolist() == [7.0, 8.0]
    m.layer.w.add_(1)                     # in place: seen by reference
    assert c(x).tolist() == m.fwd_nested(x).tolist() == [8.0, 9.0]


def test_a_nested_attribute_of_a_closure_object_is_seen():
    layer = Layer(tp.tensor([1.0, 2.0]))

    def f(x):
        return x * layer.w

    c = tp.compile(f)
    x = tp.tensor([1.0, 1.0])
    assert c(x).tolist() == [1.0, 2.0]
    layer.w = tp.tensor([5.0, 6.0])
    assert c(x).tolist() == [5.0, 6.0]


@pytest.mark.parametrize("form", ["bound", "unbound", "partial"])
def test_a_list_attribute_of_tensors_is_seen(form):
    m = M()
    c = _compiled_forms(m, "fwd_list")[form]
    x = tp.tensor([1.0, 1.0])
    assert c(x).tolist() == m.fwd_list(x).tolist() == [4.0, 6.0]
    m.ws[0] = tp.tensor([10.0, 20.0])               # an element replaced
    assert c(x).tolist() == m.fwd_list(x).tolist() == [13.0, 24.0]
    m.ws = [tp.tensor([0.0, 1.0]), tp.tensor([1.0, 1.0])]     # the list rebound
    assert c(x).tolist() == m.fwd_list(x).tolist() == [1.0, 2.0]
    m.ws[1].add_(1)                                   # in place
    assert c(x).tolist() == m.fwd_list(x).tolist() == [2.0, 3.0]


def test_a_callable_object_sees_its_rebound_tensor_attribute():
    class Call:
        def __init__(self):
            self.w = tp.tensor([1.0, 2.0])

        def __call__(self, x):
            return x * self.w

    o = Call()
    c = tp.compile(o)
    x = tp.tensor([1.0, 1.0])
    assert c(x).tolist() == [1.0, 2.0]
    o.w = tp.tensor([5.0, 6.0])
    assert c(x).tolist() == [5.0, 6.0]


def test_the_guard_does_not_recapture_while_nothing_changes():
    m = M()
    c = tp.compile(m.fwd_nested)
    for _ in range(5):
        c(tp.tensor([1.0, 1.0]))
    assert c.captures == 1
