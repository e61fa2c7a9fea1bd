"""Autograd state inside and after a compiled function is what eager code sees (as with
``torch.compile``, which gives eager's answers here):

* autograd metadata read inside the function (``requires_grad``, ``is_leaf``,
  ``grad_fn is None``, ``bool(grad_fn)``) answers as eager does for the same inputs -- of
  intermediates, of in-place results, of inputs that are not leaves -- and a graph that read it
  is not reused for inputs, or closure tensors, for which the answer differs; what cannot be
  known while capturing (``grad_fn.name()``, ``grad_fn.next_functions``) is a ``CompileError``;
* the global grad mode the function sets (``tp.set_grad_enabled(False)`` called as a function)
  is left set after the call, on the first call and on cache hits, in both modes, and when the
  function raises.

Every expected value is eager's, computed by calling the plain function.
"""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.errors import CompileError

pytestmark = pytest.mark.usefixtures("cpu", "grad_mode_restored")



def meta(t):
    return (t.requires_grad, t.is_leaf, t.grad_fn is None, bool(t.grad_fn))


def f_mul(x):
    y = x * 2
    return y, meta(y), meta(x)


def f_no_grad_block(x):
    with tp.no_grad():
        y = x * 2
    z = x.view(3)
    return meta(y), meta(z)


def f_in_place_into_fresh(x):
    a = tp.zeros(3)
    a.add_(x)                   # a becomes a non-leaf requiring grad when x requires grad
    return a, meta(a)


def f_in_place_into_a_view(x):
    a = tp.zeros(4)
    v1, v2 = a[:2], a[2:]
    v1.add_(x[:2])              # the view and its base get history, as eager (not v2)
    w = v1[0:1]
    return a, meta(a), meta(v1), meta(v2), meta(w)


def f_views_and_detach(x):
    y = x.view(3)
    return meta(y), meta(x.detach()), meta((x * 2).detach()), meta(y[0]), meta(x.sum())


def f_int_outputs(x):
    return meta(x > 0), meta(x.argmax())


def f_fresh_leaf_requiring_grad(x):
    z = tp.zeros(3, requires_grad=True)
    return meta(z), meta(z * x), meta(z.detach())


def f_branch_on_metadata(x):
    y = x * 3
    if y.requires_grad and not y.is_leaf and y.grad_fn is not None:
        return y + 1
    return y - 1


def f_requires_grad_set_on_fresh(x):
    y = x.clone().detach().requires_grad_(True)
    return meta(y), meta(y * x)


def f_detach_in_place(x):
    y = x * 2
    y.detach_()
    return meta(y)


CASES = [f_mul, f_no_grad_block, f_in_place_into_fresh, f_in_place_into_a_view, f_views_and_detach, f_int_outputs,
         f_fresh_leaf_requiring_grad, f_branch_on_metadata, f_requires_grad_set_on_fresh,
         f_detach_in_place]


def _plain(out):
    """Tensors as their values and autograd flags, everything else as is."""
    if isinstance(out, tp.Tensor):
        return ("tensor", out.tolist(), out.requires_grad, out.is_leaf)
    if isinstance(out, (tuple, list)):
        return tuple(_plain(o) for o in out)
    return out


def test_the_reported_repro():
    x = tp.ones(3, requires_grad=True)

    def f(x):
        y = x * 2
        return y, y.is_leaf, y.grad_fn is None, x.is_leaf

    assert f(x)[1:] == (False, False, True)
    assert tp.compile(f)(x)[1:] == (False, False, True)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("grad_mode", [True, False])
def test_metadata_read_inside_matches_eager(fn, requires_grad, grad_mode):
    tp.set_grad_enabled(grad_mode)
    x = tp.tensor([1.0, -2.0, 3.0], requires_grad=requires_grad)
    want = _plain(fn(x))
    c = tp.compile(fn)
    assert _plain(c(x)) == want
    assert _plain(c(x)) == want          # the cached graph


def test_one_compiled_function_follows_requires_grad_and_grad_mode_between_calls():
    c = tp.compile(f_mul)
    for rg, mode in [(True, True), (False, True), (True, False), (True, True), (False, False)]:
        tp.set_grad_enabled(mode)
        x = tp.tensor([1.0, 2.0, 3.0], requires_grad=rg)
        assert _plain(c(x)) == _plain(f_mul(x)), (rg, mode)


def test_an_input_that_is_not_a_leaf_says_so_and_the_graph_is_not_reused_for_a_leaf():
    def f(x):
        return x * 2, x.is_leaf, x.grad_fn is None

    c = tp.compile(f)
    leaf = tp.ones(3, requires_grad=True)
    nonleaf = tp.ones(3, requires_grad=True) * 1.0
    for x in (nonleaf, leaf, nonleaf, leaf):
        assert c(x)[1:] == f(x)[1:]


def test_a_closure_tensor_made_to_require_grad_after_the_capture_is_seen():
    w = tp.ones(3)

    def f(x):
        y = x * w
        return y, y.requires_grad, y.is_leaf

    c = tp.compile(f)
    x = tp.ones(3)
    assert c(x)[1:] == f(x)[1:] == (False, True)
    w.requires_grad_(True)
    assert f(x)[1:] == (True, False)
    assert c(x)[1:] == (True, False)


def test_switching_off_requires_grad_of_a_non_leaf_is_eagers_error():
    def f(x):
        y = x * 2
        y.requires_grad_(False)
        return y

    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as eager:
        f(x)
    with pytest.raises(RuntimeError) as compiled:
        tp.compile(f)(x)
    assert str(compiled.value) == str(eager.value)


@pytest.mark.parametrize("read", [
    lambda g: g.name,
    lambda g: g.next_functions,
    lambda g: [f for f, _ in g.next_functions],
    lambda g: type(g).__name__ + str(g.name),
])
def test_reading_the_grad_fn_node_itself_is_a_compile_error(read):
    def f(x):
        y = x * 2
        read(y.grad_fn)
        return y

    x = tp.ones(3, requires_grad=True)
    f(x)                                        # eager: fine
    with pytest.raises(CompileError, match=r"grad_fn.*(outside|result)"):
        tp.compile(f)(x)


def test_grad_fn_of_a_tensor_without_history_is_none_under_compile():
    def f(x):
        y = x * 2
        return y.grad_fn is None, y.is_leaf

    x = tp.ones(3)
    assert tp.compile(f)(x) == f(x) == (True, True)


# ---------------------------------------------------------------------------------------------
# the global grad mode after the call


def _off(x):
    tp.set_grad_enabled(False)
    return x * 2


def _on(x):
    tp.set_grad_enabled(True)
    return x * 2


def _off_no_ops(x):
    tp.set_grad_enabled(False)
    return x


def _set_by_arg(x, mode):
    tp.set_grad_enabled(mode)
    return x * 2


def _with_blocks(x):
    with tp.no_grad():
        y = x * 2
    with tp.enable_grad():
        z = x * 3
    return y + z


@tp.no_grad()
def _decorated_helper(x):
    return x * 2


def _calls_decorated(x):
    return _decorated_helper(x) + x


def _inference(x):
    with tp.inference_mode():
        y = x * 2
    return y + x


def _off_then_block(x):
    tp.set_grad_enabled(False)
    with tp.enable_grad():
        y = x * 2
    return y + x


MODE_CASES = [(_off, ()), (_on, ()), (_off_no_ops, ()), (_set_by_arg, (False,)),
              (_set_by_arg, (True,)), (_with_blocks, ()), (_calls_decorated, ()),
              (_inference, ()), (_off_then_block, ())]


@pytest.mark.parametrize("fn,extra", MODE_CASES, ids=lambda c: getattr(c, "__name__", repr(c)))
@pytest.mark.parametrize("start", [True, False])
def test_grad_mode_after_the_call_is_eagers(fn, extra, start):
    x = tp.ones(3, requires_grad=True)
    tp.set_grad_enabled(start)
    want = fn(x, *extra)
    want_mode = tp.is_grad_enabled()
    c = tp.compile(fn)
    for _ in range(3):                          # the capture, then cache hits
        tp.set_grad_enabled(start)
        got = c(x, *extra)
        assert tp.is_grad_enabled() is want_mode
        assert _plain(got) == _plain(want)


def test_grad_mode_set_by_a_non_constant_argument_follows_each_call():
    c = tp.compile(_set_by_arg)
    x = tp.ones(3, requires_grad=True)
    for mode in (False, True, False, True):
        tp.set_grad_enabled(True)
        y = c(x, mode)
        assert tp.is_grad_enabled() is mode
        assert y.requires_grad is mode


def test_a_function_that_turns_grad_off_and_raises_leaves_it_off_as_eager():
    def f(x):
        tp.set_grad_enabled(False)
        _ = x * 2
        raise ValueError("boom")

    x = tp.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="boom"):
        f(x)
    assert tp.is_grad_enabled() is False
    tp.set_grad_enabled(True)
    with pytest.raises(ValueError, match="boom"):
        tp.compile(f)(x)
    assert tp.is_grad_enabled() is False


def test_a_function_that_raises_inside_a_no_grad_block_leaves_grad_on_as_eager():
    def f(x):
        with tp.no_grad():
            raise ValueError("boom")

    x = tp.ones(3, requires_grad=True)
    with pytest.raises(ValueError):
        tp.compile(f)(x)
    assert tp.is_grad_enabled() is True


def test_a_capture_stopped_by_data_dependent_code_leaves_the_grad_mode_as_eager():
    def f(x):
        tp.set_grad_enabled(False)
        if x.sum() > 0:             # refused by the capture, not by eager code
            return x
        return -x

    x = tp.ones(3)
    # fullgraph=True: the refused capture restores the grad mode it found
    tp.set_grad_enabled(True)
    with pytest.raises(CompileError, match="bool"):
        tp.compile(f, fullgraph=True)(x)
    assert tp.is_grad_enabled() is True
    # the default: a graph break, the function runs eagerly and leaves grad off, as eager does
    eager = f(x).tolist()
    eager_mode = tp.is_grad_enabled()
    tp.set_grad_enabled(True)
    assert tp.compile(f)(x).tolist() == eager
    assert tp.is_grad_enabled() is eager_mode is False


def test_reduce_overhead_replays_leave_the_grad_mode_as_eager():
    pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend

    with MockBackend("mockg", graphs=True) as be:
        x = tp.ones(8).to("mockg")
        c = tp.compile(_off, mode="reduce-overhead")
        for _ in range(4):                      # a normal run, the recording, then replays
            tp.set_grad_enabled(True)
            assert c(x).tolist() == [2.0] * 8
            assert tp.is_grad_enabled() is False
        assert [k for k in be.calls if k.endswith("_graph")]      # a graph was replayed


def test_reading_an_inputs_grad_is_a_compile_error_not_a_baked_none():
    def step(p):
        if p.grad is not None:
            return p - p.grad
        return p

    p = tp.ones(3, requires_grad=True)
    (p * 2).sum().backward()
    assert step(p).tolist() == [-1.0, -1.0, -1.0]
    with pytest.raises(CompileError, match=r"Tensor.grad of an input.*argument"):
        tp.compile(step)(p)


def test_assigning_grad_inside_is_eagers_or_a_compile_error_never_dropped():
    def f(x):
        x.grad = tp.zeros(3)
        return x * 2

    # an attribute store is a side effect: the capture stops before it and the call runs eagerly
    x = tp.ones(3, requires_grad=True)
    assert tp.compile(f)(x).tolist() == [2.0] * 3
    assert x.grad is not None and x.grad.tolist() == [0.0] * 3
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(CompileError, match=r"\.grad"):
        tp.compile(f, fullgraph=True)(x)
    assert x.grad is None


def test_grad_of_a_tensor_made_inside_is_none_as_eager():
    def f(x):
        y = x * 2
        return y.grad is None, tp.zeros(2).grad is None, y

    x = tp.ones(3, requires_grad=True)
    assert tp.compile(f)(x)[:2] == f(x)[:2] == (True, True)
