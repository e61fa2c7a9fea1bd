"""AOT autograd for ``tensorplay.compile`` (session 55, issue 32 item 6): a compiled function
called with grad mode on, where an input or a tensor it reads requires grad, runs its captured
graph as ONE autograd node (``CompiledFunctionBackward``, torch's name) whose backward is a
second graph traced from the ops' formulas. Gradients equal the per-op (eager) path's; graphs
it does not handle take the per-op path (the output's ``grad_fn`` is then the last op's node).

Public API only (the fast path is seen through the outputs' ``grad_fn`` name), but for one
fixture: every test runs with both ways the backward can run -- ``"replay"`` (the formulas
called on the saved values with the ctx their setup_context made when traced) and ``"graph"``
(the traced backward graph, used when a setup_context computes a tensor) -- by setting the
module knob ``tensorplay._joint.BACKWARD``; ``test_setup_context_computing_a_tensor`` reaches
the graph through the public API.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.library import custom_op

NODE = "CompiledFunctionBackward"


@pytest.fixture(autouse=True, params=["replay", "graph"])
def backward_mode(request, monkeypatch):
    from tensorplay import _joint
    monkeypatch.setattr(_joint, "BACKWARD", request.param)
    return request.param


def _name(node):
    n = node.name
    return n() if callable(n) else n


def _arr(*shape, seed=0, dt=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _leaves(arrays, rg=None):
    rg = rg if rg is not None else [True] * len(arrays)
    return [tp.tensor(a.copy(), requires_grad=r) for a, r in zip(arrays, rg)]


def _grads_of(fn, arrays, rg=None, calls=2, seed_grad=None):
    """(outputs, grads) of ``fn`` run ``calls`` times on fresh leaves (the last call's), for
    compiled and eager ``fn``; asserts the compiled outputs' node is the fast path's."""
    out = {}
    cf = tp.compile(fn)
    for label, f in (("compiled", cf), ("eager", fn)):
        for _ in range(calls):
            xs = _leaves(arrays, rg)
            y = f(*xs)
            ys = y if isinstance(y, tuple) else (y,)
            gs = [tp.ones_like(t) for t in ys] if seed_grad is None else seed_grad(ys)
            pairs = [(t, g) for t, g in zip(ys, gs) if g is not None and t.requires_grad]
            tp.autograd.backward([t for t, _ in pairs], [g for _, g in pairs])
        out[label] = (ys, [x.grad for x in xs])
    return out, cf


def _check(out, node=NODE, rtol=1e-5, atol=1e-6):
    (cy, cg), (ey, eg) = out["compiled"], out["eager"]
    for a, b in zip(cy, ey):
        tp.testing.assert_close(a.detach(), b.detach(), rtol=rtol, atol=atol)
    for a, b in zip(cg, eg):
        if b is None:
            assert a is None
        else:
            tp.testing.assert_close(a, b, rtol=rtol, atol=atol)
    if node is not None:
        assert _name(cy[0].grad_fn) == node


# -- gradients equal eager's, through one node ---------------------------------------------------
def test_elementwise_chain():
    out, _ = _grads_of(lambda x, y: ((x * y).exp() + x.sin() * 2.0 - y / 3.0).tanh(),
                       [_arr(5, 7), _arr(5, 7, seed=1)])
    _check(out)


def test_broadcast_bias_add_and_matmul():
    def f(x, w, b):
        return tp.relu(x @ w + b)
    out, _ = _grads_of(f, [_arr(4, 6), _arr(6, 3, seed=1), _arr(3, seed=2)])
    _check(out)


@pytest.mark.parametrize("red", [
    lambda t: t.sum(),
    lambda t: t.mean(),
    lambda t: t.sum(0),
    lambda t: t.sum(-1, keepdim=True),
    lambda t: t.mean((0, 1)),
    lambda t: t.mean(1, keepdim=True),
])
def test_reductions(red):
    out, _ = _grads_of(lambda x, y: red(x * y + x), [_arr(3, 4, 5), _arr(3, 4, 5, seed=1)])
    _check(out)


def test_log_softmax_loss_scalar_output():
    def f(x, w, onehot):
        return -(tp.log_softmax(x @ w, -1) * onehot).sum() / 4
    oh = np.eye(5, dtype=np.float32)[[0, 3, 1, 4]]
    out, _ = _grads_of(f, [_arr(4, 8), _arr(8, 5, seed=1), oh], rg=[True, True, False])
    _check(out)


def test_inputs_not_requiring_grad_get_none():
    out, _ = _grads_of(lambda x, y, z: (x * y + z).sum(), [_arr(3), _arr(3, seed=1), _arr(3, seed=2)],
                       rg=[True, False, True])
    _check(out)
    assert out["compiled"][1][1] is None


def _layer_norm_op(name):
    def body(x: tp.Tensor, w: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        r = tp.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5)
        return xc * r * w + b

    def setup(ctx, inputs, output):
        x, w, _ = inputs
        ctx.save_for_backward(x, w)

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        r = tp.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5)
        xh = xc * r
        gx = g * w
        dx = r * (gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True))
        return dx, (g * xh).sum(0), g.sum(0)

    op = custom_op(name, body, mutates_args=())
    op.register_autograd(backward, setup_context=setup)
    return op


def test_custom_op_with_register_autograd_mlp():
    ln = _layer_norm_op("joint55test::layer_norm")

    def f(w1, b1, g, beta, w2, b2, x, onehot):
        h = ln(tp.relu(x @ w1 + b1), g, beta)
        logits = h @ w2 + b2
        return -(tp.log_softmax(logits, -1) * onehot).sum() / 3

    arrays = [_arr(8, 6) * 0.3, _arr(6, seed=1), np.ones(6, np.float32), np.zeros(6, np.float32),
              _arr(6, 4, seed=2), np.zeros(4, np.float32), _arr(3, 8, seed=3),
              np.eye(4, dtype=np.float32)[[1, 0, 3]]]
    out, _ = _grads_of(f, arrays, rg=[True] * 6 + [False, False], calls=3)
    _check(out, rtol=1e-4, atol=1e-6)


def test_user_formula_gradient_is_summed_to_the_input_shape():
    # a user formula returning a broadcast-shaped gradient: the engine sums it to the input's
    # shape (UserFunctionNode); the traced backward must too
    def body(x: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
        return x + b

    def backward(ctx, g):
        return g, g            # g has x's shape, b is (3,): summed by the engine

    op = custom_op("joint55test::bias", body, mutates_args=())
    op.register_fake(lambda x, b: tp.empty_like(x))
    op.register_autograd(backward)
    out, _ = _grads_of(lambda x, b: (op(x, b) * 2.0).sum(), [_arr(4, 3), _arr(3, seed=1)])
    _check(out)


def test_setup_context_computing_a_tensor():
    # a setup_context that saves a tensor it computes (not a forward value): the traced
    # backward graph computes it from the saved values
    def body(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
        return x * w * w

    def setup(ctx, inputs, output):
        x, w = inputs
        ctx.save_for_backward(x, w * w, w)

    def backward(ctx, g):
        x, w2, w = ctx.saved_tensors
        return g * w2, (g * x * w * 2).sum(0)

    op = custom_op("joint55test::sq", body, mutates_args=())
    op.register_fake(lambda x, w: tp.empty_like(x))
    op.register_autograd(backward, setup_context=setup)
    out, _ = _grads_of(lambda x, w: (op(x, w) + x).exp().sum(), [_arr(3, 4), _arr(4, seed=1)])
    _check(out)


def test_graph_constant_requiring_grad():
    w = tp.tensor(_arr(4, 3), requires_grad=True)

    def f(x):
        return (x @ w).tanh().sum()

    cf = tp.compile(f)
    for _ in range(2):
        w.grad = None
        x = tp.tensor(_arr(2, 4, seed=1), requires_grad=True)
        y = cf(x)
        assert _name(y.grad_fn) == NODE
        y.backward()
        cg = (x.grad, w.grad)
    w.grad = None
    x2 = tp.tensor(_arr(2, 4, seed=1), requires_grad=True)
    f(x2).backward()
    tp.testing.assert_close(cg[0], x2.grad)
    tp.testing.assert_close(cg[1], w.grad)
    # the constant stops requiring grad: no gradient for it, the input's still right
    w.requires_grad_(False)
    w.grad = None
    x3 = tp.tensor(_arr(2, 4, seed=1), requires_grad=True)
    cf(x3).backward()
    assert w.grad is None
    tp.testing.assert_close(x3.grad, x2.grad)


def test_only_constant_requires_grad():
    w = tp.tensor(_arr(3), requires_grad=True)
    cf = tp.compile(lambda x: (x * w).sum())
    x = tp.tensor(_arr(3, seed=1))
    for _ in range(2):
        w.grad = None
        y = cf(x)
        assert _name(y.grad_fn) == NODE
        y.backward()
    tp.testing.assert_close(w.grad, x)


def test_autograd_grad_and_backward_inputs():
    def f(x, y):
        return (x * y).sin().sum()

    cf = tp.compile(f)
    a, b = _arr(4), _arr(4, seed=1)
    for _ in range(2):
        x, y = _leaves([a, b])
        out = cf(x, y)
        assert _name(out.grad_fn) == NODE
        gx, gy = tp.autograd.grad(out, [x, y])
    x2, y2 = _leaves([a, b])
    ex, ey = tp.autograd.grad(f(x2, y2), [x2, y2])
    tp.testing.assert_close(gx, ex)
    tp.testing.assert_close(gy, ey)
    assert x.grad is None and y.grad is None
    # backward(inputs=[x]): only x.grad is written
    x, y = _leaves([a, b])
    cf(x, y).backward(inputs=[x])
    tp.testing.assert_close(x.grad, ex)
    assert y.grad is None


def test_hooks_on_inputs_and_grad_accumulation():
    cf = tp.compile(lambda x: (x * x).sum())
    cf(tp.tensor(_arr(3), requires_grad=True)).backward()       # (first call: capture)
    x = tp.tensor(_arr(3), requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g) or g * 10)
    y = cf(x)
    assert _name(y.grad_fn) == NODE
    y.backward()
    assert len(seen) == 1
    tp.testing.assert_close(seen[0], x.detach() * 2)
    tp.testing.assert_close(x.grad, x.detach() * 20)
    cf(x).backward()                                                 # accumulates
    tp.testing.assert_close(x.grad, x.detach() * 40)


def test_non_leaf_input_gradients_flow_to_its_history():
    cf = tp.compile(lambda h: (h.exp() * 2).sum())
    for _ in range(2):
        x = tp.tensor(_arr(5), requires_grad=True)
        h = x * 3
        y = cf(h)
        assert _name(y.grad_fn) == NODE
        y.backward()
    tp.testing.assert_close(x.grad, (x.detach() * 3).exp() * 6)


def test_second_backward_needs_retain_graph():
    cf = tp.compile(lambda x: (x.exp() * x).sum())
    cf(tp.tensor(_arr(3), requires_grad=True))
    x = tp.tensor(_arr(3), requires_grad=True)
    y = cf(x)
    assert _name(y.grad_fn) == NODE
    y.backward(retain_graph=True)
    g1 = x.grad.clone()
    y.backward()
    tp.testing.assert_close(x.grad, g1 * 2)
    y2 = cf(x)
    y2.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y2.backward()


def test_saved_value_modified_in_place_is_refused():
    cf = tp.compile(lambda x, w: (x * w).sum())
    a, b = _arr(3), _arr(3, seed=1)
    cf(*_leaves([a, b]))
    x = tp.tensor(a)
    w = tp.tensor(b, requires_grad=True)
    y = cf(x, w)
    assert _name(y.grad_fn) == NODE
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("fn", [
    lambda x, y: (x * y).sin().sum(),
    lambda x, y: (tp.log_softmax(x * y, -1) ** 2).sum(),
    lambda x, y: ((x @ y.t()).tanh() * x.sum()).mean(),
])
def test_double_backward_matches_eager(fn):
    a, b = _arr(3, 3), _arr(3, 3, seed=1)
    cf = tp.compile(fn)
    res = {}
    for label, f in (("compiled", cf), ("eager", fn)):
        for _ in range(2):
            x, y = _leaves([a, b])
            out = f(x, y)
            gx, gy = tp.autograd.grad(out, [x, y], create_graph=True)
            s = (gx * gx).sum() + (gx * gy).sum()
            hx, hy = tp.autograd.grad(s, [x, y])
        if label == "compiled":
            assert _name(out.grad_fn) == NODE
        res[label] = (gx.detach(), gy.detach(), hx, hy)
    for u, v in zip(res["compiled"], res["eager"]):
        tp.testing.assert_close(u, v, rtol=1e-4, atol=1e-5)


def test_third_derivative_matches_eager():
    fn = lambda x: (x * x * x).sum()    # noqa: E731
    cf = tp.compile(fn)
    for f in (cf, cf):
        x = tp.tensor(np.array([1.0, 2.0, -3.0], np.float32), requires_grad=True)
        (g,) = tp.autograd.grad(f(x), x, create_graph=True)
        (h,) = tp.autograd.grad(g.sum(), x, create_graph=True)
        (t,) = tp.autograd.grad(h.sum(), x)
    tp.testing.assert_close(g.detach(), 3 * x.detach() ** 2)
    tp.testing.assert_close(h.detach(), 6 * x.detach())
    tp.testing.assert_close(t, tp.full((3,), 6.0))


def test_several_outputs_and_only_one_used():
    def f(x, y):
        return (x * y).exp(), (x / y).log(), (x + y).sum()

    a = np.abs(_arr(4)) + 0.5
    b = np.abs(_arr(4, seed=1)) + 0.5
    out, _ = _grads_of(f, [a, b])
    _check(out)
    cf = tp.compile(f)
    for _ in range(2):
        x, y = _leaves([a, b])
        r = cf(x, y)
        assert all(_name(t.grad_fn) == NODE for t in r)
        r[1].sum().backward()           # the others get no gradient: eager's formulas only
    x2, y2 = _leaves([a, b])
    f(x2, y2)[1].sum().backward()
    tp.testing.assert_close(x.grad, x2.grad)
    tp.testing.assert_close(y.grad, y2.grad)


def test_output_not_requiring_grad_has_no_history():
    def f(x, z):
        return x * 2, z + 1

    cf = tp.compile(f)
    for _ in range(2):
        x = tp.tensor(_arr(3), requires_grad=True)
        z = tp.tensor(_arr(3, seed=1))
        a, b = cf(x, z)
    assert _name(a.grad_fn) == NODE
    assert not b.requires_grad and b.grad_fn is None
    a.sum().backward()
    tp.testing.assert_close(x.grad, tp.full((3,), 2.0))


def _grads_match_per_size(f, sizes, k, m):
    """``tp.compile(f)(x, w)`` for x of each (n, k) in ``sizes`` and w (k, m): gradients equal
    eager's, and the last call's output has the AOT node."""
    cf = tp.compile(f)
    for n in sizes:
        x, w = _leaves([_arr(n, k, seed=n), _arr(k, m)])
        y = cf(x, w)
        y.backward()
        x2, w2 = _leaves([_arr(n, k, seed=n), _arr(k, m)])
        f(x2, w2).backward()
        tp.testing.assert_close(x.grad, x2.grad)
        tp.testing.assert_close(w.grad, w2.grad)
    assert _name(y.grad_fn) == NODE


def test_recapture_on_new_shapes_gives_right_gradients():
    def f(x, w):
        return (x @ w).relu().sum(0).mean()

    _grads_match_per_size(f, (2, 5, 2, 7), 4, 3)


def test_no_grad_call_and_nothing_requiring_grad_record_nothing():
    cf = tp.compile(lambda x: (x * 2).sum())
    x = tp.tensor(_arr(3), requires_grad=True)
    with tp.no_grad():
        y = cf(x)
    assert y.grad_fn is None and not y.requires_grad
    y = cf(tp.tensor(_arr(3)))
    assert y.grad_fn is None and not y.requires_grad


# -- fallbacks: the per-op path, gradients still eager's -----------------------------------------
def _fallback(fn, arrays, rg=None, node=None):
    out, cf = _grads_of(fn, arrays, rg)
    (cy, _), _ = out["compiled"], None
    assert _name(cy[0].grad_fn) != NODE
    _check(out, node=None)
    return cf


def test_fallback_in_place_op_inside():
    def f(x):
        y = x * 2
        y.add_(1.0)
        return y.exp()
    _fallback(f, [_arr(4)])


def test_fallback_grad_mode_off_inside():
    def f(x, y):
        with tp.no_grad():
            s = x * 3
        return (s * y).sum()
    _fallback(f, [_arr(4), _arr(4, seed=1)])


def test_fallback_output_is_a_view_of_an_input():
    _fallback(lambda x: (x.t(), (x * 2).sum()), [_arr(3, 2)])


def test_fallback_output_is_an_input():
    def f(x, y):
        return (x * y).sum(), y
    out, cf = _grads_of(f, [_arr(3), _arr(3, seed=1)], rg=[True, False])
    assert _name(out["compiled"][0][0].grad_fn) != NODE
    _check(out, node=None)


def test_fallback_integer_output():
    def f(x):
        return (x * 2).exp(), x.argmax()
    out, cf = _grads_of(f, [_arr(5)], seed_grad=lambda ys: [tp.ones_like(ys[0]), None])
    assert _name(out["compiled"][0][0].grad_fn) != NODE
    _check(out, node=None)


def test_fallback_retain_grad_inside():
    seen = {}

    def f(x):
        y = x * 2
        y.retain_grad()
        seen["y"] = y
        return (y * y).sum()
    _fallback(f, [_arr(3)])


def test_fallback_detach_inside():
    _fallback(lambda x: (x.detach() * x).sum(), [_arr(3)])


def test_fallback_custom_op_without_formula_requiring_grad():
    @custom_op("joint55test::composite", mutates_args=())
    def comp(x: tp.Tensor) -> tp.Tensor:
        return x * x + 1

    _fallback(lambda x: comp(x * 2).sum(), [_arr(4)])


def test_fallback_formula_that_cannot_be_traced():
    # a user formula that reads values (.item()) cannot be captured: the per-op path runs it
    def body(x: tp.Tensor) -> tp.Tensor:
        return x * 3

    def backward(ctx, g):
        return g * float(g.sum().item() * 0 + 3)

    op = custom_op("joint55test::datadep", body, mutates_args=())
    op.register_fake(lambda x: tp.empty_like(x))
    op.register_autograd(backward)
    _fallback(lambda x: (op(x) * 2).sum(), [_arr(4)])


def test_fallback_random_op():
    cf = tp.compile(lambda x: (tp.nn.functional.dropout(x, 0.5) * 2).sum()
                    if hasattr(tp, "nn") else (x * tp.rand_like(x)).sum())
    x = tp.tensor(_arr(4), requires_grad=True)
    for _ in range(2):
        y = cf(x)
    assert _name(y.grad_fn) != NODE


def test_hooks_and_retain_grad_on_outputs_after_the_call():
    cf = tp.compile(lambda x: (x * 3).tanh())
    cf(tp.tensor(_arr(4), requires_grad=True))
    x = tp.tensor(_arr(4), requires_grad=True)
    y = cf(x)
    assert _name(y.grad_fn) == NODE and not y.is_leaf
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g) or g * 2)
    (y * y).sum().backward()
    tp.testing.assert_close(y.grad, 4 * y.detach())   # (torch: retain_grad stores last)
    assert len(seen) == 1
    x2 = tp.tensor(x.detach().numpy().copy(), requires_grad=True)
    y2 = (x2 * 3).tanh()
    y2.register_hook(lambda g: g * 2)
    (y2 * y2).sum().backward()
    tp.testing.assert_close(x.grad, x2.grad)


def test_size_dependent_graph_and_python_scalars():
    # x.shape[0] read as a Python value: guarded on exact sizes, one plan per size
    def f(x, w):
        return (x @ w).exp().sum() / x.shape[0]

    _grads_match_per_size(f, (3, 3, 5, 5), 2, 2)


def test_multi_output_op_and_integer_intermediates():
    def f(x, w):
        v, i = (x @ w).max(dim=1)
        return (v * 2).sum() + x.gather(1, i.unsqueeze(1) % x.shape[1]).sum()
    out, _ = _grads_of(f, [_arr(4, 3), _arr(3, 5, seed=1)])
    _check(out)


def test_same_tensor_passed_twice_and_mixed_dtypes():
    def f(x, y, z):
        return ((x * y).exp() + z.to(tp.float32)).sum()
    cf = tp.compile(f)
    a = _arr(3)
    for _ in range(2):
        x = tp.tensor(a.copy(), requires_grad=True)
        z = tp.tensor(_arr(3, seed=2, dt=np.float64), requires_grad=True)
        y = cf(x, x, z)
        assert _name(y.grad_fn) == NODE
        y.backward()
    x2 = tp.tensor(a.copy(), requires_grad=True)
    z2 = tp.tensor(_arr(3, seed=2, dt=np.float64), requires_grad=True)
    f(x2, x2, z2).backward()
    tp.testing.assert_close(x.grad, x2.grad)
    tp.testing.assert_close(z.grad, z2.grad)
    assert z.grad.dtype == tp.float64


def test_constant_with_history():
    base = tp.tensor(_arr(3), requires_grad=True)
    w = base * 2                     # a non-leaf constant: gradients flow into base

    def f(x):
        return (x * w).sum()

    cf = tp.compile(f)
    for _ in range(2):
        base.grad = None
        y = cf(tp.tensor(_arr(3, seed=1)))
        assert _name(y.grad_fn) == NODE
        y.backward(retain_graph=True)
    tp.testing.assert_close(base.grad, tp.tensor(_arr(3, seed=1)) * 2)


def test_fallback_output_is_a_view_of_a_value_made_inside():
    # eager: an in-place write to the returned view goes through its base's history
    def f(x):
        return (x * 2).t()

    cf = tp.compile(f)
    res = []
    for g in (cf, cf, f):
        x = tp.tensor(_arr(2, 3), requires_grad=True)
        y = g(x)
        y.mul_(3.0)
        y.sum().backward()
        res.append((y, x.grad))
    assert _name(res[1][0].grad_fn) != NODE
    tp.testing.assert_close(res[1][1], res[2][1])


def test_in_place_write_to_an_output_after_the_call():
    def f(x):
        return (x * 2).sin()            # sin saves its input, not its output

    cf = tp.compile(f)
    res = []
    for g in (cf, cf, f):
        x = tp.tensor(_arr(2, 3), requires_grad=True)
        y = g(x)
        y.mul_(3.0)
        y[0].sum().backward()
        res.append((y, x.grad))
    assert _name(res[1][0].grad_fn) != NODE            # the write's node, over this one
    tp.testing.assert_close(res[1][1], res[2][1])
    # an output the backward saved (exp saves its result), written in place: eager's error
    cf2 = tp.compile(lambda x: (x * 2).exp())
    for _ in range(2):
        x = tp.tensor(_arr(3), requires_grad=True)
        y = cf2(x)
    assert _name(y.grad_fn) == NODE
    y.mul_(3.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_threads_share_one_compiled_function():
    import threading
    ln = _layer_norm_op("joint55test::layer_norm_threads")

    def f(x, w, g, b):
        return (ln(x @ w, g, b) * 2).tanh().sum()

    cf = tp.compile(f)
    arrays = [_arr(4, 6), _arr(6, 5, seed=1), np.ones(5, np.float32), np.zeros(5, np.float32)]
    ref = _leaves(arrays)
    f(*ref).backward()
    errors = []

    def work():
        try:
            for _ in range(20):
                xs = _leaves(arrays)
                cf(*xs).backward()
                for a, b in zip(xs, ref):
                    tp.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-6)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert _name(cf(*_leaves(arrays)).grad_fn) == NODE


def test_fallback_custom_op_with_mutates_args():
    @custom_op("joint55test::scale_into", mutates_args=("out",))
    def scale_into(x: tp.Tensor, out: tp.Tensor) -> None:
        out.copy_(x * 2)

    def f(x, w):
        buf = tp.zeros_like(x)
        scale_into(x, buf)
        return (buf * w).sum()

    _fallback(f, [_arr(4), _arr(4, seed=1)])


def test_a_call_whose_values_fail_raises_eagers_error_and_later_calls_take_the_node():
    # the values fail the kernel (a singular matrix) on the call that would plan: eager's
    # error, and the next call of these sizes plans
    def f(a):
        return (tp.linalg.inv(a * 2.0) ** 2).sum()

    cf = tp.compile(f)
    bad = tp.tensor(np.ones((3, 3), np.float32), requires_grad=True)
    with pytest.raises(Exception) as eager:
        f(bad)
    with pytest.raises(type(eager.value)):
        cf(bad)
    a = tp.tensor(np.eye(3, dtype=np.float32) + _arr(3, 3) * 0.1, requires_grad=True)
    y = cf(a)
    assert _name(y.grad_fn) == NODE
    y.backward()
    a2 = tp.tensor(a.detach().numpy().copy(), requires_grad=True)
    f(a2).backward()
    tp.testing.assert_close(a.grad, a2.grad, rtol=1e-4, atol=1e-5)
