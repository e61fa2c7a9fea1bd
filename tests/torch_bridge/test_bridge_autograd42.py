"""The bridge's autograd against review 42's findings (1-5, 7), each checked against what
TensorPlay's own autograd and torch's own ops / ``torch.library.custom_op`` do:

1. an op without a formula that draws random numbers: its gradient is the forward's (the
   forward's own TensorPlay graph is kept), never one from a recompute drawing new numbers;
   where torch traces the backward (torch.compile) it is refused, naming the op;
2. list-of-tensor arguments (``Tensor[]``, ``Tensor?[]``, keyword-only ones) whose elements
   alone require grad: the output requires grad and each element gets its gradient;
3. a ``Tag.out`` op with an argument requiring grad: refused at once, nothing written;
4. an in-place op on a view of a leaf requiring grad: refused before writing;
5. the result of a ``Tag.inplace`` op on a non-leaf requiring grad: the argument itself, usable,
   its backward refused naming the op;
7. formula mistakes (too many gradients, a gradient for a non-tensor argument, a wrong shape):
   refused naming the op, the position and the expected shape.
"""

from __future__ import annotations

from typing import Optional

import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import Tag, library

NS = "bridgeag42"
R = None


def _hooks():
    """Saved-tensor hooks: the bridge then takes its general (non-direct) path."""
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


# -- ops --------------------------------------------------------------------------------------

@library.custom_op(f"{NS}::dropout", mutates_args=(), tags=Tag.nondeterministic_seeded)
def dropout(x: tp.Tensor, p: float) -> tp.Tensor:
    return x * (tp.rand(x.shape) > p).to(x.dtype) / (1 - p)


@dropout.register_fake
def _(x, p):
    return x.new_empty(x.shape)


# draws random numbers but is not tagged: its eager gradient must still be the forward's
@library.custom_op(f"{NS}::noisy_scale", mutates_args=())
def noisy_scale(x: tp.Tensor) -> tp.Tensor:
    return x * tp.rand(x.shape)


@noisy_scale.register_fake
def _(x):
    return x.new_empty(x.shape)


@library.custom_op(f"{NS}::dropout_pair", mutates_args=(), tags=Tag.nondeterministic_seeded)
def dropout_pair(xs: list[tp.Tensor], p: float) -> tuple[tp.Tensor, tp.Tensor]:
    m = (tp.rand(xs[0].shape) > p).to(xs[0].dtype)
    return xs[0] * m, xs[1] * m


@dropout_pair.register_fake
def _(xs, p):
    return xs[0].new_empty(xs[0].shape), xs[1].new_empty(xs[1].shape)


@library.custom_op(f"{NS}::sum_some", mutates_args=())
def sum_some(xs: list[Optional[tp.Tensor]], base: tp.Tensor) -> tp.Tensor:
    out = base * 1
    for k, x in enumerate(xs):
        if x is not None:
            out = out + x * (k + 2)
    return out


@sum_some.register_fake
def _(xs, base):
    return base.new_empty(base.shape)


@library.custom_op(f"{NS}::sum_all", mutates_args=())
def sum_all(base: tp.Tensor, *, xs: list[tp.Tensor]) -> tp.Tensor:
    out = base * 1
    for x in xs:
        out = out + x * 3
    return out


@sum_all.register_fake
def _(base, *, xs):
    return base.new_empty(base.shape)


# keyword-only Tensor?[] with a formula
@library.custom_op(f"{NS}::weighted", mutates_args=())
def weighted(x: tp.Tensor, *, ws: list[Optional[tp.Tensor]]) -> tp.Tensor:
    out = x * 1
    for w in ws:
        if w is not None:
            out = out + w * x
    return out


@weighted.register_fake
def _(x, *, ws):
    return x.new_empty(x.shape)


def _weighted_setup(ctx, inputs, output):
    ctx.x, ctx.ws = inputs[0], inputs[1]


def _weighted_backward(ctx, g):
    total = g * 1
    for w in ctx.ws:
        if w is not None:
            total = total + g * w
    return total, [None if w is None else g * ctx.x for w in ctx.ws]


weighted.register_autograd(_weighted_backward, setup_context=_weighted_setup)


@library.custom_op(f"{NS}::mul_out", mutates_args={"out"}, tags=Tag.out)
def mul_out(x: tp.Tensor, y: tp.Tensor, *, out: tp.Tensor) -> tp.Tensor:
    out.copy_(x * y)
    return out


@library.custom_op(f"{NS}::add_", mutates_args={"x"}, tags=Tag.inplace)
def add_(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
    x.add_(y)
    return x


# formula mistakes: (Tensor x, Tensor y, int n) -> Tensor
_BAD = {
    "wrong_shape": lambda ctx, g: (g.sum(), g, None),       # 0-d gradient for a (3,) input
    "too_many": lambda ctx, g: (g, g, None, g),              # 4 gradients, 3 inputs
    "grad_for_int": lambda ctx, g: (g, g, g),                # a gradient for `n: int`
    "too_few": lambda ctx, g: (g,),                          # 1 gradient, 3 inputs
    "broadcast_ok": lambda ctx, g: (g.expand(2, 3) * 1, None, None),   # summed to (3,)
}
for _name, _bw in _BAD.items():
    _op = library.custom_op(f"{NS}::{_name}", lambda x, y, n: x * y * n, mutates_args=(),
                            schema="(Tensor x, Tensor y, int n) -> Tensor")
    _op.register_fake(lambda x, y, n: x.new_empty(x.shape))
    _op.register_autograd(_bw, setup_context=lambda ctx, inputs, output: None)

# the same mistake through the list-argument path
_lop = library.custom_op(f"{NS}::list_wrong_shape", lambda xs, n: xs[0] * n, mutates_args=(),
                         schema="(Tensor[] xs, int n) -> Tensor")
_lop.register_fake(lambda xs, n: xs[0].new_empty(xs[0].shape))
_lop.register_autograd(lambda ctx, g: ([g.sum(), None], None),
                       setup_context=lambda ctx, inputs, output: None)
_lop2 = library.custom_op(f"{NS}::list_grad_for_int", lambda xs, n: xs[0] * n, mutates_args=(),
                          schema="(Tensor[] xs, int n) -> Tensor")
_lop2.register_fake(lambda xs, n: xs[0].new_empty(xs[0].shape))
_lop2.register_autograd(lambda ctx, g: ([g, None], g),
                        setup_context=lambda ctx, inputs, output: None)

tensorplay_torch.register(namespace=NS)
R = getattr(torch.ops, NS)
WHERE = rf"{NS}::%s \(pack test_bridge_autograd42\)"


# -- 1. random ops without a formula -----------------------------------------------------------

@pytest.mark.parametrize("op", ["dropout", "noisy_scale"])
def test_a_random_op_without_formula_gets_the_forwards_gradient(op):
    """Before: backward recomputed the body and drew a new mask (gradient != forward's)."""
    f = (lambda x: R.dropout(x, 0.5)) if op == "dropout" else R.noisy_scale
    for _ in range(3):
        x = torch.ones(64, dtype=torch.float64, requires_grad=True)
        y = f(x)
        assert y.requires_grad
        (g,) = torch.autograd.grad(y.sum(), x, retain_graph=True)
        torch.testing.assert_close(g, y.detach())        # d(x * m)/dx = m = y for x = 1
        (g2,) = torch.autograd.grad(y.sum(), x)          # again under retain_graph: same
        torch.testing.assert_close(g2, y.detach())


def test_a_random_op_with_a_list_argument_and_two_outputs_gets_the_forwards_gradient():
    a = torch.ones(32, requires_grad=True)
    b = torch.full((32,), 2.0, requires_grad=True)
    y, z = R.dropout_pair([a, b], 0.5)
    (y.sum() + z.sum()).backward()
    mask = (y != 0).float()
    torch.testing.assert_close(a.grad, mask)
    torch.testing.assert_close(b.grad, mask)


def test_a_random_op_without_formula_is_refused_where_its_body_would_be_recomputed():
    """Where torch's backward runs the backward op without the forward's seed (torch.compile),
    the body would be run again and draw new numbers: refused naming the op and saying what
    to do, as torch refuses backward through custom ops without a formula. (Under saved-tensor
    hooks the body runs again with the forward's seed since session 43: the forward's
    gradient, test_bridge43.py.)"""
    x = torch.ones(16, requires_grad=True)
    torch._dynamo.reset()
    y = torch.compile(lambda a: R.dropout(a, 0.5) * 1, fullgraph=True, backend="aot_eager")(x)
    with pytest.raises(RuntimeError, match=(WHERE % "dropout") + r".*nondeterministic_seeded.*"
                                            r"register_autograd"):
        y.sum().backward()
    assert x.grad is None
    x = torch.ones(16, requires_grad=True)
    with _hooks():
        y = R.dropout(x, 0.5)
    y.sum().backward()
    torch.testing.assert_close(x.grad, y.detach())      # the forward's mask, never a new one


def test_a_random_op_without_formula_under_compile_gives_no_wrong_gradient():
    x = torch.ones(12, requires_grad=True)
    torch._dynamo.reset()
    f = torch.compile(lambda a: R.dropout(a, 0.5) * 1, fullgraph=True, backend="aot_eager")
    y = f(x)
    try:
        y.sum().backward()
    except Exception as e:          # refused: naming the op and the fix
        assert f"{NS}::dropout" in str(e) and "register_autograd" in str(e), e
        assert x.grad is None
    else:
        torch.testing.assert_close(x.grad, y.detach())


def test_a_composite_op_keeps_working_eagerly_and_with_hooks():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda a: R.sum_some([a, None], a), (x,))
    with _hooks():
        y = R.sum_some([x, None], x)
    (g,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(g, torch.full_like(x, 3.0))


# -- 2. list-of-tensor arguments whose elements alone require grad ------------------------------

@pytest.mark.parametrize("xs_of", [
    lambda a: [a, None], lambda a: [None, a], lambda a: [None, a, None],
])
def test_optional_tensor_list_elements_requiring_grad_get_their_gradient(xs_of):
    """Before: torch._C._any_requires_grad([a, None]) is False, so the output did not require
    grad (backward: torch's bare error) or, mixed with other uses of `a`, its gradient was
    silently missing."""
    a = torch.ones(3, requires_grad=True)
    xs = xs_of(a)
    k = next(i for i, v in enumerate(xs) if v is a)
    y = R.sum_some(xs, torch.zeros(3))
    assert y.requires_grad
    loss = y.sum() + a.sum()
    loss.backward()
    torch.testing.assert_close(a.grad, torch.full((3,), float(k + 2 + 1)))


def test_a_keyword_only_tensor_list_whose_elements_alone_require_grad():
    a = torch.ones(3, requires_grad=True)
    y = R.sum_all(torch.zeros(3), xs=[torch.zeros(3), a])
    assert y.requires_grad
    y.sum().backward()
    torch.testing.assert_close(a.grad, torch.full((3,), 3.0))


def test_a_keyword_only_optional_tensor_list_with_a_formula():
    x = torch.full((3,), 2.0)
    w = torch.ones(3, requires_grad=True)
    for ws in ([w, None], [None, w]):
        w.grad = None
        y = R.weighted(x, ws=ws)
        assert y.requires_grad
        y.sum().backward()
        torch.testing.assert_close(w.grad, x)
    with torch.no_grad():
        assert not R.weighted(x, ws=[w, None]).requires_grad


# -- 3. Tag.out ops with an argument requiring grad ---------------------------------------------

def test_an_out_op_with_an_argument_requiring_grad_is_refused_before_writing():
    a = torch.randn(3, requires_grad=True)
    o = torch.zeros(3)
    with pytest.raises(RuntimeError, match=(WHERE % "mul_out") + r".*functions with out=\.\.\. "
                       r"arguments don't support automatic differentiation, but one of the "
                       r"arguments requires grad"):
        R.mul_out(a, a, out=o)
    assert o.tolist() == [0.0, 0.0, 0.0] and o._version == 0
    with torch.no_grad():
        r = R.mul_out(a, a, out=o)
    assert r is o
    torch.testing.assert_close(o, a.detach() * a.detach())
    ob = torch.zeros(3, requires_grad=True)               # the out tensor requiring grad
    with pytest.raises(RuntimeError, match="functions with out="):
        R.mul_out(torch.ones(3), torch.ones(3), out=ob)
    assert R.mul_out(torch.ones(3), torch.ones(3), out=o) is o     # nothing requires grad


# -- 4. in-place ops on a view of a leaf requiring grad -----------------------------------------

@pytest.mark.parametrize("view", [lambda w: w.t(), lambda w: w[0], lambda w: w.view(6)[:3]])
def test_an_inplace_op_on_a_view_of_a_leaf_requiring_grad_is_refused_before_writing(view):
    w = torch.zeros(3, 2, requires_grad=True)
    v = view(w)
    with pytest.raises(RuntimeError, match=(WHERE % "add_") + r".*a view of a leaf Variable that "
                       r"requires grad is being used in an in-place operation.*'x'.*no_grad"):
        R.add_(v, torch.ones(v.shape))
    assert w.detach().abs().sum().item() == 0.0          # the leaf is untouched
    with torch.no_grad():                                 # as for torch's own in-place ops
        R.add_(view(w), torch.ones(v.shape))
    assert w.detach().sum().item() == v.numel()


# -- 5. the result of an in-place op on a non-leaf requiring grad -------------------------------

def test_the_result_of_an_inplace_op_on_a_non_leaf_is_its_argument_and_usable():
    """Before: the result was another tensor whose every use (r * 2, r.grad_fn, backward)
    raised torch's internal 'is a view and its base ... has been modified inplace'."""
    w = torch.randn(3, requires_grad=True)
    h = w * 2
    before = h.detach().clone()
    r = R.add_(h, torch.ones(3))
    assert r is h                                          # as torch's own in-place ops
    assert r.requires_grad and r.grad_fn is not None
    torch.testing.assert_close(r.detach(), before + 1)
    assert "Invalid" not in repr(r)
    s = r * 2                                              # usable in forward
    torch.testing.assert_close(s.detach(), 2 * (before + 1))
    for t in (s, r, h):
        with pytest.raises(RuntimeError, match=(WHERE % "add_") + r".*mutates its arguments"):
            t.sum().backward(retain_graph=True)
    assert w.grad is None


def test_an_inplace_op_whose_other_argument_requires_grad_gives_its_result_a_history():
    """torch's own in-place ops: ``a.add_(w)`` with ``w`` requiring grad makes ``a`` require
    grad; the bridged op's result is refused in backward, naming the op."""
    w = torch.randn(3, requires_grad=True)
    a = torch.zeros(3)
    r = R.add_(a, w)
    assert r is a and a.requires_grad
    torch.testing.assert_close(a.detach(), w.detach())
    with pytest.raises(RuntimeError, match=(WHERE % "add_") + r".*mutates"):
        a.sum().backward()
    assert w.grad is None
    b = torch.randn(4, requires_grad=True) * 1            # a view of a non-leaf
    r = R.add_(b[:2], torch.ones(2))
    assert r.requires_grad and r._base is b
    with pytest.raises(RuntimeError, match=(WHERE % "add_") + r".*mutates"):
        b.sum().backward()


def test_an_inplace_op_on_a_non_leaf_under_compile_never_loses_the_gradient_silently():
    """As torch's custom_op: refused naming the op (at compile time here), never an output that
    silently stops requiring grad."""
    def f(w):
        h = w * 2
        return R.add_(h, torch.ones(3)) * 3

    w = torch.randn(3, requires_grad=True)
    torch._dynamo.reset()
    try:
        out = torch.compile(f, backend="aot_eager", fullgraph=True)(w)
        assert out.requires_grad
        out.sum().backward()
    except Exception as e:          # noqa: BLE001 - torch wraps it (BackendCompilerFailed)
        assert f"{NS}::add_" in str(e) and "mutates its arguments" in str(e), e
    else:
        raise AssertionError("backward through a mutating op was not refused")
    assert w.grad is None
    with torch.no_grad():
        torch._dynamo.reset()
        got = torch.compile(f, backend="aot_eager", fullgraph=True)(w)
    torch.testing.assert_close(got, (w.detach() * 2 + 1) * 3)


# -- 7. formula mistakes ------------------------------------------------------------------------

_PATHS = ["direct", "hooks"]


def _run(name, path):
    x = torch.randn(3, requires_grad=True)
    y = torch.randn(3, requires_grad=True)
    if path == "hooks":
        with _hooks():
            out = getattr(R, name)(x, y, 2)
            out.sum().backward()
    else:
        getattr(R, name)(x, y, 2).sum().backward()
    return x, y


@pytest.mark.parametrize("path", _PATHS)
def test_a_formula_returning_too_many_gradients_is_refused(path):
    with pytest.raises(RuntimeError, match=(WHERE % "too_many") + r", backward: the backward "
                       r"formula registered with register_autograd returned 4 gradients: an "
                       r"incorrect number of gradients \(expected 3, got 4\)"):
        _run("too_many", path)


@pytest.mark.parametrize("path", _PATHS)
def test_a_formula_returning_too_few_gradients_is_refused(path):
    with pytest.raises(RuntimeError, match=(WHERE % "too_few") + r".*incorrect number of "
                                           r"gradients \(expected 3, got 1\)"):
        _run("too_few", path)


@pytest.mark.parametrize("path", _PATHS)
def test_a_formula_returning_a_gradient_for_an_int_argument_is_refused(path):
    with pytest.raises(RuntimeError, match=(WHERE % "grad_for_int") + r".*returned a gradient "
                       r"different than None at position 3 \(argument 'n'\), but the "
                       r"corresponding forward input was not a Tensor"):
        _run("grad_for_int", path)


@pytest.mark.parametrize("path", _PATHS)
def test_a_formula_returning_a_gradient_of_the_wrong_shape_is_refused(path):
    with pytest.raises(RuntimeError, match=(WHERE % "wrong_shape") + r".*returned an invalid "
                       r"gradient at index 0 \(argument 'x'\) - got \[\] but expected shape "
                       r"compatible with \[3\]"):
        _run("wrong_shape", path)


@pytest.mark.parametrize("path", _PATHS)
def test_a_broadcast_gradient_is_summed_as_torch_does(path):
    x, _ = _run("broadcast_ok", path)
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))


def test_formula_mistakes_through_the_list_argument_path():
    a = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=(WHERE % "list_wrong_shape") + r".*invalid gradient "
                       r"at index 0 \(argument 'xs', element 0\) - got \[\] but expected shape "
                       r"compatible with \[3\]"):
        R.list_wrong_shape([a, torch.ones(3)], 2).sum().backward()
    with pytest.raises(RuntimeError, match=(WHERE % "list_grad_for_int") + r".*position 2 "
                                           r"\(argument 'n'\).*not a Tensor"):
        R.list_grad_for_int([a, torch.ones(3)], 2).sum().backward()
