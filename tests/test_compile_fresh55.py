"""``tensorplay.compile``: two bugs a fresh user found (session 55). Public API only.

1. A tensor the compiled function reads from a closure, a global or an attribute (a graph
   constant, used by reference) whose *values* the capture read as Python values (a dim, a
   size, a slice bound, ``int(t)``, ``t.item()``...) was frozen into the graph: an in-place
   change of it kept the old graph (silently wrong results). The graph is now guarded on those
   values (as torch.compile specializes on them and guards): a change recaptures, eager's
   result; unchanged calls keep the cached graph. An *input* tensor used the same way is
   compile's data-dependent graph break naming ``Tensor.__index__`` (the function runs eagerly;
   with ``fullgraph=True`` a ``DispatchError``) (it raised "Tensor.item(): fake/meta tensors
   have no data", which mentions tensors the user never made).
2. The AOT node (``CompiledFunctionBackward``) version-checked every input, even those its
   backward never reads: ``x * 2`` refused a backward after its input was changed in place,
   where eager (and torch, eager or compiled) gives the gradient. It now checks what eager's
   formulas save; the inputs kept for the ``create_graph=True`` recompute are checked only when
   that recompute runs (a clear ``RuntimeError`` then).
"""

from __future__ import annotations

import gc
import weakref

import pytest

import tensorplay as tp
from tensorplay.errors import DispatchError

NODE = "CompiledFunctionBackward"


def _name(node):
    n = node.name
    return n() if callable(n) else n


# ---------------------------------------------------------------------------------------------
# 1. constants whose values the capture read

def _x2():
    return tp.arange(6.0).reshape(2, 3)


def _x1():
    return tp.arange(6.0)


# (make the constant, the function of (x, constant), the input, the new value[, captures after
# the change: 1 where the op's kernel reads the constant when the graph runs, by reference])
CASES = {
    "sum_dim": (lambda: tp.tensor(1), lambda x, c: x.sum(dim=c), _x2, 0),
    "reshape": (lambda: tp.tensor(2), lambda x, c: x.reshape(c, -1) + 0, _x1, 3),
    "slice_bound": (lambda: tp.tensor(2), lambda x, c: x[:c] * 1, _x1, 4),
    "select_index": (lambda: tp.tensor(1), lambda x, c: x.select(0, c) * 2, _x1, 2, 1),
    "softmax_dim": (lambda: tp.tensor(1), lambda x, c: x.softmax(c), _x2, 0),
    "unsqueeze_dim": (lambda: tp.tensor(0), lambda x, c: x.unsqueeze(c) + 1, _x1, 1),
    "narrow_int": (lambda: tp.tensor(2), lambda x, c: x.narrow(0, 0, int(c)) + 1, _x1, 5),
    "float_scale": (lambda: tp.tensor(2.0), lambda x, c: x * float(c), _x1, -3.0),
    "item_scale": (lambda: tp.tensor(2.0), lambda x, c: x + c.item(), _x1, 0.5),
    "tolist": (lambda: tp.tensor([1, 2]), lambda x, c: x * c.tolist()[1], _x1, 7),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_constant_read_as_a_value_changed_in_place_recaptures(case):
    make, body, inp, new, *more = CASES[case]
    c = make()
    cf = tp.compile(lambda x: body(x, c))
    x = inp()
    tp.testing.assert_close(cf(x), body(x, c))
    tp.testing.assert_close(cf(x), body(x, c))
    assert cf.captures == 1                   # unchanged: the cached graph
    c.fill_(new)
    want = body(x, c)
    got = cf(x)
    assert got.shape == want.shape
    tp.testing.assert_close(got, want)
    assert cf.captures == (more[0] if more else 2)


def test_constant_value_back_to_a_captured_one_reuses_its_graph():
    D = tp.tensor(1)
    cf = tp.compile(lambda x: x.sum(dim=D))
    x = _x2()
    for d in (1, 0, 1, 0, 1):
        D.fill_(d)
        tp.testing.assert_close(cf(x), x.sum(dim=d))
    assert cf.captures == 2
    D.fill_(1)                   # written, same value: no recapture
    tp.testing.assert_close(cf(x), x.sum(dim=1))
    assert cf.captures == 2


def test_attribute_and_global_constants_are_guarded():
    class M:
        def __init__(self):
            self.k = tp.tensor(2)

        def forward(self, x):
            return x.reshape(self.k, -1) * 2

    m = M()
    cf = tp.compile(m.forward)
    x = _x1()
    assert cf(x).shape == (2, 3)
    m.k.add_(1)
    tp.testing.assert_close(cf(x), x.reshape(3, -1) * 2)
    g = {"N": tp.tensor(3)}
    exec("def f(x):\n    return x[:int(N)] + 1\n", g)
    cg = tp.compile(g["f"])
    assert cg(x).shape == (3,)
    g["N"].fill_(5)
    tp.testing.assert_close(cg(x), x[:5] + 1)
    # a constant used as a tensor (no value read while capturing) stays by reference: in-place
    # updates are seen without a recapture
    w = tp.tensor([1.0, 2.0, 3.0])
    cw = tp.compile(lambda x: x * w)
    cw(tp.ones(3))
    w.mul_(2.0)
    tp.testing.assert_close(cw(tp.ones(3)), tp.tensor([2.0, 4.0, 6.0]))
    assert cw.captures == 1


@pytest.mark.parametrize("body", [
    lambda x, n: x[:n] * 1,
    lambda x, n: x.select(0, n) * 2,
    lambda x, n: x.softmax(n),
    lambda x, n: x.narrow(0, 0, n) + 1,
], ids=["slice_bound", "select_index", "softmax_dim", "narrow_length"])
def test_input_tensor_as_an_index_is_a_data_dependent_graph_break(body):
    cf = tp.compile(body, fullgraph=True)
    x = tp.arange(6.0).reshape(2, 3)
    with pytest.raises(DispatchError, match=r"Tensor\.__index__") as ei:
        cf(x, tp.tensor(1))
    assert "fake/meta" not in str(ei.value)
    # without fullgraph=True the graph break runs the function eagerly: eager's result
    cf = tp.compile(body)
    for n in (1, 0):
        tp.testing.assert_close(cf(x, tp.tensor(n)), body(x, tp.tensor(n)))
    (reason,) = cf.graph_skips.values()
    assert reason.startswith("runs eagerly: ") and "Tensor.__index__" in reason
    assert "fake/meta" not in reason


# ---------------------------------------------------------------------------------------------
# 2. the AOT node saves (and version-checks) only what eager's formulas save

FNS = {
    "mul_scalar": lambda x: x * 2,
    "add_scalar": lambda x: x + 1,
    "sum": lambda x: x.sum(),
    "exp": lambda x: x.exp(),          # saves its result, not x
    "relu": lambda x: x.relu(),        # saves its result
    "t_mul": lambda x: x.t() * 1,
    "chain": lambda x: (x * 3 + 1).tanh() * 2,
}


@pytest.mark.parametrize("name", sorted(FNS))
def test_input_written_in_place_before_backward_is_not_refused(name):
    fn = FNS[name]
    grads = []
    for f in (fn, tp.compile(fn), tp.compile(fn)):
        for _ in range(2):       # (the compiled function's second call too)
            leaf = tp.ones(2, 3, requires_grad=True)
            a = leaf * 1
            o = f(a)
            with tp.no_grad():
                a.add_(1)
            o.sum().backward()
        grads.append(leaf.grad)
    assert _name(o.grad_fn) == NODE
    tp.testing.assert_close(grads[1], grads[0])
    tp.testing.assert_close(grads[2], grads[0])


def test_captured_bias_and_zeroed_input_before_backward():
    b = tp.zeros(3, requires_grad=True)
    fn = lambda x: (x + b).relu().sum()      # noqa: E731
    res = []
    for f in (fn, tp.compile(fn), tp.compile(fn)):
        b.grad = None
        for _ in range(2):
            x = tp.ones(2, 3, requires_grad=True)
            loss = f(x)
            with tp.no_grad():
                b.add_(0.5)                  # an EMA / weight update before backward
            loss.backward()
        res.append((b.grad, x.grad))
    for got in res[1:]:
        tp.testing.assert_close(got[0], res[0][0] * 1)
        tp.testing.assert_close(got[1], res[0][1])
    fn2 = lambda h, x: (h * 0.9 + x).sum()   # noqa: E731
    res = []
    for f in (fn2, tp.compile(fn2)):
        for _ in range(2):
            w = tp.ones(3, requires_grad=True)
            h = w * 1.0
            loss = f(h, tp.ones(3))
            h.zero_()
            loss.backward()
        res.append(w.grad)
    tp.testing.assert_close(res[1], res[0])
    # an input eager's formulas save (mul saves x for w's gradient), written: eager's error
    cf = tp.compile(lambda x, w: (x * w).sum())
    for _ in range(2):
        x = tp.ones(3)
        w = tp.ones(3, requires_grad=True)
        y = cf(x, w)
    assert _name(y.grad_fn) == NODE
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_create_graph_recompute_refuses_an_input_written_since_the_call():
    cf = tp.compile(lambda x: (x * 2).sin().sum())
    for _ in range(2):
        leaf = tp.ones(3, requires_grad=True)
        a = leaf * 1
        y = cf(a)
    assert _name(y.grad_fn) == NODE
    with tp.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match=r"CompiledFunctionBackward.*modified by an "
                                           r"inplace operation.*create_graph=True"):
        tp.autograd.grad(y, leaf, create_graph=True)
    # unchanged inputs: eager's second derivative
    b = tp.ones(3, requires_grad=True)
    (g,) = tp.autograd.grad(cf(b * 1), b, create_graph=True)
    (gg,) = tp.autograd.grad(g.sum(), b)
    tp.testing.assert_close(gg, -4 * (2 * tp.ones(3)).sin())


def test_node_frees_unsaved_inputs_after_backward():
    cf = tp.compile(lambda x: x * 2)
    for _ in range(2):
        leaf = tp.ones(2, 3, requires_grad=True)
        a = leaf * 1
        o = cf(a)
    assert _name(o.grad_fn) == NODE
    ref = weakref.ref(a)
    del a
    o.sum().backward()
    gc.collect()
    assert ref() is None        # the node held it only for a recompute, until backward ran
    tp.testing.assert_close(leaf.grad, tp.full((2, 3), 2.0))
