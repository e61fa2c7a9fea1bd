"""``y.backward()`` of one node whose inputs are three or more distinct leaves (a compiled
training step's loss: ``CompiledFunctionBackward`` with an edge per parameter) runs the engine's
short path (``autograd/graph.backward_root``); these pin what the general loop gives, on main
too: the gradients, which leaf owns its gradient and which gets a copy (a gradient handed to two
leaves, or also to an input that takes none), the order the leaves' hooks run in (the last edge
first), accumulation into an existing ``.grad``, the graph freed or retained, the node's own
hooks, and a leaf passed twice (its gradients summed)."""

import pytest

import tensorplay as tp


class _Same(tp.autograd.Function):
    """Returns ``a + b + c (+ d)``; its backward hands the SAME gradient object to every input
    that needs one (an identity formula, like add's)."""

    @staticmethod
    def forward(ctx, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    @staticmethod
    def backward(ctx, g):
        return (g,) * len(ctx.needs_input_grad)


class _Scaled(tp.autograd.Function):
    """``sum(k * x_k)``: a distinct gradient per input."""

    @staticmethod
    def forward(ctx, *xs):
        out = xs[0] * 1.0
        for k, x in enumerate(xs[1:], 2):
            out = out + x * float(k)
        return out.sum()

    @staticmethod
    def backward(ctx, g):
        return tuple(tp.ones(2) * g * float(k) for k in range(1, len(ctx.needs_input_grad) + 1))


def _leaves(n):
    return [tp.tensor([1.0, 2.0], requires_grad=True) for _ in range(n)]


def test_gradients_of_distinct_leaves():
    xs = _leaves(4)
    _Scaled.apply(*xs).backward()
    assert [x.grad.tolist() for x in xs] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]


def test_one_gradient_handed_to_three_leaves_is_copied_for_all_but_one():
    xs = _leaves(3)
    _Same.apply(*xs).sum().backward()     # (sum's node is the root: the general loop)
    ys = _leaves(3)
    out = _Same.apply(*ys)
    out.backward(tp.ones(2))              # the Function's node is the root
    grads = [y.grad for y in ys]
    assert [g.tolist() for g in grads] == [[1.0, 1.0]] * 3
    # no two leaves share a gradient tensor (a write to one .grad reaches no other)
    grads[0].add_(10.0)
    grads[2].add_(100.0)
    assert [g.tolist() for g in grads] == [[11.0, 11.0], [1.0, 1.0], [101.0, 101.0]]


def test_gradient_for_an_input_without_grad_does_not_stop_ownership():
    a, c, d = _leaves(3)
    b = tp.tensor([5.0, 6.0])             # requires no grad: its edge leads nowhere
    out = _Same.apply(a, b, c, d)
    g = tp.ones(2)
    out.backward(g)
    assert [t.grad.tolist() for t in (a, c, d)] == [[1.0, 1.0]] * 3 and b.grad is None
    a.grad.add_(1.0)
    assert c.grad.tolist() == [1.0, 1.0] and d.grad.tolist() == [1.0, 1.0]


def test_leaf_hooks_run_in_edge_order():
    # edge order (session 57; was last edge first): torch's for two or three leaves, while
    # with four torch's heap tie-breaking gives 0, 2, 1, 3
    xs = _leaves(4)
    order = []
    for k, x in enumerate(xs):
        x.register_hook(lambda g, k=k: order.append(k))
        x.register_post_accumulate_grad_hook(lambda t, k=k: order.append(f"post{k}"))
    _Scaled.apply(*xs).backward()
    assert order == [0, "post0", 1, "post1", 2, "post2", 3, "post3"]


def test_hook_replacing_the_gradient():
    xs = _leaves(3)
    xs[1].register_hook(lambda g: g * 10.0)
    _Scaled.apply(*xs).backward()
    assert [x.grad.tolist() for x in xs] == [[1.0, 1.0], [20.0, 20.0], [3.0, 3.0]]


def test_accumulates_into_existing_grad():
    xs = _leaves(3)
    _Scaled.apply(*xs).backward()
    first = [x.grad for x in xs]
    _Scaled.apply(*xs).backward()
    assert [x.grad.tolist() for x in xs] == [[2.0, 2.0], [4.0, 4.0], [6.0, 6.0]]
    assert all(x.grad is f for x, f in zip(xs, first))    # accumulated in place, as torch


def test_graph_freed_unless_retained():
    xs = _leaves(3)
    out = _Scaled.apply(*xs)
    out.backward(retain_graph=True)
    out.backward()
    assert [x.grad.tolist() for x in xs] == [[2.0, 2.0], [4.0, 4.0], [6.0, 6.0]]

    class _Saving(_Scaled):
        @staticmethod
        def forward(ctx, *xs):
            ctx.save_for_backward(*xs)
            return _Scaled.forward(ctx, *xs)

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors  # noqa: B018 - raises after the graph was freed
            return _Scaled.backward(ctx, g)

    out = _Saving.apply(*_leaves(3))
    out.backward()
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()


def test_root_node_hooks_run():
    xs = _leaves(3)
    out = _Scaled.apply(*xs)
    seen = []
    out.grad_fn.register_prehook(lambda gs: seen.append("pre"))
    out.grad_fn.register_hook(lambda gi, go: seen.append(("post", len(gi))))
    out.backward()
    assert seen == ["pre", ("post", 3)]
    assert xs[2].grad.tolist() == [3.0, 3.0]


def test_a_leaf_passed_twice_gets_both_gradients():
    a, b = _leaves(2)
    _Scaled.apply(a, b, a).backward()
    assert a.grad.tolist() == [4.0, 4.0] and b.grad.tolist() == [2.0, 2.0]


def test_compiled_training_step_gradients_match_eager():
    ws = [tp.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True) for _ in range(3)]
    x = tp.tensor([[1.0, 2.0], [3.0, -4.0]])

    def loss_of(w0, w1, w2, x):
        return tp.relu(x @ w0 + 1.0).mul(w1).sub(w2).tanh().sum()

    loss_of(*ws, x).backward()
    eager = [w.grad.tolist() for w in ws]
    for w in ws:
        w.grad = None
    compiled = tp.compile(loss_of)
    for _ in range(3):
        compiled(*ws, x).backward()
        assert [w.grad.tolist() for w in ws] == eager
        for w in ws:
            w.grad = None
