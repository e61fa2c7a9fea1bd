"""What the backward engine runs and returns, as torch's (checked against torch 2.13):

- a tensor hook (``register_hook``) and ``retain_grad`` on an input of ``autograd.grad`` run,
  and the hooked gradient is what ``grad`` returns (leaf or non-leaf input); an input whose node
  is also needed to reach another input is captured before its hooks (torch's rule);
- ``backward(inputs=[t])``: ``t``'s hooks run and ``t.grad`` is the hooked gradient (once, also
  when ``t`` retains its grad); a non-leaf ``t`` retains its grad afterwards;
- with ``inputs`` (``backward(inputs=...)``, ``autograd.grad``) only the nodes on a path to the
  inputs run: a branch that does not lead to them runs neither its hooks nor ``retain_grad``;
- ``grad_fn.name()``, ``grad_fn.register_hook``/``register_prehook``,
  ``autograd.grad(..., materialize_grads=True)``."""

import pytest

import tensorplay as tp


def _x():
    return tp.tensor([1.0, 2.0], requires_grad=True)


def test_grad_returns_hooked_gradient_of_non_leaf_input():
    x = _x()
    a = x * 2
    a.register_hook(lambda g: g * 3)
    (ga,) = tp.autograd.grad(a.sum(), [a])
    assert ga.tolist() == [3.0, 3.0]


def test_grad_input_retain_grad_sees_hooked_gradient():
    x = _x()
    a = x * 2
    a.retain_grad()
    (ga,) = tp.autograd.grad(a.sum(), [a])
    assert ga.tolist() == [1.0, 1.0] and a.grad.tolist() == [1.0, 1.0]
    x = _x()
    a = x * 2
    a.register_hook(lambda g: g * 3)
    a.retain_grad()
    (ga,) = tp.autograd.grad(a.sum(), [a])
    assert ga.tolist() == [3.0, 3.0] and a.grad.tolist() == [3.0, 3.0]


def test_grad_returns_hooked_gradient_of_leaf_input():
    x = _x()
    x.register_hook(lambda g: g * 5)
    calls = []
    x.register_post_accumulate_grad_hook(lambda p: calls.append(p))
    (gx,) = tp.autograd.grad((x * 2).sum(), [x])
    assert gx.tolist() == [10.0, 10.0]
    assert x.grad is None and calls == []     # nothing accumulated: no post-accumulate hook


def test_grad_input_needed_for_another_input_is_captured_before_its_hooks():
    x = _x()
    a = x * 2
    a.register_hook(lambda g: g * 3)
    ga, gx = tp.autograd.grad((a * a).sum(), [a, x])
    assert ga.tolist() == [4.0, 8.0]          # torch: the capture precedes the node's hooks
    assert gx.tolist() == [24.0, 48.0]        # ... which still run on the way to x


def test_backward_inputs_non_leaf_runs_its_hook_once():
    x = _x()
    a = x * 2
    a.register_hook(lambda g: g * 3)
    (a * a).sum().backward(inputs=[a])
    assert a.grad.tolist() == [12.0, 24.0] and a.retains_grad and x.grad is None
    x = _x()
    a = x * 2
    a.register_hook(lambda g: g * 3)
    a.retain_grad()
    (a * a).sum().backward(inputs=[a])
    assert a.grad.tolist() == [12.0, 24.0]    # not twice


def test_backward_inputs_leaf_runs_its_hooks():
    x = _x()
    x.register_hook(lambda g: g * 3)
    calls = []
    x.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad.tolist()))
    (x * x).sum().backward(inputs=[x])
    assert x.grad.tolist() == [6.0, 12.0] and calls == [[6.0, 12.0]]


def _branch():
    x, w = _x(), tp.tensor([3.0, 4.0], requires_grad=True)
    b = x * x
    called = []
    b.register_hook(lambda g: called.append("b"))
    b.retain_grad()
    return x, w, b, called, (x * w).sum() + b.sum()


def test_backward_inputs_skips_nodes_not_leading_to_inputs():
    x, w, b, called, loss = _branch()
    loss.backward(inputs=[w])
    assert w.grad.tolist() == [1.0, 2.0] and x.grad is None
    assert called == [] and b.grad is None


def test_grad_skips_nodes_not_leading_to_inputs():
    x, w, b, called, loss = _branch()
    (gw,) = tp.autograd.grad(loss, [w])
    assert gw.tolist() == [1.0, 2.0]
    assert called == [] and b.grad is None and x.grad is None


def test_grad_of_several_outputs_skips_an_output_not_leading_to_inputs():
    x, w = _x(), _x()
    y, z = (x * x).sum(), (w * 2).sum()
    called = []
    y.register_hook(lambda g: called.append("y"))
    (gw,) = tp.autograd.grad([y, z], [w])
    assert gw.tolist() == [2.0, 2.0] and called == []


def test_grad_materialize_grads():
    x, w = _x(), _x()
    gx, gw = tp.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    assert gx.tolist() == [2.0, 2.0] and gw.tolist() == [0.0, 0.0]
    assert gw.dtype == w.dtype and tuple(gw.shape) == (2,)


def test_grad_materialize_grads_refuses_allow_unused_false():
    x, w = _x(), _x()
    with pytest.raises(ValueError, match="allow_unused"):
        tp.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True, allow_unused=False)


def test_retained_grad_keeps_history_with_create_graph():
    x = _x()
    a = x * 2
    a.retain_grad()
    (a * a).sum().backward(create_graph=True)
    assert a.grad.requires_grad and a.grad.tolist() == [4.0, 8.0]
    x = _x()
    a = x * 2
    (a * a).sum().backward(inputs=[a], create_graph=True)
    assert a.grad.requires_grad
    (gx,) = tp.autograd.grad(a.grad.sum(), [x])    # d(sum 2a)/dx = 4
    assert gx.tolist() == [4.0, 4.0]


def test_grad_fn_name_is_a_method():
    x = _x()
    y = (x * 2).sum()
    # (the names themselves differ: torch's SumBackward0, tensorplay's tp::sumBackward)
    assert type(y.grad_fn.name()) is str and "sum" in y.grad_fn.name().lower()
    assert "mul" in y.grad_fn.next_functions[0][0].name().lower()
    assert x.grad_fn is None
    leaf_node = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert "AccumulateGrad" in leaf_node.name()


def test_name_method_on_custom_function_and_in_place_nodes():
    class Twice(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _x()
    y = Twice.apply(x)
    assert y.grad_fn.name() == "TwiceBackward"    # torch's name for a custom Function's node
    z = x.clone()
    z[0].mul_(3)                                  # a write through a view: CopySlices
    assert z.grad_fn.name().endswith("CopySlices")   # (torch: torch::autograd::CopySlices)


def test_node_hooks_run_in_torch_order_and_remove():
    x, w = _x(), _x()
    a = x * w
    y = (a * 2).sum()
    log = []
    h1 = a.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    h2 = a.grad_fn.register_hook(
        lambda gi, go: log.append(("post", [g.tolist() for g in gi], [g.tolist() for g in go])))
    a.register_hook(lambda g: (log.append(("tensor", g.tolist())), g * 10)[1])
    a.retain_grad()
    y.backward(retain_graph=True)
    assert log == [("tensor", [2.0, 2.0]), ("pre", [[20.0, 20.0]]),
                   ("post", [[20.0, 40.0], [20.0, 40.0]], [[20.0, 20.0]])]
    assert x.grad.tolist() == [20.0, 40.0] and a.grad.tolist() == [20.0, 20.0]
    log.clear()
    x.grad = None
    h1.remove()
    h2.remove()
    y.backward()
    assert log == [("tensor", [2.0, 2.0])] and x.grad.tolist() == [20.0, 40.0]


def test_node_hooks_replace_gradients():
    x, w = _x(), _x()
    a = x * w
    y = (a * 2).sum()
    a.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    a.grad_fn.register_hook(lambda gi, go: (gi[0] + 100, None))   # None drops w's gradient
    y.backward()
    assert x.grad.tolist() == [106.0, 112.0] and w.grad is None
    x = _x()
    y = (x * 2).sum()
    y.grad_fn.register_prehook(lambda go: (go[0] * 4,))            # the root's node
    y.backward()
    assert x.grad.tolist() == [8.0, 8.0]


def test_node_hook_results_are_checked():
    x, w = _x(), _x()
    a = x * w
    a.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="incorrect number of values"):
        a.sum().backward()
    x = _x()
    a = x * w
    a.grad_fn.register_prehook(lambda go: 5)
    with pytest.raises(TypeError, match="expected tuple"):
        a.sum().backward()


def test_node_hooks_with_grad_inputs_and_leaf_and_custom_nodes():
    x = _x()
    a = x.exp()
    log = []
    a.grad_fn.register_hook(lambda gi, go: log.append("post"))
    a.grad_fn.register_prehook(lambda go: log.append("pre"))
    tp.autograd.grad(a.sum(), [x])
    assert log == ["pre", "post"]
    log.clear()
    tp.autograd.grad(x.exp().sum(), [x])          # another graph: its nodes have no hooks
    x = _x()
    a = x.exp()
    a.grad_fn.register_hook(lambda gi, go: log.append("post"))
    a.grad_fn.register_prehook(lambda go: log.append("pre"))
    tp.autograd.grad(a.sum(), [a])                # a's node is not run: its hooks neither
    assert log == []
    x = _x()
    y = (x * 2).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("accpre", [g.tolist() for g in go])))
    acc.register_hook(lambda gi, go: log.append(("accpost", len(gi), [g.tolist() for g in go])))
    y.backward()
    assert log == [("accpre", [[2.0, 2.0]]), ("accpost", 0, [[2.0, 2.0]])]
    assert x.grad.tolist() == [2.0, 2.0]

    class Twice(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _x()
    y = Twice.apply(x)
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,))
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]


def test_grad_leaves_a_branch_it_does_not_run_intact():
    x, w = _x(), tp.tensor([3.0, 4.0], requires_grad=True)
    b = x.exp()
    tp.autograd.grad((x * w).sum() + b.sum(), [w])   # b's node is not run, so not freed
    b.sum().backward()
    assert x.grad.allclose(x.detach().exp())


def test_grad_through_a_deep_chain():
    x = tp.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    assert tp.autograd.grad(y.sum(), [x])[0].tolist() == [1.0]
