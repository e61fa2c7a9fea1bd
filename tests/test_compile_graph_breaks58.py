"""Data-dependent Python inside a compiled function is a graph break, as with torch.compile.

``bool(t)`` (an ``if`` on a tensor, a comparison used as a Python bool), ``t.item()``,
``float(t)``, ``int(t)``, ``t.tolist()``, ``t.numpy()`` and ``loss.backward()`` inside a function
given to ``tensorplay.compile``: without ``fullgraph=True`` the function runs eagerly (eager's
results and gradients, on every call and every shape, the reason in ``graph_skips``); with it,
a ``CompileError`` naming the construct. Python side effects and in-place updates happen once
per call, and a function whose data-dependent code is not reached at capture stays compiled.
"""
import pytest

import tensorplay as tp
from tensorplay.errors import CompileError


def _branch(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def _item(x):
    return x * x.max().item()


def _float(x):
    return x / float(x.abs().sum() + 1)


def _int(x):
    return x * int(x.sum())


def _tolist(x):
    return x + sum(x.flatten().tolist())


def _numpy(x):
    return x * float(x.detach().numpy().max())


def _compare(x):
    return x * 3 if (x > 0).all() else x + 1


FORMS = {
    "bool": (_branch, r"bool\(tensor\)"),
    "item": (_item, r"Tensor\.item\(\)"),
    "float": (_float, r"float\(tensor\)"),
    "int": (_int, r"int\(tensor\)"),
    "tolist": (_tolist, r"Tensor\.tolist\(\)"),
    "numpy": (_numpy, r"Tensor\.numpy\(\)"),
    "compare": (_compare, r"bool\(tensor\)"),
}

INPUTS = [
    [1.0, 2.0, 3.0],
    [-1.0, -2.0, -3.0],            # the other branch, same shape
    [0.5, -4.0],                   # a new shape
    [[1.0, -1.0], [2.0, 3.0]],     # a new rank
    [2.0, 1.0, 0.5],
]


@pytest.mark.parametrize("name", sorted(FORMS))
def test_data_dependent_python_gives_eager_results(name):
    fn, _ = FORMS[name]
    c = tp.compile(fn)
    for vals in INPUTS:
        assert c(tp.tensor(vals)).tolist() == fn(tp.tensor(vals)).tolist(), vals
    reasons = list(c.graph_skips.values())
    assert reasons and all(r.startswith("runs eagerly: ") for r in reasons), reasons


@pytest.mark.parametrize("name", sorted(FORMS))
def test_data_dependent_python_gradients_are_eager(name):
    fn, _ = FORMS[name]
    c = tp.compile(fn)
    for vals in INPUTS[:3]:
        xe = tp.tensor(vals, requires_grad=True)
        xc = tp.tensor(vals, requires_grad=True)
        ye = fn(xe)
        yc = c(xc)
        assert yc.tolist() == ye.tolist()
        assert yc.requires_grad
        (ye * ye).sum().backward()
        (yc * yc).sum().backward()
        assert xc.grad.tolist() == xe.grad.tolist(), vals


@pytest.mark.parametrize("name", sorted(FORMS))
def test_fullgraph_true_raises_a_compile_error_naming_the_construct(name):
    fn, pattern = FORMS[name]
    c = tp.compile(fn, fullgraph=True)
    with pytest.raises(CompileError, match=pattern) as ei:
        c(tp.tensor([1.0, 2.0]))
    assert "fullgraph" in str(ei.value) or "compiled function" in str(ei.value)
    assert not c.graph_skips


def test_graph_skips_names_the_construct():
    c = tp.compile(_item)
    c(tp.ones(3))
    (reason,) = c.graph_skips.values()
    assert reason.startswith("runs eagerly: ") and "Tensor.item()" in reason


def test_later_calls_do_not_capture_again():
    c = tp.compile(_branch)
    for vals in INPUTS:
        c(tp.tensor(vals))
    assert c.captures <= 1
    assert len(c.graph_skips) == 1


def test_backward_inside_the_compiled_function_runs_eagerly():
    def step(w, x):
        loss = ((w * x).sum() - 1.0) ** 2
        loss.backward()
        return loss.detach()

    c = tp.compile(step)
    for vals in ([1.0, 2.0], [0.5, -1.0], [3.0, 1.0, 2.0]):
        we = tp.tensor(vals, requires_grad=True)
        wc = tp.tensor(vals, requires_grad=True)
        x = tp.tensor([2.0] * len(vals))
        le = step(we, x)
        lc = c(wc, x)
        assert lc.tolist() == le.tolist()
        assert wc.grad.tolist() == we.grad.tolist()
    assert any("backward" in r for r in c.graph_skips.values())
    with pytest.raises(CompileError, match=r"Tensor\.backward\(\)"):
        tp.compile(step, fullgraph=True)(tp.ones(2, requires_grad=True), tp.ones(2))


def test_inplace_updates_happen_once_per_call():
    buf = tp.zeros(3)

    def f(x):
        buf.add_(x)                 # a lifted tensor written in place, before the break
        x2 = x.clone()
        x2.mul_(2)
        if x2.sum() > 0:
            return x2 + buf
        return x2 - buf

    c = tp.compile(f)
    ref = tp.zeros(3)
    for k in range(1, 5):
        x = tp.full((3,), float(k))
        ref.add_(x)
        out = c(x)
        assert buf.tolist() == ref.tolist(), k
        assert out.tolist() == (x * 2 + ref).tolist()


def test_inplace_update_of_an_input_happens_once_per_call():
    def f(x):
        x.add_(1)
        return x * x.max().item()

    c = tp.compile(f)
    x = tp.zeros(2)
    for k in range(1, 4):
        out = c(x)
        assert x.tolist() == [float(k)] * 2
        assert out.tolist() == [float(k * k)] * 2


def test_python_side_effects_before_the_break_are_never_doubled():
    # the capture stops before the watched effect (and puts back the dict item it changed):
    # the call runs the function eagerly, each effect once, as every later call
    log = []
    state = {"n": 0}

    def f(x):
        state["n"] += 1
        log.append(1)
        y = x * 2
        return y + y.sum().item()

    c = tp.compile(f)
    for k in range(1, 4):
        assert c(tp.ones(2)).tolist() == [6.0, 6.0]
        assert len(log) == k and state["n"] == k
    assert "list.append" in next(iter(c.graph_skips.values()))


def test_print_before_the_break_is_never_doubled(capsys):
    def f(x):
        print("step")
        return x * x.sum().item()

    c = tp.compile(f)
    for k in range(1, 4):
        assert c(tp.ones(2)).tolist() == [2.0, 2.0]
        assert capsys.readouterr().out.count("step") == 1


def test_print_after_the_break_prints_once_per_call(capsys):
    def f(x):
        s = x.sum().item()
        print("step", s)
        return x * s

    c = tp.compile(f)
    for _ in range(3):
        assert c(tp.ones(2)).tolist() == [2.0, 2.0]
    assert capsys.readouterr().out.count("step") == 3


def test_side_effect_after_the_break_happens_once_per_call():
    log = []

    def f(x):
        s = x.sum().item()
        log.append(s)
        return x * s

    c = tp.compile(f)
    for k in range(1, 4):
        assert c(tp.full((2,), float(k))).tolist() == [2.0 * k * k] * 2
    assert log == [2.0, 4.0, 6.0]


def test_branch_not_taken_at_capture_still_compiles():
    def f(x, debug):
        y = x * 2 + 1
        if debug:
            print(y.sum().item())
        return y.relu()

    c = tp.compile(f)
    for _ in range(3):
        assert c(tp.tensor([1.0, -3.0]), False).tolist() == [3.0, 0.0]
    assert c.captures == 1 and not c.graph_skips
    assert c.graph is not None


def test_data_read_caught_by_the_function_runs_eagerly():
    def f(x):
        try:
            return x * 2 if x.sum() > 0 else x - 1
        except Exception:
            return x + 100

    c = tp.compile(f)
    for vals in ([1.0, 2.0], [-1.0, -2.0]):
        assert c(tp.tensor(vals)).tolist() == f(tp.tensor(vals)).tolist()
    with pytest.raises(CompileError):
        tp.compile(f, fullgraph=True)(tp.ones(2))


def test_reset_captures_again():
    c = tp.compile(_branch)
    c(tp.ones(2))
    assert c.graph_skips
    c.reset()
    assert not c.graph_skips
    assert c(tp.ones(2)).tolist() == [2.0, 2.0]
    assert c.graph_skips
